"""Reference .npy folders in msaccucmp naming: writer, reader, name mapping, bad files."""
from __future__ import annotations

import os
import tracemalloc

import numpy as np
import pytest

from precision_tool.errors import ReferenceFormatError, WorkspaceError
from precision_tool.formats import npy_dir
from precision_tool.formats.npy_dir import (build_name_mapping, read_npy_dir, read_npy_header, reference_file_name,
                                            reference_op_name, write_reference_npy)

STAMP = 1_700_000_000_000_000


def test_file_names_replace_slash_and_dot_and_pad_the_timestamp():
    assert reference_op_name("block.1/conv/Conv2D") == "block_1_conv_Conv2D"
    assert reference_file_name("a/b.c", 2, 42) == "a_b_c.2.0000000000000042.npy"
    assert reference_file_name("x", 0, STAMP) == "x.0.1700000000000000.npy"
    with pytest.raises(ValueError):
        reference_file_name("x", -1, STAMP)


ARRAYS = [
    np.arange(12, dtype=np.float32).reshape(3, 4),
    np.array([np.nan, -0.0, np.inf, 6e-8], dtype=np.float16),
    np.float64(3.25),
    np.zeros((0, 2), dtype=np.int8),
    np.array([[True, False]]),
    np.array([1 + 2j], dtype=np.complex64),
    np.asfortranarray(np.arange(6, dtype=np.int64).reshape(2, 3)),
    np.array([2**63 - 1], dtype=">i8"),
]


@pytest.mark.parametrize("array", ARRAYS, ids=lambda a: f"{a.dtype.str}{list(np.shape(a))}")
def test_write_then_read_is_exact(tmp_path, array):
    path = write_reference_npy(tmp_path, "scope/op", 1, array, STAMP)
    assert os.path.basename(path) == "scope_op.1.1700000000000000.npy"
    (record,) = read_npy_dir(tmp_path)
    assert (record.op_name, record.output_index, record.timestamp_us, record.path) == ("scope_op", 1, STAMP, path)
    loaded = record.load()
    assert (loaded.dtype, loaded.shape) == (record.dtype, record.shape) == (np.asarray(array).dtype, np.shape(array))
    np.testing.assert_array_equal(loaded, array)  # NaN equals NaN here (array_equal's equal_nan is numpy 1.19+)
    assert loaded.tobytes(order="A") == np.asarray(array).tobytes(order="A")


def test_writer_leaves_no_temporary_files_and_uses_normal_permissions(tmp_path):
    umask = os.umask(0o022)
    try:
        path = write_reference_npy(tmp_path, "a", 0, np.ones(3), STAMP)
    finally:
        os.umask(umask)
    assert os.listdir(tmp_path) == [os.path.basename(path)]
    assert os.stat(path).st_mode & 0o777 == 0o644


def test_writer_refuses_arrays_msaccucmp_cannot_read(tmp_path):
    with pytest.raises(ReferenceFormatError, match=r"a\.0\.0000000000000001\.npy: cannot store dtype object"):
        write_reference_npy(tmp_path, "a", 0, np.array([{"x": 1}], dtype=object), 1)
    for dtype in ["V2", "U3", [("a", "<f4")]]:
        with pytest.raises(ReferenceFormatError, match="cannot store dtype"):
            write_reference_npy(tmp_path, "a", 0, np.zeros(2, dtype=dtype), 1)
    ml_dtypes = pytest.importorskip("ml_dtypes")
    for dtype in (ml_dtypes.bfloat16, ml_dtypes.float8_e5m2):
        with pytest.raises(ReferenceFormatError, match="cast it first"):
            write_reference_npy(tmp_path, "a", 0, np.zeros(2, dtype=dtype), 1)
    assert os.listdir(tmp_path) == []


def test_writer_error_names_the_file(tmp_path):
    with pytest.raises(ReferenceFormatError, match=r"missing/a\.0\.\d{16}\.npy: cannot write"):
        write_reference_npy(tmp_path / "missing", "a", 0, np.ones(1))


def test_latest_timestamp_wins_per_op_output(tmp_path):
    write_reference_npy(tmp_path, "a/b", 0, np.array([1.0]), STAMP)
    newest = write_reference_npy(tmp_path, "a/b", 0, np.array([2.0]), STAMP + 5)
    write_reference_npy(tmp_path, "a/b", 0, np.array([0.5]), STAMP + 1)
    write_reference_npy(tmp_path, "a/b", 1, np.array([9.0]), STAMP)
    records = read_npy_dir(tmp_path)
    assert [(r.op_name, r.output_index) for r in records] == [("a_b", 0), ("a_b", 1)]
    assert records[0].path == newest and records[0].load()[0] == 2.0


