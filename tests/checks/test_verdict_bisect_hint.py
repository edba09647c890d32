"""Which bisect the verdict suggests for a culprit its local error points at."""
from types import SimpleNamespace

import pytest

from precision_tool.checks.run_verdict import LOCAL_ERROR, Culprit, _with_bisect


@pytest.mark.parametrize("npu_dtype, suggested", [("float16", True), ("bfloat16", True), ("float32", False)])
def test_bisect_precision_is_suggested_for_an_op_computing_in_either_half_type(npu_dtype, suggested):
    """bisect precision takes float16 and bfloat16 ops alike as candidates (formats.customize_dtypes.is_half), so
    the verdict suggests it for both (it asked for float16 only)."""
    row = SimpleNamespace(op_name="net/conv", kind="output", npu_dtype=npu_dtype)
    compare = SimpleNamespace(result=SimpleNamespace(results=[row]))
    culprit = Culprit("net/conv", "Conv2D", LOCAL_ERROR + " (replay)", ("it adds the error itself",), ())
    commands = _with_bisect(culprit, compare, "RUN").next_commands
    assert ("bisect precision -- RUN" in commands) is suggested
