"""Ascend op dump files: header reading, tensor reading, the writer, and every error message."""
from __future__ import annotations

import mmap
import os
import struct

import numpy as np
import pytest

from precision_tool.errors import DumpFormatError, NanoDumpError, PrecisionToolError
from precision_tool.formats import dtypes
from precision_tool.formats.dump_file import (element_count, format_shape, read_blob, read_dump_header,
                                               read_stored_block, read_tensor)
from precision_tool.formats.dump_schema import DumpData
from precision_tool.formats.dump_writer import TensorSpec, build_dump_bytes, write_dump
from precision_tool.formats.tensor_kind import INPUT, OUTPUT

NUMPY_CODES = sorted(code for code in dtypes.NUMPY_DTYPES if code != dtypes.DT_BF16)


def sample_array(code: int, shape=(2, 3)) -> np.ndarray:
    """Deterministic values of CANN type ``code`` (negative and fractional where the type allows)."""
    dtype = dtypes.NUMPY_DTYPES[code]
    values = np.arange(np.prod(shape, dtype=np.int64)).reshape(shape) - 2
    if dtype.kind == "b":
        return values % 2 == 0
    if dtype.kind == "u":
        return (values + 2).astype(dtype)
    if dtype.kind in "fc":
        return (values * 0.75).astype(dtype)
    return values.astype(dtype)


def write_raw(path, header: bytes, payload: bytes = b"", length=None) -> str:
    with open(path, "wb") as handle:
        handle.write(struct.pack("<Q", len(header) if length is None else length) + header + payload)
    return str(path)


# ------------------------------------------------------------------------------------------ round trips

@pytest.mark.parametrize("code", NUMPY_CODES, ids=[dtypes.DTYPE_NAMES[c] for c in NUMPY_CODES])
def test_every_numpy_dtype_round_trips_bit_exactly(tmp_path, code):
    array = sample_array(code)
    path = write_dump(tmp_path / "Op.op.1.2.1700000000000000", "op", outputs=[array])
    dump = read_dump_header(path)
    (entry,) = dump.outputs
    assert (entry.dtype_code, entry.shape, entry.size) == (code, (2, 3), array.nbytes)
    back = read_tensor(dump, entry)
    assert back.dtype == dtypes.NUMPY_DTYPES[code] and back.shape == (2, 3)
    assert back.tobytes() == np.ascontiguousarray(array).tobytes()


def test_bf16_bits_are_widened_to_float32(tmp_path):
    values = np.array([[1.0, -2.5], [np.inf, 3.0e38]], dtype=np.float32)
    bits = dtypes.float32_to_bf16_bits(values)
    path = write_dump(tmp_path / "d", "op", inputs=[TensorSpec(bits, dtype_code=dtypes.DT_BF16)])
    dump = read_dump_header(path)
    entry = dump.inputs[0]
    assert entry.dtype_name == "DT_BF16" and entry.storage_dtype == np.dtype("<u2")
    assert entry.numpy_dtype == np.dtype("float32") and entry.nbytes == 8
    back = read_tensor(dump, entry)
    assert back.dtype == np.float32
    np.testing.assert_array_equal(back, dtypes.bf16_bits_to_float32(bits))
    assert back[0, 1] == -2.5 and np.isinf(back[1, 0])


def test_scalar_and_zero_size_tensors(tmp_path):
    scalar = np.array(7.5, dtype=np.float16)
    empty = np.zeros((3, 0, 2), dtype=np.int32)
    path = write_dump(tmp_path / "d", "op", inputs=[scalar], outputs=[empty])
    dump = read_dump_header(path)
    assert dump.inputs[0].shape == () and dump.inputs[0].nbytes == 2
    assert dump.outputs[0].shape == (3, 0, 2) and dump.outputs[0].size == 0
    got_scalar = read_tensor(dump, dump.inputs[0])
    assert got_scalar.shape == () and got_scalar == np.float16(7.5)
    got_empty = read_tensor(dump, dump.outputs[0])
    assert got_empty.shape == (3, 0, 2) and got_empty.dtype == np.int32


