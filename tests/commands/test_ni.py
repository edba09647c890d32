"""``ni``: graph facts, dump statistics, references, compare rows, attributes and the DOT subgraph."""
import os

import numpy as np
import pytest
from inspect_builders import PLANTED_OP, SHAPE, write_inspect_workspace

from precision_tool.cli import main
from precision_tool.commands import build_registry
from precision_tool.commands.command_registry import Context
from precision_tool.errors import UsageError, WorkspaceError
from precision_tool.reports.format import format_report


@pytest.fixture(scope="module")
def workspace(tmp_path_factory):
    return write_inspect_workspace(tmp_path_factory.mktemp("ws"))


def run(workspace, *argv):
    return build_registry().dispatch(["ni", *argv], Context(data_dir=workspace))


def test_graph_sections(workspace):
    report = run(workspace, "conv1/Conv2D")
    assert report.title == "conv1/Conv2D  (type Conv2D, id 2, graph ge_default_1, npu/debug_0)"
    inputs, outputs = report.blocks[0], report.blocks[1]
    assert inputs.rows[0] == [0, "input:0", "float16", "NC1HWC0", "[1, 1, 4, 4, 16]", "NHWC [1, 4, 4, 3]"]
    assert inputs.rows[1][1] == "conv1/weight:0"
    assert outputs.rows[0][5:] == ["conv1/BiasAdd:0", "relu1/Relu, out/Add"]
    text = format_report(report)
    assert "Original TF ops: conv1/Conv2D, conv1/BiasAdd" in text
    assert "Fusion passes:   ConvBiasaddFusionPass" in text
    assert "Kernel:          te_conv2d_abc (AIcoreEngine)" in text


def test_dump_and_reference_statistics(workspace):
    data = run(workspace, "-n", PLANTED_OP).data
    assert data["dump"]["path"].endswith("Add.out_Add.4.1.1700000000000002")
    output = data["dump"]["tensors"][-1]
    # its size in TF's layout, NHWC [1, 4, 4, 3] (not the 256 elements of the padded NC1HWC0 it is stored in)
    assert output["tensor"] == "out/Add:output:0" and output["size"] == int(np.prod(SHAPE)) and output["nan"] == 0
    pairs = {pair["tensor"]: pair["reference"] for pair in data["references"]["pairs"]}
    assert pairs == {"out/Add:input:0": "relu1/Relu:output:0", "out/Add:input:1": "conv1/BiasAdd:output:0",
                     "out/Add:output:0": "out/Add:output:0"}
    # the planted error shows in the statistics: NPU max is 1.5 times the reference max
    reference_table = next(block for block in run(workspace, PLANTED_OP).blocks
                           if getattr(block, "title", "").startswith("Reference tensors"))
    reference_max = float(reference_table.rows[-1][4])  # the max column
    assert output["max"] == pytest.approx(1.5 * reference_max, rel=2e-3)


def test_ops_without_dump_say_so(workspace):
    text = format_report(run(workspace, "input"))
    assert "NPU dump: none" in text


def test_sanitised_name_and_suggestions(workspace):
    assert run(workspace, "relu1_Relu").data["name"] == "relu1/Relu"
    with pytest.raises(WorkspaceError, match=r"no op 'relu1/Rel' in graph ge_default_1 .*did you mean relu1/Relu"):
        run(workspace, "relu1/Rel")


def test_name_is_required_once(workspace):
    with pytest.raises(UsageError, match="which op"):
        run(workspace)
    with pytest.raises(UsageError, match="two op names"):
        run(workspace, "out/Add", "-n", "relu1/Relu")


def test_all_attributes(workspace):
    attrs = {row[0]: row[1] for row in run(workspace, "conv1/Conv2D", "-a").blocks[-1].rows}
    assert attrs["pass_name"] == "['ConvBiasaddFusionPass']"
    assert attrs["conv1/Conv2D_kernelname"] == "'te_conv2d_abc'"


def test_subgraph_dot_is_written_to_temp(workspace):
    report = run(workspace, "relu1/Relu", "-s", "1")
    path = report.data["subgraph"]["path"]
    assert path == os.path.join(os.path.realpath(workspace), "temp", "node_info", "relu1_Relu.depth1.dot")
    dot = open(path).read()
    assert sorted(report.data["subgraph"]["ops"]) == ["conv1/Conv2D", "out/Add", "relu1/Relu"]
    assert '"conv1/Conv2D" -> "relu1/Relu" [label="0->0"];' in dot
    assert '"relu1/Relu" -> "out/Add" [label="0->0"];' in dot
    assert "input" not in report.data["subgraph"]["ops"]  # two edges away


