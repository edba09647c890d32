import os

import numpy as np
import pytest

from precision_tool.errors import ReferenceFormatError
from precision_tool.fileio import (TEMP_PREFIX, atomic_write, open_input, read_input_bytes, read_input_text,
                                   save_npy_atomic)


def test_failed_write_leaves_destination_untouched_and_no_temp(tmp_path):
    target = tmp_path / "result.csv"
    target.write_text("old complete content")
    with pytest.raises(RuntimeError):
        with atomic_write(target, "w") as handle:
            handle.write("half a")
            raise RuntimeError("killed mid-write")
    assert target.read_text() == "old complete content"
    assert os.listdir(tmp_path) == ["result.csv"]


def test_success_replaces_and_text_mode_keeps_line_endings(tmp_path):
    target = tmp_path / "out.csv"
    with atomic_write(target, "w") as handle:
        handle.write("a,b\r\n")
    assert target.read_bytes() == b"a,b\r\n"
    assert not [n for n in os.listdir(tmp_path) if n.startswith(TEMP_PREFIX)]


def test_save_npy_atomic_round_trip(tmp_path):
    values = np.arange(6, dtype=np.float16).reshape(2, 3)
    path = save_npy_atomic(tmp_path / "x.npy", values)
    back = np.load(path, allow_pickle=False)
    assert back.dtype == np.float16 and np.array_equal(back, values)


def test_bad_mode_is_rejected(tmp_path):
    with pytest.raises(ValueError, match="mode must be 'wb' or 'w'"):
        with atomic_write(tmp_path / "x", "a"):
            pass


# -- reading: regular files only -----------------------------------------------------------------------


@pytest.mark.parametrize("make, cause", [
    (lambda p: os.mkfifo(str(p)), "is a FIFO (named pipe), not a regular file"),
    (lambda p: os.symlink("/dev/zero", str(p)), "is a character device, not a regular file"),
    (lambda p: p.mkdir(), "is a folder, not a regular file"),
    (lambda p: os.symlink(str(p), str(p)), "cannot open: a symlink loop"),
    (lambda p: os.symlink(str(p) + ".gone", str(p)), "does not exist (or is a dangling symlink)"),
])
def test_anything_but_a_regular_file_is_one_line_naming_it(tmp_path, make, cause):
    path = tmp_path / "conv.0.1.npy"
    make(path)
    with pytest.raises(ReferenceFormatError) as raised:
        read_input_bytes(path, ReferenceFormatError)  # a FIFO would block a plain open(): this returns at once
    assert str(raised.value) == f"{path}: {cause}"


def test_size_limit_is_checked_before_reading_and_text_must_decode(tmp_path):
    path = tmp_path / "graph.txt"
    path.write_bytes(b"\xff" * 11)
    with pytest.raises(ReferenceFormatError, match=r"graph.txt: is 11 bytes, more than this reader takes \(10\)"):
        read_input_bytes(path, ReferenceFormatError, limit=10)
    with pytest.raises(ReferenceFormatError, match=r"graph.txt: is not utf-8 text \(byte 0\)"):
        read_input_text(path, ReferenceFormatError)
    with open_input(path) as handle:
        assert handle.read() == b"\xff" * 11
