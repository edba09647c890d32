"""Parse and print the protobuf text form of a GE graph (``ge_proto_*_Build.txt``).

:func:`parse_ge_text` first tries a line parser for GE's layout (one field per line: ``name: value``, ``name {``,
``}``), which fills the same message through the same descriptors several times faster than protobuf's parser. On
anything else it gives up and the full parser (``text_format.ParseLines``, unknown fields allowed) reads the file
from the start, so every result and error message is the full parser's; a differential fuzz test checks they agree.
Lines come from any iterable (:func:`parse_canonical_lines`): a file is never read whole. Numbers are ASCII digits
only. Timings, the give-up list, memory and error messages: docs/internals/formats.md#ge_text.
"""
from __future__ import annotations

import re
import warnings
from typing import Callable, Iterable, Iterator, List, Optional, Union

from precision_tool.errors import GraphFormatError
from precision_tool.formats.ge_schema import GE_RECORDS, PACKAGE, FieldInfo, field_table, ge_messages
from precision_tool.formats.proto_records import FieldSpec, FieldType, Record, clear_oneof, stored_value

_FD = FieldType
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
MAX_INT_DIGITS = 20  # uint64's maximum has 20 digits; a longer integer is out of range for every field
_INT = re.compile(r"-?(?:0|[1-9][0-9]{0,%d})" % (MAX_INT_DIGITS - 1))
# no leading zero before a digit ("00.001", "01.5"): protobuf refuses them (found by tests/formats/test_ge_fuzz.py)
_FLOAT = re.compile(r"-?(?:(?:0|[1-9][0-9]*)(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?|-?inf|nan")
_STRING = re.compile(r'"(?:[^"\\\n]|\\.)*"')
_ANY_TOKEN = re.compile("|".join(p.pattern for p in (_STRING, _NAME, _INT, _FLOAT)))
_INT_TYPES = {_FD.TYPE_INT32, _FD.TYPE_INT64, _FD.TYPE_UINT32, _FD.TYPE_UINT64}
_MESSAGE, _MAP_ENTRY, _SKIP = 0, 1, 2
# Outside quoted strings and comments, a character that is not ASCII.
_STRING_COMMENT_OR_NON_ASCII = re.compile(r'"(?:[^"\\\n]|\\.)*"|\'(?:[^\'\\\n]|\\.)*\'|#[^\n]*|[^\x00-\x7f]')
_LONG_WORD = re.compile(r"[^\s'\"]{61,}")
MAX_CAUSE = 300
MAX_NESTING = 100
"""Blocks nested deeper than this are left to the full parser (protobuf C++'s own default recursion limit): C++
protobuf (the runtime of TensorFlow 1.15's users) crashes freeing a message nested some 10,000 deep, and the full
parser stops at Python's recursion limit long before."""
Lines = Union[str, Iterable[str]]
MessageHook = Callable[[object], None]


class NotCanonicalText(Exception):
    """The line parser met something outside GE's one-field-per-line layout."""


_NotCanonical = NotCanonicalText


def _fields_of(message) -> dict:
    """The field table of a frame's message: :class:`RecordField` for a record, protobuf's ``FieldInfo`` else."""
    if isinstance(message, Record):
        return _record_fields(type(message))
    return field_table(message.DESCRIPTOR)


class _MessageType:
    """What the parser asks of a map's value field: its type."""

    __slots__ = ("type",)

    def __init__(self, type_number: int):
        self.type = type_number


class RecordField:
    """A record's field (:class:`~precision_tool.formats.proto_records.FieldSpec`) as the line parser reads protobuf's
    ``FieldInfo``: ``name``, ``type`` (protobuf's number), ``repeated``, ``map``, ``map_value.type`` and
    ``presence_key`` (the oneof's name for its members), and the record type of a message or map value."""

    __slots__ = ("spec", "name", "type", "repeated", "map", "map_value", "presence_key", "message")

    def __init__(self, spec: FieldSpec):
        self.spec, self.name = spec, spec.name
        self.type = spec.type
        self.repeated, self.map = spec.repeated or spec.kind == "map", spec.kind == "map"
        self.map_value = _MessageType(_FD.TYPE_MESSAGE) if self.map else None
        self.presence_key = spec.oneof or spec.name
        self.message = spec.message


