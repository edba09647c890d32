"""Graph-driven rules: which TF tensor an NPU op's input or output stands for, read from the GE Build graph.

Output ``k`` of an NPU op, first rule that applies: ``origin_name`` (the output desc's ``_datadump_origin_name``),
``header_original_op`` (the dump header's ``OriginalOp``), ``single_original_op`` (the op implements one TF op;
``split_output`` when several NPU ops do), **not compared** (a fused op without an origin name), a walk through a
layout-only op (:data:`LAYOUT_ONLY_OP_TYPES`) to its input's producer, ``own_name``. Input ``k`` is data input
``k``'s ``producer:idx`` resolved by the same rules. Every lookup is a dict lookup: ``O(n + edges)`` for ``n`` ops.
Each rule and its edge cases: docs/internals/alignment.md#graph-rules.
"""
from __future__ import annotations

from typing import Callable, Dict, List, Optional, Tuple

from precision_tool.alignment.model import (RULE_HEADER_ORIGINAL_OP, RULE_ORIGIN_NAME, RULE_OWN_NAME,
                                            RULE_SINGLE_ORIGINAL_OP, RULE_SPLIT_OUTPUT)
from precision_tool.alignment.npu_side import NOT_DUMPED_OP_TYPES, GraphIndex
from precision_tool.alignment.targets import NoTarget, Resolution, Target
from precision_tool.formats.dump_file import TensorEntry
from precision_tool.formats.ge_graph import OpNode

# Ops that only change layout or dtype: their output holds the values of their input. GE inserts them
# (TransData between device formats, Cast for mixed precision, ReFormat to relabel a format); they have no
# TF counterpart unless the graph says so (original names / origin name), in which case rules 1-3 win.
LAYOUT_ONLY_OP_TYPES = frozenset({"Cast", "TransData", "TransDataRNN", "ReFormat"})

HeaderLookup = Callable[[str, int], Optional[TensorEntry]]


def _no_header(op_name: str, index: int) -> Optional[TensorEntry]:
    return None


def _short_list(names, limit: int = 4) -> str:
    names = list(names)
    shown = ", ".join(names[:limit])
    return shown + (f", ... ({len(names)} in all)" if len(names) > limit else "")


class GraphResolver:
    """Resolves NPU tensors to TF tensors with the rules of this module.

    Parameters
    ----------
    index : the graph's ops.
    header_output : ``(graph op name, output index) -> TensorEntry`` of that op's dump header, or ``None``;
        lets rule 2 use headers. Defaults to "no headers".
    """

    def __init__(self, index: GraphIndex, header_output: HeaderLookup = _no_header):
        self.index = index
        self.header_output = header_output
        self._groups: Dict[str, List[str]] = {}
        self._group_of: Dict[str, str] = {}
        self._explicit: Dict[str, bool] = {}
        for op in index.by_name.values():
            names = op.original_op_names
            if len(names) == 1 and op.type not in NOT_DUMPED_OP_TYPES:
                self._groups.setdefault(names[0], []).append(op.name)
                self._group_of[op.name] = names[0]
                if any(desc.origin_name == names[0] for desc in op.output_descs):
                    self._explicit[names[0]] = True
        self._boundary: Dict[str, Tuple[str, ...]] = {}

    # ------------------------------------------------------------------ public
    def output_target(self, op: OpNode, k: int) -> Resolution:
        """What output ``k`` of ``op`` stands for."""
        return self._resolve(op, k, (), op.name)

    def input_target(self, op: OpNode, k: int) -> Resolution:
        """What input ``k`` of ``op`` (its k-th data input) stands for: the producer's output."""
        data = op.data_inputs
        if k >= len(data):
            return NoTarget(f"the graph lists {len(data)} data input(s) for {op.name}; the dump has input {k}")
        ref = data[k]
        producer = self.index.find(ref.producer)
        if producer is None:
            return NoTarget(f"input {k} comes from {ref.producer!r}, which is not in the graph")
        return self._resolve(producer, ref.index, (producer.name,), op.name)

    # ------------------------------------------------------------------ rules
    def _resolve(self, op: OpNode, k: int, via: Tuple[str, ...], start: str) -> Resolution:
        desc = op.output_descs[k] if k < len(op.output_descs) else None
        if desc is not None and desc.origin_name:
            index = desc.origin_output_index
            return Target(desc.origin_name, k if index is None else index, RULE_ORIGIN_NAME, via)
        entry = self.header_output(op.name, k)
        if entry is not None and entry.original_op_name:
            return Target(entry.original_op_name, entry.original_output_index or 0, RULE_HEADER_ORIGINAL_OP, via)
        names = op.original_op_names
        if len(names) == 1:
            return self._single(op, names[0], k, via)
        if len(names) > 1:
            return NoTarget(f"{op.name} is a fused op ({len(names)} TF ops: {_short_list(names)}) and output {k} "
                            "has no _datadump_origin_name: the TF tensor it stands for is unknown")
        if op.type in LAYOUT_ONLY_OP_TYPES:
            return self._walk(op, k, via, start)
        return Target(op.name, k, RULE_OWN_NAME, via)

    def _walk(self, op: OpNode, k: int, via: Tuple[str, ...], start: str) -> Resolution:
        data = op.data_inputs
        if not data:
            return NoTarget(f"{op.type} op {op.name} has no data input to follow")
        ref = data[k] if k < len(data) else data[0]
        producer = self.index.find(ref.producer)
        if producer is None:
            return NoTarget(f"{op.type} op {op.name} reads {ref.producer!r}, which is not in the graph")
        if producer.name == start or producer.name in via:
            return NoTarget(f"layout ops around {op.name} form a cycle")
        return self._resolve(producer, ref.index, via + (producer.name,), start)

    def _single(self, op: OpNode, name: str, k: int, via: Tuple[str, ...]) -> Resolution:
        group = self._groups.get(name, ())
        if len(group) <= 1 or self._group_of.get(op.name) != name:
            return Target(name, k, RULE_SINGLE_ORIGINAL_OP, via)
        if self._explicit.get(name):
            return NoTarget(f"{op.name} is one of {len(group)} NPU ops implementing TF op {name}; its output "
                            f"{k} is internal ({name} is compared where _datadump_origin_name names it)")
        boundary = self._boundary_of(name, group)
        if len(boundary) == 1:
            if boundary[0] == op.name:
                return Target(name, k, RULE_SPLIT_OUTPUT, via)
            return NoTarget(f"{op.name} is one of {len(group)} NPU ops implementing TF op {name}; its output {k} "
                            f"is internal ({name} is compared at {boundary[0]})")
        return NoTarget(f"TF op {name} is split over {len(group)} NPU ops and {len(boundary)} of them feed ops "
                        f"outside the split: which one stands for {name} is ambiguous",
                        ambiguous=f"{name}: split over NPU ops {_short_list(group)}")

    def _boundary_of(self, name: str, group) -> Tuple[str, ...]:
        if name not in self._boundary:
            members = set(group)
            self._boundary[name] = tuple(
                member for member in group
                if not self.index.consumers(member) or self.index.consumers(member) - members)
        return self._boundary[name]
