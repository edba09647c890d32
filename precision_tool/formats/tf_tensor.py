"""TensorFlow ``TensorProto`` -> numpy, for every numeric dtype, without TensorFlow.

Values come as raw little-endian bytes (``tensor_content``, what tfdbg always writes) or in a typed repeated field
(``float_val``, ``int_val``, ``half_val`` ...), read as ``tf.make_ndarray`` reads them: no values means zeros, fewer
values than elements repeat the last one; more values, or an integer outside its dtype's range, are refused.
bfloat16, fp8 and fp4 are widened exactly to float32, int4/uint4/int2/uint2 become int8/uint8 (:func:`array_dtype`).
``DT_RESOURCE`` gives ``None``; ``DT_STRING`` and ``DT_VARIANT`` are refused (:class:`ReferenceFormatError`).
:func:`scan_tensor_proto` locates dtype, shape and ``tensor_content`` of serialized bytes without decoding them.
Details: docs/internals/formats.md#tf_tensor.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Dict, Optional, Tuple

import numpy as np
from google.protobuf.message import DecodeError, Message

from precision_tool.errors import ReferenceFormatError
from precision_tool.formats import tf_schema
from precision_tool.formats.bounds import ndim_problem
from precision_tool.formats.tf_schema import WIRE_LEN, WIRE_VARINT, iter_wire_fields, signed64, tf_dtype_name

DT_STRING, DT_RESOURCE, DT_VARIANT = 7, 20, 21
DT_BFLOAT16, DT_HALF = 14, 19
# Expanding one typed value to a whole shape allocates; refuse absurd shapes (a lying or broken proto).
MAX_EXPANDED_BYTES = 1 << 31


def _minifloat_table(exponent_bits: int, mantissa_bits: int, bias: int, nan_style: str) -> np.ndarray:
    """float32 value of every byte of a small float format (sign in bit ``exponent_bits + mantissa_bits``).

    ``nan_style``: ``"ieee"`` (max exponent = inf/NaN), ``"fn"`` (only all-ones exponent and mantissa is
    NaN, no inf), ``"fnuz"`` (only the negative-zero pattern is NaN, no inf), ``"none"`` (all finite).
    """
    codes = np.arange(1 << (1 + exponent_bits + mantissa_bits), dtype=np.int64)
    sign = np.where((codes >> (exponent_bits + mantissa_bits)) & 1, -1.0, 1.0)
    exponent = (codes >> mantissa_bits) & ((1 << exponent_bits) - 1)
    mantissa = codes & ((1 << mantissa_bits) - 1)
    fraction = mantissa / float(1 << mantissa_bits)
    magnitude = np.where(exponent == 0, fraction * 2.0 ** (1 - bias), (1.0 + fraction) * 2.0 ** (exponent - bias))
    values = sign * magnitude
    nan = np.copysign(np.nan, sign)  # a quiet NaN keeping the code's sign bit (as ml_dtypes widens)
    top_exponent = (1 << exponent_bits) - 1
    if nan_style == "ieee":
        values = np.where(exponent == top_exponent, np.where(mantissa == 0, sign * np.inf, nan), values)
    elif nan_style == "fn":
        values = np.where((exponent == top_exponent) & (mantissa == (1 << mantissa_bits) - 1), nan, values)
    elif nan_style == "fnuz":
        values = np.where(codes == 1 << (exponent_bits + mantissa_bits), nan, values)
    table = values.astype(np.float32)
    return np.resize(table, 256) if table.size < 256 else table  # fp4: only the low 4 bits count


_FP8_TABLES: Dict[int, np.ndarray] = {
    24: _minifloat_table(5, 2, 15, "ieee"),  # float8_e5m2
    25: _minifloat_table(4, 3, 7, "fn"),  # float8_e4m3fn
    26: _minifloat_table(4, 3, 8, "fnuz"),  # float8_e4m3fnuz
    27: _minifloat_table(4, 3, 11, "fnuz"),  # float8_e4m3b11fnuz
    28: _minifloat_table(5, 2, 16, "fnuz"),  # float8_e5m2fnuz
    33: _minifloat_table(2, 1, 1, "none"),  # float4_e2m1fn
}


def _bf16_to_float32(bits: np.ndarray) -> np.ndarray:
    return (bits.astype("<u4") << np.uint32(16)).view("<f4")


def _sign_extend(bits: int) -> Callable[[np.ndarray], np.ndarray]:
    half = 1 << (bits - 1)
    return lambda raw: ((raw.astype(np.int16) & ((1 << bits) - 1)) ^ half).astype(np.int8) - np.int8(half)


def _low_bits(bits: int) -> Callable[[np.ndarray], np.ndarray]:
    return lambda raw: raw.astype(np.uint8) & np.uint8((1 << bits) - 1)


@dataclass(frozen=True)
class _TypeInfo:
    storage: np.dtype  # dtype of one element in tensor_content
    value_field: str  # the typed repeated field that holds values
    convert: Optional[Callable[[np.ndarray], np.ndarray]] = None  # storage -> returned array


def _fp8(code: int) -> _TypeInfo:
    table = _FP8_TABLES[code]
    return _TypeInfo(np.dtype("u1"), "float8_val", lambda raw: table[raw])


_TYPES: Dict[int, _TypeInfo] = {
    1: _TypeInfo(np.dtype("<f4"), "float_val"),
    2: _TypeInfo(np.dtype("<f8"), "double_val"),
    3: _TypeInfo(np.dtype("<i4"), "int_val"),
    4: _TypeInfo(np.dtype("u1"), "int_val"),
    5: _TypeInfo(np.dtype("<i2"), "int_val"),
    6: _TypeInfo(np.dtype("i1"), "int_val"),
    8: _TypeInfo(np.dtype("<c8"), "scomplex_val"),
    9: _TypeInfo(np.dtype("<i8"), "int64_val"),
    10: _TypeInfo(np.dtype("?"), "bool_val"),
    11: _TypeInfo(np.dtype("i1"), "int_val"),  # qint8
    12: _TypeInfo(np.dtype("u1"), "int_val"),  # quint8
    13: _TypeInfo(np.dtype("<i4"), "int_val"),  # qint32
    14: _TypeInfo(np.dtype("<u2"), "half_val", _bf16_to_float32),
    15: _TypeInfo(np.dtype("<i2"), "int_val"),  # qint16
    16: _TypeInfo(np.dtype("<u2"), "int_val"),  # quint16
    17: _TypeInfo(np.dtype("<u2"), "int_val"),
    18: _TypeInfo(np.dtype("<c16"), "dcomplex_val"),
    19: _TypeInfo(np.dtype("<u2"), "half_val", lambda raw: raw.view("<f2")),
    22: _TypeInfo(np.dtype("<u4"), "uint32_val"),
    23: _TypeInfo(np.dtype("<u8"), "uint64_val"),
    24: _fp8(24), 25: _fp8(25), 26: _fp8(26), 27: _fp8(27), 28: _fp8(28), 33: _fp8(33),
    29: _TypeInfo(np.dtype("u1"), "int_val", _sign_extend(4)),  # int4, one per byte
    30: _TypeInfo(np.dtype("u1"), "int_val", _low_bits(4)),  # uint4
    31: _TypeInfo(np.dtype("u1"), "int_val", _sign_extend(2)),  # int2
    32: _TypeInfo(np.dtype("u1"), "int_val", _low_bits(2)),  # uint2
}
_NOT_NUMERIC = {DT_STRING: "strings", DT_VARIANT: "variants (opaque objects)"}


def base_dtype_code(code: int) -> int:
    """``DT_FLOAT_REF`` (101) -> ``DT_FLOAT`` (1); other codes unchanged."""
    return code - tf_schema.REF_TYPE_OFFSET if code > tf_schema.REF_TYPE_OFFSET else code


def array_dtype(code: int) -> Optional[np.dtype]:
    """dtype of the array a tensor of TF dtype ``code`` loads as; ``None`` if it cannot be loaded.

    >>> array_dtype(19), array_dtype(14), array_dtype(7)
    (dtype('float16'), dtype('float32'), None)
    """
    info = _TYPES.get(base_dtype_code(code))
    if info is None:
        return None
    if info.convert is None:
        return info.storage
    return info.convert(np.zeros(1, dtype=info.storage)).dtype


def _type_info(code: int, source) -> Optional[_TypeInfo]:
    code = base_dtype_code(code)
    if code == DT_RESOURCE:
        return None
    info = _TYPES.get(code)
    if info is None:
        kind = _NOT_NUMERIC.get(code)
        cause = (f"{tf_dtype_name(code)} tensors hold {kind}, not numbers: not supported" if kind
                 else f"unsupported TensorFlow dtype {tf_dtype_name(code)}")
        raise ReferenceFormatError(source, cause)
    return info


def element_count(shape: Tuple[int, ...]) -> int:
    """``prod(shape)`` as a Python int (1 for a scalar)."""
    count = 1
    for dim in shape:
        count *= dim
    return count


def _check_shape(dims, unknown_rank: bool, source) -> Tuple[int, ...]:
    if unknown_rank:
        raise ReferenceFormatError(source, "TensorProto has an unknown rank (not a concrete tensor)")
    shape = tuple(int(dim) for dim in dims)
    problem = ndim_problem(len(shape), "TensorProto shape")
    if problem is not None:
        raise ReferenceFormatError(source, problem)
    if any(dim < 0 for dim in shape):
        raise ReferenceFormatError(source, f"TensorProto shape {list(shape)} has an unknown (negative) dim")
    return shape


def decode_tensor_content(code: int, shape: Tuple[int, ...], content, source=None) -> Optional[np.ndarray]:
    """Array from raw ``tensor_content`` bytes (zero-copy when no widening is needed).

    ``content`` may be any buffer; a ``bytearray`` gives a writable array. Returns ``None`` for
    ``DT_RESOURCE``. Raises :class:`ReferenceFormatError` if the byte count is not
    ``prod(shape) * itemsize`` or the dtype is not numeric.
    """
    info = _type_info(code, source)
    if info is None:
        return None
    count = element_count(shape)
    nbytes = len(memoryview(content).cast("B"))
    if nbytes != count * info.storage.itemsize:
        raise ReferenceFormatError(source, f"{tf_dtype_name(code)} tensor of shape {list(shape)} needs "
                                           f"{count * info.storage.itemsize} bytes, tensor_content has {nbytes}")
    raw = np.frombuffer(content, dtype=info.storage, count=count)
    array = info.convert(raw) if info.convert is not None else raw
    return array.reshape(shape)


# The range of the integers an ``int_val``/``half_val`` element may hold, per dtype code where it is narrower than
# the storage's: int4/uint4/int2/uint2 are stored one per byte.
_NARROW_INT_RANGE = {29: (-8, 7), 30: (0, 15), 31: (-2, 1), 32: (0, 3)}


def _checked_integers(values, info: _TypeInfo, code: int, source, field: str) -> np.ndarray:
    """``values`` (int_val/half_val) as the storage dtype, refusing one outside the dtype's range."""
    wide = np.asarray(values, dtype=np.int64)
    storage = np.dtype(np.uint16) if field == "half_val" else info.storage
    low, high = _NARROW_INT_RANGE.get(code) or (int(np.iinfo(storage).min), int(np.iinfo(storage).max))
    if wide.size and (int(wide.min()) < low or int(wide.max()) > high):
        bad = int(wide.min()) if int(wide.min()) < low else int(wide.max())
        raise ReferenceFormatError(source, f"{tf_dtype_name(code)} TensorProto: {field} holds {bad}, outside "
                                           f"[{low}, {high}]; TensorFlow's reader (tf.make_ndarray) refuses it")
    return wide.astype(storage)


