"""What every metric shares: the input validator and msaccucmp's constants.

Working precision is float64 for every metric (msaccucmp's is float32: docs/internals/metrics.md#working-precision).
Values are widened a block at a time (:mod:`~precision_tool.metrics.pair_stats`), never a whole tensor.
"""
from __future__ import annotations

import numpy as np

from precision_tool.errors import MetricInputError
from precision_tool.metrics import rounding

#: ``|y| <= ZERO_REFERENCE_EPS`` counts as a zero reference: left out of relative errors.
#: It is msaccucmp's ``FLOAT_EPSILON`` (``np.finfo(float).eps``, 2.220446049250313e-16).
ZERO_REFERENCE_EPS = rounding.ZERO_REFERENCE_EPS

#: Kullback-Leibler divergence clamps each min-max scaled value below at this (float32 machine epsilon,
#: 1.1920928955078125e-07), as msaccucmp does, so no probability is zero.
KL_FLOOR = float(np.finfo(np.float32).eps)


def validate_pair(x, y):
    """Return ``x`` and ``y`` as 1-D arrays of real numbers of equal length, or raise :class:`MetricInputError`.

    Arrays keep their dtype: the sums widen each chunk to float64 as they go
    (:mod:`~precision_tool.metrics.pair_stats`; exact, except integers above 2**53).
    """
    x = _real_vector(x, "NPU (x)")
    y = _real_vector(y, "reference (y)")
    if x.shape != y.shape:
        raise MetricInputError(f"Input arrays differ in length: x has {x.size} elements, y has {y.size}.",
                               "a metric compares element by element; compare_tensors reports this case")
    return x, y


def _real_vector(values, label):
    array = np.asarray(values)
    if array.dtype.kind not in "fiub":
        raise MetricInputError(f"Input {label} should hold real numbers, not {array.dtype}.")
    if array.ndim != 1:
        raise MetricInputError(f"Input {label} should be 1-D, got shape {array.shape}.",
                               "flatten the tensors first (compare_tensors does)")
    return array
