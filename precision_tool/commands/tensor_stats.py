"""Summaries and text of one array for the inspection commands: min/max/mean over the finite values,
inf/NaN counts, and the values printed to fit the terminal.

>>> stats = tensor_stats(np.array([1.0, np.nan, 3.0, np.inf], dtype=np.float32))
>>> stats.cells()
['1', '3', '2', '1', '1']
"""
from __future__ import annotations

import shutil
from dataclasses import dataclass
from typing import List, Optional, Tuple

import numpy as np

STATS_HEADERS = ("min", "max", "mean", "inf", "nan")
_CELL_WIDTH = 11  # rough width numpy gives one printed float, separator included


@dataclass(frozen=True)
class TensorStats:
    """Statistics of one array. ``min``/``max``/``mean`` are over the finite values (``None`` when there
    are none or the dtype is not numeric); ``inf`` counts both signs."""

    size: int
    min: Optional[float]
    max: Optional[float]
    mean: Optional[float]
    inf: int = 0
    nan: int = 0

    def cells(self, float_format: str = ".6g") -> List[str]:
        """``[min, max, mean, inf, nan]`` as text, ``-`` for what is undefined."""
        def text(value):
            return "-" if value is None else format(value, float_format)
        return [text(self.min), text(self.max), text(self.mean), str(self.inf), str(self.nan)]

    def to_dict(self) -> dict:
        return {"size": self.size, "min": self.min, "max": self.max, "mean": self.mean, "inf": self.inf,
                "nan": self.nan}


def tensor_stats(array) -> TensorStats:
    """Statistics of ``array`` (any shape); complex values are summarised by magnitude."""
    values = np.asarray(array)
    if values.dtype.kind == "c":
        values = np.abs(values)
    if values.dtype.kind not in "fiub" or values.size == 0:
        return TensorStats(int(values.size), None, None, None)
    values = values.reshape(-1)
    if values.dtype.kind == "f":
        finite_mask = np.isfinite(values)
        inf = int(np.isinf(values).sum())
        nan = int(np.isnan(values).sum())
        finite = values[finite_mask] if (inf or nan) else values
    else:
        finite, inf, nan = values, 0, 0
    if finite.size == 0:
        return TensorStats(int(values.size), None, None, None, inf, nan)
    return TensorStats(int(values.size), float(finite.min()), float(finite.max()),
                       float(finite.astype(np.float64).mean()), inf, nan)


def terminal_size(ctx=None) -> Tuple[int, int]:
    """``(columns, lines)``: what the shell put in ``ctx.extras["terminal_size"]``, else the terminal's."""
    if ctx is not None and ctx.extras.get("terminal_size"):
        return tuple(ctx.extras["terminal_size"])
    size = shutil.get_terminal_size((100, 40))
    return size.columns, size.lines


def array_text(array, columns: int = 100, lines: int = 40) -> str:
    """``np.array2string`` of ``array`` sized to a ``columns`` x ``lines`` screen: printed whole when it
    fits in about one screen, else summarised with ``...`` (numpy's threshold and edge items)."""
    values = np.asarray(array)
    per_line = max(1, (columns - 2) // _CELL_WIDTH)
    threshold = max(16, per_line * max(4, lines - 8))
    edgeitems = max(2, min(5, (per_line - 1) // 2))
    return np.array2string(values, max_line_width=max(40, columns - 1), threshold=threshold, edgeitems=edgeitems,
                           separator=" ", precision=6, suppress_small=False)
