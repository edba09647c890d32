"""Exception dumps through the commands: ``dc`` converts them as msaccucmp does, ``pt`` prints them, ``ls``, ``ov``
and ``ac`` list them as what they are -- the inputs of an op that raised an AI Core error, never an overflow."""
from __future__ import annotations

import json
import os
import shutil
import struct
from pathlib import Path

import numpy as np
import pytest

from precision_tool.cli import main
from precision_tool.formats.dump_writer import TensorSpec, write_dump

REAL_DIR = Path(__file__).resolve().parents[3] / "shared" / "real-world" / "dump"
REAL_NAME = "exception_info.13.3.1717489251810963"
REAL = REAL_DIR / REAL_NAME
needs_real = pytest.mark.skipif(not REAL.is_file(), reason=f"real exception dump not present ({REAL})")
LITE_NAME = "exception_info.2.1.20250611171538370"


def _varint(data: bytes, pos: int):
    value = shift = 0
    while True:
        value |= (data[pos] & 0x7F) << shift
        shift += 7
        pos += 1
        if not data[pos - 1] & 0x80:
            return value, pos


def _fields(data: bytes):
    """``(field number, value)`` of one protobuf message (varint and length-delimited fields only, which is all
    DumpData uses)."""
    pos = 0
    while pos < len(data):
        key, pos = _varint(data, pos)
        if key & 7 == 0:
            value, pos = _varint(data, pos)
        else:
            assert key & 7 == 2, f"wire type {key & 7}"
            length, pos = _varint(data, pos)
            value, pos = data[pos:pos + length], pos + length
        yield key >> 3, value


def real_payload_facts():
    """``[(kind, index, size, payload bytes)]`` of the real file in payload order, decoded here without the
    project: the 8-byte header length, then the DumpData header walked field by field (input = field 4 with its
    size in field 5; output = field 3, size in field 6); inputs' payloads come first."""
    raw = REAL.read_bytes()
    (length,) = struct.unpack_from("<Q", raw)
    sizes = {"input": [], "output": []}
    for number, value in _fields(raw[8:8 + length]):
        if number in (3, 4):
            kind = "input" if number == 4 else "output"
            sizes[kind].append(dict(_fields(value)).get(5 if kind == "input" else 6, 0))
    offset, facts = 8 + length, []
    for kind in ("input", "output"):
        for index, size in enumerate(sizes[kind]):
            facts.append((kind, index, size, raw[offset:offset + size]))
            offset += size
    assert offset == len(raw), "the hand decoding must account for every byte"
    return facts


def write_lite_dump(folder, name=LITE_NAME, seed=1):
    """A Lite exception dump like CANN's: every tensor DT_UNDEFINED; here with a header shape and random bytes.
    Returns the path and the raw payloads (input 0, output 0)."""
    rng = np.random.default_rng(seed)
    inputs, outputs = rng.integers(0, 256, 32, dtype=np.uint8), rng.integers(0, 256, 12, dtype=np.uint8)
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, name)
    write_dump(path, "", inputs=[TensorSpec(inputs.view(np.float16).reshape(2, 8), dtype_code=0)],
               outputs=[TensorSpec(outputs, dtype_code=0)], dump_time=1)
    return path, inputs.tobytes(), outputs.tobytes()


def run_json(capsys, *argv):
    """Exit code and the report's ``data`` of ``precision_tool --json ARGV``."""
    code = main(["--json", *argv])
    return code, json.loads(capsys.readouterr().out)["data"]


# ------------------------------------------------------------------------------ dc

@needs_real
def test_dc_converts_the_real_exception_dump_to_its_raw_bytes(tmp_path, capsys):
    assert main(["dc", str(REAL), "-o", str(tmp_path / "out")]) == 0
    facts = real_payload_facts()
    assert facts  # the real file holds at least one tensor
    assert sorted(os.listdir(tmp_path / "out")) == sorted(f"{REAL_NAME}.{kind}.{index}.npy"
                                                          for kind, index, _, _ in facts)
    for kind, index, size, payload in facts:
        array = np.load(tmp_path / "out" / f"{REAL_NAME}.{kind}.{index}.npy", allow_pickle=False)
        assert array.dtype == np.int8 and array.shape == (size,)
        assert np.array_equal(array, np.frombuffer(payload, np.int8))
    assert "data type unknown (DT_UNDEFINED)" in capsys.readouterr().out


