"""Protobuf messages as plain Python records, and the binary wire format read into them, without the protobuf runtime.

The ``DumpData`` header of each dump file and a Build graph in GE's JSON or text form are decoded into records
(:class:`RecordSchema`, from the same field tables as :mod:`~precision_tool.formats.protoschema`) as protobuf's
parsers read them, and a field sent under the wrong wire type is remembered (:meth:`Record.mistyped`), which
protobuf 3.19-7 report in no common way (``UnknownFields()`` there, a separate module in 7). What ``make bench``
shows (benchmarks/machinery.py): the protobuf runtime's start (15 ms) kept off every compare; runtime, 300 headers and
the graph 15-21 ms faster with TF 1.15's and 2.6's protobuf, 80 ms with pure-Python protobuf, about even with
protobuf 7's upb (whose parser decodes the headers 2-8 ms per 300 faster).
Rules: docs/internals/formats.md#proto_records.
"""
from __future__ import annotations

import math
import struct
import types
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple, Type

FieldRow = Tuple[int, str, str]

VARINT, FIXED64, LENGTH, START_GROUP, END_GROUP, FIXED32 = 0, 1, 2, 3, 4, 5

_SCALAR_DEFAULTS: Dict[str, Any] = {"string": "", "bytes": b"", "bool": False, "int32": 0, "int64": 0, "uint32": 0,
                                    "uint64": 0, "float": 0.0, "double": 0.0, "enum": 0}
_WIRE_OF = {"string": LENGTH, "bytes": LENGTH, "message": LENGTH, "map": LENGTH, "float": FIXED32,
            "double": FIXED64}
_FLOAT32, _FLOAT64 = struct.Struct("<f"), struct.Struct("<d")
_EMPTY_MAP: Mapping[Any, Any] = types.MappingProxyType({})
#: Messages (and unknown groups) nested deeper than this are refused, as protobuf's parsers refuse them (their
#: default recursion limit is 100).
MAX_DEPTH = 100
_LARGEST_KEY = (1 << 32) - 1  # field numbers go up to 2**29 - 1, so a key fits in 32 bits


class FieldType:
    """protobuf's field type numbers (``FieldDescriptorProto.Type`` in ``descriptor.proto``, named as on
    ``FieldDescriptor``), for code that reads protobuf's field descriptors without importing the runtime at load."""

    (TYPE_DOUBLE, TYPE_FLOAT, TYPE_INT64, TYPE_UINT64, TYPE_INT32, TYPE_FIXED64, TYPE_FIXED32, TYPE_BOOL, TYPE_STRING,
     TYPE_GROUP, TYPE_MESSAGE, TYPE_BYTES, TYPE_UINT32, TYPE_ENUM, TYPE_SFIXED32, TYPE_SFIXED64, TYPE_SINT32,
     TYPE_SINT64) = range(1, 19)


_TYPE_OF_KIND = {"string": FieldType.TYPE_STRING, "bytes": FieldType.TYPE_BYTES, "bool": FieldType.TYPE_BOOL,
                 "int32": FieldType.TYPE_INT32, "int64": FieldType.TYPE_INT64, "uint32": FieldType.TYPE_UINT32,
                 "uint64": FieldType.TYPE_UINT64, "float": FieldType.TYPE_FLOAT, "double": FieldType.TYPE_DOUBLE,
                 "enum": FieldType.TYPE_ENUM, "message": FieldType.TYPE_MESSAGE, "map": FieldType.TYPE_MESSAGE}


class ProtoDecodeError(ValueError):
    """Bytes that are not the protobuf wire format of the message asked for."""


