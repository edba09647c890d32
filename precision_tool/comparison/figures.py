"""The figures of one result row that the judgment reads, each ``None`` when the row does not have it: the
reference's rms, the absolute and relative errors, the element count. One place, so the noise rule, the error jump
and the underflow rule read a row the same way.

``reference_rms`` is ``sqrt(mean_y^2 + std_y^2)`` from the StandardDeviation metric (population statistics), exact
-- unknown for a row read from a CSV alone, which prints it to 3 decimals (``PrintedMeanStd``);
``rmse`` and ``red`` are the metrics; an ``EMPTY`` or ``BOTH_ZERO`` row carries no error (0).
"""
from __future__ import annotations

import math
from typing import Optional

from precision_tool.metrics.moments import PrintedMeanStd
from precision_tool.status import Status

_STD = "StandardDeviation"
_RMSE = "RootMeanSquareError"
_RED = "RelativeEuclideanDistance"
_NO_ERROR = (Status.EMPTY, Status.BOTH_ZERO)


def reference_rms(row) -> Optional[float]:
    """``sqrt(mean_y^2 + std_y^2)`` of a compared row, ``None`` when unknown."""
    value = row.metric(_STD) if row.compared else None
    if value is None or isinstance(value, PrintedMeanStd):
        return None
    mean, std = float(value[2]), float(value[3])
    rms = math.sqrt(mean * mean + std * std)
    return rms if math.isfinite(rms) else None


def rmse(row) -> Optional[float]:
    """The row's RMSE against the reference; 0 for a row that carries no error."""
    if row.status in _NO_ERROR:
        return 0.0
    value = row.metric(_RMSE) if row.compared else None
    return value if isinstance(value, float) and math.isfinite(value) else None


def red(row) -> Optional[float]:
    """The row's relative distance ``||npu - ref|| / ||ref||`` (over its finite elements); 0 for ``EMPTY`` (no
    element, or only NaN/inf matching the reference's)."""
    if row.status is Status.EMPTY:
        return 0.0
    value = row.metric(_RED) if row.compared else None
    return value if isinstance(value, float) and not math.isnan(value) else None


def npu_rms(row) -> Optional[float]:
    """``sqrt(mean_x^2 + std_x^2)``: the NPU side's rms, as :func:`reference_rms`."""
    value = row.metric(_STD) if row.compared else None
    if value is None or isinstance(value, PrintedMeanStd):
        return None
    rms = math.sqrt(float(value[0]) ** 2 + float(value[1]) ** 2)
    return rms if math.isfinite(rms) else None


def element_count(row) -> Optional[int]:
    """The NPU tensor's element count from its shape, ``None`` when the shape is unknown."""
    if row.shape is None:
        return None
    count = 1
    for dim in row.shape:
        count *= int(dim)
    return count
