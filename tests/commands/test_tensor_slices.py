"""``pt``/``cp`` slices read only what they cover: a 1 GiB tensor (a sparse file, its header encoded here by hand
from the field numbers of ``ascend-formats.md``) is sliced with a few pages of reading; ``cp`` compares the
slices it is given; a device layout and a Fortran-ordered ``.npy`` still give the right elements."""
from __future__ import annotations

import os
import struct

import numpy as np
import pytest
from hand_proto import field, varint
from inspect_builders import reference_values, write_inspect_workspace

from precision_tool.commands import build_registry
from precision_tool.commands.command_registry import Context, Session

ELEMENTS = 1 << 28  # float32: 1 GiB of payload
HEAD_VALUES = np.array([1.5, -2.0, 3.0, 4.0], np.float32)
LAST_VALUE = 7.0


def write_sparse_dump(path: str) -> None:
    """DumpData{version "2.0", dump_time, op_name "big/op", output {float32 (1), ND (2), shape [2**28],
    size 2**30}}, then a payload that is a hole except the first four and the last element."""
    shape = field(1, varint(ELEMENTS))  # packed repeated uint64
    output = field(1, 1) + field(2, 2) + field(3, shape) + field(6, ELEMENTS * 4)
    header = field(1, b"2.0") + field(2, 1700000000000000) + field(3, output) + field(6, b"big/op")
    start = 8 + len(header)
    with open(path, "wb") as handle:
        handle.write(struct.pack("<Q", len(header)) + header)
        handle.write(HEAD_VALUES.tobytes())
        handle.seek(start + (ELEMENTS - 1) * 4)
        handle.write(np.float32(LAST_VALUE).tobytes())


def _bytes_read() -> int:
    with open("/proc/self/io") as handle:
        return next(int(line.split()[1]) for line in handle if line.startswith("rchar:"))


@pytest.fixture(scope="module")
def workspace(tmp_path_factory):
    return write_inspect_workspace(tmp_path_factory.mktemp("ws"))


@pytest.fixture(scope="module")
def big_dump(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("big") / "MatMul.big_op.1.2.1700000000000000")
    write_sparse_dump(path)
    return path


def run(workspace, *argv):
    return build_registry().dispatch(list(argv), Context(data_dir=workspace, session=Session(terminal_size=(100, 40))))


@pytest.mark.skipif(not os.path.exists("/proc/self/io"), reason="needs Linux /proc/self/io to count bytes read")
@pytest.mark.parametrize("slice_text, expected", [("[:4]", HEAD_VALUES), ("[-1:]", np.float32([LAST_VALUE])),
                                                  ("[1:3]", HEAD_VALUES[1:3])])
def test_a_slice_of_a_1_gib_tensor_reads_a_few_pages(workspace, big_dump, slice_text, expected):
    before = _bytes_read()
    report = run(workspace, "pt", big_dump + ":output:0" + slice_text)
    read = _bytes_read() - before
    assert read < 1 << 20, f"read {read:,} bytes for a slice of {expected.size} elements"
    tensor = report.data["tensors"][0]
    assert np.array_equal(np.asarray(tensor["values"], np.float32), expected)
    assert tensor["shape"] == [ELEMENTS] and tensor["shown_shape"] == [expected.size]
    assert (tensor["min"], tensor["max"]) == (float(expected.min()), float(expected.max()))  # the slice's


def test_cp_compares_the_slices_it_is_given(workspace, tmp_path):
    rows = np.array([[1.0, 2.0, 3.0], [1.0, 2.0, 3.5], [-1.0, -2.0, -3.0]], np.float32)
    np.save(tmp_path / "a.npy", rows)
    left, right = str(tmp_path / "a.npy"), str(tmp_path / "a.npy")
    same = run(workspace, "cp", left + "[0]", right + "[0]")
    assert same.data["cosine"] == 1.0 and same.exit_code == 0
    near = run(workspace, "cp", left + "[0]", right + "[1]")
    x, y = rows[0].astype(np.float64), rows[1].astype(np.float64)
    assert near.data["cosine"] == pytest.approx(x @ y / np.sqrt((x @ x) * (y @ y)), abs=1e-12)
    assert near.data["left"].endswith("a.npy[0]") and near.data["right"].endswith("a.npy[1]")
    opposite = run(workspace, "cp", left + "[0]", right + "[2]")
    assert opposite.data["cosine"] == pytest.approx(-1.0) and opposite.exit_code == 1


def test_a_slice_of_a_device_layout_is_taken_after_conversion(workspace):
    report = run(workspace, "pt", "conv1/Conv2D:output:0[0, 3, :, 2]")
    expected = reference_values()["conv1/BiasAdd"].astype(np.float16)[0, 3, :, 2]
    assert np.array_equal(np.asarray(report.data["tensors"][0]["values"], np.float16), expected)


def test_a_fortran_ordered_npy_is_sliced_by_its_logical_index(workspace, tmp_path):
    values = np.asfortranarray(np.arange(12, dtype=np.float64).reshape(3, 4))
    np.save(tmp_path / "f.npy", values)
    report = run(workspace, "pt", str(tmp_path / "f.npy") + "[1, 1:3]")
    assert report.data["tensors"][0]["values"] == [5.0, 6.0]
    whole = run(workspace, "pt", str(tmp_path / "f.npy"))
    assert whole.data["tensors"][0]["values"] == values.tolist()


def test_a_slice_past_a_dump_file_end_is_one_line(workspace, tmp_path, big_dump):
    cut = str(tmp_path / "MatMul.big_op.1.2.1700000000000001")
    with open(big_dump, "rb") as source, open(cut, "wb") as target:
        target.write(source.read(4096))
    from precision_tool.errors import PrecisionToolError

    with pytest.raises(PrecisionToolError, match="MatMul.big_op.1.2.1700000000000001"):
        run(workspace, "pt", cut + ":output:0[:4]")
