r"""What storing a number in a float dtype costs: the constants every error floor of the tool is made of.

Storing a value in a dtype of unit roundoff :math:`u` (:data:`UNIT_ROUNDOFF`) changes it by at most :math:`u`
relative, :math:`u/\sqrt{3}` in root mean square. Every floor is :data:`FLOOR_FACTOR` such roundings:
:func:`rounding_floor` is ``max(FLOOR_FACTOR * u / sqrt(3), MIN_FLOOR[dtype])``, about 1.1e-3 for float16 and 1e-5
for float32. :func:`relative_error` is the one rule for an error relative to a reference (over a zero reference: 0
for no error, ``inf`` for any); :func:`ratio_to_floor` says how many floors an error is; below
:data:`SMALLEST_NORMAL` a float16 value is subnormal. See docs/internals/metrics.md#rounding-floors.
"""
from __future__ import annotations

import math

#: Unit roundoff per float dtype.
UNIT_ROUNDOFF = {"float16": 2.0 ** -11, "bfloat16": 2.0 ** -8, "float32": 2.0 ** -24, "float64": 2.0 ** -53}
#: Floors are this many roundings.
FLOOR_FACTOR = 4.0
#: The least floor per dtype, for results that happen to be representable (ReLU, MaxPool of float16 inputs).
MIN_FLOOR = {"float16": 2.0 ** -11 / 16, "bfloat16": 2.0 ** -8 / 16, "float32": 1e-5, "float64": 1e-12}
#: The smallest normal number per dtype; float16's is 2^-14, about 6.1e-5.
SMALLEST_NORMAL = {"float16": 2.0 ** -14, "bfloat16": 2.0 ** -126, "float32": 2.0 ** -126, "float64": 2.0 ** -1022}
#: ``|y|`` at or below this counts as a zero reference (msaccucmp's ``FLOAT_EPSILON``, float64's machine epsilon).
ZERO_REFERENCE_EPS = 2.0 ** -52


def is_float(dtype: str) -> bool:
    """True for ``float16``, ``bfloat16``, ``float32``, ``float64`` (as stored names)."""
    return dtype.startswith(("float", "bfloat"))


def rms_rounding(dtype: str) -> float:
    """``u / sqrt(3)``: the relative root-mean-square error of storing values in ``dtype`` (0 for non-floats)."""
    u = UNIT_ROUNDOFF.get(dtype)
    return u / math.sqrt(3) if u is not None else 0.0


def rounding_floor(dtype: str) -> float:
    """The relative error a correct op's output in ``dtype`` may carry: ``max(FLOOR_FACTOR * u / sqrt(3),
    MIN_FLOOR[dtype])``; 0 for integers and bools, which are exact.

    >>> round(rounding_floor("float16"), 6), rounding_floor("float32"), rounding_floor("int32")
    (0.001128, 1e-05, 0.0)
    """
    if dtype not in UNIT_ROUNDOFF:
        return 0.0
    return max(FLOOR_FACTOR * rms_rounding(dtype), MIN_FLOOR[dtype])


def relative_error(error: float, reference: float) -> float:
    """``error / |reference|`` -- the one definition of a relative error, for an element or a norm.

    A zero reference makes no error 0 and any error ``inf``: nothing is relative to nothing, and an error over a
    reference below the rounding noise is judged on its absolute size instead (the noise rule of
    :mod:`precision_tool.comparison.noise`). msaccucmp's relative-error columns (Accumulated, Max and Mean
    RelativeError) leave out the elements whose reference is at most :data:`ZERO_REFERENCE_EPS`, as msaccucmp
    does; with none left they follow this rule too.

    >>> relative_error(3.0, -4.0), relative_error(0.0, 0.0), relative_error(2e-17, 1e-17), relative_error(1.0, 0.0)
    (0.75, 0.0, 2.0, inf)
    """
    magnitude = abs(reference)
    if magnitude > 0:
        return error / magnitude
    return 0.0 if error == 0 else (error if math.isnan(error) else math.inf)


def ratio_to_floor(error: float, floor: float) -> float:
    """``error / floor``: how many floors an error is; ``inf`` for an error over a zero floor, ``0`` for no error
    (also over a zero floor).

    >>> ratio_to_floor(0.02, 0.001), ratio_to_floor(0.0, 0.0), ratio_to_floor(0.1, 0.0)
    (20.0, 0.0, inf)
    """
    if floor > 0:
        return error / floor
    return 0.0 if error == 0 else math.inf