_RECORD_FIELDS: dict = {}


def _record_fields(record_type) -> dict:
    table = _RECORD_FIELDS.get(record_type)
    if table is None:
        table = _RECORD_FIELDS[record_type] = {name: RecordField(spec) for name, spec in record_type._fields.items()}
    return table


def _enum_number(field, name: str) -> Optional[int]:
    if isinstance(field, RecordField):
        return GE_RECORDS.enums[field.spec.enum or ""].get(name)
    enum_value = field.descriptor.enum_type.values_by_name.get(name)
    return None if enum_value is None else enum_value.number


def parse_ge_text(text: str, source=None):
    """Parse ``text`` into a ge.proto ``ModelDef`` message; unknown fields are skipped.

    Raises :class:`GraphFormatError` naming ``source`` and the line and column of the first error.
    """
    message = ge_messages()["ModelDef"]()
    try:
        parse_canonical_lines(text, message)
        return message
    except NotCanonicalText:
        message.Clear()
    return parse_full_text(text, message, source)


def parse_full_text(text: Lines, message, source=None, lines_again: Optional[Callable[[], Iterable[str]]] = None,
                    allow_unknown_field: bool = True, hint: str = "not protobuf text of a GE ModelDef"):
    """Parse ``text`` into the empty ``message`` with protobuf's own parser (any layout); returns ``message``.

    ``text`` is the whole text, or its lines (each may end in ``\\n``) with ``lines_again`` giving them once
    more: a first pass checks the digits (:func:`refuse_non_ascii_digits`), the second parses, and neither
    needs the whole text in memory. Fields the schema lacks are skipped, or with ``allow_unknown_field=False``
    are an error (``Message type "T" has no field named "f"``). Raises :class:`GraphFormatError` naming
    ``source``, the line and column and the cause (with ``hint``): also for a non-ASCII digit outside strings,
    and for nesting too deep to read.
    """
    if isinstance(text, str):
        whole = text
        text, lines_again = whole.split("\n"), lambda: whole.split("\n")
    refuse_non_ascii_digits(text, source)
    lines = _as_split(lines_again() if lines_again else text)
    from google.protobuf import text_format

    try:
        with warnings.catch_warnings():  # Python's note on an obsolete escape such as "\\q" in a string
            warnings.simplefilter("ignore", DeprecationWarning)
            text_format.ParseLines(lines, message, allow_unknown_field=allow_unknown_field)
    except text_format.ParseError as exc:
        line, column = exc.GetLine(), exc.GetColumn()
        cause = str(exc)
        prefix = f"{line}:{column} : "
        if cause.startswith(prefix):
            cause = cause[len(prefix):]
        where = f"line {line}, column {column}: " if line else ""
        raise GraphFormatError(source, f"{where}{readable_cause(cause)}", hint) from None
    except RecursionError:
        raise GraphFormatError(source, "blocks nested too deeply to read") from None
    return message


def _as_split(lines: Iterable[str]) -> Iterator[str]:
    """``lines`` as ``str.split("\\n")`` gives them: without their ``\\n``, and an empty last line after a final
    ``\\n`` (protobuf's parser places an error at the end of the text on that line)."""
    ended = True
    for line in lines:
        ended = line.endswith("\n")
        yield line[:-1] if ended else line
    if ended:
        yield ""


