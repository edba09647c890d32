"""Every command that reads the Build graph finds it in CANN 8's per-process graph folders.

CANN 8.0 writes ``DUMP_GRAPH_PATH/{pid}_{device}/``, 8.5+ ``DUMP_GRAPH_PATH/pid_{pid}_deviceid_{device}/``; the
capture sets ``DUMP_GRAPH_PATH=WORKSPACE/npu/debug_N/graph``. The sample workspaces are copied and their graphs
moved one level down, as CANN 8 would have written them: every command must then give what it gives on the flat
original. Then the choice among several folders (the dump's device, else the newest, with one note line).
"""
import json
import os
import shutil
import sys
from pathlib import Path

import pytest
from inspect_builders import write_inspect_workspace

sys.path.insert(0, os.path.join(os.path.dirname(__file__), os.pardir, "checks"))

from checks_builders import CNN, RES_CONV, copy_cnn_workspace

from precision_tool.cli import main
from precision_tool.commands import arg_hints, build_registry
from precision_tool.commands.command_registry import Context
from precision_tool.alignment.workspace_lookup import WorkspaceLookup
from precision_tool.errors import WorkspaceError
from precision_tool.formats.ge_graph import Graph, GraphModel, OpNode
from precision_tool.formats.ge_io import write_ge_graph_text
from precision_tool.reports.format import format_report
from precision_tool.shell.workspace_index import WorkspaceIndex
from sample_counts import dumped_tensors

pytestmark = pytest.mark.compat

SPELLINGS = ("pid_1234_deviceid_0", "1234_0")  # CANN 8.5+ / current code, CANN 8.0.RC1 / 8.0.0
INSPECT_GRAPH = "ge_default_1"  # the root graph of write_inspect_workspace's Build graph


def to_cann8(workspace, folder_name: str, runs=(0,)):
    """Move each run's Build graph files from ``npu/debug_N/graph`` into ``graph/folder_name/``."""
    for run in runs:
        graph_dir = Path(workspace) / "npu" / f"debug_{run}" / "graph"
        target = graph_dir / folder_name
        target.mkdir()
        for name in os.listdir(str(graph_dir)):
            if name.startswith("ge_proto_"):
                os.replace(str(graph_dir / name), str(target / name))
    return Path(workspace)


def other_graph(folder, name="ge_default_other", mtime=None):
    """A Build graph of another process: one op, so any mix-up shows."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "ge_proto_00000007_Build.txt"
    write_ge_graph_text(GraphModel((Graph(name, (OpNode("lonely", "Data"),)),)), str(path))
    if mtime is not None:
        os.utime(str(path), (mtime, mtime))
    return path


def dispatch(workspace, *argv):
    return build_registry().dispatch(list(map(str, argv)), Context(data_dir=str(workspace)))


def same_text(report, root) -> str:
    """The report's text with the workspace root and graph file's folder taken out, to compare two layouts."""
    text = format_report(report).replace(str(root), "WS")
    for spelling in SPELLINGS:
        text = text.replace(os.sep + spelling, "")
    return text


@pytest.fixture(scope="module")
def flat(tmp_path_factory):
    return Path(write_inspect_workspace(tmp_path_factory.mktemp("flat")))


@pytest.fixture(params=SPELLINGS)
def cann8(request, tmp_path):
    return to_cann8(write_inspect_workspace(tmp_path / "ws"), request.param)


# ------------------------------------------------------------------------------------------ ls, ni, pt, completion
@pytest.mark.parametrize("argv", [("ls",), ("ls", "-n", "conv"), ("ls", "-g", INSPECT_GRAPH, "-t", "Relu"),
                                  ("ni", "relu1/Relu"), ("ni", "conv1/Conv2D", "-a"), ("pt", "relu1/Relu:output:0"),
                                  ("cp", "out/Add:output:0", "out_Add.0.1700000000000000.npy")])
def test_inspection_commands_read_the_per_process_graph_as_the_flat_one(flat, cann8, argv):
    expected = dispatch(flat, *argv)
    got = dispatch(cann8, *argv)
    assert same_text(got, cann8) == same_text(expected, flat)
    if argv[0] in ("ls", "ni"):
        assert got.data["graph_notes"] == expected.data["graph_notes"] == []


def test_ls_names_the_graph_file_inside_the_per_process_folder(cann8):
    report = dispatch(cann8, "ls")
    (folder,) = os.listdir(str(cann8 / "npu" / "debug_0" / "graph"))
    assert report.title == (f"5 ops of graph {INSPECT_GRAPH} "
                            f"({cann8}/npu/debug_0/graph/{folder}/ge_proto_00000001_Build.txt), by type")


def test_the_dump_device_wins_over_a_newer_folder_of_another_device(tmp_path):
    workspace = to_cann8(write_inspect_workspace(tmp_path / "ws"), "pid_1234_deviceid_0")
    other_graph(workspace / "npu" / "debug_0" / "graph" / "pid_99_deviceid_1", mtime=4102444800)  # year 2100
    report = dispatch(workspace, "ls")
    assert report.title.startswith(f"5 ops of graph {INSPECT_GRAPH} ") and report.data["graph_notes"] == []
    assert dispatch(workspace, "ni", "out/Add").data["graph"] == INSPECT_GRAPH


def test_of_two_devices_the_graph_of_the_device_read_is_used(tmp_path):
    """A tree with two devices is read one device at a time (issue 17): the lowest by default, or --device N;
    the graph read is that device's, whichever folder is newer."""
    workspace = to_cann8(write_inspect_workspace(tmp_path / "ws"), "pid_1234_deviceid_0")
    other_graph(workspace / "npu" / "debug_0" / "graph" / "pid_99_deviceid_1", mtime=4102444800)
    shutil.copytree(str(workspace / "npu" / "debug_0" / "dump" / "20240101000000" / "0"),
                    str(workspace / "npu" / "debug_0" / "dump" / "20240101000009" / "1"))  # a 2nd device's dump
    report = dispatch(workspace, "ls")
    assert report.title.startswith(f"5 ops of graph {INSPECT_GRAPH} ") and report.data["graph_notes"] == []
    assert dispatch(workspace, "ls", "--device", "1").title.startswith("1 op of graph ge_default_other ")