def test_inputs_come_first_in_the_payload_though_outputs_are_field_3(tmp_path):
    in0, in1 = np.arange(3, dtype=np.int8), np.arange(4, dtype=np.int16)
    out0, out1 = np.arange(5, dtype=np.float32), np.ones((2, 2), dtype=np.float64)
    content = build_dump_bytes("op", [in0, in1], [out0, out1], dump_time=5, buffers=[b"L1L1"], spaces=[b"LOG"])
    (length,) = struct.unpack_from("<Q", content)
    header = DumpData.FromString(content[8:8 + length])
    assert [o.size for o in header.output] == [20, 32] and [i.size for i in header.input] == [3, 8]
    payload = content[8 + length:]
    assert payload == in0.tobytes() + in1.tobytes() + out0.tobytes() + out1.tobytes() + b"L1L1" + b"LOG"
    path = tmp_path / "d"
    path.write_bytes(content)
    dump = read_dump_header(path)
    start = 8 + length
    assert [e.offset for e in dump.inputs] == [start, start + 3]
    assert [e.offset for e in dump.outputs] == [start + 11, start + 31]
    assert [b.offset for b in dump.buffers] == [start + 63] and [s.offset for s in dump.spaces] == [start + 67]
    assert read_blob(dump, dump.buffers[0]) == b"L1L1" and read_blob(dump, dump.spaces[0]) == b"LOG"
    for entry, expected in zip(dump.tensors, (in0, in1, out0, out1)):
        np.testing.assert_array_equal(read_tensor(dump, entry), expected)
    assert dump.payload_bytes == 70 and dump.trailing_bytes == 0


def test_header_fields_survive_a_round_trip(tmp_path):
    nc1hwc0 = np.arange(1 * 2 * 2 * 3 * 16, dtype=np.float16).reshape(1, 2, 2, 3, 16)
    out = TensorSpec(nc1hwc0, format="NC1HWC0", original_shape=(1, 2, 3, 20), original_op=("scope/conv", 1),
                     sub_format=4, address=0xDEADBEEF)
    path = write_dump(tmp_path / "d", "scope/conv_fused", inputs=[TensorSpec(np.ones(2, np.float32), format=1)],
                      outputs=[out], dump_time=1700000000123456, attrs={"thread": '{"x": 1}'})
    dump = read_dump_header(path)
    assert (dump.version, dump.dump_time, dump.op_name) == ("2.0", 1700000000123456, "scope/conv_fused")
    assert dump.attrs == (("thread", '{"x": 1}'),)
    entry = dump.outputs[0]
    assert entry.format_code == 3 and entry.format_name == "NC1HWC0" and entry.label == "output 0"
    assert entry.original_shape == (1, 2, 3, 20) and entry.shape == (1, 2, 2, 3, 16)
    assert (entry.original_op_name, entry.original_output_index) == ("scope/conv", 1)
    assert (entry.sub_format, entry.address) == (4, 0xDEADBEEF)
    assert dump.inputs[0].format_name == "NHWC" and dump.inputs[0].original_shape is None
    assert dump.inputs[0].original_op_name is None
    assert read_tensor(dump, entry).shape == (1, 2, 2, 3, 16)  # stored layout, not converted
    assert dump.to_dict()["outputs"][0]["format"] == "NC1HWC0"
    assert dump.file_size == os.path.getsize(path) and dump.payload_offset == 8 + dump.header_length


def test_present_but_empty_original_shape_is_a_scalar_not_absent(tmp_path):
    path = write_dump(tmp_path / "d", "op", outputs=[TensorSpec(np.array(1.0, np.float32), original_shape=())])
    assert read_dump_header(path).outputs[0].original_shape == ()


def test_size_larger_than_the_tensor_is_padding_and_is_ignored(tmp_path):
    array = np.array([1, 2, 3], dtype=np.int32)
    path = write_dump(tmp_path / "d", "op", outputs=[TensorSpec(array, size=32), np.array([9], np.int8)])
    dump = read_dump_header(path)
    assert dump.outputs[0].size == 32 and dump.outputs[0].nbytes == 12
    np.testing.assert_array_equal(read_tensor(dump, dump.outputs[0]), array)
    assert read_tensor(dump, dump.outputs[1])[0] == 9  # offsets account for the padding


