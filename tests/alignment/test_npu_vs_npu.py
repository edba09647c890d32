"""NPU run vs NPU run (npu/debug_0 vs npu/debug_1)."""
from align_builders import TS, graph, node, pairing, reasons, write_dumps
from precision_tool.alignment import align

FUSED = ["conv1/Conv2D", "conv1/BiasAdd", "conv1/Relu"]


def fused_run():
    return [node("x", "Data", original=["x"]),
            node("conv1/Conv2D", "Conv2D", ["x:0", "w:0"], original=FUSED, origins=[("conv1/Relu", 0)]),
            node("w", "Const"),
            node("pool", "MaxPool", ["conv1/Conv2D:0"], original=["pool"])]


def unfused_run():
    return [node("x", "Data", original=["x"]), node("w", "Const"),
            node("conv1/Conv2D", "Conv2D", ["x:0", "w:0"], original=["conv1/Conv2D"]),
            node("conv1/BiasAdd", "BiasAdd", ["conv1/Conv2D:0"], original=["conv1/BiasAdd"]),
            node("conv1/Relu", "Relu", ["conv1/BiasAdd:0"], original=["conv1/Relu"]),
            node("pool", "MaxPool", ["conv1/Relu:0"], original=["pool"])]


def test_same_names_pair_every_tensor(tmp_path):
    nodes = [node("a", "Relu", ["x:0"]), node("b", "Neg", ["a:0"], outputs=2)]
    write_dumps(tmp_path / "d0", nodes)
    write_dumps(tmp_path / "d1", nodes, start=TS + 500)
    result = align(tmp_path / "d0", tmp_path / "d1")
    assert result.mode == "npu_vs_npu"
    assert pairing(result) == {t: t for t in ("a:input:0", "a:output:0", "b:input:0", "b:output:0", "b:output:1")}
    assert {pair.rule for pair in result.pairs} == {"same_op_name"}
    assert result.pairs[0].ref.path.startswith(str(tmp_path / "d1"))
    assert result.coverage.reference_only == ()


def test_fused_run_against_unfused_run_with_graphs(tmp_path):
    write_dumps(tmp_path / "d0", fused_run())
    write_dumps(tmp_path / "d1", unfused_run())
    result = align(tmp_path / "d0", tmp_path / "d1", graph=graph(fused_run()), reference_graph=graph(unfused_run()),
                   mode="npu_vs_npu")
    assert pairing(result) == {
        "conv1/Conv2D:input:0": "conv1/Conv2D:input:0", "conv1/Conv2D:input:1": "conv1/Conv2D:input:1",
        "conv1/Conv2D:output:0": "conv1/Relu:output:0",       # not the same-named, pre-BiasAdd output
        "pool:input:0": "pool:input:0", "pool:output:0": "pool:output:0"}
    rules = {pair.npu.tensor_id: pair.rule for pair in result.pairs}
    assert rules["conv1/Conv2D:output:0"] == "same_original_tensor"
    assert rules["conv1/Conv2D:input:0"] == "same_op_name"
    assert result.coverage.reference_only == ("conv1/Conv2D:output:0", "conv1/BiasAdd:output:0")
    assert result.order_source == "graph"


def test_fused_run_against_unfused_run_by_headers_only(tmp_path):
    write_dumps(tmp_path / "d0", fused_run(), header_original={"conv1/Conv2D": [("conv1/Relu", 0)]})
    write_dumps(tmp_path / "d1", unfused_run())
    got = pairing(align(tmp_path / "d0", tmp_path / "d1"))
    assert got["conv1/Conv2D:output:0"] == "conv1/Relu:output:0"
    assert got["conv1/Conv2D:input:0"] == "conv1/Conv2D:input:0"


def test_fused_op_with_a_new_name_pairs_inputs_by_the_tensor_feeding_them(tmp_path):
    fused = [node("x", "Data", original=["x"]), node("a", "Relu", ["x:0"], original=["a"]),
             node("fusion_17", "Conv2D", ["a:0"], original=FUSED, origins=[("conv1/Relu", 0)])]
    unfused = [node("x", "Data"), node("a", "Relu", ["x:0"]), node("conv1/Conv2D", "Conv2D", ["a:0"]),
               node("conv1/BiasAdd", "BiasAdd", ["conv1/Conv2D:0"]), node("conv1/Relu", "Relu", ["conv1/BiasAdd:0"])]
    write_dumps(tmp_path / "d0", fused)
    write_dumps(tmp_path / "d1", unfused)
    result = align(tmp_path / "d0", tmp_path / "d1", graph=graph(fused), reference_graph=graph(unfused))
    got = pairing(result)
    assert got["fusion_17:output:0"] == "conv1/Relu:output:0"
    assert got["fusion_17:input:0"] == "a:output:0"
    assert [pair.via for pair in result.pairs if pair.npu.tensor_id == "fusion_17:input:0"] == [("a",)]


def test_unpaired_tensors_are_reported(tmp_path):
    write_dumps(tmp_path / "d0", [node("a", "Relu", ["x:0"]), node("only_here", "Neg", ["a:0"])])
    write_dumps(tmp_path / "d1", [node("a", "Relu", ["x:0"]), node("only_there", "Abs", ["a:0"])])
    result = align(tmp_path / "d0", tmp_path / "d1")
    assert result.coverage.npu_only_ops == ("only_here",)
    assert result.coverage.reference_only == ("only_there:output:0",)
    assert reasons(result)["only_here:output:0"] == ("stands for only_here:0; no output of the other run stands "
                                                     "for it (and no op called only_here is there)")
    assert reasons(result)["only_here:input:0"] == ("no graph: which tensor feeds an input is only known from the "
                                                    "GE graph's edges; the other run has no op called only_here")
