"""The rough edges a new TF 1.15 user hit in one day (issue 39), each as the user typed it; every message checked
whole, as the user reads it."""
import csv
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from precision_tool.cli import main
from sample_counts import dumped_tensors

REPO = Path(__file__).resolve().parents[2]
SAMPLE = REPO / "sample_dumps" / "cnn_workspace"


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_a_wrong_workspace_is_named_not_its_result_folder(tmp_path, capsys):
    wrong = tmp_path / "WRONG"
    code, _, err = run(capsys, "-d", str(wrong), "vcs")
    assert code == 2
    assert err == (f"precision_tool: error: {wrong}: no such workspace folder (give the workspace folder with -d DIR "
                   "or $PRECISION_TOOL_DATA)\n")
    wrong.mkdir()
    code, _, err = run(capsys, "-d", str(wrong), "vcs")  # a workspace, without results yet
    assert code == 2 and err == (f"precision_tool: error: no compare result in {wrong} yet "
                                 f"({wrong}/temp/vector_compare is missing) (run 'precision_tool -d {wrong} ac -c' or "
                                 "'compare' first, or give -f RESULT)\n")


@pytest.mark.parametrize("option", [["--cosine", "0.98"], ["-o", "OUT"], ["--workers", "2"], ["--no-replay"]])
def test_ac_refuses_a_comparison_option_without_c(tmp_path, capsys, option):
    argv = [tmp_path / "out" if value == "OUT" else value for value in option]
    code, out, err = run(capsys, "-d", str(SAMPLE), "ac", *map(str, argv))
    assert code == 2 and out == ""
    assert err == (f"precision_tool: error: ac: {option[0]} applies to the comparison, which ac runs only with -c "
                   f"(run 'ac -c {option[0]} ...', or leave {option[0]} out)\n")
    assert not (tmp_path / "out").exists()


def test_ac_c_with_a_threshold_says_that_ac_spells_it_cosine(capsys):
    code, _, err = run(capsys, "-d", str(SAMPLE), "ac", "-c", "0.98")
    assert code == 2
    assert err == ("precision_tool: error: ac: unrecognized arguments: 0.98 (here -c is --compare; the cosine "
                   "threshold is --cosine: 'ac -c --cosine 0.98')\n")
    code, _, err = run(capsys, "-d", str(SAMPLE), "ac", "-c", "extra")  # not a threshold: the usual hint
    assert code == 2 and err.endswith("unrecognized arguments: extra (see 'ac -h')\n")


def test_a_workspace_with_only_the_cpu_side_is_said_to_have_an_empty_npu_side(tmp_path, capsys):
    workspace = tmp_path / "ws"
    (workspace / "npu" / "debug_0" / "dump" / "20240101000000" / "0").mkdir(parents=True)  # what a CPU run left
    (workspace / "tf" / "dump").mkdir(parents=True)
    code, out, err = run(capsys, "-d", str(workspace), "ac")
    assert code == 2 and out == ""
    assert err == (f"precision_tool: error: {workspace}: npu/debug_0/dump holds no file: the NPU side is empty, "
                   "nothing to check (was the training run on an Ascend NPU? Without npu_bridge TensorFlow runs on "
                   "CPU/GPU and dumps nothing: capture on the NPU machine)\n")


@pytest.mark.tf
def test_ctrl_c_during_the_replay_keeps_the_finished_comparison(tmp_path):
    """The comparison is written before the replay starts; a Ctrl-C then ends ``ac -c`` (exit 130) and says where
    it is. The CSV holds every dumped tensor of the sample, counted from its dump files."""
    pytest.importorskip("tensorflow")
    out = tmp_path / "out"
    process = subprocess.Popen([sys.executable, "-m", "precision_tool", "-d", str(SAMPLE), "ac", "-c", "-o", str(out)],
                               env=dict(os.environ, PYTHONPATH=str(REPO)), stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, universal_newlines=True)
    deadline = time.monotonic() + 120
    while not list(out.glob("summary.json")) and process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.005)  # the summary is written last: the comparison is complete
    (csv_path,) = out.glob("result_*.csv")
    process.send_signal(signal.SIGINT)
    _, rest = process.communicate(timeout=120)
    if process.returncode == 130:  # interrupted while replaying (the replay of the sample takes about a second)
        assert f"ac: interrupted during the replay; the comparison without it is in {csv_path}\n" in rest
    else:  # the replay was over before the signal came: the run ended as usual, files rewritten with the replay
        assert process.returncode == 1
    with open(csv_path, newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    assert len(rows) == dumped_tensors(SAMPLE)


@pytest.mark.tf
def test_on_a_terminal_ac_c_says_where_the_comparison_is_before_the_replay(tmp_path):
    pexpect = pytest.importorskip("pexpect")
    pytest.importorskip("tensorflow")
    out = tmp_path / "out"
    child = pexpect.spawn(sys.executable, ["-m", "precision_tool", "-d", str(SAMPLE), "ac", "-c", "-o", str(out)],
                          env=dict(os.environ, PYTHONPATH=str(REPO)), encoding="utf-8", timeout=120,
                          dimensions=(24, 300))
    child.expect(r"ac: comparison written to (\S+result_\d+\.csv); replaying the compared ops \(Ctrl-C keeps it\)")
    written = child.match.group(1)
    child.expect(pexpect.EOF)
    child.close()
    (csv_path,) = out.glob("result_*.csv")
    assert written == str(csv_path) and child.exitstatus == 1  # the sample's planted culprit
