"""Outputs never go inside an input folder (issue 14): the checks of :mod:`precision_tool.config`, and the
commands that write -- ``ac -o/--html``, ``report -o/--plots``, ``tf_dump -o`` -- refusing a workspace input
folder with exit 2 and one line naming the path, before anything is created. Output files named after ops
(``ni -s``) get a plain, bounded file name whatever the op is called."""
import dataclasses
import os

import numpy as np
import pytest

from hostile_builders import listing
from inspect_builders import build_graph, write_inspect_workspace
from precision_tool.cli import main
from precision_tool.config import (Workspace, check_output_dir, check_output_file, ensure_output_dir,
                                   ensure_output_file, input_folders_of, output_file_name)
from precision_tool.errors import WorkspaceError
from precision_tool.formats.ge_graph import Graph, GraphModel
from precision_tool.formats.ge_io import write_ge_graph_text
from precision_tool.formats.tfdbg_v1 import write_tfdbg_v1_tensor

US = 1_700_000_000_000_000


def run(capsys, *argv):
    code = main([os.fspath(a) for a in argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def assert_refused(code, out, err, path) -> None:
    assert code == 2 and out == "" and "Traceback" not in err and err.count("\n") == 1
    assert err.startswith(f"precision_tool: error: {path}: output folder would be inside the input ")


# ------------------------------------------------------------------------------------------- config's checks
def test_folder_inputs_forbid_themselves_and_everything_below(tmp_path):
    inputs = tmp_path / "in"
    (inputs / "deep").mkdir(parents=True)
    for out in (inputs, inputs / "deep" / "new", inputs / "new" / "newer"):
        with pytest.raises(WorkspaceError, match="output folder would be inside the input"):
            check_output_dir(str(out), str(inputs))
    assert check_output_dir(str(tmp_path / "in_other"), str(inputs)) == str(tmp_path / "in_other")  # a prefix only
    os.symlink(inputs, tmp_path / "link")
    with pytest.raises(WorkspaceError, match=f"{tmp_path / 'link' / 'x'}: output folder would be inside"):
        check_output_dir(str(tmp_path / "link" / "x"), str(inputs))
    assert sorted(os.listdir(tmp_path)) == ["in", "link"] and os.listdir(inputs) == ["deep"]  # nothing created


def test_a_file_input_forbids_its_folder_and_with_input_folders_of_everything_below(tmp_path):
    dump = tmp_path / "step" / "Add.add.1.1.1700000000000000"
    dump.parent.mkdir()
    dump.write_bytes(b"x")
    with pytest.raises(WorkspaceError, match=f"{dump.parent}: output folder would be the folder of the input file "
                                             f"{dump}"):
        check_output_dir(str(dump.parent), str(dump))
    assert check_output_dir(str(dump.parent / "sub"), str(dump)) == str(dump.parent / "sub")
    assert input_folders_of(str(dump), str(tmp_path)) == (str(dump.parent), str(tmp_path))
    with pytest.raises(WorkspaceError, match=f"inside the input {dump.parent}"):
        check_output_dir(str(dump.parent / "sub"), folders=input_folders_of(str(dump)))


def test_workspace_input_folders_count_before_they_exist(tmp_path):
    workspace = Workspace(str(tmp_path / "ws"))
    expected = {os.path.join(workspace.root, *parts) for parts in
                [("npu",), ("overflow",), ("tf", "dump"), ("tf", "tf_debug"), ("tf", "graph"), ("fusion",)]}
    assert set(workspace.input_folders) == expected
    for inside in (("npu", "debug_7", "graph"), ("overflow", "dump", "x"), ("tf", "tf_debug"), ("fusion",)):
        with pytest.raises(WorkspaceError):
            ensure_output_dir(os.path.join(workspace.root, *inside), folders=workspace.input_folders)
    assert not os.path.exists(workspace.root)
    assert ensure_output_dir(workspace.temp, folders=workspace.input_folders) == workspace.temp
    assert ensure_output_dir(os.path.join(workspace.root, "tf", "out"), folders=workspace.input_folders)


def test_an_output_folder_that_is_a_file_is_named_so(tmp_path):
    taken = tmp_path / "notes.txt"
    taken.write_text("mine")
    with pytest.raises(WorkspaceError, match=f"{taken}: is a file, not a folder"):
        ensure_output_dir(str(taken))
    assert taken.read_text() == "mine"


def test_output_files(tmp_path):
    graph = tmp_path / "graph" / "ge_proto_00000001_Build.txt"
    graph.parent.mkdir()
    graph.write_text("graph {}")
    with pytest.raises(WorkspaceError, match=f"{graph}: the output file is the input {graph}"):
        check_output_file(str(graph), str(graph))
    newest = graph.parent / "ge_proto_00000099_Build.txt"
    with pytest.raises(WorkspaceError, match=f"{newest}: output folder would be the folder of the input file {graph}"):
        check_output_file(str(newest), str(graph))
    target = tmp_path / "out" / "new" / "g.json"
    assert ensure_output_file(str(target), str(graph)) == str(target) and target.parent.is_dir()
    assert not target.exists()  # the file itself is the caller's to write
    assert os.listdir(graph.parent) == [graph.name]


# ------------------------------------------------------------------------------------------------- commands
@pytest.fixture()
def workspace(tmp_path):
    return write_inspect_workspace(tmp_path / "ws")


@pytest.mark.parametrize("option, inside", [
    ("-o", ("fusion", "sub")),
    ("-o", ("npu", "debug_1", "dump")),
    ("--html", ("tf", "tf_debug", "page.html")),
    ("--html", ("npu", "debug_0", "graph", "ge_proto_00000099_Build.txt")),
    ("--html", ("overflow", "dump", "page.html")),
])
def test_ac_refuses_outputs_in_workspace_inputs_before_running(workspace, capsys, option, inside):
    before = listing(workspace)
    target = os.path.join(workspace, *inside)
    code, out, err = run(capsys, "-d", workspace, "ac", "-c", "--no-replay", "--workers", "1", option, target)
    assert_refused(code, out, err, target)
    assert listing(workspace) == before  # not even temp/vector_compare: nothing ran


def test_report_refuses_the_page_and_plots_in_workspace_inputs(workspace, tmp_path, capsys):
    # x1.5 keeps cosine 1, but out/Add's absolute error jumps 0.5 of its output over exact inputs: a culprit, exit 1
    assert run(capsys, "-d", workspace, "compare", "-o", tmp_path / "result")[0] == 1
    before = listing(workspace)
    for option, inside in (("-o", ("tf", "tf_debug", "r.html")), ("--plots", ("fusion", "plots"))):
        target = os.path.join(workspace, *inside)
        code, out, err = run(capsys, "report", "--no-checks", "-f", tmp_path / "result", option, target)
        assert_refused(code, out, err, target if option == "-o" else os.path.join(target, "plot.svg"))
        assert listing(workspace) == before


def test_tf_dump_refuses_the_workspace_other_inputs_but_writes_tf_dump(workspace, capsys):
    write_tfdbg_v1_tensor(os.path.join(workspace, "tf", "tf_debug", "c", f"run_{US}_0"), "x", 0,
                          np.ones(2, np.float32), US)
    before = listing(workspace)
    for inside in (("npu", "debug_0", "dump", "ref"), ("fusion", "ref")):
        target = os.path.join(workspace, *inside)
        assert_refused(*run(capsys, "-d", workspace, "tf_dump", "-o", target), target)
        assert listing(workspace) == before
    code, out, err = run(capsys, "-d", workspace, "tf_dump")  # tf/dump holds files no conversion recorded
    assert code == 2 and "no tf_dump conversion recorded" in err and listing(workspace) == before
    code, out, err = run(capsys, "-d", workspace, "tf_dump", "--clean")
    assert code == 0 and "Traceback" not in err
    assert any(name.startswith("x.0.") for name in os.listdir(os.path.join(workspace, "tf", "dump")))


# ------------------------------------------------------------------------------------- names of output files
def test_output_file_names_are_plain_bounded_and_distinct():
    assert output_file_name("a/b\\c:d*e?f\"g<h>i|j\x00k\x1bl\udcffm", ".npy") == "a_b_c_d_e_f_g_h_i_j_k_l_m.npy"
    first, second = output_file_name("é" * 200 + "1", ".dot"), output_file_name("é" * 200 + "2", ".dot")
    assert first != second and first[:100] == second[:100]
    for name in (first, second):
        assert len(name.encode("utf-8")) <= 255 and name.endswith(".dot")


def test_ni_subgraph_file_of_a_hostile_op_name(tmp_path, capsys):
    root = write_inspect_workspace(tmp_path / "ws")
    model = build_graph()
    renamed = {"relu1/Relu": "re\x00lu", "out/Add": "o" * 300}
    ops = tuple(dataclasses.replace(op, name=renamed.get(op.name, op.name),
                                    inputs=[str(ref).replace("relu1/Relu", "re\x00lu") for ref in op.inputs])
                for op in model.root.ops)
    write_ge_graph_text(GraphModel((Graph(model.root.name, ops),)),
                        os.path.join(root, "npu", "debug_0", "graph", "ge_proto_00000001_Build.txt"))
    for name, expected in (("re\x00lu", "re_lu.depth1.dot"), ("o" * 300, None)):
        code, out, err = run(capsys, "-d", root, "ni", name, "-s", "1")
        assert code == 0 and err == "" and "Traceback" not in out
        written = os.listdir(os.path.join(root, "temp", "node_info"))
        assert expected in written if expected else any(len(f) == 255 and f.startswith("o" * 200) for f in written)
