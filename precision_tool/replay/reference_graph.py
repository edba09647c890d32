"""The reference's executed graph, as replay needs it: node by name, debug ops removed, fed inputs renamed.

``tf/graph`` holds the executed graphs ``tf_dump`` (or the emulator) kept (:mod:`precision_tool.formats.tf_graph`),
read without TensorFlow; of nodes of the same name in several graphs, the newest file's wins. tfdbg's debug nodes
are removed (:meth:`TfGraph.without_debug_ops`) and a fed placeholder's ``_Arg`` node gets the placeholder's name
back. See docs/internals/replay.md#reference-graph.
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Dict, List, Optional, Tuple

from precision_tool.errors import PrecisionToolError, ReferenceFormatError
from precision_tool.fileio import read_input_text
from precision_tool.formats.bounds import loads_json
from precision_tool.formats.tf_graph import INDEX_FILE, TfGraph, TfNode, natural_key, read_tf_graph

_ARG_NODE = re.compile(r"_arg_(?P<name>.+)_0_\d+")


@dataclass(frozen=True)
class ReferenceGraph:
    """Nodes by name (``nodes``), the file each came from (``files[name]``), notes on files not read, and
    ``index_problem``."""

    nodes: Dict[str, TfNode]
    files: Dict[str, str]
    notes: Tuple[str, ...] = ()
    index_problem: str = ""
    """Why ``index.json`` could not be read (``""`` when it could, or is absent): unusable input."""

    def __contains__(self, name: str) -> bool:
        return name in self.nodes

    def node(self, name: str) -> Optional[TfNode]:
        return self.nodes.get(name)

    def __getitem__(self, name: str) -> TfNode:
        """The node called ``name`` (``KeyError`` when absent: check ``name in graph`` first)."""
        return self.nodes[name]


def split_tensor(name: str) -> Tuple[str, int]:
    """``"a/b:1"`` -> ``("a/b", 1)``; ``"a/b"`` -> ``("a/b", 0)``; a control input keeps its ``^``.

    >>> split_tensor("conv/Conv2D:1"), split_tensor("x")
    (('conv/Conv2D', 1), ('x', 0))
    """
    op, sep, index = name.rpartition(":")
    if sep and index.isdigit() and op:
        return op, int(index)
    return name, 0


def _renamed(graph: TfGraph) -> List[TfNode]:
    names: Dict[str, str] = {}
    for node in graph.nodes:
        match = _ARG_NODE.fullmatch(node.name) if node.op == "_Arg" else None
        if match:
            names[node.name] = match.group("name")

    def fix(source: str) -> str:
        control = source.startswith("^")
        op, index = split_tensor(source.lstrip("^"))
        if op not in names:
            return source
        return ("^" if control else "") + names[op] + (f":{index}" if index else "")

    return [TfNode(names.get(node.name, node.name), node.op, tuple(fix(s) for s in node.inputs), node.device,
                   node.attrs) for node in graph.nodes]


_NAME_MAX = 255  # bytes in a file name on Linux (and most file systems)


def graph_files(graph_dir: str) -> Tuple[List[str], str]:
    """The graph files of ``graph_dir``, oldest first (``index.json``'s list when readable, else ``*.pb``), and
    ``""`` -- or, when an ``index.json`` is there but cannot be read (a FIFO, /dev/zero, deep nesting, a
    5,000-digit number ...), one line saying so: every ``*.pb`` is then read, graphs of other runs included."""
    listed: List[str] = []
    problem = ""
    path = os.path.join(graph_dir, INDEX_FILE)
    if os.path.lexists(path):
        try:
            index = loads_json(read_input_text(path, ReferenceFormatError))
            listed = [entry["file"] for entry in index.get("graphs", []) if isinstance(entry, dict)
                      and isinstance(entry.get("file"), str) and "/" not in entry["file"]]
            too_long = [name for name in listed if len(name.encode("utf-8", "surrogatepass")) > _NAME_MAX]
            if too_long:
                listed = []
                problem = (f"{path}: lists a file name of {len(too_long[0].encode('utf-8', 'surrogatepass'))} "
                           f"bytes, longer than any file name ({_NAME_MAX})")
        except PrecisionToolError as error:
            problem = str(error)
        except (ValueError, AttributeError, TypeError, RecursionError) as error:
            problem = f"{path}: not an index of graphs ({type(error).__name__})"
        if problem:
            problem += "; read every *.pb of the folder instead, graphs of other runs too"
    if not listed:
        try:
            listed = [name for name in os.listdir(graph_dir) if name.endswith(".pb")]
        except OSError:
            return [], problem
    return [os.path.join(graph_dir, name) for name in sorted(set(listed), key=natural_key)], problem


def load_reference_graph(graph_dir: str) -> ReferenceGraph:
    """Read every graph of ``graph_dir`` (docs/internals/replay.md#reference-graph).

    Raises
    ------
    PrecisionToolError
        No graph file there, or none could be read (the message says why; replay is then impossible).
    """
    paths, index_problem = graph_files(graph_dir)
    if not paths:
        raise PrecisionToolError(f"{graph_dir}: no reference graph (run tf_dump on a capture made with "
                                 "sess_dump, estimator_dump or enable_reference_dump, or emulate, to keep one)")
    nodes: Dict[str, TfNode] = {}
    files: Dict[str, str] = {}
    notes: List[str] = [index_problem] if index_problem else []
    for path in paths:
        try:
            graph = read_tf_graph(path).without_debug_ops()
        except PrecisionToolError as error:
            notes.append(str(error))
            continue
        for node in _renamed(graph):
            nodes[node.name] = node
            files[node.name] = path
    if not nodes:
        raise PrecisionToolError(f"{graph_dir}: no reference graph could be read ({notes[0]})")
    return ReferenceGraph(nodes, files, tuple(notes), index_problem)
