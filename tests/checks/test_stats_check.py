"""The statistics judgment and the dump_layer plan (issue 42), on hand-built evidence whose figures are derived
here: the float16 rounding floor is 4 u / sqrt(3) with u = 2^-11 (0.1128%), and the suspect rule is the error-jump
rule of docs/internals/comparison.md (output above the floor, jump of at least 10)."""
import math
from types import SimpleNamespace

import pytest

from precision_tool.checks.stats_check import DumpLayerPlan, parse_size, plan_dump_layer, size_text
from precision_tool.comparison.stats_evidence import PairEvidence, judge_statistics
from precision_tool.errors import UsageError
from precision_tool.formats.tensor_kind import INPUT, OUTPUT
from precision_tool.metrics.stat_bounds import StatBound

FLOOR16 = 4 * 2.0 ** -11 / math.sqrt(3)


def tensor(op, kind, red, dtype="float16", mismatch="", index=0, size=100):
    npu = SimpleNamespace(op_name=op, op_type="Conv2D", kind=kind, index=index, dtype=dtype)
    bound = None if red is False else StatBound(None if red is None else 0.0, mismatch=mismatch, red=red)
    return PairEvidence(SimpleNamespace(npu=npu), bound, size=size)


def test_an_op_whose_output_proves_ten_times_its_floor_over_clean_inputs_is_a_suspect():
    evidence = [tensor("a", INPUT, 0.0001), tensor("a", OUTPUT, 0.02),     # jump 0.02 / FLOOR16 = 17.7
                tensor("b", INPUT, 0.001), tensor("b", OUTPUT, 0.005),     # 0.005 / FLOOR16 = 4.43
                tensor("c", INPUT, 0.002), tensor("c", OUTPUT, 0.0199)]    # 0.0199 / 0.002 = 9.95: not 10
    ops = {op.op_name: op for op in judge_statistics(evidence).ops}
    assert ops["a"].suspect and ops["a"].jump == pytest.approx(0.02 / FLOOR16) and ops["a"].floor == FLOOR16
    assert not ops["b"].suspect and ops["b"].jump == pytest.approx(0.005 / FLOOR16)
    assert not ops["c"].suspect and ops["c"].jump == pytest.approx(9.95)


def test_suspects_come_earliest_first_then_the_others_by_jump():
    evidence = [tensor("early", OUTPUT, 0.012), tensor("plain", OUTPUT, 0.004), tensor("late", OUTPUT, 0.9),
                tensor("small", OUTPUT, 0.001)]
    judgment = judge_statistics(evidence)
    assert [op.op_name for op in judgment.suspects] == ["early", "late"]  # not by jump: 0.9 would come first
    assert [op.op_name for op in judgment.ops] == ["early", "late", "plain", "small"]


def test_a_count_that_differs_is_a_suspect_unless_an_input_differs_the_same_way():
    evidence = [tensor("makes", INPUT, 0.0), tensor("makes", OUTPUT, 0.0, mismatch="NaN count 3, the reference 0"),
                tensor("passes", INPUT, 0.0, mismatch="NaN count 3, the reference 0"),
                tensor("passes", OUTPUT, 0.0, mismatch="NaN count 3, the reference 0")]
    ops = {op.op_name: op for op in judge_statistics(evidence).ops}
    assert ops["makes"].suspect and ops["makes"].mismatch.startswith("NaN count 3")
    assert not ops["passes"].suspect and ops["passes"].mismatch == ""


def test_integer_inputs_carry_no_error_and_a_float_input_without_a_bound_leaves_the_op_unmeasured():
    evidence = [tensor("shape", INPUT, None, dtype="int32"), tensor("shape", OUTPUT, 0.05),
                tensor("blind", INPUT, None), tensor("blind", OUTPUT, 0.05),
                tensor("unread", INPUT, 0.0), tensor("unread", OUTPUT, False)]
    judgment = judge_statistics(evidence)
    ops = {op.op_name: op for op in judgment.ops}
    assert ops["shape"].suspect and ops["shape"].input is None
    assert ops["blind"].jump is None and not ops["blind"].suspect
    assert ops["unread"].jump is None and judgment.measured == 1
    assert [op.op_name for op in judgment.ops][-2:] == ["blind", "unread"]  # unmeasured last


