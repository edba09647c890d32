"""Hostile and broken inputs for every reader of precision_tool.formats (issue 14): one typed error naming the file
and the cause, never a traceback, a hang or a huge allocation.

Every reproducer is a tiny file built here -- a FIFO, a symlink to ``/dev/zero``, a symlink loop, a truncated or
damaged file, a number of 5,000 digits, a ``'²'``, a header with more dimensions than numpy holds -- with
``struct``, ``np.save``, the ``DumpData`` protobuf or the project's writers. Where it says what numpy or Python
itself does with the same bytes, the test checks that too, so the reproducer is known to be real.
"""
from __future__ import annotations

import io
import json
import os
import struct
import sys
import threading
import tokenize
import tracemalloc

import numpy as np
import pytest

from precision_tool.errors import DumpFormatError, FusionFormatError, PrecisionToolError, ReferenceFormatError
from precision_tool.formats.bounds import MAX_NDIM, parse_decimal
from precision_tool.formats.capture_names import NAMES_FILE, read_capture_names
from precision_tool.formats.dump_file import read_dump_header, read_dump_header_cached
from precision_tool.formats.dump_names import parse_dump_name, read_mapping, scan_dump_folder
from precision_tool.formats.dump_schema import DumpData
from precision_tool.formats.dump_writer import write_dump
from precision_tool.formats.npy_dir import read_npy_dir, read_npy_header, write_reference_npy
from precision_tool.formats.tf_graph import natural_key, read_tf_graph
from precision_tool.formats.tfdbg_v1 import iter_tfdbg_v1, write_tfdbg_v1_tensor
from precision_tool.formats.tfrecord import TFRecordFile

needs_fifo = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
HUGE = "9" * 5000  # over Python 3.11's 4,300-digit int() limit
TS = 1700000000000000


def finishes(function, seconds: float = 20.0):
    """``function()``'s result or exception, failing the test if it runs longer than ``seconds`` (a hang)."""
    outcome = {}

    def run():
        try:
            outcome["value"] = function()
        except BaseException as error:  # noqa: BLE001 -- handed back to the test, which re-raises it
            outcome["error"] = error

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(seconds)
    assert not worker.is_alive(), f"still running after {seconds} s: it hangs"
    if "error" in outcome:
        raise outcome["error"]
    return outcome.get("value")


# ------------------------------------------------------------------------------------------- not a regular file
def make_fifo(path):
    os.mkfifo(path)


def make_dev_zero(path):
    os.symlink("/dev/zero", path)


def make_folder(path):
    os.mkdir(path)


def make_dangling(path):
    os.symlink(os.path.join(os.path.dirname(path), "nowhere"), path)


def make_loop(path):
    os.symlink(os.path.basename(path), path)  # points at itself


NOT_REGULAR = [
    (make_fifo, "is a FIFO (named pipe), not a regular file"),
    (make_dev_zero, "is a character device, not a regular file"),
    (make_folder, "is a folder, not a regular file"),
    (make_dangling, "does not exist (or is a dangling symlink)"),
    (make_loop, "cannot open: a symlink loop"),
]

READERS = [
    ("Add.op.1.1.1700000000000001", read_dump_header, DumpFormatError),
    ("op.0.1700000000000000.npy", read_npy_header, ReferenceFormatError),
    ("tfdbg_events.1.host.graph_execution_traces", lambda path: TFRecordFile(path).close(), ReferenceFormatError),
    ("graph.pb", read_tf_graph, ReferenceFormatError),
]


@needs_fifo
@pytest.mark.parametrize("make, cause", NOT_REGULAR, ids=lambda value: getattr(value, "__name__", ""))
@pytest.mark.parametrize("name, reader, error", READERS, ids=lambda value: getattr(value, "__name__", ""))
def test_anything_but_a_regular_file_is_one_line_naming_it(tmp_path, make, cause, name, reader, error):
    path = str(tmp_path / name)
    make(path)
    with pytest.raises(error) as caught:
        finishes(lambda: reader(path))
    assert str(caught.value) == f"{path}: {cause}"


