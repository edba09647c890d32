"""Deterministic mutators: from a seed file and a ``random.Random``, a hostile variant of it.

Three families, each a function ``(seed, rng) -> Mutant``:

* bytes (every format): bit flips, truncation, byte insertion and deletion, chunk duplication, interesting
  integers written over bytes, the empty file;
* text (text formats: GE text and JSON, JSON, CSV): integers with 5,000 digits, Unicode digits (``²``,
  ``٣``), terminal control characters (ESC ``[31m``, BEL, NUL, CSI) in names, NaN/inf in numeric fields,
  100,000-deep nesting, wrong JSON types, 65-100 dimension shapes, cell and line damage;
* format-aware (``STRUCTURAL[seed.kind]``), rebuilt with the project's writers so the lie gets past the
  first check: the dump's 8-byte header length and its size fields, dimension counts and huge dims, the
  ``.npy`` header, tfdbg tensor protos, slots and wall times, TFRecord frames with their CRCs fixed, GraphDefs.

And the file-type swaps (:data:`SWAPS`): a FIFO, a symlink to ``/dev/zero``, a symlink loop, a dangling
symlink, a folder with the file's name. :func:`apply` puts a :class:`Mutant` in place in a workspace.

Every mutant describes itself (``Mutant.mutation``) precisely enough to rebuild it by hand.
"""
from __future__ import annotations

import dataclasses
import json
import os
import random
import re
import struct
from pathlib import Path
from typing import Callable, Dict, List, Optional, Tuple

import numpy as np
from hand_proto import field

import seeds as seedlib
from precision_tool.formats import tf_schema
from precision_tool.formats.dump_writer import TensorSpec
from precision_tool.formats.tfdbg import as_tensor_proto
from precision_tool.formats.tfrecord import encode_record, masked_crc32c

SWAPS = ("fifo", "devzero", "loop", "dangling", "folder")
HUGE_DIGITS = 5000
UNICODE_DIGITS = ("²", "٣", "０", "৩", "𝟗")
CONTROL = ("\x1b[31m", "\x07", "\x00", "\x1b]0;pwned\x07", "\x9b2J", "\x1b[2J\x1b[H", "\x7f", "\r", "\u202e")
NON_FINITE = ("NaN", "nan", "Infinity", "-Infinity", "inf", "-inf", "1e999", "-1e999")
DEEP = 100_000
INTERESTING = (0, 1, 0x7F, 0x80, 0xFF, 0x7FFF, 0xFFFF, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFF, 1 << 32, (1 << 63) - 1,
               1 << 63, (1 << 64) - 1)


@dataclasses.dataclass(frozen=True)
class Mutant:
    """A mutated seed: new bytes (or a file-type ``swap``), maybe under a new file ``name``.

    ``family`` is the mutator's name; ``mutation`` says exactly what was done."""

    family: str
    mutation: str
    data: Optional[bytes] = None
    name: Optional[str] = None
    swap: Optional[str] = None


Mutator = Callable[[seedlib.Seed, random.Random], Mutant]


def _pos(rng: random.Random, data: bytes, end: bool = False) -> int:
    return rng.randrange(len(data) + (1 if end else 0)) if data or end else 0


