"""Property and fuzz tests: the TensorFlow readers fail only with PrecisionToolError, and round-trip.

Every reader below is fed random or damaged bytes. Allowed outcomes: a result, or a
:class:`PrecisionToolError` (one line, the file named). Anything else (IndexError, DecodeError,
MemoryError, ...) escapes pytest.raises-free code and fails the test.
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from precision_tool.errors import PrecisionToolError, ReferenceFormatError
from precision_tool.formats import npy_dir, tf_schema, tf_tensor, tfdbg, tfdbg_v1, tfdbg_v2, tfrecord

FUZZ = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


def consume_tfrecord(path, verify=True):
    """Read every record; return how many were read."""
    return sum(1 for _ in tfrecord.read_records(path, verify))


@FUZZ
@given(data=st.binary(max_size=400))
def test_random_bytes_as_tfrecord_file(tmp_path, data):
    path = tmp_path / "fuzz.tfrecord"
    path.write_bytes(data)
    try:
        consume_tfrecord(path)
    except PrecisionToolError as error:
        assert str(error).startswith(str(path)) and "\n" not in str(error)


def valid_tfrecord_bytes():
    return b"".join(tfrecord.encode_record(payload) for payload in [b"first", b"", bytes(range(200)), b"last"])


@FUZZ
@given(position=st.integers(min_value=0, max_value=len(valid_tfrecord_bytes()) * 8 - 1))
def test_every_single_bit_flip_in_a_tfrecord_file_is_detected(tmp_path, position):
    data = bytearray(valid_tfrecord_bytes())
    data[position // 8] ^= 1 << (position % 8)
    path = tmp_path / "flipped.tfrecord"
    path.write_bytes(bytes(data))
    with pytest.raises(ReferenceFormatError, match="CRC mismatch|claims|stray bytes"):
        consume_tfrecord(path)


@FUZZ
@given(cut=st.integers(min_value=1, max_value=len(valid_tfrecord_bytes()) - 1))
def test_every_truncation_of_a_tfrecord_file_is_detected(tmp_path, cut):
    path = tmp_path / "cut.tfrecord"
    path.write_bytes(valid_tfrecord_bytes()[:cut])
    boundaries = {12 + 4 + 5, 12 + 4 + 5 + 16, 12 + 4 + 5 + 16 + 216}  # ends of whole records
    if cut in boundaries:
        assert consume_tfrecord(path) == 1 + sorted(boundaries).index(cut)
    else:
        with pytest.raises(ReferenceFormatError):
            consume_tfrecord(path)


def read_v1(folder):
    """List and load everything; return the number of tensors."""
    count = 0
    for record in tfdbg.iter_tfdbg(folder, skip_resources=False):
        try:
            record.load()
        except ReferenceFormatError:
            pass
        count += 1
    return count


def v1_event_bytes():
    event = tf_schema.Event(wall_time=1.0)
    value = event.summary.value.add(node_name="scope/op:0:DebugIdentity", tag="scope/op")
    value.tensor.CopyFrom(tf_tensor.numpy_to_tensor_proto(np.arange(6, dtype=np.float16).reshape(2, 3)))
    return event.SerializeToString()


def fuzz_v1_file(tmp_path, content):
    path = tfdbg_v1.write_tfdbg_v1_tensor(tmp_path, "scope/op", 0, np.zeros(1, np.float32), 7)
    with open(path, "wb") as handle:
        handle.write(content)
    try:
        read_v1(tmp_path)
    except PrecisionToolError as error:
        assert "\n" not in str(error)


@FUZZ
@given(content=st.binary(max_size=300))
def test_random_bytes_as_v1_event_file(tmp_path, content):
    fuzz_v1_file(tmp_path, content)


@FUZZ
@given(edits=st.lists(st.tuples(st.integers(min_value=0, max_value=200), st.integers(min_value=0, max_value=255)),
                      min_size=1, max_size=4),
       cut=st.integers(min_value=0, max_value=200))
def test_damaged_v1_event_files(tmp_path, edits, cut):
    content = bytearray(v1_event_bytes())
    for position, byte in edits:
        content[position % len(content)] = byte
    fuzz_v1_file(tmp_path, bytes(content[: max(1, len(content) - cut)]))


# The first trace record's DebugEvent starts at byte 12 (after the TFRecord length and its CRC) with
# wall_time: tag 0x09, then 8 little-endian bytes, 1.0 = 00 .. 00 f0 3f. Bytes 19-20 are its exponent.
WALL_TIME_EXPONENT = 20


def write_two_traces(folder, first_wall_time=1.0):
    tfdbg_v2.write_tfdbg_v2_dump(folder, [("a", "Relu", 0, np.arange(4, dtype=np.float32), first_wall_time),
                                       ("b", "Cast", 1, np.ones((2, 2), np.float16), 2.0)])


@FUZZ
@given(edits=st.lists(st.tuples(st.integers(min_value=0, max_value=10_000), st.integers(min_value=0, max_value=255)),
                      min_size=1, max_size=3),
       verify=st.booleans())
# Found by hypothesis: a damaged wall_time of inf (then NaN) escaped as OverflowError (ValueError) from int().
@example(edits=[(WALL_TIME_EXPONENT, 0x7F)], verify=False)
@example(edits=[(WALL_TIME_EXPONENT - 1, 0xF8), (WALL_TIME_EXPONENT, 0x7F)], verify=True)
@example(edits=[(WALL_TIME_EXPONENT, 0x7E)], verify=True)  # finite, but * 1e6 overflows to inf
def test_damaged_v2_trace_files(tmp_path, edits, verify):
    folder = tmp_path / "v2"
    write_two_traces(folder)
    (path,) = folder.glob("*.graph_execution_traces")
    content = bytearray(path.read_bytes())
    for position, byte in edits:
        content[position % len(content)] = byte
    path.write_bytes(bytes(content))
    try:
        for record in tfdbg.iter_tfdbg(folder, verify=verify):
            try:
                record.load()
            except ReferenceFormatError:
                pass
    except PrecisionToolError as error:
        assert "\n" not in str(error)


@pytest.mark.parametrize("wall_time", [float("nan"), float("inf"), -float("inf"), -1.0, 1e10, 1e300])
def test_a_wall_time_no_clock_gives_is_a_one_line_error_naming_the_record(tmp_path, wall_time):
    write_two_traces(tmp_path, first_wall_time=wall_time)
    (path,) = tmp_path.glob("*.graph_execution_traces")
    with pytest.raises(ReferenceFormatError) as caught:
        list(tfdbg.iter_tfdbg(tmp_path))
    assert str(caught.value) == (f"{path}: record 0: wall_time {wall_time!r} is not a time in seconds since 1970 "
                                 "(corrupt record)")


@pytest.mark.parametrize("wall_time, timestamp_us", [(0.0, 0), (1700000000.25, 1700000000250000),
                                                     (9999999999.999998, 9999999999999998)])
def test_wall_times_a_clock_gives_become_microseconds(tmp_path, wall_time, timestamp_us):
    write_two_traces(tmp_path, first_wall_time=wall_time)
    assert [record.timestamp_us for record in tfdbg.iter_tfdbg(tmp_path)] == [timestamp_us, 2000000]


# ---- TensorProto decoding --------------------------------------------------------------------------
value_fields = st.fixed_dictionaries({}, optional={
    "float_val": st.lists(st.floats(width=32), max_size=5),
    "double_val": st.lists(st.floats(), max_size=5),
    "int_val": st.lists(st.integers(-2**31, 2**31 - 1), max_size=5),
    "int64_val": st.lists(st.integers(-2**63, 2**63 - 1), max_size=5),
    "half_val": st.lists(st.integers(-2**31, 2**31 - 1), max_size=5),
    "bool_val": st.lists(st.booleans(), max_size=5),
    "scomplex_val": st.lists(st.floats(width=32), max_size=5),
    "uint64_val": st.lists(st.integers(0, 2**64 - 1), max_size=5),
    "float8_val": st.binary(max_size=5),
    "string_val": st.lists(st.binary(max_size=3), max_size=2),
    "tensor_content": st.binary(max_size=64),
})


@FUZZ
@given(dtype=st.integers(min_value=-3, max_value=130), dims=st.lists(st.integers(-2, 40), max_size=4),
       unknown_rank=st.booleans(), values=value_fields)
def test_arbitrary_tensor_protos_decode_or_fail_cleanly(dtype, dims, unknown_rank, values):
    proto = tf_schema.TensorProto(dtype=dtype, **values)
    for size in dims:
        proto.tensor_shape.dim.add(size=size)
    proto.tensor_shape.unknown_rank = unknown_rank
    serialized = proto.SerializeToString()
    try:
        array = tf_tensor.tensor_proto_to_numpy(serialized, source="t.pb", max_expanded_bytes=1 << 16)
    except PrecisionToolError as error:
        assert str(error).startswith("t.pb: ")
        return
    if array is None:
        assert tf_tensor.base_dtype_code(dtype) == tf_tensor.DT_RESOURCE
    else:
        location = tf_tensor.scan_tensor_proto(serialized, 0, len(serialized))
        assert array.shape == tuple(dims) == location.shape
        assert array.dtype == tf_tensor.array_dtype(dtype)
        np.testing.assert_array_equal(tf_tensor.load_located_tensor(serialized, location), array)  # NaN == NaN


def test_one_value_for_a_huge_shape_is_refused_not_allocated():
    proto = tf_schema.TensorProto(dtype=1, float_val=[1.0])
    for size in (1 << 20, 1 << 20):
        proto.tensor_shape.dim.add(size=size)
    with pytest.raises(ReferenceFormatError, match="expanding would need 4398046511104 bytes"):
        tf_tensor.tensor_proto_to_numpy(proto)


@pytest.mark.parametrize("values, expected", [([], [0, 0, 0, 0]), ([5], [5, 5, 5, 5]), ([1, 2], [1, 2, 2, 2]),
                                              ([1, 2, 3, 4, 5], None)])
def test_typed_values_follow_tensorflow_fill_rules(values, expected):
    """tf.make_ndarray's rules (checked against TensorFlow itself in test_tf_make_ndarray.py): more values than
    elements are refused."""
    proto = tf_schema.TensorProto(dtype=3, int_val=values)
    proto.tensor_shape.dim.add(size=4)
    if expected is None:
        with pytest.raises(ReferenceFormatError, match="stores 5 values for 4 elements"):
            tf_tensor.tensor_proto_to_numpy(proto)
    else:
        assert tf_tensor.tensor_proto_to_numpy(proto).tolist() == expected


def test_half_val_holds_fp16_bits_for_half_and_bf16_bits_for_bfloat16():
    half = tf_schema.TensorProto(dtype=19, half_val=[0xC100, 0x7C00])  # -2.5, inf
    bf16 = tf_schema.TensorProto(dtype=14, half_val=[0xC020])  # -2.5, broadcast
    half.tensor_shape.dim.add(size=2)
    bf16.tensor_shape.dim.add(size=3)
    assert tf_tensor.tensor_proto_to_numpy(half).tolist() == [-2.5, np.inf]
    assert tf_tensor.tensor_proto_to_numpy(half).dtype == np.float16
    result = tf_tensor.tensor_proto_to_numpy(bf16)
    assert result.dtype == np.float32 and result.tolist() == [-2.5, -2.5, -2.5]


NUMPY_DTYPES = ["<f4", "<f8", "<f2", "i1", "<i2", "<i4", "<i8", "u1", "<u2", "<u4", "<u8", "?", "<c8", "<c16"]


@FUZZ
@given(array=hnp.arrays(st.sampled_from(NUMPY_DTYPES).map(np.dtype),
                        hnp.array_shapes(min_dims=0, max_dims=4, min_side=0, max_side=5)))
def test_numpy_arrays_round_trip_bit_exactly_through_tensor_content(array):
    proto = tf_tensor.numpy_to_tensor_proto(array)
    serialized = proto.SerializeToString()
    back = tf_tensor.tensor_proto_to_numpy(serialized)
    assert back.dtype == array.dtype and back.shape == array.shape and back.tobytes() == array.tobytes()
    location = tf_tensor.scan_tensor_proto(serialized, 0, len(serialized))
    assert (location.dtype_code, location.shape) == (proto.dtype, array.shape)


def test_small_float_tables_match_ml_dtypes_for_every_code():
    ml_dtypes = pytest.importorskip("ml_dtypes")
    formats = {24: "float8_e5m2", 25: "float8_e4m3fn", 26: "float8_e4m3fnuz", 27: "float8_e4m3b11fnuz",
               28: "float8_e5m2fnuz", 33: "float4_e2m1fn"}
    for code, name in formats.items():
        codes = np.arange(16 if name.startswith("float4") else 256, dtype=np.uint8)
        expected = codes.view(getattr(ml_dtypes, name)).astype(np.float32)
        ours = tf_tensor.decode_tensor_content(code, (codes.size,), codes.tobytes())
        assert ours.tobytes() == expected.tobytes(), name


@FUZZ
@given(data=st.binary(max_size=200))
def test_wire_walker_fails_only_with_reference_errors_and_agrees_with_protobuf(data):
    try:
        fields = list(tf_schema.iter_wire_fields(data, 0, len(data)))
    except ReferenceFormatError:
        return
    ends = [0] + [field.end for field in fields]
    assert ends[-1] == len(data) and ends == sorted(ends)


def test_wire_walker_finds_what_protobuf_wrote():
    event = tf_schema.Event(wall_time=2.5, step=-3, file_version="brain.Event:2")
    data = event.SerializeToString()
    fields = list(tf_schema.iter_wire_fields(data, 0, len(data)))
    assert [f.number for f in fields] == [1, 2, 3]
    assert tf_schema.signed64(fields[1].value) == -3
    assert tf_schema.wire_string(data, fields[2]) == "brain.Event:2"


@FUZZ
@given(tail=st.binary(max_size=120))
def test_random_npy_headers_fail_cleanly(tmp_path, tail):
    path = tmp_path / "op.0.1700000000000000.npy"
    path.write_bytes(b"\x93NUMPY\x01\x00" + tail)
    try:
        for record in npy_dir.read_npy_dir(tmp_path):
            record.load()
    except PrecisionToolError as error:
        assert str(error).startswith(str(path))
