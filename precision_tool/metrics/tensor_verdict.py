"""One verdict per tensor pair: :func:`compare_tensors` returns a frozen, truthy :class:`TensorComparison`.

Edge cases are settled in a fixed order before any metric is read: 1. element counts differ: ``COUNT_MISMATCH``;
2. shapes differ beyond size-1 dims: ``SHAPE_MISMATCH``; 3. no elements: ``EMPTY``; 4. NaN/inf that differ between
the sides: ``NAN_INF`` (NaN/inf matching the reference's are left out, with a note); 5. on the finite pairs, all
zero: ``BOTH_ZERO`` or ``ONE_SIDE_ZERO``; 6. the cosine and allclose gates: ``PASS`` or ``FAIL``. ``PASS``,
``BOTH_ZERO`` and ``EMPTY`` pass. Each step, and where msaccucmp differs: docs/internals/metrics.md#verdict-per-tensor.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from enum import Enum
from typing import Any, Dict, Optional, Sequence, Tuple

import numpy as np

from precision_tool.errors import MetricInputError
from precision_tool.metrics.errors_detail import ElementError
from precision_tool.metrics.pair_stats import NAN, NEGINF, POSINF, Chunks, PairStats, array_chunks, gather
from precision_tool.metrics.closeness import DEFAULT_TOLERANCES, Tolerance, canonical_dtype, lower_precision
from precision_tool.metrics.metric_registry import ALL, MetricInfo, format_value, get_metric, resolve_metrics
from precision_tool.status import Status

__all__ = ["Status", "NonFiniteClass", "NonFiniteSummary", "ElementError", "MetricValue", "TensorComparison",
           "compare_tensors", "DEFAULT_COSINE_THRESHOLD", "MATCHING_NON_FINITE", "threshold_text",
           "cosine_gate_reason", "gate_text"]

#: The cosine gate msaccucmp users usually apply.
DEFAULT_COSINE_THRESHOLD = 0.99


def threshold_text(threshold: float) -> str:
    """A threshold as reports show it: short (``0.99``), and exact where six significant digits would round it --
    a gate of 0.9999999 is not shown as ``1``, which no cosine is below.

    >>> threshold_text(0.99), threshold_text(0.9999999), threshold_text(1.0), threshold_text(-1.0)
    ('0.99', '0.9999999', '1', '-1')
    """
    short = f"{threshold:g}"
    return short if float(short) == threshold else repr(float(threshold))


def cosine_gate_reason(cosine: Optional[float], threshold: float) -> str:
    """``cosine 0.901050 < 0.99``: the comparator's words for the cosine gate -- the cosine to six decimals, or to
    as many more as it takes not to round it onto the other side of the threshold.

    >>> cosine_gate_reason(0.9010504, 0.99), cosine_gate_reason(None, 0.99)
    ('cosine 0.901050 < 0.99', 'cosine undefined < 0.99')
    >>> cosine_gate_reason(0.99999985, 0.9999999)  # not 'cosine 1.000000 < 0.9999999'
    'cosine 0.99999985 < 0.9999999'
    """
    if cosine is None:
        return f"cosine undefined < {threshold_text(threshold)}"
    passed = cosine >= threshold
    digits = 6
    shown = f"{cosine:.{digits}f}"
    while (float(shown) >= threshold) != passed and digits < 17:
        digits += 1
        shown = f"{cosine:.{digits}f}"
    return f"cosine {shown} {'>=' if passed else '<'} {threshold_text(threshold)}"


def gate_text(threshold: Optional[float]) -> str:
    """The gate a run's title names: ``cosine >= 0.99``, or ``cosine gate off`` (``None``)."""
    return f"cosine >= {threshold_text(threshold)}" if threshold is not None else "cosine gate off"


_RELATIVE = ("AccumulatedRelativeError", "MaxRelativeError", "MeanRelativeError")
_COSINE = get_metric("CosineSimilarity")

#: How the note on a tensor with matching non-finite values begins (:meth:`NonFiniteSummary.matching_text`);
#: the result CSV writes that note in ``CompareFailReason`` and reads the count back from it.
MATCHING_NON_FINITE = "matching non-finite"


