"""The JSON form of a GE graph: what ``atc --mode=5`` writes and msaccucmp's ``compare -f`` reads.

The ``ModelDef`` as JSON, but not protobuf's own JSON mapping: field names as in ge.proto, defaults left out, maps
as lists of ``{"key": ..., "value": {...}}``, enums by name, int64 as JSON numbers (msaccucmp rejects strings),
``s`` as plain text (not base64), other bytes fields C-escaped. Reading is lenient where GE and protobuf differ
(floats or int64 as strings, maps as objects, ``null`` as absent); an integer of more than 20 digits is kept as a
:class:`LongInteger` and refused where a field is read. Details: docs/internals/formats.md#ge_json_codec.
"""
from __future__ import annotations

import json
import math
import re
import reprlib
from typing import Any, Dict, List, Optional, Tuple

from precision_tool.errors import GraphFormatError
from precision_tool.formats.ge_proto_codec import shortest_float32
from precision_tool.formats.ge_schema import GE_RECORDS, field_table
from precision_tool.formats.ge_text import MAX_INT_DIGITS, c_unescape
from precision_tool.formats.proto_records import FieldSpec, FieldType, Record, clear_oneof, stored_value

_FD = FieldType
_FLOAT_TYPES = {_FD.TYPE_FLOAT, _FD.TYPE_DOUBLE}
_INTEGER_KINDS = frozenset({"int32", "int64", "uint32", "uint64", "enum"})
_DECIMAL = re.compile(r"-?[0-9]{1,%d}" % MAX_INT_DIGITS)
# What GE (``%g``: 1e-05, inf, nan) and protobuf's JSON mapping (Infinity, NaN) write for a float, in ASCII.
_FLOAT_TEXT = re.compile(r"[-+]?(?:(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][-+]?[0-9]+)?|inf(?:inity)?|nan)", re.IGNORECASE)
PLAIN_BYTES_FIELDS = frozenset({"s"})  # AttrDef.s and ListValue.s: text, read and written as plain strings


class LongInteger:
    """A JSON integer of more than :data:`MAX_INT_DIGITS` digits, kept as text: no field takes it."""

    __slots__ = ("digits",)

    def __init__(self, digits: str):
        self.digits = digits

    def __repr__(self) -> str:
        return f"<an integer of {len(self.digits.lstrip('-')):,} digits>"


def json_integer(digits: str):
    """``json.loads``' ``parse_int``: ``int(digits)``, or a :class:`LongInteger` past :data:`MAX_INT_DIGITS`."""
    return int(digits) if len(digits.lstrip("-")) <= MAX_INT_DIGITS else LongInteger(digits)


def load_json_text(text: str, source=None) -> Any:
    """``json.loads(text)`` with long integers kept as :class:`LongInteger`.

    Raises :class:`GraphFormatError` naming ``source``, the line and column of a syntax error, or nesting too
    deep to read.
    """
    try:
        return json.loads(text, parse_int=json_integer)
    except json.JSONDecodeError as exc:
        raise GraphFormatError(source, f"line {exc.lineno}, column {exc.colno}: {exc.msg}", "not valid JSON") from None
    except RecursionError:
        raise GraphFormatError(source, "nested too deeply to read") from None


# ----------------------------------------------------------------------------------------- message -> JSON
def message_to_json(message) -> Dict[str, Any]:
    """A JSON-ready dict of ``message`` in GE's JSON form (see module docstring); set fields only."""
    out: Dict[str, Any] = {}
    table = field_table(message.DESCRIPTOR)
    for field, value in message.ListFields():
        info = table[field.name]
        if info.map:
            out[field.name] = [{"key": key, "value": _value_to_json(info.map_value, value[key])}
                               for key in sorted(value)]
        elif info.repeated:
            out[field.name] = [_value_to_json(field, item) for item in value]
        else:
            out[field.name] = _value_to_json(field, value)
    return out