@needs_fifo
def test_a_fifo_fusion_result_is_named_and_a_missing_one_is_a_workspace_error(tmp_path):
    from precision_tool.errors import WorkspaceError
    from precision_tool.formats.fusion_result import read_fusion_result

    fifo = str(tmp_path / "fusion_result.json")
    os.mkfifo(fifo)
    with pytest.raises(FusionFormatError) as caught:
        finishes(lambda: read_fusion_result(fifo))
    assert str(caught.value) == f"{fifo}: is a FIFO (named pipe), not a regular file"
    with pytest.raises(WorkspaceError, match="absent.json: no such file$"):
        read_fusion_result(tmp_path / "absent.json")


@needs_fifo
def test_a_fifo_named_like_a_dump_is_found_then_refused_not_silently_missing(tmp_path):
    fifo = tmp_path / "Add.op.1.1.1700000000000001"
    os.mkfifo(fifo)
    scan = scan_dump_folder(tmp_path)
    assert [op.latest.path for op in scan.ops] == [str(fifo)]
    with pytest.raises(DumpFormatError, match=r"not a regular file$"):
        finishes(lambda: read_dump_header(fifo))


@needs_fifo
def test_a_fifo_mapping_csv_is_named_and_a_feed_keys_file_counts_as_absent_without_hanging(tmp_path):
    os.mkfifo(tmp_path / "mapping.csv")
    with pytest.raises(DumpFormatError, match=r"mapping\.csv: is a FIFO"):
        finishes(lambda: read_mapping(tmp_path))
    (tmp_path / "16874986667008813088").write_bytes(b"x" * 16)  # a hashed dump it would have named
    scan = finishes(lambda: scan_dump_folder(tmp_path))
    assert [path for path, _ in scan.unresolved] == [str(tmp_path / "16874986667008813088")]
    assert "mapping.csv that could resolve a hashed name cannot be read (is a FIFO" in scan.unresolved[0][1]
    run = tmp_path / "run_1_0"
    write_tfdbg_v1_tensor(run, "x", 0, np.arange(3, dtype=np.float32), TS)
    os.mkfifo(run / "_tfdbg_feed_keys_info_")
    records = finishes(lambda: list(iter_tfdbg_v1(run)))
    assert [(r.op_name, r.output_slot) for r in records] == [("x", 0)]


# ------------------------------------------------------------------------------------------- dimensions
def dump_bytes_with_dims(ndim: int, original_ndim=None) -> bytes:
    """A dump whose one output (float32, 4 bytes) declares ``ndim`` dims of 1, built from the protobuf."""
    message = DumpData(version="2.0", op_name="deep")
    entry = message.output.add(data_type=1, format=2, size=4)  # DT_FLOAT, ND
    entry.shape.dim.extend([1] * ndim)
    if original_ndim is not None:
        entry.original_shape.dim.extend([1] * original_ndim)
    header = message.SerializeToString()
    return struct.pack("<Q", len(header)) + header + struct.pack("<f", 1.5)


def test_numpy_itself_refuses_one_dimension_more_than_max_ndim():
    np.empty((1,) * MAX_NDIM)
    with pytest.raises(ValueError):
        np.empty((1,) * (MAX_NDIM + 1))
    assert MAX_NDIM == (32 if np.__version__.startswith("1.") else 64)


def test_a_dump_header_with_too_many_dims_is_refused_before_any_array(tmp_path):
    path = tmp_path / "Add.deep.1.1.1700000000000001"
    path.write_bytes(dump_bytes_with_dims(MAX_NDIM + 1))
    with pytest.raises(DumpFormatError) as caught:
        read_dump_header(path)
    assert str(caught.value) == (f"{path}: output 0: shape has {MAX_NDIM + 1} dimensions; numpy holds at most "
                                 f"{MAX_NDIM} (a corrupted header)")
    path.write_bytes(dump_bytes_with_dims(2, original_ndim=MAX_NDIM + 1))
    with pytest.raises(DumpFormatError, match=f"output 0: original shape has {MAX_NDIM + 1} dimensions"):
        read_dump_header(path)
    path.write_bytes(dump_bytes_with_dims(MAX_NDIM))  # the most numpy holds is still read
    assert read_dump_header(path).outputs[0].shape == (1,) * MAX_NDIM


