"""Absolute-error metrics: MaxAbsoluteError, MeanAbsoluteError, RootMeanSquareError (msaccucmp's names)."""
from __future__ import annotations

import math


from precision_tool.metrics.pair_stats import PairStats, metric_over
from precision_tool.metrics._docs import fill_doc

__all__ = ["max_absolute_error", "mean_absolute_error", "root_mean_square_error"]


@fill_doc
def max_absolute_error(x, y) -> float:
    r"""Largest absolute difference (msaccucmp's ``MaxAbsoluteError``).

    .. math::

        \mathrm{MaxAE} = \max_i |x_i - y_i|

    Parameters
    ----------
    {params}

    Returns
    -------
    float
        The largest ``|x_i - y_i|``, ``>= 0``.

    {raises}

    Notes
    -----
    Empty inputs give ``nan`` (msaccucmp fails inside numpy and writes ``NaN``). Zero references need no care.
    {nonfinite}
    {precision}

    Examples
    --------
    >>> max_absolute_error([1.0, 2.0, 3.0], [1.0, 2.5, 2.0])
    1.0
    """
    return metric_over(_max_absolute_error, x, y)


@fill_doc
def mean_absolute_error(x, y) -> float:
    r"""Mean absolute difference (msaccucmp's ``MeanAbsoluteError``).

    .. math::

        \mathrm{MeanAE} = \frac{1}{N} \sum_{i=1}^{N} |x_i - y_i|

    Parameters
    ----------
    {params}

    Returns
    -------
    float
        The mean of ``|x_i - y_i|``, ``>= 0``.

    {raises}

    Notes
    -----
    Empty inputs give ``nan`` (no mean of nothing). Zero references need no care.
    {nonfinite}
    {precision}

    Examples
    --------
    >>> mean_absolute_error([1.0, 2.0, 3.0], [1.0, 2.5, 2.0])
    0.5
    """
    return metric_over(_mean_absolute_error, x, y)


@fill_doc
def root_mean_square_error(x, y) -> float:
    r"""Root of the mean squared difference (msaccucmp's ``RootMeanSquareError``).

    .. math::

        \mathrm{RMSE} = \sqrt{\frac{1}{N} \sum_{i=1}^{N} (x_i - y_i)^2}
                      = \frac{\lVert x - y \rVert_2}{\sqrt{N}}

    Parameters
    ----------
    {params}

    Returns
    -------
    float
        The RMSE, ``>= 0``; always between :func:`mean_absolute_error` and :func:`max_absolute_error`.

    {raises}

    Notes
    -----
    Empty inputs give ``nan``. Zero references need no care. The norm is scaled when needed, so differences
    beyond 1e154 do not overflow (msaccucmp squares in float32 and overflows above about 1.8e19).
    {nonfinite}
    {precision}

    Examples
    --------
    >>> root_mean_square_error([0.0, 0.0, 0.0, 0.0], [1.0, -1.0, 1.0, -1.0])
    1.0
    >>> root_mean_square_error([3.0, 0.0], [0.0, 4.0])  # 5 / sqrt(2)
    3.5355339059327373
    """
    return metric_over(_root_mean_square_error, x, y)


def _max_absolute_error(stats: PairStats) -> float:
    return stats.max_ad if stats.n else math.nan


def _mean_absolute_error(stats: PairStats) -> float:
    return stats.sum_ad / stats.n if stats.n else math.nan


def _root_mean_square_error(stats: PairStats) -> float:
    return stats.norm_d / math.sqrt(stats.n) if stats.n else math.nan