class FieldSpec:
    """One field of a message table.

    ``kind`` is a scalar type name (``"int64"``, ``"string"``, ...), ``"enum"``, ``"message"`` or ``"map"``;
    ``message`` names the record type of a message field or a map's values (``None`` otherwise; a map's values are
    always messages); ``map_key`` is the kind of a map's keys; ``enum`` names an enum field's enum; ``oneof`` names
    the oneof the field belongs to. ``is_repeated`` and ``type`` (:class:`FieldType`'s number; a map's is a message's)
    mirror protobuf's field descriptors.
    """

    __slots__ = ("number", "name", "kind", "repeated", "message", "map_key", "enum", "oneof", "wire",
                 "wires", "signed_bits", "is_repeated", "type")

    def __init__(self, number: int, name: str, kind: str, repeated: bool, message: Optional[str] = None,
                 map_key: Optional[str] = None, enum: Optional[str] = None):
        self.number, self.name, self.kind, self.repeated, self.message = number, name, kind, repeated, message
        self.map_key, self.enum = map_key, enum
        self.oneof: Optional[str] = None
        self.wire = _WIRE_OF.get(kind, VARINT)
        packable = repeated and self.wire != LENGTH
        self.wires = (self.wire, LENGTH) if packable else (self.wire,)  # the wire types the field is read from
        self.signed_bits = {"int32": 32, "enum": 32, "int64": 64}.get(kind, 0)
        self.is_repeated = repeated or kind == "map"
        self.type = _TYPE_OF_KIND[kind]

    def __repr__(self) -> str:
        return f"<field {self.number} {self.name}: {self.kind}{' (repeated)' if self.repeated else ''}>"


class Record:
    """Base of the record classes: a message's set fields live in the instance, defaults in the class.

    Records are built by :meth:`RecordSchema.decode` and the JSON readers, and only read afterwards: the
    defaults (an empty record, ``()``, an empty mapping) are shared by every record of a type.
    """

    _fields: Dict[str, FieldSpec] = {}
    _ordered: Tuple[FieldSpec, ...] = ()
    _oneofs: Dict[str, Tuple[str, ...]] = {}

    def HasField(self, name: str) -> bool:  # protobuf's name: readers take either
        """Whether a message field (or a oneof member) is set."""
        return name in self.__dict__

    def WhichOneof(self, oneof: str) -> Optional[str]:
        """The member of ``oneof`` that is set, or ``None``."""
        for member in self._oneofs[oneof]:
            if member in self.__dict__:
                return member
        return None

    def mistyped(self) -> Tuple[str, ...]:
        """The fields that came with a wire type their type never has -- skipped, as protobuf skips them: present in
        the data, yet unusable (a damaged header). A singular field set again later, well typed, is not named (its
        last value is the one protobuf keeps); a repeated one is (an element was lost)."""
        return tuple(dict.fromkeys(name for name in self.__dict__.get("_mistyped", ())
                                   if self._fields[name].is_repeated or name not in self.__dict__))

    def ListFields(self) -> List[Tuple[FieldSpec, Any]]:
        """``(field, value)`` of the fields present, by field number: set messages and oneof members, non-empty
        repeated fields and maps, scalars other than their default (proto3 keeps no other presence)."""
        present = []
        values = self.__dict__
        for field in self._ordered:
            if field.name not in values:
                continue
            value = values[field.name]
            if field.is_repeated:
                if not value:
                    continue
            elif field.kind != "message" and field.oneof is None and _is_default(field.kind, value):
                continue
            present.append((field, value))
        return present

    def __repr__(self) -> str:
        shown = ", ".join(f"{name}={value!r}" for name, value in self.__dict__.items())
        return f"{type(self).__name__}({shown})"


def clear_oneof(record: Record, oneof: str) -> None:
    """Unset every member of ``record``'s ``oneof``: what setting one of them does first (the last one set wins). A
    function, not a method: a message may have a field of any name, and a field's default, a class attribute, would
    hide a method of that name."""
    values = record.__dict__
    for member in record._oneofs[oneof]:
        values.pop(member, None)


