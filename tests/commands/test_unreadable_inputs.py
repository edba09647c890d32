"""Commands that find nothing because their input was unreadable say so and do not exit 0 (issue 14): ``ov``
with a corrupt Opdebug record, in an empty folder or on a file; ``fusion`` with a broken or non-regular
``fusion_result.json`` or without a workspace; ``pt``/``cp`` on a FIFO named like a dump.

Files are written with the project's writers (dumps) or by hand (the corrupt bytes); each expectation is
derived from what was written: the inf planted in ``add_op``'s output, the 7 garbage bytes of the record.
"""
import os

import numpy as np
import pytest

from inspect_builders import write_inspect_workspace
from precision_tool.cli import main
from precision_tool.formats.dump_names import build_dump_name
from precision_tool.formats.dump_writer import write_dump

TS = 1_700_000_000_000_000
STEP = os.path.join("npu", "debug_0", "dump", "20240101000000", "0", "g", "1", "0")
needs_fifo = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")


def run(capsys, *argv):
    code = main([os.fspath(a) for a in argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def assert_one_line_error(code, out, err, *parts) -> None:
    assert code == 2 and out == "" and "Traceback" not in err and err.count("\n") == 1
    for part in parts:
        assert str(part) in err, (part, err)


def overflow_workspace(root, output) -> tuple:
    """A workspace whose one dumped op ``add_op`` writes ``output``, and whose overflow run holds one Opdebug
    record of 7 garbage bytes (a record needs at least an 8-byte header length). Returns (root, record)."""
    step = os.path.join(root, STEP)
    os.makedirs(step)
    write_dump(os.path.join(step, build_dump_name("Add", "add_op", 3, 1, TS).file_name), "add_op",
               inputs=[np.ones(2, np.float32)], outputs=[np.asarray(output, np.float32)], dump_time=TS)
    records = os.path.join(root, "overflow", "dump")
    os.makedirs(records)
    record = os.path.join(records, build_dump_name("Opdebug", "Node_OpDebug", 3, 1, TS + 1).file_name)
    with open(record, "wb") as handle:
        handle.write(b"garbage")
    return root, record


def test_ov_with_a_corrupt_record_scans_and_finds_the_inf(tmp_path, capsys):
    root, record = overflow_workspace(tmp_path / "ws", [1.0, np.inf])
    code, out, err = run(capsys, "-d", root, "ov")
    assert code == 1 and err == ""
    assert f"1 record(s) could not be decoded:\n  {record}: " in out
    assert "scanning" in out and out.rstrip().endswith("inf/NaN or saturation first appears at add_op")


def test_ov_with_only_a_corrupt_record_and_clean_dumps_exits_2_naming_it(tmp_path, capsys):
    root, record = overflow_workspace(tmp_path / "ws", [1.0, 2.0])
    code, out, err = run(capsys, "-d", root, "ov")
    assert code == 2 and err == "" and "Traceback" not in out
    status = out.rstrip().split("\n")[-1]
    assert status.startswith(f"no overflow found, but 1 input(s) could not be read, e.g. {record}: ")
    code_json, _, _ = run(capsys, "-d", root, "--json", "ov")
    assert code_json == 2


@pytest.mark.parametrize("argv", [(), ("--scan",)])
def test_ov_with_nothing_to_scan_is_one_line(tmp_path, capsys, argv):
    empty = tmp_path / "empty"
    empty.mkdir()
    code, out, err = run(capsys, "-d", empty, "ov", *argv)
    assert_one_line_error(code, out, err, f"{empty / 'overflow' / 'dump'}: nothing to scan",
                          empty / "npu" / "debug_0" / "dump")
    code, out, err = run(capsys, "-d", empty, "ov", empty, *argv)
    assert_one_line_error(code, out, err, f"{empty}: nothing to scan")
    assert os.listdir(empty) == []


def test_ov_on_a_file_says_it_is_not_a_folder(tmp_path, capsys):
    path = tmp_path / "record"
    path.write_bytes(b"x")
    assert_one_line_error(*run(capsys, "ov", path), f"{path}: not a folder")


# ------------------------------------------------------------------------------------------------------ fusion
def test_fusion_with_a_broken_result_file_exits_2_naming_it(tmp_path, capsys):
    root = write_inspect_workspace(tmp_path / "ws")
    result = os.path.join(root, "fusion", "fusion_result.json")
    os.makedirs(os.path.dirname(result))
    with open(result, "w") as handle:
        handle.write('{"session_and_graph_id_0_1": {"graph_fusion": {"A": ')  # cut short
    assert_one_line_error(*run(capsys, "-d", root, "fusion"), f"{result}: ")
    os.remove(result)
    code, out, _ = run(capsys, "-d", root, "fusion")  # without it: the graph alone, as before
    assert code == 0 and "ConvBiasaddFusionPass" in out


@needs_fifo
def test_fusion_result_fifo_is_named(tmp_path, capsys):
    root = write_inspect_workspace(tmp_path / "ws")
    result = os.path.join(root, "fusion", "fusion_result.json")
    os.makedirs(os.path.dirname(result))
    os.mkfifo(result)
    assert_one_line_error(*run(capsys, "-d", root, "fusion"), f"{result}: is a FIFO")


def test_fusion_without_a_workspace_or_anything_to_examine(tmp_path, capsys):
    missing, a_file, empty = tmp_path / "missing", tmp_path / "file", tmp_path / "empty"
    a_file.write_text("x")
    empty.mkdir()
    assert_one_line_error(*run(capsys, "-d", missing, "fusion"), f"{missing}: no such workspace folder")
    assert_one_line_error(*run(capsys, "-d", a_file, "fusion"), f"{a_file}: not a folder")
    assert_one_line_error(*run(capsys, "-d", empty, "fusion"), f"{empty}: nothing to examine",
                          empty / "npu" / "debug_0" / "graph")
    assert not missing.exists() and os.listdir(empty) == []


def test_fusion_with_an_unreadable_build_graph_exits_2(tmp_path, capsys):
    root = write_inspect_workspace(tmp_path / "ws")
    graph = os.path.join(root, "npu", "debug_0", "graph", "ge_proto_00000001_Build.txt")
    with open(graph, "w") as handle:
        handle.write("graph { op { name: ")  # cut short
    code, out, err = run(capsys, "-d", root, "fusion")
    assert code == 2 and err == "" and "Build graph not read" in out and graph in out
    assert out.rstrip().endswith("could not be read (see the notes): fused ops unknown")


# ------------------------------------------------------------------------------------------- FIFOs named like dumps
@needs_fifo
def test_pt_and_cp_name_a_fifo_given_as_the_dump(tmp_path, capsys):
    root = write_inspect_workspace(tmp_path / "ws")
    fifo = os.path.join(root, STEP, build_dump_name("Mul", "fifo_op", 9, 1, TS).file_name)
    os.makedirs(os.path.dirname(fifo))
    os.mkfifo(fifo)
    assert_one_line_error(*run(capsys, "-d", root, "pt", fifo), f"{fifo}: is a FIFO")
    assert_one_line_error(*run(capsys, "-d", root, "cp", f"{fifo}:output:0", "out/Add:0"), f"{fifo}: is a FIFO")


@needs_fifo
def test_a_fifo_named_like_a_dump_is_named_not_skipped(tmp_path, capsys):
    root, record = overflow_workspace(tmp_path / "ws", [1.0, 2.0])
    os.remove(record)
    fifo = os.path.join(root, STEP, build_dump_name("Mul", "fifo_op", 9, 1, TS + 5).file_name)
    os.mkfifo(fifo)
    code, out, err = run(capsys, "-d", root, "ov", "--scan")
    assert code == 2 and err == "" and "2 ops" in out  # add_op and the FIFO: found, not silently skipped
    assert out.rstrip().endswith(f"no overflow found, but 1 input(s) could not be read, e.g. {fifo}: is a FIFO "
                                 "(named pipe), not a regular file")
    assert_one_line_error(*run(capsys, "-d", root, "pt", "fifo_op"), f"{fifo}: is a FIFO")