def readable_cause(cause: str) -> str:
    """``cause`` with every run of more than 60 characters other than spaces and quotes cut (its length said
    instead), and at most :data:`MAX_CAUSE` characters in all.

    >>> readable_cause("Couldn't parse integer: " + "9" * 5000)
    "Couldn't parse integer: 9999999999999999999999999999999999999999...(5,000 characters)"
    """
    cause = _LONG_WORD.sub(lambda match: f"{match.group()[:40]}...({len(match.group()):,} characters)", cause)
    return cause if len(cause) <= MAX_CAUSE else cause[:MAX_CAUSE - 3] + "..."


def refuse_non_ascii_digits(lines: Iterable[str], source=None) -> None:
    """Raise :class:`GraphFormatError` (line, column) for a digit of another script outside strings and comments.

    protobuf's parser would read ``٣`` as 3 (it calls ``int()``, which takes any script's digits); the
    protobuf text format has ASCII numbers only. Strings and comments end with their line, so lines are
    checked one at a time.
    """
    for number, line in enumerate(lines, 1):
        if line.isascii():
            continue
        for match in _STRING_COMMENT_OR_NON_ASCII.finditer(line):
            character = match.group()
            if len(character) == 1 and character.isnumeric():
                raise GraphFormatError(source, f"line {number}, column {match.start() + 1}: {character!r} is not "
                                               "an ASCII digit", "numbers in a GE graph are written with 0-9")


def format_ge_text(message) -> str:
    """The protobuf text form of a ``ModelDef`` message, as GE writes it (one field per line)."""
    from google.protobuf import text_format

    return text_format.MessageToString(message)


def parse_canonical_lines(lines: Lines, root, on_root_op: Optional[MessageHook] = None,
                          on_root_graph: Optional[MessageHook] = None,
                          on_unknown_field: Optional[Callable[[str], None]] = None) -> None:
    """Fill ``root`` (a ``ModelDef``, or any message in the same layout) from ``lines`` in GE's one-field-per-line
    layout.

    ``lines`` is the whole text or any iterable of lines (a file's, read one at a time); surrounding
    whitespace and blank lines are ignored. With ``on_root_op``, each op of a root graph is parsed into a
    message of its own, handed to ``on_root_op`` when its block closes and then dropped: the root graph keeps
    no ops. ``on_root_graph`` is called with each root graph's message when its block closes. A field the
    schema does not have is skipped; ``on_unknown_field`` is then called with ``"MessageType.field"`` (the
    type's full name), once per occurrence.

    Raises :class:`NotCanonicalText` on anything outside that layout, or on blocks nested more than
    :data:`MAX_NESTING` deep (then the full parser must read the text from the start; what the hooks were given
    is void).
    """
    if isinstance(lines, str):
        lines = lines.split("\n")
    stack: List[list] = [_message_frame(root)]
    hooks = (on_root_op, on_root_graph, on_unknown_field)
    for raw in lines:
        line = raw.strip()
        if not line:
            continue
        frame = stack[-1]
        if line == "}":
            _close(stack)
        elif line[-1] == "{":
            if len(stack) > MAX_NESTING:
                raise _NotCanonical
            _open(stack, frame, line[:-1].rstrip(), hooks)
        else:
            name, colon, value = line.partition(":")
            name, value = name.rstrip(), value.lstrip()
            if not colon or not _NAME.fullmatch(name):
                raise _NotCanonical
            _scalar_line(frame, name, value, on_unknown_field)
    if len(stack) != 1:
        raise _NotCanonical


def _parse_canonical(text: str, root) -> None:
    """:func:`parse_canonical_lines` on a whole text (the form the differential tests call)."""
    parse_canonical_lines(text, root)


def _message_frame(message, on_close: Optional[MessageHook] = None) -> list:
    """A stack frame of a message block: [_MESSAGE, message, fields by name, names already set, hook on close]."""
    return [_MESSAGE, message, _fields_of(message), set(), on_close]


