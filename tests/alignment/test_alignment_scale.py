"""Alignment on thousands of ops: complete, and (benchmarks/alignment_scale.py) linear."""
import pytest

from align_builders import graph, node, write_workspace
from precision_tool.alignment import align, find_first_divergence
from precision_tool.alignment.graph_alignment import GraphResolver
from precision_tool.alignment.npu_side import GraphIndex
from precision_tool.formats.tensor_kind import OUTPUT


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


def resolve_everything(model):
    """Resolve every input and output target of ``model`` and its first divergence; returns
    ``(targets resolved, divergence)``. benchmarks/alignment_scale.py times this on 2,000 and 8,000 ops."""
    index = GraphIndex(model)
    resolver = GraphResolver(index)
    resolved = 0
    for op in index.by_name.values():
        for k in range(len(op.data_inputs)):
            resolver.input_target(op, k)
            resolved += 1
        for k in range(len(op.output_descs)):
            resolver.output_target(op, k)
            resolved += 1
    order, edges = index.order(), index.data_inputs()
    divergence = find_first_divergence({(name, OUTPUT, 0): i % 7 != 3 for i, name in enumerate(order)}, order, edges)
    return resolved, divergence


def test_a_large_graph_resolves_completely():
    """Every target of a 2,000-op network resolves; the first failing op (position 3) is the divergence.
    (Its speed is a benchmark, not a test: benchmarks/alignment_scale.py.)"""
    model = graph(network(2000))
    resolved, divergence = resolve_everything(model)
    ops = list(GraphIndex(model).by_name.values())
    assert resolved == sum(len(op.data_inputs) + len(op.output_descs) for op in ops) > 4000
    assert divergence.first is not None and divergence.first.position == 3


@pytest.mark.slow
def test_five_thousand_dumped_ops(tmp_path):
    nodes = network(5000)
    dump_dir, ref_dir, graph_path = write_workspace(tmp_path, nodes, ["x"] + [f"tf{i}" for i in range(5000)])
    result = align(dump_dir, ref_dir, graph=graph_path)
    assert result.coverage.aligned_count > 0.9 * result.coverage.npu_tensors
