"""Hostile inputs through the commands that read them (issue 14): exit 2, one line naming the file and the cause,
no traceback; a batch names its bad file and goes on.

Run in-process with :func:`precision_tool.cli.main`; the files are built with ``struct``, the ``DumpData``
protobuf, ``np.save`` and the project's writers.
"""
from __future__ import annotations

import os
import struct

import numpy as np
import pytest

from precision_tool.cli import main
from precision_tool.formats.bounds import MAX_NDIM
from precision_tool.formats.dump_schema import DumpData
from precision_tool.formats.dump_writer import TensorSpec, write_dump
from precision_tool.formats.tfdbg_v2 import write_tfdbg_v2_dump

TS = 1700000000000000


def run(capsys, *argv):
    """``(exit code, stdout, stderr)`` of ``precision_tool ARGV``; fails on any traceback."""
    code = main(list(argv))
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    return code, out, err


def deep_dump(path, ndim: int):
    message = DumpData(version="2.0", op_name="deep")
    entry = message.output.add(data_type=1, format=2, size=4)  # DT_FLOAT, ND, 4 bytes
    entry.shape.dim.extend([1] * ndim)
    header = message.SerializeToString()
    with open(path, "wb") as handle:
        handle.write(struct.pack("<Q", len(header)) + header + b"\0" * 4)


def test_dc_names_a_dump_with_too_many_dims_and_converts_the_rest(tmp_path, capsys):
    src = tmp_path / "dump"
    src.mkdir()
    deep = src / f"Add.deep.1.1.{TS + 1}"
    deep_dump(deep, MAX_NDIM + 1)
    good = f"Add.good.1.1.{TS + 2}"
    write_dump(src / good, "good", outputs=[np.arange(3, dtype=np.float32)])
    code, out, _ = run(capsys, "dc", str(src), "-o", str(tmp_path / "out"))
    assert code == 2
    assert f"{deep}: output 0: shape has {MAX_NDIM + 1} dimensions; numpy holds at most {MAX_NDIM}" in out
    assert "1 failure; the other tensors were written" in out
    assert np.array_equal(np.load(tmp_path / "out" / f"{good}.output.0.npy"), np.arange(3, dtype=np.float32))


def test_dc_on_a_dump_with_header_length_0_is_unusable_input_not_all_converted(tmp_path, capsys):
    src = tmp_path / "dump"
    src.mkdir()
    empty = src / f"Add.zero.1.1.{TS}"
    empty.write_bytes(struct.pack("<Q", 0) + b"\0" * 8)
    code, out, _ = run(capsys, "dc", str(src), "-o", str(tmp_path / "out"))
    assert code == 2 and "all tensors converted" not in out
    assert f"{empty}: header length is 0: the file holds no DumpData header" in out
    assert out.rstrip().endswith("1 failure; no tensor was converted")


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_dc_names_a_fifo_given_or_found_as_a_dump(tmp_path, capsys):
    src = tmp_path / "dump"
    src.mkdir()
    fifo = src / f"Add.fifo.1.1.{TS}"
    os.mkfifo(fifo)
    code, out, err = run(capsys, "dc", str(fifo), "-o", str(tmp_path / "one"))
    assert (code, out) == (2, "")
    assert err == f"precision_tool: error: {fifo}: is a FIFO (named pipe), not a regular file\n"
    assert not os.path.exists(tmp_path / "one")  # refused before the output folder is made
    code, out, _ = run(capsys, "dc", str(src), "-o", str(tmp_path / "all"))  # was: silently "no dump files"
    assert code == 2 and f"{fifo}: is a FIFO (named pipe), not a regular file" in out


def test_dc_names_the_file_and_the_tensor_once_per_failure(tmp_path, capsys):
    src = tmp_path / "dump"
    src.mkdir()
    path = src / f"Add.str.1.1.{TS}"
    write_dump(path, "str", outputs=[TensorSpec(np.zeros(4, np.uint8), dtype_code=13)])  # 13: DT_STRING
    code, out, _ = run(capsys, "dc", str(src), "-o", str(tmp_path / "out"))
    (line,) = [line for line in out.splitlines() if line.startswith(str(path))]
    assert code == 2 and line == f"{path}: output 0: data type DT_STRING is not supported (numpy cannot hold it)"


@pytest.mark.parametrize("op_name, slot, wall_time, cause", [
    ("a", 0, float("nan"), "record 0: wall_time nan is not a time in seconds since 1970 (corrupt record)"),
    ("a", 0, float("inf"), "record 0: wall_time inf is not a time in seconds since 1970 (corrupt record)"),
    ("a", -1, 1.0, "record 0: op 'a' has output_slot -1, a negative index (corrupt record)"),
    ("a\0b", 0, 1.0, "record 0: op name 'a\\x00b' holds a NUL character (corrupt record)"),
])
def test_tf_dump_refuses_a_corrupt_v2_trace_in_one_line(tmp_path, capsys, op_name, slot, wall_time, cause):
    capture = tmp_path / "v2"
    write_tfdbg_v2_dump(capture, [(op_name, "Relu", slot, np.ones(2, np.float32), wall_time)])
    code, out, err = run(capsys, "--data-dir", str(tmp_path / "ws"), "tf_dump", "-i", str(capture),
                         "-o", str(tmp_path / "out"))
    traces = capture / "tfdbg_events.1700000000.host.graph_execution_traces"
    assert code == 2 and err == f"precision_tool: error: {traces}: {cause}\n"
    assert not os.path.exists(tmp_path / "out") or os.listdir(tmp_path / "out") == []


