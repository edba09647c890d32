r"""Ascend's own accuracy standard for one op: what a correct kernel of a dtype may add.

CANN's operator acceptance standard accepts an output ``a`` against its golden ``g`` when
:math:`\mathrm{MERE} = \operatorname{mean} |a - g| / (|g| + 10^{-7}) < T`, ``T`` = :data:`SPEC_THRESHOLD` (float16
:math:`2^{-10}`, bfloat16 :math:`2^{-7}`, float32 :math:`2^{-13}`). The golden is the op's replay on its own dumped
inputs. Elements in the small-value domain (:data:`SMALL_VALUE`) or non-finite are left out; the maximum (MARE) is
not used. A Cube op is held to its documented arithmetic instead: :data:`CUBE_ROUNDINGS` roundings of a
float16/bfloat16 output, :data:`HF32_ROUNDINGS` HF32 roundings of a float32 one (:func:`cube_error_limit`). Sources
and the reason for each choice: docs/internals/metrics.md#operator-standard.
"""
from __future__ import annotations

import math
from typing import Optional

import numpy as np

#: CANN's MERE threshold T per dtype (OPS_PRECISION_STANDARDS.md).
SPEC_THRESHOLD = {"float16": 2.0 ** -10, "bfloat16": 2.0 ** -7, "float32": 2.0 ** -13, "hfloat32": 2.0 ** -11}
#: Below this |golden| an element is in the small-value domain (COMMERCIAL_OPS_PRECISION_DOCS.md section 4.5).
SMALL_VALUE = {"float16": 2.0 ** -11, "bfloat16": 2.0 ** -8, "float32": 2.0 ** -14, "hfloat32": 2.0 ** -12}
#: The standard's guard in the denominator.
SPEC_EPS = 1e-7
#: Where the thresholds come from, as every report names it.
SPEC_SOURCE = "CANN operator standard"
#: NPU op types that run on the Cube unit (the 910 white list's matrix ops, as GE names them).
CUBE_OP_TYPES = frozenset({
    "Conv2D", "DepthwiseConv2D", "MatMul", "MatMulV2", "BatchMatMul", "BatchMatMulV2", "GEMM", "Conv3D",
    "Conv2DBackpropInput", "Conv2DBackpropInputD", "Conv2DTranspose", "Conv2DTransposeD",
    "DepthwiseConv2DBackpropInput", "DepthwiseConv2DBackpropInputD", "Deconvolution",
})
#: Roundings a correct Cube op's float16 output carries at most: before a fused activation and the 3 steps of a
#: native float16 one (or, unfused, the one at the end).
CUBE_ROUNDINGS = 4
#: HF32 roundings a correct float32 Cube op's output carries at most: its two inputs'.
HF32_ROUNDINGS = 2
#: The relative rms error of rounding to HF32 (unit roundoff 2^-12, 11 explicit mantissa bits): u / sqrt(3).
HF32_RMS_ROUNDING = 2.0 ** -12 / math.sqrt(3)


def spec_threshold(dtype: str) -> Optional[float]:
    """The standard's MERE threshold for ``dtype``; ``None`` for a dtype it does not cover (integers, float64).

    >>> spec_threshold("float16") == 2 ** -10, spec_threshold("int32")
    (True, None)
    """
    return SPEC_THRESHOLD.get(dtype)


def mean_relative_error(actual: np.ndarray, golden: np.ndarray, dtype: str) -> Optional[float]:
    """MERE of ``actual`` against ``golden`` over the elements finite in both and outside ``dtype``'s small-value
    domain (:data:`SMALL_VALUE`); ``None`` when the dtype has no threshold or no element is left.

    >>> round(mean_relative_error(np.array([1.001, 2.0, 1e-6]), np.array([1.0, 2.0, 0.0]), "float16"), 6)
    0.0005
    """
    small = SMALL_VALUE.get(dtype)
    if small is None:
        return None
    a = np.asarray(actual, dtype=np.float64).ravel()
    g = np.asarray(golden, dtype=np.float64).ravel()
    with np.errstate(invalid="ignore", over="ignore"):
        keep = np.isfinite(a) & np.isfinite(g) & (np.abs(g) >= small)
    if not keep.any():
        return None
    a, g = a[keep], g[keep]
    return float(np.mean(np.abs(a - g) / (np.abs(g) + SPEC_EPS)))


def cube_error_limit(op_type: str, dtype: str, rounding: float) -> Optional[float]:
    """The most local error (RED against the replay) a correct Cube op adds, ``None`` for another op or dtype:
    :data:`CUBE_ROUNDINGS` times ``rounding`` (the measured rounding of its float16/bfloat16 output; ``None`` when
    its output is representable, ``rounding`` 0), and for a float32 output :data:`HF32_ROUNDINGS` HF32 roundings
    (``2^-12 / sqrt(3)`` each: Atlas A2 computes float32 convolutions in HF32 by default, its inputs rounded to 11
    mantissa bits)."""
    if op_type not in CUBE_OP_TYPES:
        return None
    if dtype in ("float16", "bfloat16"):
        return CUBE_ROUNDINGS * rounding if rounding > 0 else None
    if dtype == "float32":
        return HF32_ROUNDINGS * HF32_RMS_ROUNDING
    return None


def exceeds_spec(error: Optional[float], dtype: str) -> bool:
    """True when the MERE ``error`` is at or beyond ``dtype``'s threshold (``MERE < T`` passes); ``False`` when
    either is unknown."""
    threshold = spec_threshold(dtype)
    return error is not None and threshold is not None and not error < threshold
