"""Graph-driven alignment: NPU dump + GE Build graph vs a TF reference .npy folder."""
import json
import os

import numpy as np

from align_builders import TS, VALUES, graph, node, pairing, reasons, write_dumps, write_refs, write_workspace
from precision_tool.alignment import align
from precision_tool.alignment.graph_alignment import GraphResolver
from precision_tool.alignment.npu_side import GraphIndex
from precision_tool.alignment.targets import NoTarget, Target
from precision_tool.formats.dump_names import build_dump_name
from precision_tool.formats.dump_writer import TensorSpec, write_dump
from precision_tool.formats.ge_graph import tensor_desc
from precision_tool.formats.layouts import to_device
from precision_tool.formats.tensor_kind import INPUT


def rules(alignment):
    return {pair.npu.tensor_id: pair.rule for pair in alignment.pairs}


def test_plain_chain_pairs_outputs_by_name_and_inputs_by_producer(tmp_path):
    nodes = [node("x", "Data"), node("a", "Relu", ["x:0"], original=["a"]), node("b", "Neg", ["a:0"]),
             node("c", "Abs", ["b:0", "a:-1"])]  # a control edge: not an input
    dump_dir, ref_dir, graph_path = write_workspace(tmp_path, nodes, ["x", "a", "b", "c"])
    result = align(dump_dir, ref_dir, graph=graph_path)
    assert pairing(result) == {
        "a:input:0": "x:output:0", "a:output:0": "a:output:0",
        "b:input:0": "a:output:0", "b:output:0": "b:output:0",
        "c:input:0": "b:output:0", "c:output:0": "c:output:0"}
    assert rules(result)["a:output:0"] == "single_original_op"
    assert rules(result)["b:output:0"] == "own_name"
    assert [pair.via for pair in result.pairs if pair.npu.kind is INPUT] == [("x",), ("a",), ("b",)]
    assert result.order == ("x", "a", "b", "c") and result.order_source == "graph"
    cov = result.coverage
    dumped = 3 * 2  # a, b and c (x is a Data op, never dumped): input 0 and output 0 each
    assert (cov.aligned_count, cov.npu_tensors, cov.npu_only_ops, cov.reference_only) == (dumped, dumped, (), ())
    assert cov.graph_ops_without_dump == () and cov.dumped_not_in_graph == ()  # the Data op is never dumped
    json.dumps(result.to_dict())


def test_fused_op_output_is_compared_with_the_tf_tensor_it_stands_for(tmp_path):
    fused = ["conv1/Conv2D", "conv1/BiasAdd", "conv1/Relu"]
    nodes = [node("x", "Data", original=["x"]),
             node("conv1/Conv2D", "Conv2D", ["x:0"], original=fused, origins=[("conv1/Relu", 0)]),
             node("pool", "MaxPool", ["conv1/Conv2D:0"], original=["pool"])]
    dump_dir, ref_dir, graph_path = write_workspace(tmp_path, nodes, ["x", *fused, "pool"])
    result = align(dump_dir, ref_dir, graph=graph_path)
    assert pairing(result) == {"conv1/Conv2D:input:0": "x:output:0",
                               "conv1/Conv2D:output:0": "conv1/Relu:output:0",
                               "pool:input:0": "conv1/Relu:output:0", "pool:output:0": "pool:output:0"}
    assert rules(result)["conv1/Conv2D:output:0"] == "origin_name"
    # the TF ops inside the fusion are what was not compared -- with their real names
    assert result.coverage.reference_only == ("conv1/BiasAdd:output:0", "conv1/Conv2D:output:0")


