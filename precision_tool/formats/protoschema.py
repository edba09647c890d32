"""Protobuf message classes from small field tables: no ``protoc``, no generated ``*_pb2.py``.

:func:`build_messages` turns a table of ``(number, name, type)`` rows into a ``FileDescriptorProto`` in a private
descriptor pool and returns the message classes, with the protobuf runtime TensorFlow 2.21 pins or a newer one. A
type is a proto3 scalar (``"int64"``, ``"string"``, ...), another message or enum of the table, ``"repeated T"`` or
``"map<K,V>"``; ``oneofs`` group fields into a ``oneof`` (whose members keep presence at the default value).
The type strings in full: docs/internals/formats.md#protoschema.
"""
from __future__ import annotations

from typing import Dict, Mapping, Sequence, Tuple, Type

from google.protobuf import descriptor_pb2, descriptor_pool
from google.protobuf.message import Message

try:  # protobuf >= 4.21
    from google.protobuf.message_factory import GetMessageClass as _get_message_class
except ImportError:  # pragma: no cover - older runtimes
    from google.protobuf import message_factory as _mf

    def _get_message_class(descriptor):
        return _mf.MessageFactory().GetPrototype(descriptor)


FieldRow = Tuple[int, str, str]
_FDP = descriptor_pb2.FieldDescriptorProto
_SCALARS = {
    "string": _FDP.TYPE_STRING,
    "bytes": _FDP.TYPE_BYTES,
    "bool": _FDP.TYPE_BOOL,
    "int32": _FDP.TYPE_INT32,
    "int64": _FDP.TYPE_INT64,
    "uint32": _FDP.TYPE_UINT32,
    "uint64": _FDP.TYPE_UINT64,
    "float": _FDP.TYPE_FLOAT,
    "double": _FDP.TYPE_DOUBLE,
}


def _camel(name: str) -> str:
    return "".join(part[:1].upper() + part[1:] for part in name.split("_"))


def _fill_field(field, package: str, type_name: str, enums: Mapping, messages: Mapping) -> None:
    if type_name in _SCALARS:
        field.type = _SCALARS[type_name]
    elif type_name in enums:
        field.type = _FDP.TYPE_ENUM
        field.type_name = f".{package}.{type_name}"
    elif type_name in messages:
        field.type = _FDP.TYPE_MESSAGE
        field.type_name = f".{package}.{type_name}"
    else:
        raise ValueError(f"unknown field type {type_name!r} in schema {package}")


def build_messages(
    package: str,
    messages: Mapping[str, Sequence[FieldRow]],
    enums: Mapping[str, Mapping[int, str]] | None = None,
    oneofs: Mapping[str, Mapping[str, Sequence[str]]] | None = None,
) -> Dict[str, Type[Message]]:
    """Build message classes for ``messages`` (name -> rows), ``enums`` (name -> {number: value name})
    and ``oneofs`` (message name -> {oneof name: member field names}).

    Returns a dict of message name -> generated class. Raises ``ValueError`` for a table that names
    an unknown type (a bug in the table, not user input).

    >>> classes = build_messages("demo.pkg", {"Point": [(1, "x", "int64"), (2, "tags", "repeated string")]})
    >>> p = classes["Point"](x=3, tags=["a"])
    >>> classes["Point"].FromString(p.SerializeToString()).x
    3
    """
    enums = enums or {}
    fdp = descriptor_pb2.FileDescriptorProto(name=f"{package.replace('.', '/')}.proto", package=package,
                                             syntax="proto3")
    for enum_name, values in enums.items():
        enum = fdp.enum_type.add(name=enum_name)
        for number, value_name in sorted(values.items()):
            enum.value.add(name=value_name, number=number)
    for msg_name, rows in messages.items():
        msg = fdp.message_type.add(name=msg_name)
        for number, field_name, type_spec in rows:
            field = msg.field.add(name=field_name, number=number, json_name=_json_name(field_name))
            spec = type_spec.strip()
            if spec.startswith("map<"):
                key_type, value_type = (s.strip() for s in spec[4:-1].split(","))
                entry = msg.nested_type.add(name=_camel(field_name) + "Entry")
                entry.options.map_entry = True
                key = entry.field.add(name="key", number=1, label=_FDP.LABEL_OPTIONAL, json_name="key")
                _fill_field(key, package, key_type, enums, messages)
                value = entry.field.add(name="value", number=2, label=_FDP.LABEL_OPTIONAL, json_name="value")
                _fill_field(value, package, value_type, enums, messages)
                field.label = _FDP.LABEL_REPEATED
                field.type = _FDP.TYPE_MESSAGE
                field.type_name = f".{package}.{msg_name}.{entry.name}"
                continue
            if spec.startswith("repeated "):
                field.label = _FDP.LABEL_REPEATED
                spec = spec[len("repeated "):].strip()
            else:
                field.label = _FDP.LABEL_OPTIONAL
            _fill_field(field, package, spec, enums, messages)
        for oneof_index, (oneof_name, members) in enumerate((oneofs or {}).get(msg_name, {}).items()):
            msg.oneof_decl.add(name=oneof_name)
            by_name = {field.name: field for field in msg.field}
            for member in members:
                if member not in by_name:
                    raise ValueError(f"oneof {msg_name}.{oneof_name} names unknown field {member!r}")
                by_name[member].oneof_index = oneof_index
    pool = descriptor_pool.DescriptorPool()
    pool.Add(fdp)
    return {name: _get_message_class(pool.FindMessageTypeByName(f"{package}.{name}")) for name in messages}


def _json_name(field_name: str) -> str:
    head, *rest = field_name.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)