def test_tf_dump_notes_a_trace_naming_an_output_its_op_does_not_have(tmp_path, capsys):
    capture = tmp_path / "v2"
    write_tfdbg_v2_dump(capture, [("a", "Relu", 9, np.ones(2, np.float32), 1.0)])  # the op has 1 output
    code, out, _ = run(capsys, "--data-dir", str(tmp_path / "ws"), "tf_dump", "-i", str(capture),
                       "-o", str(tmp_path / "out"))
    traces = capture / "tfdbg_events.1700000000.host.graph_execution_traces"
    assert code == 0
    assert (f"{traces}: 1 traced tensor(s) name an output past their op's outputs (first: trace 0, 'a' output 9 "
            "of 1)") in " ".join(out.split())


def test_pt_on_a_damaged_npy_header_is_one_line(tmp_path, capsys):
    path = tmp_path / "x.npy"
    header = "{'descr': '<f4', 'fortran_order': False, 'shape': (3,), '''}"
    header += " " * ((64 - (10 + len(header) + 1) % 64) % 64) + "\n"
    path.write_bytes(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode() + b"\0" * 12)
    code, _, err = run(capsys, "--data-dir", str(tmp_path / "ws"), "pt", str(path))
    assert code == 2 and err == f"precision_tool: error: {path}: damaged .npy header (EOF in multi-line string)\n"


def test_pt_prints_every_tensors_statistics_and_the_values_of_the_first_64(tmp_path, capsys):
    path = tmp_path / f"ConcatD.cat.1.1.{TS}"
    write_dump(path, "cat", inputs=[np.full(2, i, np.float32) for i in range(99)],
               outputs=[np.zeros(198, np.float32)])
    code, out, _ = run(capsys, "--data-dir", str(tmp_path / "ws"), "pt", str(path))
    assert code == 0
    rows = [line for line in out.splitlines() if line.startswith("cat:")]
    tensors = 99 + 1  # the inputs written above and the output
    assert len([line for line in rows if "ND [2]" in line or "ND [198]" in line]) == tensors  # one row per tensor
    headings = [line for line in out.splitlines() if line.startswith("cat:") and line.endswith(": float32 [2]")]
    assert headings == [f"cat:input:{i}: float32 [2]" for i in range(64)]
    assert (f"values of the other {tensors - 64} tensors are not printed (their statistics are above): name one, "
            f"e.g. pt {path}:output:0") in " ".join(out.split())


def test_tf_dump_leaves_out_an_alias_no_file_can_be_named_after(tmp_path, capsys):
    capture = tmp_path / "v2"
    write_tfdbg_v2_dump(capture, [("a", "Relu", 0, np.ones(2, np.float32), 1.0)])
    code, out, _ = run(capsys, "--data-dir", str(tmp_path / "ws"), "tf_dump", "-i", str(capture),
                       "-o", str(tmp_path / "out"), "--alias", "a:0=x\0y")
    assert code == 0 and "alias 'x\\x00y:0' not written: a NUL character cannot be in a file name." in out
    # 1.0 s = 10**6 us, 16 digits; and the folder's record of the conversion
    assert sorted(os.listdir(tmp_path / "out")) == ["a.0.0000000001000000.npy", "tf_dump_run.json"]


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_tf_dump_names_a_fifo_among_the_v2_files(tmp_path, capsys):
    capture = tmp_path / "v2"
    write_tfdbg_v2_dump(capture, [("a", "Relu", 0, np.ones(2, np.float32), 1.0)])
    fifo = capture / "tfdbg_events.1700000001.host.graph_execution_traces"
    os.mkfifo(fifo)
    code, _, err = run(capsys, "--data-dir", str(tmp_path / "ws"), "tf_dump", "-i", str(capture),
                       "-o", str(tmp_path / "out"))
    assert code == 2 and err == f"precision_tool: error: {fifo}: is a FIFO (named pipe), not a regular file\n"


def test_dc_on_one_unreadable_file_is_the_commands_one_line_error(tmp_path, capsys):
    path = tmp_path / f"Add.deep.1.1.{TS}"
    deep_dump(path, MAX_NDIM + 1)
    code, out, err = run(capsys, "dc", str(path), "-o", str(tmp_path / "out"))
    assert (code, out) == (2, "")
    assert err == (f"precision_tool: error: {path}: output 0: shape has {MAX_NDIM + 1} dimensions; numpy holds at "
                   f"most {MAX_NDIM} (a corrupted header)\n")


def test_pt_save_never_writes_below_the_dump_files_folder(tmp_path, capsys):
    folder = tmp_path / "dump" / "0"
    folder.mkdir(parents=True)
    path = folder / f"Relu.relu.1.1.{TS}"
    write_dump(path, "relu", outputs=[np.arange(3, dtype=np.float32)])
    code, out, err = run(capsys, "--data-dir", str(folder), "pt", str(path), "-s")  # the workspace is the dump
    assert (code, out) == (2, "") and err.count("\n") == 1
    assert err.startswith(f"precision_tool: error: {folder / 'temp' / 'print_tensor'}: output folder would be inside")
    assert sorted(os.listdir(folder)) == [path.name]
