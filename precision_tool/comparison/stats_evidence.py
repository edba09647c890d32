"""What a statistics dump tells of each aligned tensor and each op: proved error bounds, and the ops they point at.

A ``dump_data="stats"`` run is aligned with the reference as a tensor dump is (the same rules, the NPU tensors read
from the statistics CSVs: :func:`~precision_tool.alignment.npu_vs_tf.align_npu_vs_tf` with ``statistics``). Each
pair gets :func:`~precision_tool.metrics.stat_bounds.stat_bound` of its row against the reference's statistics in
the NPU tensor's stored layout (padding included, as the row states them). An op's *jump* is its outputs' largest
lower bound ``R`` on RED over its inputs' (at least the output dtype's rounding floor), judged by the error-jump rule
(:func:`judge_statistics`): statistics cannot prove inputs right, so a jump names suspects, it does not convict. See
docs/internals/metrics.md#statistics-bounds.
"""
from __future__ import annotations

import math
import os
from dataclasses import dataclass
from typing import Dict, List, Optional, Tuple

import numpy as np

from precision_tool.alignment import Alignment
from precision_tool.alignment.model import AlignedPair
from precision_tool.comparison.attribution import JUMP_FACTOR
from precision_tool.errors import PrecisionToolError
from precision_tool.formats.stats_csv import StatsFile, TensorStats, read_stats_csv
from precision_tool.formats.tensor_kind import INPUT, OUTPUT
from precision_tool.metrics.rounding import rounding_floor
from precision_tool.metrics.stat_bounds import StatBound, stat_bound, stats_of_array


#: A reference ``.npy`` this large or larger is memory-mapped; a smaller one is read whole.
MAP_FROM = 1 << 20


@dataclass(frozen=True)
class PairEvidence:
    """One aligned tensor: its pair and the bound its statistics prove (``error``: why there is none); ``size``:
    its bytes in the dump, as the statistics state them (``Data Size``; ``None`` when not stated);
    ``float_inputs``: the float inputs its op's statistics file states (aligned or not)."""

    pair: AlignedPair
    bound: Optional[StatBound]
    error: str = ""
    size: Optional[int] = None
    float_inputs: int = 0


@dataclass(frozen=True)
class StatsEvidence:
    """:func:`pair_evidence`'s answer: ``pairs`` in the alignment's order, and ``notes``, one line per row or cell
    of a statistics file that could not be read (its reader's notes)."""

    pairs: List[PairEvidence]
    notes: Tuple[str, ...] = ()


@dataclass(frozen=True)
class OpJump:
    """One op by what its statistics show.

    ``output``/``input``: the largest ``R`` (:attr:`~precision_tool.metrics.stat_bounds.StatBound.red`, a lower
    bound on RED) of its float outputs / float inputs; ``jump = output / max(input, floor)``, ``floor`` the output
    dtype's rounding floor; ``None`` when an output or a float input has no ``R`` (not measured: no reference
    counterpart, an ``NA`` statistic, a zero reference). ``mismatch``: an output's NaN, inf or element count
    differing from the reference's while no input's does. ``suspect``: the rule of :func:`judge_statistics`.
    """

    op_name: str
    op_type: str
    output: Optional[float]
    input: Optional[float]
    jump: Optional[float]
    floor: float = 0.0
    mismatch: str = ""
    suspect: bool = False

    def to_dict(self) -> dict:
        return {"op_name": self.op_name, "op_type": self.op_type, "output": self.output, "input": self.input,
                "jump": self.jump, "floor": self.floor, "mismatch": self.mismatch or None, "suspect": self.suspect}

    @classmethod
    def from_dict(cls, data: dict) -> "OpJump":
        """The op :meth:`to_dict` wrote (a stored judgment). ``KeyError``, ``TypeError`` or ``ValueError`` for
        another dict: a figure that is not a finite number (or null), a suspect without the figures that made it."""
        output, into, jump = (_figure(data[key]) for key in ("output", "input", "jump"))
        op = cls(str(data["op_name"]), str(data["op_type"]), output, into, jump, _figure(data["floor"]) or 0.0,
                 str(data["mismatch"] or ""), data["suspect"] is True)
        if op.suspect and not op.mismatch and (output is None or jump is None):
            raise ValueError(f"suspect {op.op_name!r} has no figures")
        return op