def test_without_a_clear_device_the_newest_folder_is_used_and_named_in_one_line(tmp_path):
    workspace = to_cann8(write_inspect_workspace(tmp_path / "ws"), "pid_1234_deviceid_0")
    graph_dir = workspace / "npu" / "debug_0" / "graph"
    other_graph(graph_dir / "pid_99_deviceid_1", mtime=4102444800)
    dump = workspace / "npu" / "debug_0" / "dump"
    os.replace(str(dump / "20240101000000" / "0" / "ge_default_1" / "1" / "0"), str(tmp_path / "copied"))
    shutil.rmtree(str(dump))
    os.replace(str(tmp_path / "copied"), str(dump))  # a flat folder of copied dumps: no device level
    report = dispatch(workspace, "ls")
    note = (f"Build graph of {graph_dir}: used pid_99_deviceid_1 (the newest of 2 folders); also there: "
            "pid_1234_deviceid_0")
    assert report.title.startswith("1 op of graph ge_default_other ")
    assert report.data["graph_notes"] == [note] and format_report(report).count(note) == 1
    named = dispatch(workspace, "ls", "-g", INSPECT_GRAPH)  # a graph name settles it: no note
    assert named.title.startswith(f"5 ops of graph {INSPECT_GRAPH} ") and named.data["graph_notes"] == []
    names = WorkspaceIndex(lambda: WorkspaceLookup(str(workspace))).values(arg_hints.GRAPH_NAME)
    assert names == ["ge_default_1", "ge_default_other"]  # -g completes the names of every folder


@pytest.mark.parametrize("argv", [("pt", "relu1/Relu:output:0"),
                                  ("cp", "out/Add:output:0", "out_Add.0.1700000000000000.npy")])
def test_pt_and_cp_say_which_of_two_processes_graphs_they_used(tmp_path, flat, argv):
    workspace = to_cann8(write_inspect_workspace(tmp_path / "ws"), "pid_1234_deviceid_0")
    graph_dir = workspace / "npu" / "debug_0" / "graph"
    shutil.copytree(str(graph_dir / "pid_1234_deviceid_0"), str(graph_dir / "pid_1300_deviceid_0"))
    os.utime(str(graph_dir / "pid_1300_deviceid_0" / "ge_proto_00000001_Build.txt"), (4102444800, 4102444800))
    note = (f"Build graph of {graph_dir}: used pid_1300_deviceid_0 (the newest of 2 folders of device 0); "
            "also there: pid_1234_deviceid_0")
    report = dispatch(workspace, *argv)
    assert report.data["graph_notes"] == [note] and note in format_report(report).splitlines()
    assert dispatch(flat, *argv).data["graph_notes"] == []