def _open(stack, frame, name: str, hooks=(None, None, None)) -> None:
    # Frames: _message_frame -- [_MAP_ENTRY, map, key or None, whether 'value' was read] -- [_SKIP, nesting
    # depth inside an unknown field].
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
        stack.append(_message_frame(_map_entry(frame)))
        return
    field = frame[2].get(name)
    if field is None:
        _report_unknown(hooks[2], frame, name)
        stack.append([_SKIP, 0])
        return
    if field.type != _FD.TYPE_MESSAGE:
        raise _NotCanonical
    message = frame[1]
    is_record = isinstance(message, Record)
    if field.map:
        if field.map_value.type != _FD.TYPE_MESSAGE:
            raise _NotCanonical
        entries = message.__dict__.setdefault(name, {}) if is_record else getattr(message, name)
        stack.append([_MAP_ENTRY, entries, None, False, field.message if is_record else None])
        return
    on_root_op, on_root_graph = hooks[:2]
    on_close = None
    if len(stack) == 2 and name == "op" and on_root_op is not None:  # stack: ModelDef, a root GraphDef
        # a message of its own, dropped after the hook
        child, on_close = (GE_RECORDS.empty("OpDef") if is_record else ge_messages()["OpDef"]()), on_root_op
    elif field.repeated:
        if is_record:
            child = GE_RECORDS.empty(field.message)
            message.__dict__.setdefault(name, []).append(child)
        else:
            child = getattr(message, name).add()
        on_close = on_root_graph if len(stack) == 1 else None  # a root graph (ModelDef's only repeated message)
    else:
        _mark_set(frame, field)
        if is_record:
            child = GE_RECORDS.empty(field.message)
            _set_record_field(message, field, child)
        else:
            child = getattr(message, name)
            child.SetInParent()
    stack.append(_message_frame(child, on_close))


def _set_record_field(record: Record, field: "RecordField", value) -> None:
    """Set a record's singular field; a oneof member first clears the other members (the last one set wins)."""
    if field.spec.oneof is not None:
        clear_oneof(record, field.spec.oneof)
    record.__dict__[field.name] = value


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
        frame[2] = key
        _map_entry(frame)  # an entry without 'value' still exists, empty
    stack.pop()
    if frame[0] == _MESSAGE and frame[4] is not None:
        frame[4](frame[1])


def _map_entry(frame):
    """The value of a map entry frame's key, added if new (a protobuf map adds it when read; a record's map is a
    dict, its value type in the frame)."""
    entries, key, value_type = frame[1], frame[2], frame[4]
    if value_type is None:
        return entries[key]
    value = entries.get(key)
    if value is None:
        value = entries[key] = GE_RECORDS.empty(value_type)
    return value


def _report_unknown(on_unknown_field: Optional[Callable[[str], None]], frame, name: str) -> None:
    if on_unknown_field is not None:
        message = frame[1]
        full_name = f"{PACKAGE}.{type(message).__name__}" if isinstance(message, Record) else \
            message.DESCRIPTOR.full_name
        on_unknown_field(f"{full_name}.{name}")


def _scalar_line(frame, name: str, value: str, on_unknown_field: Optional[Callable[[str], None]] = None) -> None:
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
        _report_unknown(on_unknown_field, frame, name)
        return
    parsed = _value(field, value)
    message = frame[1]
    try:
        if isinstance(message, Record):
            parsed = stored_value(field.spec.kind, parsed)
            if field.repeated:
                message.__dict__.setdefault(name, []).append(parsed)
            else:
                _mark_set(frame, field)
                _set_record_field(message, field, parsed)
        elif field.repeated:
            getattr(message, name).append(parsed)
        else:
            _mark_set(frame, field)
            setattr(message, name, parsed)
    except (ValueError, TypeError, OverflowError, UnicodeError):
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
        number = _enum_number(field, value)
        if number is not None:
            return number
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
    from google.protobuf import text_encoding  # the escapes are protobuf's: its own reader of them

    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        try:
            return text_encoding.CUnescape(text)
        except (UnicodeError, DeprecationWarning) as exc:
            raise ValueError(f"bad escape in {text!r}: {exc}") from None
