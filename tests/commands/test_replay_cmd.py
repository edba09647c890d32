"""``replay OP`` and ``ni``'s local-error section on the sample CNN, whose manifest plants x * (1 + 0.5 z) on
res_conv (so its local error is ~0.5) and nothing elsewhere."""
import json
import os
import shutil
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), os.pardir, "checks"))

from checks_builders import CNN, CONV2, RES_CONV, copy_cnn_workspace, tree_listing
from precision_tool.cli import main
from sample_counts import executed_ops

pytestmark = pytest.mark.tf


def run(capsys, *argv):
    code = main(list(map(str, argv)))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_replay_shows_where_each_input_came_from_and_the_local_error(capsys):
    before = tree_listing(CNN)
    code, out, _ = run(capsys, "-d", CNN, "--json", "replay", RES_CONV)
    data = json.loads(out)["data"]
    assert code == 1 and data["replayed"] and data["precision"] == "float32"
    assert data["members"] == [RES_CONV, "small_cnn_1/res_conv_1/BiasAdd"]
    assert [line.split(" <- ")[1] for line in data["feeds"]] == [f"NPU {RES_CONV}:input:{k}" for k in range(3)]
    (output,) = data["outputs"]
    assert 0.45 < output["local"] < 0.55 and output["inherited"] < 0.002
    assert tree_listing(CNN) == before  # replay writes nothing


def test_a_clean_op_is_within_its_floor_and_found_by_its_dump_file_name(capsys):
    code, out, _ = run(capsys, "-d", CNN, "replay", CONV2.replace("/", "_"))
    assert code == 0 and "Run in: float32" in out
    assert "Its local error is within the floor: it adds no more than its dtype's rounding." in out
    assert out.rstrip().endswith("Against Ascend's operator standard (docs/local-error.md): within it.")


def test_without_a_reference_graph_it_says_why_and_exits_2(tmp_path, capsys):
    workspace = copy_cnn_workspace(tmp_path)
    shutil.rmtree(workspace / "tf" / "graph")
    code, out, _ = run(capsys, "-d", workspace, "replay", RES_CONV)
    assert code == 2 and out.splitlines()[-1].startswith("Not replayed: ")
    assert ("no reference graph (run tf_dump on a capture made with sess_dump, estimator_dump or "
            "enable_reference_dump, or emulate, to keep one)") in out


def test_ni_shows_local_inherited_and_total_after_ac(tmp_path, capsys):
    workspace = copy_cnn_workspace(tmp_path)
    assert run(capsys, "-d", workspace, "ac", "-c", "--workers", "1")[0] == 1
    code, out, _ = run(capsys, "-d", workspace, "--json", "ni", RES_CONV)
    (row,) = json.loads(out)["data"]["local_error"]["rows"]
    assert row["method"] == "replay float32" and 0.45 < row["local"] < 0.55 and row["ratio"] > 100
    assert abs(row["total"] - row["local"]) < 0.01  # nearly all of the total is its own
    code, out, _ = run(capsys, "-d", workspace, "ni", RES_CONV)
    assert "Local error (NPU vs the op replayed on its own dumped inputs; total = vs the reference)" in out


def test_ni_reads_a_result_written_elsewhere_with_f_and_says_when_there_is_none(tmp_path, capsys):
    """After ``ac -c -o OUT`` the workspace holds no result: ``ni`` said nothing about comparisons; now it says
    there is none, and ``ni -f OUT`` (what ac's Next line prints) shows the rows and the local error."""
    assert run(capsys, "-d", CNN, "ac", "-c", "-o", tmp_path / "out", "--workers", "1")[0] == 1
    code, out, _ = run(capsys, "-d", CNN, "ni", RES_CONV)
    assert code == 0 and "Comparison result: none under" in out and "-f RESULT reads one written elsewhere" in out
    code, out, _ = run(capsys, "-d", CNN, "--json", "ni", "-f", tmp_path / "out", RES_CONV)
    data = json.loads(out)["data"]
    output = {row[0]: row for row in data["compare"]["rows"]}[f"{RES_CONV}:output:0"]
    assert output[2] == "0.901050" and output[-1] == "cosine 0.901050 < 0.99"  # the gate's words, not an empty cell
    (local,) = data["local_error"]["rows"]
    assert 0.45 < local["local"] < 0.55
    assert run(capsys, "-d", CNN, "ni", "-f", tmp_path / "nowhere", RES_CONV)[0] == 2