class NonFiniteClass(str, Enum):
    """Where NaN (or inf) occur: on neither side, one side, or both -- at the same positions or not."""

    NONE = "none"
    NPU_ONLY = "npu_only"
    REFERENCE_ONLY = "reference_only"
    BOTH_SAME_POSITIONS = "both_same_positions"
    BOTH_DIFFERENT_POSITIONS = "both_different_positions"  # for inf: positions or signs differ

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True)
class NonFiniteSummary:
    """NaN and +/-inf counts per side, and how their positions relate."""

    npu_nan: int = 0
    npu_posinf: int = 0
    npu_neginf: int = 0
    ref_nan: int = 0
    ref_posinf: int = 0
    ref_neginf: int = 0
    nan_class: NonFiniteClass = NonFiniteClass.NONE
    inf_class: NonFiniteClass = NonFiniteClass.NONE

    @property
    def npu_inf(self) -> int:
        return self.npu_posinf + self.npu_neginf

    @property
    def ref_inf(self) -> int:
        return self.ref_posinf + self.ref_neginf

    @property
    def any(self) -> bool:
        return self.nan_class is not NonFiniteClass.NONE or self.inf_class is not NonFiniteClass.NONE

    @property
    def matching(self) -> bool:
        """True when there are non-finite values and each one has its twin on the other side: NaN where the
        other side has NaN, +inf where it has +inf, -inf where it has -inf, and nothing else non-finite.

        >>> NonFiniteSummary(npu_nan=2, ref_nan=2, nan_class=NonFiniteClass.BOTH_SAME_POSITIONS).matching
        True
        >>> NonFiniteSummary(npu_nan=1, ref_posinf=1, nan_class=NonFiniteClass.NPU_ONLY,
        ...                  inf_class=NonFiniteClass.REFERENCE_ONLY).matching  # NaN against inf
        False
        """
        same = (NonFiniteClass.NONE, NonFiniteClass.BOTH_SAME_POSITIONS)
        return self.any and self.nan_class in same and self.inf_class in same

    @property
    def matched(self) -> int:
        """Elements left out as matching non-finite values (:attr:`matching`); 0 when they do not match."""
        return self.npu_nan + self.npu_inf if self.matching else 0

    def matching_text(self, finite: int) -> str:
        """The note on a tensor whose non-finite values match (:attr:`matching`), ``finite`` elements left.

        >>> summary = NonFiniteSummary(npu_nan=2, npu_posinf=1, ref_nan=2, ref_posinf=1,
        ...                            nan_class=NonFiniteClass.BOTH_SAME_POSITIONS,
        ...                            inf_class=NonFiniteClass.BOTH_SAME_POSITIONS)
        >>> print(summary.matching_text(997).replace("; ", ";\\n"))
        matching non-finite: 3 NaN/inf at identical positions on both sides (2 NaN, 1 +inf);
        metrics over the 997 finite elements
        >>> print(summary.matching_text(0).replace("; ", ";\\n"))
        matching non-finite: 3 NaN/inf at identical positions on both sides (2 NaN, 1 +inf);
        no finite element: nothing to measure
        """
        kinds = ", ".join(f"{count} {kind}" for count, kind in
                          ((self.npu_nan, "NaN"), (self.npu_posinf, "+inf"), (self.npu_neginf, "-inf")) if count)
        total = self.npu_nan + self.npu_inf
        head = f"{MATCHING_NON_FINITE}: {total} NaN/inf at identical positions on both sides ({kinds})"
        if not finite:
            return f"{head}; no finite element: nothing to measure"
        return f"{head}; metrics over the {finite} finite element{'' if finite == 1 else 's'}"


@dataclass(frozen=True)
class MetricValue:
    """One metric's value, or None with the reason it could not be computed."""

    name: str
    value: Any
    reason: Optional[str] = None

    @property
    def formatted(self) -> str:
        """The CSV cell, as msaccucmp writes it (``NaN`` when not computed)."""
        return format_value(self.name, self.value)


