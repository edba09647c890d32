"""Exception dumps (AI Core errors, ``ascend-dump-trees.md`` §3): their names, and their DT_UNDEFINED tensors
read as raw bytes -- checked on a file a real CANN run wrote, against facts decoded here by hand."""
from __future__ import annotations

import os
import struct
from datetime import datetime, timedelta, timezone
from pathlib import Path

import numpy as np
import pytest

from precision_tool.checks.tensor_summary import summarize_entry
from precision_tool.errors import DumpFormatError
from precision_tool.formats import dtypes
from precision_tool.formats.dump_file import read_dump_header, read_tensor
from precision_tool.formats.dump_names import (
    ExceptionDumpName, dump_name_of_file, parse_dump_name, parse_exception_dump_name, scan_dump_folder,
)
from precision_tool.formats.dump_writer import TensorSpec, write_dump
from precision_tool.formats.origin_tensor import read_origin_tensor

REAL_DIR = Path(__file__).resolve().parents[3] / "shared" / "real-world" / "dump"
REAL_NAME = "exception_info.13.3.1717489251810963"
REAL = REAL_DIR / REAL_NAME
needs_real = pytest.mark.skipif(not REAL.is_file(), reason=f"real exception dump not present ({REAL})")


# ------------------------------------------------------------------------------ an independent decoder

def _varint(data: bytes, pos: int):
    value = shift = 0
    while True:
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return value, pos


def _fields(data: bytes):
    """``(field number, wire type, value)`` of one protobuf message: ints for varints, bytes otherwise."""
    pos = 0
    while pos < len(data):
        key, pos = _varint(data, pos)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, pos = _varint(data, pos)
        elif wire == 2:
            length, pos = _varint(data, pos)
            value, pos = data[pos:pos + length], pos + length
        elif wire == 1:
            value, pos = data[pos:pos + 8], pos + 8
        elif wire == 5:
            value, pos = data[pos:pos + 4], pos + 4
        else:
            raise AssertionError(f"wire type {wire}")
        yield number, wire, value


def hand_decode(path):
    """What the file says, decoded without the project: header length, then per input (DumpData field 4) and
    output (field 3) its data type (field 1) and size (input field 5, output field 6), and each payload's bytes
    sliced in payload order (inputs first)."""
    raw = Path(path).read_bytes()
    (length,) = struct.unpack_from("<Q", raw)
    header = raw[8:8 + length]
    tensors = {"input": [], "output": []}
    for number, _, value in _fields(header):
        if number in (3, 4):
            kind = "output" if number == 3 else "input"
            size_field = 6 if kind == "output" else 5
            inner = {n: v for n, _, v in _fields(value)}
            tensors[kind].append({"dtype": inner.get(1, 0), "size": inner.get(size_field, 0),
                                  "has_shape": 3 in inner})
    offset = 8 + length
    for kind in ("input", "output"):
        for item in tensors[kind]:
            item["payload"] = raw[offset:offset + item["size"]]
            offset += item["size"]
    return {"length": length, "file_size": len(raw), "end": offset, **tensors}


# ------------------------------------------------------------------------------ the real file

@needs_real
def test_real_exception_dump_header_matches_the_hand_decoded_facts():
    facts = hand_decode(REAL)
    assert facts["end"] == facts["file_size"]  # the sizes account for every byte: the decoding is complete
    dump = read_dump_header(REAL)
    assert dump.header_length == facts["length"]
    assert [(e.dtype_code, e.size) for e in dump.inputs] == [(t["dtype"], t["size"]) for t in facts["input"]]
    assert [(e.dtype_code, e.size) for e in dump.outputs] == [(t["dtype"], t["size"]) for t in facts["output"]]
    assert dump.inputs and all(t["dtype"] == dtypes.DT_UNDEFINED for t in facts["input"] + facts["output"])
    assert all(entry.is_raw_bytes for entry in dump.tensors)
    assert dump.trailing_bytes == 0


