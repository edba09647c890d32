"""Where the errors are: the N worst elements and a histogram of errors, for reports. Pure functions.

The error of a pair is ``|x - y|`` (``"abs"``) or ``|x - y| / |y|`` (``"rel"``; over a zero reference 0 for
equal values and ``inf`` otherwise: :func:`~precision_tool.metrics.rounding.relative_error`, the one rule). A
pair that disagrees about being finite (NaN against a number, +inf against -inf, ...) has error ``inf``, so it
ranks first; pairs that agree (NaN and NaN, +inf and +inf) have error 0.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import List, Optional, Sequence, Tuple

import numpy as np

from precision_tool.errors import MetricInputError
from precision_tool.metrics.rounding import relative_error

__all__ = ["ElementError", "ErrorHistogram", "element_errors", "worst_elements", "error_histogram",
           "DEFAULT_REL_EDGES"]

#: Decades of relative error, 1e-6 to 1: the bins of :func:`error_histogram` by default.
DEFAULT_REL_EDGES: Tuple[float, ...] = (0.0, 1e-6, 1e-5, 1e-4, 1e-3, 1e-2, 1e-1, 1.0, np.inf)


@dataclass(frozen=True)
class ElementError:
    """One element: position (flat and in the NPU shape), both values, and its errors: ``abs_error`` is
    ``|npu - reference|``, ``rel_error`` :func:`~precision_tool.metrics.rounding.relative_error` of it (``inf``
    over a zero reference). The worst element of a comparison and the worst elements ``cp`` lists are both this."""

    flat_index: int
    index: Tuple[int, ...]
    npu: float
    reference: float
    abs_error: float
    rel_error: float

    @classmethod
    def of(cls, flat_index: int, shape: Sequence[int], npu: float, reference: float,
           abs_error: Optional[float] = None) -> "ElementError":
        """The element at ``flat_index`` of a tensor of ``shape`` (C order; ``()`` for a scalar), its errors
        computed from the two values unless ``abs_error`` is given."""
        error = abs(npu - reference) if abs_error is None else abs_error
        return cls(flat_index, _unravel(flat_index, shape), npu, reference, error, relative_error(error, reference))


def _unravel(flat: int, shape: Sequence[int]) -> Tuple[int, ...]:
    """The C-order index of flat position ``flat`` in ``shape`` (``np.unravel_index`` in Python integers: no
    array is made for one element); ``()`` for a scalar's shape.

    >>> _unravel(23, (2, 3, 4)), _unravel(0, ())
    ((1, 2, 3), ())
    """
    index = []
    for dim in reversed(shape):
        flat, position = divmod(flat, dim)
        index.append(position)
    return tuple(reversed(index))


@dataclass(frozen=True)
class ErrorHistogram:
    """``counts[i]`` errors fell in ``[edges[i], edges[i+1])`` (the last bin includes its right edge)."""

    kind: str
    edges: Tuple[float, ...]
    counts: Tuple[int, ...]


#: Elements per chunk of :func:`worst_elements` (8 MiB of float64 errors).
CHUNK = 1 << 20


def _check_pair(x: np.ndarray, y: np.ndarray) -> None:
    if x.size != y.size:
        raise MetricInputError(f"Tensors differ in size: NPU {x.size}, reference {y.size}.")
    if x.dtype.kind not in "fiub" or y.dtype.kind not in "fiub":
        raise MetricInputError("Only real tensors have element errors.")


def _flat_pair(npu, ref):
    x, y = np.asarray(npu), np.asarray(ref)
    _check_pair(x, y)
    return x.shape, x.reshape(-1).astype(np.float64, copy=False), y.reshape(-1).astype(np.float64, copy=False)


def element_errors(npu, ref, kind: str = "abs") -> np.ndarray:
    """Per-element error (float64, flat), as the module docstring defines it.

    >>> element_errors([1.0, np.nan, 3.0, 5.0, 0.0], [1.5, np.nan, np.inf, 0.0, 0.0], "rel").tolist()
    [0.3333333333333333, 0.0, inf, inf, 0.0]
    """
    if kind not in ("abs", "rel"):
        raise MetricInputError(f"Unknown error kind {kind!r}.", "use 'abs' or 'rel'")
    _, x, y = _flat_pair(npu, ref)
    with np.errstate(invalid="ignore", over="ignore"):
        error = np.abs(x - y)
        if kind == "rel":  # relative_error, element-wise
            ref_abs = np.abs(y)
            nonzero = ref_abs > 0
            np.divide(error, ref_abs, out=error, where=nonzero)
            error[~nonzero & (error > 0)] = np.inf
    bad = ~np.isfinite(error) & ~(np.isnan(error) & np.isfinite(x) & np.isfinite(y))
    if bad.any():
        agree = (np.isnan(x) & np.isnan(y)) | (np.isinf(x) & (x == y))
        error[bad] = np.where(agree[bad], 0.0, np.inf)
    return error


def worst_elements(npu, ref, count: int = 10, kind: str = "abs") -> Tuple[ElementError, ...]:
    """The ``count`` elements with the largest error, worst first (ties: lower index first).

    Streamed: the errors are computed :data:`CHUNK` elements at a time, each chunk's ``count`` worst kept
    (``np.argpartition``, then the lowest indices among the elements tied at the boundary), so the cost is linear
    in the tensor size and the memory fixed -- a 100M-element pair is not copied to float64 whole.

    >>> [e.flat_index for e in worst_elements([[1.0, 2.0], [3.0, 4.0]], [[1.0, 2.5], [0.0, 4.1]], 2)]
    [2, 1]
    >>> worst_elements([[1.0, 2.0], [3.0, 4.0]], [[1.0, 2.5], [0.0, 4.1]], 1)[0].index
    (1, 0)
    >>> [e.flat_index for e in worst_elements([5.0, 1.0, 5.0, 1.0], [1.0, 0.0, 1.0, 0.0], 3)]  # ties: lower first
    [0, 2, 1]
    """
    if kind not in ("abs", "rel"):
        raise MetricInputError(f"Unknown error kind {kind!r}.", "use 'abs' or 'rel'")
    x_in, y_in = np.asarray(npu), np.asarray(ref)
    _check_pair(x_in, y_in)
    shape, x, y = x_in.shape, x_in.reshape(-1), y_in.reshape(-1)
    count = max(0, int(count))
    kept_errors: List[np.ndarray] = []
    kept_indices: List[np.ndarray] = []
    for start in range(0, x.size if count else 0, CHUNK):
        ranked = element_errors(x[start:start + CHUNK], y[start:start + CHUNK], kind)
        top = _top_indices(ranked, count)
        kept_errors.append(ranked[top])
        kept_indices.append(top + start)
    if not kept_indices:
        return ()
    errors, indices = np.concatenate(kept_errors), np.concatenate(kept_indices)
    top = indices[np.lexsort((indices, -errors))][:count]
    xs, ys = x[top].astype(np.float64), y[top].astype(np.float64)
    abs_error, rel_error = element_errors(xs, ys, "abs"), element_errors(xs, ys, "rel")
    return tuple(ElementError(flat, _unravel(flat, shape), float(xs[k]), float(ys[k]), float(abs_error[k]),
                              float(rel_error[k])) for k, flat in enumerate(top.tolist()))


def _top_indices(ranked: np.ndarray, count: int) -> np.ndarray:
    """Indices of the ``count`` largest non-negative values of ``ranked`` (fewer when fewer are non-negative): every
    value above the ``count``-th largest, then the lowest indices among those equal to it."""
    ranked_count = int(np.count_nonzero(ranked >= 0))
    count = min(count, ranked_count)
    if count == 0:
        return np.zeros(0, np.intp)
    boundary = -np.partition(-ranked, count - 1)[count - 1]
    above = np.flatnonzero(ranked > boundary)
    tied = np.flatnonzero(ranked == boundary)[:count - above.size]
    return np.concatenate((above, tied))


def error_histogram(npu, ref, kind: str = "rel", edges: Optional[Sequence[float]] = None) -> ErrorHistogram:
    """Count errors per bin; default bins are :data:`DEFAULT_REL_EDGES` (decades from 1e-6 to 1, then inf).

    >>> error_histogram([1.0, 2.0, 3.0, 1.0], [1.0, 2.2, 0.0, 1.0005]).counts  # 3 over 0: inf, the last bin
    (1, 0, 0, 1, 0, 1, 0, 1)
    """
    edges = tuple(float(e) for e in (DEFAULT_REL_EDGES if edges is None else edges))
    if len(edges) < 2 or any(b <= a for a, b in zip(edges, edges[1:])):
        raise MetricInputError(f"Histogram edges must increase: {edges}.")
    counts, _ = np.histogram(element_errors(npu, ref, kind), bins=np.asarray(edges))
    return ErrorHistogram(kind=kind, edges=edges, counts=tuple(int(c) for c in counts))
