"""Data types and layouts as CANN numbers them, and their numpy counterparts.

One numbering, so one table, for the dump header (``toolkit.dumpdata.OutputDataType`` / ``OutputFormat``) and the
GE graph (``ge.proto.DataType``). bfloat16 has no numpy dtype: it is kept as its raw ``uint16`` bits and widened
exactly to float32 by :func:`bf16_bits_to_float32` (a bf16 value is the upper half of a float32). Nor has
``DT_UNDEFINED`` (0, "type unknown": every tensor of a Lite exception dump, of which only the kernel argument's
address and size are known): :func:`numpy_dtype` says ``None``, so no reader mistakes 0 for a real type, and a dump
reader takes such a payload as raw bytes, :data:`RAW_BYTES_DTYPE` (int8) of the entry's size, as msaccucmp does.
"""
from __future__ import annotations

from typing import Dict, Optional

import numpy as np

# number -> enum name (without the "DT_" prefix where the prefix is redundant, see DTYPE_ENUM_NAMES)
DTYPE_NAMES: Dict[int, str] = {
    0: "UNDEFINED", 1: "FLOAT", 2: "FLOAT16", 3: "INT8", 4: "UINT8", 5: "INT16", 6: "UINT16",
    7: "INT32", 8: "INT64", 9: "UINT32", 10: "UINT64", 11: "BOOL", 12: "DOUBLE", 13: "STRING",
    14: "DUAL_SUB_INT8", 15: "DUAL_SUB_UINT8", 16: "COMPLEX64", 17: "COMPLEX128", 18: "QINT8",
    19: "QINT16", 20: "QINT32", 21: "QUINT8", 22: "QUINT16", 23: "RESOURCE", 24: "STRING_REF",
    25: "DUAL", 27: "BF16", 29: "UINT1", 32: "COMPLEX32", 33: "HIFLOAT8", 34: "FLOAT8_E5M2",
    35: "FLOAT8_E4M3FN", 36: "FLOAT8_E8M0", 37: "FLOAT6_E3M2", 38: "FLOAT6_E2M3", 39: "FLOAT4_E2M1",
    40: "FLOAT4_E1M2",
}
# The protobuf enum value names ("DT_FLOAT16"), as written in GE text/JSON graphs and dump JSON.
DTYPE_ENUM_NAMES: Dict[int, str] = {num: f"DT_{name}" for num, name in DTYPE_NAMES.items()}
DTYPE_BY_ENUM_NAME: Dict[str, int] = {name: num for num, name in DTYPE_ENUM_NAMES.items()}

DT_UNDEFINED, DT_FLOAT, DT_FLOAT16, DT_BF16 = 0, 1, 2, 27
RAW_BYTES_DTYPE: np.dtype = np.dtype("i1")  # what a DT_UNDEFINED payload is read as: a flat int8 array of its bytes

# number -> numpy dtype (little-endian). bf16 is carried as uint16 bits, see module docstring.
NUMPY_DTYPES: Dict[int, np.dtype] = {
    1: np.dtype("<f4"), 2: np.dtype("<f2"), 3: np.dtype("i1"), 4: np.dtype("u1"), 5: np.dtype("<i2"),
    6: np.dtype("<u2"), 7: np.dtype("<i4"), 8: np.dtype("<i8"), 9: np.dtype("<u4"), 10: np.dtype("<u8"),
    11: np.dtype("?"), 12: np.dtype("<f8"), 16: np.dtype("<c8"), 17: np.dtype("<c16"),
    27: np.dtype("<u2"),
}
_CODE_BY_NUMPY = {v: k for k, v in NUMPY_DTYPES.items() if k != DT_BF16}

