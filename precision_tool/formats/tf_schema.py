"""TensorFlow's ``Event``, ``TensorProto`` and ``DebugEvent`` messages, as small field tables.

Only the fields precision_tool reads, numbered as TensorFlow numbers them (``event.proto``, ``summary.proto``,
``tensor.proto``, ``tensor_shape.proto``, ``types.proto``, ``graph.proto``, ``node_def.proto``,
``debug_event.proto``, all proto3): fields left out are kept as unknown fields and ignored, so newer TensorFlow
versions still decode. :func:`iter_wire_fields` walks a message's wire format without decoding it: the tfdbg readers
find a tensor's dtype, shape and bytes reading a few hundred bytes, and load the bytes later with one read. Why
enums are ``int32`` and nested messages top-level: docs/internals/formats.md#tf_schema.
"""
from __future__ import annotations

from typing import Dict, Iterator, NamedTuple, Optional

from precision_tool.errors import ReferenceFormatError
from precision_tool.formats.protoschema import build_messages

PACKAGE = "precision_tool.tensorflow"

MESSAGES = {
    "TensorShapeDim": [(1, "size", "int64"), (2, "name", "string")],
    "TensorShapeProto": [(2, "dim", "repeated TensorShapeDim"), (3, "unknown_rank", "bool")],
    "TensorProto": [
        (1, "dtype", "int32"),  # tensorflow.DataType
        (2, "tensor_shape", "TensorShapeProto"),
        (3, "version_number", "int32"),
        (4, "tensor_content", "bytes"),
        (5, "float_val", "repeated float"),
        (6, "double_val", "repeated double"),
        (7, "int_val", "repeated int32"),
        (8, "string_val", "repeated bytes"),
        (9, "scomplex_val", "repeated float"),
        (10, "int64_val", "repeated int64"),
        (11, "bool_val", "repeated bool"),
        (12, "dcomplex_val", "repeated double"),
        (13, "half_val", "repeated int32"),  # fp16 / bf16 bit patterns, one per int32
        (14, "resource_handle_val", "repeated bytes"),  # ResourceHandleProto messages, kept opaque
        (15, "variant_val", "repeated bytes"),  # VariantTensorDataProto messages, kept opaque
        (16, "uint32_val", "repeated uint32"),
        (17, "uint64_val", "repeated uint64"),
        (18, "float8_val", "bytes"),  # one byte per fp8 / fp4 element
    ],
    "SummaryValue": [
        (1, "tag", "string"),
        (2, "simple_value", "float"),
        (7, "node_name", "string"),  # tfdbg v1: "node:slot:DebugOp"
        (8, "tensor", "TensorProto"),
    ],
    "Summary": [(1, "value", "repeated SummaryValue")],
    "Event": [
        (1, "wall_time", "double"),  # tfdbg v1 writes microseconds here
        (2, "step", "int64"),
        (3, "file_version", "string"),
        (4, "graph_def", "bytes"),  # serialized GraphDef (tfdbg v1 "_tfdbg_graph_hash..." files)
        (5, "summary", "Summary"),
    ],
    "NodeDef": [(1, "name", "string"), (2, "op", "string"), (3, "input", "repeated string"),
                (4, "device", "string")],
    "GraphDef": [(1, "node", "repeated NodeDef")],
    "DebugMetadata": [(1, "tensorflow_version", "string"), (2, "file_version", "string"),
                      (3, "tfdbg_run_id", "string")],
    "GraphOpCreation": [
        (1, "op_type", "string"),
        (2, "op_name", "string"),
        (3, "graph_name", "string"),
        (4, "graph_id", "string"),
        (5, "device_name", "string"),
        (6, "input_names", "repeated string"),
        (7, "num_outputs", "int32"),
        (9, "output_tensor_ids", "repeated int32"),
    ],
    "DebuggedGraph": [
        (1, "graph_id", "string"),
        (2, "graph_name", "string"),
        (3, "instrumented_ops", "repeated string"),
        (6, "outer_context_id", "string"),
    ],
    "DebuggedDevice": [(1, "device_name", "string"), (2, "device_id", "int32")],
    "GraphExecutionTrace": [
        (1, "tfdbg_context_id", "string"),  # id of the graph that ran the op
        (2, "op_name", "string"),
        (3, "output_slot", "int32"),
        (4, "tensor_debug_mode", "int32"),  # TensorDebugMode
        (5, "tensor_proto", "TensorProto"),
        (6, "device_name", "string"),
    ],
    "DebugEvent": [
        (1, "wall_time", "double"),  # seconds
        (2, "step", "int64"),
        (3, "debug_metadata", "DebugMetadata"),
        (7, "graph_op_creation", "GraphOpCreation"),
        (8, "debugged_graph", "DebuggedGraph"),
        (10, "graph_execution_trace", "GraphExecutionTrace"),
        (11, "graph_id", "string"),
        (12, "debugged_device", "DebuggedDevice"),
    ],
}