@dataclass(frozen=True)
class TensorComparison:
    """Everything :func:`compare_tensors` found about one NPU/reference pair. ``bool(result)`` is ``passed``.

    Attributes
    ----------
    status, reason : Status, str
        The verdict and one line saying why.
    npu_shape, ref_shape : tuple of int
    dtype : str
        The tolerance class used (``"float16"``, ``"bfloat16"``, ``"float32"``, ``"float64"``, ``"integer"``,
        ``"bool"``).
    element_count : int
        Elements in the NPU tensor.
    compared_count : int
        Pairs the metrics were computed over (finite on both sides); 0 when nothing was compared.
    metrics : tuple of MetricValue
        The requested metrics, in the order requested.
    allclose_ratio : float or None
        Share of the elements within tolerance: of all elements for ``NAN_INF`` and all-finite tensors (NaN
        on both sides and same-sign inf count as close), of the finite elements for a tensor whose
        non-finite values all match (:attr:`matched_non_finite`), like every metric; None when nothing was
        compared.
    mismatch_count : int or None
        Elements outside tolerance (among those the ratio counts).
    tolerance : Tolerance
    cosine_threshold : float or None
        None: the cosine gate was off.
    cosine : float or None
        The cosine the gate read (computed even when not among ``metrics``).
    zero_reference_count : int
        Compared pairs whose reference is zero, left out of the relative errors.
    non_finite : NonFiniteSummary
    worst : ElementError or None
    notes : tuple of str
        Further one-line remarks (shapes that differ only in size-1 dims, zero references, ...).
    """

    status: Status
    reason: str
    npu_shape: Tuple[int, ...]
    ref_shape: Tuple[int, ...]
    dtype: str
    element_count: int
    compared_count: int
    metrics: Tuple[MetricValue, ...]
    allclose_ratio: Optional[float]
    mismatch_count: Optional[int]
    tolerance: Tolerance
    cosine_threshold: Optional[float]
    cosine: Optional[float]
    zero_reference_count: int
    non_finite: NonFiniteSummary
    worst: Optional[ElementError]
    notes: Tuple[str, ...] = ()

    @property
    def passed(self) -> bool:
        return self.status.passed

    def __bool__(self) -> bool:
        return self.passed

    @property
    def matched_non_finite(self) -> int:
        """NaN/inf elements at identical positions with identical kinds on both sides, left out of every metric
        (:attr:`NonFiniteSummary.matched`): 0 when there are none, or when the non-finite values differ
        (``NAN_INF``)."""
        return self.non_finite.matched

    def metric(self, name) -> MetricValue:
        """The :class:`MetricValue` for a metric name or alias; ``KeyError`` if it was not requested."""
        canonical = get_metric(name).name
        for item in self.metrics:
            if item.name == canonical:
                return item
        raise KeyError(f"{canonical} was not among the metrics computed for this comparison")

    def value(self, name) -> Any:
        """Shorthand for ``metric(name).value``."""
        return self.metric(name).value