def test_dc_converts_a_folder_with_exception_dumps_beside_op_dumps(tmp_path, capsys):
    device = tmp_path / "extra-info" / "data-dump" / "0"
    path, inputs, outputs = write_lite_dump(device)
    write_dump(device / "Add.add_1.7.2.1717489251810963", "add_1", inputs=[np.arange(3, dtype=np.float32)])
    assert main(["dc", str(tmp_path / "extra-info"), "-o", str(tmp_path / "out")]) == 0
    out = tmp_path / "out"
    assert sorted(os.listdir(out)) == ["Add.add_1.7.2.1717489251810963.input.0.npy", f"{LITE_NAME}.input.0.npy",
                                       f"{LITE_NAME}.output.0.npy"]
    got_in, got_out = np.load(out / f"{LITE_NAME}.input.0.npy"), np.load(out / f"{LITE_NAME}.output.0.npy")
    assert got_in.dtype == np.int8 and got_in.shape == (32,) and got_in.tobytes() == inputs
    assert got_out.shape == (12,) and got_out.tobytes() == outputs
    assert "raw 32 bytes (header shape [2, 8])" in capsys.readouterr().out


def test_dc_of_a_truncated_exception_dump_is_one_line_exit_2(tmp_path, capsys):
    path, _, _ = write_lite_dump(tmp_path / "dump")
    with open(path, "r+b") as handle:
        handle.truncate(os.path.getsize(path) - 3)
    assert main(["dc", path, "-o", str(tmp_path / "out")]) == 2
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"precision_tool: error: {path}: payload sizes total 44 bytes")
    assert not (tmp_path / "out").exists()
    assert main(["pt", path]) == 2
    assert capsys.readouterr().err.strip().startswith(f"precision_tool: error: {path}: ")


