r"""Element-wise closeness: the allclose ratio and its dtype-aware default tolerances.

An element is close when :math:`|x_i - y_i| \le \mathrm{atol} + \mathrm{rtol} \cdot |y_i|` (``numpy.isclose`` with
the reference ``y`` on the right: the test is not symmetric). The allclose ratio is the share of close elements; a
tensor passes this gate when the ratio is at least ``min_ratio``. Defaults by the dtype the NPU computed in:
:data:`DEFAULT_TOLERANCES` (float16: Ascend's "double thousandth" rule, rtol = atol = 1e-3, min_ratio 0.999;
integers and bools exact). They come from single-operator acceptance tests, so deep layers of a whole model may fail
them on inherited drift. Why each value: docs/internals/metrics.md#default-tolerances.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from types import MappingProxyType
from typing import Mapping

import numpy as np

from precision_tool.errors import MetricInputError
from precision_tool.metrics.pair_stats import pair_stats

__all__ = ["Tolerance", "DEFAULT_TOLERANCES", "canonical_dtype", "default_tolerance", "allclose_ratio"]


@dataclass(frozen=True)
class Tolerance:
    """``|x - y| <= atol + rtol * |y|`` per element; pass when at least ``min_ratio`` of them are close."""

    rtol: float
    atol: float
    min_ratio: float

    def __post_init__(self):
        if not (self.rtol >= 0 and self.atol >= 0 and 0 <= self.min_ratio <= 1):
            raise MetricInputError(f"Bad tolerance rtol={self.rtol}, atol={self.atol}, min_ratio={self.min_ratio}.",
                                   "rtol and atol must be >= 0 and min_ratio within [0, 1]")


DEFAULT_TOLERANCES: Mapping[str, Tolerance] = MappingProxyType({
    "float16": Tolerance(1e-3, 1e-3, 0.999),
    "bfloat16": Tolerance(1e-2, 1e-2, 0.99),
    "float32": Tolerance(1e-4, 1e-5, 0.9999),
    "float64": Tolerance(1e-7, 1e-9, 0.9999),
    "integer": Tolerance(0.0, 0.0, 1.0),
    "bool": Tolerance(0.0, 0.0, 1.0),
})

_NAMES = {
    "float16": ("float16", "half", "fp16", "f2", "<f2", "dt_float16"),
    "bfloat16": ("bfloat16", "bf16", "dt_bf16", "dt_bfloat16"),
    "float32": ("float32", "float", "fp32", "single", "f4", "<f4", "dt_float", "dt_float32"),
    "float64": ("float64", "double", "fp64", "f8", "<f8", "dt_double", "dt_float64"),
    "bool": ("bool", "bool_", "?", "dt_bool"),
}
_BY_NAME = {alias: canonical for canonical, aliases in _NAMES.items() for alias in aliases}
_PRECISION_RANK = {"bool": 0, "integer": 0, "bfloat16": 1, "float16": 2, "float32": 3, "float64": 4}


def canonical_dtype(dtype) -> str:
    """The tolerance class of a dtype: ``"float16"``, ``"bfloat16"``, ``"float32"``, ``"float64"``,
    ``"integer"`` or ``"bool"``.

    Takes numpy dtypes and names as numpy, TensorFlow or CANN write them (``"half"``, ``"bf16"``,
    ``"DT_FLOAT16"``, ``"DT_INT32"``). bfloat16 arrives as float32 values, so only a name can say bf16.

    >>> canonical_dtype("DT_BF16"), canonical_dtype(np.float16), canonical_dtype("int8")
    ('bfloat16', 'float16', 'integer')
    """
    if isinstance(dtype, str):
        name = dtype.strip().lower()
        if name in _BY_NAME:
            return _BY_NAME[name]
        if name.startswith("dt_"):
            name = name[3:]
        if name.startswith(("int", "uint", "qint", "quint")):
            return "integer"
        try:
            dtype = np.dtype(name)
        except TypeError:
            raise MetricInputError(f"Unknown dtype {dtype!r} for comparison tolerances.",
                                   "use float16, bfloat16, float32, float64, an integer type or bool") from None
    kind = np.dtype(dtype).kind
    if kind == "b":
        return "bool"
    if kind in "iu":
        return "integer"
    if kind == "f" and np.dtype(dtype).itemsize in (2, 4, 8):
        return {2: "float16", 4: "float32", 8: "float64"}[np.dtype(dtype).itemsize]
    raise MetricInputError(f"No comparison tolerances for dtype {np.dtype(dtype)}.",
                           "compare real tensors: floats, integers or bools")


def lower_precision(first: str, second: str) -> str:
    """Of two tolerance classes, the less precise one (a float16 NPU tensor against a float32 reference
    is judged as float16). Integers and bools rank lowest: an exact dtype on either side means exact."""
    return min((first, second), key=_PRECISION_RANK.__getitem__)


def default_tolerance(dtype) -> Tolerance:
    """:data:`DEFAULT_TOLERANCES` for ``dtype`` (any form :func:`canonical_dtype` takes).

    >>> default_tolerance("float16")
    Tolerance(rtol=0.001, atol=0.001, min_ratio=0.999)
    """
    return DEFAULT_TOLERANCES[canonical_dtype(dtype)]


def allclose_ratio(x, y, *, rtol: float, atol: float) -> float:
    r"""Share of elements with ``|x_i - y_i| <= atol + rtol * |y_i|``.

    .. math::

        \mathrm{ratio} = \frac{1}{N} \#\{ i : |x_i - y_i| \le \mathrm{atol} + \mathrm{rtol}\,|y_i| \}

    Parameters
    ----------
    x : (N,) array_like of real numbers
        NPU values, flattened.
    y : (N,) array_like of real numbers
        Reference values, flattened, the same length.
    rtol, atol : float
        Relative and absolute tolerance, ``>= 0`` (see :data:`DEFAULT_TOLERANCES`).

    Returns
    -------
    float
        In ``[0, 1]``; ``nan`` for empty inputs.

    Raises
    ------
    MetricInputError
        If an input is not 1-D, does not hold real numbers, or the lengths differ.

    Notes
    -----
    Zero references are judged by ``atol`` alone. As ``numpy.isclose(..., equal_nan=True)`` does, a NaN on
    both sides at the same position and an infinity of the same sign on both sides count as close; any other
    non-finite element is not close. Computed in float64.

    Examples
    --------
    >>> allclose_ratio([1.0, 2.0, 3.0, 4.0], [1.0005, 2.0, 3.1, 0.0], rtol=1e-3, atol=1e-3)
    0.5
    >>> allclose_ratio([np.nan, np.inf, 1.0], [np.nan, np.inf, np.nan], rtol=0.0, atol=0.0)
    0.6666666666666666
    """
    Tolerance(rtol, atol, 0.0)  # validates
    stats = pair_stats(x, y, rtol, atol)
    if not stats.total:
        return math.nan
    return (stats.close + stats.nonfinite_close) / stats.total