class RecordSchema:
    """Record classes and a wire decoder for the messages of one field table (``name -> [(number, name, type)]``,
    types as in :mod:`~precision_tool.formats.protoschema`), with its enums (``name -> {number: value name}``)
    and oneofs (``message -> {oneof: member names}``)."""

    def __init__(self, messages: Mapping[str, Sequence[FieldRow]], enums: Optional[Mapping[str, Mapping]] = None,
                 oneofs: Optional[Mapping[str, Mapping[str, Sequence[str]]]] = None):
        self.enums: Dict[str, Dict[str, int]] = {
            name: {value_name: number for number, value_name in values.items()}
            for name, values in (enums or {}).items()}
        self._records: Dict[str, Type[Record]] = {}
        self._by_number: Dict[str, Dict[int, FieldSpec]] = {}
        for message_name, rows in messages.items():
            fields = [self._field(message_name, row, messages) for row in rows]
            for oneof, members in (oneofs or {}).get(message_name, {}).items():
                for field in fields:
                    if field.name in members:
                        field.oneof = oneof
            self._by_number[message_name] = {field.number: field for field in fields}
            self._records[message_name] = type(message_name, (Record,), {
                "_fields": {field.name: field for field in fields},
                "_ordered": tuple(sorted(fields, key=lambda f: f.number)),
                "_oneofs": {oneof: tuple(members) for oneof, members in (oneofs or {}).get(message_name, {}).items()},
                "__module__": __name__})
        for record in self._records.values():  # defaults, once every class exists
            for field in record._fields.values():
                setattr(record, field.name, self._default(field))

    def _field(self, message_name: str, row: FieldRow, messages: Mapping) -> FieldSpec:
        number, name, spec = row
        spec = spec.strip()
        if spec.startswith("map<"):
            key, value = (part.strip() for part in spec[4:-1].split(","))
            if self._kind(value, messages) != "message":
                raise ValueError(f"map {message_name}.{name}: only maps of messages are supported")
            return FieldSpec(number, name, "map", False, value, self._kind(key, messages))
        repeated = spec.startswith("repeated ")
        type_name = spec[len("repeated "):].strip() if repeated else spec
        kind = self._kind(type_name, messages)
        return FieldSpec(number, name, kind, repeated, type_name if kind == "message" else None,
                         enum=type_name if kind == "enum" else None)

    def _kind(self, type_name: str, messages: Mapping) -> str:
        if type_name in _SCALAR_DEFAULTS:
            return type_name
        if type_name in self.enums:
            return "enum"
        if type_name in messages:
            return "message"
        raise ValueError(f"unknown field type {type_name!r}")

    def _default(self, field: FieldSpec) -> Any:
        if field.kind == "map":
            return _EMPTY_MAP
        if field.repeated:
            return ()
        if field.kind == "message":
            return self.empty(field.message or "")
        return _SCALAR_DEFAULTS[field.kind]

    # ------------------------------------------------------------------ records
    def empty(self, name: str) -> Record:
        """A record of ``name`` with no field set."""
        return self._records[name]()

    def fields(self, name: str) -> Dict[str, FieldSpec]:
        """Field name -> :class:`FieldSpec` of message ``name``."""
        return self._records[name]._fields

    # ------------------------------------------------------------------ the wire format
    def decode(self, name: str, data: bytes) -> Record:
        """The record of message ``name`` whose wire format is ``data``; :class:`ProtoDecodeError` if it is not."""
        data = bytes(data)
        try:
            return self._message(name, data, 0, len(data), None, 0)
        except IndexError:
            raise ProtoDecodeError(f"the data end inside a field ({len(data)} bytes)") from None
        except RecursionError:  # a backstop: MAX_DEPTH stops nesting well before Python's limit
            raise ProtoDecodeError(f"messages nested too deeply to read ({len(data)} bytes)") from None

    def _message(self, name: str, data: bytes, position: int, end: int, into: Optional[Record],
                 depth: int) -> Record:
        if depth > MAX_DEPTH:
            raise ProtoDecodeError(f"byte {position}: messages nested more than {MAX_DEPTH} deep")
        by_number = self._by_number[name]
        record = self._records[name]() if into is None else into
        values = record.__dict__
        while position < end:
            key_at = position
            key = data[position]  # one-byte keys and lengths (fields 1-15, values below 128) inline: most of them
            if key < 0x80:
                position += 1
            else:
                key, position = _varint(data, position)
            number, wire = key >> 3, key & 7
            if not number or key > _LARGEST_KEY:
                raise ProtoDecodeError(f"byte {key_at}: field number {number}, which protobuf does not have")
            field = by_number.get(number)
            if field is None or wire not in field.wires:  # a wire type its type never has: unknown to protobuf too
                position = _skip(data, position, end, number, wire, key_at, depth)
                if field is not None:  # skipped as protobuf skips it, and remembered (Record.mistyped)
                    values["_mistyped"] = values.get("_mistyped", ()) + (field.name,)
                continue
            if wire == VARINT:
                value: Any = data[position]
                if value < 0x80:
                    position += 1
                else:
                    value, position = _varint(data, position)
                if field.signed_bits:
                    value = _signed(value, field.signed_bits)
                elif field.kind == "uint32":
                    value &= 0xFFFFFFFF
                elif field.kind == "bool":
                    value = value != 0
            elif wire == FIXED32 or wire == FIXED64:
                size = 4 if wire == FIXED32 else 8
                if position + size > end:
                    raise ProtoDecodeError(f"byte {key_at}: field {number} runs past the end of its message")
                value = (_FLOAT32 if size == 4 else _FLOAT64).unpack_from(data, position)[0]
                position += size
            else:
                length = data[position]
                if length < 0x80:
                    position += 1
                else:
                    length, position = _varint(data, position)
                stop = position + length
                if stop > end:
                    raise ProtoDecodeError(f"byte {key_at}: field {number} of {length} bytes runs past the end of "
                                           "its message")
                kind = field.kind
                if kind == "message":
                    # a singular message read twice is merged
                    current = None if field.repeated else values.get(field.name)
                    value = self._message(field.message or "", data, position, stop, current, depth + 1)
                elif kind == "string":
                    try:
                        value = data[position:stop].decode("utf-8")
                    except UnicodeDecodeError:
                        raise ProtoDecodeError(f"byte {key_at}: field {number} ({field.name}) is not UTF-8 "
                                               "text") from None
                elif kind == "bytes":
                    value = data[position:stop]
                elif kind == "map":
                    self._map_entry(field, values, data, position, stop, depth + 1)
                    position = stop
                    continue
                else:  # packed repeated scalars
                    values.setdefault(field.name, []).extend(_packed(field, data, position, stop, key_at))
                    position = stop
                    continue
                position = stop
            if field.repeated:
                values.setdefault(field.name, []).append(value)
            else:
                if field.oneof is not None and values:
                    clear_oneof(record, field.oneof)
                values[field.name] = value
        if position != end:
            raise ProtoDecodeError(f"byte {end}: a field runs past the end of its message")
        return record

    def _map_entry(self, field: FieldSpec, values: Dict[str, Any], data: bytes, position: int, stop: int,
                   depth: int) -> None:
        key: Any = _SCALAR_DEFAULTS.get(field.map_key or "", "")
        value: Any = None
        while position < stop:
            key_at = position
            tag, position = _varint(data, position)
            number, wire = tag >> 3, tag & 7
            if not number or tag > _LARGEST_KEY:
                raise ProtoDecodeError(f"byte {key_at}: field number {number}, which protobuf does not have")
            if number == 1 and wire == _WIRE_OF.get(field.map_key or "", VARINT):
                if wire == LENGTH:
                    length, position = _varint(data, position)
                    if position + length > stop:
                        raise ProtoDecodeError(f"byte {key_at}: a map key runs past its entry")
                    try:
                        key = data[position:position + length]
                        key = key.decode("utf-8") if field.map_key == "string" else key
                    except UnicodeDecodeError:
                        raise ProtoDecodeError(f"byte {key_at}: a map key is not UTF-8 text") from None
                    position += length
                else:
                    raw, position = _varint(data, position)
                    key = _from_varint(field.map_key or "int64", raw)
            elif number == 2 and wire == LENGTH:
                length, position = _varint(data, position)
                if position + length > stop:
                    raise ProtoDecodeError(f"byte {key_at}: a map value runs past its entry")
                value = self._message(field.message or "", data, position, position + length, value, depth + 1)
                position += length
            else:
                position = _skip(data, position, stop, number, wire, key_at, depth)
        if position != stop:
            raise ProtoDecodeError(f"byte {stop}: a field runs past the end of its map entry")
        if value is None:
            value = self.empty(field.message or "")
        current = values.get(field.name)
        if current is None:
            current = values[field.name] = {}
        current[key] = value


