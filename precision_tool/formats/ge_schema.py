"""GE's ``ge.proto`` model schema (``ModelDef`` and everything it holds) as field tables.

The facts: ``../shared/docs/ascend-formats.md`` §6. The JSON form is read into records (:data:`GE_RECORDS`,
:mod:`precision_tool.formats.proto_records`: no protobuf runtime to import); the text forms and the writers use
protobuf classes built from the same tables (use :func:`ge_messages`, built once and cached, rather than the tables).
Every field of that table is here but ``attr_groups`` (field 12 of ModelDef / GraphDef) and ``AttrDef.expression``
(field 17), whose layout differs between CANN versions: readers allow unknown fields, so files carrying them load,
without them. Nested types are top-level (``AttrDef.ListValue`` is ``ListValue``). See
docs/internals/formats.md#ge_schema.
"""
from __future__ import annotations

import functools
from typing import Dict


from precision_tool.formats.dtypes import DTYPE_ENUM_NAMES
from precision_tool.formats.proto_records import RecordSchema

PACKAGE = "ge.proto"  # GE's own package name, so parse errors name "ge.proto.OpDef" etc.

LIST_VALUE_TYPES: Dict[int, str] = {
    0: "VT_LIST_NONE", 1: "VT_LIST_STRING", 2: "VT_LIST_INT", 3: "VT_LIST_FLOAT", 4: "VT_LIST_BOOL",
    5: "VT_LIST_BYTES", 6: "VT_LIST_TENSOR_DESC", 7: "VT_LIST_TENSOR", 8: "VT_LIST_GRAPH",
    9: "VT_LIST_NAMED_ATTRS", 10: "VT_LIST_DATA_TYPE",
}

ENUMS = {
    "DataType": dict(DTYPE_ENUM_NAMES),
    "ListValueType": LIST_VALUE_TYPES,
}

MESSAGES = {
    "ModelDef": [
        (1, "name", "string"), (2, "version", "uint32"), (3, "custom_version", "string"),
        (7, "graph", "repeated GraphDef"), (11, "attr", "map<string,AttrDef>"),
    ],
    "GraphDef": [
        (1, "name", "string"), (4, "input", "repeated string"), (5, "output", "repeated string"),
        (6, "op", "repeated OpDef"), (11, "attr", "map<string,AttrDef>"),
    ],
    "OpDef": [
        (1, "name", "string"), (2, "type", "string"), (5, "input", "repeated string"),
        (10, "attr", "map<string,AttrDef>"), (20, "has_out_attr", "bool"), (21, "id", "int64"),
        (22, "stream_id", "int64"), (23, "input_name", "repeated string"), (24, "src_name", "repeated string"),
        (25, "src_index", "repeated int64"), (26, "dst_name", "repeated string"),
        (27, "dst_index", "repeated int64"), (28, "input_i", "repeated int64"),
        (29, "output_i", "repeated int64"), (30, "workspace", "repeated int64"),
        (31, "workspace_bytes", "repeated int64"), (32, "is_input_const", "repeated bool"),
        (33, "input_desc", "repeated TensorDescriptor"), (34, "output_desc", "repeated TensorDescriptor"),
        (35, "subgraph_name", "repeated string"),
    ],
    "TensorDescriptor": [
        (1, "name", "string"), (2, "dtype", "DataType"), (3, "shape", "ShapeDef"), (4, "layout", "string"),
        (5, "attr", "map<string,AttrDef>"), (9, "has_out_attr", "bool"), (10, "size", "int64"),
        (11, "weight_size", "int64"), (12, "reuse_input", "bool"), (13, "output_tensor", "bool"),
        (14, "device_type", "string"), (15, "input_tensor", "bool"), (16, "real_dim_cnt", "int64"),
        (17, "reuse_input_index", "int64"), (18, "data_offset", "int64"), (19, "cmps_size", "int64"),
        (20, "cmps_tab", "string"), (21, "cmps_tab_offset", "int64"),
    ],
    "ShapeDef": [(1, "dim", "repeated int64")],
    # In ge.proto these are members of the oneof ``value`` (ATTR_VALUE_FIELDS below).
    "AttrDef": [
        (1, "list", "ListValue"), (2, "s", "bytes"), (3, "i", "int64"), (4, "f", "float"), (5, "b", "bool"),
        (7, "bt", "bytes"), (10, "func", "NamedAttrs"), (11, "td", "TensorDescriptor"), (12, "t", "TensorDef"),
        (13, "g", "GraphDef"), (14, "list_list_int", "ListListInt"), (15, "dt", "int64"),
        (16, "list_list_float", "ListListFloat"),
    ],
    "ListValue": [
        (2, "s", "repeated bytes"), (3, "i", "repeated int64"), (4, "f", "repeated float"),
        (5, "b", "repeated bool"), (7, "bt", "repeated bytes"), (8, "td", "repeated TensorDescriptor"),
        (9, "t", "repeated TensorDef"), (10, "g", "repeated GraphDef"), (11, "na", "repeated NamedAttrs"),
        (12, "dt", "repeated int64"), (20, "val_type", "ListValueType"),
    ],
    "TensorDef": [(1, "desc", "TensorDescriptor"), (2, "data", "bytes")],
    "NamedAttrs": [(1, "name", "string"), (2, "attr", "map<string,AttrDef>")],
    "ListListInt": [(1, "list_list_i", "repeated ListInt")],
    "ListInt": [(1, "list_i", "repeated int64")],
    "ListListFloat": [(1, "list_list_f", "repeated ListFloat")],
    "ListFloat": [(1, "list_f", "repeated float")],
}