def test_fused_op_without_origin_name_is_not_guessed(tmp_path):
    nodes = [node("x", "Data"), node("conv1/Conv2D", "Conv2D", ["x:0"], original=["conv1/Conv2D", "conv1/Relu"])]
    dump_dir, ref_dir, graph_path = write_workspace(tmp_path, nodes, ["x", "conv1/Conv2D", "conv1/Relu"])
    result = align(dump_dir, ref_dir, graph=graph_path)
    assert "conv1/Conv2D:output:0" not in pairing(result)
    assert reasons(result)["conv1/Conv2D:output:0"] == (
        "conv1/Conv2D is a fused op (2 TF ops: conv1/Conv2D, conv1/Relu) and output 0 has no "
        "_datadump_origin_name: the TF tensor it stands for is unknown")


def test_header_original_op_stands_in_when_the_graph_desc_has_no_origin_name(tmp_path):
    nodes = [node("x", "Data"), node("fused", "Conv2D", ["x:0"], original=["c", "r"])]
    dump_dir, ref_dir, graph_path = write_workspace(tmp_path, nodes, ["x", "r"],
                                                    header_original={"fused": [("r", 0)]})
    result = align(dump_dir, ref_dir, graph=graph_path)
    assert pairing(result)["fused:output:0"] == "r:output:0"
    assert rules(result)["fused:output:0"] == "header_original_op"


def test_op_with_two_outputs_uses_each_desc(tmp_path):
    nodes = [node("x", "Data"),
             node("split", "SplitD", ["x:0"], original=["tf_split"], origins=[("tf_split", 1), ("tf_split", 0)]),
             node("moments", "BNTrainingReduce", ["x:0"], outputs=2, original=["bn"]),
             node("use", "Add", ["split:1", "moments:1"])]
    refs = ["x", ("tf_split", 0), ("tf_split", 1), ("bn", 0), ("bn", 1), "use"]
    dump_dir, ref_dir, graph_path = write_workspace(tmp_path, nodes, refs)
    got = pairing(align(dump_dir, ref_dir, graph=graph_path))
    assert got["split:output:0"] == "tf_split:output:1" and got["split:output:1"] == "tf_split:output:0"
    assert got["moments:output:0"] == "bn:output:0" and got["moments:output:1"] == "bn:output:1"
    assert got["use:input:0"] == "tf_split:output:0" and got["use:input:1"] == "bn:output:1"


def test_origin_name_without_index_means_the_same_output_index(tmp_path):
    nodes = [node("x", "Data"), node("two", "Unpack", ["x:0"], original=["a", "b"],
                                      origins=[("tf_unpack", None), ("tf_unpack", None)])]
    dump_dir, ref_dir, graph_path = write_workspace(tmp_path, nodes, [("tf_unpack", 0), ("tf_unpack", 1)])
    got = pairing(align(dump_dir, ref_dir, graph=graph_path))
    assert got["two:output:0"] == "tf_unpack:output:0" and got["two:output:1"] == "tf_unpack:output:1"


