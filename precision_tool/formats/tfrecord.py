"""TFRecord framing (tfdbg v2 ``DebugEvents`` files), read without TensorFlow.

A file is a sequence of little-endian frames: ``uint64 length``, ``uint32 masked_crc32c(length bytes)``,
``byte data[length]``, ``uint32 masked_crc32c(data)``; ``masked_crc32c(x) = ((crc >> 15 | crc << 17) + 0xA282EAD8)
mod 2**32`` with ``crc`` the CRC-32C (Castagnoli) of ``x``. :class:`TFRecordFile` lists frames from their 12-byte
headers (the length CRC always checked, a length running past the end of the file refused before anything is
allocated) and checks the data CRC when a record's bytes are read (:meth:`TFRecordFile.read`), unless the caller
opts out. :func:`crc32c` computes CRC-32C with numpy; how, and how fast: docs/internals/formats.md#tfrecord.
"""
from __future__ import annotations

import io
import mmap
import os
import struct
from dataclasses import dataclass
from functools import lru_cache
from typing import Iterator, List, Optional, cast

import numpy as np

from precision_tool.errors import ReferenceFormatError
from precision_tool.fileio import open_input

_POLY_REFLECTED = 0x82F63B78  # CRC-32C, bit-reflected
_MASK_DELTA = 0xA282EAD8
_U32 = 0xFFFFFFFF
HEADER_BYTES = 12  # uint64 length + uint32 masked CRC of the length
FOOTER_BYTES = 4  # uint32 masked CRC of the data
_VECTORISED_MIN_BYTES = 2048


def _byte_table() -> np.ndarray:
    table = np.arange(256, dtype=np.uint64)
    for _ in range(8):
        table = np.where(table & 1, (table >> np.uint64(1)) ^ np.uint64(_POLY_REFLECTED), table >> np.uint64(1))
    return table.astype(np.uint64)


def _slice_tables(byte_table: np.ndarray) -> np.ndarray:
    """``tables[k][b]``: register after feeding byte ``b`` then ``k`` zero bytes into a zero register."""
    tables = [byte_table]
    for _ in range(7):
        previous = tables[-1]
        tables.append(byte_table[previous & np.uint64(0xFF)] ^ (previous >> np.uint64(8)))
    return np.stack(tables)


_BYTE_TABLE = _byte_table()
_SLICE_TABLES = _slice_tables(_BYTE_TABLE)
_SLICE_LISTS = [row.tolist() for row in _SLICE_TABLES]
# 16-bit tables for the vectorised path: register contribution of the k-th 16-bit chunk of a word.
_CHUNK16 = np.arange(65536, dtype=np.uint64)
_WORD_TABLES = [_SLICE_TABLES[7 - 2 * k][_CHUNK16 & np.uint64(0xFF)]
                ^ _SLICE_TABLES[6 - 2 * k][_CHUNK16 >> np.uint64(8)] for k in range(4)]
del _CHUNK16


def _update_serial(register: int, data) -> int:
    """Advance a (non-inverted) CRC-32C register over ``data``, 8 bytes per step."""
    t0, t1, t2, t3, t4, t5, t6, t7 = _SLICE_LISTS
    view = memoryview(data).cast("B")
    whole = len(view) // 8 * 8
    for (word,) in struct.iter_unpack("<Q", view[:whole]):
        word ^= register
        register = (t7[word & 255] ^ t6[(word >> 8) & 255] ^ t5[(word >> 16) & 255] ^ t4[(word >> 24) & 255]
                    ^ t3[(word >> 32) & 255] ^ t2[(word >> 40) & 255] ^ t1[(word >> 48) & 255] ^ t0[word >> 56])
    for byte in view[whole:]:
        register = t0[(register ^ byte) & 255] ^ (register >> 8)
    return register


# A linear map on 32-bit registers is stored as 4 tables of 256 entries (one per input byte).
def _apply(operator: np.ndarray, values: np.ndarray) -> np.ndarray:
    values = values.astype(np.uint32)
    return (operator[0][values & 0xFF] ^ operator[1][(values >> 8) & 0xFF]
            ^ operator[2][(values >> 16) & 0xFF] ^ operator[3][values >> 24])


def _operator_from_images(images: np.ndarray) -> np.ndarray:
    tables = []
    for byte_index in range(4):
        table = np.zeros(1, dtype=np.uint32)
        for bit in range(8):
            table = np.concatenate([table, table ^ images[8 * byte_index + bit]])
        tables.append(table)
    return np.stack(tables)


