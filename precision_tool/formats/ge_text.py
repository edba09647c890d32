"""Parse and print the protobuf text form of a GE graph (``ge_proto_*_Build.txt``).

protobuf's own text parser is pure Python and slow: 5-7 s for a synthetic 3,000-op Build graph (13 MB) on
the 2-core machine this was written on. GE prints one field per line (``name: value``, ``name {``, ``}``),
so :func:`parse_ge_text` first tries a line parser for exactly that layout, which fills the same message
through the same descriptors (about 1.3 s for that graph; 1.6 s with the conversion to the model). On
anything it does not handle -- comments, ``[1, 2]`` lists, several fields on a line, a field given twice, an
unknown enum name, a bad escape -- it gives up and the full parser (``text_format.Parse`` with unknown fields
allowed) reads the file from the start, so every result and every error message is the full parser's. A
differential fuzz test checks that the two agree.
"""
from __future__ import annotations

import re
import warnings

from google.protobuf import text_encoding, text_format
from google.protobuf.descriptor import FieldDescriptor

from precision_tool.errors import GraphFormatError
from precision_tool.formats.ge_schema import FieldInfo, field_table, ge_messages

_FD = FieldDescriptor
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_INT = re.compile(r"-?(?:0|[1-9][0-9]*)")
_FLOAT = re.compile(r"-?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?|-?inf|nan")
_STRING = re.compile(r'"(?:[^"\\\n]|\\.)*"')
_ANY_TOKEN = re.compile("|".join(p.pattern for p in (_STRING, _NAME, _INT, _FLOAT)))
_INT_TYPES = {_FD.TYPE_INT32, _FD.TYPE_INT64, _FD.TYPE_UINT32, _FD.TYPE_UINT64}
_MESSAGE, _MAP_ENTRY, _SKIP = 0, 1, 2


class _NotCanonical(Exception):
    """The fast parser met something outside GE's one-field-per-line layout."""


def _fields_of(message) -> dict:
    return field_table(message.DESCRIPTOR)


def parse_ge_text(text: str, source=None):
    """Parse ``text`` into a ge.proto ``ModelDef`` message; unknown fields are skipped.

    Raises :class:`GraphFormatError` naming ``source`` and the line and column of the first error.
    """
    message = ge_messages()["ModelDef"]()
    try:
        _parse_canonical(text, message)
        return message
    except _NotCanonical:
        message.Clear()
    try:
        with warnings.catch_warnings():  # Python's note on an obsolete escape such as "\\q" in a string
            warnings.simplefilter("ignore", DeprecationWarning)
            text_format.Parse(text, message, allow_unknown_field=True)
    except text_format.ParseError as exc:
        line, column = exc.GetLine(), exc.GetColumn()
        cause = str(exc)
        prefix = f"{line}:{column} : "
        if cause.startswith(prefix):
            cause = cause[len(prefix):]
        where = f"line {line}, column {column}: " if line else ""
        raise GraphFormatError(source, f"{where}{cause}", "not protobuf text of a GE ModelDef") from None
    except RecursionError:
        raise GraphFormatError(source, "blocks nested too deeply to read") from None
    return message


def format_ge_text(message) -> str:
    """The protobuf text form of a ``ModelDef`` message, as GE writes it (one field per line)."""
    return text_format.MessageToString(message)


def _parse_canonical(text: str, root) -> None:
    # Frames: [_MESSAGE, message, fields by name, names already set] -- [_MAP_ENTRY, map, key or None,
    # whether 'value' was read] -- [_SKIP, nesting depth inside an unknown field].
    stack = [[_MESSAGE, root, _fields_of(root), set()]]
    for raw in text.split("\n"):
        line = raw.strip()
        if not line:
            continue
        frame = stack[-1]
        if line == "}":
            _close(stack)
        elif line[-1] == "{":
            _open(stack, frame, line[:-1].rstrip())
        else:
            name, colon, value = line.partition(":")
            name, value = name.rstrip(), value.lstrip()
            if not colon or not _NAME.fullmatch(name):
                raise _NotCanonical
            _scalar_line(frame, name, value)
    if len(stack) != 1:
        raise _NotCanonical