def test_compare_rows_from_latest_result(workspace):
    folder = os.path.join(workspace, "temp", "vector_compare", "20240102000000")
    os.makedirs(folder)
    header = ("Index,OpType,NPUDump,DataType,Address,GroundTruth,DataType,TensorIndex,Shape,CosineSimilarity,"
              "MaxAbsoluteError,AccumulatedRelativeError,RelativeEuclideanDistance,KullbackLeiblerDivergence,"
              "StandardDeviation,MeanAbsoluteError,RootMeanSquareError,MaxRelativeError,MeanRelativeError,"
              "CompareFailReason")
    rows = ["0,Add,out/Add,float16,NaN,out/Add,float32,out/Add:output:0,\"[1,4,4,3]\",1.000000,3.220956,1,2,3,4,5,"
            "6,0.500553,0.499992,",
            "1,Relu,relu1/Relu,float16,NaN,relu1/Relu,float32,relu1/Relu:output:0,\"[1,4,4,3]\",1.0,0,0,0,0,0,0,0,0,0,"]
    with open(os.path.join(folder, "result_20240102000000.csv"), "w") as out:
        out.write("\n".join([header, *rows]) + "\n")
    report = run(workspace, PLANTED_OP)
    assert report.data["compare"]["rows"] == [["out/Add:output:0", "out/Add", "1.000000", "3.220956", "0.500553",
                                               "0.499992", "pass", ""]]
    assert report.data["compare"]["headers"][-2:] == ["verdict", "reason"]


def test_batch_cli_and_json(workspace, capsys):
    assert main(["-d", workspace, "--json", "ni", "conv1/Conv2D"]) == 0
    assert '"original_op_names": [\n      "conv1/Conv2D",' in capsys.readouterr().out


def test_without_a_graph_the_dump_files_still_answer(tmp_path):
    import shutil
    root = write_inspect_workspace(tmp_path / "ws")
    shutil.rmtree(os.path.join(root, "npu", "debug_0", "graph"))
    report = run(root, "relu1_Relu")
    assert report.title == f"relu1_Relu  (type Relu; no GE graph in {root}/npu/debug_0/graph: dump files only)"
    assert [t["tensor"] for t in report.data["dump"]["tensors"]] == ["relu1/Relu:input:0", "relu1/Relu:output:0"]
    assert report.data["references"]["pairs"][-1]["reference"] == "relu1/Relu:output:0"
    with pytest.raises(WorkspaceError, match="no GE Build graph"):
        run(root, "relu1_Relu", "-a")


REAL_GRAPH = (os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "shared", "real-world",
                           "graph", "oam_resnet50_ge_proto_00000062_Build.txt"))


@pytest.mark.skipif(not os.path.isfile(REAL_GRAPH), reason="no ../shared/real-world/graph beside the checkout")
@pytest.mark.parametrize("op, dump_folder, expected", [
    ("conv1conv1_relu", False, "NPU dump: none (there is no dump folder "),
    ("conv1conv1_relu", True, "NPU dump: none (a Conv2D op runs as a task, so the dump settings left it out"),
    ("data", True, "NPU dump: none (ops GE does not run as tasks (Data, Const, ...) are never dumped)")])
def test_why_a_graph_op_of_a_real_resnet50_has_no_dump(tmp_path, op, dump_folder, expected):
    """A real CANN ResNet-50 Build graph without dumps: a Conv2D (a task) was said to be "never dumped" like
    a Data op. The graph file says which op is which type (``conv1conv1_relu`` is a Conv2D, ``data`` a Data)."""
    graph_dir = tmp_path / "npu" / "debug_0" / "graph"
    graph_dir.mkdir(parents=True)
    with open(REAL_GRAPH, "rb") as source:
        (graph_dir / "ge_proto_00000062_Build.txt").write_bytes(source.read())
    if dump_folder:
        (tmp_path / "npu" / "debug_0" / "dump").mkdir()
    text = format_report(run(str(tmp_path), op))
    assert expected in text
