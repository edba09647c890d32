"""``ge2json``: a Build graph to the JSON msaccucmp's ``compare -f`` reads, checked against msaccucmp itself."""
import csv
import json
import os

import numpy as np
import pytest

from precision_tool.commands.ge2json import COMMAND
from precision_tool.commands.command_registry import CommandRegistry, Context
from precision_tool.errors import GraphFormatError, UsageError, WorkspaceError
from precision_tool.formats.ge_graph import Graph, GraphModel, InputRef, OpNode, tensor_desc
from precision_tool.formats.ge_io import read_ge_graph, write_ge_graph_text

GRAPH_NAME = "ge_default_20240101000000_1"


def _nd(shape, origin_name):
    return tensor_desc("DT_FLOAT", "ND", shape, origin_format="ND", origin_shape=shape, origin_name=origin_name,
                       origin_output_index=0)


def _model():
    """x (Data) -> scope/conv_bn (fusion of scope/conv + scope/bn, NC1HWC0 output) -> scope/relu."""
    fused_out = tensor_desc("DT_FLOAT", "NC1HWC0", [1, 1, 4, 4, 16], origin_format="NHWC", origin_shape=[1, 4, 4, 3],
                            origin_name="scope/bn", origin_output_index=0)
    ops = (
        OpNode("x", "Data", output_descs=(_nd([1, 4, 4, 3], "x"),), attrs={"_datadump_original_op_names": ["x"]}),
        OpNode("scope/conv_bn", "Conv2D", id=1, inputs=(InputRef("x", 0),), input_descs=(_nd([1, 4, 4, 3], ""),),
               output_descs=(fused_out,),
               attrs={"_datadump_original_op_names": ["scope/conv", "scope/bn"],
                      "pass_name": ["ConvBatchnormFusionPass"], "scope/conv_bn_kernelname": "te_conv_bn"}),
        OpNode("scope/relu", "Relu", id=2, inputs=(InputRef("scope/conv_bn", 0), InputRef("x", -1)),
               input_descs=(fused_out,), output_descs=(_nd([1, 4, 4, 3], "scope/relu"),),
               attrs={"_datadump_original_op_names": ["scope/relu"]}),
    )
    return GraphModel((Graph(GRAPH_NAME, ops), Graph("sub", (OpNode("s", "Add"),))), name=GRAPH_NAME)


def _run(*argv):
    return CommandRegistry([COMMAND]).dispatch(["ge2json", *map(str, argv)], Context(data_dir="unused"))


@pytest.fixture
def build_txt(tmp_path):
    folder = tmp_path / "graph"
    folder.mkdir()
    return write_ge_graph_text(_model(), folder / "ge_proto_00000042_Build.txt")


def test_converts_a_text_graph_and_reports_graphs_ops_and_fused_ops(build_txt, tmp_path):
    out = tmp_path / "out.json"
    report = _run(build_txt, "-o", out)
    assert read_ge_graph(out) == _model()
    assert json.loads(out.read_text())["graph"][0]["name"] == GRAPH_NAME
    assert report.blocks[0].headers == ["graph", "ops", "fused ops"]
    assert report.blocks[0].rows == [[GRAPH_NAME, 3, 1], ["sub", 1, 0]]
    assert report.status == f"wrote 2 graphs (4 ops) to {out}"
    assert report.data["graphs"] == [{"name": GRAPH_NAME, "ops": 3, "fused_ops": 1},
                                     {"name": "sub", "ops": 1, "fused_ops": 0}]
    assert report.exit_code == 0


def test_a_folder_input_uses_its_build_graph_and_a_folder_output_gets_the_input_name(build_txt, tmp_path):
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    report = _run(build_txt.parent, "-o", out_dir)
    assert report.data["input"] == str(build_txt)
    assert os.listdir(out_dir) == ["ge_proto_00000042_Build.json"]


def test_graph_name_picks_among_build_graphs(build_txt, tmp_path):
    other = GraphModel((Graph("ge_default_2", (OpNode("y", "Data"),)),))
    write_ge_graph_text(other, build_txt.parent / "ge_proto_00000050_Build.txt")
    report = _run(build_txt.parent, "-o", tmp_path / "a.json", "--graph-name", GRAPH_NAME)
    assert report.data["input"] == str(build_txt)
    with pytest.raises(WorkspaceError, match="--graph-name only applies when GE_GRAPH is a folder"):
        _run(build_txt, "-o", tmp_path / "b.json", "--graph-name", GRAPH_NAME)


def test_never_overwrites_its_input(build_txt, tmp_path):
    json_input = tmp_path / "graph.json"
    _run(build_txt, "-o", json_input)
    before = json_input.read_bytes()
    with pytest.raises(WorkspaceError, match="is the input graph itself"):
        _run(json_input, "-o", json_input)
    assert json_input.read_bytes() == before


