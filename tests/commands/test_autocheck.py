"""``ac``, ``ov`` and ``fusion`` from the command line: verdicts, exit codes, outputs never in the inputs."""
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), os.pardir, "checks"))

from checks_builders import (CNN, CONV2, CONV3, RES_CONV, SINGLE_OPS, copy_cnn_workspace, dump_file_of,
                             perturb_output, tree_listing)
from precision_tool.cli import main
from sample_counts import executed_ops
from precision_tool.reports.result_csv import read_result_csv

REPO = Path(__file__).resolve().parents[2]


def run(capsys, *argv):
    code = main(list(map(str, argv)))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_ac_without_compare_reports_the_overflow_and_exits_1(capsys):
    before = tree_listing(CNN)
    code, out, _ = run(capsys, "-d", CNN, "ac")
    assert code == 1
    task = next(CNN.glob("npu/debug_0/dump/*/*/*/*/*/Conv2D.small_cnn_1_conv3_1_convolution.*")).name.split(".")[2]
    assert f"[1] Conv2D {CONV3}  AI Core task {task}, stream 2, status 0x100" in out  # its task, as dumped
    assert "AI Core: overflow converting fp32→fp16 or int32→fp16 (0x100)" in out
    assert (f"Verdict: Lead, not yet checked against the reference ('ac -c' does): {CONV3} (Conv2D), by overflow "
            f"record.") in out
    assert "no fused op differs from its unfused TF ops" in out
    assert tree_listing(CNN) == before  # nothing written into the sample


def test_ac_compare_names_the_planted_imprecise_op_and_writes_only_to_out(tmp_path, capsys):
    before = tree_listing(CNN)
    code, out, _ = run(capsys, "-d", CNN, "ac", "-c", "-o", tmp_path / "out", "--workers", "1")
    assert code == 1  # as compare: a tensor fails
    assert f"Verdict: Most likely culprit: {RES_CONV} (Conv2D), by local error (replay)." in out
    assert re.search(r"but the fusion-off run computes the same \(relative distance 0\.000\d+\)", out)  # < 0.001
    prefix = f"precision_tool -d {CNN}"
    assert (f"Next:\n  {prefix} ni -f {tmp_path / 'out'} {RES_CONV}\n  {prefix} pt {RES_CONV}:output:0\n"
            f"  {prefix} vcs -f {tmp_path / 'out'}") in out  # -o: ni and vcs are told where the result is
    # its float16 output adds the error: bisect precision re-runs the emulation the manifest records (seed 0, not
    # emulate's default 2022: said)
    assert (f"  {prefix} bisect precision -- precision_tool emulate sample_dumps/models/cnn.py --fusion switch "
            f"--seed 0 --perturb {RES_CONV}=0.5") in out
    (csv,) = [name for name in os.listdir(tmp_path / "out") if name.endswith(".csv")]
    table = read_result_csv(tmp_path / "out" / csv)
    (row,) = [row for row in table.rows if row.tensor_id == f"{RES_CONV}:output:0"]
    assert row.status.verdict == "fail"
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["first_divergence"]["op_name"] == RES_CONV and summary["exit_code"] == 1
    assert tree_listing(CNN) == before


def test_ac_compare_defaults_to_the_workspace_temp_folder_vcs_reads(tmp_path, capsys):
    workspace = copy_cnn_workspace(tmp_path)
    code, out, _ = run(capsys, "-d", workspace, "--json", "ac", "-c", "--workers", "1")
    data = json.loads(out)
    assert code == 1 and data["exit_code"] == 1
    csv = data["data"]["compare"]["result_csv"]
    assert Path(csv).parent.parent == workspace.resolve() / "temp" / "vector_compare"
    assert data["data"]["verdict"]["culprit"]["op_name"] == RES_CONV
    code, out, _ = run(capsys, "-d", workspace, "vcs")
    assert RES_CONV in out


def test_ac_json_carries_every_section(capsys):
    code, out, _ = run(capsys, "-d", CNN, "--json", "ac")
    data = json.loads(out)["data"]
    assert code == 1 and set(data) == {"workspace", "overflow", "fusion", "compare", "statistics", "verdict",
                                       "timing"}
    assert data["statistics"] is None  # a tensor dump: no statistics section
    assert data["overflow"]["records"]["findings"][0]["status"] == [256]
    assert [p["name"] for p in data["fusion"]["overview"]["passes"]][0] == "ConvBiasaddFusionPass"
    assert data["fusion"]["comparison"]["culprits"] == [] and data["compare"] is None


def test_ac_names_a_fused_op_with_a_planted_fault_and_its_pass(tmp_path, capsys):
    workspace = copy_cnn_workspace(tmp_path)
    perturb_output(dump_file_of(workspace, 0, "small_cnn_1_conv2_1_convolution"), rel=0.3)
    code, out, _ = run(capsys, "-d", workspace, "ac", "-c", "--workers", "1")
    assert code == 1
    assert f"Verdict: Most likely culprit: {CONV2} (Conv2D), by local error (replay) and fusion." in out
    assert "made by ConvBiasaddFusionPass (graph), TbeConvElemwiseFusionPass (UB)" in out
    assert "ls -f ConvBiasaddFusionPass" in out