_INT_RANGES = {"int32": (-(1 << 31), (1 << 31) - 1), "enum": (-(1 << 31), (1 << 31) - 1),
               "int64": (-(1 << 63), (1 << 63) - 1), "uint32": (0, (1 << 32) - 1), "uint64": (0, (1 << 64) - 1)}


def stored_value(kind: str, value: Any) -> Any:
    """``value`` as a field of ``kind`` stores it, where protobuf's setters check and convert: an integer kind
    (``int32``, ``int64``, ``uint32``, ``uint64``, ``enum``) out of its range raises ``ValueError`` with protobuf's
    words (``Value out of range: N``); a ``float`` is rounded to float32 (beyond its range, an infinity); a
    ``string`` that cannot be UTF-8 (a lone surrogate) raises ``UnicodeEncodeError``. Other values pass as they
    are (the caller checked their types)."""
    bounds = _INT_RANGES.get(kind)
    if bounds is not None:
        if not bounds[0] <= value <= bounds[1]:
            raise ValueError(f"Value out of range: {value}")
        return value
    if kind == "float":
        try:
            return _FLOAT32.unpack(_FLOAT32.pack(value))[0]
        except OverflowError:
            return math.copysign(math.inf, value)
    if kind == "string":
        value.encode("utf-8")
    return value