def compare_tensors(npu, ref, *, dtype=None, metrics: Sequence = ALL,
                    cosine_threshold: Optional[float] = DEFAULT_COSINE_THRESHOLD, rtol: Optional[float] = None,
                    atol: Optional[float] = None, min_allclose_ratio: Optional[float] = None,
                    chunks: Optional[Chunks] = None) -> TensorComparison:
    """Compare an NPU tensor with its reference and give an honest verdict.

    Parameters
    ----------
    npu, ref : array_like of real numbers
        The tensors, any shape. Every sum is float64; values are widened a block at a time (bf16 arrives as
        float32).
    dtype : dtype or str, optional
        The dtype the NPU computed in, for the default tolerances: anything
        :func:`~precision_tool.metrics.closeness.canonical_dtype` takes (``"bf16"``, ``"DT_FLOAT16"``, ...).
        Default: the less precise of the two arrays' dtypes. Pass it for bf16, which arrives as float32.
    metrics : names, optional
        Which metrics to report (names, aliases or msaccucmp indices); default all ten.
    cosine_threshold : float or None
        The cosine gate (default 0.99); None turns it off.
    rtol, atol, min_allclose_ratio : float, optional
        Override the dtype's :data:`~precision_tool.metrics.closeness.DEFAULT_TOLERANCES`.
    chunks : callable, optional
        For tensors too large to hold: ``npu`` and ``ref`` are then :class:`TensorLayout` records (shape and
        dtype), and ``chunks()`` yields the aligned flat pieces of both (:data:`~precision_tool.metrics.pair_stats.
        Chunks`); the result is the same as for the whole arrays.

    Returns
    -------
    TensorComparison

    Raises
    ------
    MetricInputError
        Complex or non-numeric tensors, an unknown dtype name, or a negative tolerance.
    UnknownMetricError
        An unknown metric name.

    Examples
    --------
    A tensor whose dims are all 1 gets a real comparison (msaccucmp writes cosine 1.0 for it):

    >>> result = compare_tensors(np.float32([[3.0]]), np.float32([[-5.0]]))
    >>> result.status, result.value("cosine"), bool(result)
    (<Status.FAIL: 'FAIL'>, -1.0, False)
    >>> result.reason
    'cosine -1.000000 < 0.99; 1 of 1 elements (100%) outside rtol 0.0001, atol 1e-05 (up to 0.01% allowed)'

    A float16 NPU tensor against its float32 reference:

    >>> ref = np.linspace(-3, 3, 1000, dtype=np.float32)
    >>> result = compare_tensors(ref.astype(np.float16), ref)
    >>> result.dtype, result.status, result.metric("MaxAbsoluteError").formatted
    ('float16', <Status.PASS: 'PASS'>, '0.000974')
    >>> result.reason
    'cosine 1.000000 >= 0.99; 0 of 1000 elements (0%) outside rtol 0.001, atol 0.001 (up to 0.1% allowed)'

    A NaN the reference holds too, at the same position, is left out and noted; a NaN it lacks fails:

    >>> result = compare_tensors(np.float32([1, np.nan, 3]), np.float32([1, np.nan, 3]))
    >>> result.status, result.matched_non_finite, result.compared_count
    (<Status.PASS: 'PASS'>, 1, 2)
    >>> compare_tensors(np.float32([1, np.nan, 3]), np.float32([1, 2, 3])).status
    <Status.NAN_INF: 'NAN_INF'>
    """
    npu_array: Any
    ref_array: Any
    if chunks is None:
        npu_array, ref_array = _as_real_array(npu, "NPU"), _as_real_array(ref, "reference")
    else:
        npu_array, ref_array = _checked_layout(npu, "NPU"), _checked_layout(ref, "reference")
    infos = resolve_metrics(metrics)
    tol_dtype = _tolerance_dtype(dtype, npu_array.dtype, ref_array.dtype)
    default = DEFAULT_TOLERANCES[tol_dtype]
    tolerance = Tolerance(default.rtol if rtol is None else float(rtol),
                          default.atol if atol is None else float(atol),
                          default.min_ratio if min_allclose_ratio is None else float(min_allclose_ratio))
    npu_shape, ref_shape = tuple(npu_array.shape), tuple(ref_array.shape)
    common: Dict[str, Any] = dict(npu_shape=npu_shape, ref_shape=ref_shape, dtype=tol_dtype,
                                  element_count=int(npu_array.size), tolerance=tolerance,
                                  cosine_threshold=cosine_threshold)

    if npu_array.size != ref_array.size:
        reason = (f"element counts differ: NPU {npu_array.size} (shape {npu_shape}) vs reference "
                  f"{ref_array.size} (shape {ref_shape}); not compared")
        return TensorComparison(status=Status.COUNT_MISMATCH, reason=reason, compared_count=0,
                                metrics=_not_computed(infos, "not computed: element counts differ"),
                                allclose_ratio=None, mismatch_count=None, cosine=None, zero_reference_count=0,
                                non_finite=NonFiniteSummary(), worst=None, **common)

    notes = []
    shape_mismatch = npu_shape != ref_shape and _squeezed(npu_shape) != _squeezed(ref_shape)
    if npu_shape != ref_shape and not shape_mismatch:
        notes.append(f"shapes differ only in size-1 dims (NPU {npu_shape}, reference {ref_shape}): "
                     f"same element order")
    n = int(npu_array.size)
    if n == 0:
        status, reason = Status.EMPTY, f"both tensors are empty (shape {npu_shape}): nothing to compare"
        if shape_mismatch:
            status, reason = Status.SHAPE_MISMATCH, _shape_reason(npu_shape, ref_shape, n)
        return TensorComparison(status=status, reason=reason, compared_count=0,
                                metrics=_not_computed(infos, "not computed: the tensors are empty"),
                                allclose_ratio=None, mismatch_count=None, cosine=None, zero_reference_count=0,
                                non_finite=NonFiniteSummary(), worst=None, notes=tuple(notes), **common)
    stats = gather(chunks or array_chunks(npu_array, ref_array), tolerance.rtol, tolerance.atol)
    return _verdict(stats, infos, notes, shape_mismatch, common)