class TestSplitOps:
    """One TF op implemented by several NPU ops."""

    def test_the_op_leaving_the_split_stands_for_the_tf_op(self, tmp_path):
        nodes = [node("x", "Data"), node("mm_part1", "MatMul", ["x:0"], original=["dense/MatMul"]),
                 node("mm_part2", "Add", ["mm_part1:0", "x:0"], original=["dense/MatMul"]),
                 node("relu", "Relu", ["mm_part2:0"])]
        dump_dir, ref_dir, graph_path = write_workspace(tmp_path, nodes, ["x", "dense/MatMul", "relu"])
        result = align(dump_dir, ref_dir, graph=graph_path)
        got = pairing(result)
        assert got["mm_part2:output:0"] == "dense/MatMul:output:0"
        assert rules(result)["mm_part2:output:0"] == "split_output"
        assert got["relu:input:0"] == "dense/MatMul:output:0"
        assert "mm_part1:output:0" not in got
        assert reasons(result)["mm_part1:output:0"] == (
            "mm_part1 is one of 2 NPU ops implementing TF op dense/MatMul; its output 0 is internal "
            "(dense/MatMul is compared at mm_part2)")
        assert "mm_part2:input:0" not in got  # fed by the internal part: nothing in TF to compare with

    def test_explicit_origin_name_marks_the_output_op(self, tmp_path):
        nodes = [node("x", "Data"), node("p1", "MatMul", ["x:0"], original=["mm"]),
                 node("p2", "Add", ["p1:0"], original=["mm"], origins=[("mm", 0)]),
                 node("other", "Neg", ["p1:0"])]  # p1 also leaves the group, but p2 is named explicitly
        dump_dir, ref_dir, graph_path = write_workspace(tmp_path, nodes, ["x", "mm", "other"])
        result = align(dump_dir, ref_dir, graph=graph_path)
        assert pairing(result)["p2:output:0"] == "mm:output:0"
        assert "p1:output:0" not in pairing(result)

    def test_two_ops_leaving_the_split_is_ambiguous(self, tmp_path):
        nodes = [node("x", "Data"), node("p1", "MatMul", ["x:0"], original=["mm"]),
                 node("p2", "MatMul", ["x:0"], original=["mm"]), node("u1", "Neg", ["p1:0"]),
                 node("u2", "Neg", ["p2:0"])]
        dump_dir, ref_dir, graph_path = write_workspace(tmp_path, nodes, ["x", "mm", "u1", "u2"])
        result = align(dump_dir, ref_dir, graph=graph_path)
        assert "p1:output:0" not in pairing(result) and "p2:output:0" not in pairing(result)
        assert result.coverage.ambiguous == ("mm: split over NPU ops p1, p2",)


class TestLayoutOps:
    def test_inputs_and_outputs_walk_back_through_ge_inserted_cast_and_transdata(self, tmp_path):
        nodes = [node("x", "Data", original=["x"]),
                 node("conv", "Conv2D", ["x:0"], original=["c", "r"], origins=[("r", 0)]),
                 node("cast_1", "Cast", ["conv:0"]), node("trans_TransData_2", "TransData", ["cast_1:0"]),
                 node("rnn_trans", "TransDataRNN", ["trans_TransData_2:0"]),
                 node("add", "Add", ["rnn_trans:0", "x:0"], original=["add"])]
        dump_dir, ref_dir, graph_path = write_workspace(tmp_path, nodes, ["x", "r", "add"])
        result = align(dump_dir, ref_dir, graph=graph_path)
        got = pairing(result)
        for tensor in ("cast_1:input:0", "cast_1:output:0", "trans_TransData_2:output:0", "add:input:0"):
            assert got[tensor] == "r:output:0", tensor
        assert got["add:input:1"] == "x:output:0"
        via = {pair.npu.tensor_id: pair.via for pair in result.pairs}
        assert via["add:input:0"] == ("rnn_trans", "trans_TransData_2", "cast_1", "conv")
        assert via["cast_1:output:0"] == ("conv",)
        assert result.coverage.npu_only_ops == ()

    def test_a_cast_that_is_a_tf_op_is_compared_as_itself(self, tmp_path):
        # msaccucmp walks through every Cast, so it would compare neg's input with tf_add, before the TF Cast.
        nodes = [node("x", "Data"), node("add", "Add", ["x:0"], original=["tf_add"]),
                 node("tfcast", "Cast", ["add:0"], original=["tf_cast"], origins=[("tf_cast", 0)]),
                 node("neg", "Neg", ["tfcast:0"])]
        dump_dir, ref_dir, graph_path = write_workspace(tmp_path, nodes, ["x", "tf_add", "tf_cast", "neg"])
        got = pairing(align(dump_dir, ref_dir, graph=graph_path))
        assert got["tfcast:output:0"] == "tf_cast:output:0"
        assert got["neg:input:0"] == "tf_cast:output:0"
        assert got["tfcast:input:0"] == "tf_add:output:0"


