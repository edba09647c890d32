"""What a statistics dump tells of each aligned tensor and each op: proved error bounds, and the ops they point at.

A ``dump_data="stats"`` run is aligned with the reference as a tensor dump is (the same rules, the NPU tensors read
from the statistics CSVs: :func:`~precision_tool.alignment.npu_vs_tf.align_npu_vs_tf` with ``statistics``). Each
pair gets :func:`~precision_tool.metrics.stat_bounds.stat_bound` of its row against the reference's statistics in
the NPU tensor's stored layout (padding included, as the row states them). An op's *jump* is its outputs' largest
relative bound over its inputs' (at least the output dtype's unit roundoff ``u``): statistics cannot prove inputs
right, so a jump ranks suspects, it does not convict. See docs/internals/metrics.md#statistics-bounds.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, List, Optional, Tuple

import numpy as np

from precision_tool.alignment import Alignment
from precision_tool.alignment.model import AlignedPair
from precision_tool.errors import PrecisionToolError
from precision_tool.formats.stats_csv import StatsFile, read_stats_csv
from precision_tool.formats.tensor_kind import INPUT, OUTPUT
from precision_tool.metrics.rounding import rounding_floor
from precision_tool.metrics.stat_bounds import StatBound, stat_bound, stats_of_array


@dataclass(frozen=True)
class PairEvidence:
    """One aligned tensor: its pair and the bound its statistics prove (``error``: why there is none)."""

    pair: AlignedPair
    bound: Optional[StatBound]
    error: str = ""


@dataclass(frozen=True)
class OpJump:
    """One op ranked by what its statistics show: ``output``/``input``, the largest relative bound of its outputs /
    inputs (``None`` when none is known), ``jump = output / max(input, u)``; ``mismatch``: a count that differs on an
    output (proved different, whatever the values)."""

    op_name: str
    op_type: str
    output: Optional[float]
    input: Optional[float]
    jump: float
    mismatch: str = ""


def pair_evidence(alignment: Alignment) -> List[PairEvidence]:
    """The bound of every pair of a statistics alignment, in the alignment's order."""
    from precision_tool.formats.layouts import to_device

    files: Dict[str, StatsFile] = {}
    found: List[PairEvidence] = []
    for pair in alignment.pairs:
        npu = pair.npu
        try:
            stats = files.get(npu.path) or files.setdefault(npu.path, read_stats_csv(npu.path))
            row = stats.find(npu.kind, npu.index)
            if row is None:
                found.append(PairEvidence(pair, None, f"{npu.path}: no row for {npu.kind} {npu.index}"))
                continue
            reference = np.load(pair.ref.path, mmap_mode="r", allow_pickle=False)
            if row.format and row.format not in ("ND", npu.origin_format) and npu.origin_format:
                reference = to_device(np.asarray(reference), npu.origin_format, row.format)
            found.append(PairEvidence(pair, stat_bound(row, stats_of_array(reference, npu.kind, npu.index))))
        except PrecisionToolError as error:  # a CSV or layout that cannot be read: its one line, the rest goes on
            found.append(PairEvidence(pair, None, str(error)))
        except (OSError, ValueError) as error:  # a reference .npy that cannot be read
            found.append(PairEvidence(pair, None, f"{pair.ref.path}: {error}"))
    return found


def rank_ops(evidence: List[PairEvidence]) -> List[OpJump]:
    """Ops by :attr:`OpJump.jump`, largest first (ties: the alignment's order); ops with no known output bound
    last."""
    by_op: Dict[str, List[PairEvidence]] = {}
    for item in evidence:
        by_op.setdefault(item.pair.npu.op_name, []).append(item)
    ranked: List[Tuple[int, OpJump]] = []
    for position, (name, items) in enumerate(by_op.items()):
        outputs = [i for i in items if i.pair.npu.kind == OUTPUT and i.bound is not None]
        inputs = [i for i in items if i.pair.npu.kind == INPUT and i.bound is not None]
        out = _largest(outputs)
        into = _largest(inputs)
        floor = min((rounding_floor(i.pair.npu.dtype) for i in outputs), default=0.0) or 2.0 ** -11
        jump = 0.0 if out is None else out / max(into or 0.0, floor)
        mismatch = next((i.bound.mismatch for i in outputs if i.bound is not None and i.bound.mismatch), "")
        ranked.append((position, OpJump(name, items[0].pair.npu.op_type, out, into, jump, mismatch)))
    ranked.sort(key=lambda item: (item[1].output is None, -item[1].jump, item[0]))
    return [op for _, op in ranked]


def _largest(items: List[PairEvidence]) -> Optional[float]:
    values = [i.bound.relative for i in items if i.bound is not None and i.bound.relative is not None]
    return max(values) if values else None


__all__ = ["pair_evidence", "rank_ops", "PairEvidence", "OpJump"]