# The members of ge.proto's ``AttrDef.value`` oneof: at most one is set in a well-formed file.
ATTR_VALUE_FIELDS = ("list", "s", "i", "f", "b", "bt", "func", "td", "t", "g", "list_list_int", "dt",
                     "list_list_float")


ONEOFS = {"AttrDef": {"value": ATTR_VALUE_FIELDS}}

GE_RECORDS = RecordSchema(MESSAGES, ENUMS, ONEOFS)
"""The record classes the JSON form is read into (``GE_RECORDS.empty("ModelDef")``)."""


@functools.lru_cache(maxsize=None)
def ge_messages() -> Dict[str, type]:
    """The ``ge.proto`` message classes by name (``"ModelDef"``, ``"OpDef"``, ...), built on first use (this imports
    protobuf).

    ``AttrDef.value`` is a oneof, so a scalar keeps its presence at the default: ``value { i: 0 }`` (the most
    common ``_datadump_origin_output_index``) does not read back as an empty AttrDef.
    """
    from precision_tool.formats.protoschema import build_messages

    return build_messages(PACKAGE, MESSAGES, ENUMS, oneofs=ONEOFS)


def is_repeated(field_descriptor) -> bool:
    """Whether a field is repeated, on every protobuf runtime (7.x dropped ``FieldDescriptor.label``)."""
    flag = getattr(field_descriptor, "is_repeated", None)
    if flag is not None:
        return bool(flag)
    return field_descriptor.label == field_descriptor.LABEL_REPEATED  # pragma: no cover - protobuf < 5


def is_map(field_descriptor) -> bool:
    """Whether a field is a proto3 map (a repeated synthetic ``...Entry`` message)."""
    message_type = field_descriptor.message_type
    return message_type is not None and message_type.GetOptions().map_entry


class FieldInfo:
    """What the readers and writers need of one field, worked out once per message type.

    ``presence_key`` is the oneof's name for oneof members (setting two of them is an error) and the
    field's own name otherwise.
    """

    __slots__ = ("descriptor", "name", "type", "repeated", "map", "presence_key", "map_value")

    def __init__(self, descriptor):
        self.descriptor = descriptor
        self.name = descriptor.name
        self.type = descriptor.type
        self.repeated = is_repeated(descriptor)
        self.map = is_map(descriptor)
        oneof = descriptor.containing_oneof
        self.presence_key = oneof.name if oneof is not None else descriptor.name
        self.map_value = descriptor.message_type.fields_by_name["value"] if self.map else None


_FIELD_TABLES: Dict[str, Dict[str, FieldInfo]] = {}


def field_table(message_descriptor) -> Dict[str, FieldInfo]:
    """Field name -> :class:`FieldInfo` for a message type (cached by the type's full name)."""
    table = _FIELD_TABLES.get(message_descriptor.full_name)
    if table is None:
        table = {name: FieldInfo(fd) for name, fd in message_descriptor.fields_by_name.items()}
        _FIELD_TABLES[message_descriptor.full_name] = table
    return table