def _verdict(stats: PairStats, infos: Sequence[MetricInfo], notes: list, shape_mismatch: bool,
             common: Dict[str, Any]) -> TensorComparison:
    """Steps 4-6 of the module docstring, from the pair's sums (and the metrics a ``SHAPE_MISMATCH`` still shows)."""
    n, m = stats.total, stats.n
    npu_shape, tolerance = common["npu_shape"], common["tolerance"]
    all_finite = m == n
    non_finite = NonFiniteSummary() if all_finite else _classify_non_finite(stats)
    npu_zero, ref_zero = stats.nonzero_x == 0, stats.nonzero_y == 0
    matching = non_finite.matching
    if matching:
        notes.append(non_finite.matching_text(m))

    cosine = _COSINE.kernel(stats) if m else math.nan
    cosine = None if math.isnan(cosine) else cosine
    metric_values = tuple(_metric_value(info, info.kernel(stats), stats, npu_zero, ref_zero, matching)
                          if m else _metric_value(info, math.nan, stats, npu_zero, ref_zero, matching)
                          for info in infos)

    close = stats.close if m else 0
    counted = m if matching else n  # matching non-finite values are left out of the allclose ratio too
    if not (all_finite or matching):
        close += stats.nonfinite_close
    mismatch: Optional[int] = counted - close if counted else None
    ratio = close / counted if counted else None
    worst = _worst_element(stats, npu_shape) if m else None
    zero_refs = m - stats.rel_count if m else 0

    if m == 1:
        notes.append("one element: cosine only compares signs; the allclose gate decides")
    if zero_refs and not ref_zero and any(info.name in _RELATIVE for info in infos):
        notes.append(f"{zero_refs} of {m} reference elements are zero (|y| <= 2.2e-16): left out of relative "
                     f"errors")

    status, reason = _judge(cosine, common["cosine_threshold"], mismatch, tolerance, non_finite, stats,
                            npu_zero, ref_zero)
    if shape_mismatch:
        notes.insert(0, f"also {status.value}: {reason}")
        status, reason = Status.SHAPE_MISMATCH, _shape_reason(npu_shape, common["ref_shape"], n)

    return TensorComparison(status=status, reason=reason, compared_count=m, metrics=metric_values,
                            allclose_ratio=ratio, mismatch_count=mismatch, cosine=cosine,
                            zero_reference_count=zero_refs, non_finite=non_finite, worst=worst,
                            notes=tuple(notes), **common)


def _judge(cosine, threshold, mismatch, tolerance, non_finite, stats: PairStats, npu_zero, ref_zero):
    """Steps 4-6 of the module docstring: non-finite values, then zero tensors, then the two gates.

    Past step 4 every element is finite, or the non-finite ones match and are left out: ``compared`` finite
    elements are judged (and ``mismatch`` counts among them).
    """
    compared = stats.n
    if non_finite.any and not non_finite.matching:
        return Status.NAN_INF, _non_finite_reason(non_finite, compared)
    if not compared:  # every element is NaN/inf, matching the reference's
        return Status.EMPTY, non_finite.matching_text(0)
    if npu_zero and ref_zero:
        where = " where finite" if non_finite.any else ""
        what = f"are all zero{where} ({compared} element{'' if compared == 1 else 's'})"
        return Status.BOTH_ZERO, f"both tensors {what}: identical; cosine is undefined"
    if npu_zero or ref_zero:
        return Status.ONE_SIDE_ZERO, _one_side_zero_reason(stats, npu_zero, tolerance)
    return _gates(cosine, threshold, mismatch, compared, tolerance)


