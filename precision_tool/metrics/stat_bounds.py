"""What two runs' statistics of one tensor prove about its error: a lower bound on the largest element error.

For the reference ``x`` and the NPU tensor ``y`` of ``n`` elements, ``e = y - x``, each statistic moves by at most
the largest error: ``|max y - max x| <= max|e|``, the same for ``min`` and ``mean`` (``|mean e| <= max|e|``), and
``|‖y‖ - ‖x‖| <= ‖e‖ <= sqrt(n) max|e|``. So ``L = max(|Δmax|, |Δmin|, |Δmean|, |Δ‖·‖| / sqrt(n)) <= max|e|``:
statistics can prove a tensor wrong, never right (errors that cancel, or stay inside the range, move none of them).
:func:`stat_bound` gives ``L`` and ``L / A``, ``A = max(|max x|, |min x|)`` the reference's range. NaN and inf
counts, and the element count, are compared first; a difference there is a mismatch whatever the values.
See docs/internals/metrics.md#statistics-bounds.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional, Sequence

import numpy as np

from precision_tool.formats.stats_csv import TensorStats
from precision_tool.formats.tensor_kind import TensorKind
from precision_tool.metrics.array_stats import array_stats

_COUNTS = (("count", "element count"), ("nan", "NaN count"), ("neg_inf", "-inf count"), ("pos_inf", "+inf count"))
_STATISTICS = ("max", "min", "mean")


@dataclass(frozen=True)
class StatBound:
    """What :func:`stat_bound` found for one tensor.

    Attributes
    ----------
    bound : ``L``, a lower bound on the largest element error ``max|y - x|``; ``None`` when no statistic is known
        (and finite) on both sides.
    by : the statistic that gave ``bound`` (``"max"``, ``"min"``, ``"mean"`` or ``"l2norm"``; ``""`` without).
    scale : ``A = max(|max x|, |min x|)``, the reference's range (``None`` when unknown).
    relative : ``L / A`` (``inf`` when ``A == 0 < L``, ``0`` when ``L == 0``; ``None`` when either is unknown).
    mismatch : one line when the counts prove the tensors different whatever their values (another element count,
        NaN or inf count), else ``""``.
    red : ``R``, a lower bound on ``RED = ‖y - x‖ / ‖x‖`` (module docstring), ``n`` the reference's finite
        elements (the statistics are over those). ``None`` when the counts differ (``mismatch`` decides), without
        the reference's L2 norm, for a zero reference the statistics prove wrong (a relative error of nothing has
        no size; one proved right in every statistic is 0), or when no statistic is known. The mean's term needs
        the NaN and inf counts.
    """

    bound: Optional[float]
    by: str = ""
    scale: Optional[float] = None
    relative: Optional[float] = None
    mismatch: str = ""
    red: Optional[float] = None


def stat_bound(npu: TensorStats, reference: TensorStats) -> StatBound:
    """The lower bound on ``max|npu - reference|`` the two tensors' statistics prove (module docstring).

    Parameters
    ----------
    npu, reference : TensorStats
        The statistics of the same tensor on both sides; a statistic ``None`` on either side is not used, nor is one
        that is not finite (a tensor holding NaN or inf may state them as its max or mean: its counts decide).

    Returns
    -------
    StatBound

    Examples
    --------
    >>> from precision_tool.formats.tensor_kind import OUTPUT
    >>> ref = TensorStats(OUTPUT, 0, max=4.0, min=-2.0, mean=1.0, count=4, nan=0)
    >>> stat_bound(TensorStats(OUTPUT, 0, max=4.5, min=-2.0, mean=1.0, count=4, nan=0), ref)
    StatBound(bound=0.5, by='max', scale=4.0, relative=0.125, mismatch='', red=None)
    >>> stat_bound(TensorStats(OUTPUT, 0, max=4.0, min=-2.0, mean=1.0, count=4, nan=1), ref).mismatch
    'NaN count 1, the reference 0'

    With the reference's L2 norm (``sqrt(22)`` for ``[4, -2, 1, 1]``), ``R``: a mean moved by 0.25 over 4 elements
    proves ``‖e‖ >= sqrt(4) * 0.25``:

    >>> npu = TensorStats(OUTPUT, 0, max=4.0, min=-2.0, mean=1.25, count=4, nan=0, neg_inf=0, pos_inf=0)
    >>> ref = TensorStats(OUTPUT, 0, max=4.0, min=-2.0, mean=1.0, l2norm=math.sqrt(22.0), count=4, nan=0, neg_inf=0,
    ...                   pos_inf=0)
    >>> round(stat_bound(npu, ref).red * math.sqrt(22), 6)
    0.5
    """
    mismatch = ""
    for field, label in _COUNTS:
        mine, theirs = getattr(npu, field), getattr(reference, field)
        if mine is not None and theirs is not None and mine != theirs:
            mismatch = f"{label} {mine}, the reference {theirs}"
            break
    bound, by = None, ""
    for field in _STATISTICS:
        delta = _delta(getattr(npu, field), getattr(reference, field))
        if delta is not None and (bound is None or delta > bound):
            bound, by = delta, field
    count = reference.count if reference.count is not None else npu.count
    norm = _delta(npu.l2norm, reference.l2norm)
    if norm is not None and count:
        norm /= math.sqrt(count)
        if bound is None or norm > bound:
            bound, by = norm, "l2norm"
    scale = _scale(reference)
    red = None if mismatch else _red(npu, reference, bound)
    return StatBound(bound, by, scale, _relative(bound, scale), mismatch, red)


def _red(npu: TensorStats, reference: TensorStats, bound: Optional[float]) -> Optional[float]:
    """``R = max(sqrt(n) |Δmean|, |Δ‖·‖|, L) / ‖x‖`` over the ``n`` finite elements the statistics are taken over:
    each term is at most ``‖e‖`` (Cauchy-Schwarz for the mean, the triangle inequality for the norm, ``max|e| <=
    ‖e‖`` for ``L``). A NaN or inf at the same place on both sides adds nothing; at another place the error there
    is not finite and any ``R`` is a lower bound."""
    norm = reference.l2norm
    if norm is None or not math.isfinite(norm):
        return None
    terms = [value for value in (_delta(npu.l2norm, reference.l2norm), bound) if value is not None]
    mean, finite = _delta(npu.mean, reference.mean), _finite_count(reference)
    if mean is not None and finite:
        terms.append(math.sqrt(finite) * mean)
    if not terms:
        return None
    if norm <= 0:  # a zero reference: no error proved is 0; an error proved has no relative size
        return 0.0 if max(terms) == 0 else None
    return max(terms) / norm


def _finite_count(stats: TensorStats) -> Optional[int]:
    """Elements that are neither NaN nor inf; ``None`` when a count is unknown."""
    count, nan, neg_inf, pos_inf = stats.count, stats.nan, stats.neg_inf, stats.pos_inf
    if count is None or nan is None or neg_inf is None or pos_inf is None:
        return None
    return count - nan - neg_inf - pos_inf


def _delta(mine: Optional[float], theirs: Optional[float]) -> Optional[float]:
    if mine is None or theirs is None or not (math.isfinite(mine) and math.isfinite(theirs)):
        return None
    return abs(float(mine) - float(theirs))


def _scale(reference: TensorStats) -> Optional[float]:
    ends = [abs(value) for value in (reference.max, reference.min) if value is not None and math.isfinite(value)]
    return max(ends) if len(ends) == 2 else None


def _relative(bound: Optional[float], scale: Optional[float]) -> Optional[float]:
    if bound is None or scale is None:
        return None
    if bound == 0:
        return 0.0
    return bound / scale if scale > 0 else math.inf


def stats_of_array(array: np.ndarray, kind: TensorKind = TensorKind.OUTPUT, index: int = 0,
                   shape: Sequence[int] = ()) -> TensorStats:
    """The statistics a statistics dump states, of a tensor in hand (the reference's ``.npy``), from
    :func:`~precision_tool.metrics.array_stats.array_stats`: max, min, mean and L2 norm over its finite values;
    element, NaN and inf counts. ``None`` for a statistic of no finite value. ``shape`` defaults to the array's.

    >>> s = stats_of_array(np.array([3.0, -4.0, np.nan], np.float32))
    >>> (s.max, s.min, s.mean, s.l2norm, s.count, s.nan, s.neg_inf, s.pos_inf)
    (3.0, -4.0, -0.5, 5.0, 3, 1, 0, 0)
    """
    values = np.asarray(array)
    stats = array_stats(values, l2norm=True)
    return TensorStats(kind, index, str(values.dtype), "", tuple(shape) or tuple(values.shape), stats.size,
                       stats.max, stats.min, stats.mean, stats.l2norm, stats.nan, stats.inf - stats.pos_inf,
                       stats.pos_inf, data_size=int(values.nbytes))


__all__ = ["stat_bound", "StatBound", "stats_of_array"]
