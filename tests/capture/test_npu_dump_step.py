"""dump_step: what npu_bridge and GE accept, as a table written by hand from their rules.

npu_bridge (tf_adapter/util/npu_attrs.cc, checkDumpStep): ``dump_step + "|"`` must fully match
``(\\d+-\\d+\\||\\d+\\|)+`` (C++ ``std::regex``: ``\\d`` is ASCII 0-9); then at most 100 groups; then every
range ``a-b`` needs ``atoi(a) < atoi(b)``. GE (DumpProperties::CheckDumpStepInner) also needs every number to
be an int32. Each row below was worked out from those rules by hand; the expectation is never computed by
the function under test.
"""
import pytest

from precision_tool.capture.settings import CaptureSettings, check_dump_step
from precision_tool.errors import CaptureError

pytestmark = pytest.mark.compat

FORMAT, TOO_MANY, NOT_UP, INT32 = ("use step numbers and ranges joined by '|'", "npu_bridge accepts at most 100",
                                   "must go up", "is larger than 2147483647")

ACCEPTED = [
    "0",                       # one step
    "5",
    "0|5|10",                  # steps joined by |
    "0|3-5",                   # a step and a range
    "10-20",
    "0-1",                     # the smallest range that goes up
    "001|002",                 # leading zeros: atoi("001") == 1
    "007-010",                 # 7 < 10
    "2147483647",              # INT32_MAX itself
    "1-2147483647",
    "00000000002147483647",    # still INT32_MAX once atoi reads it
    "|".join(str(i) for i in range(100)),  # exactly 100 groups
    "|".join(["0-1"] * 100),
]

REJECTED = [
    ("", FORMAT),              # "|" has no digits before the bar
    ("|", FORMAT),
    ("0|", FORMAT),            # "0||": empty group
    ("|0", FORMAT),
    ("0||5", FORMAT),
    ("0,5", FORMAT),
    (" 0", FORMAT),            # no spaces anywhere
    ("0 ", FORMAT),
    ("0 |5", FORMAT),
    ("0-", FORMAT),
    ("-5", FORMAT),            # no sign
    ("+1", FORMAT),
    ("1-2-3", FORMAT),         # a range has two ends
    ("0|5-", FORMAT),
    ("1.5", FORMAT),
    ("0x10", FORMAT),
    ("a", FORMAT),
    ("\u0663", FORMAT),        # ARABIC-INDIC DIGIT THREE: Python's \d takes it, std::regex's does not
    ("1\uff12", FORMAT),       # FULLWIDTH DIGIT TWO
    ("|".join(str(i) for i in range(101)), TOO_MANY),
    ("|".join(["0-1"] * 101), TOO_MANY),
    ("5-3", NOT_UP),
    ("3-3", NOT_UP),           # a == b is refused too
    ("0|10-2", NOT_UP),
    ("010-10", NOT_UP),        # 10 vs 10
    ("09-9", NOT_UP),
    ("2147483648", INT32),     # INT32_MAX + 1
    ("0|99999999999999999999", INT32),
    ("1-2147483648", INT32),
    ("1|" + "9" * 5000, INT32),  # longer than Python's default int() digit limit on 3.11
]


@pytest.mark.parametrize("value", ACCEPTED)
def test_accepted_as_npu_bridge_and_ge_accept_it(value):
    assert check_dump_step(value) == value
    assert CaptureSettings(data_dir="/ws", dump_step=value).dump_step == value


@pytest.mark.parametrize("value, rule", REJECTED, ids=[repr(v)[:24] for v, _ in REJECTED])
def test_rejected_in_one_line_naming_value_and_rule(value, rule):
    with pytest.raises(CaptureError) as info:
        check_dump_step(value, "PRECISION_TOOL_DUMP_STEP")
    message = str(info.value)
    assert message.startswith("PRECISION_TOOL_DUMP_STEP=" + repr(value)[:40]) and rule in message
    assert "\n" not in message and len(message) < 300


def test_the_environment_variable_is_named():
    with pytest.raises(CaptureError, match=r"^PRECISION_TOOL_DUMP_STEP='3-3': range 3-3 must go up \(npu_bridge "
                                           r"needs N < M in N-M\)$"):
        CaptureSettings.from_env({"PRECISION_TOOL_DUMP_STEP": "3-3"})


def test_not_text_is_refused():
    with pytest.raises(CaptureError, match="dump_step=5: dump_step must be text"):
        check_dump_step(5)