def test_big_endian_and_fortran_order_arrays_are_written_little_endian_c_order(tmp_path):
    big = np.arange(6, dtype=">i4").reshape(2, 3)
    fortran = np.asfortranarray(np.arange(6, dtype=np.float32).reshape(2, 3))
    path = write_dump(tmp_path / "d", "op", outputs=[big, fortran])
    dump = read_dump_header(path)
    np.testing.assert_array_equal(read_tensor(dump, dump.outputs[0]), big)
    np.testing.assert_array_equal(read_tensor(dump, dump.outputs[1]), fortran)
    assert dump.outputs[0].dtype_code == 7


def test_read_tensor_returns_a_writable_array(tmp_path):
    path = write_dump(tmp_path / "d", "op", outputs=[np.zeros(4, np.float32)])
    dump = read_dump_header(path)
    array = read_tensor(dump, dump.outputs[0])
    array[0] = 1.0
    assert array[0] == 1.0


def test_trailing_bytes_after_the_payloads_are_tolerated(tmp_path):
    content = build_dump_bytes("op", outputs=[np.ones(2, np.float16)]) + b"junk"
    path = tmp_path / "d"
    path.write_bytes(content)
    dump = read_dump_header(path)
    assert dump.trailing_bytes == 4
    np.testing.assert_array_equal(read_tensor(dump, dump.outputs[0]), np.ones(2, np.float16))


def test_reader_does_not_depend_on_the_writer(tmp_path):
    header = DumpData(version="2.0", op_name="hand")
    out = header.output.add(data_type=2, format=2, size=4)
    out.shape.dim.extend([2])
    inp = header.input.add(data_type=3, format=2, size=3)
    inp.shape.dim.extend([3])
    payload = bytes([1, 2, 255]) + np.array([0.5, -1.0], np.float16).tobytes()
    dump = read_dump_header(write_raw(tmp_path / "d", header.SerializeToString(), payload))
    np.testing.assert_array_equal(read_tensor(dump, dump.inputs[0]), np.array([1, 2, -1], np.int8))
    np.testing.assert_array_equal(read_tensor(dump, dump.outputs[0]), np.array([0.5, -1.0], np.float16))


# ------------------------------------------------------------------------------------------------ writer

def test_write_is_atomic_and_leaves_no_temporary_file(tmp_path):
    target = tmp_path / "d"
    write_dump(target, "first", outputs=[np.ones(2, np.float32)])
    write_dump(target, "second", outputs=[np.ones(3, np.float32)])
    assert os.listdir(tmp_path) == ["d"]
    assert read_dump_header(target).op_name == "second"


def test_a_failing_write_leaves_the_old_file_and_no_temporary(tmp_path):
    target = tmp_path / "d"
    write_dump(target, "kept", outputs=[np.ones(2, np.float32)])
    with pytest.raises(ValueError, match="original_op is only written for outputs"):
        write_dump(target, "bad", inputs=[TensorSpec(np.ones(2), original_op=("x", 0))])
    assert os.listdir(tmp_path) == ["d"] and read_dump_header(target).op_name == "kept"


def test_dtype_code_override_must_match_the_item_size(tmp_path):
    with pytest.raises(ValueError, match=r"dtype_code 27 \(DT_BF16\) has item size 2, the array's dtype float32 has 4"):
        build_dump_bytes("op", outputs=[TensorSpec(np.ones(2, np.float32), dtype_code=27)])


def test_unknown_format_name_is_rejected():
    with pytest.raises(ValueError, match="unknown format name 'NOPE'"):
        build_dump_bytes("op", outputs=[TensorSpec(np.ones(2, np.float32), format="NOPE")])


def test_format_accepts_the_enum_style_name(tmp_path):
    path = write_dump(tmp_path / "d", "op", outputs=[TensorSpec(np.ones((1, 1, 1, 1, 16), np.float16),
                                                                format="FORMAT_NC1HWC0")])
    assert read_dump_header(path).outputs[0].format_code == 3


# ------------------------------------------------------------------------------------------------ errors

def test_missing_file(tmp_path):
    path = str(tmp_path / "absent")
    with pytest.raises(DumpFormatError, match=r"absent: does not exist \(or is a dangling symlink\)$"):
        read_dump_header(path)


