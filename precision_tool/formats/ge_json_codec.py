"""The JSON form of a GE graph: what ``atc --mode=5`` writes and msaccucmp's ``compare -f`` reads.

It is the ``ModelDef`` as JSON, but not protobuf's own JSON mapping. Checked against msaccucmp's reader
(``vector_cmp/fusion_manager/fusion_rule_parser.py`` in mindstudio-probe 26.2.0) and GE's writer:

* field names as in ge.proto (``output_desc``, not ``outputDesc``); defaults left out;
* maps as lists of ``{"key": ..., "value": {...}}``;
* enums by name (``"dtype": "DT_FLOAT16"``, ``"val_type": "VT_LIST_INT"``);
* int64 as JSON numbers, not strings: msaccucmp rejects ``"id": "3"`` and ``{"i": "0"}`` (``isinstance(.., int)``);
* ``s`` as a plain string, not base64: msaccucmp compares ``_datadump_origin_name`` with file names.

Reading is lenient where GE and protobuf differ: float may be a number or a string (GE prints singular
floats with ``%g``), int64 may be a decimal string (protobuf's mapping), a map may be a JSON object, and
``null`` (GE's output for an empty message) counts as absent. Other bytes fields (``bt``, tensor
``data``) are C-escaped strings both ways, as GE writes them. GE also C-escapes singular ``s`` values;
for names (printable ASCII without quotes or backslashes) that is the identity, so ``s`` is read as is.

Numbers are checked before Python converts them: an integer of more than 20 digits (more than any GE field
holds; Python 3.11+ refuses ``int()`` of more than 4,300) is kept as a :class:`LongInteger` and refused where a
field is read, naming its JSON path; a number given as a string must be ASCII (``"٣"`` is not 3, though
``int()`` and ``float()`` would say so).
"""
from __future__ import annotations

import json
import math
import re
import reprlib
from typing import Any, Dict

from google.protobuf import text_encoding
from google.protobuf.descriptor import FieldDescriptor

from precision_tool.errors import GraphFormatError
from precision_tool.formats.ge_proto_codec import shortest_float32
from precision_tool.formats.ge_schema import field_table
from precision_tool.formats.ge_text import MAX_INT_DIGITS, c_unescape

_FD = FieldDescriptor
_INT_TYPES = {_FD.TYPE_INT32, _FD.TYPE_INT64, _FD.TYPE_UINT32, _FD.TYPE_UINT64, _FD.TYPE_SINT32,
              _FD.TYPE_SINT64, _FD.TYPE_FIXED32, _FD.TYPE_FIXED64, _FD.TYPE_SFIXED32, _FD.TYPE_SFIXED64}
_FLOAT_TYPES = {_FD.TYPE_FLOAT, _FD.TYPE_DOUBLE}
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
        return text_encoding.CEscape(value, as_utf8=False)
    if field.type in _FLOAT_TYPES:
        if not math.isfinite(value):
            return str(value)  # "inf", "-inf", "nan": JSON has no literal for them
        return shortest_float32(value) if field.type == _FD.TYPE_FLOAT else value
    return value


# ----------------------------------------------------------------------------------------- JSON -> message
def json_to_message(obj: Any, message, source=None, path: str = "") -> None:
    """Fill ``message`` from ``obj`` (a dict in GE's JSON form), checking every value's type.

    Unknown keys are skipped. Raises :class:`GraphFormatError` naming ``source`` and the JSON path of
    the first bad value (``graph[0].op[3].attr[1].value.i: expected an integer, got "x"``).
    """
    if not isinstance(obj, dict):
        raise _bad(source, path, "expected an object", obj)
    table = field_table(message.DESCRIPTOR)
    for key, value in obj.items():
        info = table.get(key)
        if info is None or value is None:
            continue
        where = f"{path}.{key}" if path else key
        if info.map:
            _map_from_json(value, getattr(message, key), info.map_value, source, where)
        elif info.repeated:
            if not isinstance(value, list):
                raise _bad(source, where, "expected a list", value)
            target = getattr(message, key)
            for k, item in enumerate(value):
                if info.type == _FD.TYPE_MESSAGE:
                    json_to_message({} if item is None else item, target.add(), source, f"{where}[{k}]")
                else:
                    _append(target, _scalar(info.descriptor, item, source, f"{where}[{k}]"), source, f"{where}[{k}]")
        elif info.type == _FD.TYPE_MESSAGE:
            child = getattr(message, key)
            child.SetInParent()
            json_to_message(value, child, source, where)
        else:
            _set(message, key, _scalar(info.descriptor, value, source, where), source, where)


