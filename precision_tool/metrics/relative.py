r"""Relative-error metrics: AccumulatedRelativeError, MaxRelativeError, MeanRelativeError and
RelativeEuclideanDistance (msaccucmp's names and definitions).

The per-element relative error is msaccucmp's :math:`r_i = |x_i - y_i| / |y_i|` where :math:`|y_i| > 2.22 \times
10^{-16}`, else 0: a zero reference adds nothing to a sum, 0 to a maximum, and still counts in a mean's N. When *no*
element has a non-zero reference, the tool's one rule applies instead
(:func:`~precision_tool.metrics.rounding.relative_error`: 0 for identical tensors, ``inf`` otherwise, where
msaccucmp writes 0), and so it does for RelativeEuclideanDistance over an all-zero reference. Empty inputs give
``nan``. See docs/internals/metrics.md#relative-errors.
"""
from __future__ import annotations

import math

from precision_tool.metrics.pair_stats import PairStats, metric_over
from precision_tool.metrics.rounding import relative_error
from precision_tool.metrics._docs import fill_doc

__all__ = ["accumulated_relative_error", "max_relative_error", "mean_relative_error",
           "relative_euclidean_distance"]


@fill_doc
def accumulated_relative_error(x, y) -> float:
    r"""Sum of the per-element relative errors (msaccucmp's ``AccumulatedRelativeError``).

    .. math::

        \mathrm{AccRE} = \sum_{i=1}^{N} r_i, \qquad
        r_i = \frac{|x_i - y_i|}{|y_i|} \text{ if } |y_i| > 2.22 \times 10^{-16} \text{ else } 0

    Parameters
    ----------
    {params}

    Returns
    -------
    float
        The sum, ``>= 0``. It grows with N: compare it only between tensors of the same size.

    {raises}

    Notes
    -----
    Elements with a zero reference (``|y_i| <= 2.220446e-16``) contribute 0. If every reference element is
    zero the result is 0 for identical tensors and ``inf`` otherwise (msaccucmp gives 0); empty inputs give
    ``nan``.
    {nonfinite}
    {precision}

    Examples
    --------
    >>> accumulated_relative_error([1.5, 2.0, 7.0], [1.0, 4.0, 0.0])
    1.0
    >>> accumulated_relative_error([1.0, 2.0], [0.0, 0.0])
    inf
    """
    return metric_over(_accumulated_relative_error, x, y)


@fill_doc
def max_relative_error(x, y) -> float:
    r"""Largest per-element relative error (msaccucmp's ``MaxRelativeError``).

    .. math::

        \mathrm{MaxRE} = \max_i r_i, \qquad
        r_i = \frac{|x_i - y_i|}{|y_i|} \text{ if } |y_i| > 2.22 \times 10^{-16} \text{ else } 0

    Parameters
    ----------
    {params}

    Returns
    -------
    float
        The largest ``r_i``, ``>= 0``; ``inf`` if a quotient overflows.

    {raises}

    Notes
    -----
    Elements with a zero reference (``|y_i| <= 2.220446e-16``) are left out (their ``r_i`` is 0). If every
    reference element is zero the result is 0 for identical tensors and ``inf`` otherwise (msaccucmp gives 0);
    empty inputs give ``nan``.
    {nonfinite}
    {precision}

    Examples
    --------
    >>> max_relative_error([1.5, 2.0, 7.0], [1.0, 4.0, 0.0])
    0.5
    """
    return metric_over(_max_relative_error, x, y)


@fill_doc
def mean_relative_error(x, y) -> float:
    r"""Mean per-element relative error over all N elements (msaccucmp's ``MeanRelativeError``).

    .. math::

        \mathrm{MeanRE} = \frac{1}{N} \sum_{i=1}^{N} r_i, \qquad
        r_i = \frac{|x_i - y_i|}{|y_i|} \text{ if } |y_i| > 2.22 \times 10^{-16} \text{ else } 0

    Parameters
    ----------
    {params}

    Returns
    -------
    float
        ``AccumulatedRelativeError / N``, ``>= 0``.

    {raises}

    Notes
    -----
    N counts the zero-reference elements too (their ``r_i`` is 0), as msaccucmp does, so many zero references
    pull the mean down. If every reference element is zero the result is 0 for identical tensors and ``inf``
    otherwise (msaccucmp gives 0); empty inputs give ``nan``.
    {nonfinite}
    {precision}

    Examples
    --------
    >>> mean_relative_error([1.5, 2.0, 7.0, 1.0], [1.0, 4.0, 0.0, 1.0])
    0.25
    """
    return metric_over(_mean_relative_error, x, y)


@fill_doc
def relative_euclidean_distance(x, y) -> float:
    r"""Norm of the difference relative to the norm of the reference (msaccucmp's
    ``RelativeEuclideanDistance``).

    .. math::

        \mathrm{RED} = \frac{\lVert x - y \rVert_2}{\lVert y \rVert_2}
                     = \sqrt{\frac{\sum_i (x_i - y_i)^2}{\sum_i y_i^2}}

    Parameters
    ----------
    {params}

    Returns
    -------
    float
        The ratio, ``>= 0``; 0 means identical, 1 means an error as large as the reference itself.

    {raises}

    Notes
    -----
    If the reference is exactly all zero the result is 0 for identical tensors and ``inf`` otherwise (the one
    rule of :func:`~precision_tool.metrics.rounding.relative_error`); empty inputs give ``nan``. msaccucmp
    writes 0 whenever ``||y|| <= 2.22e-16``, which also hides real differences
    between tiny tensors (``x = 2y`` with ``y`` of order 1e-17 has RED 1, not 0). Norms are scaled when
    needed, so neither tiny nor huge values lose digits.
    {nonfinite}
    {precision}

    Examples
    --------
    >>> relative_euclidean_distance([6.0, 8.0], [3.0, 4.0])
    1.0
    >>> relative_euclidean_distance([1.0, 1.0], [0.0, 0.0]), relative_euclidean_distance([0.0], [0.0])
    (inf, 0.0)
    """
    return metric_over(_relative_euclidean_distance, x, y)


def _nothing_left(stats: PairStats) -> float:
    """Every reference element is zero: :func:`relative_error` over a zero reference (``nan`` with no pair)."""
    return relative_error(stats.max_ad, 0.0) if stats.n else math.nan


def _accumulated_relative_error(stats: PairStats) -> float:
    return stats.rel_sum if stats.rel_count else _nothing_left(stats)


def _max_relative_error(stats: PairStats) -> float:
    return stats.rel_max if stats.rel_count else _nothing_left(stats)


def _mean_relative_error(stats: PairStats) -> float:
    return stats.rel_sum / stats.n if stats.rel_count else _nothing_left(stats)


def _relative_euclidean_distance(stats: PairStats) -> float:
    if stats.n == 0:
        return math.nan
    return relative_error(stats.norm_d, stats.norm_y)