# ------------------------------------------------------------------------------------------ bytes
def bit_flip(seed, rng):
    data = bytearray(seed.data)
    flips = sorted(rng.randrange(len(data) * 8) for _ in range(rng.choice((1, 1, 2, 4, 8))))
    for bit in flips:
        data[bit // 8] ^= 1 << (bit % 8)
    return Mutant("bit_flip", f"flip bits {flips} (bit = 8*byte + k)", bytes(data))


def truncate(seed, rng):
    cut = rng.randrange(len(seed.data))
    return Mutant("truncate", f"truncate to {cut} of {len(seed.data)} bytes", seed.data[:cut])


def insert_bytes(seed, rng):
    at = _pos(rng, seed.data, end=True)
    blob = bytes(rng.randrange(256) for _ in range(rng.choice((1, 2, 8, 64))))
    return Mutant("insert_bytes", f"insert {blob.hex()} at byte {at}", seed.data[:at] + blob + seed.data[at:])


def delete_bytes(seed, rng):
    at = _pos(rng, seed.data)
    count = min(len(seed.data) - at, rng.choice((1, 2, 8, 64, 512)))
    return Mutant("delete_bytes", f"delete bytes [{at}, {at + count})", seed.data[:at] + seed.data[at + count:])


def duplicate_chunk(seed, rng):
    start = _pos(rng, seed.data)
    length = min(len(seed.data) - start, rng.choice((4, 16, 64, 256)))
    at = _pos(rng, seed.data, end=True)
    chunk = seed.data[start:start + length]
    return Mutant("duplicate_chunk", f"copy bytes [{start}, {start + length}) to byte {at}",
                  seed.data[:at] + chunk + seed.data[at:])


def interesting_int(seed, rng):
    width = rng.choice((1, 2, 4, 8))
    value = rng.choice(INTERESTING) & ((1 << (8 * width)) - 1)
    at = rng.randrange(max(1, len(seed.data) - width + 1))
    data = bytearray(seed.data.ljust(at + width, b"\0"))
    data[at:at + width] = value.to_bytes(width, "little")
    return Mutant("interesting_int", f"write {value:#x} as {width}-byte little-endian at byte {at}", bytes(data))


def empty(seed, rng):
    return Mutant("empty", "empty file", b"")


BYTES: Tuple[Mutator, ...] = (bit_flip, truncate, insert_bytes, delete_bytes, duplicate_chunk, interesting_int, empty)


# ------------------------------------------------------------------------------------------ text
def _text(seed) -> str:
    return seed.data.decode("utf-8", "surrogateescape")


def _encode(text: str) -> bytes:
    return text.encode("utf-8", "surrogateescape")


def _pick(rng, matches, what):
    matches = list(matches)
    if not matches:
        return None
    return rng.choice(matches)


def huge_int(seed, rng):
    text = _text(seed)
    match = _pick(rng, re.finditer(r"\d+", text), "digits")
    if match is None:
        return append_text(seed, rng)
    digits = str(rng.randrange(1, 10)) * HUGE_DIGITS
    return Mutant("huge_int", f"digits {match.group()!r} at char {match.start()} -> a {HUGE_DIGITS}-digit integer",
                  _encode(text[:match.start()] + digits + text[match.end():]))


def unicode_digit(seed, rng):
    text = _text(seed)
    match = _pick(rng, re.finditer(r"[0-9]", text), "digit")
    if match is None:
        return append_text(seed, rng)
    digit = rng.choice(UNICODE_DIGITS)
    return Mutant("unicode_digit", f"digit {match.group()!r} at char {match.start()} -> {digit!r}",
                  _encode(text[:match.start()] + digit + text[match.end():]))


def control_chars(seed, rng):
    """Control characters inside a quoted name (JSON or protobuf text), raw or -- in GE text -- escaped."""
    text = _text(seed)
    match = _pick(rng, re.finditer(r'"([A-Za-z_][^"\\\n]{2,})"', text), "quoted name")
    if match is None:
        match = _pick(rng, re.finditer(r"[A-Za-z_]{3,}", text), "word")
        if match is None:
            return append_text(seed, rng)
        inner_start, inner_end = match.start(), match.end()
    else:
        inner_start, inner_end = match.start(1), match.end(1)
    evil = rng.choice(CONTROL)
    at = rng.randrange(inner_start + 1, inner_end + 1)
    if seed.kind in ("json", "jsonl"):
        inserted = json.dumps(evil)[1:-1]  # JSON escapes: a valid file whose names hold the characters
    elif seed.kind == "ge_text" and rng.random() < 0.5:
        inserted = "".join(f"\\{ord(c):03o}" if ord(c) < 0x80 else c for c in evil)  # protobuf text escapes
    else:
        inserted = evil
    return Mutant("control_chars", f"insert {evil!r} as {inserted!r} at char {at} (in {text[inner_start:inner_end]!r})",
                  _encode(text[:at] + inserted + text[at:]))


def non_finite(seed, rng):
    text = _text(seed)
    match = _pick(rng, re.finditer(r"(?<![\w.])-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?(?![\w.])", text), "number")
    if match is None:
        return append_text(seed, rng)
    value = rng.choice(NON_FINITE)
    return Mutant("non_finite", f"number {match.group()!r} at char {match.start()} -> {value}",
                  _encode(text[:match.start()] + value + text[match.end():]))


def deep_nesting(seed, rng):
    text = _text(seed)
    if seed.kind == "ge_text":
        lines = text.split("\n")
        at = rng.randrange(1, len(lines))
        nest = "attr {" * DEEP + "}" * DEEP
        return Mutant("deep_nesting", f"{DEEP}-deep 'attr {{' nesting before line {at + 1}",
                      _encode("\n".join(lines[:at] + [nest] + lines[at:])))
    if seed.kind == "csv":
        return deep_cell(seed, rng)
    return json_value(seed, rng, "deep")


def many_dims_text(seed, rng):
    """A shape with 65-100 dimensions: in GE text ``dim: 1`` lines, in JSON/CSV a list of ones."""
    count = rng.randrange(65, 101)
    text = _text(seed)
    if seed.kind == "ge_text":
        match = _pick(rng, re.finditer(r"( *)shape \{\n", text), "shape")
        if match is not None:
            dims = "".join(f"{match.group(1)}  dim: 1\n" for _ in range(count))
            return Mutant("many_dims", f"{count} extra 'dim: 1' lines in the shape at char {match.start()}",
                          _encode(text[:match.end()] + dims + text[match.end():]))
    match = _pick(rng, re.finditer(r"\[(\s*-?\d+\s*,)+\s*-?\d+\s*\]", text), "int list")
    if match is None:
        return huge_int(seed, rng)
    ones = "[" + ",".join("1" for _ in range(count)) + "]"
    return Mutant("many_dims", f"int list {match.group()[:40]!r} at char {match.start()} -> {count} ones",
                  _encode(text[:match.start()] + ones + text[match.end():]))


def append_text(seed, rng):
    junk = rng.choice(("\x00", "}", "{", ",", "\n" + "9" * HUGE_DIGITS, "\ufeff", "\x1b[31m"))
    return Mutant("append_text", f"append {junk[:20]!r}", seed.data + _encode(junk))


def line_damage(seed, rng):
    lines = _text(seed).split("\n")
    at = rng.randrange(len(lines))
    how = rng.choice(("duplicate", "delete", "swap", "reverse"))
    if how == "duplicate":
        lines.insert(at, lines[at])
    elif how == "delete":
        del lines[at]
    elif how == "swap" and len(lines) > 1:
        other = rng.randrange(len(lines))
        lines[at], lines[other] = lines[other], lines[at]
    else:
        lines[at] = lines[at][::-1]
    return Mutant("line_damage", f"{how} line {at + 1}", _encode("\n".join(lines)))


# JSON: a random value (or key) replaced, the rest written back as it was.
_SENTINEL = "@@FUZZ_VALUE@@"


def _json_nodes(obj, path=()):
    yield path, obj
    if isinstance(obj, dict):
        for key, value in obj.items():
            yield from _json_nodes(value, path + (key,))
    elif isinstance(obj, list):
        for index, value in enumerate(obj):
            yield from _json_nodes(value, path + (index,))


def _replace_at(obj, path, value):
    if not path:
        return value
    head, rest = path[0], path[1:]
    if isinstance(obj, dict):
        return {k: (_replace_at(v, rest, value) if k == head else v) for k, v in obj.items()}
    return [(_replace_at(v, rest, value) if i == head else v) for i, v in enumerate(obj)]


def _rename_key(obj, path, new_key):
    if len(path) == 1:
        return {(new_key if k == path[0] else k): v for k, v in obj.items()}
    head = path[0]
    if isinstance(obj, dict):
        return {k: (_rename_key(v, path[1:], new_key) if k == head else v) for k, v in obj.items()}
    return [(_rename_key(v, path[1:], new_key) if i == head else v) for i, v in enumerate(obj)]


def _hostile_json(rng, how: str, old) -> Tuple[str, str]:
    """(raw JSON text, description) of a hostile value."""
    if how == "deep":
        opener = rng.choice(("[", '{"a":'))
        closer = "]" if opener == "[" else "}"
        return opener * DEEP + "0" + closer * DEEP, f"{DEEP}-deep {opener!r} nesting"
    if how == "huge":
        digits = str(rng.randrange(1, 10)) * HUGE_DIGITS
        raw = rng.choice((digits, "-" + digits, f'"{digits}"', digits + ".5", "1e" + digits[:6]))
        return raw, f"a {HUGE_DIGITS}-digit number ({raw[:12]}...)"
    if how == "non_finite":
        raw = rng.choice(("NaN", "Infinity", "-Infinity", '"NaN"', '"inf"', "1e999"))
        return raw, f"non-finite {raw}"
    if how == "unicode":
        raw = json.dumps(rng.choice(UNICODE_DIGITS) + rng.choice(("", "1", "٣")), ensure_ascii=rng.random() < 0.5)
        return raw, f"unicode digits {raw}"
    if how == "control":
        raw = json.dumps((str(old) if isinstance(old, str) else "op") + rng.choice(CONTROL))
        return raw, f"string with control characters {raw}"
    if how == "many_dims":
        count = rng.randrange(65, 101)
        return "[" + ",".join("1" for _ in range(count)) + "]", f"a list of {count} ones"
    raw = rng.choice(("null", "true", "false", "[]", "{}", '""', "-1", "0.5", '"x"', "[[]]", '{"": null}', "-0"))
    return raw, f"wrong-typed value {raw}"


JSON_HOW = ("deep", "huge", "non_finite", "unicode", "control", "many_dims", "type", "type", "key")


def json_value(seed, rng, how: Optional[str] = None, indent: Optional[int] = 1):
    text = _text(seed)
    if seed.kind == "jsonl":
        lines = text.split("\n")
        at = rng.choice([i for i, line in enumerate(lines) if line.strip()])
        sub = dataclasses.replace(seed, data=_encode(lines[at]), kind="json")
        inner = json_value(sub, rng, how, indent=None)
        lines[at] = _text(dataclasses.replace(seed, data=inner.data)).replace("\n", " ")
        return Mutant(inner.family, f"line {at + 1}: {inner.mutation}", _encode("\n".join(lines)))
    try:
        obj = json.loads(text)
    except ValueError:  # concatenated objects: mutate the text instead
        return rng.choice((huge_int, unicode_digit, control_chars, non_finite))(seed, rng)
    nodes = list(_json_nodes(obj))
    how = how or rng.choice(JSON_HOW)
    if how == "key":
        keyed = [p for p, _ in nodes if p and isinstance(p[-1], str)]
        if keyed:
            path = rng.choice(keyed)
            new_key = rng.choice((path[-1] + rng.choice(CONTROL), "9" * HUGE_DIGITS,
                                  path[-1] + "_" + "9" * HUGE_DIGITS, re.sub(r"\d", "²", path[-1]) + "²", ""))
            mutated = json.dumps(_rename_key(obj, path, new_key), indent=indent)
            return Mutant("json_key", f"key at {list(path)} -> {new_key[:40]!r}{'...' if len(new_key) > 40 else ''}",
                          _encode(mutated))
        how = "type"
    if how in ("huge", "non_finite", "unicode"):
        numeric = [p for p, v in nodes if isinstance(v, (int, float)) and not isinstance(v, bool)
                   or isinstance(v, str) and re.fullmatch(r"-?\d+(\.\d+)?", v)]
        candidates = numeric or [p for p, _ in nodes]
    elif how == "control":
        candidates = [p for p, v in nodes if isinstance(v, str)] or [p for p, _ in nodes]
    elif how == "many_dims":
        candidates = [p for p, v in nodes if isinstance(v, list) and v and all(isinstance(x, int) for x in v)]
        candidates = candidates or [p for p, _ in nodes]
    else:
        candidates = [p for p, _ in nodes]
    path = rng.choice(candidates)
    old = obj
    for step in path:
        old = old[step]
    raw, what = _hostile_json(rng, how, old)
    mutated = json.dumps(_replace_at(obj, path, _SENTINEL), indent=indent)
    mutated = mutated.replace(json.dumps(_SENTINEL), raw, 1)
    return Mutant(f"json_{how}", f"value at {list(path)[:12]} -> {what}", _encode(mutated))


def json_mutator(how):
    def mutator(seed, rng):
        return json_value(seed, rng, how)
    mutator.__name__ = f"json_{how}"
    return mutator


# CSV: one cell replaced by a hostile value.
CELL_VALUES = ("9" * HUGE_DIGITS, "-" + "9" * HUGE_DIGITS, "²", "٣", "1²", "NaN", "inf", "-inf", "1e999", "",
               "op\x1b[31mred\x07", "a\x00b", "[" + ",".join(["1"] * 70) + "]", '"', "[1,2", "x:output:²",
               "x:output:" + "9" * HUGE_DIGITS, "(nan;nan),(inf;-inf)")


def csv_cell(seed, rng):
    import csv
    import io

    text = _text(seed)
    rows = list(csv.reader(io.StringIO(text, newline="")))
    body = [i for i, row in enumerate(rows) if row]
    row_index = rng.choice(body[1:] if len(body) > 1 else body)
    col = rng.randrange(len(rows[row_index]))
    value = rng.choice(CELL_VALUES)
    old = rows[row_index][col]
    rows[row_index][col] = value
    out = io.StringIO()
    csv.writer(out, lineterminator="\r\n" if "\r\n" in text else "\n").writerows(rows)
    return Mutant("csv_cell", f"row {row_index + 1} column {col + 1}: {old[:30]!r} -> {value[:30]!r}"
                  f"{'...' if len(value) > 30 else ''}", _encode(out.getvalue()))


def deep_cell(seed, rng):
    text = _text(seed)
    lines = text.split("\n")
    at = rng.randrange(1, max(2, len(lines)))
    value = "[" * DEEP + "]" * DEEP
    lines.insert(at, ",".join([value] * 3))
    return Mutant("deep_nesting", f"a row of {DEEP}-deep brackets before line {at + 1}", _encode("\n".join(lines)))


def csv_columns(seed, rng):
    text = _text(seed)
    lines = text.split("\n")
    at = rng.randrange(len(lines))
    how = rng.choice(("drop", "extra"))
    lines[at] = lines[at].rsplit(",", 1)[0] if how == "drop" else lines[at] + ",extra,cells"
    return Mutant("csv_columns", f"{how} a column in line {at + 1}", _encode("\n".join(lines)))


TEXT: Tuple[Mutator, ...] = (huge_int, unicode_digit, control_chars, non_finite, deep_nesting, many_dims_text,
                             line_damage)
JSON: Tuple[Mutator, ...] = tuple(json_mutator(how) for how in ("huge", "non_finite", "unicode", "control",
                                                                 "many_dims", "type", "key"))
CSV: Tuple[Mutator, ...] = (csv_cell, csv_cell, csv_cell, csv_columns)


# ------------------------------------------------------------------------------------------ dumps
def _dump_bytes(model: seedlib.DumpModel, **changes) -> bytes:
    return model.build(**changes)


def _respec(spec: TensorSpec, **changes) -> TensorSpec:
    return dataclasses.replace(spec, **changes)


def _one_tensor(model, rng):
    """(field, index) of a random input or output."""
    choices = [("inputs", i) for i in range(len(model.inputs))] + [("outputs", i) for i in range(len(model.outputs))]
    return rng.choice(choices)


def _with_tensor(model, field, index, spec):
    tensors = list(getattr(model, field))
    tensors[index] = spec
    return dataclasses.replace(model, **{field: tuple(tensors)})


def header_length_lie(seed, rng):
    data = seed.data
    (length,) = struct.unpack_from("<Q", data)
    value = rng.choice((0, 1, length - 1, length + 1, len(data) - 8, len(data), len(data) + 1, 0xFFFFFFFF,
                        1 << 63, (1 << 64) - 1, 0x5A5A5A5A))
    return Mutant("header_length_lie", f"8-byte header length {length} -> {value}",
                  struct.pack("<Q", value) + data[8:])


def nano_magic(seed, rng):
    return Mutant("nano_magic", "uint32 0x5A5A5A5A at byte 8 (a nano dump's magic)",
                  seed.data[:8] + struct.pack("<I", 0x5A5A5A5A) + seed.data[12:])


def header_bytes(seed, rng):
    """Damage inside the serialized header, then fix the length field so the damage is parsed."""
    (length,) = struct.unpack_from("<Q", seed.data)
    header, rest = bytearray(seed.data[8:8 + length]), seed.data[8 + length:]
    how = rng.choice(("flip", "insert", "delete", "varint"))
    at = rng.randrange(len(header))
    if how == "flip":
        header[at] ^= 1 << rng.randrange(8)
    elif how == "insert":
        header[at:at] = bytes(rng.randrange(256) for _ in range(rng.choice((1, 4, 16))))
    elif how == "delete":
        del header[at:at + rng.choice((1, 4, 16))]
    else:
        header[at:at] = b"\xff" * 9 + b"\x01"  # a 10-byte varint
    return Mutant("header_bytes", f"header {how} at header byte {at}, length field fixed to {len(header)}",
                  struct.pack("<Q", len(header)) + bytes(header) + rest)


def dump_shape_lie(seed, rng):
    model = seed.model
    field, index = _one_tensor(model, rng)
    spec = getattr(model, field)[index]
    shape = list(np.shape(spec.array))
    how = rng.choice(("many_dims", "huge_dim", "negative", "bigger", "zero", "empty", "original_many",
                      "original_huge"))
    if how == "many_dims":
        count = rng.randrange(65, 101)
        one = TensorSpec(np.ones(1, dtype=spec.array.dtype), format=spec.format, shape=(1,) * count,
                         dtype_code=spec.dtype_code if spec.array.dtype != np.uint8 else None)
        new, what = one, f"{count} dims of 1 (one element)"
    elif how == "huge_dim":
        dims = shape or [1]
        dims[rng.randrange(len(dims))] = rng.choice(((1 << 62), (1 << 63) - 1, 1 << 31, 10 ** 18))
        new, what = _respec(spec, shape=tuple(dims)), f"shape {dims}"
    elif how == "negative":
        dims = shape or [1]
        dims[rng.randrange(len(dims))] = rng.choice(((1 << 64) - 1, 1 << 63, (1 << 64) - 16))  # -1, int64 min, -16
        new, what = _respec(spec, shape=tuple(dims)), f"shape {dims}"
    elif how == "bigger":
        dims = [d * 2 for d in shape] or [2]
        new, what = _respec(spec, shape=tuple(dims)), f"shape {dims} (payload for {shape})"
    elif how == "zero":
        new, what = _respec(spec, shape=tuple([0] + shape[1:])), "a zero dim"
    elif how == "empty":
        new, what = _respec(spec, shape=()), "scalar shape ()"
    elif how == "original_many":
        count = rng.randrange(65, 101)
        new, what = _respec(spec, original_shape=(1,) * count), f"original_shape of {count} ones"
    else:
        new, what = _respec(spec, original_shape=(1 << 62, 3)), "original_shape [2**62, 3]"
    return Mutant("dump_shape", f"{field[:-1]} {index}: {what}", _dump_bytes(_with_tensor(model, field, index, new)))


def dump_codes(seed, rng):
    model = seed.model
    field, index = _one_tensor(model, rng)
    spec = getattr(model, field)[index]
    how = rng.choice(("dtype", "format", "original_format", "size"))
    if how == "dtype":
        code = rng.choice((0, 7, 13, 16, 27, 33, 40, 41, 255, 1 << 20))
        raw = np.frombuffer(np.ascontiguousarray(spec.array).tobytes(), dtype=np.uint8)
        new = TensorSpec(raw, format=spec.format, dtype_code=None, shape=np.shape(spec.array))
        data = _dump_bytes(_with_tensor(model, field, index, new))
        data = _patch_dump(data, lambda msg: setattr(getattr(msg, field[:-1])[index], "data_type", code))
        return Mutant("dump_codes", f"{field[:-1]} {index}: data_type {code}", data)
    if how == "format":
        code = rng.choice((3, 4, 29, 1, 2, 999, 1 << 20))
        new, what = _respec(spec, format=code), f"format {code}"
    elif how == "original_format":
        if field != "outputs":
            field, index = "outputs", 0
            spec = model.outputs[0]
        code = rng.choice((0, 1, 3, 999))
        new = _respec(spec, original_format=code, original_op=spec.original_op or (seedlib.RELU_OP, 0))
        what = f"original_format {code}"
    else:
        size = rng.choice((0, 1, 3, len(spec.array.tobytes()) - 1))
        new, what = _respec(spec, size=size), f"size {size} (payload shortened to it)"
    return Mutant("dump_codes", f"{field[:-1]} {index}: {what}", _dump_bytes(_with_tensor(model, field, index, new)))


def _patch_dump(data: bytes, change) -> bytes:
    from precision_tool.formats.dump_schema import DumpData

    (length,) = struct.unpack_from("<Q", data)
    message = DumpData.FromString(data[8:8 + length])
    change(message)
    header = message.SerializeToString()
    return struct.pack("<Q", len(header)) + header + data[8 + length:]


def dump_size_field(seed, rng):
    """The header's ``size`` of one tensor changed without changing the payload."""
    model = seed.model
    field, index = _one_tensor(model, rng)
    value = rng.choice((0, 1, (1 << 62), (1 << 64) - 1, 10 ** 12, 4096))

    def change(message):
        getattr(message, field[:-1])[index].size = value

    return Mutant("dump_size_field", f"{field[:-1]} {index}: size field {value}, payload unchanged",
                  _patch_dump(seed.data, change))


_TENSOR_FIELDS = {"output": (3, {"data_type": 1, "format": 2, "shape": 3, "size": 6}),
                  "input": (4, {"data_type": 1, "format": 2, "shape": 3, "size": 5})}


def retyped_tensor_field(data: bytes, kind: str, index: int, what: str) -> bytes:
    """The dump ``data`` with tensor ``kind`` ``index``'s ``data_type``, ``format`` or ``size`` (varints) sent as a
    fixed32/fixed64 value, or its first shape dimension as a fixed64: the field present, under a wire type its type
    never has (protobuf skips it). The header is re-encoded by hand, every tensor in its order."""
    from precision_tool.formats.dump_schema import DumpData

    (length,) = struct.unpack_from("<Q", data)
    header = DumpData.FromString(data[8:8 + length])
    number, numbers = _TENSOR_FIELDS[kind]
    tensors = list(getattr(header, kind))
    header.ClearField(kind)
    chosen = tensors[index]
    if what == "shape":
        dims = list(chosen.shape.dim)
        chosen.ClearField("shape")
        shape = (_varint(1 << 3 | 1) + struct.pack("<Q", dims[0]) if dims else b"") + b"".join(
            field(1, dim) for dim in dims[1:])
        extra = field(3, shape)
    else:
        value = getattr(chosen, what)
        chosen.ClearField(what)
        wide = what == "size"
        extra = _varint(numbers[what] << 3 | (1 if wide else 5)) + struct.pack("<Q" if wide else "<I", value)
    encoded = header.SerializeToString() + b"".join(
        field(number, tensor.SerializeToString() + (extra if k == index else b"")) for k, tensor in enumerate(tensors))
    return struct.pack("<Q", len(encoded)) + encoded + data[8 + length:]


def _varint(value: int) -> bytes:
    from hand_proto import varint

    return varint(value)


def dump_wire_type(seed, rng):
    """A tensor's data type, format, size or a dimension under a wire type its type never has (issue 40)."""
    model = seed.model
    kinds = [kind for kind in ("input", "output") if getattr(model, f"{kind}s", ())]
    if not kinds:
        return empty(seed, rng)
    kind = rng.choice(kinds)
    index = rng.randrange(len(getattr(model, f"{kind}s")))
    what = rng.choice(("data_type", "format", "size", "shape"))
    return Mutant("dump_wire_type", f"{kind} {index}: {what} under a wire type its type never has",
                  retyped_tensor_field(seed.data, kind, index, what))


def dump_names(seed, rng):
    """Control characters in the op name stored in the header, or in an output's original op name."""
    evil = rng.choice(CONTROL)
    model = seed.model
    if rng.random() < 0.5 or not model.outputs:
        name = model.op_name[:5] + evil + model.op_name[5:]
        return Mutant("dump_names", f"header op_name {name!r}", _dump_bytes(model, op_name=name))
    spec = model.outputs[0]
    origin = (spec.original_op or (seedlib.RELU_OP, 0))[0]
    new = _respec(spec, original_op=(origin + evil, rng.choice((0, (1 << 32) - 1, 65536))))
    return Mutant("dump_names", f"output 0 original_op {new.original_op!r}",
                  _dump_bytes(_with_tensor(model, "outputs", 0, new)))


def dump_file_name(seed, rng):
    """The dump's file name: control characters, Unicode digits, over-long fields, extra fields."""
    base = Path(seed.path).name
    fields = base.split(".")
    how = rng.choice(("control", "unicode", "long", "extra", "missing"))
    if how == "control":
        fields[1] = fields[1][:4] + rng.choice(("\x1b[31m", "\x07", "\x1b]0;x\x07", "\x7f", "\x9b")) + fields[1][4:]
    elif how == "unicode":
        position = rng.choice((2, 3, 4))
        fields[position] = fields[position][:-1] + rng.choice(UNICODE_DIGITS)
    elif how == "long":
        fields[rng.choice((2, 3))] = "9" * 200
    elif how == "extra":
        fields += ["4", "9" * 20, "٣"]
    else:
        del fields[rng.choice((2, 3))]
    name = ".".join(fields)
    return Mutant("dump_file_name", f"file renamed {name!r}", seed.data, name=name)


def many_tensors(seed, rng):
    count = rng.choice((4000, 10000))
    outputs = tuple(TensorSpec(np.full(1, i % 7, dtype=np.float16)) for i in range(count))
    return Mutant("many_tensors", f"{count} outputs of one float16 each",
                  _dump_bytes(seed.model, inputs=(), outputs=outputs))


def opdebug_status(seed, rng):
    """The Opdebug status bytes: a wrong size, the new layout's magic with lying fields, random words."""
    how = rng.choice(("size", "new", "new_short", "random_old"))
    if how == "size":
        size = rng.choice((0, 1, 24, 2047, 2049, 4096))
        status = bytes(rng.randrange(256) for _ in range(size))
        what = f"{size} random status bytes"
    elif how == "new":
        version, valid, acc, data_len = (rng.choice((0, 1, 2, 0xFFFFFFFF)), rng.choice((0, 1, 7)),
                                         rng.choice((0, 1, 2, 3, 4, 0xFFFFFFFF)), rng.choice((0, 8, 96, 0xFFFFFFFF)))
        words = rng.choice((0, 1, 11, 14))
        status = struct.pack("<6I", 0x5A5A5A5A, version, valid, acc, 0, data_len) + bytes(8 * words)
        what = f"new layout version {version} valid {valid} acc_type {acc} data_len {data_len}, {words} words"
    elif how == "new_short":
        status = struct.pack("<I", 0x5A5A5A5A) + bytes(rng.randrange(20))
        what = f"new-layout magic and {len(status) - 4} more bytes"
    else:
        status = b"".join(struct.pack("<Q", rng.choice(INTERESTING)) for _ in range(256))
        what = "old layout, 256 interesting words"
    output = TensorSpec(np.frombuffer(status, dtype=np.uint8))
    return Mutant("opdebug_status", what, _dump_bytes(seed.model, outputs=(output,)))


# ------------------------------------------------------------------------------------------ npy
def _npy(header: str, payload: bytes, version: int = 1, header_len: Optional[int] = None) -> bytes:
    preamble = 10 if version == 1 else 12
    text = header + " " * ((64 - (len(header) + preamble + 1) % 64) % 64) + "\n"
    if version == 1:
        size = struct.pack("<H", len(text) if header_len is None else header_len)
    else:
        size = struct.pack("<I", len(text) if header_len is None else header_len)
    return b"\x93NUMPY" + bytes([version, 0]) + size + text.encode("latin1") + payload


def npy_header(seed, rng):
    payload = np.ones(1, dtype="<f4").tobytes()
    how = rng.choice(("many_dims", "huge_shape", "negative", "descr", "object", "not_dict", "tokens", "deep",
                      "v2_len", "v1_len", "fortran", "huge_digits", "unicode_digit", "big_endian"))
    if how == "many_dims":
        count = rng.randrange(65, 101)
        header = f"{{'descr': '<f4', 'fortran_order': False, 'shape': ({', '.join(['1'] * count)}), }}"
        return Mutant("npy_header", f"shape of {count} ones (one element)", _npy(header, payload))
    if how == "huge_shape":
        header = "{'descr': '<f4', 'fortran_order': False, 'shape': (4611686018427387904, 4), }"
        return Mutant("npy_header", "shape (2**62, 4)", _npy(header, payload))
    if how == "negative":
        header = "{'descr': '<f4', 'fortran_order': False, 'shape': (-1, 4), }"
        return Mutant("npy_header", "shape (-1, 4)", _npy(header, payload))
    if how == "descr":
        descr = rng.choice(("'<f99'", "'<U8'", "'|V16'", "'<M8[s]'", "[('a', '<f4')]", "'S5'", "'<c16'", "42",
                            "'|b1'"))
        header = f"{{'descr': {descr}, 'fortran_order': False, 'shape': (1,), }}"
        return Mutant("npy_header", f"descr {descr}", _npy(header, payload * 8))
    if how == "object":
        header = "{'descr': '|O', 'fortran_order': False, 'shape': (1,), }"
        return Mutant("npy_header", "descr '|O' (object: a pickle would follow)", _npy(header, b"\x80\x04N."))
    if how == "not_dict":
        header = rng.choice(("[1, 2]", "{}", "{'descr': '<f4'}", "None", "'shape'", "{'descr': '<f4', "
                             "'fortran_order': False, 'shape': (1,), 'extra': 1, }"))
        return Mutant("npy_header", f"header {header!r}", _npy(header, payload))
    if how == "tokens":
        header = rng.choice(("{'descr': '<f4', 'fortran_order': False, 'shape': (1,", "{'descr': '<f4\"",
                             "{'descr': '<f4', 'fortran_order': False, 'shape': (1,), } \"\"\"",
                             "{'descr': b'\\xff', 'shape': (1,)}", "(" * 300 + ")" * 300))
        return Mutant("npy_header", f"damaged header {header[:60]!r}", _npy(header, payload))
    if how == "deep":
        header = "{'descr': '<f4', 'fortran_order': False, 'shape': " + "(" * DEEP + ")" * DEEP + ", }"
        return Mutant("npy_header", f"{DEEP}-deep tuple as shape", _npy(header, payload, version=2))
    if how == "v2_len":
        header = "{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }"
        return Mutant("npy_header", "v2 header declaring 2**32-1 bytes", _npy(header, payload, 2, 0xFFFFFFFF))
    if how == "v1_len":
        value = rng.choice((0, 1, 65535))
        header = "{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }"
        return Mutant("npy_header", f"v1 header length field {value}", _npy(header, payload, 1, value))
    if how == "fortran":
        header = "{'descr': '<f4', 'fortran_order': 1, 'shape': (2, 2), }"
        return Mutant("npy_header", "fortran_order 1, shape (2, 2), one element", _npy(header, payload))
    if how == "huge_digits":
        header = "{'descr': '<f4', 'fortran_order': False, 'shape': (" + "9" * HUGE_DIGITS + ",), }"
        return Mutant("npy_header", f"a {HUGE_DIGITS}-digit dim", _npy(header, payload, version=2))
    if how == "unicode_digit":
        header = "{'descr': '<f4', 'fortran_order': False, 'shape': (٣,), }"
        return Mutant("npy_header", "dim '٣' (a version 3 header: UTF-8)", _npy_utf8(header, payload * 3))
    array = np.load(_io(seed.data), allow_pickle=False)
    return Mutant("npy_header", "big-endian copy of the values",
                  seedlib.npy_bytes(array.astype(array.dtype.newbyteorder(">"))))


def _npy_utf8(header: str, payload: bytes) -> bytes:
    text = header + " " * ((64 - (len(header.encode()) + 12 + 1) % 64) % 64) + "\n"
    return b"\x93NUMPY\x03\x00" + struct.pack("<I", len(text.encode())) + text.encode() + payload


def _io(data: bytes):
    import io

    return io.BytesIO(data)


def npy_values(seed, rng):
    array = np.load(_io(seed.data), allow_pickle=False).copy()
    how = rng.choice(("nan", "inf", "all_nan", "zeros", "float16_max", "shape"))
    flat = array.reshape(-1)
    if how == "nan":
        flat[rng.randrange(flat.size)] = np.nan
    elif how == "inf":
        flat[rng.randrange(flat.size)] = rng.choice((np.inf, -np.inf))
    elif how == "all_nan":
        flat[:] = np.nan
    elif how == "zeros":
        flat[:] = 0
    elif how == "float16_max":
        flat[:] = 3.4e38
    else:
        array = array.reshape(-1)
    return Mutant("npy_values", f"values: {how}", seedlib.npy_bytes(array))


# ------------------------------------------------------------------------------------------ tfdbg
def _tensor_proto(rng, array) -> Tuple[object, str]:
    proto = as_tensor_proto(np.asarray(array))
    how = rng.choice(("many_dims", "huge_dim", "negative", "dtype", "content_short", "content_long", "unknown_rank",
                      "float_val", "typed_more", "int_range"))
    if how == "typed_more":  # more typed values than elements: tf.make_ndarray refuses them (issue 40)
        count = int(np.asarray(array).size) + rng.choice((1, 3))
        proto.tensor_content = b""
        proto.float_val.extend([0.5] * count)
        return proto, f"{count} float_val values for {np.asarray(array).size} elements"
    if how == "int_range":  # an int_val outside the dtype's range: tf.make_ndarray refuses it under numpy 2
        value = rng.choice((300, -1, 1 << 20))
        proto = as_tensor_proto(np.zeros(np.asarray(array).shape, np.uint8))
        proto.tensor_content = b""
        proto.int_val.append(value)
        return proto, f"uint8 tensor, int_val [{value}]"
    if how == "many_dims":
        count = rng.randrange(65, 101)
        proto = as_tensor_proto(np.ones(1, np.float32))
        del proto.tensor_shape.dim[:]
        for _ in range(count):
            proto.tensor_shape.dim.add(size=1)
        return proto, f"tensor of {count} dims of 1"
    if how == "huge_dim":
        proto.tensor_shape.dim[0].size = rng.choice(((1 << 62), (1 << 63) - 1))
        return proto, f"dim 0 = {proto.tensor_shape.dim[0].size}"
    if how == "negative":
        proto.tensor_shape.dim[0].size = -1
        return proto, "dim 0 = -1"
    if how == "dtype":
        proto.dtype = rng.choice((0, 7, 14, 20, 21, 99, 101, 1 << 20))
        return proto, f"dtype {proto.dtype}"
    if how == "content_short":
        proto.tensor_content = proto.tensor_content[:-3]
        return proto, "tensor_content 3 bytes short"
    if how == "content_long":
        proto.tensor_content = proto.tensor_content + b"\0" * 5
        return proto, "tensor_content 5 bytes long"
    if how == "unknown_rank":
        proto.tensor_shape.unknown_rank = True
        return proto, "unknown_rank with dims"
    proto.tensor_content = b""
    proto.float_val.extend([float("nan"), float("inf")])
    return proto, "float_val [nan, inf] instead of content"


def tfdbg_v1_tensor(seed, rng):
    model: seedlib.TensorModel = seed.model
    how = rng.choice(("proto", "node_name", "wall_time", "file_slot"))
    event = tf_schema.Event(wall_time=float(model.timestamp_us))
    value = event.summary.value.add(tag=model.op_name)
    node_name = f"{model.op_name}:{model.slot}:DebugIdentity"
    proto = as_tensor_proto(model.array)
    name = None
    if how == "proto":
        proto, what = _tensor_proto(rng, model.array)
    elif how == "node_name":
        node_name = rng.choice((f"{model.op_name}:{'9' * HUGE_DIGITS}:DebugIdentity",
                                f"{model.op_name}:²:DebugIdentity", f"{model.op_name}:-1:DebugIdentity",
                                f"{model.op_name}\x00\x1b[31m:0:DebugIdentity", "no_colons", "::",
                                f"{model.op_name}:0:DebugNumericSummary"))
        what = f"node_name {node_name[:60]!r}"
    elif how == "wall_time":
        event.wall_time = rng.choice((float("nan"), float("inf"), -1.0, 1e300))
        what = f"wall_time {event.wall_time}"
    else:
        slot = rng.choice(("²", "٣", "9" * 200, "-1", "0\x1b[31m"))
        base = Path(seed.path).name
        name = re.sub(r"_0_DebugIdentity_", f"_{slot}_DebugIdentity_", base)
        node_name = f"{model.op_name}:{slot}:DebugIdentity"
        what = f"file renamed {name[:80]!r}, node_name slot {slot[:20]!r}"
    value.node_name = node_name
    value.tensor.CopyFrom(proto)
    return Mutant("tfdbg_v1_tensor", what, event.SerializeToString(), name=name)


def _field(number: int, payload: bytes) -> bytes:
    return field(number, bytes(payload))


def _field_int(number: int, value: int) -> bytes:
    return field(number, int(value))


def _attr(key: str, value: bytes) -> bytes:
    """A ``NodeDef.attr`` map entry (field 5): ``key`` -> the serialized ``AttrValue`` ``value``."""
    return _field(5, _field(1, key.encode()) + _field(2, value))


def _shape(dims) -> bytes:
    return b"".join(_field(2, _field_int(1, dim)) for dim in dims)


def graphdef_nodes(seed, rng):
    """A GraphDef (bare, or in a tfdbg v1 graph Event) with hostile nodes: names, inputs, attrs (written on the
    wire: the project's schema reads only name, op, input and device, and keeps the rest as it is)."""
    if seed.kind == "tfdbg_v1_graph":
        graph = tf_schema.GraphDef.FromString(tf_schema.Event.FromString(seed.data).graph_def)
    else:
        graph = tf_schema.GraphDef.FromString(seed.data)
    how = rng.choice(("control", "no_name", "dup", "many_dims_attr", "huge_attr", "huge_shape", "tensor_attr",
                      "self_loop", "bad_input"))
    position = rng.randrange(len(graph.node))
    node = graph.node[position]
    extra = b""
    if how == "control":
        node.name = node.name + rng.choice(CONTROL)
        what = f"node name {node.name!r}"
    elif how == "no_name":
        node.name = ""
        what = "a node without name"
    elif how == "dup":
        graph.node.add().CopyFrom(node)
        what = f"node {node.name!r} twice"
    elif how == "many_dims_attr":
        count = rng.randrange(65, 101)
        extra = _attr("_output_shapes", _field(1, _field(7, _shape([1] * count))))
        what = f"node {node.name!r}: _output_shapes with {count} dims"
    elif how == "huge_attr":
        extra = _attr("T", _field_int(6, rng.choice((99, 1 << 20, 0)))) + _attr("N", _field_int(3, (1 << 63) - 1))
        what = f"node {node.name!r}: attr T an unknown type, N 2**63-1"
    elif how == "huge_shape":
        extra = _attr("shape", _field(7, _shape([(1 << 62), 3])))
        what = f"node {node.name!r}: attr shape [2**62, 3]"
    elif how == "tensor_attr":
        count = rng.randrange(65, 101)
        tensor = tf_schema.TensorProto(dtype=1, tensor_content=b"\0\0\x80\x3f")
        for _ in range(count):
            tensor.tensor_shape.dim.add(size=1)
        extra = _attr("value", _field(8, tensor.SerializeToString()))
        what = f"node {node.name!r}: attr value a tensor of {count} dims"
    elif how == "self_loop":
        node.input.append(node.name)
        what = f"node {node.name!r} feeds itself"
    else:
        node.input.append(rng.choice(("missing:0", "x:" + "9" * 200, "x:²", "^", ":")))
        what = f"node {node.name!r}: input {node.input[-1][:30]!r}"
    data = b"".join(_field(1, n.SerializeToString() + (extra if i == position else b""))
                    for i, n in enumerate(graph.node))
    if seed.kind == "tfdbg_v1_graph":
        data = tf_schema.Event(wall_time=float(seedlib.V1_US), graph_def=data).SerializeToString()
    return Mutant("graphdef_nodes", what, data)


def _records(data: bytes) -> List[bytes]:
    records, at = [], 0
    while at + 12 <= len(data):
        (length,) = struct.unpack_from("<Q", data, at)
        records.append(data[at + 12:at + 12 + length])
        at += 12 + length + 4
    return records


def tfrecord_payload(seed, rng):
    """One record's payload damaged by a byte mutator, framed again with correct CRCs."""
    records = _records(seed.data)
    index = rng.randrange(len(records))
    sub = dataclasses.replace(seed, data=records[index] or b"\0")
    inner = rng.choice((bit_flip, truncate, insert_bytes, delete_bytes, duplicate_chunk, interesting_int))(sub, rng)
    records[index] = inner.data
    return Mutant("tfrecord_payload", f"record {index}: {inner.mutation}; CRCs recomputed",
                  b"".join(encode_record(r) for r in records))


def tfrecord_frame(seed, rng):
    """A record's length field lies, with its CRC fixed (so only the length is wrong)."""
    records = _records(seed.data)
    index = rng.randrange(len(records))
    value = rng.choice((0, len(records[index]) + 1, 1 << 40, (1 << 64) - 1, 0xFFFFFFFF))
    frames = [encode_record(r) for r in records]
    length = struct.pack("<Q", value)
    frames[index] = length + struct.pack("<I", masked_crc32c(length)) + frames[index][12:]
    return Mutant("tfrecord_frame", f"record {index}: length field {value} with a valid length CRC", b"".join(frames))


def tfdbg_v2_events(seed, rng):
    """The v2 dump written again by write_tfdbg_v2_dump with hostile traces (only this seed's file is used)."""
    model: seedlib.V2Model = seed.model
    traces = [list(trace) for trace in model.traces]
    index = rng.randrange(len(traces))
    how = rng.choice(("wall_time", "slot", "nul_name", "control_name", "proto", "op_type", "empty_name"))
    if how == "wall_time":
        traces[index][4] = rng.choice((float("nan"), float("inf"), float("-inf"), -1.0, 1e300))
        what = f"trace {index}: wall_time {traces[index][4]}"
    elif how == "slot":
        traces[index][2] = rng.choice((-1, (1 << 31) - 1, -(1 << 31)))
        what = f"trace {index}: output_slot {traces[index][2]}"
    elif how == "nul_name":
        traces[index][0] = traces[index][0] + "\x00x"
        what = f"trace {index}: op name {traces[index][0]!r}"
    elif how == "control_name":
        traces[index][0] = traces[index][0] + rng.choice(CONTROL)
        what = f"trace {index}: op name {traces[index][0]!r}"
    elif how == "op_type":
        traces[index][1] = rng.choice(("", "Relu\x1b[31m", "9" * 300))
        what = f"trace {index}: op type {traces[index][1][:20]!r}"
    elif how == "empty_name":
        traces[index][0] = ""
        what = f"trace {index}: empty op name"
    else:
        traces[index][3], what = _tensor_proto(rng, traces[index][3])
        what = f"trace {index}: {what}"
    files = seedlib.v2_files(dataclasses.replace(model, traces=tuple(tuple(t) for t in traces)))
    suffix = seed.path[len(seedlib.V2_DIR) + 1 + len(model.stem):]
    return Mutant("tfdbg_v2_events", what, files[suffix])


STRUCTURAL: Dict[str, Tuple[Mutator, ...]] = {
    "dump": (header_length_lie, header_length_lie, nano_magic, header_bytes, header_bytes, dump_shape_lie,
             dump_shape_lie, dump_shape_lie, dump_codes, dump_size_field, dump_names, dump_file_name, many_tensors,
             dump_wire_type),
    "opdebug": (header_length_lie, header_bytes, opdebug_status, opdebug_status, opdebug_status, dump_size_field,
                dump_names),
    "npy": (npy_header, npy_header, npy_header, npy_header, npy_values),
    "tfdbg_v1": (tfdbg_v1_tensor, tfdbg_v1_tensor, tfdbg_v1_tensor),
    "tfdbg_v1_graph": (graphdef_nodes, graphdef_nodes),
    "tfdbg_v2": (tfrecord_payload, tfrecord_frame, tfdbg_v2_events, tfdbg_v2_events, tfdbg_v2_events),
    "tfdbg_v2_graphs": (tfrecord_payload, tfrecord_frame, tfdbg_v2_events, tfdbg_v2_events),
    "graphdef": (graphdef_nodes, graphdef_nodes),
    "ge_text": (),
    "json": JSON,
    "jsonl": JSON,
    "csv": CSV,
}


# ------------------------------------------------------------------------------------------ swaps
def swap_mutator(kind: str) -> Mutator:
    def mutator(seed, rng):
        return Mutant(f"swap_{kind}", {"fifo": "a FIFO (named pipe) with the file's name",
                                       "devzero": "a symlink to /dev/zero with the file's name",
                                       "loop": "a symlink loop with the file's name",
                                       "dangling": "a dangling symlink with the file's name",
                                       "folder": "an empty folder with the file's name"}[kind], swap=kind)
    mutator.__name__ = f"swap_{kind}"
    return mutator


SWAP_MUTATORS: Tuple[Mutator, ...] = tuple(swap_mutator(kind) for kind in SWAPS)


def mutators_for(seed: seedlib.Seed) -> Tuple[Mutator, ...]:
    """Every mutator that applies to ``seed``: structural ones first, then text, bytes and the swaps."""
    text = TEXT if seed.text else ()
    return tuple(STRUCTURAL.get(seed.kind, ())) + text + BYTES + SWAP_MUTATORS


def mutate(seed: seedlib.Seed, rng: random.Random, mutator: Optional[Mutator] = None) -> Mutant:
    """One mutant of ``seed``: by ``mutator``, else by one chosen with ``rng``. A draw that changes nothing
    (reversing a one-character line) is drawn again, at worst replaced by a bit flip."""
    mutator = mutator or rng.choice(mutators_for(seed))
    for _ in range(5):
        mutant = mutator(seed, rng)
        if mutant.swap or mutant.name or mutant.data != seed.data:
            return mutant
    return bit_flip(seed, rng)


# ------------------------------------------------------------------------------------------ placing
def apply(mutant: Mutant, seed: seedlib.Seed, ws) -> Path:
    """Put ``mutant`` in the workspace ``ws`` in place of the seed's file; returns the path it is now at."""
    ws = Path(ws)
    original = ws / seed.path
    target = original.with_name(mutant.name) if mutant.name else original
    if os.path.lexists(str(original)):
        if original.is_dir() and not original.is_symlink():
            import shutil

            shutil.rmtree(str(original))
        else:
            original.unlink()
    target.parent.mkdir(parents=True, exist_ok=True)
    if mutant.swap is None:
        target.write_bytes(seedlib.materialize(mutant.data, ws))
    elif mutant.swap == "fifo":
        os.mkfifo(str(target))
    elif mutant.swap == "devzero":
        os.symlink("/dev/zero", str(target))
    elif mutant.swap == "loop":
        os.symlink(target.name, str(target))
    elif mutant.swap == "dangling":
        os.symlink(str(target) + ".does-not-exist", str(target))
    elif mutant.swap == "folder":
        target.mkdir()
    else:
        raise ValueError(mutant.swap)
    return target
