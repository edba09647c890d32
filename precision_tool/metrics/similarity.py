"""Similarity metrics: CosineSimilarity and KullbackLeiblerDivergence (msaccucmp's names)."""
from __future__ import annotations

import math
from typing import Tuple

import numpy as np

from precision_tool.metrics._common import KL_FLOOR, ZERO_REFERENCE_EPS, PairData, dot
from precision_tool.metrics._docs import fill_doc

__all__ = ["cosine_similarity", "kullback_leibler_divergence"]

_SAFE_PRODUCT_LOW, _SAFE_PRODUCT_HIGH = 1e-280, 1e280
# KL profiles with a span in this range are left unnormalised: no profile value, sum or ratio of them can
# overflow or underflow (see _profile).
_FAST_SPAN_LOW, _FAST_SPAN_HIGH = 1e-100, 1e100


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
    return _cosine_similarity(PairData(x, y))


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
    {nonfinite}
    {precision}

    Examples
    --------
    >>> kullback_leibler_divergence([1.0, 2.0, 3.0], [10.0, 20.0, 30.0])
    0.0
    >>> round(kullback_leibler_divergence([0.0, 1.0], [1.0, 0.0]), 6)
    15.942381
    """
    return _kullback_leibler_divergence(PairData(x, y))


def _cosine_similarity(pair: PairData) -> float:
    norm_x, norm_y = pair.norm_x, pair.norm_y
    if pair.n == 0 or not (norm_x > 0.0 and norm_y > 0.0) or math.isinf(norm_x) or math.isinf(norm_y):
        return math.nan
    product = norm_x * norm_y
    if _SAFE_PRODUCT_LOW < product < _SAFE_PRODUCT_HIGH:
        cosine = dot(pair.x, pair.y) / product
    else:  # unit vectors first: no intermediate overflows or underflows
        cosine = dot(pair.x / norm_x, pair.y / norm_y)
    return min(max(cosine, -1.0), 1.0)


def _profile(values: np.ndarray, out: np.ndarray) -> Tuple[np.ndarray, float]:
    """The min-max profile of ``values`` in ``out``, as ``(out, total)``: the probabilities are ``out / total``.

    Min-max scale to [0, 1] (constant: as is), clamp below at eps32, normalise to sum 1. For a span of
    moderate size (the usual case) two passes fewer: ``max(v - low, eps32 * span)`` is the scaled profile
    times ``span``, the span cancels in the normalisation, and the caller divides by ``total`` once
    (:func:`_kullback_leibler_divergence`) instead of normalising every element. The clamp is a masked copy
    (a compare and a copy), cheaper than ``np.maximum``'s NaN-aware loop. Other spans: scaled and normalised
    in place as before, ``total`` 1.0.
    """
    low, high = float(values.min()), float(values.max())
    span = high - low
    if _FAST_SPAN_LOW < span < _FAST_SPAN_HIGH:
        np.subtract(values, low, out=out)
        floor = KL_FLOOR * span
        np.copyto(out, floor, where=out < floor)
        return out, float(np.sum(out))
    if math.isinf(span):  # only float64 inputs beyond 8.9e307 get here; halving cannot overflow
        np.multiply(values, 0.5, out=out)
        values, low, span = out, low * 0.5, high * 0.5 - low * 0.5
    if span != 0:
        np.subtract(values, low, out=out)
        np.divide(out, span, out=out)
    else:
        np.copyto(out, values)
    np.maximum(out, KL_FLOOR, out=out)
    out /= np.sum(out)
    return out, 1.0


def _kullback_leibler_divergence(pair: PairData) -> float:
    """``sum P ln(P/Q)`` from unnormalised profiles: ``P/Q = (p/q) * (total_q/total_p)``, then one division."""
    if pair.n == 0:
        return math.nan
    p, total_p = _profile(pair.x, pair.scratch(0))
    q, total_q = _profile(pair.y, pair.scratch(1))
    log_ratio = np.divide(p, q, out=q)
    if total_q != total_p:
        log_ratio *= total_q / total_p
    np.log(log_ratio, out=log_ratio)
    divergence = dot(p, log_ratio) / total_p
    return 0.0 if abs(divergence) < ZERO_REFERENCE_EPS else divergence