def npy_bytes(header_text: str, version=(1, 0), data: bytes = b"") -> bytes:
    """A .npy file built by hand from the format's spec: magic, version, header length, header, data."""
    length_format = "<H" if version[0] == 1 else "<I"
    preamble = 6 + 2 + struct.calcsize(length_format)
    padded = header_text + " " * ((64 - (preamble + len(header_text) + 1) % 64) % 64) + "\n"
    return (b"\x93NUMPY" + bytes(version) + struct.pack(length_format, len(padded)) + padded.encode("latin1")
            + data)


def test_an_npy_header_with_too_many_dims_is_refused_where_numpy_raises_a_bare_value_error(tmp_path):
    shape = "(" + "1, " * (MAX_NDIM + 1) + ")"
    path = tmp_path / "deep.0.1700000000000000.npy"
    path.write_bytes(npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': %s, }" % shape, data=b"\0" * 4))
    with pytest.raises(ValueError):
        np.load(path, allow_pickle=False)
    with pytest.raises(ReferenceFormatError) as caught:
        read_npy_header(path)
    assert str(caught.value) == (f"{path}: .npy header shape has {MAX_NDIM + 1} dimensions; numpy holds at most "
                                 f"{MAX_NDIM}")


def test_a_damaged_npy_header_is_a_reference_error_not_numpys_tokenizer_error(tmp_path):
    path = tmp_path / "tok.0.1700000000000000.npy"
    path.write_bytes(npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (3,), '''}", data=b"\0" * 12))
    with pytest.raises(tokenize.TokenError):
        np.load(path, allow_pickle=False)  # what numpy itself does with these bytes
    with pytest.raises(ReferenceFormatError) as caught:
        read_npy_header(path)
    assert str(caught.value) == f"{path}: damaged .npy header (EOF in multi-line string)"


def test_an_npy_v2_header_declaring_4_gib_is_refused_before_numpy_reads_it(tmp_path):
    path = tmp_path / "big.0.1700000000000000.npy"
    path.write_bytes(b"\x93NUMPY\x02\x00" + struct.pack("<I", 2**32 - 1) + b"{'descr'")
    tracemalloc.start()
    try:
        with pytest.raises(ReferenceFormatError) as caught:
            read_npy_header(path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert str(caught.value) == (f"{path}: truncated: the .npy header declares 4,294,967,295 bytes, the file "
                                 "holds 8 after the header length")
    assert peak < 1 << 20


def test_an_npy_header_longer_than_any_real_one_is_refused(tmp_path):
    path = tmp_path / "long.0.1700000000000000.npy"
    path.write_bytes(npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (0,), }" + " " * 70000,
                               version=(2, 0)))
    with pytest.raises(ReferenceFormatError, match=r"long\.0\.1700000000000000\.npy: \.npy header of 70,"):
        read_npy_header(path)


def test_a_tfdbg_tensor_with_too_many_dims_is_refused(tmp_path):
    from precision_tool.formats import tf_schema
    from precision_tool.formats.tf_tensor import tensor_proto_to_numpy

    proto = tf_schema.TensorProto(dtype=1, tensor_content=b"\0\0\0\0")
    for _ in range(MAX_NDIM + 1):
        proto.tensor_shape.dim.add(size=1)
    with pytest.raises(ReferenceFormatError) as caught:
        tensor_proto_to_numpy(proto.SerializeToString(), "t.pb")
    assert str(caught.value) == (f"t.pb: TensorProto shape has {MAX_NDIM + 1} dimensions; numpy holds at most "
                                 f"{MAX_NDIM}")


# ------------------------------------------------------------------------------------------- dump header length 0
def test_a_dump_with_header_length_0_is_unreadable_not_an_empty_dump(tmp_path):
    path = tmp_path / "Add.zero.1.1.1700000000000001"
    path.write_bytes(struct.pack("<Q", 0) + b"\0" * 8)
    assert DumpData.FromString(b"").op_name == ""  # protobuf alone would take it as an empty header
    with pytest.raises(DumpFormatError) as caught:
        read_dump_header(path)
    assert str(caught.value) == (f"{path}: header length is 0: the file holds no DumpData header (not an Ascend "
                                 "op dump, or a corrupted one)")


# ------------------------------------------------------------------------------------------- integers
def test_python_int_refuses_what_the_readers_must_survive():
    with pytest.raises(ValueError):
        int("²")
    assert "²".isdigit()
    if sys.version_info >= (3, 11) and hasattr(sys, "get_int_max_str_digits"):
        with pytest.raises(ValueError):
            int(HUGE)


@pytest.mark.parametrize("text, expected", [("0", 0), ("0042", 42), ("9" * 20, 10**20 - 1), ("9" * 21, None),
                                            ("²", None), ("\u0663", None), ("-1", None), ("", None), (" 1", None),
                                            (HUGE, None)])
def test_parse_decimal_takes_only_ascii_digits_of_a_uint64(text, expected):
    assert parse_decimal(text) == expected


@pytest.mark.parametrize("name", [
    f"Add.op.{HUGE}.1.1700000000000001",
    "Add.op.².1.1700000000000001",
    "Add.op.1.1.1700000000000001.²",
    "Add.op.1.1.170000000000000²",
])
def test_dump_names_with_unicode_or_huge_digits_simply_do_not_parse(name):
    assert parse_dump_name(name) is None


def test_a_mapping_csv_row_naming_a_huge_task_id_leaves_the_file_unrecognised(tmp_path):
    (tmp_path / "123").write_bytes(b"x" * 16)
    (tmp_path / "mapping.csv").write_text(f"123,Add.op.{HUGE}.1.1700000000000001\n", encoding="utf-8")
    scan = scan_dump_folder(tmp_path)
    assert scan.ops == () and scan.unrecognised == (str(tmp_path / "123"),)


def fusion_text(count, key="session_and_graph_id_0_1"):
    return '{"%s": {"graph_fusion": {"APass": {"match_times": %s, "effect_times": "1"}}}}' % (key, count)


@pytest.mark.parametrize("count, cause", [
    (f'"{HUGE}"', "session_and_graph_id_0_1.graph_fusion.APass.match_times: expected a count, got '99999"),
    ('"²"', "session_and_graph_id_0_1.graph_fusion.APass.match_times: expected a count, got '²'"),
    (HUGE, "not a fusion result: a number of 5,000 digits (more than 30)"),
])
def test_fusion_result_counts_of_huge_or_unicode_digits_are_one_line(tmp_path, count, cause):
    from precision_tool.formats.fusion_result import read_fusion_result

    path = tmp_path / "fusion_result.json"
    path.write_text(fusion_text(count), encoding="utf-8")
    with pytest.raises(FusionFormatError) as caught:
        read_fusion_result(path)
    assert str(caught.value).startswith(f"{path}: byte 0: {cause}") and len(str(caught.value)) < 400


@pytest.mark.parametrize("key", [f"session_and_graph_id_0_{HUGE}", f"session_and_graph_id_{HUGE}_1", "graph_id_²"])
def test_fusion_result_keys_with_huge_or_unicode_ids_are_one_line(tmp_path, key):
    from precision_tool.formats.fusion_result import read_fusion_result

    path = tmp_path / "fusion_result.json"
    path.write_text(fusion_text('"3"', key), encoding="utf-8")
    with pytest.raises(FusionFormatError) as caught:
        read_fusion_result(path)
    shown = repr(key) if len(repr(key)) <= 120 else repr(key)[:116] + "...'"
    assert str(caught.value) == f"{path}: byte 0: key {shown}: its ids are not 1 to 20 ASCII digits"


def test_a_key_of_another_form_is_kept_without_ids(tmp_path):
    from precision_tool.formats.fusion_result import parse_fusion_result

    (graph,) = parse_fusion_result(fusion_text('"3"', "my_graph")).graphs
    assert (graph.key, graph.session_id, graph.graph_id) == ("my_graph", None, None)


@pytest.mark.parametrize("field, value, cause", [
    ("graphId", '"²"', "graphId '²' is not 1 to 20 ASCII digits"),
    ("graphId", HUGE[:25], f"graphId {HUGE[:25]} is not 1 to 20 ASCII digits"),
    ("session_and_graph_id", '"1_²"', "session_and_graph_id '1_²' is not '{session}_{graph}' of 1 to 20 ASCII "
                                      "digits each"),
])
def test_an_old_form_id_of_unicode_or_too_many_digits_is_one_line(field, value, cause):
    from precision_tool.formats.fusion_result import parse_fusion_result

    text = '{"%s": %s, "graph_fusion": {"P": {"match_times": 1, "effect_times": 0}}}' % (field, value)
    with pytest.raises(FusionFormatError) as caught:
        parse_fusion_result(text, "f.json")
    assert str(caught.value) == f"f.json: byte 0: {cause}"


def test_a_tfdbg_v1_slot_of_unicode_digits_is_a_reference_error(tmp_path):
    from precision_tool.formats import tf_schema
    from precision_tool.formats.tfdbg import as_tensor_proto

    run = tmp_path / "run_1_0"
    path = write_tfdbg_v1_tensor(run, "x", 0, np.arange(2, dtype=np.float32), TS)
    event = tf_schema.Event(wall_time=1.0)
    value = event.summary.value.add(tag="x", node_name="x:²:DebugIdentity")
    value.tensor.CopyFrom(as_tensor_proto(np.arange(2, dtype=np.float32)))
    with open(path, "wb") as handle:
        handle.write(event.SerializeToString())
    with pytest.raises(ReferenceFormatError) as caught:
        list(iter_tfdbg_v1(run))
    assert str(caught.value).startswith(f"{path}: node_name 'x:²:DebugIdentity' is not 'op:slot:DebugOp'")


def test_tfdbg_v1_file_names_with_unicode_digit_slots_are_not_tensor_files(tmp_path):
    run = tmp_path / "run_1_0"
    path = write_tfdbg_v1_tensor(run, "x", 0, np.arange(2, dtype=np.float32), TS)
    os.rename(path, path.replace("x_0_", "x_²_"))
    write_tfdbg_v1_tensor(run, "y", 0, np.arange(2, dtype=np.float32), TS + 1)
    assert [r.op_name for r in iter_tfdbg_v1(run)] == ["y"]


def test_natural_key_takes_unicode_digits_as_text():
    assert natural_key("graph_²_10.pb") == ["graph_²_", (2, "10"), ".pb"]  # digit runs as (length, digits)
    assert natural_key("²") == ["²"]


# ------------------------------------------------------------------------------------------- JSON side files
@pytest.mark.parametrize("text, cause", [
    ('{"format": "precision_tool.capture_names/1", "variables": [{"name": "v", "handle_id": "²"}]}',
     "not a precision_tool names file (handle_id '²' is not an integer)"),
    ('{"format": "precision_tool.capture_names/1", "variables": [{"name": "v", "handle_id": %s}]}' % HUGE,
     "not JSON (a number of 5,000 digits (more than 30))"),
    ("[" * 100000 + "]" * 100000, "not a precision_tool names file (JSON nested too deeply)"),
])
def test_a_damaged_capture_names_file_is_one_line(tmp_path, text, cause):
    (tmp_path / NAMES_FILE).write_text(text, encoding="utf-8")
    with pytest.raises(ReferenceFormatError) as caught:
        read_capture_names(tmp_path)
    assert str(caught.value) == f"{tmp_path / NAMES_FILE}: {cause}"


def test_capture_names_still_read_back_from_their_writer(tmp_path):
    from precision_tool.formats.capture_names import VariableName, write_capture_names

    write_capture_names(tmp_path, variables=[VariableName("conv/kernel", 17)])
    assert json.loads((tmp_path / NAMES_FILE).read_text())["variables"] == [{"name": "conv/kernel",
                                                                             "handle_id": 17}]
    assert read_capture_names(tmp_path).variable_names() == {17: "conv/kernel"}


# ------------------------------------------------------------------------------------------- references
def write_npy(path, array):
    buffer = io.BytesIO()
    np.save(buffer, array)
    path.write_bytes(buffer.getvalue())
    return buffer.getvalue()


@needs_fifo
def test_read_npy_dir_keeps_the_readable_references_and_names_every_unreadable_one(tmp_path):
    good = tmp_path / "good.0.1700000000000000.npy"
    write_npy(good, np.arange(4, dtype=np.float32))
    truncated = tmp_path / "cut.0.1700000000000000.npy"
    truncated.write_bytes(write_npy(truncated, np.arange(100, dtype=np.float64))[:-8])
    fifo = tmp_path / "fifo.0.1700000000000000.npy"
    os.mkfifo(fifo)
    folder = tmp_path / "folder.0.1700000000000000.npy"
    folder.mkdir()
    dangling = tmp_path / "gone.0.1700000000000000.npy"
    os.symlink(tmp_path / "nowhere.npy", dangling)

    listing = finishes(lambda: read_npy_dir(tmp_path))
    assert [(r.op_name, r.dtype, r.shape) for r in listing] == [("good", np.dtype("<f4"), (4,))]
    assert listing.unreadable == (
        (str(truncated), f"{truncated}: truncated: the header promises 800 bytes of data, the file holds 792"),
        (str(fifo), f"{fifo}: is a FIFO (named pipe), not a regular file"),
        (str(folder), f"{folder}: is a folder, not a regular file"),
        (str(dangling), f"{dangling}: does not exist (or is a dangling symlink)"),
    )


def test_an_unreadable_latest_reference_is_not_replaced_by_an_older_one(tmp_path):
    write_npy(tmp_path / "x.0.1700000000000000.npy", np.zeros(2, np.float32))
    (tmp_path / "x.0.1700000000000009.npy").write_bytes(b"\x93NUMPY")
    listing = read_npy_dir(tmp_path)
    assert list(listing) == [] and [path for path, _ in listing.unreadable] == [
        str(tmp_path / "x.0.1700000000000009.npy")]


@pytest.mark.parametrize("op_name, index", [("a\0b", 0), ("a", -1)])
def test_a_reference_name_no_file_can_have_is_a_reference_error(tmp_path, op_name, index):
    with pytest.raises(ReferenceFormatError, match="NUL character or a negative output index$"):
        write_reference_npy(tmp_path, op_name, index, np.zeros(1, np.float32), TS)
    assert os.listdir(tmp_path) == []


# ------------------------------------------------------------------------------------------- header cache
def test_the_cached_header_is_reused_until_the_file_is_replaced(tmp_path):
    path = tmp_path / "Add.op.1.1.1700000000000001"
    write_dump(path, "first", outputs=[np.zeros(2, np.float32)])
    first = read_dump_header_cached(path)
    assert read_dump_header_cached(path) is first and first.op_name == "first"
    write_dump(path, "second", outputs=[np.zeros(3, np.float32)])  # atomic: a new file under the same name
    again = read_dump_header_cached(path)
    assert again is not first and again.op_name == "second" and again.outputs[0].shape == (3,)
    os.unlink(path)
    with pytest.raises(PrecisionToolError, match="does not exist"):
        read_dump_header_cached(path)
