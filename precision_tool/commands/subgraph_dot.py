"""The neighbourhood of one op as Graphviz DOT text: producers and consumers up to a depth.

>>> from precision_tool.formats.ge_graph import Graph, OpNode
>>> g = Graph("g", (OpNode("a", "Data"), OpNode("b", "Relu", inputs=["a:0"]),
...                 OpNode("c", "Add", inputs=["b:0", "a:0"])))
>>> sorted(op.name for op in neighbourhood(g, "b", 1)[0])
['a', 'b', 'c']
>>> print(to_dot(*neighbourhood(g, "b", 1), center="b").splitlines()[0])
digraph "b" {
"""
from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import Dict, List, Tuple

from precision_tool.formats.ge_graph import Graph, OpNode


@dataclass(frozen=True)
class Edge:
    """``producer:output`` feeds dumped input ``position`` of ``consumer`` (its data inputs, control edges
    left out); a control edge has ``control=True`` and -1 for both."""

    producer: str
    output: int
    consumer: str
    position: int
    control: bool = False


def neighbourhood(graph: Graph, center: str, depth: int) -> Tuple[List[OpNode], List[Edge]]:
    """Ops within ``depth`` edges of ``center`` (either direction), in graph order, and the edges among them."""
    if depth < 0:
        raise ValueError(f"depth must be >= 0, not {depth}")
    readers: Dict[str, List[str]] = {}
    for op in graph.ops:
        for ref in op.inputs:
            if not ref.is_empty:
                readers.setdefault(ref.producer, []).append(op.name)
    distance = {center: 0}
    queue = deque([center])
    while queue:
        name = queue.popleft()
        if distance[name] == depth:
            continue
        node = graph.find_op(name)
        producers = [ref.producer for ref in node.inputs if not ref.is_empty] if node is not None else []
        for neighbour in (*producers, *readers.get(name, ())):
            if neighbour not in distance and graph.find_op(neighbour) is not None:
                distance[neighbour] = distance[name] + 1
                queue.append(neighbour)
    nodes = [op for op in graph.ops if op.name in distance]
    edges = []
    for op in nodes:
        for position, ref in enumerate(op.data_inputs):
            if ref.producer in distance:
                edges.append(Edge(ref.producer, ref.index, op.name, position))
        edges.extend(Edge(ref.producer, -1, op.name, -1, control=True) for ref in op.inputs
                     if ref.is_control and ref.producer in distance)
    return nodes, edges


def _quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def to_dot(nodes: List[OpNode], edges: List[Edge], center: str) -> str:
    """DOT text: one box per op labelled ``name\\ntype``, the centre filled; control edges dashed."""
    lines = [f"digraph {_quote(center)} {{", "  rankdir=TB;", "  node [shape=box, fontname=monospace];"]
    for op in nodes:
        style = ", style=filled, fillcolor=lightpink" if op.name == center else ""
        label = _quote(f"{op.name}\n{op.type}").replace("\n", "\\n")
        lines.append(f"  {_quote(op.name)} [label={label}{style}];")
    for edge in edges:
        attrs = "style=dashed" if edge.control else f"label={_quote(f'{edge.output}->{edge.position}')}"
        lines.append(f"  {_quote(edge.producer)} -> {_quote(edge.consumer)} [{attrs}];")
    lines.append("}")
    return "\n".join(lines)
