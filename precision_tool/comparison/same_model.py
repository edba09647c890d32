"""Do both runs compute the same model? The NPU ops' constant and data inputs against the reference's.

Every verdict compares an NPU op with the reference on the assumption that both ran the same model on the same
batch. When they did not -- another checkpoint, another seed, another batch -- every tensor differs and no op is
to blame. Before judging, the inputs the graph feeds from its **sources** are checked:

* ``constant`` -- an op's input produced by a ``Const``/``Variable`` op of the NPU graph (weights, biases,
  batch-norm parameters, shapes), directly or through ops that only move or convert it (``Cast``,
  ``TransData``, ``Identity``, ``Reshape`` ...: :data:`PASS_THROUGH_TYPES`);
* ``data`` -- an input produced so from a ``Data`` op (the batch, the labels).

Such an input **differs beyond rounding** when it fails for a reason no rounding makes (NaN/inf, shape or
count, one side zero) or its relative distance from the reference exceeds the NPU dtype's rounding floor
(:func:`~precision_tool.metrics.rounding.rounding_floor`: 1.1e-3 for float16, 1e-5 for float32, 0 for integers):
storing the reference's value in the NPU's dtype costs at most ``u`` per element. A run with such inputs gets no
culprit and exits 2, with one line per kind (:func:`mismatch_lines`).

Weights legitimately differ after training steps that ran differently on the two sides; compare the first
step, or both runs from the same checkpoint. A weight GE folded with another op (a batch norm folded into a
conv) has a new name and no reference, so it is not compared.
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
PASS_THROUGH_TYPES = frozenset({"Cast", "TransData", "TransDataRNN", "Identity", "ReadVariableOp", "Reshape",
                                "Squeeze", "ExpandDims", "Transpose", "TransposeD", "Unsqueeze", "Flatten"})
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
    """The source inputs of one kind that differ beyond rounding: how many, and the first with its figure."""

    kind: str
    count: int
    first: str
    figure: str

    @property
    def line(self) -> str:
        return f"{self.count} {_KIND_WORDS[self.kind]} differ beyond rounding (first: {self.first}, {self.figure})"

    def to_dict(self) -> dict:
        return {"kind": self.kind, "count": self.count, "first": self.first, "figure": self.figure}


def _difference(row) -> Optional[str]:
    """Why a compared source input differs beyond rounding, ``None`` when it does not."""
    if row.status in (Status.SHAPE_MISMATCH, Status.COUNT_MISMATCH, Status.NAN_INF, Status.ONE_SIDE_ZERO):
        return f"{row.status.value}: {row.reason}"
    distance = row.metric(_RED)
    floor = rounding_floor(row.npu_dtype)
    if isinstance(distance, float) and not math.isnan(distance) and distance > floor:
        return f"relative distance {distance:.3g} against the {row.npu_dtype or 'NPU'} rounding floor {floor:.3g}"
    return None


def source_mismatches(rows: Sequence, data_inputs: Mapping[str, Sequence[Tuple[str, int]]],
                      sources: Mapping[str, str]) -> Tuple[Mismatch, ...]:
    """The kinds of source inputs that differ beyond rounding (see the module docstring); ``()`` when both runs
    compute the same model, or nothing tells."""
    found: Dict[str, List[Tuple[str, str]]] = {}
    for row in rows:
        if row.kind != TensorKind.INPUT or not row.compared:
            continue
        edges = data_inputs.get(row.op_name, ())
        producer = edges[row.tensor_index][0] if row.tensor_index < len(edges) else None
        kind = sources.get(producer) if producer is not None else None
        if kind is None:
            continue
        why = _difference(row)
        if why is not None:
            found.setdefault(kind, []).append((row.tensor_id, why))
    return tuple(Mismatch(kind, len(found[kind]), found[kind][0][0], found[kind][0][1])
                 for kind in (CONSTANT, DATA) if kind in found)


def mismatch_lines(mismatches: Sequence[Mismatch]) -> List[str]:
    """One line per kind, then what it means."""
    if not mismatches:
        return []
    return ([f"the two runs do not compute the same model: {m.line}" for m in mismatches]
            + ["no op is judged: compare runs from the same checkpoint on the same batch (the first step, or "
               "--step N of a run whose earlier steps match)"])