@dataclass(frozen=True)
class StatsJudgment:
    """A statistics run judged: ``ops`` ranked (suspects first, then by jump), ``tensors`` aligned pairs,
    ``unread`` one line per pair whose bound could not be taken."""

    ops: Tuple[OpJump, ...]
    tensors: int
    unread: Tuple[str, ...] = ()

    @property
    def suspects(self) -> Tuple[OpJump, ...]:
        return tuple(op for op in self.ops if op.suspect)

    @property
    def measured(self) -> int:
        return sum(op.jump is not None or bool(op.mismatch) for op in self.ops)

    def to_dict(self) -> dict:
        return {"tensors": self.tensors, "measured_ops": self.measured,
                "suspects": [op.to_dict() for op in self.suspects], "ops": [op.to_dict() for op in self.ops],
                "unread": list(self.unread), "jump_factor": JUMP_FACTOR}

    @classmethod
    def from_dict(cls, data: dict) -> "StatsJudgment":
        """The judgment :meth:`to_dict` wrote; ``KeyError``/``TypeError`` for another dict."""
        return cls(tuple(OpJump.from_dict(op) for op in data["ops"]), int(data["tensors"]),
                   tuple(map(str, data["unread"])))


def _figure(value) -> Optional[float]:
    """A stored figure: ``None``, a number, or ``"inf"``/``"-inf"``/``"nan"`` (how the project's JSON writes them);
    ``ValueError`` otherwise."""
    if value is None:
        return None
    if value in ("inf", "-inf", "nan"):
        return float(value)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ValueError(f"{value!r} is not a number")
    return float(value)


def pair_evidence(alignment: Alignment) -> StatsEvidence:
    """The bound of every pair of a statistics alignment, in the alignment's order. A reference read for several
    pairs (an op's output is the next op's input) is read once; a small one is read whole, not memory-mapped (the
    map costs more than the read below :data:`MAP_FROM` bytes)."""
    from precision_tool.formats.layouts import to_device

    files: Dict[str, StatsFile] = {}
    notes: List[str] = []
    references: Dict[Tuple[str, str, str], TensorStats] = {}
    found: List[PairEvidence] = []
    for pair in alignment.pairs:
        npu = pair.npu
        try:
            stats = files.get(npu.path)
            if stats is None:
                stats = files[npu.path] = read_stats_csv(npu.path)
                notes.extend(f"{npu.path}: {note}" for note in stats.notes)
            row = stats.find(npu.kind, npu.index)
            if row is None:
                found.append(PairEvidence(pair, None, f"{npu.path}: no row for {npu.kind} {npu.index}"))
                continue
            layout = row.format if row.format and row.format not in ("ND", npu.origin_format) and npu.origin_format \
                else ""
            key = (pair.ref.path, npu.origin_format if layout else "", layout)
            if key not in references:
                reference = np.load(pair.ref.path, mmap_mode="r" if os.path.getsize(pair.ref.path) >= MAP_FROM
                                    else None, allow_pickle=False)
                if layout:
                    reference = to_device(np.asarray(reference), npu.origin_format, layout)
                references[key] = stats_of_array(reference)
            found.append(PairEvidence(pair, stat_bound(row, references[key]), size=row.data_size,
                                      float_inputs=_float_inputs(stats)))
        except PrecisionToolError as error:  # a CSV or layout that cannot be read: its one line, the rest goes on
            found.append(PairEvidence(pair, None, str(error)))
        except (OSError, ValueError) as error:  # a reference .npy that cannot be read
            found.append(PairEvidence(pair, None, f"{pair.ref.path}: {error}"))
    return StatsEvidence(found, tuple(notes))