def test_unusable_entries_are_named_and_the_graph_is_still_found(tmp_path):
    workspace = to_cann8(write_inspect_workspace(tmp_path / "ws"), "pid_1234_deviceid_0")
    graph_dir = workspace / "npu" / "debug_0" / "graph"
    os.mkfifo(str(graph_dir / "pid_5_deviceid_0"))
    other_graph(graph_dir / "pid_x_deviceid_")
    report = dispatch(workspace, "ni", "relu1/Relu")
    assert report.data["graph"] == INSPECT_GRAPH
    assert report.data["graph_notes"] == [
        f"{graph_dir / 'pid_5_deviceid_0'}: skipped, a FIFO where a graph folder should be",
        f"{graph_dir / 'pid_x_deviceid_'}: skipped, the name is not pid_<pid>_deviceid_<device> or <pid>_<device>"]


def test_per_process_folders_without_a_build_graph_fall_back_to_the_dump_names(tmp_path):
    workspace = Path(write_inspect_workspace(tmp_path / "ws"))
    graph_dir = workspace / "npu" / "debug_0" / "graph"
    os.remove(str(graph_dir / "ge_proto_00000001_Build.txt"))
    (graph_dir / "pid_1_deviceid_0").mkdir()
    report = dispatch(workspace, "ls")
    assert report.data["graph"] is None and report.title.startswith("3 dumped ops under ")
    with pytest.raises(WorkspaceError, match=r"no GE Build graph \(ge_proto_\*_Build\.txt or ge_onnx_\*_Build\.pbtxt\) "
                                             r"in .*graph or its per-process folders \(pid_1_deviceid_0\)"):
        dispatch(workspace, "ls", "-f", "Conv")


# ------------------------------------------------------------------------------------------ ac, compare, vc, fusion
def run(capsys, *argv):
    code = main(list(map(str, argv)))
    return code, capsys.readouterr().out


def result_rows(folder) -> list:
    """The result CSV's rows (header left out) of the one result in ``folder``."""
    (csv,) = [name for name in os.listdir(str(folder)) if name.endswith(".csv")]
    return (Path(folder) / csv).read_text().splitlines()[1:]


@pytest.fixture(scope="module")
def cnn_flat_rows(tmp_path_factory):
    """``ac -c`` on the flat sample (copied: nothing is written into it)."""
    folder = tmp_path_factory.mktemp("flat_ac")
    assert main(["-d", str(copy_cnn_workspace(folder)), "ac", "-c", "-o", str(folder / "out"), "--workers", "1"]) == 1
    rows = result_rows(folder / "out")
    assert len(rows) == dumped_tensors()  # one row per input and output of the sample's dump files
    return rows


@pytest.mark.parametrize("spelling", SPELLINGS)
def test_ac_compare_gives_the_same_rows_from_per_process_graph_folders(tmp_path, capsys, cnn_flat_rows, spelling):
    workspace = to_cann8(copy_cnn_workspace(tmp_path), spelling, runs=(0, 1))
    code, out = run(capsys, "-d", workspace, "ac", "-c", "-o", tmp_path / "out", "--workers", "1")
    assert code == 1
    assert result_rows(tmp_path / "out") == cnn_flat_rows
    assert f"Verdict: Most likely culprit: {RES_CONV} (Conv2D), by local error (replay)." in out
    assert "fused by ConvBiasaddFusionPass (graph), but the fusion-off run computes the same" in out
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["order_source"] == "graph"
    assert "Build graph" not in out  # no note: one folder, the dump's device


@pytest.mark.parametrize("argv", [("compare", "-out", "{out}"),
                                  ("compare", "-m", "{ws}/npu/debug_0/dump", "-g", "{ws}/tf/dump",
                                   "-f", "{ws}/npu/debug_0/graph", "-out", "{out}"),
                                  ("vc", "-lt", "{ws}/npu/debug_0/dump", "-rt", "{ws}/tf/dump",
                                   "-g", "{ws}/npu/debug_0/graph")])
