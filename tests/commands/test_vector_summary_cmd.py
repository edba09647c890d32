"""``vcs``: tensors below a threshold from the latest complete result, first divergence first, limited."""
import json
import os
import sys
import time

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), os.pardir, "comparison"))

from cmp_builders import chain_case, workspace_case
from precision_tool.cli import main
from precision_tool.reports.result_store import find_result_csv as latest_result_csv
from precision_tool.fileio import TEMP_PREFIX
from precision_tool.reports import result_csv

NAMES = [f"op{i}" for i in range(8)]


def vcs_json(capsys, *argv, data_dir=None):
    code = main(["--json", *(["-d", str(data_dir)] if data_dir else []), "vcs", *argv])
    return code, json.loads(capsys.readouterr().out)["data"]


@pytest.fixture
def broken_workspace(tmp_path, capsys):
    case = workspace_case(tmp_path / "ws", names=NAMES, break_at="op3")
    assert main(["-d", case.root, "compare"]) == 1
    capsys.readouterr()
    return case


def test_lists_failing_tensors_first_divergence_first_in_execution_order(broken_workspace, capsys):
    code, data = vcs_json(capsys, "-l", "0", data_dir=broken_workspace.root)
    assert code == 1
    assert data["first_divergence"]["op_name"] == "op3" and data["summary"] is True
    listed = [item["tensor_id"] for item in data["failing"]]
    assert listed[0] == "op3:output:0"
    assert listed[1:] == sorted(listed[1:], key=lambda t: (int(t[2]), "output" in t))
    assert all(item["cosine"] < 0.99 for item in data["failing"])


def test_threshold_and_limit(broken_workspace, capsys):
    root = broken_workspace.root
    _, everything = vcs_json(capsys, "-l", "0", data_dir=root)
    _, loose = vcs_json(capsys, "-c", "0.5", "-l", "0", data_dir=root)
    assert len(loose["failing"]) < len(everything["failing"])
    assert all(item["cosine"] < 0.5 for item in loose["failing"])
    code = main(["-d", root, "vcs", "-l", "2"])
    out = capsys.readouterr().out
    assert code == 1 and f"... {len(everything['failing']) - 2} more (-l 0 shows all)" in out
    code, nothing = vcs_json(capsys, "-c", "-1", data_dir=root)
    # nothing fails at -1, but the judgment still names the op whose error jumps: listed, exit 1 (one exit rule)
    assert code == 1 and nothing["failing"] == [] and nothing["culprit"]["op_name"] == "op3"


def test_without_summary_the_csv_alone_still_gives_the_first_divergence(broken_workspace, capsys):
    csv_path = latest_result_csv(os.path.join(broken_workspace.root, "temp", "vector_compare"))
    os.remove(os.path.join(os.path.dirname(csv_path), "summary.json"))
    code, data = vcs_json(capsys, "-f", csv_path)
    assert code == 1 and data["summary"] is False and data["cosine_threshold"] == 0.99
    assert data["first_divergence"]["op_name"] == "op3"  # its inputs were compared and pass


def test_latest_complete_result_wins_and_a_killed_run_is_invisible(tmp_path, capsys, monkeypatch):
    case = chain_case(tmp_path / "case", names=NAMES[:4])
    results = tmp_path / "results"
    assert main(["compare", "-m", case.npu, "-g", case.ref, "-f", case.graph, "-out", str(results)]) == 0
    capsys.readouterr()
    first = latest_result_csv(str(results))
    # a second run dies while writing its CSV: no result file appears, only the old one is found
    monkeypatch.setattr(result_csv, "result_row", lambda *a, **k: (_ for _ in ()).throw(KeyboardInterrupt()))
    broken = chain_case(tmp_path / "broken", names=NAMES[:4], break_at="op1")
    assert main(["compare", "-m", broken.npu, "-g", broken.ref, "-f", broken.graph, "-out", str(results)]) == 130
    assert capsys.readouterr().err == "precision_tool: interrupted\n"
    monkeypatch.undo()
    assert latest_result_csv(str(results)) == first
    assert not any(name.startswith(TEMP_PREFIX) for name in os.listdir(results))
    code, data = vcs_json(capsys, "-f", str(results))
    assert code == 0 and data["csv"] == first
    # a leftover temporary file (a run killed by SIGKILL) is never taken for a result
    (results / f"{TEMP_PREFIX}123-abc.tmp").write_text("Index,OpType\r\n")
    time.sleep(0.01)
    assert main(["compare", "-m", broken.npu, "-g", broken.ref, "-f", broken.graph, "-out", str(results)]) == 1
    capsys.readouterr()
    newest = latest_result_csv(str(results))
    assert newest != first
    code, data = vcs_json(capsys, "-f", str(results))
    assert code == 1 and data["csv"] == newest


def test_no_result_is_unusable_input(tmp_path, capsys):
    assert main(["-d", str(tmp_path), "vcs"]) == 2
    assert "no compare result in" in capsys.readouterr().err
    (tmp_path / "temp" / "vector_compare").mkdir(parents=True)
    assert main(["-d", str(tmp_path), "vcs"]) == 2
    assert "no result_*.csv under" in capsys.readouterr().err