def test_errors_are_one_line_precision_tool_errors(tmp_path):
    garbled = tmp_path / "ge_proto_00000001_Build.txt"
    garbled.write_text('graph {\n  name: "g\n}\n')
    with pytest.raises(GraphFormatError, match=r"ge_proto_00000001_Build\.txt: line 2, column \d+: ") as caught:
        _run(garbled, "-o", tmp_path / "o.json")
    assert "\n" not in str(caught.value) and not (tmp_path / "o.json").exists()
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(WorkspaceError, match="no GE Build graph"):
        _run(empty, "-o", tmp_path / "o.json")
    with pytest.raises(WorkspaceError, match="no such file"):
        _run(tmp_path / "missing.txt", "-o", tmp_path / "o.json")
    with pytest.raises(UsageError, match="required: -o"):
        _run(garbled)


def test_an_unwritable_output_is_a_workspace_error(build_txt, tmp_path):
    with pytest.raises(WorkspaceError, match="cannot write"):
        _run(build_txt, "-o", tmp_path / "no" / "such" / "dir.json")


# ------------------------------------------------------------------------------------------ the peer
def _nc1hwc0_from_nhwc(nhwc):
    n, h, w, c = nhwc.shape
    out = np.zeros((n, 1, h, w, 16), dtype=nhwc.dtype)
    out[:, 0, :, :, :c] = nhwc
    return out


@pytest.mark.peer
def test_msaccucmp_compares_with_the_json_we_write(peer, tmp_path):
    from precision_tool.formats.dump_names import build_dump_name
    from precision_tool.formats.dump_writer import TensorSpec, write_dump

    npu, ref, out = tmp_path / "npu", tmp_path / "ref", tmp_path / "out"
    for folder in (npu, ref, out):
        folder.mkdir()
    rng = np.random.default_rng(7)
    x = rng.standard_normal((1, 4, 4, 3)).astype(np.float32)
    bn = (x * 0.5 + 0.1).astype(np.float32)
    relu = np.maximum(bn, 0)
    fused = TensorSpec(_nc1hwc0_from_nhwc(bn), format="NC1HWC0", original_shape=bn.shape)
    dumps = [("x", "Data", [], [x]), ("scope/conv_bn", "Conv2D", [x], [fused]), ("scope/relu", "Relu", [fused], [relu])]
    for task, (name, op_type, inputs, outputs) in enumerate(dumps, start=1):
        file_name = build_dump_name(op_type, name, task, 0, 1700000000000000 + task).file_name
        write_dump(npu / file_name, name, inputs, outputs)
    # References: scope/bn is off by 0.01 everywhere, so the fused op's output and relu's input show it.
    for tf_name, array in [("x", x), ("scope/conv", x * 0.5), ("scope/bn", bn + 0.01), ("scope/relu", relu)]:
        np.save(ref / f"{tf_name.replace('/', '_')}.0.1700000000000000.npy", array)
    (tmp_path / "graph").mkdir()
    graph_txt = write_ge_graph_text(_model(), tmp_path / "graph" / "ge_proto_00000042_Build.txt")
    _run(graph_txt, "-o", tmp_path / "graph.json")

    result = peer.run("compare", "-m", npu, "-g", ref, "-f", tmp_path / "graph.json", "-out", out, check=False)
    csv_files = list(out.glob("result_*.csv"))
    assert len(csv_files) == 1, result.stdout[-2000:] + result.stderr[-2000:]
    with open(csv_files[0], newline="") as handle:
        all_rows = list(csv.DictReader(handle))
    rows = {row["TensorIndex"]: row for row in all_rows if row["TensorIndex"] != "NaN"}
    assert set(rows) == {"x:output:0", "scope/conv_bn:input:0", "scope/conv_bn:output:0", "scope/relu:input:0",
                         "scope/relu:output:0"}
    # msaccucmp reads every graph of the JSON: the subgraph's op is listed, without a dump.
    assert [row["NPUDump"] for row in all_rows if row["TensorIndex"] == "NaN"] == ["s"]
    fused_out = rows["scope/conv_bn:output:0"]
    assert fused_out["GroundTruth"] == "scope/conv,scope/bn" and fused_out["Shape"] == "[1,4,4,3]"
    assert float(fused_out["MaxAbsoluteError"]) == pytest.approx(0.01, abs=1e-5)  # matched to scope/bn, NHWC
    assert float(rows["scope/relu:input:0"]["MaxAbsoluteError"]) == pytest.approx(0.01, abs=1e-5)
    assert float(rows["scope/relu:output:0"]["MaxAbsoluteError"]) == 0.0
    assert float(rows["x:output:0"]["CosineSimilarity"]) == pytest.approx(1.0)