def _map_from_json(value, target, value_field, source, where) -> None:
    if isinstance(value, dict):  # protobuf's own JSON mapping
        entries = [(k, v, f"{where}.{k}") for k, v in value.items()]
    elif isinstance(value, list):
        entries = []
        for k, entry in enumerate(value):
            if not isinstance(entry, dict) or not isinstance(entry.get("key"), str):
                raise _bad(source, f"{where}[{k}]", 'expected {"key": "...", "value": {...}}', entry)
            entries.append((entry["key"], entry.get("value"), f"{where}[{k}].value"))
    else:
        raise _bad(source, where, "expected a list of key/value objects", value)
    for key, item, item_where in entries:
        if value_field.type == _FD.TYPE_MESSAGE:
            try:
                entry = target[key]
            except (ValueError, TypeError, UnicodeError) as exc:
                raise _bad(source, item_where, f"has a key that cannot be stored ({exc})", key) from None
            json_to_message({} if item is None else item, entry, source, item_where)
        else:
            _set_item(target, key, _scalar(value_field, item, source, item_where), source, item_where)


def _scalar(field, value, source, where) -> Any:
    kind = field.type
    if kind == _FD.TYPE_STRING:
        if isinstance(value, str):
            return value
        raise _bad(source, where, "expected a string", value)
    if kind == _FD.TYPE_BYTES:
        if not isinstance(value, str):
            raise _bad(source, where, "expected a string", value)
        if field.name in PLAIN_BYTES_FIELDS:
            return value.encode("utf-8", "surrogateescape")
        try:
            return c_unescape(value)
        except ValueError:
            raise _bad(source, where, "expected a C-escaped byte string", value) from None
    if kind == _FD.TYPE_BOOL:
        if isinstance(value, bool):
            return value
        raise _bad(source, where, "expected true or false", value)
    if kind == _FD.TYPE_ENUM:
        return _enum(field, value, source, where)
    if kind in _INT_TYPES:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        if isinstance(value, str) and _DECIMAL.fullmatch(value):
            return int(value)
        raise _bad(source, where, "expected an integer", value)
    if kind in _FLOAT_TYPES:
        if isinstance(value, str) and not _FLOAT_TEXT.fullmatch(value):
            raise _bad(source, where, "expected a number", value)
        if isinstance(value, (int, float, str)) and not isinstance(value, bool):
            try:
                return float(value)
            except (ValueError, OverflowError):
                pass
        raise _bad(source, where, "expected a number", value)
    raise _bad(source, where, "has a type this reader does not know", value)  # pragma: no cover


def _enum(field, value, source, where) -> int:
    if isinstance(value, str):
        enum_value = field.enum_type.values_by_name.get(value)
        if enum_value is None:
            raise _bad(source, where, f"is not a {field.enum_type.name} name", value)
        return enum_value.number
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    raise _bad(source, where, f"expected a {field.enum_type.name} name", value)


def _set(message, name, value, source, where) -> None:
    try:
        setattr(message, name, value)
    except (ValueError, TypeError, OverflowError, UnicodeError) as exc:
        raise _bad(source, where, f"cannot be stored ({exc})", value) from None


def _append(target, value, source, where) -> None:
    try:
        target.append(value)
    except (ValueError, TypeError, OverflowError, UnicodeError) as exc:
        raise _bad(source, where, f"cannot be stored ({exc})", value) from None


def _set_item(target, key, value, source, where) -> None:
    try:
        target[key] = value
    except (ValueError, TypeError, OverflowError, UnicodeError) as exc:
        raise _bad(source, where, f"cannot be stored ({exc})", value) from None


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