def test_folders_and_fifos_are_not_dump_files(tmp_path):
    (tmp_path / "folder").mkdir()
    with pytest.raises(DumpFormatError, match=r"folder: is a folder, not a regular file$"):
        read_dump_header(tmp_path / "folder")
    os.mkfifo(tmp_path / "fifo")
    with pytest.raises(DumpFormatError, match=r"fifo: is a FIFO \(named pipe\), not a regular file$"):
        read_dump_header(tmp_path / "fifo")


@pytest.mark.parametrize("size", [0, 5, 8])
def test_file_of_8_bytes_or_less(tmp_path, size):
    path = tmp_path / "d"
    path.write_bytes(b"\0" * size)
    with pytest.raises(DumpFormatError) as caught:
        read_dump_header(path)
    assert str(caught.value) == (f"{path}: file is {size} bytes; a dump file holds an 8-byte header length, "
                                 "a header and payloads")


def test_nano_dump_is_named_not_misparsed(tmp_path):
    path = write_raw(tmp_path / "d", struct.pack("<II", 0x5A5A5A5A, 1) + b"\0" * 16)
    with pytest.raises(NanoDumpError) as caught:
        read_dump_header(path)
    assert str(caught.value) == (f"{path}: nano (TLV) dump format, not supported: magic 0x5A5A5A5A at byte 8 "
                                 "(dump without nano mode, or convert it with msaccucmp)")


def test_lying_header_length_is_checked_before_reading(tmp_path):
    path = write_raw(tmp_path / "d", b"\x0a\x00", length=2**63)
    with pytest.raises(DumpFormatError, match=r"header length 9223372036854775808 exceeds the 2 bytes after "
                                              r"the length field \(truncated file, or not an Ascend op dump\)$"):
        read_dump_header(path)


def test_header_that_is_not_protobuf(tmp_path):
    path = write_raw(tmp_path / "d", b"\xff\xff\xff")
    with pytest.raises(DumpFormatError, match=r"d: header \(3 bytes\) is not a DumpData protobuf: .* \(not an "
                                              r"Ascend op dump, or a corrupted one\)$"):
        read_dump_header(path)


def test_sizes_that_do_not_fit_the_file(tmp_path):
    content = build_dump_bytes("op", [np.ones(4, np.float32)], [np.ones(4, np.float32)], buffers=[b"x" * 10])
    path = tmp_path / "d"
    path.write_bytes(content[:-5])
    with pytest.raises(DumpFormatError) as caught:
        read_dump_header(path)
    assert str(caught.value) == (f"{path}: payload sizes total 42 bytes (1 inputs, 1 outputs, 1 buffers, 0 spaces) "
                                 "but only 37 bytes follow the header (truncated file, or a header that lies about "
                                 "sizes)")


def test_shape_that_needs_more_than_its_size(tmp_path):
    spec = TensorSpec(np.ones(4, np.float16), shape=(2, 3))
    path = write_dump(tmp_path / "d", "op", outputs=[spec])
    with pytest.raises(DumpFormatError) as caught:
        read_dump_header(path)
    assert str(caught.value) == f"{path}: output 0: shape [2, 3] float16 needs 12 bytes but size is 8"


def test_input_named_in_the_error_and_bf16_called_bfloat16(tmp_path):
    spec = TensorSpec(np.ones(2, np.uint16), dtype_code=dtypes.DT_BF16, shape=(3,))
    path = write_dump(tmp_path / "d", "op", inputs=[np.ones(1, np.int8), spec])
    with pytest.raises(DumpFormatError, match=r"input 1: shape \[3\] bfloat16 needs 6 bytes but size is 4$"):
        read_dump_header(path)


def test_astronomical_dims_give_an_error_without_allocation(tmp_path):
    spec = TensorSpec(np.ones(2, np.float32), shape=(2**63, 2**63, 2**63))
    path = write_dump(tmp_path / "d", "op", outputs=[spec])
    with pytest.raises(DumpFormatError, match=r"output 0: shape \[9223372036854775808, 9223372036854775808, "
                                              r"9223372036854775808\] float32 needs more than 2\*\*64 bytes but "
                                              r"size is 8 \(a header that lies about shapes\)$"):
        read_dump_header(path)


