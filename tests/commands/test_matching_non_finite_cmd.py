"""Issue 16: NaN the reference holds too, at the same positions, is classified -- not a failure, not a culprit.

A chain ``x -> op0 -> op1 -> op2 -> op3`` (float16 NPU, float32 reference, written with the project's writers:
``cmp_builders``) whose op1 output holds a NaN at ``[0, 0]``: on both sides (TensorFlow computes it too, like the
NaN label guard of ``SparseSoftmaxCrossEntropyWithLogits``), it flows on to op2 and op3 on both sides and
``compare`` exits 0 with the rows classified; on the NPU side only, it is an overflow and ``compare`` exits 1
with op1 as the first divergence, as before.
"""
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), os.pardir, "comparison"))

import numpy as np

from cmp_builders import SHAPE, Step, as_workspace, chain_case, workspace_case, write_chain
from precision_tool.checks.autocheck import AutocheckOptions, run_autocheck
from precision_tool.checks.run_verdict import FIRST_DIVERGENCE
from precision_tool.cli import main
from precision_tool.reports.result_csv import read_result_csv
from precision_tool.reports.result_store import load_result

FINITE = int(np.prod(SHAPE)) - 1  # the chain's [4, 8] tensors, but for the one NaN at [0, 0]
TENSORS = 4 * 2  # the chain's ops op0 .. op3, input 0 and output 0 each
NOTE = ("matching non-finite: 1 NaN/inf at identical positions on both sides (1 NaN); metrics over the "
        f"{FINITE} finite elements")


def _compare(case, out):
    return main(["compare", "-m", case.npu, "-g", case.ref, "-f", case.graph, "-out", str(out)])


def _only(folder, suffix):
    (name,) = [name for name in os.listdir(folder) if name.startswith("result_") and name.endswith(suffix)]
    return os.path.join(folder, name)


def test_nan_on_both_sides_at_the_same_position_passes_and_is_classified(tmp_path, capsys):
    case = chain_case(tmp_path / "case", nan_at="op1", ref_nan_at="op1")
    assert _compare(case, tmp_path / "out") == 0
    out = capsys.readouterr().out
    assert f"Compared {TENSORS} tensors (cosine >= 0.99): {TENSORS} passed, 0 failed" in out
    assert ("5 tensor(s) hold NaN/inf exactly where the reference does (same positions and kinds; first: "
            "op1:output:0, 1 element)") in out
    # the lossless result file: the classification, the note, metrics over the finite elements
    rows = {row.tensor_id: row for row in load_result(_only(tmp_path / "out", ".csv")).comparison.results}
    matched = sorted(tensor for tensor, row in rows.items() if row.matched_non_finite)
    assert matched == ["op1:output:0", "op2:input:0", "op2:output:0", "op3:input:0", "op3:output:0"]
    row = rows["op1:output:0"]
    assert row.status == "PASS" and row.matched_non_finite == 1 and NOTE in row.notes
    assert row.cosine is not None and row.cosine > 0.9999
    assert rows["op0:output:0"].matched_non_finite == 0
    # the CSV: msaccucmp's columns, the finite elements' numbers, the note in CompareFailReason, read back
    table = read_result_csv(_only(tmp_path / "out", ".csv"))
    by_id = {r.tensor_id: (r, cell) for r, cell in zip(table.rows, table.reason_cells)}
    csv_row, cell = by_id["op1:output:0"]
    assert cell == NOTE and csv_row.status == "PASS" and csv_row.matched_non_finite == 1
    assert by_id["op0:output:0"][1] == ""
    with open(_only(tmp_path / "out", ".csv"), newline="") as handle:
        line = next(text for text in handle.read().split("\r\n") if "op1:output:0" in text)
    assert "nan" not in line.lower().replace(NOTE.lower(), "")  # every metric cell holds a number
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["exit_code"] == 0 and summary["first_divergence"] is None
    assert summary["counts"]["matching_non_finite"] == 5 and summary["failing"] == []


def test_nan_on_the_npu_side_only_still_fails_and_is_the_first_divergence(tmp_path, capsys):
    case = chain_case(tmp_path / "case", nan_at="op1")
    assert _compare(case, tmp_path / "out") == 1
    out = capsys.readouterr().out
    assert "First divergence: op1 (outputs [0] fail on good inputs)" in out
    assert "exactly where the reference does" not in out
    rows = {row.tensor_id: row for row in load_result(_only(tmp_path / "out", ".csv")).comparison.results}
    row = rows["op1:output:0"]
    assert row.status == "NAN_INF" and row.failed and row.matched_non_finite == 0
    assert row.reason == f"NPU has 1 NaN, reference none; metrics over the {FINITE} pairs finite on both sides"
    table = read_result_csv(_only(tmp_path / "out", ".csv"))
    cell = dict(zip((r.tensor_id for r in table.rows), table.reason_cells))["op1:output:0"]
    assert cell == f"NAN_INF: {row.reason}"