def test_names_with_slashes_dots_and_a_leading_dash(tmp_path):
    nodes = [node("x", "Data"), node("-neg/Add", "Add", ["x:0"]), node("block.1/conv/Conv2D", "Conv2D", ["-neg/Add:0"]),
             node("out put", "Neg", ["block.1/conv/Conv2D:0"])]
    refs = ["x", "-neg/Add", "block.1/conv/Conv2D", "out put"]
    dump_dir, ref_dir, graph_path = write_workspace(tmp_path, nodes, refs)
    assert sorted(os.listdir(dump_dir))[0].startswith("Add.-neg_Add.")
    result = align(dump_dir, ref_dir, graph=graph_path)
    got = pairing(result)
    assert got["-neg/Add:output:0"] == "-neg/Add:output:0"
    assert got["block.1/conv/Conv2D:input:0"] == "-neg/Add:output:0"
    assert got["block.1/conv/Conv2D:output:0"] == "block.1/conv/Conv2D:output:0"
    assert got["out put:output:0"] == "out put:output:0"
    # the three ops after the Data op x, input 0 and output 0 each
    assert result.coverage.aligned_count == result.coverage.npu_tensors == 3 * 2


def test_dumped_op_missing_from_the_graph_is_reported_and_still_aligned_by_name(tmp_path):
    nodes = [node("x", "Data"), node("a", "Relu", ["x:0"])]
    dump_dir, ref_dir, graph_path = write_workspace(tmp_path, nodes, ["x", "a", "ghost"])
    write_dumps(dump_dir, [node("ghost", "Neg", ["a:0"])], start=TS + 100)
    result = align(dump_dir, ref_dir, graph=graph_path)
    assert result.coverage.dumped_not_in_graph == ("ghost",)
    assert pairing(result)["ghost:output:0"] == "ghost:output:0"
    assert reasons(result)["ghost:input:0"].startswith("no graph:")
    assert result.order == ("x", "a", "ghost")


def test_graph_op_without_dump_and_reference_only_tensors_are_reported(tmp_path):
    nodes = [node("x", "Data"), node("const", "Const"), node("a", "Relu", ["x:0"]),
             node("b", "Neg", ["a:0", "const:0"]),
             node("out", "NetOutput", ["b:0"])]
    dump_dir, ref_dir, graph_path = write_workspace(tmp_path, nodes, ["x", "a", "b", "tf_only/op", ("a", 1)],
                                                    skip=["b"])
    cov = align(dump_dir, ref_dir, graph=graph_path).coverage
    assert cov.graph_ops_without_dump == ("b",)  # Data, Const and NetOutput never run as tasks
    assert cov.reference_only == ("a:output:1", "b:output:0", "tf_only_op:output:0")


def test_ambiguous_reference_file_names_are_refused(tmp_path):
    # two TF ops whose names only differ by / and . share the reference file a_b.0.*.npy
    nodes = [node("x", "Data"), node("n1", "Relu", ["x:0"], original=["a/b"]),
             node("n2", "Relu", ["x:0"], original=["a.b"])]
    dump_dir, ref_dir, graph_path = write_workspace(tmp_path, nodes, ["x", "a/b"])
    result = align(dump_dir, ref_dir, graph=graph_path)
    assert "n1:output:0" not in pairing(result) and "n2:output:0" not in pairing(result)
    assert reasons(result)["n1:output:0"] == "reference file a_b.0 could be TF tensor a.b:0 or a/b:0"
    assert result.coverage.ambiguous == ("a_b.0.*.npy -> a.b:0 or a/b:0",)


def test_extra_tf_names_make_a_single_name_ambiguous(tmp_path):
    nodes = [node("x", "Data"), node("n1", "Relu", ["x:0"], original=["a/b"])]
    dump_dir, ref_dir, graph_path = write_workspace(tmp_path, nodes, ["x", "a/b"])
    assert pairing(align(dump_dir, ref_dir, graph=graph_path))["n1:output:0"] == "a/b:output:0"
    result = align(dump_dir, ref_dir, graph=graph_path, tf_op_names=["a.b"])
    assert "n1:output:0" not in pairing(result)