_BASIS = (np.uint32(1) << np.arange(32, dtype=np.uint32)).astype(np.uint32)


def _compose(outer: np.ndarray, inner: np.ndarray) -> np.ndarray:
    return _operator_from_images(_apply(outer, _apply(inner, _BASIS)))


@lru_cache(maxsize=64)
def _zero_shift_operators(lane_bytes: int, levels: int) -> List[np.ndarray]:
    """Operators appending ``lane_bytes * 2**i`` zero bytes to a register, for i < levels."""
    one_zero_byte = _operator_from_images(
        (_BYTE_TABLE[(_BASIS & 0xFF).astype(np.int64)] ^ (_BASIS >> 8).astype(np.uint64)).astype(np.uint32))
    result: Optional[np.ndarray] = None
    power, remaining = one_zero_byte, lane_bytes
    while remaining:
        if remaining & 1:
            result = power if result is None else _compose(power, result)
        remaining >>= 1
        if remaining:
            power = _compose(power, power)
    if result is None:
        raise ValueError(f"lane_bytes must be positive, not {lane_bytes}")
    operators = [result]
    for _ in range(levels - 1):
        operators.append(_compose(operators[-1], operators[-1]))
    return operators


def _lane_bytes(total: int) -> int:
    if total < 512 * 1024:
        return 64
    return 256 if total < 4 * 1024 * 1024 else 512