# tensorflow.DataType (types.proto). The *_REF variants are these numbers + 100.
TF_DATA_TYPES: Dict[int, str] = {
    0: "DT_INVALID", 1: "DT_FLOAT", 2: "DT_DOUBLE", 3: "DT_INT32", 4: "DT_UINT8", 5: "DT_INT16",
    6: "DT_INT8", 7: "DT_STRING", 8: "DT_COMPLEX64", 9: "DT_INT64", 10: "DT_BOOL", 11: "DT_QINT8",
    12: "DT_QUINT8", 13: "DT_QINT32", 14: "DT_BFLOAT16", 15: "DT_QINT16", 16: "DT_QUINT16",
    17: "DT_UINT16", 18: "DT_COMPLEX128", 19: "DT_HALF", 20: "DT_RESOURCE", 21: "DT_VARIANT",
    22: "DT_UINT32", 23: "DT_UINT64", 24: "DT_FLOAT8_E5M2", 25: "DT_FLOAT8_E4M3FN",
    26: "DT_FLOAT8_E4M3FNUZ", 27: "DT_FLOAT8_E4M3B11FNUZ", 28: "DT_FLOAT8_E5M2FNUZ", 29: "DT_INT4",
    30: "DT_UINT4", 31: "DT_INT2", 32: "DT_UINT2", 33: "DT_FLOAT4_E2M1FN",
}
REF_TYPE_OFFSET = 100

# tensorflow.TensorDebugMode (debug_event.proto)
TENSOR_DEBUG_MODES: Dict[int, str] = {
    0: "UNSPECIFIED", 1: "NO_TENSOR", 2: "CURT_HEALTH", 3: "CONCISE_HEALTH", 4: "FULL_HEALTH",
    5: "SHAPE", 6: "FULL_NUMERICS", 7: "FULL_TENSOR", 8: "REDUCE_INF_NAN_THREE_SLOTS",
}
FULL_TENSOR_MODE = 7

_CLASSES = build_messages(PACKAGE, MESSAGES)
TensorShapeProto = _CLASSES["TensorShapeProto"]
TensorProto = _CLASSES["TensorProto"]
SummaryValue = _CLASSES["SummaryValue"]
Summary = _CLASSES["Summary"]
Event = _CLASSES["Event"]
NodeDef = _CLASSES["NodeDef"]
GraphDef = _CLASSES["GraphDef"]
GraphOpCreation = _CLASSES["GraphOpCreation"]
DebuggedGraph = _CLASSES["DebuggedGraph"]
GraphExecutionTrace = _CLASSES["GraphExecutionTrace"]
DebugEvent = _CLASSES["DebugEvent"]


def field_number(message: str, field: str) -> int:
    """The number of ``field`` in ``message`` as the tables above give it (``KeyError`` if absent)."""
    for number, name, _ in MESSAGES[message]:
        if name == field:
            return number
    raise KeyError(f"{message}.{field}")


def tf_dtype_name(code: int) -> str:
    """``1`` -> ``"DT_FLOAT"``, ``101`` -> ``"DT_FLOAT_REF"``, unknown -> ``"DT_UNKNOWN(99)"``."""
    if code in TF_DATA_TYPES:
        return TF_DATA_TYPES[code]
    if code - REF_TYPE_OFFSET in TF_DATA_TYPES and code > REF_TYPE_OFFSET:
        return TF_DATA_TYPES[code - REF_TYPE_OFFSET] + "_REF"
    return f"DT_UNKNOWN({code})"


