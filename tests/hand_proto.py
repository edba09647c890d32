"""A minimal protobuf encoder for tests: messages written by hand from the field numbers in the format docs,
independent of the project's own writers (and of the protobuf package)."""
from __future__ import annotations

import struct


def varint(value: int) -> bytes:
    """Base-128 varint of ``value`` taken as uint64 (a negative int64 takes ten bytes, as protobuf writes it)."""
    value &= (1 << 64) - 1
    out = bytearray()
    while True:
        byte, value = value & 0x7F, value >> 7
        out.append(byte | (0x80 if value else 0))
        if not value:
            return bytes(out)


def field(number: int, payload) -> bytes:
    """A field: bool/int -> varint, float -> fixed32, bytes/str -> length-delimited."""
    if isinstance(payload, (bool, int)):
        return varint(number << 3) + varint(int(payload))
    if isinstance(payload, float):
        return varint(number << 3 | 5) + struct.pack("<f", payload)
    if isinstance(payload, str):
        payload = payload.encode()
    return varint(number << 3 | 2) + varint(len(payload)) + bytes(payload)