def test_missing_reference_output_says_which_outputs_exist(tmp_path):
    nodes = [node("x", "Data"), node("a", "Relu", ["x:0"], outputs=2)]
    dump_dir, ref_dir, graph_path = write_workspace(tmp_path, nodes, ["x", "a"])
    result = align(dump_dir, ref_dir, graph=graph_path)
    assert reasons(result)["a:output:1"] == "the reference has a output(s) [0] but not output 1"


def test_origin_format_and_shape_come_from_the_graph_else_the_header(tmp_path):
    nhwc = (1, 4, 4, 3)
    x = np.arange(48, dtype=np.float32).reshape(nhwc)
    stored = to_device(x, "NHWC", "NC1HWC0")
    conv = node("conv", "Conv2D", ["x:0"], original=["conv"],
                outputs=[tensor_desc("DT_FLOAT", "NC1HWC0", stored.shape, origin_format="NHWC", origin_shape=nhwc)])
    os.makedirs(tmp_path / "npu")
    path = tmp_path / "npu" / build_dump_name("Conv2D", "conv", 1, 0, TS).file_name
    # the header gives no original shape for the output, an original shape for the input
    write_dump(path, "conv", inputs=[TensorSpec(x, format="NHWC", original_shape=nhwc)],
               outputs=[TensorSpec(stored, format="NC1HWC0")], dump_time=TS)
    write_refs(tmp_path / "ref", ["x", "conv"])
    result = align(tmp_path / "npu", tmp_path / "ref", graph=graph([node("x", "Data"), conv]))
    by_id = {pair.npu.tensor_id: pair.npu for pair in result.pairs}
    out = by_id["conv:output:0"]
    assert (out.origin_format, out.origin_shape, out.origin_format_from, out.origin_shape_from) == (
        "NHWC", nhwc, "graph", "graph")
    loaded = out.load()
    assert loaded.array.shape == nhwc and np.array_equal(loaded.array, x)
    assert (out.dtype, out.shape) == ("float32", stored.shape)
    inp = by_id["conv:input:0"]
    assert (inp.origin_format, inp.origin_shape, inp.origin_shape_from) == ("ND", (2, 3), "graph")
    ref = {pair.npu.tensor_id: pair.ref for pair in result.pairs}["conv:output:0"]
    assert (ref.dtype, ref.shape) == ("<f4", (2, 3)) and np.array_equal(ref.load(), VALUES)


def test_origin_comes_from_the_header_without_a_graph(tmp_path):
    nhwc = (1, 4, 4, 3)
    x = np.arange(48, dtype=np.float32).reshape(nhwc)
    stored = to_device(x, "NHWC", "NC1HWC0")
    os.makedirs(tmp_path / "npu")
    write_dump(tmp_path / "npu" / build_dump_name("Conv2D", "conv", 1, 0, TS).file_name, "conv",
               outputs=[TensorSpec(stored, format="NC1HWC0", original_shape=nhwc, original_op=("conv", 0),
                                   original_format="NHWC")], dump_time=TS)
    write_refs(tmp_path / "ref", ["conv"])
    [pair] = align(tmp_path / "npu", tmp_path / "ref").pairs
    npu = pair.npu
    assert (npu.origin_format, npu.origin_shape, npu.origin_format_from, npu.origin_shape_from) == (
        "NHWC", nhwc, "header", "header")
    assert np.array_equal(npu.load().array, x)


def test_graph_can_be_json_a_folder_or_a_loaded_model(tmp_path):
    nodes = [node("x", "Data"), node("a", "Relu", ["x:0"])]
    dump_dir, ref_dir, graph_path = write_workspace(tmp_path / "t", nodes, ["x", "a"])
    _, _, json_path = write_workspace(tmp_path / "j", nodes, ["x", "a"], json_graph=True)
    expected = pairing(align(dump_dir, ref_dir, graph=graph_path))
    assert pairing(align(dump_dir, ref_dir, graph=json_path)) == expected
    assert pairing(align(dump_dir, ref_dir, graph=os.path.dirname(graph_path))) == expected
    assert pairing(align(dump_dir, ref_dir, graph=graph(nodes))) == expected


