"""First divergence on small hand-made graphs: chains, diamonds, fused ops, uncompared inputs."""
from align_builders import graph, node, write_workspace
from precision_tool.alignment import align, find_first_divergence
from precision_tool.alignment.npu_side import GraphIndex
from precision_tool.formats.tensor_kind import INPUT, OUTPUT


def edges_of(nodes):
    index = GraphIndex(graph(nodes))
    return index.order(), index.data_inputs()


def verdicts(**spec):
    """``a_out0=False, b_in1=True`` -> {("a", OUTPUT, 0): False, ("b", INPUT, 1): True}."""
    table = {}
    for key, passed in spec.items():
        op, tensor = key.rsplit("_", 1)
        kind = OUTPUT if tensor.startswith("out") else INPUT
        table[(op, kind, int(tensor.lstrip("outin")))] = passed
    return table


def names(records):
    return [record.op_name for record in records]


CHAIN = [node("x", "Data"), node("a", "Relu", ["x:0"]), node("b", "Neg", ["a:0"]), node("c", "Abs", ["b:0"])]


def test_chain_first_failing_op_with_passing_inputs():
    order, edges = edges_of(CHAIN)
    result = find_first_divergence(verdicts(a_in0=True, a_out0=True, b_in0=True, b_out0=False, c_in0=False,
                                            c_out0=False), order, edges)
    assert result.first.op_name == "b" and result.first.is_root
    assert names(result.roots) == ["b"] and names(result.inherited) == ["c"]
    assert result.inherited[0].failed_inputs == (0,)
    assert result.to_dict()["first"] == {"op_name": "b", "position": 2, "failed_outputs": [0], "failed_inputs": [],
                                         "inherited_inputs": [], "unknown_inputs": [], "is_root": True}


def test_nothing_failed():
    order, edges = edges_of(CHAIN)
    result = find_first_divergence(verdicts(a_out0=True, b_out0=True), order, edges)
    assert result.first is None and result.roots == () and result.inherited == ()


def test_error_flowing_through_an_uncompared_op_is_inherited_not_a_new_root():
    # a fails; b (an NPU-only op, nothing compared) passes it on; c's input is not compared either
    order, edges = edges_of(CHAIN)
    result = find_first_divergence(verdicts(a_in0=True, a_out0=False, c_out0=False), order, edges)
    assert result.first.op_name == "a"
    assert names(result.inherited) == ["c"] and result.inherited[0].inherited_inputs == (0,)


def test_unknown_inputs_count_as_passing_and_are_flagged():
    order, edges = edges_of(CHAIN)
    result = find_first_divergence(verdicts(b_out0=False, c_out0=False), order, edges)
    assert result.first.op_name == "b" and result.first.unknown_inputs == (0,)
    assert names(result.inherited) == ["c"]


def test_a_passing_compared_input_beats_a_suspect_producer():
    order, edges = edges_of(CHAIN)
    result = find_first_divergence(verdicts(a_out0=False, b_in0=True, b_out0=True, c_out0=False), order, edges)
    assert names(result.roots) == ["a", "c"]  # c reads b, which passed: c is a second, independent root


DIAMOND = [node("x", "Data"), node("top", "Relu", ["x:0"]), node("left", "Neg", ["top:0"]),
           node("right", "Abs", ["top:0"]), node("join", "Add", ["left:0", "right:0"])]


def test_diamond_one_branch_breaks():
    order, edges = edges_of(DIAMOND)
    result = find_first_divergence(verdicts(top_out0=True, left_in0=True, left_out0=True, right_in0=True,
                                            right_out0=False, join_in0=True, join_in1=False, join_out0=False),
                                   order, edges)
    assert result.first.op_name == "right"
    assert names(result.inherited) == ["join"] and result.inherited[0].failed_inputs == (1,)


def test_diamond_join_breaks_on_good_inputs():
    order, edges = edges_of(DIAMOND)
    result = find_first_divergence(verdicts(top_out0=True, left_out0=True, right_out0=True, join_in0=True,
                                            join_in1=True, join_out0=False), order, edges)
    assert result.first.op_name == "join" and result.inherited == ()


