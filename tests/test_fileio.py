import os

import numpy as np
import pytest

from precision_tool.fileio import TEMP_PREFIX, atomic_write, save_npy_atomic


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