def _value_to_json(field, value) -> Any:
    if field.type == _FD.TYPE_MESSAGE:
        return message_to_json(value)
    if field.type == _FD.TYPE_ENUM:
        enum_value = field.enum_type.values_by_number.get(value)
        return enum_value.name if enum_value is not None else value
    if field.type == _FD.TYPE_BYTES:
        if field.name in PLAIN_BYTES_FIELDS:
            return value.decode("utf-8", "surrogateescape")
        from google.protobuf import text_encoding  # the writer has protobuf loaded already (it walks a message)

        return text_encoding.CEscape(value, as_utf8=False)
    if field.type in _FLOAT_TYPES:
        if not math.isfinite(value):
            return str(value)  # "inf", "-inf", "nan": JSON has no literal for them
        return shortest_float32(value) if field.type == _FD.TYPE_FLOAT else value
    return value


# ----------------------------------------------------------------------------------------- JSON -> record
def json_to_record(obj: Any, name: str, source=None) -> Record:
    """The ``ge.proto`` record of message ``name`` (:data:`~precision_tool.formats.ge_schema.GE_RECORDS`) that
    ``obj`` (a dict in GE's JSON form) holds, every value's type checked as protobuf checks a value it is given.

    Unknown keys are skipped; ``null`` counts as absent. Raises :class:`GraphFormatError` naming ``source`` and
    the JSON path of the first bad value (``graph[0].op[3].attr[1].value.i: expected an integer, got "x"``).
    """
    record = GE_RECORDS.empty(name)
    _fill(obj, record, source, None)
    return record


# Where a value sits, as the error messages name it: ``None`` (the top level) or ``(parent, key, index)`` --
# written out only for an error (a Build graph has hundreds of thousands of values).
JsonPath = Optional[Tuple[Any, str, Optional[int]]]


def _path_text(path: JsonPath) -> str:
    parts: List[str] = []
    while path is not None:
        path, key, index = path
        parts.append(f"{key}[{index}]" if index is not None else key)
    return ".".join(reversed(parts))


def _fill(obj: Any, record: Record, source, path: JsonPath) -> None:
    """Set ``record``'s fields from ``obj``; a message field already set is filled further (merged)."""
    if not isinstance(obj, dict):
        raise _bad(source, _path_text(path), "expected an object", obj)
    fields = record._fields
    values = record.__dict__
    for key, value in obj.items():
        field = fields.get(key)
        if field is None or value is None:
            continue
        kind = field.kind
        if kind == "map":
            _map_from_json(value, values.setdefault(key, {}), field, source, (path, key, None))
        elif field.repeated:
            if not isinstance(value, list):
                raise _bad(source, _path_text((path, key, None)), "expected a list", value)
            items = values.setdefault(key, [])
            if kind == "message":
                for k, item in enumerate(value):
                    child = GE_RECORDS.empty(field.message or "")
                    _fill({} if item is None else item, child, source, (path, key, k))
                    items.append(child)
            else:
                items.extend([_scalar(field, item, source, (path, key, k)) for k, item in enumerate(value)])
        else:
            if kind == "message":
                existing = values.get(key)
                child = GE_RECORDS.empty(field.message or "") if existing is None else existing
                _fill(value, child, source, (path, key, None))
                value = child
            else:
                value = _scalar(field, value, source, (path, key, None))
            if field.oneof is not None and values:
                clear_oneof(record, field.oneof)
            values[key] = value


def _map_from_json(value, target: dict, field: FieldSpec, source, path: Tuple[Any, str, None]) -> None:
    parent, name, _ = path
    entries: List[Tuple[Any, Any, JsonPath]]
    if isinstance(value, dict):  # protobuf's own JSON mapping
        entries = [(k, v, (path, k, None)) for k, v in value.items()]
    elif isinstance(value, list):
        entries = []
        for k, entry in enumerate(value):
            if not isinstance(entry, dict) or not isinstance(entry.get("key"), str):
                raise _bad(source, _path_text((parent, name, k)), 'expected {"key": "...", "value": {...}}', entry)
            entries.append((entry["key"], entry.get("value"), ((parent, name, k), "value", None)))
    else:
        raise _bad(source, _path_text(path), "expected a list of key/value objects", value)
    for key, item, item_path in entries:
        entry = target.get(key)
        if entry is None:  # a key given twice fills one entry, as protobuf's map does
            try:
                key.encode("utf-8")
            except UnicodeError as exc:
                raise _bad(source, _path_text(item_path), f"has a key that cannot be stored ({exc})", key) from None
            entry = target[key] = GE_RECORDS.empty(field.message or "")
        _fill({} if item is None else item, entry, source, item_path)


