"""Do both runs compute the same model? The NPU ops' constant and data inputs against the reference's.

The inputs the NPU graph feeds from its sources -- ``Const``/``Variable`` ops (``constant``) and ``Data`` ops
(``data``), directly or through ops that only move them (:data:`PASS_THROUGH_TYPES`; never a ``Cast``) -- are
compared in two tiers: **another model** (:attr:`Mismatch.severe`: shapes or counts differ, or the default cosine
gate fails) gets no culprit and exit 2; **beyond rounding** but alike (a relative distance above the NPU dtype's
:func:`~precision_tool.metrics.rounding.rounding_floor`) is said in one line and the verdict stands. NaN/inf or
zeros on one side are range effects, judged where they are used. See docs/local-error.md#same-model and
docs/internals/comparison.md#same-model.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Dict, Iterable, List, Mapping, Optional, Sequence, Tuple

from precision_tool.formats.tensor_kind import TensorKind
from precision_tool.metrics.rounding import rounding_floor
from precision_tool.status import Status

CONSTANT, DATA = "constant", "data"
#: NPU graph op types whose output is a constant of the model (weights, parameters, shapes).
CONSTANT_TYPES = frozenset({"Const", "Constant", "Variable", "VariableV2", "VarHandleOp", "RefData"})
#: NPU graph op types whose output is the batch fed to the model.
DATA_TYPES = frozenset({"Data", "AippData", "GetNext", "DynamicGetNext", "IteratorGetNext", "QueueData"})
#: Ops that only move or convert a value: their output is their source's.
PASS_THROUGH_TYPES = frozenset({"TransData", "TransDataRNN", "Identity", "ReadVariableOp", "Reshape", "Squeeze",
                                "ExpandDims", "Transpose", "TransposeD", "Unsqueeze", "Flatten"})
#: A source input failing this cosine (the comparator's default gate) is another model's, not drift.
SEVERE_COSINE = 0.99
_KIND_WORDS = {CONSTANT: "constant input(s) (weights, biases, batch-norm parameters)", DATA: "data input(s)"}
_RED = "RelativeEuclideanDistance"


def graph_sources(ops: Iterable[Tuple[str, str, Sequence[str]]]) -> Dict[str, str]:
    """``{op name: CONSTANT | DATA}`` for the source ops of a graph and the pass-through ops fed only by sources
    of one kind. ``ops``: ``(name, type, producers of its data inputs)``, in any order."""
    listed = list(ops)
    sources = {name: CONSTANT for name, op_type, _ in listed if op_type in CONSTANT_TYPES}
    sources.update({name: DATA for name, op_type, _ in listed if op_type in DATA_TYPES})
    through = [(name, producers) for name, op_type, producers in listed
               if op_type in PASS_THROUGH_TYPES and producers]
    changed = True
    while changed:  # chains of pass-through ops, in any order
        changed = False
        for name, producers in through:
            kinds = {sources.get(producer) for producer in producers}
            if name not in sources and len(kinds) == 1 and None not in kinds:
                sources[name] = kinds.pop()  # type: ignore[assignment]
                changed = True
    return sources


@dataclass(frozen=True)
class Mismatch:
    """The source inputs of one kind and tier that differ: how many, and the first with its figure; ``severe``:
    another model (see the module docstring), else beyond rounding but alike."""

    kind: str
    count: int
    first: str
    figure: str
    severe: bool = True

    @property
    def line(self) -> str:
        how = "differ: another model's" if self.severe else "differ beyond rounding though alike"
        return f"{self.count} {_KIND_WORDS[self.kind]} {how} (first: {self.first}, {self.figure})"

    def to_dict(self) -> dict:
        return {"kind": self.kind, "count": self.count, "first": self.first, "figure": self.figure,
                "severe": self.severe}


def _difference(row) -> Optional[Tuple[bool, str]]:
    """``(severe, why)`` when a compared source input differs from the reference's, ``None`` when it does not
    (within rounding, or a range effect of the NPU's dtype)."""
    if row.status in (Status.SHAPE_MISMATCH, Status.COUNT_MISMATCH):
        return True, f"{row.status.value}: {row.reason}"
    if row.status in (Status.NAN_INF, Status.ONE_SIDE_ZERO, Status.EMPTY, Status.BOTH_ZERO):
        return None
    distance = row.metric(_RED)
    floor = rounding_floor(row.npu_dtype)
    if not (isinstance(distance, float) and not math.isnan(distance) and distance > floor):
        return None
    figure = f"relative distance {distance:.3g} against the {row.npu_dtype or 'NPU'} rounding floor {floor:.3g}"
    cosine = row.cosine
    if cosine is None or cosine < SEVERE_COSINE:
        return True, f"{figure}, cosine {'undefined' if cosine is None else f'{cosine:.4g}'}"
    return False, figure


def source_mismatches(rows: Sequence, data_inputs: Mapping[str, Sequence[Tuple[str, int]]],
                      sources: Mapping[str, str]) -> Tuple[Mismatch, ...]:
    """The kinds of source inputs that differ beyond rounding (see the module docstring); ``()`` when both runs
    compute the same model, or nothing tells."""
    found: Dict[Tuple[str, bool], List[Tuple[str, str]]] = {}
    for row in rows:
        if row.kind != TensorKind.INPUT or not row.compared:
            continue
        edges = data_inputs.get(row.op_name, ())
        producer = edges[row.tensor_index][0] if row.tensor_index < len(edges) else None
        kind = sources.get(producer) if producer is not None else None
        if kind is None:
            continue
        difference = _difference(row)
        if difference is not None:
            found.setdefault((kind, difference[0]), []).append((row.tensor_id, difference[1]))
    return tuple(Mismatch(kind, len(found[key]), found[key][0][0], found[key][0][1], severe)
                 for severe in (True, False) for kind in (CONSTANT, DATA) for key in [(kind, severe)] if key in found)


def mismatch_lines(mismatches: Sequence[Mismatch]) -> List[str]:
    """One line per kind of another model's inputs, then what it means; ``[]`` when there is none."""
    severe = [m for m in mismatches if m.severe]
    if not severe:
        return []
    return ([f"the two runs do not compute the same model: {m.line}" for m in severe]
            + ["no op is judged: compare runs from the same checkpoint on the same batch (the first step, or "
               "--step N of a run whose earlier steps match)"])


def drift_lines(mismatches: Sequence[Mismatch]) -> List[str]:
    """One line per kind of inputs beyond rounding but alike (the verdict stands); ``[]`` when there is none."""
    return [f"{m.line}: the runs may be at different training steps; each op is still judged on its own inputs"
            for m in mismatches if not m.severe]
