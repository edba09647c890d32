"""One NPU run as the aligners see it: its dumped ops, each matched to its graph op, and how to resolve them.

Dumped ops that the graph does not hold are kept (and listed): they are resolved by the name rules instead.
"""
from __future__ import annotations

from typing import Dict, Iterator, List, Optional, Sequence, Tuple

from precision_tool.alignment.graph_alignment import GraphResolver
from precision_tool.alignment.model import INPUT, ORDER_DUMP_TIME, ORDER_GRAPH, OUTPUT, NpuTensorRef
from precision_tool.alignment.name_alignment import name_target
from precision_tool.alignment.npu_side import (NOT_DUMPED_OP_TYPES, DumpedOp, GraphIndex, graphs_of, input_desc,
                                               origin_of)
from precision_tool.alignment.targets import Resolution
from precision_tool.formats.dump_file import TensorEntry, dtype_label
from precision_tool.formats.dump_tree import Choice
from precision_tool.formats.ge_graph import OpNode
from precision_tool.formats.tensor_kind import TensorKind

KINDS = (INPUT, OUTPUT)


def _header_lookup(by_graph_name: Dict[str, DumpedOp]):
    """``(graph op name, k) ->`` output ``k``'s entry in that op's dump header, or ``None``. A function of the
    table alone, not a method of the run: a run holding its own bound method would be a reference cycle, which
    keeps the run's ops and headers alive until a garbage collection finds it."""

    def header_output(op_name: str, k: int) -> Optional[TensorEntry]:
        dumped_op = by_graph_name.get(op_name)
        if dumped_op is None:
            return None
        outputs = dumped_op.entries(OUTPUT)
        return outputs[k] if k < len(outputs) else None

    return header_output


class NpuRun:
    """Dumped ops (readable ones in :attr:`ops`, by dump time) with their graph ops and a resolver.

    Attributes
    ----------
    ops : readable dumped ops; :attr:`unreadable` holds ``(path, message)`` for the rest, and for files that
        could not be identified as dumps (hashed names whose ``mapping.csv`` cannot be read).
    nodes : graph op of ``ops[i]`` or ``None``.
    not_in_graph : names of dumped ops the graph lacks (empty without a graph).
    ambiguous : dump files that could be several graph ops.
    choice : the step and device read (:class:`~precision_tool.formats.dump_tree.Choice`);
    dump_choice : its note: the step and device read from a tree holding several (``""`` when there was nothing
        to choose).
    """

    def __init__(self, dumped: Tuple[List[DumpedOp], Sequence[Tuple[str, str]], Choice], graph=None):
        """``dumped``: what :func:`~precision_tool.alignment.npu_side.read_dumped_ops` returns; ``graph`` a loaded
        graph or ``None``."""
        ops, unresolved, self.choice = dumped
        self.dump_choice = self.choice.note
        self.ops: List[DumpedOp] = [d for d in ops if d.header is not None]
        self.unreadable: List[Tuple[str, str]] = [(d.path, d.error) for d in ops if d.header is None]
        self.unreadable.extend(unresolved)
        self.index: Optional[GraphIndex] = GraphIndex(graph) if graphs_of(graph) else None
        self.nodes: List[Optional[OpNode]] = []
        self.not_in_graph: List[str] = []
        self.ambiguous: List[str] = []
        self._by_graph_name: Dict[str, DumpedOp] = {}
        # graph ops whose dump file is there but unreadable (matched by file name): reported as unreadable, not as
        # ops without a dump file
        self._unreadable_graph_names = set()
        if self.index is not None:
            for dumped_op in ops:
                node = self.index.match_dump(dumped_op)[0] if dumped_op.header is None else None
                if node is not None:
                    self._unreadable_graph_names.add(node.name)
        for dumped_op in self.ops:
            if dumped_op.names_disagree:
                assert dumped_op.header is not None  # names_disagree reads it
                self.ambiguous.append(f"{dumped_op.path}: its header names op {dumped_op.header.op_name!r}, its file "
                                      f"name {dumped_op.file_op_name!r}: read as the file name's op")
            node = None
            if self.index is not None:
                node, problem = self.index.match_dump(dumped_op)
                if problem:
                    self.ambiguous.append(problem)
                if node is None:
                    self.not_in_graph.append(dumped_op.name)
                else:
                    self._by_graph_name.setdefault(node.name, dumped_op)
            self.nodes.append(node)
        self.resolver = (GraphResolver(self.index, _header_lookup(self._by_graph_name)) if self.index is not None
                         else None)

    # ------------------------------------------------------------------ per tensor
    def op_name(self, i: int) -> str:
        node = self.nodes[i]
        return node.name if node is not None else self.ops[i].name

    def tensors(self, i: int) -> Iterator[Tuple[TensorKind, int, TensorEntry]]:
        """``(kind, k, entry)`` for every input then every output of ``ops[i]``."""
        for kind in KINDS:
            for k, entry in enumerate(self.ops[i].entries(kind)):
                yield kind, k, entry

    def tensor_ref(self, i: int, kind: TensorKind, k: int, entry: TensorEntry) -> NpuTensorRef:
        dumped_op, node = self.ops[i], self.nodes[i]
        desc = None
        if node is not None:
            if kind == INPUT:
                desc = input_desc(node, k)
            elif k < len(node.output_descs):
                desc = node.output_descs[k]
        fmt, shape, fmt_from, shape_from = origin_of(desc, entry)
        return NpuTensorRef(dumped_op.path, self.op_name(i), dumped_op.op_type, kind, k, dumped_op.timestamp,
                            dtype_label(entry.dtype_code), entry.shape, fmt, shape, fmt_from, shape_from)

    def target(self, i: int, kind: str, k: int) -> Resolution:
        node = self.nodes[i]
        if node is not None and self.resolver is not None:  # a graph node implies a graph, so a resolver
            return self.resolver.input_target(node, k) if kind == INPUT else self.resolver.output_target(node, k)
        return name_target(self.ops[i], kind, k)

    # ------------------------------------------------------------------ whole run
    def order(self) -> Tuple[Tuple[str, ...], str]:
        """Op names producers first (graph), then dumped ops the graph lacks by dump time; or dump time only."""
        if self.index is None:
            return tuple(dict.fromkeys(self.op_name(i) for i in range(len(self.ops)))), ORDER_DUMP_TIME
        names = self.index.order()
        extra = [self.op_name(i) for i, node in enumerate(self.nodes) if node is None]
        return tuple(dict.fromkeys(names + extra)), ORDER_GRAPH

    def data_inputs(self) -> dict:
        return self.index.data_inputs() if self.index is not None else {}

    def graph_ops_without_dump(self) -> Tuple[str, ...]:
        if self.index is None:
            return ()
        return tuple(name for name in self.index.order()
                     if name not in self._by_graph_name and name not in self._unreadable_graph_names
                     and self.index.by_name[name].type not in NOT_DUMPED_OP_TYPES)
