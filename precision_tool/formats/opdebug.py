"""Opdebug overflow records: decode and encode the status struct, describe it in English.

An overflow record is an ordinary dump file named ``Opdebug.Node_OpDebug.{task}.{stream}.{ts}`` whose single output
is a status struct stored as ``uint8[n]`` (``ascend-formats.md`` §3), all integers little-endian, in one of two
layouts: the old one, exactly 2048 bytes of uint64, or the new one, starting with uint32 magic ``0x5A5A5A5A`` (its
fields per accelerator type in ``_NEW_FIELDS``). The overflowing op is the dump with the same task_id and stream_id
as the reporting unit (:attr:`OverflowRecord.reporting_unit`). Both layouts byte by byte:
docs/internals/formats.md#opdebug.
"""
from __future__ import annotations

import os
import struct
from dataclasses import dataclass, replace
from typing import Dict, List, Optional, Tuple, Union

import numpy as np

from precision_tool.errors import OverflowRecordError
from precision_tool.formats.dump_file import read_blob, read_dump_header
from precision_tool.formats.dump_names import OPDEBUG_OP_NAME, OPDEBUG_OP_TYPE, build_dump_name
from precision_tool.formats.dump_writer import write_dump

MAGIC = 0x5A5A5A5A
OLD_LAYOUT_BYTES = 2048
NEW_HEADER_BYTES = 24
UNSET_ID = 65535

AI_CORE, DHA_ATOMIC_ADD, L2_ATOMIC_ADD = "AI Core", "DHA Atomic Add", "L2 Atomic Add"
ACC_TYPES: Dict[int, str] = {0: "AIC", 1: "AIV", 2: "AICPU", 3: "SDMA"}
ACC_TYPE_CODES: Dict[str, int] = {name: code for code, name in ACC_TYPES.items()}

# Old layout: unit -> (info block offset, status offset).
_OLD_BLOCKS = {DHA_ATOMIC_ADD: (0, 512), L2_ATOMIC_ADD: (128, 768), AI_CORE: (256, 1040)}
_OLD_INFO_FIELDS = ("model_id", "stream_id", "task_id", "task_type", "pc_start", "para_base")
_OLD_KERNEL_CODE_AT, _OLD_BLOCK_IDX_AT = 1024, 1032

# New layout: uint64 fields after the 24-byte header; "status" is 1 word (4 for AIC/AIV version 1).
_NEW_FIELDS = {
    "AIC": ("model_id", "stream_id", "task_id", "task_type", "context_id", "thread_id", "pc_start",
            "para_base", "core_id", "block_id", "status"),
    "SDMA": ("model_id", "stream_id", "task_id", "task_type", "context_id", "thread_id", "src_addr",
             "dst_addr", "channel_id", "status"),
    "AICPU": ("model_id", "stream_id", "task_id", "task_type", "context_id", "cpu_id", "thread_id", "status"),
}
_NEW_FIELDS["AIV"] = _NEW_FIELDS["AIC"]
_UNSET_WHEN_65535 = ("context_id", "thread_id")

AI_CORE_STATUS_BITS: Dict[int, str] = {
    0x8: "sign-bit negation overflow of the minimum signed integer",
    0x10: "integer add/sub/mul/mac overflow",
    0x20: "floating-point overflow",
    0x80: "negative input to float→unsigned conversion",
    0x100: "overflow converting fp32→fp16 or int32→fp16",
    0x400: "Cube accumulation overflow",
}
DHA_ATOMIC_CODES: Dict[int, str] = {0x9: "overflow", 0xA: "underflow", 0xB: "src NaN", 0xC: "dst NaN",
                                    0xD: "both NaN"}
L2_ATOMIC_CODES: Dict[int, str] = {0b001: "overflow", 0b010: "underflow", 0b011: "src NaN", 0b100: "dst NaN",
                                   0b101: "both NaN"}
_L2_SHIFT, _L2_MASK = 16, 0b111


@dataclass(frozen=True)
class OverflowUnit:
    """One unit's report. ``unit`` is ``"AI Core"``, ``"DHA Atomic Add"``, ``"L2 Atomic Add"`` (old
    layout) or ``"AIC"``, ``"AIV"``, ``"AICPU"``, ``"SDMA"`` (new layout). Fields a layout does not
    carry are ``None``; ``status`` is a tuple of words (four for AIC/AIV in new-layout version 1)."""

    unit: str
    model_id: int = 0
    stream_id: int = 0
    task_id: int = 0
    task_type: int = 0
    status: Tuple[int, ...] = (0,)
    pc_start: Optional[int] = None
    para_base: Optional[int] = None
    kernel_code: Optional[int] = None
    block_idx: Optional[int] = None
    context_id: Optional[int] = None
    thread_id: Optional[int] = None
    core_id: Optional[int] = None
    block_id: Optional[int] = None
    src_addr: Optional[int] = None
    dst_addr: Optional[int] = None
    channel_id: Optional[int] = None
    cpu_id: Optional[int] = None

    @property
    def overflowed(self) -> bool:
        """True if any status word is non-zero."""
        return any(self.status)