@needs_real
def test_real_exception_dump_tensors_are_their_raw_bytes_as_int8():
    facts = hand_decode(REAL)
    dump = read_dump_header(REAL)
    for entry, fact in zip(dump.tensors, facts["input"] + facts["output"]):
        expected = np.frombuffer(fact["payload"], np.int8)
        array = read_tensor(dump, entry)
        assert array.dtype == np.int8 and array.shape == (fact["size"],)
        assert np.array_equal(array, expected)
        decoded = read_origin_tensor(dump, entry)
        assert np.array_equal(decoded.array, expected) and decoded.origin_format == "ND" and not decoded.converted
        assert decoded.note == (f"data type unknown (DT_UNDEFINED): its {fact['size']} bytes as int8, as msaccucmp "
                                "converts them")


@needs_real
def test_real_exception_dump_summary_names_the_unknown_type_and_never_raises():
    dump = read_dump_header(REAL)
    for origin_layout in (True, False):
        summary = summarize_entry(dump, dump.inputs[0], origin_layout=origin_layout)
        assert summary.readable and summary.dtype == "DT_UNDEFINED"
        assert summary.size == dump.inputs[0].size and summary.shape == (dump.inputs[0].size,)
        assert summary.layout == "ND" and summary.note.startswith("data type unknown (DT_UNDEFINED)")


@needs_real
def test_real_exception_dump_name():
    name = dump_name_of_file(REAL)
    assert isinstance(name, ExceptionDumpName)
    assert (name.stream_id, name.task_id, name.timestamp, name.lite) == (13, 3, 1717489251810963, True)
    seconds, micros = divmod(1717489251810963, 10 ** 6)
    expected = datetime.fromtimestamp(seconds, timezone.utc).replace(tzinfo=None) + timedelta(microseconds=micros)
    assert name.when == expected
    assert name.time_text == expected.strftime("%Y-%m-%d %H:%M:%S.%f") + " UTC"
    assert name.file_name == REAL_NAME


# ------------------------------------------------------------------------------ names

def test_lite_name_is_stream_then_task():
    name = parse_exception_dump_name("exception_info.42.1.1726159207469285")  # the plog's stream_id=42, task_id=1
    assert (name.stream_id, name.task_id) == (42, 1)


def test_lite_name_with_a_calendar_timestamp():
    name = parse_exception_dump_name("exception_info.2.1.20250611171538370")
    assert (name.stream_id, name.task_id, name.timestamp_digits) == (2, 1, 17)
    assert name.when == datetime(2025, 6, 11, 17, 15, 38, 370000)
    assert name.time_text == "2025-06-11 17:15:38.370"
    assert name.file_name == "exception_info.2.1.20250611171538370"


def test_a_calendar_timestamp_that_is_no_date_is_kept_as_digits():
    name = parse_exception_dump_name("exception_info.2.1.20251341171538370")  # month 13
    assert name.when is None and name.time_text == "20251341171538370"


def test_mode_1_names_have_an_op_and_no_stream():
    name = parse_exception_dump_name("Add.scope_add_1.7.1717489251810963")
    assert (name.op_type, name.op_name, name.task_id, name.stream_id, name.lite) == ("Add", "scope_add_1", 7, None,
                                                                                     False)
    ffts = parse_exception_dump_name("Add.scope_add_1.7.20250611171538370.4.3.0")
    assert (ffts.op_name, ffts.task_id, ffts.extra) == ("scope_add_1", 7, (4, 3, 0))
    assert ffts.file_name == "Add.scope_add_1.7.20250611171538370.4.3.0"


