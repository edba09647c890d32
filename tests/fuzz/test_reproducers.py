"""Issue 14's "Found" list, one regression test per reproducer, each built as tiny files in ``tmp_path``.

Every command runs as a user runs it -- ``python -m precision_tool -d WS ...`` in a subprocess -- under the
campaign's limits (4 GB address space, a timeout, stdin closed; :func:`campaign.run_limited`). A bad input must
end in exit 2 with one line naming the file and the cause (or, for the silent ones, in the right verdict), never
in a traceback, a hang, a memory blow-up or raw terminal control characters.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import campaign
import mutate as mutlib
import repro_builders as rb
from precision_tool.formats.dump_names import append_mapping_row
from precision_tool.formats.dump_writer import build_dump_bytes
from precision_tool.formats.ge_io import ge_graph_to_json
from precision_tool.formats.opdebug import write_overflow_record
from precision_tool.formats.tfdbg_v2 import write_tfdbg_v2_dump

TIMEOUT = 20.0
HUGE = "9" * 5000
SWAPS = ("fifo", "devzero", "loop")


# ------------------------------------------------------------------------------------------ running
def tool(ws, *args, timeout: float = TIMEOUT):
    argv = [sys.executable, "-m", "precision_tool", "-d", os.fspath(ws), *map(os.fspath, args)]
    code, out, err, timed_out, seconds = campaign.run_limited(argv, Path(ws).parent, timeout)
    return Result(argv, code, out, err, timed_out, seconds)


class Result:
    def __init__(self, argv, code, out, err, timed_out, seconds):
        self.argv, self.code, self.out, self.err = argv, code, out, err
        self.timed_out, self.seconds = timed_out, seconds

    def __repr__(self):
        return (f"$ {' '.join(self.argv)}\nexit {self.code}{' (timed out)' if self.timed_out else ''}\n"
                f"--- stdout\n{self.out[-3000:]}\n--- stderr\n{self.err[-3000:]}")


def assert_clean(result: Result, codes=(0, 1, 2)) -> None:
    """No hang, traceback, memory error, crash or raw control character; the exit code one of ``codes``."""
    outcome, detail = campaign.classify(result.code, result.out, result.err, result.timed_out, TIMEOUT)
    assert outcome == "ok", f"{outcome}: {detail}\n{result!r}"
    assert result.code in codes, f"exit {result.code}, expected {codes}\n{result!r}"


def assert_names(result: Result, *paths) -> None:
    """Some output line names each file (as shown on a terminal) and says more after it: the cause."""
    text = result.out + "\n" + result.err
    for path in paths:
        shown = campaign.shown_name(Path(path).name)
        lines = [line for line in text.splitlines() if shown in line and len(line.split(shown, 1)[1].strip()) > 3]
        assert lines, f"no line names {shown} and a cause\n{result!r}"


def assert_unusable(result: Result, path, one_line: bool = True) -> None:
    """Exit 2, one line naming ``path`` and the cause (the only line on stderr when ``one_line``)."""
    assert_clean(result, codes=(2,))
    assert_names(result, path)
    if one_line:
        lines = [line for line in result.err.splitlines() if line.strip()]
        assert len(lines) == 1, f"expected one error line on stderr\n{result!r}"


def swap(path: Path, kind: str) -> Path:
    """Replace ``path`` by a FIFO, a symlink to /dev/zero, a symlink loop, a dangling symlink or a folder."""
    if os.path.lexists(path):
        shutil.rmtree(path) if path.is_dir() and not path.is_symlink() else path.unlink()
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "devzero":
        os.symlink("/dev/zero", path)
    elif kind == "loop":
        os.symlink(path.name, path)
    elif kind == "dangling":
        os.symlink(str(path) + ".missing", path)
    else:
        path.mkdir()
    return path


@pytest.fixture
def ws(tmp_path):
    return rb.tiny_workspace(tmp_path / "ws")


@pytest.fixture(scope="module")
def result_folder(tmp_path_factory):
    """A compare result of the tiny workspace (CSV, JSONL, summary.json), compare exit 0."""
    root = tmp_path_factory.mktemp("result")
    workspace = rb.tiny_workspace(root / "ws")
    out = root / "result"
    done = tool(workspace, "compare", "-o", out)
    assert done.code == 0, repr(done)
    return out


@pytest.fixture
def result(tmp_path, result_folder):
    """A copy of the compare result: ``(folder, csv path)``."""
    folder = tmp_path / "result"
    shutil.copytree(result_folder, folder)
    return folder, next(folder.glob("result_*.csv"))


def test_the_tiny_workspace_compares_clean(ws, tmp_path):
    done = tool(ws, "compare", "-o", tmp_path / "out")
    assert_clean(done, codes=(0,))


# ------------------------------------------------------------------------------------------ > 64 dimensions
def test_dump_with_70_dims_is_one_line(ws, tmp_path):
    bad = ws / rb.DUMP_DIR / rb.dump_name("Relu", "x/many_dims", 5)
    bad.write_bytes(rb.dump_with_shape("x/many_dims", (1,) * 70))
    assert_unusable(tool(ws, "dc", bad, "-o", tmp_path / "out"), bad)
    assert_unusable(tool(ws, "pt", bad), bad)


@pytest.mark.parametrize("args", [
    ("compare", "-o", "{out}"), ("ac", "-c", "--no-replay", "-o", "{out}"),
    ("vc", "-lt", "{dumps}", "-rt", "{refs}", "-g", "{graph}"), ("ov", "--scan", "{dumps}"),
    ("dc", "{dumps}", "-o", "{out}")])
def test_a_70_dim_dump_does_not_abort_the_batch(ws, tmp_path, args):
    relu = rb.relu_dump(ws)
    relu.write_bytes(build_dump_bytes(rb.RELU, inputs=[rb.values()["input"]],
                                      outputs=[rb.TensorSpec(np.ones(1, np.float32), shape=(1,) * 70)],
                                      dump_time=rb.TS))
    out = tmp_path / "out"
    argv = [a.format(out=out, dumps=ws / rb.DUMP_DIR, refs=ws / rb.REF_DIR, graph=ws / rb.GRAPH_DIR) for a in args]
    done = tool(ws, *argv)
    assert_clean(done, codes=(2,))
    assert_names(done, relu)
    if args[0] == "compare":  # the rest is compared, and the summary says an input was unusable
        summary = json.loads((out / "summary.json").read_text())
        assert summary["counts"]["compared"] >= 1, summary["counts"]
        assert summary["exit_code"] == 2


def test_npy_with_70_dims(ws, tmp_path):
    ref = rb.relu_reference(ws)
    header = "{'descr': '<f4', 'fortran_order': False, 'shape': (" + ", ".join(["1"] * 70) + "), }"
    ref.write_bytes(rb.npy_file(header, np.ones(1, "<f4").tobytes()))
    assert_unusable(tool(ws, "pt", ref), ref)
    done = tool(ws, "compare", "-o", tmp_path / "out")
    assert_clean(done, codes=(2,))
    assert_names(done, ref)


def test_tfdbg_tensor_with_70_dims(ws, tmp_path):
    run = rb.v1_run(ws, {"a": np.ones(2, np.float32), "b": rb.tensor_proto_with_dims(70)})
    done = tool(ws, "tf_dump", "-i", run, "-o", tmp_path / "out")
    assert_clean(done, codes=(2,))
    assert_names(done, rb.v1_tensor_path(run, "b"))


# ------------------------------------------------------------------------------------------ 5,000-digit integers
def test_ge_text_dim_of_5000_digits(ws, tmp_path):
    graph = ws / rb.GRAPH_FILE
    graph.write_text(graph.read_text().replace("dim: 3", f"dim: {HUGE}", 1))
    assert_unusable(tool(ws, "ge2json", graph, "-o", tmp_path / "g.json"), graph)


def test_ge_json_number_of_5000_digits(ws, tmp_path):
    path = tmp_path / "graph.json"
    text = json.dumps(ge_graph_to_json(rb.graph()))
    assert '"dim": [2, 3]' in text
    path.write_text(text.replace('"dim": [2, 3]', f'"dim": [2, {HUGE}]', 1))
    assert_unusable(tool(ws, "ge2json", path, "-o", tmp_path / "g.json"), path)


@pytest.mark.parametrize("where", ["count", "key"])
def test_fusion_result_with_5000_digits(ws, where):
    path = ws / "fusion" / "fusion_result.json"
    path.parent.mkdir()
    counts = {"match_times": HUGE if where == "count" else "1", "effect_times": "1"}
    key = f"session_and_graph_id_{HUGE}_1" if where == "key" else "session_and_graph_id_0_1"
    path.write_text(json.dumps({key: {"graph_fusion": {"APass": counts}}}))
    assert_unusable(tool(ws, "fusion", "--no-compare"), path, one_line=False)


def test_mapping_csv_with_5000_digits(ws, tmp_path):
    relu = rb.relu_dump(ws)
    hashed = relu.with_name("1234567890123456789")
    relu.rename(hashed)
    fields = relu.name.split(".")
    fields[2] = HUGE
    append_mapping_row(hashed.parent, (hashed.name, ".".join(fields)))
    done = tool(ws, "dc", hashed, "-o", tmp_path / "out")
    assert_clean(done, codes=(2,))
    text = done.out + done.err
    assert hashed.name in text or "mapping.csv" in text, repr(done)


@pytest.mark.parametrize("kind", SWAPS + ("dangling",))
@pytest.mark.parametrize("command", ["compare", "dc", "ov --scan"])
def test_an_unreadable_mapping_csv_does_not_silently_drop_hashed_dumps(ws, tmp_path, kind, command):
    """The Relu dump stored under a hashed name, its mapping.csv swapped for something unreadable: the
    campaign found ``compare`` exiting 0 without the Relu. Every command that scans the folder names the
    hashed file and exits 2."""
    relu = rb.relu_dump(ws)
    hashed = relu.with_name("16874986667008813088")
    relu.rename(hashed)
    swap(Path(append_mapping_row(hashed.parent, (hashed.name, relu.name))), kind)
    args = {"compare": ["compare", "-o", tmp_path / "out"], "dc": ["dc", hashed.parent, "-o", tmp_path / "out"],
            "ov --scan": ["ov", "--scan", hashed.parent]}[command]
    done = tool(ws, *args)
    assert_clean(done, codes=(2,))
    assert_names(done, hashed)
    assert "mapping.csv" in done.out + done.err


@pytest.mark.parametrize("column,value", [("Index", HUGE), ("Index", "²"), ("TensorIndex", "relu1/Relu:output:²"),
                                          ("TensorIndex", f"relu1/Relu:output:{HUGE}")])
@pytest.mark.parametrize("command", ["vcs", "report"])
def test_result_csv_numbers(result, tmp_path, column, value, command):
    folder, csv_path = result
    for other in folder.iterdir():
        if other != csv_path:
            other.unlink()  # the CSV alone, as msaccucmp writes it
    lines = csv_path.read_text(encoding="utf-8-sig").splitlines()
    header = lines[0].split(",")
    cells = lines[1].split(",")
    cells[header.index(column)] = value
    lines[1] = ",".join(cells)
    csv_path.write_text("\r\n".join(lines) + "\r\n", encoding="utf-8")
    args = ["-f", csv_path] + (["-o", tmp_path / "r.html"] if command == "report" else [])
    assert_unusable(tool(tmp_path / "ws", command, *args), csv_path, one_line=False)


@pytest.mark.parametrize("slot", [HUGE, "²", "-1"])
def test_tfdbg_v1_slot(ws, tmp_path, slot):
    run = rb.v1_run(ws, {"a": np.ones(2, np.float32), "b": np.ones(3, np.float32)},
                    node_names={"b": f"b:{slot}:DebugIdentity"})
    done = tool(ws, "tf_dump", "-i", run, "-o", tmp_path / "out")
    assert_clean(done, codes=(2,))
    assert_names(done, rb.v1_tensor_path(run, "b"))


# ------------------------------------------------------------------------------------------ tfdbg v2
@pytest.mark.parametrize("change", ["wall_time_nan", "wall_time_inf", "slot_-1", "nul_name"])
def test_tfdbg_v2_trace(ws, tmp_path, change):
    trace = ["relu", "Relu", 0, np.ones(3, np.float32), 1700000000.5]
    if change == "wall_time_nan":
        trace[4] = float("nan")
    elif change == "wall_time_inf":
        trace[4] = float("inf")
    elif change == "slot_-1":
        trace[2] = -1
    else:
        trace[0] = "re\x00lu"
    folder = ws / "tf" / "v2"
    write_tfdbg_v2_dump(folder, [("ok", "Relu", 0, np.ones(2, np.float32), 1700000000.25), tuple(trace)])
    done = tool(ws, "tf_dump", "-i", folder, "-o", tmp_path / "out")
    assert_clean(done, codes=(2,))
    assert_names(done, next(folder.glob("*.graph_execution_traces")))


# ------------------------------------------------------------------------------------------ summary.json
@pytest.mark.parametrize("damage", ["counts_list", "threshold_text", "inputs_number", "failing_dict", "deep"])
@pytest.mark.parametrize("command", ["vcs", "report"])
def test_summary_json_damaged(result, tmp_path, damage, command):
    folder, _ = result
    summary_path = folder / "summary.json"
    summary = json.loads(summary_path.read_text())
    if damage == "deep":
        text = json.dumps(summary)[:-1] + ', "deep": ' + "[" * 100_000 + "]" * 100_000 + "}"
    else:
        key, value = {"counts_list": ("counts", []), "threshold_text": ("cosine_threshold", "high"),
                      "inputs_number": ("inputs", 5), "failing_dict": ("failing", {"a": 1})}[damage]
        summary[key] = value
        text = json.dumps(summary)
    summary_path.write_text(text)
    args = ["-f", folder] + (["-o", tmp_path / "r.html"] if command == "report" else [])
    assert_unusable(tool(tmp_path / "ws", command, *args), summary_path, one_line=False)


# ------------------------------------------------------------------------------------------ .npy headers
@pytest.mark.parametrize("header", [
    "{'descr': '<f4', 'fortran_order': False, 'shape': (1,",        # tokenize.TokenError before
    "{'descr': '<f4\", 'fortran_order': False, 'shape': (1,), }",
])
def test_npy_damaged_header(ws, header):
    ref = rb.relu_reference(ws)
    ref.write_bytes(rb.npy_file(header, np.ones(1, "<f4").tobytes()))
    assert_unusable(tool(ws, "pt", ref), ref)


def test_npy_v2_header_declaring_4_gib(ws):
    ref = rb.relu_reference(ws)
    ref.write_bytes(rb.npy_file("{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }",
                                np.ones(1, "<f4").tobytes(), version=2, header_len=0xFFFFFFFF))
    assert_unusable(tool(ws, "pt", ref), ref)


# ------------------------------------------------------------------------------------------ non-regular files
def _fusion_switch(ws):
    path = ws / "fusion" / "fusion_switch.cfg"
    path.parent.mkdir(exist_ok=True)
    path.write_text('{"Switch": {"GraphFusion": {"ALL": "on"}}}')
    return path


def _tf_dump_target(ws):
    run = rb.v1_run(ws, {"a": np.ones(2, np.float32), "b": np.ones(3, np.float32)})
    return rb.v1_tensor_path(run, "b")


@pytest.mark.parametrize("kind", SWAPS)
@pytest.mark.parametrize("target", ["ge2json", "compare -f", "fusion switch", "tf_dump", "vcs", "report"])
def test_non_regular_input(ws, tmp_path, result, kind, target):
    folder, csv_path = result
    if target == "ge2json":
        path = swap(ws / rb.GRAPH_FILE, kind)
        done = tool(ws, "ge2json", path, "-o", tmp_path / "g.json")
    elif target == "compare -f":
        path = swap(tmp_path / "graph.json", kind)
        done = tool(ws, "compare", "-f", path, "-o", tmp_path / "out")
    elif target == "fusion switch":
        path = swap(_fusion_switch(ws), kind)
        argv = [sys.executable, str(Path(campaign.__file__).with_name("entry_points.py")), "fusion_switch", str(path)]
        done = Result(argv, *campaign.run_limited(argv, tmp_path, TIMEOUT))
    elif target == "tf_dump":
        path = swap(_tf_dump_target(ws), kind)
        done = tool(ws, "tf_dump", "-o", tmp_path / "out")
    else:
        path = swap(csv_path, kind)
        done = tool(ws, target, "-f", path, *(["-o", tmp_path / "r.html"] if target == "report" else []))
    assert_unusable(done, path, one_line=target not in ("tf_dump",))


# ------------------------------------------------------------------------------------------ pt: linear
def test_pt_parses_a_dump_header_once_however_many_tensors(ws, monkeypatch, capsys):
    """4,000 tensors took 60 s: the header was parsed again per tensor. Counted, not timed (the speed is
    measured in benchmarks)."""
    from precision_tool.cli import main
    from precision_tool.formats import dump_file

    big = ws / rb.DUMP_DIR / rb.dump_name("Relu", "big", 8)
    big.write_bytes(build_dump_bytes("big", outputs=[np.full(1, i % 7, np.float16) for i in range(2_000)],
                                     dump_time=rb.TS))
    parses = []
    real = dump_file.DUMP_RECORDS.decode
    monkeypatch.setattr(dump_file.DUMP_RECORDS, "decode", lambda name, data: parses.append(name) or real(name, data))
    assert main(["-d", str(ws), "pt", str(big)]) == 0
    assert len(parses) == 1
    assert capsys.readouterr().out.count(":output:") >= 2_000  # every tensor listed


# ------------------------------------------------------------------------------------------ silent successes
def test_corrupt_only_opdebug_record_is_not_no_overflow(ws):
    folder = ws / rb.OVERFLOW_DIR
    folder.mkdir(parents=True)
    record = write_overflow_record(folder, bytes(100), timestamp=rb.TS + 9, task_id=3, stream_id=1)
    inf = np.array([[1.0, np.inf, 3.0], [4.0, 5.0, 6.0]], np.float32)
    (folder / rb.dump_name("Relu", rb.RELU, 1)).write_bytes(
        build_dump_bytes(rb.RELU, inputs=[rb.values()["input"]], outputs=[inf], dump_time=rb.TS + 1))
    done = tool(ws, "ov")
    assert_clean(done, codes=(1,))  # the rule (errors.batch_exit_code): the overflow beside it is a finding
    assert_names(done, record)


@pytest.mark.parametrize("kind", SWAPS + ("dangling",))
@pytest.mark.parametrize("args", [("ac",), ("ac", "-c", "--no-replay", "-o", "{out}")])
def test_ac_with_only_an_unreadable_opdebug_record_is_not_all_clear(ws, tmp_path, kind, args):
    """The clean tiny workspace plus an overflow run whose one record cannot be read: ``ov`` exits 2, and so
    must ``ac`` -- alone and with a comparison where every tensor passes -- naming the record."""
    folder = ws / rb.OVERFLOW_DIR
    folder.mkdir(parents=True)
    record = write_overflow_record(folder, bytes(100), timestamp=rb.TS + 9, task_id=3, stream_id=1)
    record = swap(Path(record), kind)
    done = tool(ws, *(arg.format(out=tmp_path / "out") for arg in args))
    assert_clean(done, codes=(2,))
    assert_names(done, record)


@pytest.mark.parametrize("kind", SWAPS + ("dangling",))
@pytest.mark.parametrize("args", [("ls",), ("ls", "-t", "Relu"), ("ni", rb.RELU)])
def test_ls_and_ni_without_their_unreadable_build_graph_exit_2(ws, kind, args):
    """With the only Build graph unreadable, ``ls``/``ni`` fall back to the dump files -- a listing that may
    lack every op the graph holds -- so they name the graph and exit 2, as the fuzz campaign found."""
    graph_file = swap(ws / rb.GRAPH_FILE, kind)
    done = tool(ws, *args)
    assert_clean(done, codes=(2,))
    assert_names(done, graph_file)
    assert "relu1" in done.out.lower()  # the fallback listing is still shown


@pytest.mark.parametrize("text", ['{"session_and_graph_id_0_1": {"graph_fusion": ', "[1, 2]", "\x00\x01"])
def test_broken_fusion_result_is_not_exit_0(ws, text):
    path = ws / "fusion" / "fusion_result.json"
    path.parent.mkdir()
    path.write_text(text)
    done = tool(ws, "fusion", "--no-compare")
    assert_clean(done, codes=(2,))
    assert_names(done, path)


def test_dump_with_header_length_0_is_not_converted(ws, tmp_path):
    bad = ws / rb.DUMP_DIR / rb.dump_name("Relu", "zero_header", 5)
    bad.write_bytes(b"\0" * 8 + b"\x0a\x03abc")
    done = tool(ws, "dc", ws / rb.DUMP_DIR, "-o", tmp_path / "out")
    assert_clean(done, codes=(2,))
    assert_names(done, bad)


@pytest.mark.parametrize("command", ["compare", "dc"])
def test_fifo_named_like_a_dump(ws, tmp_path, command):
    fifo = swap(rb.relu_dump(ws), "fifo")
    args = ["compare", "-o", tmp_path / "out"] if command == "compare" else ["dc", ws / rb.DUMP_DIR, "-o",
                                                                            tmp_path / "out"]
    done = tool(ws, *args)
    assert_clean(done, codes=(2,))
    assert_names(done, fifo)


@pytest.mark.parametrize("kind", ["dangling", "fifo", "folder"])
def test_unreadable_reference_is_not_no_reference(ws, tmp_path, kind):
    ref = swap(rb.relu_reference(ws), kind)
    done = tool(ws, "compare", "-o", tmp_path / "out")
    assert_clean(done, codes=(2,))
    assert_names(done, ref)


@pytest.mark.parametrize("kind", ["dangling", "fifo", "folder", "truncated"])
def test_pt_of_an_unreadable_reference_names_the_file(ws, kind):
    """``pt relu1/Relu:0`` when the reference file is unreadable: not "no reference tensor" but the file and
    its cause, exit 2."""
    ref = rb.relu_reference(ws)
    if kind == "truncated":
        ref.write_bytes(ref.read_bytes()[:70])
    else:
        swap(ref, kind)
    done = tool(ws, "pt", f"{rb.RELU}:0")
    assert_unusable(done, ref)
    assert "no reference tensor" not in done.err


def test_two_truncated_references_are_both_named(ws, tmp_path):
    refs = [p for p in (ws / rb.REF_DIR).iterdir() if not p.name.startswith("input.")]
    for ref in refs:
        ref.write_bytes(ref.read_bytes()[:70])
    done = tool(ws, "compare", "-o", tmp_path / "out")
    assert_clean(done, codes=(2,))
    assert_names(done, *refs)


# ------------------------------------------------------------------------------------------ control characters
EVIL = "relu1/Re\x1b[31mlu\x07\x9b2J\x7f"


@pytest.mark.parametrize("args", [
    ("compare", "-o", "{out}"), ("vcs", "-f", "{out}"), ("dc", "{dumps}", "-o", "{out2}"), ("ni", EVIL),
    ("pt", "{dump}"), ("cp", "{dump}", "{ref}"), ("ls",), ("ac", "-c", "--no-replay", "-o", "{out3}"),
    ("ov", "--scan", "{dumps}")])
def test_control_characters_in_op_names_never_reach_the_terminal(tmp_path, args):
    ws = rb.tiny_workspace(tmp_path / "ws", relu=EVIL, planted=True)  # failing, so every report lists it
    out = tmp_path / "out"
    if args[0] == "vcs":
        assert tool(ws, "compare", "-o", out).code in (0, 1)
    values = dict(out=out, out2=tmp_path / "out2", out3=tmp_path / "out3", dumps=ws / rb.DUMP_DIR,
                  dump=rb.relu_dump(ws, EVIL), ref=next(p for p in (ws / rb.REF_DIR).iterdir() if "Re" in p.name))
    done = tool(ws, *[a.format(**values) if "{" in a else a for a in args])
    assert_clean(done, codes=(0, 1))


# ------------------------------------------------------------------------------------------ writing into inputs
def test_dc_output_inside_the_dump_folder_is_refused(ws):
    relu = rb.relu_dump(ws)
    done = tool(ws, "dc", relu, "-o", ws / rb.DUMP_DIR / "sub")
    assert_clean(done, codes=(2,))
    assert not (ws / rb.DUMP_DIR / "sub").exists()


def test_pt_save_inside_the_dump_folder_is_refused(ws):
    folder = ws / rb.DUMP_DIR
    done = tool(folder, "pt", rb.relu_dump(ws), "-s")
    assert_clean(done, codes=(2,))
    assert not (folder / "temp").exists()


def test_ge2json_cannot_write_a_build_graph_into_the_graph_folder(ws):
    target = ws / rb.GRAPH_DIR / "ge_proto_00000002_Build.txt"
    done = tool(ws, "ge2json", ws / rb.GRAPH_FILE, "-o", target)
    assert_clean(done, codes=(2,))
    assert not target.exists()


# ------------------------------------------------------------------------------------------ concurrency
def _result_csv(done: Result) -> str:
    summary = json.loads(Path(next(line.split(":", 1)[1].strip() for line in done.out.splitlines()
                                   if line.startswith("Summary:"))).read_text())
    return summary["result_csv"]


def test_two_compares_into_one_folder_never_share_a_result(ws, tmp_path):
    out = tmp_path / "out"
    for _ in range(4):
        argv = [sys.executable, "-m", "precision_tool", "-d", str(ws), "compare", "-o", str(out), "--workers", "1"]
        env = dict(os.environ, PYTHONPATH=str(campaign.seedlib.REPO))
        procs = [subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  text=True, env=env) for _ in range(2)]
        outputs = [p.communicate(timeout=60) for p in procs]
        assert [p.returncode for p in procs] == [0, 0], outputs
        lines = [[line for line in o.splitlines() if line.startswith("Result:")] for o, _ in outputs]
        paths = [line[0].split(":", 1)[1].strip() for line in lines]
        assert paths[0] != paths[1], f"both runs wrote {paths[0]}"
        assert all(os.path.isfile(p) for p in paths)


def test_stale_temp_files_are_cleaned_on_the_next_run(ws, tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    stale = out / f".precision_tool-{dead.pid}-0123456789ab.tmp"
    stale.write_bytes(b"half a CSV")
    old = time.time() - 3 * 86400
    os.utime(stale, (old, old))
    done = tool(ws, "compare", "-o", out)
    assert_clean(done, codes=(0,))
    assert not stale.exists()
    # and the run says so (issue 40: the leftovers went without a word)
    assert f"Removed 1 file(s) that runs killed while writing had left ({stale.name})." in done.out


def test_a_result_name_claimed_by_a_killed_run_is_released_on_the_next_run(ws, tmp_path):
    """A run killed between taking its result name and writing its lossless file left an empty
    ``result_{ts}.jsonl`` forever. A process takes a name and dies without writing (SIGKILL); another
    still-running one holds a name too: the next compare removes only the dead one's placeholder."""
    out = tmp_path / "out"
    out.mkdir()
    claim = ("import sys, os, signal; from precision_tool.reports.result_outputs import take_result_name; "
             "print(take_result_name(sys.argv[1], sys.argv[2]), flush=True); {end}")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    dead = subprocess.run([sys.executable, "-c", claim.format(end="os.kill(os.getpid(), signal.SIGKILL)"),
                           str(out), "20000101000000"], stdout=subprocess.PIPE, env=env, universal_newlines=True)
    alive = subprocess.Popen([sys.executable, "-c", claim.format(end="sys.stdin.read()"), str(out),
                              "20000101000001"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env,
                             universal_newlines=True)
    try:
        alive_csv = alive.stdout.readline().strip()
        dead_placeholder = out / (Path(dead.stdout.strip()).stem + ".jsonl")
        alive_placeholder = out / (Path(alive_csv).stem + ".jsonl")
        assert dead.returncode == -9 and dead_placeholder.exists() and alive_placeholder.exists()
        done = tool(ws, "compare", "-o", out)
        assert_clean(done, codes=(0,))
        assert not dead_placeholder.exists()
        assert alive_placeholder.exists()  # a live run's claim is never touched
    finally:
        alive.communicate("")
    assert len(list(out.glob("result_*.csv"))) == 1  # only the compare's: a placeholder is never a result


def test_summary_is_written_after_the_result_rows(ws, tmp_path):
    out = tmp_path / "out"
    done = tool(ws, "compare", "-o", out)
    assert_clean(done, codes=(0,))
    summary = out / "summary.json"
    csv_path = out / json.loads(summary.read_text())["result_csv"]
    rows = [csv_path] + list(out.glob("result_*.jsonl"))
    assert all(summary.stat().st_mtime_ns >= row.stat().st_mtime_ns for row in rows)


# ------------------------------------------------------------------------------- issue 40: silent acceptances
def test_an_opdebug_data_len_past_the_end_names_the_record(ws):
    """A new-layout record whose ``data_len`` is 2**32-1 (its status is 24 + 8 * 11 bytes) was decoded as valid:
    ``ov`` exited 1 on the overflow beside it and never named the record. A length past the end is damage; the
    overflow beside it still decides the exit (a finding wins over unreadable input: exit 1). (The emulated samples
    write the old 2048-byte layout, which has no data_len.)"""
    import struct

    from precision_tool.formats.opdebug import MAGIC, _new_word_count

    folder = ws / rb.OVERFLOW_DIR
    folder.mkdir(parents=True)
    words = _new_word_count("AIC", 0)
    status = struct.pack("<6I", MAGIC, 0, 1, 0, 0, 0xFFFFFFFF) + bytes(8 * words)
    record = write_overflow_record(folder, status, timestamp=rb.TS + 9, task_id=3, stream_id=1)
    inf = np.array([[1.0, np.inf, 3.0], [4.0, 5.0, 6.0]], np.float32)
    (folder / rb.dump_name("Relu", rb.RELU, 1)).write_bytes(
        build_dump_bytes(rb.RELU, inputs=[rb.values()["input"]], outputs=[inf], dump_time=rb.TS + 1))
    done = tool(ws, "ov")
    assert_clean(done, codes=(1,))
    assert_names(done, record)
    assert f"data_len 4294967295 runs past the end of the status ({24 + 8 * words} bytes" in done.out + done.err


def test_an_empty_fusion_switch_file_is_refused_saying_what_no_switches_is(tmp_path):
    """A 0-byte fusion_switch.cfg was read as "no switches"; the NPU would get it unchecked."""
    path = tmp_path / "fusion" / "fusion_switch.cfg"
    path.parent.mkdir()
    path.write_bytes(b"")
    entry = Path(__file__).resolve().parent / "entry_points.py"
    code, out, err, timed_out, _ = campaign.run_limited([sys.executable, str(entry), "fusion_switch", str(path)],
                                                         tmp_path, TIMEOUT)
    assert code == 2 and not timed_out
    assert err.strip() == (f"precision_tool: error: {path}: is empty, which is no switch file: the NPU run would "
                           "hand it to GE unchecked, and what GE does with it is not documented; for no switches "
                           'write {"Switch": {"GraphFusion": {}, "UBFusion": {}}}')
    assert path.read_bytes() == b""  # the user's file is never rewritten


def test_a_failed_tf_dump_into_a_new_workspace_leaves_nothing(tmp_path):
    """``tf_dump -d NEW`` of a capture whose one tensor file is cut: exit 2 naming the file, and no ``NEW`` (it
    left ``NEW/tf/graph`` and ``NEW/tf/dump``, empty)."""
    run = rb.v1_run(tmp_path / "capture", {"x": np.ones(4, np.float32)})
    path = next(p for p in run.rglob("*") if p.is_file() and "DebugIdentity" in p.name)
    path.write_bytes(path.read_bytes()[:10])
    new = tmp_path / "NEW"
    done = tool(new, "tf_dump", "-i", run)
    assert_unusable(done, path)
    assert not new.exists()


SAMPLE_DUMPS = Path(__file__).resolve().parents[2] / "sample_dumps" / "cnn_workspace" / "npu" / "debug_0" / "dump"


@pytest.mark.parametrize("what", ["data_type", "size", "shape", "format"])
@pytest.mark.parametrize("command", ["pt", "dc"])
def test_a_tensor_field_under_a_wrong_wire_type_is_named_not_read_as_its_default(tmp_path, what, command):
    """Issue 40: with output 0's data type, size or a dimension under another wire type, protobuf skips the field
    (checked here with protobuf's own parser), leaving DT_UNDEFINED, size 0 or a shorter shape; dc and pt said
    "all tensors converted", exit 0. Now: exit 2, the file and the field named."""
    import struct

    from precision_tool.formats.dump_schema import DumpData

    source = next(SAMPLE_DUMPS.rglob("Add.small_cnn_1_res_add_1_Add.*"))
    target = tmp_path / "dumps" / source.name
    target.parent.mkdir()
    target.write_bytes(mutlib.retyped_tensor_field(source.read_bytes(), "output", 0, what))
    def output_0(path):  # as protobuf's own parser reads it
        (length,) = struct.unpack_from("<Q", path.read_bytes())
        return DumpData.FromString(path.read_bytes()[8:8 + length]).output[0]

    skipped, original = output_0(target), output_0(source)
    assert {"data_type": skipped.data_type == 0 != original.data_type, "size": skipped.size == 0 != original.size,
            "shape": list(skipped.shape.dim) == list(original.shape.dim)[1:],
            "format": skipped.format == 0 != original.format}[what]
    args = ("pt", target) if command == "pt" else ("dc", target, "-o", tmp_path / "out")
    done = tool(tmp_path, *args)
    assert_unusable(done, target, one_line=False)
    field_name = what.replace("_", " ")
    assert f"output 0: its {what} field has a wire type its type never has (protobuf skips it), so the " \
           f"{field_name} is unknown" in done.out + done.err


@pytest.mark.parametrize("damage", ["folder", "dtype"])
def test_a_reference_tensor_tf_dump_cannot_convert_is_not_compared_not_missing(ws, damage):
    """Issue 40: a tfdbg tensor file replaced by a folder (it was skipped without a word), or a TensorProto whose
    data type is no TensorFlow data type (a 'non-numeric' note), with tf_dump exiting 0 and compare then finding
    the op's reference missing. Now tf_dump exits 2 naming the file, records the tensor as not converted, and
    compare shows the op's tensors as not compared with that reason (exit 2: an input could not be used)."""
    from precision_tool.formats import tf_schema

    shutil.rmtree(ws / rb.REF_DIR)
    tensors = dict(rb.values())
    if damage == "dtype":
        broken = tf_schema.TensorProto(dtype=99, tensor_content=bytes(24))
        for size in rb.SHAPE:
            broken.tensor_shape.dim.add(size=size)
        tensors["relu"] = broken
    run = rb.v1_run(ws, {"input": tensors["input"], rb.RELU: tensors["relu"], "out/Add": tensors["out/Add"]})
    bad = next(p for p in run.rglob("*") if "Relu_0_DebugIdentity" in p.name)
    if damage == "folder":
        bad.unlink()
        bad.mkdir()
    converted = tool(ws, "tf_dump")
    assert_clean(converted, codes=(2,))
    assert_names(converted, bad)
    record = json.loads((ws / rb.REF_DIR / "tf_dump_run.json").read_text())
    assert [item["file"] for item in record["failed"]] == ["relu1_Relu.0.0000000000000000.npy"]
    compared = tool(ws, "compare", "-o", ws.parent / "out")
    assert_clean(compared, codes=(2,))
    assert "unreadable, not compared: not converted by tf_dump: " in compared.out
    (csv_path,) = (ws.parent / "out").glob("result_*.csv")
    rows = {line.split(",")[7]: line for line in csv_path.read_text().splitlines()[1:]}
    for tensor in (f"{rb.RELU}:output:0", "out/Add:input:0"):  # the op's output, and the input that reads it
        assert "NOT_COMPARED: the reference file could not be read: not converted by tf_dump: " in rows[tensor]
    summary = json.loads((ws.parent / "out" / "summary.json").read_text())
    assert [path for path, _ in summary["coverage"]["unreadable_references"]] == [
        str(ws / rb.REF_DIR / "relu1_Relu.0.0000000000000000.npy")]
    unaligned = dict(summary["coverage"]["unaligned"])
    assert unaligned and all("not converted by tf_dump" in reason for reason in unaligned.values()), unaligned