@dataclass(frozen=True)
class OverflowRecord:
    """A decoded status struct.

    ``layout`` is ``"old"`` or ``"new"``; ``units`` holds (DHA, L2, AI Core) for the old layout and
    the single record of the new one. ``version``, ``valid`` and ``data_len`` are new-layout only.
    """

    layout: str
    units: Tuple[OverflowUnit, ...]
    version: Optional[int] = None
    valid: Optional[int] = None
    data_len: Optional[int] = None

    @property
    def reporting_unit(self) -> OverflowUnit:
        """The unit whose ids name the overflowing op: the new layout's only unit; in the old layout
        the AI Core if its status is set, else L2, else DHA (the comparator's precedence), else AI Core."""
        if self.layout == "new":
            return self.units[0]
        by_name = {unit.unit: unit for unit in self.units}
        for name in (AI_CORE, L2_ATOMIC_ADD, DHA_ATOMIC_ADD):
            if name in by_name and by_name[name].overflowed:
                return by_name[name]
        return by_name.get(AI_CORE, self.units[-1])

    @property
    def task_id(self) -> int:
        return self.reporting_unit.task_id

    @property
    def stream_id(self) -> int:
        return self.reporting_unit.stream_id

    @property
    def overflowed(self) -> bool:
        """True if any unit has a status set."""
        return any(unit.overflowed for unit in self.units)


# -------------------------------------------------------------------------------------------- decoding

def decode_status(data: bytes, path: Union[str, os.PathLike, None] = None) -> OverflowRecord:
    """Decode a status struct (the bytes of an Opdebug record's output).

    The new layout is recognised by its magic; anything else must be exactly 2048 bytes.

    Raises
    ------
    OverflowRecordError
        naming ``path`` for a size that fits neither layout, an unknown accelerator type or
        version, or a ``data_len`` shorter than the record's fields or running past the status's end.
    """
    data = bytes(data)
    if len(data) >= 4 and struct.unpack_from("<I", data)[0] == MAGIC:
        return _decode_new(data, path)
    if len(data) != OLD_LAYOUT_BYTES:
        raise OverflowRecordError(
            path, f"status is {len(data)} bytes: the old layout is exactly {OLD_LAYOUT_BYTES} bytes and the new one "
                  f"starts with magic 0x{MAGIC:08X}")
    return _decode_old(data)


def _decode_old(data: bytes) -> OverflowRecord:
    units = []
    for name, (info_at, status_at) in _OLD_BLOCKS.items():
        info = dict(zip(_OLD_INFO_FIELDS, struct.unpack_from("<6Q", data, info_at)))
        (status,) = struct.unpack_from("<Q", data, status_at)
        extra = {}
        if name == AI_CORE:
            extra["kernel_code"], extra["block_idx"] = struct.unpack_from("<2Q", data, _OLD_KERNEL_CODE_AT)
        units.append(OverflowUnit(unit=name, status=(status,), **info, **extra))
    return OverflowRecord(layout="old", units=tuple(units))


def _new_word_count(acc_type: str, version: int) -> int:
    status_words = 4 if version == 1 and acc_type in ("AIC", "AIV") else 1
    return len(_NEW_FIELDS[acc_type]) - 1 + status_words