def test_name_mapping_restores_real_names_and_flags_collisions(tmp_path):
    names = ["conv1/Conv2D", "block.1/relu", "block_1/relu", "block_1_relu", "plain"]
    mapping = build_name_mapping(names)
    assert mapping["block_1_relu"] == ("block.1/relu", "block_1/relu", "block_1_relu")
    assert mapping["conv1_Conv2D"] == ("conv1/Conv2D",)
    for name in ["conv1/Conv2D", "block.1/relu", "unmapped/op"]:
        write_reference_npy(tmp_path, name, 0, np.zeros(1), STAMP)
    records = {r.file_op_name: r for r in read_npy_dir(tmp_path, mapping)}
    assert records["conv1_Conv2D"].op_name == "conv1/Conv2D" and not records["conv1_Conv2D"].ambiguous
    assert records["block_1_relu"].op_name == "block_1_relu" and records["block_1_relu"].ambiguous
    assert records["block_1_relu"].name_candidates == mapping["block_1_relu"]
    assert records["unmapped_op"].op_name == "unmapped_op" and records["unmapped_op"].name_candidates == ()
    # a plain {file name: real name} dict works too
    plain = read_npy_dir(tmp_path, {"conv1_Conv2D": "conv1/Conv2D"})
    (record,) = [r for r in plain if r.file_op_name == "conv1_Conv2D"]
    assert record.op_name == "conv1/Conv2D"


def test_other_files_and_stray_temporaries_are_ignored(tmp_path):
    write_reference_npy(tmp_path, "x", 0, np.zeros(1), STAMP)
    (tmp_path / "notes.txt").write_text("hi")
    (tmp_path / "x.npy").write_bytes(b"junk")  # not in the {name}.{index}.{timestamp}.npy form
    (tmp_path / ".precision_tool-1-abc.tmp").write_bytes(b"partial")
    (tmp_path / "dir.0.1.npy").mkdir()
    assert [r.op_name for r in read_npy_dir(tmp_path)] == ["x"]


def test_missing_folder_is_a_workspace_error(tmp_path):
    with pytest.raises(WorkspaceError, match="no such folder"):
        read_npy_dir(tmp_path / "nope")


def valid_npy_bytes(array):
    import io
    buffer = io.BytesIO()
    np.save(buffer, array)
    return buffer.getvalue()


@pytest.mark.parametrize("content, cause", [
    (b"", "not a readable .npy file"),
    (b"random bytes, not numpy at all", "not a readable .npy file"),
    (valid_npy_bytes(np.arange(100, dtype=np.float64))[:-8], "truncated: the header promises 800 bytes"),
    (valid_npy_bytes(np.array([{"a": 1}], dtype=object)), "holds Python objects"),
    # a fuzz run found these called "changed since it was listed", and two rows of one file saying two things
    (valid_npy_bytes(np.zeros(3, dtype=[("a", "<f4"), ("b", "<f4")])), r"holds records \(a structured dtype\)"),
    (valid_npy_bytes(np.array(["2020-01-01"], dtype="M8[D]")), r"holds dates or time spans, <M8\[D\]"),
    (b"PK\x03\x04" + b"\x00" * 40, "not a readable .npy file"),
])
def test_bad_npy_files_name_the_file_in_one_line(tmp_path, content, cause):
    path = tmp_path / "op.0.1700000000000000.npy"
    path.write_bytes(content)
    with pytest.raises(ReferenceFormatError, match=cause) as caught:
        read_npy_header(path)
    assert str(caught.value).startswith(str(path) + ": ") and "\n" not in str(caught.value)
    listing = read_npy_dir(tmp_path)  # the folder listing goes on, naming the file
    assert list(listing) == [] and listing.unreadable == ((str(path), str(caught.value)),)


def test_lying_header_is_refused_before_allocating(tmp_path):
    header = valid_npy_bytes(np.zeros(1, np.float32)).replace(b"(1,)", b"(10000000000,)")
    path = tmp_path / "op.0.1700000000000000.npy"
    path.write_bytes(header)
    tracemalloc.start()
    with pytest.raises(ReferenceFormatError, match="truncated: the header promises 40000000000 bytes"):
        npy_dir.read_npy_header(path)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 1 << 20


