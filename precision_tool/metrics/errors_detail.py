"""Where the errors are: the N worst elements and a histogram of errors, for reports. Pure functions.

The error of a pair is ``|x - y|`` (``"abs"``) or ``|x - y| / |y|`` (``"rel"``, defined only where
``|y| > 2.22e-16``). A pair that disagrees about being finite (NaN against a number, +inf against -inf, ...)
has error ``inf``, so it ranks first; pairs that agree (NaN and NaN, +inf and +inf) have error 0.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Sequence, Tuple

import numpy as np

from precision_tool.errors import MetricInputError
from precision_tool.metrics._common import ZERO_REFERENCE_EPS

__all__ = ["ElementError", "ErrorHistogram", "element_errors", "worst_elements", "error_histogram",
           "DEFAULT_REL_EDGES"]

#: Decades of relative error, 1e-6 to 1: the bins of :func:`error_histogram` by default.
DEFAULT_REL_EDGES: Tuple[float, ...] = (0.0, 1e-6, 1e-5, 1e-4, 1e-3, 1e-2, 1e-1, 1.0, np.inf)


@dataclass(frozen=True)
class ElementError:
    """One element: position (flat and in the NPU shape), both values, and its errors."""

    flat_index: int
    index: Tuple[int, ...]
    npu: float
    reference: float
    abs_error: float
    rel_error: Optional[float]


@dataclass(frozen=True)
class ErrorHistogram:
    """``counts[i]`` errors fell in ``[edges[i], edges[i+1])`` (the last bin includes its right edge).

    ``left_out`` counts the pairs not binned: no relative error (zero reference) for ``"rel"``.
    """

    kind: str
    edges: Tuple[float, ...]
    counts: Tuple[int, ...]
    left_out: int


def _flat_pair(npu, ref):
    x, y = np.asarray(npu), np.asarray(ref)
    if x.size != y.size:
        raise MetricInputError(f"Tensors differ in size: NPU {x.size}, reference {y.size}.")
    if x.dtype.kind not in "fiub" or y.dtype.kind not in "fiub":
        raise MetricInputError("Only real tensors have element errors.")
    return x.shape, x.reshape(-1).astype(np.float64, copy=False), y.reshape(-1).astype(np.float64, copy=False)


def element_errors(npu, ref, kind: str = "abs") -> np.ndarray:
    """Per-element error (float64, flat), as the module docstring defines it; ``nan`` marks a relative error
    that is undefined (zero reference).

    >>> element_errors([1.0, np.nan, 3.0, 5.0], [1.5, np.nan, np.inf, 0.0], "rel").tolist()
    [0.3333333333333333, 0.0, inf, nan]
    """
    if kind not in ("abs", "rel"):
        raise MetricInputError(f"Unknown error kind {kind!r}.", "use 'abs' or 'rel'")
    _, x, y = _flat_pair(npu, ref)
    with np.errstate(invalid="ignore", over="ignore"):
        error = np.abs(x - y)
        if kind == "rel":
            ref_abs = np.abs(y)
            nonzero = ref_abs > ZERO_REFERENCE_EPS
            np.divide(error, ref_abs, out=error, where=nonzero)
            error[~nonzero & np.isfinite(x) & np.isfinite(y)] = np.nan
    bad = ~np.isfinite(error) & ~(np.isnan(error) & np.isfinite(x) & np.isfinite(y))
    if bad.any():
        agree = (np.isnan(x) & np.isnan(y)) | (np.isinf(x) & (x == y))
        error[bad] = np.where(agree[bad], 0.0, np.inf)
    return error


def worst_elements(npu, ref, count: int = 10, kind: str = "abs") -> Tuple[ElementError, ...]:
    """The ``count`` elements with the largest error, worst first (ties: lower index first).

    Uses ``np.argpartition``, so the cost is linear in the tensor size. Elements with an undefined relative
    error are not ranked by ``"rel"``.

    >>> [e.flat_index for e in worst_elements([[1.0, 2.0], [3.0, 4.0]], [[1.0, 2.5], [0.0, 4.1]], 2)]
    [2, 1]
    >>> worst_elements([[1.0, 2.0], [3.0, 4.0]], [[1.0, 2.5], [0.0, 4.1]], 1)[0].index
    (1, 0)
    """
    shape, x, y = _flat_pair(npu, ref)
    error = element_errors(npu, ref, kind)
    ranked = np.where(np.isnan(error), -1.0, error)
    count = max(0, min(int(count), int(np.count_nonzero(ranked >= 0))))
    if count == 0:
        return ()
    top = np.argpartition(-ranked, count - 1)[:count] if count < ranked.size else np.arange(ranked.size)
    top = top[np.lexsort((top, -ranked[top]))][:count]
    abs_error = error[top] if kind == "abs" else element_errors(x[top], y[top], "abs")
    rel_error = error[top] if kind == "rel" else element_errors(x[top], y[top], "rel")
    out = []
    for k, flat in enumerate(top.tolist()):
        rel = None if np.isnan(rel_error[k]) else float(rel_error[k])
        index = tuple(int(i) for i in np.unravel_index(flat, shape)) if shape else ()
        out.append(ElementError(flat_index=flat, index=index, npu=float(x[flat]), reference=float(y[flat]),
                                abs_error=float(abs_error[k]), rel_error=rel))
    return tuple(out)


def error_histogram(npu, ref, kind: str = "rel", edges: Optional[Sequence[float]] = None) -> ErrorHistogram:
    """Count errors per bin; default bins are :data:`DEFAULT_REL_EDGES` (decades from 1e-6 to 1, then inf).

    >>> h = error_histogram([1.0, 2.0, 3.0, 1.0], [1.0, 2.2, 0.0, 1.0005])
    >>> h.counts, h.left_out
    ((1, 0, 0, 1, 0, 1, 0, 0), 1)
    """
    edges = tuple(float(e) for e in (DEFAULT_REL_EDGES if edges is None else edges))
    if len(edges) < 2 or any(b <= a for a, b in zip(edges, edges[1:])):
        raise MetricInputError(f"Histogram edges must increase: {edges}.")
    error = element_errors(npu, ref, kind)
    defined = error[~np.isnan(error)]
    counts, _ = np.histogram(defined, bins=np.asarray(edges))
    return ErrorHistogram(kind=kind, edges=edges, counts=tuple(int(c) for c in counts),
                          left_out=int(error.size - defined.size))