def _open(stack, frame, name: str) -> None:
    if not _NAME.fullmatch(name):
        raise _NotCanonical
    kind = frame[0]
    if kind == _SKIP:
        frame[1] += 1
        return
    if kind == _MAP_ENTRY:
        if name != "value" or frame[2] is None or frame[3]:
            raise _NotCanonical
        frame[3] = True
        child = frame[1][frame[2]]
        stack.append([_MESSAGE, child, _fields_of(child), set()])
        return
    field = frame[2].get(name)
    if field is None:
        stack.append([_SKIP, 0])
        return
    if field.type != _FD.TYPE_MESSAGE:
        raise _NotCanonical
    message = frame[1]
    if field.map:
        if field.map_value.type != _FD.TYPE_MESSAGE:
            raise _NotCanonical
        stack.append([_MAP_ENTRY, getattr(message, name), None, False])
        return
    if field.repeated:
        child = getattr(message, name).add()
    else:
        _mark_set(frame, field)
        child = getattr(message, name)
        child.SetInParent()
    stack.append([_MESSAGE, child, _fields_of(child), set()])


def _close(stack) -> None:
    frame = stack[-1]
    if len(stack) == 1:
        raise _NotCanonical
    if frame[0] == _SKIP and frame[1]:
        frame[1] -= 1
        return
    if frame[0] == _MAP_ENTRY and not frame[3]:
        key = "" if frame[2] is None else frame[2]
        if key in frame[1]:
            raise _NotCanonical
        frame[1][key]  # reading a map key adds it: an entry without 'value' still exists, empty
    stack.pop()


def _scalar_line(frame, name: str, value: str) -> None:
    kind = frame[0]
    if kind == _SKIP:
        if not _ANY_TOKEN.fullmatch(value):
            raise _NotCanonical
        return
    if kind == _MAP_ENTRY:
        if name != "key" or frame[2] is not None or frame[3] or not _STRING.fullmatch(value):
            raise _NotCanonical
        try:
            key = _unquote(value).decode("utf-8")
        except UnicodeDecodeError:
            raise _NotCanonical from None
        if key in frame[1]:
            raise _NotCanonical  # a repeated key: let the full parser decide
        frame[2] = key
        return
    field = frame[2].get(name)
    if field is None:
        if not _ANY_TOKEN.fullmatch(value):
            raise _NotCanonical
        return
    parsed = _value(field, value)
    message = frame[1]
    try:
        if field.repeated:
            getattr(message, name).append(parsed)
        else:
            _mark_set(frame, field)
            setattr(message, name, parsed)
    except (ValueError, TypeError, OverflowError):
        raise _NotCanonical from None


def _mark_set(frame, field: FieldInfo) -> None:
    seen = frame[3]
    if field.presence_key in seen:
        raise _NotCanonical
    seen.add(field.presence_key)


def _value(field: FieldInfo, value: str):
    kind = field.type
    if kind in (_FD.TYPE_STRING, _FD.TYPE_BYTES):
        if not _STRING.fullmatch(value):
            raise _NotCanonical
        data = _unquote(value)
        if kind == _FD.TYPE_BYTES:
            return data
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError:
            raise _NotCanonical from None
    if kind in _INT_TYPES:
        if not _INT.fullmatch(value):
            raise _NotCanonical
        return int(value)
    if kind == _FD.TYPE_ENUM:
        enum_value = field.descriptor.enum_type.values_by_name.get(value)
        if enum_value is not None:
            return enum_value.number
        if _INT.fullmatch(value):
            return int(value)
        raise _NotCanonical
    if kind == _FD.TYPE_BOOL:
        if value in ("true", "false"):
            return value == "true"
        raise _NotCanonical
    if kind in (_FD.TYPE_FLOAT, _FD.TYPE_DOUBLE) and _FLOAT.fullmatch(value):
        return float(value)
    raise _NotCanonical


def _unquote(token: str) -> bytes:
    try:
        return c_unescape(token[1:-1])
    except ValueError:
        raise _NotCanonical from None


def c_unescape(text: str) -> bytes:
    """Bytes from a C-escaped string (``\\n``, ``\\377``, ``\\x41``), as protobuf text and GE's JSON write them.

    Raises ``ValueError`` for a malformed or obsolete escape (``\\q``, ``\\400``, a lone ``\\``), which
    Python would otherwise accept with a DeprecationWarning.
    """
    if "\\" not in text:
        return text.encode("utf-8")
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        try:
            return text_encoding.CUnescape(text)
        except (UnicodeError, DeprecationWarning) as exc:
            raise ValueError(f"bad escape in {text!r}: {exc}") from None
