"""Name rules, for dumps without a graph (and for dumped ops the graph does not hold).

Output ``k`` of a dumped op: ``header_original_op`` (the header's ``OriginalOp`` for output ``k``), else
``own_name`` (the header's raw op name; without one, the sanitised op part of the file name, which only matches
through normalisation: ``normalised_name``, :mod:`.reference_index`). Inputs are not aligned: without the graph's
edges nothing says which tensor feeds them. A fused op whose header lacks ``OriginalOp`` is compared by its own
name -- give the graph whenever there is one. See docs/internals/alignment.md#name-rules.
"""
from __future__ import annotations

from precision_tool.alignment.model import INPUT, RULE_HEADER_ORIGINAL_OP, RULE_OWN_NAME
from precision_tool.alignment.npu_side import DumpedOp
from precision_tool.alignment.targets import NoTarget, Resolution, Target

NO_GRAPH_INPUT_REASON = "no graph: which tensor feeds an input is only known from the GE graph's edges"


def name_target(dumped: DumpedOp, kind: str, k: int) -> Resolution:
    """What ``kind`` ``k`` of ``dumped`` stands for, by the rules of this module."""
    if kind == INPUT:
        return NoTarget(NO_GRAPH_INPUT_REASON)
    entries = dumped.entries(kind)
    entry = entries[k] if k < len(entries) else None
    if entry is not None and entry.original_op_name:
        return Target(entry.original_op_name, entry.original_output_index or 0, RULE_HEADER_ORIGINAL_OP)
    return Target(dumped.name, k, RULE_OWN_NAME)