def test_diamond_with_inputs_judged_by_the_producers_outputs():
    # inputs are not compared; their producers' outputs are: top fails, everything below inherits
    order, edges = edges_of(DIAMOND)
    result = find_first_divergence(verdicts(top_out0=False, left_out0=False, right_out0=False, join_out0=False),
                                   order, edges)
    assert result.first.op_name == "top" and names(result.inherited) == ["left", "right", "join"]


FUSED = [node("x", "Data"), node("pre", "Relu", ["x:0"]),
         node("conv_fused", "Conv2D", ["pre:0"], original=["c", "b", "r"], origins=[("r", 0)]),
         node("cast_1", "Cast", ["conv_fused:0"]), node("post", "Neg", ["cast_1:0"])]


def test_fused_op_is_the_culprit_and_a_ge_cast_passes_the_error_on():
    order, edges = edges_of(FUSED)
    result = find_first_divergence(verdicts(pre_out0=True, conv_fused_in0=True, conv_fused_out0=False,
                                            post_out0=False), order, edges)
    assert result.first.op_name == "conv_fused"
    assert names(result.inherited) == ["post"] and result.inherited[0].inherited_inputs == (0,)


def test_unknown_input_from_a_graph_input():
    # op with two inputs: one compared and passing, one from a Data op (never dumped): unknown, flagged
    nodes = [node("x", "Data"), node("y", "Data"), node("add", "Add", ["x:0", "y:0"])]
    order, edges = edges_of(nodes)
    result = find_first_divergence(verdicts(add_in0=True, add_out0=False), order, edges)
    assert result.first.op_name == "add" and result.first.unknown_inputs == (1,)


def test_second_output_of_a_failing_op_is_suspect():
    nodes = [node("x", "Data"), node("two", "Split", ["x:0"], outputs=2), node("use", "Neg", ["two:1"])]
    order, edges = edges_of(nodes)
    result = find_first_divergence(verdicts(two_out0=False, use_out0=False), order, edges)
    assert result.first.op_name == "two" and names(result.inherited) == ["use"]


def test_without_a_graph_the_dump_order_decides():
    result = find_first_divergence(verdicts(a_out0=True, b_out0=False, c_in0=False, c_out0=False, d_out0=False),
                                   ["a", "b", "c", "d"], None, "dump_time")
    assert result.first.op_name == "b" and result.order_source == "dump_time"
    assert names(result.roots) == ["b", "d"] and names(result.inherited) == ["c"]


def test_ops_missing_from_the_order_are_appended():
    result = find_first_divergence(verdicts(late_out0=False), ["a"], {})
    assert result.first.op_name == "late" and result.first.position == 1


def test_alignment_first_divergence_uses_its_graph(tmp_path):
    nodes = [node("x", "Data"), node("a", "Relu", ["x:0"]), node("cast_9", "Cast", ["a:0"]),
             node("b", "Neg", ["cast_9:0"])]
    dump_dir, ref_dir, graph_path = write_workspace(tmp_path, nodes, ["x", "a", "b"])
    alignment = align(dump_dir, ref_dir, graph=graph_path)
    # the comparator's verdicts: a's output fails, so do the Cast's tensors and b's
    table = {pair.npu.key: pair.npu.op_name == "a" and pair.npu.kind is INPUT for pair in alignment.pairs}
    result = alignment.first_divergence(table)
    assert result.first.op_name == "a"
    assert names(result.inherited) == ["cast_9", "b"]


def test_a_damaged_input_index_neither_hangs_nor_lists_a_billion_unknown_inputs():
    verdicts = {("a", OUTPUT, 0): True, ("b", INPUT, 0): True, ("b", INPUT, 999_999_999): True,
                ("b", OUTPUT, 0): False}
    result = find_first_divergence(verdicts, ["a", "b"], {"b": [("a", 0)]})
    assert result.first.op_name == "b" and result.first.unknown_inputs == ()