@pytest.mark.peer
@needs_real
def test_dc_equals_msaccucmps_conversion(peer, tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    write_lite_dump(src)
    for given in (REAL, src):
        peer.run("convert", "-d", given, "-out", tmp_path / "peer" / given.name)
        assert main(["dc", str(given), "-o", str(tmp_path / "ours" / given.name)]) == 0
        theirs = sorted(os.listdir(tmp_path / "peer" / given.name))
        assert theirs and theirs == sorted(os.listdir(tmp_path / "ours" / given.name))
        for name in theirs:
            a = np.load(tmp_path / "peer" / given.name / name, allow_pickle=False)
            b = np.load(tmp_path / "ours" / given.name / name, allow_pickle=False)
            assert (a.dtype, a.shape, a.tobytes()) == (b.dtype, b.shape, b.tobytes()), name


# ------------------------------------------------------------------------------ pt

@needs_real
def test_pt_prints_the_real_file_and_one_tensor(capsys):
    _, _, size, payload = real_payload_facts()[0]  # input 0
    code, data = run_json(capsys, "pt", str(REAL))
    assert code == 0
    tensor = data["tensors"][0]
    assert tensor["stored"] == f"DT_UNDEFINED raw {size} bytes" and tensor["dtype"] == "int8"
    assert tensor["values"] == np.frombuffer(payload, np.int8).tolist()
    assert main(["pt", f"{REAL}:input:0"]) == 0
    out = capsys.readouterr().out
    assert f"{REAL_NAME}:input:0: int8 [{size}]" in out
    assert f"note: data type unknown (DT_UNDEFINED): its {size} bytes as int8" in out


def test_pt_finds_an_exception_dump_by_name_in_the_run(tmp_path, capsys):
    _, inputs, outputs = write_lite_dump(tmp_path / "npu" / "debug_0" / "dump" / "0")
    code, data = run_json(capsys, "-d", str(tmp_path), "pt", f"{LITE_NAME}:output:0")
    assert code == 0 and data["tensors"][0]["values"] == np.frombuffer(outputs, np.int8).tolist()


# ------------------------------------------------------------------------------ ls, ov, ac

def test_ls_without_a_graph_lists_exception_dumps_apart(tmp_path, capsys):
    dump = tmp_path / "npu" / "debug_0" / "dump" / "0"
    path, _, _ = write_lite_dump(dump)
    write_dump(dump / "Add.add_1.7.2.1717489251810963", "add_1", inputs=[np.arange(3, dtype=np.float32)])
    assert main(["-d", str(tmp_path), "ls"]) == 0
    out = capsys.readouterr().out
    assert "1 dumped ops under" in out
    assert "AI Core error: 1 exception dump(s) -- the inputs of an op that raised an AI Core error" in out
    row = next(line for line in out.splitlines() if line.endswith(path))
    assert row.split()[:4] == ["2025-06-11", "17:15:38.370", "2", "1"]  # time, stream 2, task 1


def _row_of(out: str, path: str) -> str:
    return next(line for line in out.splitlines() if line.rstrip().endswith(path))


@needs_real
def test_ov_lists_the_exception_folder_as_ai_core_errors_not_overflow(tmp_path, capsys):
    device = tmp_path / "extra-info" / "data-dump" / "0"
    device.mkdir(parents=True)
    copied = shutil.copyfile(REAL, device / REAL_NAME)
    code = main(["-d", str(tmp_path / "no-workspace"), "ov", str(device)])
    out = capsys.readouterr().out
    assert code == 2  # no Opdebug record and no op dump: the overflow question itself has no answer
    assert "no Opdebug records" in out and "first overflow" not in out
    row = _row_of(out, str(copied))
    assert row.split()[:6] == ["2024-06-04", "08:20:51.810963", "UTC", "13", "3", "-"]
    assert "1 input, 0 outputs (32 bytes)" in row
    assert "1 exception dump of an AI Core error (first: stream 13, task 3)" in out
    code, data = run_json(capsys, "-d", str(tmp_path / "no-workspace"), "ov", str(device))
    listed = data["exception_dumps"]
    assert [(item["stream_id"], item["task_id"], item["path"]) for item in listed] == [(13, 3, str(copied))]
    assert data["records"]["records"] == 0


def test_ov_lists_exception_dumps_beside_a_clean_dump_scan_and_keeps_exit_0(tmp_path, capsys):
    dump = tmp_path / "npu" / "debug_0" / "dump"
    dump.mkdir(parents=True)
    write_dump(dump / "Add.add_1.7.2.1717489251810963", "add_1", inputs=[np.arange(3, dtype=np.float32)],
               outputs=[np.arange(3, dtype=np.float32)])
    path, _, _ = write_lite_dump(dump / "0")
    broken = os.path.join(dump, "0", "exception_info.3.4.1717489251810999")
    with open(broken, "wb") as handle:
        handle.write(b"\x01")
    assert main(["-d", str(tmp_path), "ov"]) == 0
    out = capsys.readouterr().out
    assert "no output holds inf/NaN" in out
    assert "1 input, 1 output (44 bytes)" in _row_of(out, path)
    assert "unreadable: file is 1 bytes" in _row_of(out, broken)


def test_ac_lists_exception_dumps_in_the_overflow_section(tmp_path, capsys):
    (tmp_path / "npu" / "debug_0" / "dump").mkdir(parents=True)
    write_dump(tmp_path / "npu" / "debug_0" / "dump" / "Add.add_1.7.2.1717489251810963", "add_1",
               inputs=[np.arange(3, dtype=np.float32)], outputs=[np.arange(3, dtype=np.float32)])
    path, _, _ = write_lite_dump(tmp_path / "overflow" / "dump" / "0")
    code, body = run_json(capsys, "-d", str(tmp_path), "ac")
    assert code == 0  # an AI Core error is not an overflow: nothing here fails the check
    assert body["overflow"]["records"]["records"] == 0
    assert [(item["stream_id"], item["task_id"], item["path"]) for item in body["overflow"]["exception_dumps"]] \
        == [(2, 1, path)]
    assert any(line.startswith("1 exception dump(s) of an AI Core error") for line in body["verdict"]["also"])
    assert main(["-d", str(tmp_path), "ac"]) == 0
    assert "AI Core error: 1 exception dump(s)" in capsys.readouterr().out