@dataclass(frozen=True)
class TensorLayout:
    """Shape and dtype of a tensor read in chunks (``compare_tensors(..., chunks=...)``)."""

    shape: Tuple[int, ...]
    dtype: np.dtype

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64)) if self.shape else 1


def _checked_layout(layout: TensorLayout, label: str) -> TensorLayout:
    if np.dtype(layout.dtype).kind not in "fiub":
        raise MetricInputError(f"Cannot compare a {label} tensor of dtype {layout.dtype}.",
                               "only real numbers: floats, integers, bools")
    return layout


def _as_real_array(values, label) -> np.ndarray:
    array = np.asarray(values)
    if array.dtype.kind not in "fiub":
        raise MetricInputError(f"Cannot compare a {label} tensor of dtype {array.dtype}.",
                               "only real numbers: floats, integers, bools")
    return array


def _tolerance_dtype(dtype, npu_dtype, ref_dtype) -> str:
    if dtype is not None:
        return canonical_dtype(dtype)
    return lower_precision(canonical_dtype(npu_dtype), canonical_dtype(ref_dtype))


def _squeezed(shape):
    return tuple(dim for dim in shape if dim != 1)


def _not_computed(infos: Sequence[MetricInfo], reason: str) -> Tuple[MetricValue, ...]:
    return tuple(MetricValue(info.name, None, reason) for info in infos)


def _metric_value(info: MetricInfo, value, stats: PairStats, npu_zero: bool, ref_zero: bool,
                  matching: bool = False) -> MetricValue:
    if stats.n == 0:
        return MetricValue(info.name, None, "not computed: every element is NaN/inf, as in the reference" if matching
                           else "not computed: no pair is finite on both sides")
    if value == value:  # a number: a tuple, or a float that is not NaN
        return MetricValue(info.name, value)
    if info.name == "CosineSimilarity":
        if npu_zero and ref_zero:
            why = "undefined: both tensors are all zero"
        else:
            why = "undefined: the NPU tensor is all zero" if npu_zero else "undefined: the reference is all zero"
        return MetricValue(info.name, None, why)
    if info.name == "RelativeEuclideanDistance" or info.name in _RELATIVE:
        return MetricValue(info.name, None, "undefined: every reference element is zero (|y| <= 2.2e-16)")
    return MetricValue(info.name, None, "undefined: the result is not a number")


def _worst_element(stats: PairStats, shape) -> ElementError:
    return ElementError.of(stats.worst, shape, stats.worst_x, stats.worst_y, stats.max_ad)


def _classify(in_x: int, in_y: int, same: bool) -> NonFiniteClass:
    if not (in_x or in_y):
        return NonFiniteClass.NONE
    if not in_y:
        return NonFiniteClass.NPU_ONLY
    if not in_x:
        return NonFiniteClass.REFERENCE_ONLY
    return NonFiniteClass.BOTH_SAME_POSITIONS if same else NonFiniteClass.BOTH_DIFFERENT_POSITIONS


def _classify_non_finite(stats: PairStats) -> NonFiniteSummary:
    """From the class counts: positions agree when every NaN (+inf, -inf) of one side faces one on the other."""
    count = stats.count
    npu = {kind: count(kind, None) for kind in (NAN, POSINF, NEGINF)}
    ref = {kind: count(None, kind) for kind in (NAN, POSINF, NEGINF)}
    same = {kind: npu[kind] == ref[kind] == count(kind, kind) for kind in (NAN, POSINF, NEGINF)}
    return NonFiniteSummary(
        npu_nan=npu[NAN], npu_posinf=npu[POSINF], npu_neginf=npu[NEGINF],
        ref_nan=ref[NAN], ref_posinf=ref[POSINF], ref_neginf=ref[NEGINF],
        nan_class=_classify(npu[NAN], ref[NAN], same[NAN]),
        inf_class=_classify(npu[POSINF] + npu[NEGINF], ref[POSINF] + ref[NEGINF], same[POSINF] and same[NEGINF]))