# --------------------------------------------------------------------------------------------------
# Wire-format walking (https://protobuf.dev/programming-guides/encoding/): tag = number << 3 | type.
WIRE_VARINT, WIRE_I64, WIRE_LEN, WIRE_I32 = 0, 1, 2, 5
_MAX_VARINT_BYTES = 10


class WireField(NamedTuple):
    """One field occurrence found by :func:`iter_wire_fields`.

    ``value`` is the decoded varint (as an unsigned 64-bit number), or the little-endian integer of
    an I32/I64 field, or the payload length of a LEN field. ``start``/``end`` delimit the payload
    in the buffer (for a varint, its bytes).
    """

    number: int
    wire_type: int
    value: int
    start: int
    end: int


def _read_varint(buf, pos: int, end: int, source, what: str):
    result = 0
    for shift_index in range(_MAX_VARINT_BYTES):
        if pos >= end:
            raise ReferenceFormatError(source, f"{what}: truncated (a varint runs past the end)")
        byte = buf[pos]
        pos += 1
        result |= (byte & 0x7F) << (7 * shift_index)
        if byte < 0x80:
            if result >= 1 << 64:
                raise ReferenceFormatError(source, f"{what}: a varint exceeds 64 bits")
            return result, pos
    raise ReferenceFormatError(source, f"{what}: a varint is longer than 10 bytes")


def iter_wire_fields(buf, start: int, end: int, source=None, what: str = "protobuf message"
                     ) -> Iterator[WireField]:
    """Yield the fields of the message stored in ``buf[start:end]``, without copying payloads.

    Parameters
    ----------
    buf : bytes, bytearray, memoryview or mmap
        Anything indexable by byte position. Only tags, varints and fixed-width values are read.
    start, end : int
        The message's extent in ``buf``.
    source : path, optional
        Named in errors.
    what : str
        What the bytes should be (``"tfdbg v1 Event"``), for errors.

    Raises
    ------
    ReferenceFormatError
        A truncated field, a payload running past ``end``, a group or unknown wire type, or field
        number 0.
    """
    pos = start
    while pos < end:
        tag, pos = _read_varint(buf, pos, end, source, what)
        number, wire_type = tag >> 3, tag & 7
        if number == 0:
            raise ReferenceFormatError(source, f"{what}: field number 0 at byte {pos}")
        if wire_type == WIRE_VARINT:
            value_start = pos
            value, pos = _read_varint(buf, pos, end, source, what)
            yield WireField(number, wire_type, value, value_start, pos)
            continue
        if wire_type in (WIRE_I64, WIRE_I32):
            width = 8 if wire_type == WIRE_I64 else 4
            if pos + width > end:
                raise ReferenceFormatError(source, f"{what}: truncated fixed-width field {number}")
            value = int.from_bytes(bytes(buf[pos:pos + width]), "little")
            yield WireField(number, wire_type, value, pos, pos + width)
            pos += width
            continue
        if wire_type == WIRE_LEN:
            length, pos = _read_varint(buf, pos, end, source, what)
            if length > end - pos:
                raise ReferenceFormatError(
                    source, f"{what}: field {number} claims {length} bytes but only {end - pos} remain")
            yield WireField(number, wire_type, length, pos, pos + length)
            pos += length
            continue
        raise ReferenceFormatError(source, f"{what}: unsupported wire type {wire_type} (field {number})")


def signed64(value: int) -> int:
    """A varint read as unsigned 64-bit, reinterpreted as the int32/int64 it encodes."""
    return value - (1 << 64) if value >= 1 << 63 else value


def wire_string(buf, wire_field: WireField, source=None, what: str = "string field") -> str:
    """Decode a LEN field as UTF-8 text (``ReferenceFormatError`` if it is not valid UTF-8)."""
    try:
        return bytes(buf[wire_field.start:wire_field.end]).decode("utf-8")
    except UnicodeDecodeError:
        raise ReferenceFormatError(source, f"{what}: not valid UTF-8") from None


def last_field(fields, number: int, wire_type: int) -> Optional[WireField]:
    """The last occurrence of field ``number`` with ``wire_type`` (protobuf: the last one wins)."""
    found = None
    for wire_field in fields:
        if wire_field.number == number and wire_field.wire_type == wire_type:
            found = wire_field
    return found
