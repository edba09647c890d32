"""``same_payload`` (the comparator's check that an input holds its producer's bytes) and ``prefetch``: payloads
compared piece by piece, a difference found in any piece, in the last short piece, or in none."""
from __future__ import annotations

import os

import numpy as np
import pytest

from precision_tool.fileio import prefetch
from precision_tool.formats.dump_file import read_dump_header, same_payload
from precision_tool.formats.dump_writer import write_dump


def _dump(folder, name, values):
    return read_dump_header(write_dump(os.path.join(str(folder), name), "op", outputs=[values]))


@pytest.mark.parametrize("changed", [None, 0, 1000, 4095, 4096, 9999])
def test_a_difference_is_found_in_any_piece(tmp_path, changed):
    values = np.arange(10000, dtype=np.uint8)  # 10,000 bytes: pieces of 4,096, the last one short
    other = values.copy()
    if changed is not None:
        other[changed] ^= 1
    a, b = _dump(tmp_path, "a", values), _dump(tmp_path, "b", other)
    equal = same_payload((a, a.outputs[0]), (b, b.outputs[0]), values.nbytes, piece=4096)
    assert equal is (changed is None)


def test_only_the_first_nbytes_count(tmp_path):
    a = _dump(tmp_path, "a", np.array([1, 2, 3, 4], np.uint8))
    b = _dump(tmp_path, "b", np.array([1, 2, 3, 9], np.uint8))
    assert same_payload((a, a.outputs[0]), (b, b.outputs[0]), 3)
    assert not same_payload((a, a.outputs[0]), (b, b.outputs[0]), 4)


def test_prefetch_never_blocks_or_fails(tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(str(fifo))
    prefetch(fifo)  # a FIFO: opened without blocking, left alone
    prefetch(tmp_path / "missing")
    prefetch(tmp_path)  # a folder
    (tmp_path / "file").write_bytes(b"x" * 10)
    prefetch(tmp_path / "file")
    assert (tmp_path / "file").read_bytes() == b"x" * 10