def test_an_npu_only_nan_fails_though_later_tensors_match_again(tmp_path):
    # op1's NaN is the NPU's alone; op2's reference happens to hold one at the same place, so from op2 on the
    # NaN match: op1 is still the failure, op2 is classified
    case = chain_case(tmp_path / "case", nan_at="op1", ref_nan_at="op2")
    assert _compare(case, tmp_path / "out") == 1
    rows = {row.tensor_id: row for row in load_result(_only(tmp_path / "out", ".csv")).comparison.results}
    assert rows["op1:output:0"].status == "NAN_INF" and rows["op2:input:0"].status == "NAN_INF"
    assert rows["op2:output:0"].status == "PASS" and rows["op2:output:0"].matched_non_finite == 1


def test_ac_names_no_culprit_and_says_why(tmp_path):
    case = workspace_case(tmp_path / "ws", nan_at="op1", ref_nan_at="op1")
    result = run_autocheck(case.root, AutocheckOptions(compare=True, workers=1, replay=False))
    assert result.compare.result.exit_code() == 0 and not result.compare.result.failing
    verdict = result.verdict
    assert verdict.culprit is None and verdict.headline == "No culprit found."
    also = " | ".join(verdict.also)
    # the overflow scan is the NPU's alone: it still sees op1 introduce a NaN, and the verdict says whose it is
    assert ("normal run: op1 output 0 holds 1 NaN, first at [0, 0]; its NaN/inf in output 0 (1) are the "
            "reference's too (same positions, same kinds): the reference computes them, so they are no overflow "
            "of the NPU's; its outputs match the reference, so it cost no accuracy") in also
    assert "5 tensor(s) hold NaN/inf exactly where the reference does" in also


def test_ac_still_names_an_npu_only_nan(tmp_path):
    case = workspace_case(tmp_path / "ws", nan_at="op1")
    result = run_autocheck(case.root, AutocheckOptions(compare=True, workers=1, replay=False))
    culprit = result.verdict.culprit
    assert (culprit.op_name, culprit.evidence) == ("op1", FIRST_DIVERGENCE)
    assert culprit.reasons[0] == ("its output 0 fails against the reference (NAN_INF: NPU has 1 NaN, reference "
                                  f"none; metrics over the {FINITE} pairs finite on both sides) while its inputs "
                                  "still match")
    assert "overflow: in the normal run its output 0 holds 1 NaN, first at [0, 0]" in culprit.reasons


def _matched_then_overflow(root):
    """op1 computes a NaN at [0, 0] on both sides; op3 adds one at [1, 1] on the NPU side only."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal(SHAPE).astype(np.float32)
    reference, npu, steps = x, x.astype(np.float16), []
    for i, name in enumerate(("op0", "op1", "op2", "op3")):
        reference = (0.5 * reference + 0.25 * (i + 1)).astype(np.float32)
        npu = (0.5 * npu.astype(np.float32) + 0.25 * (i + 1)).astype(np.float16)
        if name == "op1":
            reference[0, 0] = npu[0, 0] = np.nan
        if name == "op3":
            npu[1, 1] = np.nan
        steps.append(Step(name, npu, reference))
    as_workspace(root, write_chain(os.path.join(root, "staging"), x, x.astype(np.float16), steps))
    return os.fspath(root)


def test_an_npu_only_nan_behind_matching_ones_is_the_culprit(tmp_path):
    # the dump scan, which sees the NPU alone, calls op3's NaN inherited (its input holds op1's); the comparison
    # tells op1's NaN (the reference's too) from op3's (the NPU's alone), and the verdict names op3
    result = run_autocheck(_matched_then_overflow(tmp_path / "ws"),
                           AutocheckOptions(compare=True, workers=1, replay=False))
    rows = {row.tensor_id: row for row in result.compare.result.results}
    assert rows["op1:output:0"].matched_non_finite == 1 and rows["op3:input:0"].passed
    assert rows["op3:output:0"].status == "NAN_INF" and result.compare.result.exit_code() == 1
    culprit = result.verdict.culprit
    assert (culprit.op_name, culprit.evidence) == ("op3", FIRST_DIVERGENCE)
    assert culprit.reasons[0] == ("its output 0 fails against the reference (NAN_INF: NaN positions differ (NPU 2, "
                                  f"reference 1); metrics over the {FINITE - 1} pairs finite on both sides) while its "
                                  "inputs still match")  # the NPU's second NaN, at [1, 1], takes one more pair
    assert any(line.startswith("normal run: op1 output 0 holds 1 NaN") and "the reference's too" in line
               for line in result.verdict.also)


def test_an_op_failing_on_its_finite_elements_is_named_and_its_nan_is_not_called_an_overflow(tmp_path):
    case = workspace_case(tmp_path / "ws", break_at="op1", nan_at="op1", ref_nan_at="op1")
    result = run_autocheck(case.root, AutocheckOptions(compare=True, workers=1, replay=False))
    row = next(r for r in result.compare.result.results if r.tensor_id == "op1:output:0")
    assert row.status == "FAIL" and row.matched_non_finite == 1  # judged on its finite elements, like any tensor
    culprit = result.verdict.culprit
    assert culprit.op_name == "op1"
    assert ("not overflow: in the normal run its output 0 holds 1 NaN, first at [0, 0], but the NaN/inf in output 0 "
            "(1) are the reference's too (same positions, same kinds): the reference computes them, so they are no "
            "overflow of the NPU's") in culprit.reasons
    assert culprit.reasons[-1].startswith("no overflow and no fusion explain it")