def _float_inputs(stats: StatsFile) -> int:
    """The float inputs a statistics file states (its data types; a type it does not state is not counted)."""
    from precision_tool.formats import dtypes
    from precision_tool.formats.dump_file import dtype_label

    return sum(1 for row in stats.rows if row.kind == INPUT and not row.op_name
               and rounding_floor(dtype_label(dtypes.DTYPE_BY_ENUM_NAME.get(row.dtype, dtypes.DT_UNDEFINED))) > 0)


def judge_statistics(evidence: List[PairEvidence], unread: Tuple[str, ...] = ()) -> StatsJudgment:
    """Rank the ops of a statistics alignment and name the suspects.

    An op is a **suspect** when an output's counts prove it different and no input's do (``mismatch``), or when it
    is measured and ``output > floor`` and ``jump >= JUMP_FACTOR`` -- the error-jump rule of
    :mod:`~precision_tool.comparison.attribution` (docs/internals/comparison.md#attribution), applied to the lower
    bounds ``R``. A lower bound on an input may understate its error, so a jump ranks, it does not convict: a full
    dump of the suspects, replayed, decides. Ops: suspects first, earliest first (the alignment's, execution, order:
    error flows downstream, so the earliest is the likeliest origin, as for the culprit), then the others by jump,
    unmeasured last. ``unread``: lines on statistics that could not be read, kept with the pairs' own.
    """
    by_op: Dict[str, List[PairEvidence]] = {}
    for item in evidence:
        by_op.setdefault(item.pair.npu.op_name, []).append(item)
    ranked: List[Tuple[Tuple, OpJump]] = []
    for position, (name, items) in enumerate(by_op.items()):
        op = _op_jump(name, items)
        jump = op.jump if op.jump is not None and math.isfinite(op.jump) else None
        order = (position,) if op.suspect else (jump is None, -(jump or 0.0), position)
        ranked.append(((not op.suspect,) + order, op))
    ranked.sort(key=lambda item: item[0])
    unread = tuple(unread) + tuple(item.error for item in evidence if item.error)
    return StatsJudgment(tuple(op for _, op in ranked), len(evidence), unread)


def _op_jump(name: str, items: List[PairEvidence]) -> OpJump:
    outputs = [i for i in items if i.pair.npu.kind == OUTPUT and _is_float(i)]
    inputs = [i for i in items if i.pair.npu.kind == INPUT and _is_float(i)]
    floor = min((rounding_floor(i.pair.npu.dtype) for i in outputs), default=0.0)
    out, into = _largest_red(outputs), _largest_red(inputs)
    stated = max(item.float_inputs for item in items)  # an input with no reference counterpart is not in ``inputs``
    measured = out is not None and floor > 0 and len(inputs) >= stated and (not inputs or into is not None)
    jump = out / max(into or 0.0, floor) if out is not None and measured else None
    mismatch = next((i.bound.mismatch for i in items if i.pair.npu.kind == OUTPUT and i.bound is not None
                     and i.bound.mismatch), "")
    if any(i.bound is not None and i.bound.mismatch for i in items if i.pair.npu.kind == INPUT):
        mismatch = ""  # an input differs the same way: the op passed it on
    suspect = bool(mismatch) or (jump is not None and out is not None and out > floor and jump >= JUMP_FACTOR)
    return OpJump(name, items[0].pair.npu.op_type, out, into, jump, floor, mismatch, suspect)


def _is_float(item: PairEvidence) -> bool:
    return rounding_floor(item.pair.npu.dtype) > 0


def _largest_red(items: List[PairEvidence]) -> Optional[float]:
    """The largest ``R`` of ``items``; ``None`` when one of them has none (the op is then not measured)."""
    values = [i.bound.red if i.bound is not None else None for i in items]
    if not values or any(value is None for value in values):
        return None
    return max(value for value in values if value is not None)


__all__ = ["pair_evidence", "judge_statistics", "PairEvidence", "StatsEvidence", "OpJump", "StatsJudgment"]
