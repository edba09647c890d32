"""StandardDeviation: msaccucmp's side-by-side mean and standard deviation of the two tensors."""
from __future__ import annotations

import math
from typing import NamedTuple


from precision_tool.metrics.pair_stats import PairStats, pair_stats
from precision_tool.metrics._docs import fill_doc

__all__ = ["MeanStd", "PrintedMeanStd", "standard_deviation", "format_mean_std"]

#: msaccucmp prints a mean or standard deviation below this magnitude as 0 (so never "-0.000").
_PRINT_AS_ZERO_BELOW = 0.001


class MeanStd(NamedTuple):
    """Mean and population standard deviation of each side."""

    mean_x: float
    std_x: float
    mean_y: float
    std_y: float


class PrintedMeanStd(MeanStd):
    """A :class:`MeanStd` read back from a CSV cell, printed to 3 decimals (:func:`format_mean_std`): fit to show,
    not to judge by -- a standard deviation of 2e-8 reads as 0."""

    __slots__ = ()


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
    stats = pair_stats(x, y)
    if stats.n != stats.total:  # NaN/inf present: as every public metric function
        return MeanStd(math.nan, math.nan, math.nan, math.nan)
    return _standard_deviation(stats)


def format_mean_std(value: MeanStd) -> str:
    """``"(mean_x;std_x),(mean_y;std_y)"`` with 3 decimals; magnitudes below 0.001 print as ``0.000``.

    This is msaccucmp's StandardDeviation cell, character for character (``nan`` and ``inf`` as Python
    prints them).
    """
    shown = [0.0 if abs(v) < _PRINT_AS_ZERO_BELOW else v for v in value]
    return "(%.3f;%.3f),(%.3f;%.3f)" % tuple(shown)


def _standard_deviation(stats: PairStats) -> MeanStd:
    """Means ``sum / m`` and population standard deviations ``sqrt(sum((v - mean)^2) / m)`` (two-pass, as
    ``np.std``); nan for no pairs."""
    m = stats.n
    if not m:
        return MeanStd(math.nan, math.nan, math.nan, math.nan)
    return MeanStd(stats.sum_x / m, math.sqrt(stats.dev_xx / m), stats.sum_y / m, math.sqrt(stats.dev_yy / m))
