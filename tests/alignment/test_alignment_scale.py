"""Alignment stays linear: thousands of ops resolve in well under a second per thousand."""
import time

import pytest

from align_builders import graph, node, write_workspace
from precision_tool.alignment import align, find_first_divergence
from precision_tool.alignment.graph_alignment import GraphResolver
from precision_tool.alignment.npu_side import GraphIndex


def network(n):
    """A chain with a GE Cast every third op, every op also reading the input, and split ops here and there."""
    nodes = [node("x", "Data")]
    for i in range(n):
        prev = nodes[-1].name
        if i % 3 == 1:
            nodes.append(node(f"s{i}/cast", "Cast", [f"{prev}:0"]))
        elif i % 50 == 7:
            nodes.append(node(f"s{i}/part", "MatMul", [f"{prev}:0"], original=[f"tf{i}"]))
            nodes.append(node(f"s{i}/op", "Add", [f"s{i}/part:0", "x:0"], original=[f"tf{i}"]))
        else:
            nodes.append(node(f"s{i}/op", "Add", [f"{prev}:0", "x:0"], original=[f"tf{i}"]))
    return nodes


def test_resolving_a_large_graph_is_linear():
    timings = []
    for n in (2000, 8000):
        model = graph(network(n))
        start = time.perf_counter()
        index = GraphIndex(model)
        resolver = GraphResolver(index)
        for op in index.by_name.values():
            for k in range(len(op.data_inputs)):
                resolver.input_target(op, k)
            for k in range(len(op.output_descs)):
                resolver.output_target(op, k)
        order, edges = index.order(), index.data_inputs()
        find_first_divergence({(name, "output", 0): i % 7 != 3 for i, name in enumerate(order)}, order, edges)
        timings.append(time.perf_counter() - start)
    assert timings[1] < 3.0, timings
    assert timings[1] < 4 * timings[0] * 2.5, timings  # 4x the ops, allowing noise; quadratic would be ~16x


@pytest.mark.slow
def test_five_thousand_dumped_ops(tmp_path):
    nodes = network(5000)
    dump_dir, ref_dir, graph_path = write_workspace(tmp_path, nodes, ["x"] + [f"tf{i}" for i in range(5000)])
    start = time.perf_counter()
    result = align(dump_dir, ref_dir, graph=graph_path)
    elapsed = time.perf_counter() - start
    assert result.coverage.aligned_count > 0.9 * result.coverage.npu_tensors
    assert elapsed < 20, elapsed