def test_compare_and_vc_read_a_per_process_graph_folder(tmp_path, capsys, cnn_flat_rows, argv):
    workspace = to_cann8(copy_cnn_workspace(tmp_path), "pid_1234_deviceid_0", runs=(0, 1))
    out = tmp_path / "out"
    code, text = run(capsys, "-d", workspace, *(arg.format(ws=workspace, out=out) for arg in argv))
    assert code == 1
    folder = out if argv[0] == "compare" else next((workspace / "temp" / "vector_compare").iterdir())
    assert result_rows(folder) == cnn_flat_rows
    assert "No graph" not in text


def test_compare_names_the_folder_used_when_two_processes_wrote_graphs(tmp_path, capsys, cnn_flat_rows):
    workspace = to_cann8(copy_cnn_workspace(tmp_path), "pid_1234_deviceid_0", runs=(0, 1))
    graph_dir = workspace / "npu" / "debug_0" / "graph"
    shutil.copytree(str(graph_dir / "pid_1234_deviceid_0"), str(graph_dir / "pid_1300_deviceid_0"))
    os.utime(str(graph_dir / "pid_1300_deviceid_0" / "ge_proto_00000001_Build.txt"), (4102444800, 4102444800))
    code, text = run(capsys, "-d", workspace, "--json", "compare", "-out", tmp_path / "out")
    note = (f"Build graph of {graph_dir}: used pid_1300_deviceid_0 (the newest of 2 folders of device 0); "
            "also there: pid_1234_deviceid_0")
    assert code == 1 and json.loads(text)["data"]["graph_notes"] == [note]
    assert result_rows(tmp_path / "out") == cnn_flat_rows  # the same graph, copied
    code, text = run(capsys, "-d", workspace, "fusion")
    assert note in text.splitlines()


def test_fusion_lists_the_same_fused_ops_from_per_process_graph_folders(tmp_path, capsys):
    code, expected = run(capsys, "-d", CNN, "--json", "fusion")
    workspace = to_cann8(copy_cnn_workspace(tmp_path), "1234_0", runs=(0, 1))
    code_cann8, got = run(capsys, "-d", workspace, "--json", "fusion")
    expected_data, got_data = json.loads(expected)["data"], json.loads(got)["data"]
    assert code_cann8 == code
    assert got_data["listed_ops"] == expected_data["listed_ops"] and len(got_data["listed_ops"]) > 0
    assert got_data["graph"].endswith(os.path.join("graph", "1234_0", "ge_proto_00000001_Build.txt"))
    assert got_data["notes"] == expected_data["notes"]


def test_report_aligns_a_per_process_graph_folder_again_for_its_details(tmp_path, capsys):
    workspace = to_cann8(copy_cnn_workspace(tmp_path), "pid_1234_deviceid_0", runs=(0, 1))
    assert run(capsys, "-d", workspace, "ac", "-c", "--workers", "1")[0] == 1
    code, text = run(capsys, "-d", workspace, "report", "-o", tmp_path / "page.html")
    page = (tmp_path / "page.html").read_text()
    assert code == 1 and "Element errors not shown" not in page and "could not be aligned again" not in page


# ------------------------------------------------------------------------------------------ ge2json
def test_ge2json_converts_the_per_process_graph_and_notes_a_missing_device(tmp_path):
    workspace = to_cann8(copy_cnn_workspace(tmp_path), "pid_1234_deviceid_0")
    graph_dir = workspace / "npu" / "debug_0" / "graph"
    report = dispatch(workspace, "ge2json", graph_dir, "-o", tmp_path / "g.json")
    assert report.data["input"] == str(graph_dir / "pid_1234_deviceid_0" / "ge_proto_00000001_Build.txt")
    assert report.data["notes"] == [] and (tmp_path / "g.json").is_file()
    report = dispatch(workspace, "ge2json", graph_dir, "-o", tmp_path / "h.json", "--device", "3")
    assert report.data["notes"] == [f"Build graph of {graph_dir}: used pid_1234_deviceid_0 (the only candidate; "
                                    "no graph folder of the dump's device 3)"]
    assert report.data["notes"][0] in format_report(report)
    with pytest.raises(WorkspaceError, match="--device only applies when GE_GRAPH is a folder"):
        dispatch(workspace, "ge2json", report.data["input"], "-o", tmp_path / "i.json", "--device", "0")
