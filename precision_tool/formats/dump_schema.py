"""The ``toolkit.dumpdata.DumpData`` header of an Ascend op dump file, as field tables (``ascend-formats.md`` §1).

Readers decode headers into records (:data:`DUMP_RECORDS`, :mod:`precision_tool.formats.proto_records`: no
protobuf runtime to import); writers and tests use protobuf classes built from the same tables on first use
(:func:`dump_messages`; the module attributes :data:`DumpData`, :data:`OpInput`, :data:`OpOutput`, :data:`Shape`,
:data:`OriginalOp`, :data:`OpBuffer`, :data:`OpAttr`, :data:`Workspace`, :data:`DimRange`). Enum value names are
CANN's (``DT_FLOAT16``, ``FORMAT_NC1HWC0``); enums are open. See docs/internals/formats.md#dump_schema.
"""
from __future__ import annotations

import functools
from typing import Dict

from precision_tool.formats.dtypes import DTYPE_ENUM_NAMES, FORMAT_NAMES
from precision_tool.formats.proto_records import RecordSchema

PACKAGE = "toolkit.dumpdata"

# proto3 enums need a value 0: DT_UNDEFINED, FORMAT_NCHW, L1 and LOG are the zeros.
ENUMS = {
    "OutputDataType": dict(DTYPE_ENUM_NAMES),
    "OutputFormat": {number: f"FORMAT_{name}" for number, name in FORMAT_NAMES.items()},
    "BufferType": {0: "L1"},
    # Nested ``Workspace.SpaceType`` in CANN's .proto; the nesting does not change the wire format.
    "SpaceType": {0: "LOG"},
}

MESSAGES = {
    "Shape": [(1, "dim", "repeated uint64")],
    "OriginalOp": [
        (1, "name", "string"),
        (2, "output_index", "uint32"),
        (3, "data_type", "OutputDataType"),
        (4, "format", "OutputFormat"),
    ],
    "DimRange": [(1, "dim_start", "uint64"), (2, "dim_end", "uint64")],
    "OpOutput": [
        (1, "data_type", "OutputDataType"),
        (2, "format", "OutputFormat"),
        (3, "shape", "Shape"),
        (4, "original_op", "OriginalOp"),
        (5, "data", "bytes"),
        (6, "size", "uint64"),
        (7, "original_shape", "Shape"),
        (8, "sub_format", "int32"),
        (9, "address", "uint64"),
        (10, "dim_range", "repeated DimRange"),
        (11, "offset", "uint64"),
    ],
    "OpInput": [
        (1, "data_type", "OutputDataType"),
        (2, "format", "OutputFormat"),
        (3, "shape", "Shape"),
        (4, "data", "bytes"),
        (5, "size", "uint64"),
        (6, "original_shape", "Shape"),
        (7, "sub_format", "int32"),
        (8, "address", "uint64"),
        (9, "offset", "uint64"),
    ],
    "OpBuffer": [(1, "buffer_type", "BufferType"), (2, "data", "bytes"), (3, "size", "uint64")],
    "OpAttr": [(1, "name", "string"), (2, "value", "string")],
    "Workspace": [(1, "type", "SpaceType"), (2, "data", "bytes"), (3, "size", "uint64")],
    "DumpData": [
        (1, "version", "string"),
        (2, "dump_time", "uint64"),
        (3, "output", "repeated OpOutput"),  # outputs are field 3 ...
        (4, "input", "repeated OpInput"),  # ... inputs field 4, yet inputs come first in the payload
        (5, "buffer", "repeated OpBuffer"),
        (6, "op_name", "string"),
        (7, "attr", "repeated OpAttr"),
        (8, "space", "repeated Workspace"),
    ],
}

DUMP_RECORDS = RecordSchema(MESSAGES, ENUMS)
"""The header's record classes and wire decoder: ``DUMP_RECORDS.decode("DumpData", header_bytes)``."""

_CLASS_NAMES = ("DumpData", "OpInput", "OpOutput", "Shape", "OriginalOp", "OpBuffer", "OpAttr", "Workspace",
                "DimRange")


@functools.lru_cache(maxsize=None)
def dump_messages() -> Dict[str, type]:
    """The protobuf classes of the header by name (built once, on first use: this imports protobuf)."""
    from precision_tool.formats.protoschema import build_messages

    return build_messages(PACKAGE, MESSAGES, ENUMS)


def __getattr__(name: str):
    """``dump_schema.DumpData`` and the other classes of :data:`_CLASS_NAMES`, built when first asked for."""
    if name in _CLASS_NAMES:
        return dump_messages()[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