def _is_default(kind: str, value: Any) -> bool:
    """Whether a scalar holds its proto3 default (-0.0 does not: its bits differ, as protobuf tells them)."""
    if kind in ("float", "double"):
        return value == 0.0 and math.copysign(1.0, value) > 0
    return value == _SCALAR_DEFAULTS[kind]


def _varint(data: bytes, position: int) -> Tuple[int, int]:
    """The varint at ``position`` and the position after it (``IndexError`` when the data end inside it)."""
    byte = data[position]
    if byte < 0x80:
        return byte, position + 1
    result, shift = byte & 0x7F, 7
    position += 1
    while True:
        byte = data[position]
        position += 1
        result |= (byte & 0x7F) << shift
        if byte < 0x80:
            return result & 0xFFFFFFFFFFFFFFFF, position
        shift += 7
        if shift >= 70:
            raise ProtoDecodeError(f"byte {position - 10}: a varint longer than 10 bytes")


def _signed(raw: int, bits: int) -> int:
    """A varint's low ``bits`` bits as a two's complement integer (int32 and enums 32, int64 64)."""
    raw &= (1 << bits) - 1
    return raw - (1 << bits) if raw >> (bits - 1) else raw


def _from_varint(kind: str, raw: int) -> Any:
    if kind == "bool":
        return raw != 0
    if kind == "int64":
        return _signed(raw, 64)
    if kind in ("int32", "enum"):
        return _signed(raw, 32)
    if kind == "uint32":
        return raw & 0xFFFFFFFF
    return raw


def _packed(field: FieldSpec, data: bytes, position: int, stop: int, key_at: int) -> List[Any]:
    if field.wire == VARINT:
        items = []
        kind = field.kind
        while position < stop:
            raw = data[position]
            if raw < 0x80 and kind != "bool":  # a small non-negative number reads as itself in every other kind
                items.append(raw)
                position += 1
                continue
            raw, position = _varint(data, position)
            items.append(_from_varint(kind, raw))
        if position != stop:
            raise ProtoDecodeError(f"byte {key_at}: packed field {field.number} ends inside a varint")
        return items
    size = 4 if field.wire == FIXED32 else 8
    if (stop - position) % size:
        raise ProtoDecodeError(f"byte {key_at}: packed field {field.number} is not a whole number of values")
    unpack = (_FLOAT32 if size == 4 else _FLOAT64).unpack_from
    return [unpack(data, offset)[0] for offset in range(position, stop, size)]


def _skip(data: bytes, position: int, end: int, number: int, wire: int, key_at: int, depth: int) -> int:
    """The position after an unknown field's value (a group: after its end-group key; groups count towards
    :data:`MAX_DEPTH` like messages)."""
    if wire == VARINT:
        return _varint(data, position)[1]
    if wire in (FIXED64, FIXED32):
        position += 8 if wire == FIXED64 else 4
    elif wire == LENGTH:
        length, position = _varint(data, position)
        position += length
    elif wire == START_GROUP:
        if depth >= MAX_DEPTH:
            raise ProtoDecodeError(f"byte {key_at}: groups nested more than {MAX_DEPTH} deep")
        while True:
            if position >= end:
                raise ProtoDecodeError(f"byte {key_at}: group {number} has no end")
            inner_at = position
            key, position = _varint(data, position)
            if not key >> 3 or key > _LARGEST_KEY:
                raise ProtoDecodeError(f"byte {inner_at}: field number {key >> 3}, which protobuf does not have")
            if key & 7 == END_GROUP:
                if key >> 3 != number:
                    raise ProtoDecodeError(f"byte {inner_at}: group {number} ends as group {key >> 3}")
                return position
            position = _skip(data, position, end, key >> 3, key & 7, inner_at, depth + 1)
    else:
        raise ProtoDecodeError(f"byte {key_at}: field {number} has wire type {wire}, which protobuf does not have"
                               if wire != END_GROUP else f"byte {key_at}: end of group {number} without its start")
    if position > end:
        raise ProtoDecodeError(f"byte {key_at}: field {number} runs past the end of its message")
    return position


__all__ = ["RecordSchema", "Record", "FieldSpec", "FieldType", "ProtoDecodeError", "stored_value"]