def test_many_dims_are_elided_in_messages(tmp_path):
    spec = TensorSpec(np.ones(1, np.int8), shape=(1,) * 19 + (2,))  # 20 dims: numpy 1.x holds 32, 2.x 64
    path = write_dump(tmp_path / "d", "op", outputs=[spec])
    with pytest.raises(DumpFormatError, match=r"output 0: shape \[1, 1, 1, 1, 1, 1, 1, 1, 1, 1, \.\.\., 2\] "
                                              r"\(20 dims\) int8 needs 2 bytes but size is 1$"):
        read_dump_header(path)


def test_unsupported_dtype_reads_header_but_not_tensor(tmp_path):
    spec = TensorSpec(np.frombuffer(b"abcd", np.uint8), dtype_code=13)  # DT_STRING
    path = write_dump(tmp_path / "d", "op", outputs=[spec])
    dump = read_dump_header(path)
    assert dump.outputs[0].dtype_name == "DT_STRING" and dump.outputs[0].nbytes is None
    assert read_blob(dump, dump.outputs[0]) == b"abcd"
    with pytest.raises(DumpFormatError) as caught:
        read_tensor(dump, dump.outputs[0])
    assert str(caught.value) == f"{path}: output 0: data type DT_STRING is not supported (numpy cannot hold it)"


def test_file_that_changed_after_the_header_was_read(tmp_path):
    path = write_dump(tmp_path / "d", "op", outputs=[np.ones(64, np.float32)])
    dump = read_dump_header(path)
    with open(path, "r+b") as handle:
        handle.truncate(dump.file_size - 100)
    with pytest.raises(DumpFormatError) as caught:
        read_tensor(dump, dump.outputs[0])
    assert str(caught.value) == (f"{path}: changed on disk since its header was read ({dump.file_size} -> "
                                 f"{dump.file_size - 100} bytes) (read the header again)")


def test_errors_are_precision_tool_errors_and_one_line(tmp_path):
    path = write_raw(tmp_path / "d", b"\n\n\xff")
    with pytest.raises(PrecisionToolError) as caught:
        read_dump_header(path)
    assert "\n" not in str(caught.value) and str(caught.value).startswith(str(path))
    assert caught.value.path == str(path)


def test_tensor_lookup_by_kind_and_index(tmp_path):
    path = write_dump(tmp_path / "d", "op", inputs=[np.ones(1, np.int8)])
    dump = read_dump_header(path)
    assert dump.inputs[0].kind is INPUT and dump.inputs[0].label == "input 0"
    assert dump.tensor(INPUT, 0) is dump.tensor("input", 0) is dump.inputs[0]  # the text spelling works too
    with pytest.raises(DumpFormatError, match=r"d: has no output 0 \(0 outputs\)$"):
        dump.tensor(OUTPUT, 0)
    with pytest.raises(ValueError, match="kind must be 'input' or 'output', not 'reference'"):
        dump.tensor("reference", 0)


# --------------------------------------------------------------------------------------------- helpers

def test_element_count_edges():
    assert element_count(()) == 1
    assert element_count((3, 0, 2**20)) == 0
    assert element_count((3, 0, 2**64)) is None  # numpy itself refuses the shape, empty or not:
    with pytest.raises(ValueError, match="array is too big"):
        np.empty((3, 0, 2**61), np.float16)
    assert element_count((1,) * 1_000_000) == 1
    assert element_count((2**40, 2**40)) == 2**80
    assert element_count((2**63,) * 3) is None


def test_format_shape_elides_long_shapes():
    assert format_shape((1, 2)) == "[1, 2]"
    assert format_shape(()) == "[]"
    assert format_shape(tuple(range(20))) == "[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, ..., 19] (20 dims)"


def in_a_map(array) -> bool:
    """Whether ``array``'s memory is a memory map's (a view into one), not a copy."""
    while array is not None and not isinstance(array, mmap.mmap):
        array = array.obj if isinstance(array, memoryview) else getattr(array, "base", None)
    return array is not None


@pytest.mark.parametrize("index", [
    (slice(0, 1), slice(None), slice(2, 5), slice(None), slice(None)),   # an NHWC slab: C1 runs
    (slice(1, 2), slice(1, 3), slice(None), slice(None), slice(None)),   # an NCHW slab: one run
    (slice(None),) * 5,                                                  # the whole tensor
    (slice(0, 2), slice(0, 3), slice(0, 6), slice(1, 2), slice(None)),  # a partial axis deep inside
    (slice(0, 2), slice(1, 1), slice(None), slice(None), slice(None))])  # empty
