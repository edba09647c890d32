"""Similarity metrics: CosineSimilarity and KullbackLeiblerDivergence (msaccucmp's names)."""
from __future__ import annotations

import math
import sys

from precision_tool.metrics._common import ZERO_REFERENCE_EPS
from precision_tool.metrics._docs import fill_doc
from precision_tool.metrics.pair_stats import PairStats, metric_over

__all__ = ["cosine_similarity", "kullback_leibler_divergence"]


@fill_doc
def cosine_similarity(x, y) -> float:
    r"""Cosine of the angle between the two tensors seen as vectors (msaccucmp's ``CosineSimilarity``).

    .. math::

        \cos\theta = \frac{\sum_i x_i y_i}{\lVert x \rVert_2 \, \lVert y \rVert_2}, \quad
        \text{clamped to } [-1, 1]

    Parameters
    ----------
    {params}

    Returns
    -------
    float
        In ``[-1, 1]``: 1 same direction, 0 orthogonal, -1 opposite. Blind to scale: ``x = 2y`` gives 1.

    {raises}

    Notes
    -----
    If either tensor is exactly all zero the angle is undefined and the result is ``nan`` -- also when both
    are (msaccucmp writes 1.0 when both norms are below 2.22e-16, whatever the directions, and ``NaN`` when
    one is). For N = 1 the cosine only compares signs (1, -1, or ``nan``); msaccucmp goes further and writes
    1.0 for every tensor whose dimensions are all 1, even ``3`` against ``-5``. Judge small tensors by
    absolute and relative error. Norms are scaled when needed, so tiny (1e-30) and huge (1e30) tensors get
    their true cosine (in float32 msaccucmp gets 0 for two identical tensors of 1e20).
    {nonfinite}
    {precision}

    Examples
    --------
    >>> cosine_similarity([1.0, 0.0], [1.0, 1.0])  # 45 degrees
    0.7071067811865475
    >>> cosine_similarity([3.0], [-5.0])
    -1.0
    >>> cosine_similarity([0.0, 0.0], [0.0, 0.0])
    nan
    """
    return metric_over(_cosine_similarity, x, y)


@fill_doc
def kullback_leibler_divergence(x, y) -> float:
    r"""Kullback-Leibler divergence between the tensors' value profiles (msaccucmp's
    ``KullbackLeiblerDivergence``).

    Each side is min-max scaled to ``[0, 1]`` (a constant tensor is left as it is), clamped below at
    ``eps32 = 1.1920929e-07`` and normalised to sum 1; P comes from x (NPU), Q from y (reference):

    .. math::

        p_i = \max\Big(\frac{x_i - \min x}{\max x - \min x}, \varepsilon_{32}\Big), \quad
        P_i = \frac{p_i}{\sum_j p_j}, \quad
        D_{KL}(P \,\|\, Q) = \sum_i P_i \ln \frac{P_i}{Q_i}

    and a result with ``|D| < 2.22e-16`` is written as 0.

    Parameters
    ----------
    {params}

    Returns
    -------
    float
        ``>= 0``; 0 when the scaled profiles are identical.

    {raises}

    Notes
    -----
    It compares the shapes of the two profiles, not the values: ``x = a * y + b`` with ``a > 0`` gives 0,
    and every constant tensor becomes the uniform profile (a negative constant is clamped to ``eps32`` first),
    so two constant tensors -- 5s against 7s, or zeros against zeros -- give 0. Zero references need no
    special care: nothing reaches a logarithm below ``eps32``. Empty inputs give ``nan``. Not symmetric.
    A result within the computation's rounding (a few ulps of its larger term), or below 0, is written as 0
    (docs/internals/metrics.md#kullback-leibler-divergence).
    {nonfinite}
    {precision}

    Examples
    --------
    >>> kullback_leibler_divergence([1.0, 2.0, 3.0], [10.0, 20.0, 30.0])
    0.0
    >>> round(kullback_leibler_divergence([0.0, 1.0], [1.0, 0.0]), 6)
    15.942381
    """
    return metric_over(_kullback_leibler_divergence, x, y)


def _cosine_similarity(stats: PairStats) -> float:
    """``sum(x y) / (||x|| ||y||)`` clamped to [-1, 1]; nan for no pairs or a zero or infinite norm."""
    cosine = stats.cosine_dot
    return cosine if math.isnan(cosine) else min(max(cosine, -1.0), 1.0)


def _kullback_leibler_divergence(stats: PairStats) -> float:
    """From unnormalised profiles p, q with totals Tp, Tq: ``sum P ln(P/Q) = sum p ln(p/q) / Tp + ln(Tq / Tp)``,
    the last term as ``log1p((Tq - Tp) / Tp)`` when Tq/Tp is near 1 (an exact difference: two profiles of one shape
    give 0, not 1 ulp)."""
    if stats.n == 0:
        return math.nan
    tp, tq = stats.kl_tp, stats.kl_tq
    ratio = tq / tp
    mean_log = stats.kl_sum / tp
    log_totals = math.log1p((tq - tp) / tp) if 0.5 < ratio < 2.0 else math.log(ratio)
    divergence = mean_log + log_totals
    # The two terms cancel exactly when the profiles agree, each carrying a few ulps of its own size: a result
    # within that rounding (or negative: D >= 0 always) is 0. One-element pairs, 172065.5 against 0, found it.
    rounding = 8 * sys.float_info.epsilon * max(abs(mean_log), abs(log_totals))
    return 0.0 if divergence < max(rounding, ZERO_REFERENCE_EPS) else divergence
