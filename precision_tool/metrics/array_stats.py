"""Statistics of one array, streamed: max/min/mean over the finite values, inf/NaN and fp16-saturation counts.

The one implementation behind ``dc``'s table, ``pt``/``ni``/``cp`` and the overflow checks. Saturation: an
fp16 element whose magnitude is exactly 65504 (``FP16_MAX``) -- what the NPU writes when it clamps an
overflowing result instead of writing inf (saturation mode). Only counted for float16 arrays.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import List, Optional

import numpy as np

FP16_MAX = 65504.0
CHUNK_ELEMENTS = 1 << 20
STATS_HEADERS = ("min", "max", "mean", "inf", "nan")


@dataclass(frozen=True)
class ArrayStats:
    """What :func:`array_stats` computes over one array.

    ``max``/``min``/``mean`` are over the finite values (``None`` when there are none, or the dtype is not
    numeric); ``inf`` counts both signs, ``pos_inf`` the positive ones; ``saturated`` counts fp16 elements with
    ``|x| == 65504``; ``first_non_finite_flat`` is the flat index of the first inf/NaN; ``l2norm`` is the L2 norm of
    the finite values (what a statistics dump's ``l2norm`` states).
    """

    size: int
    max: Optional[float]
    min: Optional[float]
    mean: Optional[float]
    inf: int
    nan: int
    saturated: int
    first_non_finite_flat: Optional[int]
    pos_inf: int = 0
    l2norm: Optional[float] = None

    def cells(self, float_format: str = ".6g") -> List[str]:
        """``[min, max, mean, inf, nan]`` as table text (see :data:`STATS_HEADERS`), ``-`` for undefined."""
        def text(value):
            return "-" if value is None else format(value, float_format)
        return [text(self.min), text(self.max), text(self.mean), str(self.inf), str(self.nan)]

    def to_dict(self) -> dict:
        return {"size": self.size, "min": self.min, "max": self.max, "mean": self.mean, "inf": self.inf,
                "nan": self.nan, "saturated": self.saturated, "first_non_finite_flat": self.first_non_finite_flat}


def array_stats(array: np.ndarray, l2norm: bool = False) -> ArrayStats:
    """Max/min/mean over the finite values, inf/NaN/fp16-saturation counts, first non-finite flat index.

    The array is reduced in chunks of :data:`CHUNK_ELEMENTS`, so no float64 copy of the whole tensor is made;
    the mean accumulates in float64. Integer and bool arrays have no inf/NaN; complex arrays are summarised
    by magnitude; other non-numeric arrays give ``None`` statistics. ``l2norm``: also the L2 norm (a float64
    copy of each chunk more; only statistics dumps state it).

    >>> s = array_stats(np.array([1.0, np.nan, 65504.0, -np.inf], dtype=np.float16))
    >>> (s.max, s.min, s.mean, s.inf, s.nan, s.saturated, s.first_non_finite_flat)
    (65504.0, 1.0, 32752.5, 1, 1, 1, 1)
    """
    flat = np.asarray(array).reshape(-1)
    if flat.dtype.kind == "c":
        flat = np.abs(flat)
    size = int(flat.size)
    if flat.dtype.kind not in "fiub" or size == 0:
        return ArrayStats(size, None, None, None, 0, 0, 0, None)
    is_float = flat.dtype.kind == "f"
    is_fp16 = flat.dtype == np.float16
    high = low = None
    total, squares, finite_count, inf, pos_inf, nan, saturated, first = 0.0, 0.0, 0, 0, 0, 0, 0, None
    for start in range(0, size, CHUNK_ELEMENTS):
        chunk = flat[start:start + CHUNK_ELEMENTS]
        if is_float:
            finite_mask = np.isfinite(chunk)
            n_finite = int(finite_mask.sum())
            if n_finite < chunk.size:
                nan_here = int(np.isnan(chunk).sum())
                nan += nan_here
                inf += chunk.size - n_finite - nan_here
                pos_inf += int(np.isposinf(chunk).sum())
                if first is None:
                    first = start + int(np.argmin(finite_mask))
                chunk = chunk[finite_mask]
            if is_fp16:
                saturated += int(np.count_nonzero(np.abs(chunk) == FP16_MAX))
        if chunk.size == 0:
            continue
        chunk_max, chunk_min = chunk.max(), chunk.min()
        high = chunk_max if high is None else max(high, chunk_max)
        low = chunk_min if low is None else min(low, chunk_min)
        total += float(np.sum(chunk, dtype=np.float64))
        if l2norm:
            wide = chunk.astype(np.float64)
            squares += float(np.dot(wide, wide))
        finite_count += int(chunk.size)
    if high is None or low is None:  # no finite element
        return ArrayStats(size, None, None, None, inf, nan, saturated, first, pos_inf)
    return ArrayStats(size, float(high), float(low), total / finite_count, inf, nan, saturated, first, pos_inf,
                      float(np.sqrt(squares)) if l2norm else None)