def _decode_new(data: bytes, path) -> OverflowRecord:
    if len(data) < NEW_HEADER_BYTES:
        raise OverflowRecordError(
            path, f"status is {len(data)} bytes: the new layout needs at least {NEW_HEADER_BYTES}")
    _, version, valid, acc_code, _, data_len = struct.unpack_from("<6I", data)
    if acc_code not in ACC_TYPES:
        raise OverflowRecordError(path, f"unknown accelerator type {acc_code} (known: 0 AIC, 1 AIV, 2 AICPU, 3 SDMA)")
    if version not in (0, 1):
        raise OverflowRecordError(path, f"unsupported status version {version} (known: 0, 1)")
    acc_type = ACC_TYPES[acc_code]
    words = _new_word_count(acc_type, version)
    if data_len < words * 8:
        raise OverflowRecordError(
            path, f"data_len {data_len} is less than the {words * 8} bytes of a version {version} {acc_type} record")
    needed = NEW_HEADER_BYTES + words * 8
    if len(data) < needed:
        raise OverflowRecordError(
            path, f"status is {len(data)} bytes but a version {version} {acc_type} record needs {needed}")
    if NEW_HEADER_BYTES + data_len > len(data):  # a length past the end: the header is damaged, or the file cut
        raise OverflowRecordError(
            path, f"data_len {data_len} runs past the end of the status ({len(data)} bytes: at most "
                  f"{len(data) - NEW_HEADER_BYTES} after the {NEW_HEADER_BYTES}-byte header)")
    values = struct.unpack_from(f"<{words}Q", data, NEW_HEADER_BYTES)
    names = _NEW_FIELDS[acc_type]
    named = dict(zip(names[:-1], values[: len(names) - 1]))
    for name in _UNSET_WHEN_65535:
        if named.get(name) == UNSET_ID:
            named[name] = None
    unit = OverflowUnit(unit=acc_type, status=tuple(values[len(names) - 1:]), **named)
    return OverflowRecord(layout="new", units=(unit,), version=version, valid=valid, data_len=data_len)


def read_overflow_record(path: Union[str, os.PathLike]) -> OverflowRecord:
    """Read an Opdebug dump file and decode its status struct (all ``size`` bytes of output 0)."""
    dump = read_dump_header(path)
    if len(dump.outputs) != 1:
        raise OverflowRecordError(dump.path, f"an Opdebug record has one output, this file has {len(dump.outputs)}")
    return decode_status(read_blob(dump, dump.outputs[0]), dump.path)


# ------------------------------------------------------------------------------------------ describing

def describe_status(record: Union[OverflowRecord, OverflowUnit]) -> List[str]:
    """English lines for every status set, one finding per line, units in record order.

    AI Core / AIC / AIV words are decoded bit by bit (:data:`AI_CORE_STATUS_BITS`); the DHA status is
    a code (:data:`DHA_ATOMIC_CODES`); the L2 code is bits 16-18 (:data:`L2_ATOMIC_CODES`). AICPU and
    SDMA status words are shown in hex, undecoded. Returns ``[]`` when nothing is set.

    >>> describe_status(OverflowUnit("AI Core", status=(0x20,)))
    ['AI Core: floating-point overflow (0x20)']
    """
    units = record.units if isinstance(record, OverflowRecord) else (record,)
    lines: List[str] = []
    for unit in units:
        several = len(unit.status) > 1
        for word_index, word in enumerate(unit.status):
            if word:
                label = f"{unit.unit} status word {word_index}" if several else unit.unit
                lines.extend(_describe_word(unit.unit, label, word))
    return lines


def _describe_word(unit: str, label: str, word: int) -> List[str]:
    if unit in (AI_CORE, "AIC", "AIV"):
        lines = [f"{label}: {text} (0x{bit:x})" for bit, text in AI_CORE_STATUS_BITS.items() if word & bit]
        unknown = word & ~sum(AI_CORE_STATUS_BITS)
        if unknown:
            lines.append(f"{label}: unknown status bits 0x{unknown:x}")
        return lines
    if unit == DHA_ATOMIC_ADD:
        text = DHA_ATOMIC_CODES.get(word)
        return [f"{label}: {text} (code 0x{word:x})" if text else f"{label}: unknown code 0x{word:x}"]
    if unit == L2_ATOMIC_ADD:
        code = (word >> _L2_SHIFT) & _L2_MASK
        text = L2_ATOMIC_CODES.get(code)
        lines = [f"{label}: {text} (bits 16-18 = {code:03b})" if text
                 else f"{label}: unknown code {code:03b} in bits 16-18 (status 0x{word:x})"]
        outside = word & ~(_L2_MASK << _L2_SHIFT)
        if outside and text:
            lines.append(f"{label}: status bits outside 16-18 set (0x{outside:x})")
        return lines
    return [f"{label}: status 0x{word:x} (not decoded)"]


# -------------------------------------------------------------------------------------------- encoding

def old_layout_record(ai_core: Optional[OverflowUnit] = None, dha: Optional[OverflowUnit] = None,
                      l2: Optional[OverflowUnit] = None) -> OverflowRecord:
    """An old-layout record; units not given are all zeros. Unit names are set for you."""
    given = {DHA_ATOMIC_ADD: dha, L2_ATOMIC_ADD: l2, AI_CORE: ai_core}
    units = tuple(replace(unit, unit=name) if unit is not None else OverflowUnit(name)
                  for name, unit in given.items())
    return OverflowRecord(layout="old", units=units)