def test_unreadable_dump_is_reported_not_fatal(tmp_path):
    nodes = [node("x", "Data"), node("a", "Relu", ["x:0"]), node("b", "Neg", ["a:0"])]
    dump_dir, ref_dir, graph_path = write_workspace(tmp_path, nodes, ["x", "a", "b"])
    broken = [name for name in os.listdir(dump_dir) if name.startswith("Neg.")][0]
    with open(os.path.join(dump_dir, broken), "wb") as handle:
        handle.write(b"\x01" * 4)
    result = align(dump_dir, ref_dir, graph=graph_path)
    assert len(result.coverage.unreadable) == 1 and broken in result.coverage.unreadable[0][0]
    assert result.coverage.graph_ops_without_dump == ()  # its file is there: unreadable, not missing
    assert pairing(result) == {"a:input:0": "x:output:0", "a:output:0": "a:output:0"}


def test_dump_without_raw_header_name_matches_the_graph_by_sanitised_name(tmp_path):
    nodes = [node("x", "Data"), node("s/a", "Relu", ["x:0"])]
    dump_dir, ref_dir, graph_path = write_workspace(tmp_path, nodes, ["x", "s/a"], raw_names=False)
    assert pairing(align(dump_dir, ref_dir, graph=graph_path)) == {"s/a:input:0": "x:output:0",
                                                                  "s/a:output:0": "s/a:output:0"}


def test_dump_matching_two_graph_ops_by_sanitised_name_is_ambiguous(tmp_path):
    nodes = [node("x", "Data"), node("s/a", "Relu", ["x:0"]), node("s.a", "Neg", ["x:0"])]
    dump_dir, ref_dir, graph_path = write_workspace(tmp_path, nodes[:2], ["x"], raw_names=False)
    result = align(dump_dir, ref_dir, graph=graph(nodes))
    assert result.coverage.dumped_not_in_graph == ("s_a",)
    assert result.coverage.ambiguous[0].endswith(
        "could be graph op 's/a' or 's.a' (names differ only in / . \\ or space)")


def test_resolver_unit_rules_and_cycle_guard():
    nodes = [node("t1", "TransData", ["t2:0"]), node("t2", "TransData", ["t1:0"]),
             node("c", "Cast", []), node("u", "Neg", ["nowhere:0"])]
    resolver = GraphResolver(GraphIndex(graph(nodes)))
    assert resolver.output_target(nodes[0], 0) == NoTarget("layout ops around t2 form a cycle")
    assert resolver.output_target(nodes[2], 0) == NoTarget("Cast op c has no data input to follow")
    assert resolver.input_target(nodes[3], 0) == NoTarget("input 0 comes from 'nowhere', which is not in the graph")
    assert resolver.input_target(nodes[3], 1) == NoTarget("the graph lists 1 data input(s) for u; the dump has input 1")
    assert resolver.output_target(nodes[3], 0) == Target("u", 0, "own_name")


def test_values_are_never_read_while_aligning(tmp_path, monkeypatch):
    nodes = [node("x", "Data"), node("a", "Relu", ["x:0"])]
    dump_dir, ref_dir, graph_path = write_workspace(tmp_path, nodes, ["x", "a"])
    import precision_tool.formats.dump_file as dump_file
    import numpy

    def refuse(*args, **kwargs):
        raise AssertionError("payload read during alignment")
    monkeypatch.setattr(dump_file, "read_tensor", refuse)
    monkeypatch.setattr(numpy, "load", refuse)
    assert align(dump_dir, ref_dir, graph=graph_path).coverage.aligned_count == 2