def test_the_report_plots_local_over_total_error_with_the_culprit_above_its_floor(tmp_path, capsys):
    import re

    workspace = copy_cnn_workspace(tmp_path)
    assert run(capsys, "-d", workspace, "ac", "-c", "--workers", "1")[0] == 1
    assert run(capsys, "-d", workspace, "report", "-o", tmp_path / "r.html")[0] == 1
    page = (tmp_path / "r.html").read_text(encoding="utf-8")
    (group,) = re.findall(r'<g id="points-local-error">(.*?)</g></svg>', page, re.S)
    titles = re.findall(r'class="point (pass|fail)"><title>([^<]*)</title>', group)
    assert len(titles) == executed_ops()  # every replayed op's output: each op has one
    (above,) = [title for verdict, title in titles if verdict == "fail"]  # red: above its floor
    assert above.startswith(f"{RES_CONV}:output:0: local 0.49")


def test_a_broken_reference_graph_is_a_note_and_ac_still_decides(tmp_path, capsys):
    workspace = copy_cnn_workspace(tmp_path)
    graph = workspace / "tf" / "graph" / "graph_reference_cpu_0.pb"
    graph.write_bytes(graph.read_bytes()[:1000])  # truncated
    before = tree_listing(workspace / "tf")
    code, out, _ = run(capsys, "-d", workspace, "--json", "ac", "-c", "--workers", "1")
    data = json.loads(out)["data"]
    (note,) = data["compare"]["replay"]["notes"]
    assert note.startswith("replay not run: ") and str(graph) in note and data["compare"]["replay"]["ran"] is False
    culprit = data["verdict"]["culprit"]
    assert code == 1 and culprit["op_name"] == RES_CONV and culprit["evidence"] == "local error (error jump)"
    assert tree_listing(workspace / "tf") == before  # nothing written into the reference's folders


def test_vcs_tells_failing_tensors_that_add_error_from_those_that_inherit_it(tmp_path, capsys):
    workspace = copy_cnn_workspace(tmp_path)
    assert run(capsys, "-d", workspace, "ac", "-c", "--workers", "1")[0] == 1
    code, out, _ = run(capsys, "-d", workspace, "--json", "vcs")
    failing = {row["tensor_id"]: row for row in json.loads(out)["data"]["failing"]}
    cast = {tensor for tensor in failing if tensor.startswith("trans_Cast_")}  # carries it to the float32 Add
    assert code == 1 and set(failing) - cast == {f"{RES_CONV}:output:0", "small_cnn_1/res_add_1/Add:input:1"}
    assert {tensor.split(":", 1)[1] for tensor in cast} == {"input:0", "output:0"}
    adds = failing[f"{RES_CONV}:output:0"]
    assert adds["local_error"] / adds["local_floor"] > 100
    assert failing["small_cnn_1/res_add_1/Add:input:1"]["local_error"] is None  # an input: inherited, not replayed
    code, out, _ = run(capsys, "-d", workspace, "vcs")
    assert "local/floor" in out
    assert ("1 of the 4 failing tensors is an output whose op adds more error than its dtype explains; the other 3 "
            "inherit it") in out


def test_a_reference_file_of_the_wrong_shape_does_not_stop_replay(tmp_path, capsys):
    import numpy as np

    workspace = copy_cnn_workspace(tmp_path)
    (reference,) = (workspace / "tf" / "dump").glob("small_cnn_1_pool1_1_MaxPool2d.0.*.npy")
    np.save(reference, np.ones((3, 5), np.float32))  # res_conv's input 0 now has a broken reference
    code, out, _ = run(capsys, "-d", workspace, "--json", "ac", "-c", "--workers", "1")
    data = json.loads(out)["data"]
    culprit = data["verdict"]["culprit"]
    # replay feeds the op what its dump holds; the broken reference only loses res_conv's input comparison
    assert code == 1 and culprit["op_name"] == RES_CONV and culprit["evidence"] == "local error (replay)"
    code, out, _ = run(capsys, "-d", workspace, "replay", RES_CONV)
    assert code == 1 and f"small_cnn_1/pool1_1/MaxPool2d:0 <- NPU {RES_CONV}:input:0" in out


def test_an_unreadable_graph_index_is_said_and_a_clean_op_exits_2_not_0(tmp_path, capsys):
    """The campaign's silent success: with tf/graph/index.json a FIFO, replay read every *.pb (right here,
    where there is one) and said nothing. Now it says so, and the clean op's verdict is not a clean bill."""
    workspace = copy_cnn_workspace(tmp_path)
    index = workspace / "tf" / "graph" / "index.json"
    index.unlink()
    os.mkfifo(str(index))
    code, out, _ = run(capsys, "-d", workspace, "replay", CONV2)
    assert code == 2 and "Its local error is within the floor" in out
    assert out.rstrip().endswith(f"{index}: is a FIFO (named pipe), not a regular file; read every *.pb of the "
                                 "folder instead, graphs of other runs too")
    code, out, _ = run(capsys, "-d", workspace, "replay", RES_CONV)
    assert code == 1  # a finding outranks the unusable index
