"""Damaged and hostile dump files: only PrecisionToolError comes out, and memory stays bounded.

Every case reads the header and then every payload, under tracemalloc, and checks the peak stays
below ``64 * file size + 1 MiB`` -- a lying size or shape must never turn into a big allocation.
"""
from __future__ import annotations

import os
import struct
import tracemalloc

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from precision_tool.errors import OverflowRecordError, PrecisionToolError
from precision_tool.formats import dtypes
from precision_tool.formats.dump_file import read_blob, read_dump_header, read_tensor
from precision_tool.formats.dump_names import build_dump_name, parse_dump_name
from precision_tool.formats.dump_schema import DumpData
from precision_tool.formats.dump_writer import TensorSpec, build_dump_bytes
from precision_tool.formats.opdebug import MAGIC, decode_status

FUZZ = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
UINT64 = st.integers(0, 2**64 - 1)


def known_good_bytes() -> bytes:
    bf16 = dtypes.float32_to_bf16_bits(np.linspace(-2, 2, 6, dtype=np.float32))
    nc1hwc0 = np.arange(2 * 16, dtype=np.float32).reshape(1, 1, 1, 2, 16)
    return build_dump_bytes(
        "fuzz/op",
        inputs=[np.arange(6, dtype=np.float16).reshape(2, 3), TensorSpec(bf16, dtype_code=dtypes.DT_BF16)],
        outputs=[np.arange(4, dtype=np.int32),
                 TensorSpec(nc1hwc0, format="NC1HWC0", original_shape=(1, 1, 2, 3), original_op=("fuzz/op", 0)),
                 np.array(True)],
        dump_time=1700000000000000, buffers=[b"b" * 5], spaces=[b"s" * 3], attrs={"k": "v"})


KNOWN = known_good_bytes()


@pytest.fixture(scope="module")
def fuzz_file(tmp_path_factory):
    return str(tmp_path_factory.mktemp("fuzz") / "Op.fuzz_op.1.2.1700000000000000")


def read_everything(path: str) -> None:
    """Header, then every tensor and blob -- what a command would do with the file."""
    dump = read_dump_header(path)
    for entry in dump.tensors:
        try:
            array = read_tensor(dump, entry)
        except PrecisionToolError as error:
            assert "is not supported" in str(error), error  # the only per-tensor error a valid header leaves
            continue
        stored = entry.storage_dtype.itemsize * array.size
        assert stored <= entry.size
    for blob in dump.buffers + dump.spaces:
        assert len(read_blob(dump, blob)) == blob.size


def assert_only_user_errors(path: str, content: bytes) -> None:
    with open(path, "wb") as handle:
        handle.write(content)
    tracemalloc.start()  # traces only what the read allocates
    try:
        read_everything(path)
    except PrecisionToolError as error:
        message = str(error)
        assert message.startswith(path) and "\n" not in message
    finally:
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    assert peak < 64 * len(content) + 2**20, f"peak {peak} bytes for a {len(content)}-byte file"


def test_the_known_good_file_reads(fuzz_file):
    with open(fuzz_file, "wb") as handle:
        handle.write(KNOWN)
    read_everything(fuzz_file)
    assert len(read_dump_header(fuzz_file).tensors) == 5


def test_every_truncation_is_a_clear_error(fuzz_file):
    for length in range(len(KNOWN)):
        with open(fuzz_file, "wb") as handle:
            handle.write(KNOWN[:length])
        with pytest.raises(PrecisionToolError) as caught:
            read_dump_header(fuzz_file)
        assert str(caught.value).startswith(fuzz_file), length