def test_the_plan_names_suspects_then_their_producers_within_the_budget():
    judgment = judge_statistics([tensor("s1", OUTPUT, 0.5), tensor("s2", OUTPUT, 0.5), tensor("ok", OUTPUT, 0.0)])
    sizes = {"p1": 300, "s1": 400, "s2": 500, "ok": 50, "p2": 10}
    producers = {"s1": ("p1", "not_dumped"), "s2": ("s1", "p2")}
    plan = plan_dump_layer(judgment, sizes, producers, budget=1000)
    # s1 (400) + s2 (500) = 900; p1 (300) would make 1200: left out; p2 (10) fits: 910
    assert plan == DumpLayerPlan(("s1", "s2", "p2"), 910, 1000, ("p1",), suspects=2)
    assert plan.value == "s1 s2 p2"
    tight = plan_dump_layer(judgment, sizes, producers, budget=1)
    assert tight.ops == ("s1",) and tight.size == 400  # the first suspect always: a plan without it is no plan
    assert plan_dump_layer(judge_statistics([tensor("ok", OUTPUT, 0.0)]), sizes, producers).ops == ()


@pytest.mark.parametrize("text, size", [("512M", 512 * 2 ** 20), ("2G", 2 ** 31), ("1.5g", 3 * 2 ** 29),
                                        ("4096", 4096), ("64KiB", 65536), ("10 MB", 10 * 2 ** 20)])
def test_sizes_in_binary_units(text, size):
    assert parse_size(text) == size


def test_a_size_that_is_not_one_is_a_usage_error():
    with pytest.raises(UsageError, match="--dump-budget 'lots' is not a size"):
        parse_size("lots")
    assert (size_text(1740000), size_text(2 ** 30), size_text(100)) == ("1.66 MiB", "1 GiB", "100 B")


def test_a_stored_judgment_without_suspect_says_what_exit_0_means(tmp_path):
    from precision_tool.checks.run_verdict import Verdict
    from precision_tool.checks.stats_check import StatisticsSection
    from precision_tool.commands.stats_views import statistics_report
    from precision_tool.reports.stats_report import NO_SUSPECT_MEANING
    from precision_tool.reports.stats_store import load_statistics, write_statistics

    section = StatisticsSection(judge_statistics([tensor("ok", OUTPUT, 0.0)]), DumpLayerPlan((), 0, 1), "",
                                {"reference": "tf/dump"})
    path = write_statistics(str(tmp_path), "1", section, Verdict(None, checked=False, withheld="none"), 0)
    shown = statistics_report(load_statistics(path), 0, "vcs")
    assert shown.exit_code == 0 and NO_SUSPECT_MEANING in shown.status


def test_without_a_suspect_an_overflow_lead_stands_and_is_not_sent_back_to_ac_c():
    from precision_tool.checks.run_verdict import Culprit, Verdict
    from precision_tool.checks.stats_check import StatisticsSection, statistics_verdict

    lead = Culprit("conv3", "Conv2D", "overflow record",
                   ("not checked against the reference: run ac -c to see whether the overflow costs accuracy",),
                   ("ni conv3",))
    base = Verdict(lead, (), ("ni conv3", "ac -c"), checked=False)
    verdict = statistics_verdict(StatisticsSection(judge_statistics([tensor("ok", OUTPUT, 0.0)])), base)
    assert verdict.culprit.op_name == "conv3" and verdict.next_commands == ("ni conv3",)
    assert "run ac -c" not in " ".join(verdict.culprit.reasons) and "ac -c' does" not in verdict.headline
    assert verdict.headline.startswith("Lead, not yet checked against the reference (a statistics run cannot")
    assert verdict.also[-1].startswith("statistics: statistics name no suspect")