FORMAT_NAMES: Dict[int, str] = {
    0: "NCHW", 1: "NHWC", 2: "ND", 3: "NC1HWC0", 4: "FRACTAL_Z", 5: "NC1C0HWPAD", 6: "NHWC1C0",
    7: "FSR_NCHW", 8: "FRACTAL_DECONV", 9: "C1HWNC0", 10: "FRACTAL_DECONV_TRANSPOSE",
    11: "FRACTAL_DECONV_SP_STRIDE_TRANS", 12: "NC1HWC0_C04", 13: "FRACTAL_Z_C04", 14: "CHWN",
    15: "FRACTAL_DECONV_SP_STRIDE8_TRANS", 16: "HWCN", 17: "NC1KHKWHWC0", 18: "BN_WEIGHT",
    19: "FILTER_HWCK", 20: "HASHTABLE_LOOKUP_LOOKUPS", 21: "HASHTABLE_LOOKUP_KEYS",
    22: "HASHTABLE_LOOKUP_VALUE", 23: "HASHTABLE_LOOKUP_OUTPUT", 24: "HASHTABLE_LOOKUP_HITS",
    25: "C1HWNCoC0", 26: "MD", 27: "NDHWC", 28: "FRACTAL_ZZ", 29: "FRACTAL_NZ", 30: "NCDHW",
    31: "DHWCN", 32: "NDC1HWC0", 33: "FRACTAL_Z_3D", 34: "CN", 35: "NC", 36: "DHWNC",
    37: "FRACTAL_Z_3D_TRANSPOSE", 38: "FRACTAL_ZN_LSTM", 39: "FRACTAL_Z_G", 40: "RESERVED",
    41: "ALL", 42: "NULL", 43: "ND_RNN_BIAS", 44: "FRACTAL_ZN_RNN", 45: "YUV", 46: "YUV_A", 255: "MAX",
}
FORMAT_BY_NAME: Dict[str, int] = {name: num for num, name in FORMAT_NAMES.items()}


def dtype_name(code: int) -> str:
    """``2`` -> ``"DT_FLOAT16"``; unknown numbers -> ``"DT_UNKNOWN(99)"``."""
    return DTYPE_ENUM_NAMES.get(code, f"DT_UNKNOWN({code})")


def format_name(code: int) -> str:
    """``3`` -> ``"NC1HWC0"``; unknown numbers -> ``"FORMAT_UNKNOWN(99)"``."""
    return FORMAT_NAMES.get(code, f"FORMAT_UNKNOWN({code})")


def numpy_dtype(code: int) -> Optional[np.dtype]:
    """The numpy dtype that holds this CANN type's bytes, or ``None`` if numpy cannot (string, fp8, ...)."""
    return NUMPY_DTYPES.get(code)


def dtype_code(dtype) -> int:
    """numpy dtype -> CANN number (``float16`` -> 2). ``ValueError`` for types CANN has no number for."""
    dt = np.dtype(dtype).newbyteorder("<") if np.dtype(dtype).byteorder == ">" else np.dtype(dtype)
    try:
        return _CODE_BY_NUMPY[dt]
    except KeyError:
        raise ValueError(f"no CANN data type for numpy dtype {dt}") from None


def bf16_bits_to_float32(bits: np.ndarray) -> np.ndarray:
    """Widen bfloat16 stored as ``uint16`` bits to float32, exactly: ``float32_bits = bits << 16``.

    The shift count is a ``uint32`` and the result is written in place: on numpy 1.x a 0-d array shifted by a
    Python int becomes int64 (value-based casting), whose 8 bytes cannot be viewed as float32.
    """
    wide = np.asarray(bits, dtype="<u2").astype("<u4")
    np.left_shift(wide, np.uint32(16), out=wide)
    return wide.view("<f4")


def float32_to_bf16_bits(values: np.ndarray) -> np.ndarray:
    """Round float32 to bfloat16 bits (round to nearest even; NaN stays a quiet NaN)."""
    bits = np.asarray(values, dtype="<f4").view("<u4")
    rounded = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype("<u2")
    nan = np.isnan(np.asarray(values, dtype="<f4"))
    return np.where(nan, (bits >> 16).astype("<u2") | 0x0040, rounded).astype("<u2")