def test_a_file_replaced_after_listing_is_detected_on_load(tmp_path):
    path = write_reference_npy(tmp_path, "x", 0, np.zeros(4, np.float32), STAMP)
    (record,) = read_npy_dir(tmp_path)
    np.save(path, np.zeros(5, np.float32))
    with pytest.raises(ReferenceFormatError, match=r"changed since it was listed \(float32 \[4\] -> float32 \[5\]\)"):
        record.load()


# The fast header path (``_parse_plain_header``) must give numpy's answer or step aside: checked against numpy's
# own writer and parser on every simple dtype, both orders and shapes of 0 to 6 dims, and on headers numpy
# writes or accepts but the pattern must not answer for.
SIMPLE_DTYPES = ["?", "u1", "i1", "<u2", ">i2", "<f2", ">f2", "<f4", ">f4", "<f8", "<i8", ">u8", "<c8", ">c16"]


@pytest.mark.parametrize("dtype", SIMPLE_DTYPES)
@pytest.mark.parametrize("shape", [(), (0,), (5,), (2, 3), (1, 1, 1), (3, 0, 2), (2, 3, 4, 5, 6, 7)])
@pytest.mark.parametrize("fortran", [False, True])
@pytest.mark.parametrize("version", [(1, 0), (2, 0)])
def test_fast_header_path_agrees_with_numpy(tmp_path, dtype, shape, fortran, version):
    import io
    buffer = io.BytesIO()
    np.lib.format.write_array_header_1_0(buffer, {"descr": np.lib.format.dtype_to_descr(np.dtype(dtype)),
                                                  "fortran_order": fortran, "shape": shape}) \
        if version == (1, 0) else np.lib.format.write_array_header_2_0(
            buffer, {"descr": np.lib.format.dtype_to_descr(np.dtype(dtype)), "fortran_order": fortran,
                     "shape": shape})
    header = buffer.getvalue()
    buffer.seek(0)
    np.lib.format.read_magic(buffer)
    expected = (np.lib.format.read_array_header_1_0 if version == (1, 0) else np.lib.format.read_array_header_2_0)(
        buffer)
    length = 10 if version == (1, 0) else 12
    assert npy_dir._parse_plain_header(header[length:]) == expected  # numpy's answer, not just "an" answer
    path = tmp_path / "op.0.1700000000000000.npy"
    path.write_bytes(header + b"\0" * (int(np.prod(shape)) * np.dtype(dtype).itemsize))
    assert read_npy_header(path) == (np.dtype(dtype), tuple(shape))


@pytest.mark.parametrize("text", [
    "{'descr': '<f4', 'fortran_order': False, 'shape': (5), }",  # not a tuple: numpy refuses it
    "{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (5,), }",  # structured
    "{'descr': '<U3', 'fortran_order': False, 'shape': (5,), }",  # text
    "{'descr': '|O', 'fortran_order': False, 'shape': (5,), }",  # objects
    "{'descr': '<M8[s]', 'fortran_order': False, 'shape': (5,), }",  # datetimes
    "{'shape': (5,), 'fortran_order': False, 'descr': '<f4'}",  # another writer's key order
    "{'descr': '<f4', 'fortran_order': False, 'shape': (-5,), }",  # damage
    "{'descr': '<f4', 'fortran_order': 0, 'shape': (5,), }",
    "{'descr': '<f4', 'fortran_order': False, 'shape': (5L,), }",  # Python 2's numpy
    "{'descr': '<q9', 'fortran_order': False, 'shape': (5,), }",  # no such dtype
])
def test_fast_header_path_leaves_anything_else_to_numpy(text):
    assert npy_dir._parse_plain_header((text + " " * 8 + "\n").encode("latin-1")) is None


@pytest.mark.parametrize("size", [1000, 4096, 10 ** 6])
def test_read_npy_chunks_give_the_elements_in_order(tmp_path, size, reads):
    """Chunks of ``size`` elements, the last shorter, that put together are ``np.load``'s array: read into one buffer,
    or (in a process that maps) each a map of its own, a view."""
    from precision_tool.formats.npy_dir import read_npy_chunks
    from tests.formats.test_dump_file import in_a_map

    array = np.random.default_rng(2).standard_normal((3, 1001)).astype(np.float32)
    path = str(tmp_path / "op.0.1.npy")
    np.save(path, array)
    chunks = []
    for chunk in read_npy_chunks(path, np.dtype("<f4"), (3, 1001), size):  # each valid until the next is read
        assert in_a_map(chunk) == (reads == "mapped")
        chunks.append(chunk.copy())
    assert [len(chunk) for chunk in chunks] == [min(size, array.size - start) for start in range(0, array.size, size)]
    assert np.array_equal(np.concatenate(chunks), np.load(path).reshape(-1))