def _update_vectorised(register: int, data: np.ndarray) -> int:
    """CRC of many equal lanes at once, merged with ``crc(A+B) = shift(crc(A), len(B)) ^ crc0(B)``."""
    lane = _lane_bytes(data.size)
    lanes = data.size // lane
    head = data.size - lanes * lane
    register = _update_serial(register, data[:head])
    words = np.ascontiguousarray(data[head:].view("<u8").reshape(lanes, lane // 8).T)
    registers = np.zeros(lanes, dtype=np.uint64)
    registers[0] = register
    u0, u1, u2, u3 = _WORD_TABLES
    for row in words:
        word = row ^ registers
        registers = (u0[word & np.uint64(0xFFFF)] ^ u1[(word >> np.uint64(16)) & np.uint64(0xFFFF)]
                     ^ u2[(word >> np.uint64(32)) & np.uint64(0xFFFF)] ^ u3[word >> np.uint64(48)])
    levels = max(1, (lanes - 1).bit_length())
    # Leading zero registers change nothing: pad the lane count to a power of two, then merge pairs.
    merged = np.concatenate([np.zeros((1 << levels) - lanes, dtype=np.uint32), registers.astype(np.uint32)])
    for operator in _zero_shift_operators(lane, levels):
        merged = _apply(operator, merged[0::2]) ^ merged[1::2]
    return int(merged[0])


def crc32c(data, value: int = 0) -> int:
    """CRC-32C (Castagnoli) of ``data``, continuing from a previous result ``value``.

    >>> hex(crc32c(b"123456789"))
    '0xe3069283'
    """
    register = (value ^ _U32) & _U32
    array = np.frombuffer(data, dtype=np.uint8) if not isinstance(data, np.ndarray) else data.view(np.uint8).ravel()
    if array.size >= _VECTORISED_MIN_BYTES:
        register = _update_vectorised(register, array)
    else:
        register = _update_serial(register, array)
    return register ^ _U32


def masked_crc32c(data) -> int:
    """The CRC TFRecord stores: ``crc32c`` rotated right by 15 bits plus ``0xA282EAD8``."""
    crc = crc32c(data)
    return ((((crc >> 15) | (crc << 17)) & _U32) + _MASK_DELTA) & _U32


def encode_record(data: bytes) -> bytes:
    """One TFRecord frame holding ``data`` (what ``tf.io.TFRecordWriter`` writes)."""
    length = struct.pack("<Q", len(data))
    return length + struct.pack("<I", masked_crc32c(length)) + bytes(data) + struct.pack("<I", masked_crc32c(data))


@dataclass(frozen=True)
class RecordSpan:
    """Where one record's data lies in its file: ``length`` bytes from ``offset`` (after the header)."""

    index: int
    offset: int
    length: int


class TFRecordFile:
    """A TFRecord file opened for reading (a context manager; the file is memory-mapped).

    >>> with TFRecordFile(path) as records:            # doctest: +SKIP
    ...     for span in records.spans():
    ...         data = records.read(span)
    """

    def __init__(self, path):
        """Open and map ``path``: a regular file only (:func:`~precision_tool.fileio.open_input`), so a FIFO,
        device, folder, dangling symlink or symlink loop is a :class:`ReferenceFormatError` naming it."""
        self.path = os.fspath(path)
        self._file = open_input(self.path, ReferenceFormatError)
        try:
            self.size = os.fstat(self._file.fileno()).st_size
            self._map = mmap.mmap(self._file.fileno(), 0, access=mmap.ACCESS_READ) if self.size else b""
        except (OSError, ValueError) as error:
            self._file.close()
            raise ReferenceFormatError(self.path, f"cannot map the TFRecord file ({error})") from None

    def close(self) -> None:
        """Release the mapping and the file."""
        if isinstance(self._map, mmap.mmap):
            self._map.close()
        self._map = b""
        self._file.close()

    def __enter__(self) -> "TFRecordFile":
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

    @property
    def buffer(self):
        """The whole file as a read-only buffer (an ``mmap``)."""
        return self._map

    def spans(self) -> Iterator[RecordSpan]:
        """Yield every record's position, checking each length's CRC and that each frame fits the file.

        Raises
        ------
        ReferenceFormatError
            A truncated frame, a bad length CRC, or a length running past the end of the file
            (the error names the file and the record's byte offset).
        """
        position, index = 0, 0
        while position < self.size:
            if self.size - position < HEADER_BYTES:
                raise ReferenceFormatError(self.path, f"TFRecord truncated: {self.size - position} stray bytes "
                                                      f"at offset {position} (a record header needs 12)")
            header = bytes(self._map[position:position + HEADER_BYTES])
            length_bytes, (stored_crc,) = header[:8], struct.unpack("<I", header[8:])
            if masked_crc32c(length_bytes) != stored_crc:
                raise ReferenceFormatError(self.path, f"TFRecord record {index} at offset {position}: "
                                                      "length CRC mismatch (corrupt or not a TFRecord file)")
            (length,) = struct.unpack("<Q", length_bytes)
            available = self.size - position - HEADER_BYTES - FOOTER_BYTES
            if length > available:
                raise ReferenceFormatError(self.path, f"TFRecord record {index} at offset {position} "
                                                      f"claims {length} bytes but the file holds {max(available, 0)} "
                                                      "more (truncated file?)")
            yield RecordSpan(index, position + HEADER_BYTES, length)
            position += HEADER_BYTES + length + FOOTER_BYTES
            index += 1

    def verify(self, span: RecordSpan, data=None) -> None:
        """Check a record's data CRC (``data`` = its bytes if already read)."""
        if data is None:
            data = self._map[span.offset:span.offset + span.length]
        (stored_crc,) = struct.unpack("<I", bytes(self._map[span.offset + span.length:span.offset + span.length + 4]))
        if masked_crc32c(data) != stored_crc:
            raise ReferenceFormatError(self.path, f"TFRecord record {span.index} at offset "
                                                  f"{span.offset - HEADER_BYTES}: data CRC mismatch (corrupt file)")

    def read(self, span: RecordSpan, verify: bool = True) -> bytearray:
        """A record's data as a new writable ``bytearray``; checks its CRC unless ``verify`` is False."""
        data = bytearray(self._map[span.offset:span.offset + span.length])
        if verify:
            self.verify(span, data)
        return data


def read_records(path, verify: bool = True) -> Iterator[bytearray]:
    """Yield the data of every record in a TFRecord file, in order (see :class:`TFRecordFile`)."""
    with TFRecordFile(path) as records:
        for span in records.spans():
            yield records.read(span, verify)


def read_span(path: str, span: RecordSpan, verify: bool = True) -> bytearray:
    """Read one record's data again from ``path`` (listed earlier as ``span``), without mapping the file.

    Raises ``ReferenceFormatError`` when the file is now shorter than the span (changed since it was listed)
    or, with ``verify``, when the data's CRC does not match.
    """
    data = bytearray(span.length)
    try:
        with open_input(path, ReferenceFormatError) as handle:
            handle.seek(span.offset)
            read = cast(io.BufferedReader, handle).readinto(data)  # open_input gives a BufferedReader
            stored = handle.read(FOOTER_BYTES)
    except OSError as error:
        raise ReferenceFormatError(path, f"cannot read ({error.strerror or error})") from None
    if read != span.length or len(stored) != FOOTER_BYTES:
        raise ReferenceFormatError(path, f"record {span.index} is truncated (file changed since it was listed?)")
    if verify and masked_crc32c(data) != struct.unpack("<I", stored)[0]:
        raise ReferenceFormatError(path, f"TFRecord record {span.index}: data CRC mismatch (corrupt file)")
    return data