@FUZZ
@given(positions=st.lists(st.integers(0, len(KNOWN) * 8 - 1), min_size=1, max_size=8))
def test_random_bit_flips(fuzz_file, positions):
    damaged = bytearray(KNOWN)
    for bit in positions:
        damaged[bit // 8] ^= 1 << (bit % 8)
    assert_only_user_errors(fuzz_file, bytes(damaged))


@FUZZ
@given(length=UINT64)
def test_lying_header_length(fuzz_file, length):
    content = struct.pack("<Q", length) + KNOWN[8:]
    assert_only_user_errors(fuzz_file, content)
    if length > len(content) - 8:
        with pytest.raises(PrecisionToolError, match="exceeds the"):
            read_dump_header(fuzz_file)


tensor_headers = st.fixed_dictionaries({
    "data_type": st.one_of(st.sampled_from(sorted(dtypes.DTYPE_NAMES)), st.integers(0, 2**31 - 1)),
    "format": st.integers(0, 255),
    "dims": st.lists(st.one_of(st.integers(0, 64), UINT64), max_size=6),
    "size": st.one_of(st.integers(0, 512), UINT64),
})


@FUZZ
@given(inputs=st.lists(tensor_headers, max_size=3), outputs=st.lists(tensor_headers, max_size=3),
       blob_sizes=st.lists(st.one_of(st.integers(0, 64), UINT64), max_size=2),
       payload=st.binary(max_size=600))
def test_lying_sizes_dtypes_and_shapes(fuzz_file, inputs, outputs, blob_sizes, payload):
    header = DumpData(version="2.0", op_name="liar")
    for group, specs in ((header.input, inputs), (header.output, outputs)):
        for spec in specs:
            entry = group.add(data_type=spec["data_type"], format=spec["format"], size=spec["size"])
            entry.shape.dim.extend(spec["dims"])
    for size in blob_sizes:
        header.buffer.add(size=size)
    wire = header.SerializeToString()
    assert_only_user_errors(fuzz_file, struct.pack("<Q", len(wire)) + wire + payload)


@FUZZ
@given(content=st.binary(max_size=700))
def test_random_bytes(fuzz_file, content):
    assert_only_user_errors(fuzz_file, content)


@FUZZ
@given(header=st.binary(max_size=300), payload=st.binary(max_size=300))
def test_random_header_with_a_true_length(fuzz_file, header, payload):
    assert_only_user_errors(fuzz_file, struct.pack("<Q", len(header)) + header + payload)


@FUZZ
@given(data=st.one_of(st.binary(max_size=200),
                      st.binary(min_size=2048, max_size=2048),
                      st.builds(lambda rest: struct.pack("<I", MAGIC) + rest, st.binary(max_size=200)),
                      st.builds(lambda words, rest: struct.pack("<I", MAGIC) + struct.pack("<5I", *words) + rest,
                                st.tuples(*[st.integers(0, 5)] * 5), st.binary(max_size=160))))
def test_random_status_structs(data):
    try:
        record = decode_status(data, "rec")
    except OverflowRecordError as error:
        assert str(error).startswith("rec: ")
    else:
        assert record.layout in ("old", "new") and record.units


@FUZZ
@given(name=st.text(max_size=80))
def test_parsing_any_text_never_raises(name):
    parsed = parse_dump_name(name)
    assert parsed is None or (parsed.op_type and parsed.op_name)


@FUZZ
@given(op_type=st.text(min_size=1, max_size=20), op_name=st.text(min_size=1, max_size=300),
       task_id=st.integers(0, 2**32), stream_id=st.integers(0, 2**32), timestamp=st.integers(10**15, 10**16 - 1))
def test_built_names_parse_back(op_type, op_name, task_id, stream_id, timestamp):
    built = build_dump_name(op_type, op_name, task_id, stream_id, timestamp)
    parsed = parse_dump_name(built.full_name)
    assert (parsed.task_id, parsed.stream_id, parsed.timestamp) == (task_id, stream_id, timestamp)
    assert built.full_name.startswith(f"{parsed.op_type}.{parsed.op_name}.")
    assert (built.mapping_row is None) == (len(built.full_name.encode("utf-8")) < 255)
    assert os.sep not in built.file_name
