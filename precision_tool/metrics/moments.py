"""StandardDeviation: msaccucmp's side-by-side mean and standard deviation of the two tensors."""
from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from precision_tool.metrics._common import PairData, dot
from precision_tool.metrics._docs import fill_doc

__all__ = ["MeanStd", "standard_deviation", "format_mean_std"]

#: msaccucmp prints a mean or standard deviation below this magnitude as 0 (so never "-0.000").
_PRINT_AS_ZERO_BELOW = 0.001


class MeanStd(NamedTuple):
    """Mean and population standard deviation of each side."""

    mean_x: float
    std_x: float
    mean_y: float
    std_y: float


@fill_doc
def standard_deviation(x, y) -> MeanStd:
    r"""Mean and population standard deviation of each tensor (msaccucmp's ``StandardDeviation``).

    .. math::

        \mu_x = \frac{1}{N}\sum_i x_i, \quad \sigma_x = \sqrt{\frac{1}{N}\sum_i (x_i - \mu_x)^2},
        \quad \text{likewise } \mu_y, \sigma_y

    Parameters
    ----------
    {params}

    Returns
    -------
    MeanStd
        ``(mean_x, std_x, mean_y, std_y)``. Not an error measure: read it side by side.
        :func:`format_mean_std` writes it as msaccucmp's CSV does, ``"(mean_x;std_x),(mean_y;std_y)"``.

    {raises}

    Notes
    -----
    The denominator is N (``ddof=0``), as in msaccucmp, which also accumulates in float64. Empty inputs give
    four ``nan``. Zero references need no care.
    {nonfinite}

    Examples
    --------
    >>> standard_deviation([1.0, 3.0], [2.0, 2.0])
    MeanStd(mean_x=2.0, std_x=1.0, mean_y=2.0, std_y=0.0)
    >>> format_mean_std(standard_deviation([1.0, 3.0], [-0.0004, 0.0004]))
    '(2.000;1.000),(0.000;0.000)'
    """
    return _standard_deviation(PairData(x, y))


def format_mean_std(value: MeanStd) -> str:
    """``"(mean_x;std_x),(mean_y;std_y)"`` with 3 decimals; magnitudes below 0.001 print as ``0.000``.

    This is msaccucmp's StandardDeviation cell, character for character (``nan`` and ``inf`` as Python
    prints them).
    """
    shown = [0.0 if abs(v) < _PRINT_AS_ZERO_BELOW else v for v in value]
    return "(%.3f;%.3f),(%.3f;%.3f)" % tuple(shown)


def _mean_std(values: np.ndarray, total: float, work: np.ndarray):
    """Two-pass mean and population standard deviation, the deviations written into ``work``.

    The mean is ``total / N`` with ``total`` the sum :class:`PairData` shares (``np.mean``'s own arithmetic,
    without a pass of its own).
    """
    if values.size == 0:
        return math.nan, math.nan
    mean = total / values.size
    deviation = np.subtract(values, mean, out=work)
    return mean, math.sqrt(dot(deviation, deviation) / values.size)


def _standard_deviation(pair: PairData) -> MeanStd:
    sum_x, sum_y = pair.sums
    mean_x, std_x = _mean_std(pair.x, sum_x, pair.scratch(0))
    mean_y, std_y = _mean_std(pair.y, sum_y, pair.scratch(0))
    return MeanStd(mean_x, std_x, mean_y, std_y)