def test_ac_compare_without_reference_exits_2_but_still_reports(tmp_path, capsys):
    workspace = copy_cnn_workspace(tmp_path)
    shutil.rmtree(workspace / "tf")
    code, out, _ = run(capsys, "-d", workspace, "ac", "-c")
    assert code == 2
    assert "Comparison with the reference not run: no reference folder" in out
    assert f"Lead, not yet checked against the reference ('ac -c' does): {CONV3}" in out


def test_ac_on_a_folder_that_is_not_a_workspace_is_one_line_and_exit_2(tmp_path, capsys):
    code, out, err = run(capsys, "-d", tmp_path, "ac")
    assert code == 2 and out == ""
    assert err.strip() == (f"precision_tool: error: {tmp_path}: neither npu/debug_0/dump nor overflow/dump is here "
                           "(point -d at a precision_data folder, or capture a dump run first)")


def test_ac_rejects_a_negative_limit(capsys):
    code, _, err = run(capsys, "-d", CNN, "ac", "-l", "-1")
    assert code == 2 and "argument -l/--limit: invalid count: '-1' (give a whole number of 0 or more)" in err


def test_ac_limit_shortens_the_tables(tmp_path, capsys):
    workspace = copy_cnn_workspace(tmp_path)
    perturb_output(dump_file_of(workspace, 0, "small_cnn_1_conv1_1_convolution"), rel=0.3)
    _, out, _ = run(capsys, "-d", workspace, "ac", "-c", "-l", "1", "--workers", "1")
    assert "failing tensors, first divergence first (first 1 of" in out


def test_ov_decodes_records_and_falls_back_to_a_scan(tmp_path, capsys):
    code, out, _ = run(capsys, "ov", SINGLE_OPS)
    assert code == 1 and "[1] Mul scale/Mul  AI Core task 14, stream 2, status 0x20" in out
    assert out.rstrip().endswith("first overflow: scale/Mul (AI Core: floating-point overflow (0x20))")
    workspace = copy_cnn_workspace(tmp_path)
    shutil.rmtree(workspace / "overflow")
    code, out, _ = run(capsys, "-d", workspace, "ov")
    assert code == 0 and "No overflow run" in out and f"{executed_ops()} ops, no output holds inf/NaN" in out
    code, _, err = run(capsys, "ov", tmp_path / "nowhere")
    assert code == 2 and "nowhere: no such folder" in err


def test_fusion_lists_ops_by_pass_and_names_culprits(tmp_path, capsys):
    code, out, _ = run(capsys, "-d", CNN, "fusion", "-f", "MatmulElemwise")
    assert code == 0 and "1 fused op(s) made by a pass matching 'MatmulElemwise':" in out
    assert "small_cnn_1/fc1_1/MatMul" in out and "small_cnn_1/fc2_1/MatMul  " not in out
    workspace = copy_cnn_workspace(tmp_path)
    perturb_output(dump_file_of(workspace, 0, "small_cnn_1_conv2_1_convolution"), rel=0.3)
    code, out, _ = run(capsys, "-d", workspace, "fusion")
    assert code == 1 and out.rstrip().endswith(
        f"fusion culprit(s): {CONV2} (ConvBiasaddFusionPass (graph), TbeConvElemwiseFusionPass (UB))")


EMULATE_FAULT = """
import shutil, sys
from precision_tool.capture.emulate import EmulationOptions, emulate
out = sys.argv[1]
emulate("sample_dumps/models/cnn.py", out + "/fused", EmulationOptions(
    numerics="ideal", fusion="on", perturb={sys.argv[2]: 0.3}))
emulate("sample_dumps/models/cnn.py", out + "/unfused", EmulationOptions(numerics="ideal", fusion="off"))
shutil.copytree(out + "/unfused/npu/debug_0", out + "/fused/npu/debug_1")
"""


@pytest.mark.tf
def test_ac_names_an_emulated_fusion_fault_and_its_pass(tmp_path, capsys):
    """The emulator plants ``--perturb`` in every run it writes, so a clean fusion-off run comes from a second
    emulation (same seed, fusion off, nothing planted) copied in as ``npu/debug_1``."""
    pytest.importorskip("tensorflow")
    tf_op = "small_cnn_1/conv2_1/Relu"  # absorbed into the fused conv2 in debug_0
    env = dict(os.environ, PYTHONPATH=str(REPO), TF_CPP_MIN_LOG_LEVEL="2")
    result = subprocess.run([sys.executable, "-c", EMULATE_FAULT, str(tmp_path), tf_op], cwd=REPO, env=env,
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    manifest = json.loads((tmp_path / "fused" / "manifest.json").read_text())
    (planted,) = manifest["perturbations"]
    assert planted["npu_op"] == {"debug_0": CONV2}
    code, out, _ = run(capsys, "-d", tmp_path / "fused", "ac", "-c", "--workers", "1")
    assert code == 1
    assert f"Verdict: Most likely culprit: {CONV2} (Conv2D), by local error (replay) and fusion." in out
    assert "made by ConvBiasaddFusionPass (graph), TbeConvElemwiseFusionPass (UB)" in out


def test_in_the_shell_the_next_commands_are_as_typed_there():
    from precision_tool.commands import build_registry
    from precision_tool.commands.command_registry import Context
    from precision_tool.reports.format import format_report

    report = build_registry().dispatch(["ac"], Context(data_dir=str(CNN), interactive=True))
    text = format_report(report)
    assert f"\nNext: ni {CONV3}   pt {CNN}/overflow/dump/" in text and text.count("precision_tool -d") == 0
    assert "   ov   ac -c" in text
