r"""Every sum the ten metrics need, gathered in two passes over a pair of tensors, chunk by chunk.

A pair is read as stored (float16, float32, ...) and summed in chunks, so a pair of any size is compared in a fixed
amount of memory, each chunk read once per pass. Over the pairs finite on both sides, pass 1 gathers the sums,
extremes, relative-error and allclose counts and the NaN/inf classes; pass 2, which needs pass 1's means and ranges,
the two-pass variances and the Kullback-Leibler sums; a third pass only for values beyond about 1e140 or below
1e-140. The metrics and the verdict are formulas over the resulting :class:`PairStats`. The passes run in the C
extension ``_pairstats`` when it is built, else in numpy (tested to agree to 1e-12); :data:`KERNEL` says which.
Every sum of each pass: docs/internals/metrics.md#two-passes.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Iterable, Iterator, Optional, Tuple

import numpy as np

from precision_tool.metrics._common import KL_FLOOR, ZERO_REFERENCE_EPS, validate_pair

try:
    from precision_tool.metrics import _pairstats  # type: ignore[attr-defined]
except ImportError:  # not built (no C compiler at install): the numpy passes below
    _pairstats = None

#: ``"C (avx512)"`` (the instruction set the compiled passes use: ``avx512``, ``avx2`` or ``baseline``) when the
#: extension is built, ``"numpy"`` otherwise.
KERNEL = f"C ({_pairstats.isas()[0]})" if _pairstats is not None else "numpy"

#: Elements per chunk: 4 MiB of float64 per side in the numpy passes, and the unit of reading.
CHUNK = 1 << 19

FINITE, NAN, POSINF, NEGINF = range(4)
_SAFE_LOW, _SAFE_HIGH = 1e-280, 1e280
_KERNEL_KINDS = (np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.float64))

#: A pair source: a callable giving the aligned chunks ``(x, y)`` (flat, equal lengths, in element order) from
#: the start each time it is called -- the passes call it once each.
Chunks = Callable[[], Iterable[Tuple[np.ndarray, np.ndarray]]]


@dataclass
class PairStats:
    """The sums of both passes (docs/internals/metrics.md#two-passes). Counts are ints; sums are float64 as Python
    floats.

    ``classes[4 * cx + cy]`` counts pairs whose x has class ``cx`` and y class ``cy`` (:data:`FINITE`, :data:`NAN`,
    :data:`POSINF`, :data:`NEGINF`); ``worst`` is the flat position (in the whole tensor) of the first finite
    pair with the largest ``|d|``, -1 when no pair is finite. ``min_*``/``max_*`` are over finite pairs
    (+inf/-inf when none). Norm fields are filled by :meth:`finish`.
    """

    classes: Tuple[int, ...] = (0,) * 16
    sum_x: float = 0.0
    sum_y: float = 0.0
    sum_xx: float = 0.0
    sum_yy: float = 0.0
    sum_xy: float = 0.0
    sum_dd: float = 0.0
    sum_ad: float = 0.0
    max_ad: float = -math.inf
    worst: int = -1
    worst_x: float = 0.0
    worst_y: float = 0.0
    min_x: float = math.inf
    max_x: float = -math.inf
    min_y: float = math.inf
    max_y: float = -math.inf
    nonzero_x: int = 0
    nonzero_y: int = 0
    rel_count: int = 0
    rel_sum: float = 0.0
    rel_max: float = 0.0
    close: int = 0
    # pass 2
    dev_xx: float = 0.0
    dev_yy: float = 0.0
    kl_sum: float = 0.0
    kl_tp: float = 0.0
    kl_tq: float = 0.0
    # norms (finish)
    norm_x: float = 0.0
    norm_y: float = 0.0
    norm_d: float = 0.0
    cosine_dot: float = 0.0  # sum(x y) / (norm_x norm_y) before clamping; nan when a norm is 0 or inf

    # ------------------------------------------------------------------ derived counts
    @property
    def n(self) -> int:
        """Pairs finite on both sides: what every metric is computed over."""
        return self.classes[0]

    @property
    def total(self) -> int:
        return sum(self.classes)

    def count(self, x_class: Optional[int] = None, y_class: Optional[int] = None) -> int:
        """Pairs with x of ``x_class`` and y of ``y_class`` (None: any)."""
        xs = range(4) if x_class is None else (x_class,)
        ys = range(4) if y_class is None else (y_class,)
        return sum(self.classes[4 * i + j] for i in xs for j in ys)

    @property
    def nonfinite_close(self) -> int:
        """NaN on both sides, or the same infinity on both sides: what ``isclose(equal_nan=True)`` calls close."""
        return self.classes[4 * NAN + NAN] + self.classes[4 * POSINF + POSINF] + self.classes[4 * NEGINF + NEGINF]

    @property
    def max_abs_x(self) -> float:
        return max(abs(self.min_x), abs(self.max_x)) if self.n else 0.0

    @property
    def max_abs_y(self) -> float:
        return max(abs(self.min_y), abs(self.max_y)) if self.n else 0.0


def same_bytes(a, b) -> bool:
    """Whether two contiguous buffers hold the same bytes: one ``memcmp`` in the extension (Python compares two
    memoryviews item by item), else numpy. For the comparator's check that an input is its producer's output."""
    if _pairstats is not None:
        return bool(_pairstats.same_bytes(a, b))
    a, b = memoryview(a).cast("B"), memoryview(b).cast("B")
    return len(a) == len(b) and bool(np.array_equal(np.frombuffer(a, np.uint8), np.frombuffer(b, np.uint8)))


# --------------------------------------------------------------------------------------------- the numpy passes
def _as_float64(chunk: np.ndarray) -> np.ndarray:
    return chunk.astype(np.float64, copy=False)


def _numpy_pass1(x: np.ndarray, y: np.ndarray, rtol: float, atol: float) -> tuple:
    """Pass 1 over one chunk, in the order and meaning of the C ``pass1`` result."""
    x, y = _as_float64(x), _as_float64(y)
    fx, fy = np.isfinite(x), np.isfinite(y)
    finite = fx & fy
    classes = [0] * 16
    all_finite = bool(finite.all())
    if all_finite:
        classes[0] = x.size
    else:
        cx, cy = _classes(x, fx), _classes(y, fy)
        counts = np.bincount(4 * cx + cy, minlength=16)
        classes = [int(c) for c in counts]
        x, y = x[finite], y[finite]
    if not x.size:
        return (tuple(classes), 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, -math.inf, -1, 0.0, 0.0, math.inf, -math.inf,
                math.inf, -math.inf, 0, 0, 0, 0.0, 0.0, 0)
    with np.errstate(over="ignore", invalid="ignore"):
        d = x - y
        ad = np.abs(d)
        ay = np.abs(y)
        nonzero = ay > ZERO_REFERENCE_EPS
        r = np.divide(ad, ay, out=np.zeros_like(ad), where=nonzero)
        k = int(np.argmax(ad))
        where = k if all_finite else int(np.flatnonzero(finite)[k])
        return (tuple(classes), float(np.sum(x)), float(np.sum(y)), _dot(x, x), _dot(y, y), _dot(x, y), _dot(d, d),
                float(np.sum(ad)), float(ad[k]), where, float(x[k]), float(y[k]), float(x.min()), float(x.max()),
                float(y.min()), float(y.max()), int(np.count_nonzero(x)), int(np.count_nonzero(y)),
                int(np.count_nonzero(nonzero)), float(np.sum(r)), float(r.max()),
                int(np.count_nonzero(ad <= atol + rtol * ay)))


def _classes(values: np.ndarray, finite: np.ndarray) -> np.ndarray:
    out = np.where(finite, FINITE, NAN).astype(np.int64)
    out[values == np.inf] = POSINF
    out[values == -np.inf] = NEGINF
    return out


def _dot(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.einsum("i,i->", a, b))  # single-threaded, no BLAS (see _common.dot)


def _numpy_pass2(x, y, mean_x, mean_y, lo_x, scale_x, lo_y, scale_y, floor) -> tuple:
    x, y = _as_float64(x), _as_float64(y)
    finite = np.isfinite(x) & np.isfinite(y)
    if not finite.all():
        x, y = x[finite], y[finite]
    with np.errstate(over="ignore", invalid="ignore"):
        dx, dy = x - mean_x, y - mean_y
        p = np.maximum((x - lo_x) * scale_x, floor)
        q = np.maximum((y - lo_y) * scale_y, floor)
        return (_dot(dx, dx), _dot(dy, dy), _dot(p, np.log(p / q)), float(np.sum(p)), float(np.sum(q)))


def _kernel_ready(chunk: np.ndarray) -> np.ndarray:
    """A chunk the C passes take: contiguous float16/32/64, others widened (bf16 arrives as float32 already)."""
    if chunk.dtype not in _KERNEL_KINDS:
        chunk = chunk.astype(np.float64)
    return np.ascontiguousarray(chunk)


def _pass1(x, y, rtol, atol):
    if _pairstats is not None:
        return _pairstats.pass1(_kernel_ready(x), _kernel_ready(y), rtol, atol)
    return _numpy_pass1(x, y, rtol, atol)


def _pass2(x, y, *constants):
    if _pairstats is not None:
        return _pairstats.pass2(_kernel_ready(x), _kernel_ready(y), *constants)
    return _numpy_pass2(x, y, *constants)


# --------------------------------------------------------------------------------------------- merging
def _merge1(stats: PairStats, part: tuple, offset: int) -> None:
    (classes, sx, sy, sxx, syy, sxy, sdd, sad, max_ad, worst, wx, wy, mnx, mxx, mny, mxy, nzx, nzy, rc, rs, rm,
     close) = part
    stats.classes = tuple(a + b for a, b in zip(stats.classes, classes))
    stats.sum_x += sx
    stats.sum_y += sy
    stats.sum_xx += sxx
    stats.sum_yy += syy
    stats.sum_xy += sxy
    stats.sum_dd += sdd
    stats.sum_ad += sad
    if worst >= 0 and max_ad > stats.max_ad:  # strictly larger: the first occurrence wins, as np.argmax
        stats.max_ad, stats.worst, stats.worst_x, stats.worst_y = max_ad, offset + worst, wx, wy
    stats.min_x, stats.max_x = min(stats.min_x, mnx), max(stats.max_x, mxx)
    stats.min_y, stats.max_y = min(stats.min_y, mny), max(stats.max_y, mxy)
    stats.nonzero_x += nzx
    stats.nonzero_y += nzy
    stats.rel_count += rc
    stats.rel_sum += rs
    stats.rel_max = max(stats.rel_max, rm)
    stats.close += close


def _profile_constants(low: float, high: float) -> Tuple[float, float, bool]:
    """``(lo, scale, fast)`` for pass 2's ``max((v - lo) * scale, eps32)`` with ``scale = 1 / span``, when the
    span is of moderate size (``fast``); otherwise pass 2's KL sums are not used and :func:`_kl_slow` recomputes
    them."""
    span = high - low
    if 1e-100 < span < 1e100:
        return low, 1.0 / span, True
    return low, 1.0, False


# --------------------------------------------------------------------------------------------- the passes
def gather(chunks: Chunks, rtol: float = 0.0, atol: float = 0.0) -> PairStats:
    """Both passes (and the rare third) over the chunks; the :class:`PairStats` of the whole pair.
    ``rtol``/``atol`` set the allclose count."""
    stats = PairStats()
    offset = 0
    for x, y in chunks():
        _merge1(stats, _pass1(x, y, rtol, atol), offset)
        offset += x.size
    if stats.n:
        lo_x, scale_x, fast_x = _profile_constants(stats.min_x, stats.max_x)
        lo_y, scale_y, fast_y = _profile_constants(stats.min_y, stats.max_y)
        mean_x, mean_y = stats.sum_x / stats.n, stats.sum_y / stats.n
        sums = [0.0] * 5
        for x, y in chunks():
            for i, value in enumerate(_pass2(x, y, mean_x, mean_y, lo_x, scale_x, lo_y, scale_y, KL_FLOOR)):
                sums[i] += value
        stats.dev_xx, stats.dev_yy, stats.kl_sum, stats.kl_tp, stats.kl_tq = sums
        if not (fast_x and fast_y):
            stats.kl_sum, stats.kl_tp, stats.kl_tq = _kl_slow(chunks, stats)
    _finish_norms(stats, chunks)
    return stats


def _finish_norms(stats: PairStats, chunks: Chunks) -> None:
    """Norms and the cosine's dot product; over scaled values (a third pass) when a sum left the safe range."""
    if not stats.n:
        stats.cosine_dot = math.nan
        return
    sums = (stats.sum_xx, stats.sum_yy, stats.sum_dd)
    scales = (stats.max_abs_x, stats.max_abs_y, stats.max_ad)
    safe = all(s == scale == 0.0 or _SAFE_LOW < s < _SAFE_HIGH for s, scale in zip(sums, scales))
    if safe:
        stats.norm_x, stats.norm_y, stats.norm_d = (math.sqrt(s) for s in sums)
        xy = stats.sum_xy
    else:
        scaled = _scaled_sums(chunks, scales)
        stats.norm_x, stats.norm_y, stats.norm_d = (
            scale * math.sqrt(s) if 0.0 < scale < math.inf else scale for scale, s in zip(scales, scaled[:3]))
        xy = None  # from the scaled dot product below
    if not (stats.norm_x > 0.0 and stats.norm_y > 0.0) or math.isinf(stats.norm_x) or math.isinf(stats.norm_y):
        stats.cosine_dot = math.nan
    elif xy is not None and _SAFE_LOW < stats.norm_x * stats.norm_y < _SAFE_HIGH:
        stats.cosine_dot = xy / (stats.norm_x * stats.norm_y)
    else:  # unit vectors first: no intermediate overflows or underflows
        stats.cosine_dot = _scaled_dot(chunks, stats.norm_x, stats.norm_y)


def _finite_pairs(chunks: Chunks) -> Iterator[Tuple[np.ndarray, np.ndarray]]:
    for x, y in chunks():
        x, y = _as_float64(x), _as_float64(y)
        keep = np.isfinite(x) & np.isfinite(y)
        yield (x, y) if keep.all() else (x[keep], y[keep])


def _scaled_sums(chunks: Chunks, scales: Tuple[float, float, float]) -> Tuple[float, float, float]:
    sx, sy, sd = (s if 0.0 < s < math.inf else 1.0 for s in scales)
    totals = [0.0, 0.0, 0.0]
    with np.errstate(over="ignore", invalid="ignore"):
        for x, y in _finite_pairs(chunks):
            a, b, d = x / sx, y / sy, (x - y) / sd
            if not np.isfinite(d).all():  # x - y itself overflowed: halve first
                d = (x * 0.5 - y * 0.5) / (sd * 0.5)
            totals[0] += _dot(a, a)
            totals[1] += _dot(b, b)
            totals[2] += _dot(d, d)
    return totals[0], totals[1], totals[2]


def _scaled_dot(chunks: Chunks, norm_x: float, norm_y: float) -> float:
    return sum(_dot(x / norm_x, y / norm_y) for x, y in _finite_pairs(chunks))


def _kl_slow(chunks: Chunks, stats: PairStats) -> Tuple[float, float, float]:
    """The KL sums for spans outside (1e-100, 1e100): each side scaled to [0, 1] first (halved when the span
    overflows), clamped at eps32 -- the definition itself, with totals of the normalised profiles."""
    def profile(v: np.ndarray, low: float, high: float) -> np.ndarray:
        if math.isinf(high - low):
            v, low, high = v * 0.5, low * 0.5, high * 0.5
        span = high - low
        out = (v - low) / span if span != 0 else v.copy()
        return np.maximum(out, KL_FLOOR)

    kl = tp = tq = 0.0
    for x, y in _finite_pairs(chunks):
        p = profile(x, stats.min_x, stats.max_x)
        q = profile(y, stats.min_y, stats.max_y)
        kl += _dot(p, np.log(p / q))
        tp += float(np.sum(p))
        tq += float(np.sum(q))
    return kl, tp, tq


# --------------------------------------------------------------------------------------------- sources
def array_chunks(x: np.ndarray, y: np.ndarray, size: int = CHUNK) -> Chunks:
    """The chunk source of two in-memory arrays (flattened without copying where they are contiguous)."""
    flat_x, flat_y = np.ravel(x), np.ravel(y)

    def chunks() -> Iterator[Tuple[np.ndarray, np.ndarray]]:
        for start in range(0, flat_x.size, size):
            yield flat_x[start:start + size], flat_y[start:start + size]
    return chunks


def paired_pieces(xs: Iterable[np.ndarray], ys: Iterable[np.ndarray]) -> Iterator[Tuple[np.ndarray, np.ndarray]]:
    """Two streams of flat pieces of the same elements, cut differently (a device layout's slabs against a file
    read in fixed chunks), as aligned pairs: each yielded ``(x, y)`` has equal lengths, cut where either stream's
    piece ends. Each piece is used before the next of its stream is asked for (they may share one buffer). Raises
    ``ValueError`` when one stream ends before the other."""
    x_iter, y_iter = iter(xs), iter(ys)
    x = y = np.empty(0)
    while True:
        if not x.size:
            x = next(x_iter, None)
        if not y.size:
            y = next(y_iter, None)
        if x is None or y is None:
            if x is not None or y is not None:
                raise ValueError("the two streams of pieces hold different numbers of elements")
            return
        if not x.size or not y.size:
            continue
        n = min(x.size, y.size)
        yield x[:n], y[:n]
        x, y = x[n:], y[n:]


def pair_stats(x, y, rtol: float = 0.0, atol: float = 0.0) -> PairStats:
    """:func:`gather` over two 1-D arrays of real numbers of equal length (the public metric functions' entry);
    raises :class:`~precision_tool.errors.MetricInputError` for anything else."""
    x, y = validate_pair(x, y)
    return gather(array_chunks(x, y), rtol, atol)


def metric_over(kernel: Callable[[PairStats], float], x, y) -> float:
    """A public metric function's value: ``kernel`` over :func:`pair_stats`, or ``nan`` when any pair holds a NaN
    or an infinity (:func:`~precision_tool.metrics.tensor_verdict.compare_tensors` classifies those and measures the
    rest)."""
    stats = pair_stats(x, y)
    return kernel(stats) if stats.n == stats.total else math.nan


__all__ = ["PairStats", "KERNEL", "CHUNK", "same_bytes", "gather", "array_chunks", "paired_pieces", "pair_stats",
           "metric_over",
           "FINITE", "NAN", "POSINF", "NEGINF"]