def new_layout_record(unit: OverflowUnit, version: int = 0, valid: int = 1,
                      data_len: Optional[int] = None) -> OverflowRecord:
    """A new-layout record for one AIC/AIV/AICPU/SDMA unit (``data_len`` default: the right one)."""
    return OverflowRecord(layout="new", units=(unit,), version=version, valid=valid, data_len=data_len)


def encode_status(record: OverflowRecord) -> bytes:
    """The status struct bytes for ``record`` (inverse of :func:`decode_status`).

    Old layout: 2048 bytes, missing ``None`` fields written as 0. New layout: 24-byte header plus
    the unit's words; ``None`` context/thread ids are written as 65535, a one-word AIC/AIV status
    in version 1 is zero-padded to four words. Raises ``ValueError`` for a record that cannot be
    written (unknown unit name, too many status words).
    """
    if record.layout == "old":
        return _encode_old(record)
    if record.layout == "new":
        return _encode_new(record)
    raise ValueError(f"layout must be 'old' or 'new', not {record.layout!r}")


def _encode_old(record: OverflowRecord) -> bytes:
    data = bytearray(OLD_LAYOUT_BYTES)
    for unit in record.units:
        if unit.unit not in _OLD_BLOCKS:
            raise ValueError(f"old layout has no unit {unit.unit!r}")
        if len(unit.status) != 1:
            raise ValueError(f"old layout status is one word, {unit.unit} has {len(unit.status)}")
        info_at, status_at = _OLD_BLOCKS[unit.unit]
        struct.pack_into("<6Q", data, info_at, *(getattr(unit, name) or 0 for name in _OLD_INFO_FIELDS))
        struct.pack_into("<Q", data, status_at, unit.status[0])
        if unit.unit == AI_CORE:
            struct.pack_into("<2Q", data, _OLD_KERNEL_CODE_AT, unit.kernel_code or 0, unit.block_idx or 0)
    return bytes(data)


def _encode_new(record: OverflowRecord) -> bytes:
    (unit,) = record.units
    if unit.unit not in ACC_TYPE_CODES:
        raise ValueError(f"new layout unit must be one of {sorted(ACC_TYPE_CODES)}, not {unit.unit!r}")
    version = record.version or 0
    names = _NEW_FIELDS[unit.unit]
    status_words = _new_word_count(unit.unit, version) - (len(names) - 1)
    if len(unit.status) > status_words:
        raise ValueError(f"a version {version} {unit.unit} record has {status_words} status words, "
                         f"not {len(unit.status)}")
    status = tuple(unit.status) + (0,) * (status_words - len(unit.status))
    values = []
    for name in names[:-1]:
        value = getattr(unit, name)
        values.append((UNSET_ID if name in _UNSET_WHEN_65535 else 0) if value is None else value)
    words = (*values, *status)
    data_len = len(words) * 8 if record.data_len is None else record.data_len
    valid = 1 if record.valid is None else record.valid
    header = struct.pack("<6I", MAGIC, version, valid, ACC_TYPE_CODES[unit.unit], 0, data_len)
    return header + struct.pack(f"<{len(words)}Q", *words)


def write_overflow_record(folder: Union[str, os.PathLike], record: Union[OverflowRecord, bytes], *,
                          timestamp: int, task_id: Optional[int] = None,
                          stream_id: Optional[int] = None) -> str:
    """Write an Opdebug dump file ``Opdebug.Node_OpDebug.{task}.{stream}.{timestamp}`` in ``folder``.

    ``record`` is an :class:`OverflowRecord` or ready status bytes (e.g. a deliberately bad size).
    The name's task and stream ids default to the record's reporting unit. Returns the path.
    """
    if isinstance(record, OverflowRecord):
        status = encode_status(record)
        task_id = record.task_id if task_id is None else task_id
        stream_id = record.stream_id if stream_id is None else stream_id
    else:
        status = bytes(record)
        if task_id is None or stream_id is None:
            raise ValueError("task_id and stream_id are required when writing raw status bytes")
    name = build_dump_name(OPDEBUG_OP_TYPE, OPDEBUG_OP_NAME, task_id, stream_id, timestamp).file_name
    path = os.path.join(os.fspath(folder), name)
    return write_dump(path, OPDEBUG_OP_NAME, outputs=[np.frombuffer(status, dtype=np.uint8)], dump_time=timestamp)