def _scalar(field: FieldSpec, value, source, path: JsonPath) -> Any:
    kind = field.kind
    if kind == "string":
        if isinstance(value, str):
            return _stored(kind, value, source, path)
        raise _bad(source, _path_text(path), "expected a string", value)
    if kind in _INTEGER_KINDS:
        if kind == "enum":
            number = _enum(field, value, source, path)
        elif isinstance(value, int) and not isinstance(value, bool):
            number = value
        elif isinstance(value, str) and _DECIMAL.fullmatch(value):
            number = int(value)
        else:
            raise _bad(source, _path_text(path), "expected an integer", value)
        return _stored(kind, number, source, path)
    if kind == "bytes":
        if not isinstance(value, str):
            raise _bad(source, _path_text(path), "expected a string", value)
        if field.name in PLAIN_BYTES_FIELDS:
            return value.encode("utf-8", "surrogateescape")
        try:
            return c_unescape(value)
        except ValueError:
            raise _bad(source, _path_text(path), "expected a C-escaped byte string", value) from None
    if kind == "bool":
        if isinstance(value, bool):
            return value
        raise _bad(source, _path_text(path), "expected true or false", value)
    if kind in ("float", "double"):
        if isinstance(value, str) and not _FLOAT_TEXT.fullmatch(value):
            raise _bad(source, _path_text(path), "expected a number", value)
        if isinstance(value, (int, float, str)) and not isinstance(value, bool):
            try:
                real = float(value)
            except (ValueError, OverflowError):
                pass
            else:
                return _stored(kind, real, source, path)
        raise _bad(source, _path_text(path), "expected a number", value)
    raise _bad(source, _path_text(path), "has a type this reader does not know", value)  # pragma: no cover


def _stored(kind: str, value: Any, source, path: JsonPath) -> Any:
    """:func:`~precision_tool.formats.proto_records.stored_value`, its refusal worded with the JSON path."""
    try:
        return stored_value(kind, value)
    except (ValueError, UnicodeError) as exc:
        raise _bad(source, _path_text(path), f"cannot be stored ({exc})", value) from None


def _enum(field: FieldSpec, value, source, path: JsonPath) -> int:
    if isinstance(value, str):
        number = GE_RECORDS.enums[field.enum or ""].get(value)
        if number is None:
            raise _bad(source, _path_text(path), f"is not a {field.enum} name", value)
        return number
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    raise _bad(source, _path_text(path), f"expected a {field.enum} name", value)


def _bad(source, where: str, what: str, value: Any) -> GraphFormatError:
    return GraphFormatError(source, f"{where or 'top level'}: {what}, got {shown_value(value)}")


class _ShortRepr(reprlib.Repr):
    """``repr`` that looks at a few items and levels only, and never converts a huge integer to text."""

    def __init__(self):
        super().__init__()
        self.maxlevel, self.maxlist, self.maxdict, self.maxstring, self.maxother = 3, 4, 4, 60, 60

    def repr_int(self, x, level):
        if x.bit_length() <= 200:
            return repr(x)
        return f"<an integer of about {int(x.bit_length() * math.log10(2)) + 1:,} digits>"


_SHORT_REPR = _ShortRepr()


def shown_value(value: Any) -> str:
    """A short ``repr`` of ``value`` for an error message: at most 60 characters, cheap for any size."""
    shown = _SHORT_REPR.repr(value)
    return shown if len(shown) <= 60 else shown[:57] + "..."
