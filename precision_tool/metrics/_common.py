"""What every metric shares: the input validator, msaccucmp's constants, and intermediates computed once.

Working precision is float64 for every metric. msaccucmp casts both tensors to float32 and does its arithmetic
there; on the tensors it handles well our numbers agree with its to about 1e-7 relative (float32 rounding), and
float64 keeps us right where float32 is not: squares of values above ~1.8e19 overflow and squares of values below
~1e-19 underflow in float32, so msaccucmp reports cosine 0 for two identical tensors of 1e20 and a relative
Euclidean distance of 0 for any reference tensor of norm below 2.2e-16. Up-casting costs one copy per side
(2 MB for 262,144 elements); everything after that is computed in place, in two reused work arrays, or by
sums of products that need no temporary.
"""
from __future__ import annotations

import math
from precision_tool.compat import cached_property
from typing import Optional, Tuple

import numpy as np

from precision_tool.errors import MetricInputError

#: ``|y| <= ZERO_REFERENCE_EPS`` counts as a zero reference: left out of relative errors.
#: It is msaccucmp's ``FLOAT_EPSILON`` (``np.finfo(float).eps``, 2.220446049250313e-16).
ZERO_REFERENCE_EPS = float(np.finfo(np.float64).eps)

#: Kullback-Leibler divergence clamps each min-max scaled value below at this (float32 machine epsilon,
#: 1.1920928955078125e-07), as msaccucmp does, so no probability is zero.
KL_FLOOR = float(np.finfo(np.float32).eps)

# Sums of squares inside this range cannot have overflowed or lost digits to underflow in float64.
_SAFE_LOW, _SAFE_HIGH = 1e-280, 1e280


def validate_pair(x, y):
    """Return ``x`` and ``y`` as 1-D float64 arrays of equal length, or raise :class:`MetricInputError`.

    Integers, booleans, float16 and float32 are widened to float64 (exact, except integers above 2**53).
    No copy is made when an input already is a float64 array.
    """
    x = _as_float64(x, "NPU (x)")
    y = _as_float64(y, "reference (y)")
    if x.shape != y.shape:
        raise MetricInputError(f"Input arrays differ in length: x has {x.size} elements, y has {y.size}.",
                               "a metric compares element by element; compare_tensors reports this case")
    return x, y


def _as_float64(values, label):
    array = np.asarray(values)
    if array.dtype.kind not in "fiub":
        raise MetricInputError(f"Input {label} should hold real numbers, not {array.dtype}.")
    if array.ndim != 1:
        raise MetricInputError(f"Input {label} should be 1-D, got shape {array.shape}.",
                               "flatten the tensors first (compare_tensors does)")
    return array.astype(np.float64, copy=False)


def dot(a: np.ndarray, b: np.ndarray) -> float:
    """Sum of ``a * b`` in float64 without a temporary and without BLAS.

    ``np.einsum`` runs a single-threaded SIMD loop; BLAS ``ddot`` spawns threads for long vectors, and on a
    busy two-core machine waiting for them costs milliseconds per call.
    """
    return float(np.einsum("i,i->", a, b))


def safe_norm(values: np.ndarray) -> float:
    """Euclidean norm in float64 without overflow or underflow (scaled by the largest magnitude if needed)."""
    sumsq = dot(values, values)
    if _SAFE_LOW < sumsq < _SAFE_HIGH or sumsq == 0.0 and not values.any():
        return math.sqrt(sumsq)
    scale = float(np.max(np.abs(values)))
    if scale == 0.0 or not np.isfinite(scale):
        return scale
    scaled = values / scale
    return scale * math.sqrt(dot(scaled, scaled))


class PairData:
    """A validated pair (x = NPU, y = reference) and the intermediates several metrics need, each made once.

    Metric kernels take a ``PairData``; the public metric functions build one per call, and
    :func:`precision_tool.metrics.registry.compute_metrics` builds one for all the metrics it computes.
    """

    def __init__(self, x, y, sums: Optional[Tuple[float, float]] = None):
        self.x, self.y = validate_pair(x, y)
        self.n = self.x.size
        if sums is not None:  # already computed by the caller (compare_tensors): not summed again
            self.__dict__["sums"] = sums

    @cached_property
    def sums(self) -> Tuple[float, float]:
        """``(sum(x), sum(y))``; the means are ``sum / n`` (what ``np.mean`` computes, bit for bit)."""
        return float(np.sum(self.x)), float(np.sum(self.y))

    @cached_property
    def abs_diff(self) -> np.ndarray:
        """``|x - y|`` (one array, computed in place)."""
        diff = np.subtract(self.x, self.y)
        return np.abs(diff, out=diff)

    @cached_property
    def _relative(self) -> Tuple[float, float, int]:
        """``(sum, max, count)`` of msaccucmp's r_i over the ``count`` non-zero references.

        The r_i are computed in scratch slot 1 and reduced at once, so no array is kept (the three relative
        metrics need only these numbers): |y| first, then the quotient in place; the mask zeroes the zero
        references. When no reference is zero (the usual case) a plain divide gives the same values: the
        masked divide and the zeroing pass are skipped.
        """
        rel = np.abs(self.y, out=self.scratch(1))
        mask = rel > ZERO_REFERENCE_EPS
        count = int(np.count_nonzero(mask))
        if not count:
            return 0.0, 0.0, 0
        with np.errstate(over="ignore"):
            if count == self.n:
                np.divide(self.abs_diff, rel, out=rel)
            else:
                np.divide(self.abs_diff, rel, out=rel, where=mask)
                rel *= mask
        return float(np.sum(rel)), float(rel.max()), count

    @property
    def relative_error_sum(self) -> float:
        """``sum(r_i)``: shared by the accumulated and the mean relative error (one pass, not two)."""
        return self._relative[0]

    @property
    def relative_error_max(self) -> float:
        """``max(r_i)`` (0 when every reference is zero)."""
        return self._relative[1]

    @property
    def nonzero_reference_count(self) -> int:
        """Number of ``|y| > ZERO_REFERENCE_EPS``: the elements relative errors are defined for."""
        return self._relative[2]

    def scratch(self, slot: int = 0) -> np.ndarray:
        """A float64 work array of length N that a kernel may overwrite (``slot`` 0 or 1).

        Its contents are only valid inside the kernel that wrote them. Reusing two buffers instead of making
        temporaries keeps all ten metrics to six arrays of N doubles; fresh large arrays cost page faults.
        """
        buffers = self.__dict__.setdefault("_scratch", {})
        if slot not in buffers:
            buffers[slot] = np.empty(self.n)
        return buffers[slot]

    @cached_property
    def norm_x(self) -> float:
        return safe_norm(self.x)

    @cached_property
    def norm_y(self) -> float:
        return safe_norm(self.y)

    @cached_property
    def norm_diff(self) -> float:
        return safe_norm(self.abs_diff)