def _inf_text(pos: int, neg: int) -> str:
    parts = [f"{pos} +inf"] if pos else []
    if neg:
        parts.append(f"{neg} -inf")
    return " and ".join(parts)


def _non_finite_reason(summary: NonFiniteSummary, finite_pairs: int) -> str:
    parts = []
    nan_texts = {
        NonFiniteClass.NPU_ONLY: f"NPU has {summary.npu_nan} NaN, reference none",
        NonFiniteClass.REFERENCE_ONLY: f"reference has {summary.ref_nan} NaN, NPU none",
        NonFiniteClass.BOTH_SAME_POSITIONS: f"both have {summary.npu_nan} NaN at the same positions",
        NonFiniteClass.BOTH_DIFFERENT_POSITIONS:
            f"NaN positions differ (NPU {summary.npu_nan}, reference {summary.ref_nan})",
    }
    npu_inf = _inf_text(summary.npu_posinf, summary.npu_neginf)
    ref_inf = _inf_text(summary.ref_posinf, summary.ref_neginf)
    inf_texts = {
        NonFiniteClass.NPU_ONLY: f"NPU has {npu_inf}, reference none",
        NonFiniteClass.REFERENCE_ONLY: f"reference has {ref_inf}, NPU none",
        NonFiniteClass.BOTH_SAME_POSITIONS: f"both have {npu_inf} at the same positions",
        NonFiniteClass.BOTH_DIFFERENT_POSITIONS: f"inf positions or signs differ (NPU {npu_inf or 'none'}, "
                                                 f"reference {ref_inf or 'none'})",
    }
    if summary.nan_class is not NonFiniteClass.NONE:
        parts.append(nan_texts[summary.nan_class])
    if summary.inf_class is not NonFiniteClass.NONE:
        parts.append(inf_texts[summary.inf_class])
    plural = "pair" if finite_pairs == 1 else "pairs"
    tail = f"metrics over the {finite_pairs} {plural} finite on both sides" if finite_pairs else \
        "no pair is finite on both sides"
    return "; ".join(parts + [tail])


def _shape_reason(npu_shape, ref_shape, n: int) -> str:
    return (f"shapes differ: NPU {npu_shape} vs reference {ref_shape} ({n} elements each); metrics compare the "
            f"flattened data and may pair unrelated elements")


def _one_side_zero_reason(stats: PairStats, npu_zero: bool, tolerance: Tolerance) -> str:
    nonzero = stats.nonzero_y if npu_zero else stats.nonzero_x
    largest = stats.max_abs_y if npu_zero else stats.max_abs_x
    if npu_zero:
        text = (f"the NPU tensor is all zero but the reference is not ({nonzero} non-zero, "
                f"max |reference| {largest:.6g})")
    else:
        text = f"the reference is all zero but the NPU tensor is not ({nonzero} non-zero, max |NPU| {largest:.6g})"
    if largest <= tolerance.atol:
        text += f"; all within atol {tolerance.atol:g}"
    return text


def _percent(share: float) -> str:
    return f"{100 * share:.3g}%"


def _gates(cosine, threshold, mismatch: int, n: int, tolerance: Tolerance):
    """PASS when both gates hold; the reason names both gates on a pass and only the failing ones on a fail."""
    close_ok = (n - mismatch) / n >= tolerance.min_ratio - 1e-12
    cosine_ok = threshold is None or (cosine is not None and cosine >= threshold)
    ok = close_ok and cosine_ok
    parts = []
    if threshold is not None and (ok or not cosine_ok):
        parts.append(cosine_gate_reason(cosine, threshold))
    if ok or not close_ok:
        parts.append(f"{mismatch} of {n} elements ({_percent(mismatch / n)}) outside rtol {tolerance.rtol:g}, "
                     f"atol {tolerance.atol:g} (up to {_percent(1 - tolerance.min_ratio)} allowed)")
    return (Status.PASS if ok else Status.FAIL), "; ".join(parts)