def test_read_stored_block_reads_what_indexing_the_whole_tensor_gives(tmp_path, index, reads):
    """Read run by run, or (in a process that maps) a strided view of a map starting at the block's first byte."""
    stored = np.arange(2 * 3 * 6 * 4 * 16, dtype=np.float16).reshape(2, 3, 6, 4, 16)
    path = str(tmp_path / "Conv2D.op.1.1.1")
    write_dump(path, "op", inputs=[TensorSpec(np.ones(7, np.float32))],
               outputs=[TensorSpec(stored, "NC1HWC0", original_shape=[2, 6, 4, 40])])
    dump = read_dump_header(path)
    block = read_stored_block(dump, dump.tensor(OUTPUT, 0), index)
    assert block.dtype == np.float16 and np.array_equal(block, stored[index])
    assert in_a_map(block) == (reads == "mapped" and block.size > 0)  # mapped: a view, not a copy


@pytest.mark.parametrize("size", [777, 1000, 4096, 10 ** 6])
def test_read_tensor_chunks_give_the_payload_in_order(tmp_path, size, reads):
    """Chunks of ``size`` elements, the last shorter, that put together are the tensor: read into one buffer, or
    (in a process that maps) each a map of its own, a view."""
    from precision_tool.formats.dump_file import read_tensor_chunks

    stored = np.random.default_rng(1).standard_normal(3 * 1000 + 7).astype(np.float32)
    path = str(tmp_path / "Add.op.1.1.1")
    write_dump(path, "op", inputs=[TensorSpec(np.ones(5, np.float16))], outputs=[TensorSpec(stored, "ND")])
    dump = read_dump_header(path)
    chunks = []
    for chunk in read_tensor_chunks(dump, dump.tensor(OUTPUT, 0), size):  # each valid until the next is read
        assert chunk.dtype == np.float32 and in_a_map(chunk) == (reads == "mapped")
        chunks.append(chunk.copy())
    assert [len(chunk) for chunk in chunks] == [min(size, stored.size - start) for start in range(0, stored.size, size)]
    assert np.array_equal(np.concatenate(chunks), stored)


def test_read_tensor_chunks_say_a_file_rewritten_while_streamed(tmp_path, reads):
    """Found in review: opened once for all chunks, the stream met a rewrite of the file (same size, new values) no
    more -- it gave a mix of both versions. Each chunk, once used, is checked against the header's size and
    modification time."""
    from precision_tool.formats.dump_file import read_tensor_chunks

    stored = np.zeros(3000, np.float32)
    path = str(tmp_path / "Add.op.1.1.1")
    write_dump(path, "op", outputs=[TensorSpec(stored, "ND")])
    dump = read_dump_header(path)
    entry = dump.tensor(OUTPUT, 0)
    chunks = read_tensor_chunks(dump, entry, 1000)
    assert float(next(chunks).sum()) == 0.0
    with open(path, "r+b") as handle:  # another process writes new values over the payload, later
        handle.seek(entry.offset)
        handle.write(np.ones(3000, np.float32).tobytes())
    later = os.stat(path).st_mtime_ns + 10 ** 9
    os.utime(path, ns=(later, later))
    with pytest.raises(DumpFormatError, match="Add.op.1.1.1: changed on disk since its header was read"):
        next(chunks)


def test_read_stored_block_says_a_file_cut_short_after_its_header_was_read(tmp_path):
    stored = np.zeros((1, 2, 8, 8, 16), np.float16)
    path = str(tmp_path / "Conv2D.op.1.1.1")
    write_dump(path, "op", outputs=[TensorSpec(stored, "NC1HWC0", original_shape=[1, 8, 8, 32])])
    dump = read_dump_header(path)
    with open(path, "r+b") as handle:
        handle.truncate(os.path.getsize(path) - 100)
    with pytest.raises(DumpFormatError, match="Conv2D.op.1.1.1.*changed on disk"):
        read_stored_block(dump, dump.tensor(OUTPUT, 0), (slice(None),) * 5)