def _typed_values(proto, info: _TypeInfo, count: int, code: int, source, max_expanded_bytes: int) -> np.ndarray:
    values = getattr(proto, info.value_field)
    if info.value_field == "float8_val":
        raw = np.frombuffer(values, dtype=np.uint8)
    elif info.value_field in ("scomplex_val", "dcomplex_val"):
        parts = np.asarray(values, dtype=np.float32 if info.value_field == "scomplex_val" else np.float64)
        raw = parts[:parts.size // 2 * 2].view(info.storage)  # an odd last part is dropped, as pairs are read
    elif info.value_field == "half_val" or (info.storage.kind in "iu" and info.value_field == "int_val"):
        raw = _checked_integers(values, info, code, source, info.value_field)
    else:
        raw = np.asarray(values, dtype=info.storage)
    if raw.size > count:
        raise ReferenceFormatError(source, f"{tf_dtype_name(code)} TensorProto stores {raw.size} values for "
                                           f"{count} elements; TensorFlow's reader (tf.make_ndarray) refuses more "
                                           "values than elements")
    if raw.size == count:
        return raw
    if count * info.storage.itemsize > max_expanded_bytes:
        raise ReferenceFormatError(source, f"{tf_dtype_name(code)} TensorProto stores {raw.size} values for "
                                           f"{count} elements; expanding would need {count * info.storage.itemsize}"
                                           f" bytes, over the {max_expanded_bytes}-byte limit")
    expanded = np.zeros(count, dtype=info.storage)
    if raw.size:
        expanded[:raw.size] = raw
        expanded[raw.size:] = raw[-1]
    return expanded


def tensor_proto_to_numpy(proto, source=None, max_expanded_bytes: int = MAX_EXPANDED_BYTES) -> Optional[np.ndarray]:
    """Convert a TensorProto (message or serialized bytes) to a numpy array.

    Parameters
    ----------
    proto : TensorProto message (any class with TensorFlow's field names) or bytes
    source : path, optional
        Named in errors.
    max_expanded_bytes : int
        Largest array built by repeating typed values (see module docstring).

    Returns
    -------
    numpy.ndarray or None
        ``None`` for ``DT_RESOURCE``. bf16/fp8/fp4 come back as float32 (exact).

    Raises
    ------
    ReferenceFormatError
        Undecodable bytes, an unknown or negative shape, a content size that does not match the
        shape, a non-numeric dtype.
    """
    if isinstance(proto, (bytes, bytearray, memoryview)):
        try:
            proto = tf_schema.TensorProto.FromString(bytes(proto))
        except DecodeError as error:
            raise ReferenceFormatError(source, f"not a TensorProto ({error})") from None
    code = proto.dtype
    info = _type_info(code, source)
    if info is None:
        return None
    shape = _check_shape((dim.size for dim in proto.tensor_shape.dim), proto.tensor_shape.unknown_rank, source)
    if proto.tensor_content:
        return decode_tensor_content(code, shape, proto.tensor_content, source)
    raw = _typed_values(proto, info, element_count(shape), code, source, max_expanded_bytes)
    array = info.convert(raw) if info.convert is not None else raw
    return array.reshape(shape)


@dataclass(frozen=True)
class TensorLocation:
    """What :func:`scan_tensor_proto` found: dtype, shape, and where the raw bytes are.

    ``content`` is ``(start, end)`` of ``tensor_content`` in the scanned buffer, or ``None`` when the
    values are in typed fields (then decode ``proto_span`` with :func:`tensor_proto_to_numpy`).
    """

    dtype_code: int
    shape: Tuple[int, ...]
    proto_span: Tuple[int, int]
    content: Optional[Tuple[int, int]]

    @property
    def dtype_name(self) -> str:
        """``"DT_FLOAT"``."""
        return tf_dtype_name(self.dtype_code)


def _scan_shape(buf, start: int, end: int, source) -> Tuple[int, ...]:
    dim_number = tf_schema.field_number("TensorShapeProto", "dim")
    unknown_number = tf_schema.field_number("TensorShapeProto", "unknown_rank")
    size_number = tf_schema.field_number("TensorShapeDim", "size")
    dims, unknown_rank = [], False
    for field in iter_wire_fields(buf, start, end, source, "TensorShapeProto"):
        if field.number == dim_number and field.wire_type == WIRE_LEN:
            size = 0
            for dim_field in iter_wire_fields(buf, field.start, field.end, source, "TensorShapeProto.Dim"):
                if dim_field.number == size_number and dim_field.wire_type == WIRE_VARINT:
                    size = signed64(dim_field.value)
            dims.append(size)
        elif field.number == unknown_number and field.wire_type == WIRE_VARINT:
            unknown_rank = bool(field.value)
    return _check_shape(dims, unknown_rank, source)


def scan_tensor_proto(buf, start: int, end: int, source=None) -> TensorLocation:
    """Locate dtype, shape and ``tensor_content`` of the TensorProto in ``buf[start:end]``.

    Reads tags and small fields only; the content bytes are not touched (``buf`` can be an mmap).
    Raises :class:`ReferenceFormatError` for malformed wire data or a bad shape.
    """
    dtype_number = tf_schema.field_number("TensorProto", "dtype")
    shape_number = tf_schema.field_number("TensorProto", "tensor_shape")
    content_number = tf_schema.field_number("TensorProto", "tensor_content")
    code, content = 0, None
    shape: Tuple[int, ...] = ()
    for field in iter_wire_fields(buf, start, end, source, "TensorProto"):
        if field.number == dtype_number and field.wire_type == WIRE_VARINT:
            code = signed64(field.value)
        elif field.number == shape_number and field.wire_type == WIRE_LEN:
            shape = _scan_shape(buf, field.start, field.end, source)
        elif field.number == content_number and field.wire_type == WIRE_LEN:
            content = (field.start, field.end) if field.end > field.start else None
    return TensorLocation(code, shape, (start, end), content)


def load_located_tensor(buf, location: TensorLocation, source=None,
                        max_expanded_bytes: int = MAX_EXPANDED_BYTES) -> Optional[np.ndarray]:
    """The array of a tensor found by :func:`scan_tensor_proto` in ``buf``.

    With ``tensor_content``, the bytes are viewed in place (a ``bytearray`` ``buf`` gives a writable
    array that keeps ``buf`` alive); otherwise the TensorProto is decoded.
    """
    if location.content is not None:
        start, end = location.content
        return decode_tensor_content(location.dtype_code, location.shape, memoryview(buf)[start:end], source)
    start, end = location.proto_span
    return tensor_proto_to_numpy(bytes(buf[start:end]), source, max_expanded_bytes)


_CODE_BY_NUMPY: Dict[np.dtype, int] = {
    np.dtype("<f4"): 1, np.dtype("<f8"): 2, np.dtype("<i4"): 3, np.dtype("u1"): 4, np.dtype("<i2"): 5,
    np.dtype("i1"): 6, np.dtype("<c8"): 8, np.dtype("<i8"): 9, np.dtype("?"): 10, np.dtype("<u2"): 17,
    np.dtype("<c16"): 18, np.dtype("<f2"): 19, np.dtype("<u4"): 22, np.dtype("<u8"): 23,
}


def numpy_to_tensor_proto(array) -> Message:
    """A TensorProto holding ``array`` in ``tensor_content`` (as tfdbg writes it), for tests and samples.

    Raises ``ValueError`` for dtypes TensorFlow has no number for here (objects, strings, records).
    """
    array = np.asarray(array)
    little = array.dtype.newbyteorder("<") if array.dtype.byteorder == ">" else array.dtype
    code = _CODE_BY_NUMPY.get(little)
    if code is None:
        raise ValueError(f"no TensorFlow dtype for numpy dtype {array.dtype}")
    proto = tf_schema.TensorProto(dtype=code, tensor_content=np.ascontiguousarray(array, dtype=little).tobytes())
    for size in array.shape:
        proto.tensor_shape.dim.add(size=size)
    return proto
