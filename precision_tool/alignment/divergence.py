"""First divergence: the earliest op whose output fails while everything it read was still right.

``verdicts`` maps ``(npu op name, kind, index)`` to ``True`` (passed) or ``False`` (failed); no entry: not
compared. Walking ops producers-first, input ``k`` of an op is *failed*, *passed*, *inherited* (not compared, its
producer's output suspect) or *unknown* (not compared, nothing upstream known wrong: counts as passing, listed in
:attr:`DivergentOp.unknown_inputs`). An op with a failed output is a **root** when no input is failed or
inherited; :attr:`Divergence.first` is the first root. Without a graph the order is the dump time and only compared
inputs count (``order_source="dump_time"``). Cost ``O(ops + edges + verdicts)``.
See docs/internals/alignment.md#first-divergence.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, List, Mapping, Optional, Sequence, Tuple

from precision_tool.formats.tensor_kind import INPUT, OUTPUT

Key = Tuple[str, str, int]


@dataclass(frozen=True)
class DivergentOp:
    """An op with at least one failed output.

    ``position`` is its place in the order; the tuples hold input/output indices.
    """

    op_name: str
    position: int
    failed_outputs: Tuple[int, ...]
    failed_inputs: Tuple[int, ...] = ()
    inherited_inputs: Tuple[int, ...] = ()
    unknown_inputs: Tuple[int, ...] = ()

    @property
    def is_root(self) -> bool:
        """True when no input is failed or inherited: the op introduces the error."""
        return not self.failed_inputs and not self.inherited_inputs

    def to_dict(self) -> dict:
        return {"op_name": self.op_name, "position": self.position, "failed_outputs": list(self.failed_outputs),
                "failed_inputs": list(self.failed_inputs), "inherited_inputs": list(self.inherited_inputs),
                "unknown_inputs": list(self.unknown_inputs), "is_root": self.is_root}


@dataclass(frozen=True)
class Divergence:
    """Result of :func:`find_first_divergence`.

    ``first`` is the likely culprit (``None`` when nothing failed); ``roots`` every op introducing an error,
    ``first`` included, in order; ``inherited`` the ops that fail because of an earlier error.
    """

    first: Optional[DivergentOp]
    roots: Tuple[DivergentOp, ...] = ()
    inherited: Tuple[DivergentOp, ...] = ()
    order_source: str = "graph"

    def to_dict(self) -> dict:
        return {"first": None if self.first is None else self.first.to_dict(),
                "roots": [op.to_dict() for op in self.roots],
                "inherited": [op.to_dict() for op in self.inherited], "order_source": self.order_source}


def find_first_divergence(verdicts: Mapping[Key, bool], order: Sequence[str],
                          data_inputs: Optional[Mapping[str, Sequence[Tuple[str, int]]]] = None,
                          order_source: str = "graph") -> Divergence:
    """Find the first op that fails on good inputs (the exact rules: docs/internals/alignment.md#first-divergence).

    Parameters
    ----------
    verdicts : mapping of (str, str, int) to bool
        ``{(op name, INPUT|OUTPUT, index): passed}``; missing = not compared.
    order : sequence of str
        Op names, producers before consumers (graph) or by dump time. Ops with verdicts but absent from
        ``order`` are appended in the verdicts' order.
    data_inputs : mapping of str to sequence of (str, int), optional
        ``{op name: ((producer, output index), ...)}``, input ``k`` of the op being entry ``k``
        (:attr:`Alignment.data_inputs`); ``None`` or ``{}`` without a graph.
    order_source : str
        Copied to the result (``"graph"`` or ``"dump_time"``).

    Returns
    -------
    Divergence

    Examples
    --------
    A chain ``a -> b -> c`` where ``b`` breaks: ``b`` is the first divergence, ``c`` only inherits it.

    >>> v = {("a", OUTPUT, 0): True, ("b", INPUT, 0): True, ("b", OUTPUT, 0): False,
    ...      ("c", INPUT, 0): False, ("c", OUTPUT, 0): False}
    >>> result = find_first_divergence(v, ["a", "b", "c"], {"b": [("a", 0)], "c": [("b", 0)]})
    >>> result.first.op_name, [op.op_name for op in result.inherited]
    ('b', ['c'])
    """
    data_inputs = data_inputs or {}
    per_op: Dict[str, Dict[Tuple[str, int], bool]] = {}
    for (op_name, kind, index), passed in verdicts.items():
        per_op.setdefault(op_name, {})[(kind, index)] = bool(passed)
    names = list(dict.fromkeys(list(order) + list(per_op)))
    suspect_default: Dict[str, bool] = {}  # op -> are its uncompared outputs suspect?

    def output_suspect(producer: str, index: int) -> bool:
        verdict = per_op.get(producer, {}).get((OUTPUT, index))
        if verdict is not None:
            return not verdict
        return suspect_default.get(producer, False)

    roots: List[DivergentOp] = []
    inherited: List[DivergentOp] = []
    for position, op_name in enumerate(names):
        own = per_op.get(op_name, {})
        edges = data_inputs.get(op_name, ())
        # the graph's inputs and the compared ones: never a range up to an index a damaged result names
        known_inputs = sorted(set(range(len(edges))) | {index for (kind, index) in own if kind == INPUT})
        failed: List[int] = []
        inherited_in: List[int] = []
        unknown: List[int] = []
        for k in known_inputs:
            verdict = own.get((INPUT, k))
            if verdict is True:
                continue
            if verdict is False:
                failed.append(k)
            elif k < len(edges) and output_suspect(*edges[k]):
                inherited_in.append(k)
            else:
                unknown.append(k)
        failed_outputs = tuple(sorted(index for (kind, index), ok in own.items() if kind == OUTPUT and not ok))
        suspect_default[op_name] = bool(failed_outputs or failed or inherited_in)
        if not failed_outputs:
            continue
        record = DivergentOp(op_name, position, failed_outputs, tuple(failed), tuple(inherited_in), tuple(unknown))
        (roots if record.is_root else inherited).append(record)
    return Divergence(roots[0] if roots else None, tuple(roots), tuple(inherited), order_source)


