"""``comparison/tree_runs.py``: the first diverging step, the replicas that differ, the exit code of many runs, and
``compare_each`` (issue 17)."""
import pytest

from precision_tool.comparison.tree_runs import (StepRun, compare_each, exit_code_of, first_diverging,
                                                 replicas_differ)
from precision_tool.errors import WorkspaceError
from precision_tool.formats.dump_tree import DumpSelection

pytestmark = pytest.mark.compat
GOOD = {"a:output:0": 0.99995, "b:output:0": 0.99990}


def replica(device, failing=(), **cosines):
    values = dict(GOOD, **{name.replace("_", ":"): value for name, value in cosines.items()})
    return StepRun(device, 5, 2, tuple(failing), failing[0].split(":")[0] if failing else "",
                   1 if failing else 0, cosines=values)


def test_the_odd_replica_out_is_flagged_by_its_failing_tensors():
    runs = [replica(0), replica(1), replica(2, ["b:output:0"], b_output_0=0.5), replica(3)]
    assert replicas_differ(runs) == {2: "fails b:output:0 where devices 0, 1, 3 pass"}
    runs = [replica(0, ["a:output:0"]), replica(1, ["a:output:0"]), replica(2)]
    assert replicas_differ(runs) == {2: "passes a:output:0 where devices 0, 1 fail"}


def test_with_the_same_failing_tensors_a_cosine_off_the_median_is_flagged():
    runs = [replica(0), replica(1, b_output_0=0.99), replica(2)]  # 0.0099 from the median: more than 0.001
    assert replicas_differ(runs) == {1: "cosine of b:output:0 0.99, replicas' median 0.9999"}
    assert replicas_differ([replica(0), replica(1, b_output_0=0.9995), replica(2)]) == {}  # within 0.001
    assert replicas_differ(runs, tolerance=0.05) == {}


def test_two_replicas_that_disagree_on_a_cosine_are_both_flagged_and_one_replica_never():
    runs = [replica(0), replica(1, a_output_0=0.9)]
    assert replicas_differ(runs) == {  # which is right cannot be told from two, and the lines say so
        0: "cosine of a:output:0 0.99995 against device 1's 0.9 (two replicas: which one is off cannot be told)",
        1: "cosine of a:output:0 0.9 against device 0's 0.99995 (two replicas: which one is off cannot be told)"}
    assert replicas_differ([replica(0)]) == {}
    failed = StepRun.failed(DumpSelection(5, 1), WorkspaceError("/r: no dumps of step 5 on device 1"))
    assert replicas_differ([replica(0), failed]) == {}  # a run that could not be compared is no replica


def test_first_diverging_and_exit_code():
    runs = [StepRun(0, 10, 8), StepRun(0, 5, 8, ("x:output:0",), "x", 1), StepRun(0, 0, 8, exit_code=2),
            StepRun(0, 20, 8, ("y:output:0",), "y", 1)]
    assert first_diverging(runs) is runs[1]
    assert first_diverging(runs[:1]) is None
    assert exit_code_of(runs) == 1 and exit_code_of(runs[2:3] + runs[:1]) == 2 and exit_code_of(runs[:1]) == 0


def test_compare_each_runs_each_selection_and_keeps_going_past_an_error():
    seen = []

    def run_one(selection):
        seen.append(selection)
        if selection.step == 0:
            raise WorkspaceError("/r: step 0 is unreadable")
        return StepRun(selection.device, selection.step, 1)

    runs = compare_each([DumpSelection(0, 1), DumpSelection(5, 1)], run_one)
    assert seen == [DumpSelection(0, 1), DumpSelection(5, 1)]  # each run is handed its step and device
    assert [(run.step, run.exit_code, run.error) for run in runs] == [(0, 2, "/r: step 0 is unreadable"),
                                                                     (5, 0, "")]
    with pytest.raises(WorkspaceError, match="step 0 is unreadable"):
        compare_each([DumpSelection(0, 1)], run_one)  # every run stopped: the first error, as one comparison


def test_replicas_that_agree_on_different_tensors_say_so():
    """A user walk read "Replicas agree" as a clean bill where one device had compared 48 tensors and the other 52."""
    from precision_tool.commands.compare_each import _replica_findings

    full = StepRun(1, 5, 52, cosines=dict(GOOD))
    short = StepRun(0, 5, 48, cosines=dict(GOOD), unreadable=1)
    ((line, data),) = _replica_findings([short, full], every_step=False)
    assert data is None and line == ("Replicas agree: devices 0, 1 (same failing tensors, cosines within 0.001; but "
                                     "not over the same tensors: compared device 0 48, device 1 52 (device 0: 1 "
                                     "unreadable dump file))")
    ((line, _),) = _replica_findings([StepRun(0, 5, 52, cosines=dict(GOOD)), full], every_step=False)
    assert line == "Replicas agree: devices 0, 1 (same failing tensors, cosines within 0.001)"