@pytest.mark.parametrize("file_name", [
    "Add.add_1.7.2.1717489251810963",  # a normal dump: that reading wins
    "Opdebug.Node_OpDebug.9.2.1717489251810963",
    "exception_info.13.3",
    "exception_info.13.3.1717489251810963.1",
    "exception_info.x.3.1717489251810963",
    "exception_info.13.3.1717489251810963.input.0.npy",  # a converted tensor
    "Add.add_1.7.1717489251",  # mode 1 needs a 16- or 17-digit timestamp
    "Add.7.1717489251810963",  # no op name
    "Add..7.1717489251810963",  # an empty op name
    "Add.op.x.7.1717489251810963",  # a normal name with a bad task id, not op "op.x"
    f"Add.op.{'9' * 5000}.1.1717489251810963",  # ... or a task id of 5,000 digits
    "Add.op.7.1717489251810963.1.2.3.4.5",  # more than four FFTS+ fields
    "mapping.csv",
])
def test_not_exception_dump_names(file_name):
    assert parse_exception_dump_name(file_name) is None


def test_exception_names_are_not_normal_dump_names():
    assert parse_dump_name("exception_info.13.3.1717489251810963") is None
    assert parse_dump_name("Add.add_1.7.1717489251810963") is None
    # without a 16-digit field the normal reading falls back to "last three numbers": not past a calendar stamp
    assert parse_dump_name("Add.add_1.7.20250611171538370.4.3.0") is None
    assert parse_dump_name("Add.add_1.7.2.345").timestamp == 345  # the fallback itself still works


def test_scan_lists_exception_dumps_apart_oldest_first(tmp_path):
    device = tmp_path / "extra-info" / "data-dump" / "0"
    device.mkdir(parents=True)
    for name in ("exception_info.2.1.20250611171538370", "exception_info.13.3.1717489251810963",
                 "Add.add_1.7.1717489251810970", "Add.add_1.7.2.1717489251810000",
                 "Opdebug.Node_OpDebug.1.2.1717489251810001", "exception_info.13.3.1717489251810963.input.0.npy"):
        (device / name).write_bytes(b"x")
    scan = scan_dump_folder(tmp_path)
    assert [os.path.basename(ref.path) for ref in scan.exception_dumps] == [
        "exception_info.13.3.1717489251810963", "Add.add_1.7.1717489251810970", "exception_info.2.1.20250611171538370"]
    assert [(op.op_type, op.op_name) for op in scan.ops] == [("Add", "add_1")]
    assert len(scan.overflow_records) == 1 and scan.unrecognised == ()


# ------------------------------------------------------------------------------ DT_UNDEFINED elsewhere

def test_undefined_tensor_ignores_the_header_shape_and_keeps_every_byte(tmp_path):
    payload = np.random.default_rng(5).integers(0, 256, 32, dtype=np.uint8)
    path = tmp_path / "exception_info.1.2.1717489251810963"
    write_dump(path, "", inputs=[TensorSpec(payload.view(np.float16).reshape(2, 8), dtype_code=0)],
               outputs=[TensorSpec(payload[:5], dtype_code=0)])
    dump = read_dump_header(path)
    first, second = dump.tensors
    assert first.shape == (2, 8) and first.array_shape == (32,) and first.nbytes == 32
    assert first.stored_text == "raw 32 bytes (header shape [2, 8])"
    assert np.array_equal(read_tensor(dump, first), payload.view(np.int8))
    assert np.array_equal(read_tensor(dump, second), payload[:5].view(np.int8))
    assert read_origin_tensor(dump, first, keep_layout=True).note.startswith("data type unknown")


def test_undefined_does_not_take_int8s_code():
    assert dtypes.dtype_code(np.int8) == 3 and dtypes.numpy_dtype(dtypes.DT_UNDEFINED) is None


def test_truncated_exception_dump_is_one_error_naming_the_file(tmp_path):
    path = tmp_path / "exception_info.1.2.1717489251810963"
    write_dump(path, "", inputs=[TensorSpec(np.zeros(32, np.uint8), dtype_code=0)])
    path.write_bytes(path.read_bytes()[:-1])
    with pytest.raises(DumpFormatError) as caught:
        read_dump_header(path)
    assert str(caught.value).startswith(f"{path}: payload sizes total 32 bytes (1 inputs, 0 outputs")
