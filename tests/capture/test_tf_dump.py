"""``tf_dump`` on dumps written by the tfdbg writers (no TensorFlow): runs, naming, skips, repeats, memory."""
import json
import os
import subprocess
import sys
import tracemalloc

import numpy as np
import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), os.pardir, "formats"))

from precision_tool.cli import main
from precision_tool.commands.command_registry import Context
from precision_tool.commands.tf_dump import COMMAND, find_runs
from precision_tool.errors import WorkspaceError
from precision_tool.formats import tf_schema, tf_tensor
from precision_tool.formats.npy_dir import read_npy_dir
from precision_tool.formats.tfdbg_v1 import write_tfdbg_v1_tensor
from precision_tool.formats.tfdbg_v2 import write_tfdbg_v2_dump
from tfdbg_builders import write_graph as write_graph_file

US = 1_700_000_000_000_000


def write_graph(run, ops):
    write_graph_file(run, ops, "hash123")


def run_dir(capture, stamp, counter=0):
    return capture / f"run_{stamp}_{counter}"



def dispatch(argv, data_dir):
    from precision_tool.commands.command_registry import CommandRegistry
    return CommandRegistry([COMMAND]).dispatch(["tf_dump", *argv], Context(data_dir=str(data_dir)))


def _npy(folder):
    """The reference files of ``folder`` (not its tf_dump_run.json record)."""
    return sorted(name for name in os.listdir(folder) if name.endswith(".npy"))


@pytest.fixture
def ws(tmp_path):
    return tmp_path / "precision_data"


def test_newest_v1_run_becomes_the_flat_reference_folder(ws):
    capture = ws / "tf" / "tf_debug" / "20240101000000"
    old, new = run_dir(capture, US, 0), run_dir(capture, US + 10, 1)
    write_tfdbg_v1_tensor(old, "conv1/relu", 0, np.zeros((2, 2), np.float32), US + 1)
    conv = np.arange(8, dtype=np.float32).reshape(2, 4)
    write_tfdbg_v1_tensor(new, "conv1/conv", 0, conv, US + 11)
    write_tfdbg_v1_tensor(new, "block.1/relu", 1, np.array([1, -2], np.int64), US + 12)
    write_graph(new, {"conv1/conv": "Conv2D", "block.1/relu": "Relu"})
    report = dispatch([], ws)
    out = ws / "tf" / "dump"
    assert _npy(out) == [f"block_1_relu.1.{US + 12:016d}.npy", f"conv1_conv.0.{US + 11:016d}.npy"]
    assert np.array_equal(np.load(out / f"conv1_conv.0.{US + 11:016d}.npy", allow_pickle=False), conv)
    assert report.blocks[0].rows == [
        ["conv1/conv", 0, "Conv2D", "DT_FLOAT", "[2, 4]", f"conv1_conv.0.{US + 11:016d}.npy"],
        ["block.1/relu", 1, "Relu", "DT_INT64", "[2]", f"block_1_relu.1.{US + 12:016d}.npy"]]
    assert report.status == ("wrote 2 tensors (0.0 MiB); skipped 0 resource handles and 0 non-numeric tensors; "
                             "0 op outputs repeated (kept the last); kept 1 graph")
    assert report.exit_code == 0 and report.data["run"] == str(new)
    graph_file = f"graph_run_{US + 10}_1_job_localhost_replica_0_task_0_device_CPU_0.pb"
    assert [g["file"] for g in report.data["graphs"]] == [graph_file]
    refs = read_npy_dir(out)
    assert [(r.file_op_name, r.output_index) for r in refs] == [("block_1_relu", 1), ("conv1_conv", 0)]


def test_run_option_and_list_cover_every_capture_oldest_first(ws):
    root = ws / "tf" / "tf_debug"
    write_tfdbg_v1_tensor(run_dir(root / "a", US, 0), "x", 0, np.ones(1, np.float32), US)
    write_tfdbg_v2_dump(root / "b", [("y", "Relu", 0, np.ones(2, np.float32), 1_800_000_000.0)],
                        file_stem="tfdbg_events.1800000000.host")
    write_tfdbg_v1_tensor(run_dir(root / "a", US + 5, 1), "z", 0, np.ones(3, np.float32), US + 5)
    runs = find_runs(str(root))
    assert [(r.version, os.path.basename(r.path)) for r in runs] == [
        (1, f"run_{US}_0"), (1, f"run_{US + 5}_1"), (2, "b")]
    listing = dispatch(["--list"], ws)
    assert [row[:3] for row in listing.blocks[0].rows] == [[0, -3, "v1"], [1, -2, "v1"], [2, -1, "v2"]]
    assert dispatch([], ws).data["tensors"][0]["op_name"] == "y"
    assert dispatch(["--run", "1", "--clean"], ws).data["tensors"][0]["op_name"] == "z"
    assert _npy(ws / "tf" / "dump") == [f"z.0.{US + 5:016d}.npy"]
    with pytest.raises(WorkspaceError, match=r"run 3 does not exist \(3 run\(s\); see 'tf_dump --list'\)"):
        dispatch(["--run", "3"], ws)


@pytest.mark.compat
def test_several_v1_runs_in_one_capture_say_which_one_was_converted(ws):
    """sess_dump writes one run per Session.run; the NPU dumps dump_step 0 by default, so the report says
    which run it converted and how to pick another (review finding: the newest was taken silently)."""
    root = ws / "tf" / "tf_debug"
    write_tfdbg_v1_tensor(run_dir(root / "a", US - 9, 0), "old", 0, np.ones(1, np.float32), US - 9)
    capture = root / "b"
    for step in range(3):
        write_tfdbg_v1_tensor(run_dir(capture, US + step, step), "loss", 0, np.float32([step]), US + step)
    report = dispatch([], ws)
    note = (f"Converted run_{US + 2}_2 (--run 3), the newest of the 3 runs (Session.run calls) in {capture}; the "
            "NPU dumps the step its dump_step selects (default 0): pick the matching run with --run N (this "
            "folder: 1 to 3; tf_dump --list shows them).")
    assert report.blocks[1].lines[:2] == ["Notes:", note] and report.data["run_choice"] == note
    first = dispatch(["--run", "1", "--clean"], ws)
    assert first.data["run_choice"].startswith(f"Converted run_{US}_0 (--run 1), the oldest of the 3 runs")
    assert dispatch(["--run", "-2", "--clean"], ws).data["run_choice"].startswith(
        f"Converted run_{US + 1}_1 (--run 2), number 2 of the 3 runs")
    # a capture folder with one run (here "a") needs no such note
    only = dispatch(["--run", "0", "--clean"], ws)
    assert only.data["run_choice"] == "" and all("Converted run_" not in line
                                                 for block in only.blocks[1:] for line in block.lines)


def test_resources_and_strings_are_skipped_and_counted(ws):
    run = run_dir(ws / "tf" / "tf_debug" / "c", US)
    handle = tf_schema.TensorProto(dtype=tf_tensor.DT_RESOURCE, resource_handle_val=[b"\x0a\x01d"])
    write_tfdbg_v1_tensor(run, "w", 0, handle, US)
    names = tf_schema.TensorProto(dtype=7, string_val=[b"a"])
    names.tensor_shape.dim.add(size=1)
    write_tfdbg_v1_tensor(run, "names", 0, names, US + 1)
    write_tfdbg_v1_tensor(run, "w/read", 0, np.ones(3, np.float16), US + 2)
    report = dispatch([], ws)
    assert report.data["skipped_resources"] == 1 and report.data["skipped_non_numeric"] == ["names:0 (DT_STRING)"]
    assert "skipped 1 resource handles and 1 non-numeric tensors" in report.status
    assert _npy(ws / "tf" / "dump") == [f"w_read.0.{US + 2:016d}.npy"]


def test_repeated_v2_outputs_are_all_kept_and_the_report_says_so(ws):
    folder = ws / "tf" / "tf_debug" / "v2"
    traces = [("loop/add", "AddV2", 0, np.array([float(i)], np.float32), 1_700_000_000.0 + i) for i in range(3)]
    traces.append(("out", "Identity", 0, np.array([9.0], np.float32), 1_700_000_010.0))
    write_tfdbg_v2_dump(folder, traces)
    report = dispatch([], ws)
    files = _npy(ws / "tf" / "dump")
    assert files == ["loop_add.0.1700000000000000.npy", "loop_add@1.0.1700000001000000.npy",
                     "loop_add@2.0.1700000002000000.npy", "out.0.1700000010000000.npy"]
    assert np.load(ws / "tf" / "dump" / files[2]).tolist() == [2.0]
    assert report.data["repeated"] == {"loop/add:0": 3}
    assert ("1 op outputs were executed more than once in this run (several function calls, or a loop); "
            "kept every execution, the first under the op's name and the others as name@1, name@2, ...: "
            "loop/add:0 x3.") in report.blocks[1].lines


def test_fused_ops_and_leftover_files_are_noted(ws):
    run = run_dir(ws / "tf" / "tf_debug" / "c", US)
    write_tfdbg_v1_tensor(run, "conv1/relu", 0, np.ones((1, 2), np.float32), US)
    write_graph(run, {"conv1/relu": "_FusedConv2D"})
    out = ws / "tf" / "dump"
    out.mkdir(parents=True)
    (out / "stale_op.0.1600000000000000.npy").write_bytes(b"")
    with pytest.raises(WorkspaceError) as refused:  # a file no conversion recorded: not deleted, not mixed in
        dispatch([], ws)
    assert str(refused.value) == (f"{out}: holds 1 reference file(s) that no tf_dump conversion recorded (e.g. "
                                  "stale_op.0.1600000000000000.npy); converting "
                                  f"{os.path.basename(run)} beside them would mix two runs (pass --clean to delete "
                                  "them first, or -o another folder)")
    assert sorted(os.listdir(out)) == ["stale_op.0.1600000000000000.npy"]
    report = dispatch(["--clean"], ws)
    notes = " ".join(report.blocks[1].lines)
    assert "Fused ops in the reference (1 _FusedConv2D)" in notes
    # sess_dump no longer turns Grappler off: the hint names the session config (review finding)
    assert "Grappler off -- tf.Session(config=npu_tf_config.reference_session_config(config)) --" in notes
    assert "sess_dump" not in notes
    assert f"Deleted the 1 reference file {out} held first (--clean): it holds this run only." in notes
    assert report.data["fused_op_types"] == {"_FusedConv2D": 1}


def test_name_collisions_after_replacement_are_noted(ws):
    run = run_dir(ws / "tf" / "tf_debug" / "c", US)
    write_tfdbg_v1_tensor(run, "a/b", 0, np.ones(1, np.float32), US)
    write_tfdbg_v1_tensor(run, "a_b", 0, np.ones(1, np.float32), US + 1)
    report = dispatch([], ws)
    assert report.data["name_collisions"] == {"a_b": ("a/b", "a_b")}


def test_empty_or_missing_captures_are_one_line_errors(ws, tmp_path):
    with pytest.raises(WorkspaceError, match=r"tf_debug: no such folder \(capture a reference first"):
        dispatch([], ws)
    (ws / "tf" / "tf_debug" / "empty").mkdir(parents=True)
    with pytest.raises(WorkspaceError, match="no tfdbg run here or in its sub-folders"):
        dispatch([], ws)
    write_tfdbg_v2_dump(tmp_path / "v2", [])
    with pytest.raises(WorkspaceError,
                       match=r"the run holds no tensor with values \(enable_reference_dump\(\) must run"):
        dispatch(["-i", str(tmp_path / "v2")], ws)


def test_output_inside_the_input_is_refused(ws):
    root = ws / "tf" / "tf_debug"
    write_tfdbg_v1_tensor(run_dir(root / "c", US), "x", 0, np.ones(1, np.float32), US)
    with pytest.raises(WorkspaceError, match="output folder would be inside the input"):
        dispatch(["-o", str(root / "c" / "out")], ws)


def test_converts_tensor_by_tensor(ws):
    """24 MiB of tensors go through with a peak far below their sum: one tensor at a time."""
    run = run_dir(ws / "tf" / "tf_debug" / "big", US)
    for i in range(12):
        write_tfdbg_v1_tensor(run, f"layer{i}/out", 0, np.full((512, 1024), i, np.float32), US + i)
    tracemalloc.start()
    try:
        report = dispatch([], ws)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert report.data["written"] == 12 and report.data["bytes"] == 12 * 2 ** 21
    assert peak < 3 * 2 ** 21, f"peak {peak / 2**20:.1f} MiB"
    assert np.load(ws / "tf" / "dump" / f"layer7_out.0.{US + 7:016d}.npy").mean() == 7


def test_cli_and_json_without_importing_tensorflow(ws):
    write_tfdbg_v1_tensor(run_dir(ws / "tf" / "tf_debug" / "c", US), "x", 0, np.ones(1, np.float32), US)
    code = ("import sys, json\nfrom precision_tool.cli import main\n"
            f"code = main(['-d', {str(ws)!r}, '--json', 'tf_dump'])\n"
            "print(json.dumps([code, 'tensorflow' in sys.modules]), file=sys.stderr)")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert json.loads(result.stderr.splitlines()[-1]) == [0, False]
    assert json.loads(result.stdout)["data"]["written"] == 1


def test_help_through_the_batch_cli(capsys):
    assert main(["tf_dump", "-h"]) == 0
    assert "--run N" in capsys.readouterr().out


def test_a_tensor_that_cannot_be_read_is_listed_and_exits_2(ws):
    """The handler turns the library's failures into a 'Failed' block, the status and exit code 2."""
    folder = ws / "tf" / "tf_debug" / "v2"
    bad = np.full(64, 7.0, np.float32)
    write_tfdbg_v2_dump(folder, [("good", "Relu", 0, np.arange(4, dtype=np.float32), 1_700_000_000.0),
                                 ("bad", "Relu", 0, bad, 1_700_000_001.0)])
    (traces,) = folder.glob("*.graph_execution_traces")
    data = bytearray(traces.read_bytes())
    data[data.rfind(bad.tobytes()[:16]) + 3] ^= 1
    traces.write_bytes(bytes(data))
    report = dispatch([], ws)
    message = f"{traces}: TFRecord record 1: data CRC mismatch (corrupt file)"
    assert report.exit_code == 2 and report.data["failures"] == [message]
    assert report.blocks[-1].lines == ["Failed (1):", message]
    assert report.status.endswith("; 1 failed") and report.data["written"] == 1


def test_the_table_lists_the_first_20_tensors_unless_asked_for_more(ws):
    """A 5-op Keras script writes ~180 tensors: the table stops at 20 and says how to see all; --json has all."""
    run = run_dir(ws / "tf" / "tf_debug" / "20240101000000", US)
    for i in range(25):
        write_tfdbg_v1_tensor(run, f"op{i:02d}", 0, np.full(2, i, np.float32), US + 1 + i)
    report = dispatch([], ws)
    assert [row[0] for row in report.blocks[0].rows] == [f"op{i:02d}" for i in range(20)]
    assert report.blocks[0].title == "Written (first 20 of 25; -l 0 lists all):"
    assert report.status.startswith("wrote 25 tensors") and len(report.data["tensors"]) == 25
    assert len(dispatch(["-l", "0"], ws).blocks[0].rows) == 25
    assert [row[0] for row in dispatch(["-l", "3"], ws).blocks[0].rows] == ["op00", "op01", "op02"]


def test_run_n_after_the_default_run_leaves_exactly_run_n_in_the_reference_folder(ws):
    """Issue 39: ``tf_dump`` (the newest of three Session.run calls), then ``tf_dump --run 1``: the folder must hold
    run 1 alone. Before, run 2's files stayed and, being newer, were the ones compared."""
    capture = ws / "tf" / "tf_debug" / "c"
    for k in range(3):
        write_tfdbg_v1_tensor(run_dir(capture, US + 100 * k, k), "dense/MatMul", 0,
                              np.full((2,), k, np.float32), US + 100 * k + 1)
    out = ws / "tf" / "dump"
    dispatch([], ws)
    assert _npy(out) == [f"dense_MatMul.0.{US + 201:016d}.npy"]
    report = dispatch(["--run", "1"], ws)
    assert _npy(out) == [f"dense_MatMul.0.{US + 101:016d}.npy"]  # run 2's file is gone
    (reference,) = read_npy_dir(str(out))
    assert np.load(reference.path).tolist() == [1.0, 1.0]  # what comparison now reads: run 1's value
    notes = " ".join(report.blocks[1].lines)
    assert (f"Deleted the 1 reference file {out} held first (the previous conversion's, of "
            f"{run_dir(capture, US + 200, 2)}): it holds this run only.") in notes
    assert report.data["replaced_run"] == str(run_dir(capture, US + 200, 2))
    record = json.loads((out / "tf_dump_run.json").read_text())
    assert record == {"run": str(run_dir(capture, US + 100, 1)), "complete": True,
                      "files": [f"dense_MatMul.0.{US + 101:016d}.npy"], "failed": []}


def test_an_interrupted_conversions_files_are_replaced_and_files_of_another_tool_kept(ws):
    capture = ws / "tf" / "tf_debug" / "c"
    write_tfdbg_v1_tensor(run_dir(capture, US, 0), "relu", 0, np.ones(2, np.float32), US + 1)
    out = ws / "tf" / "dump"
    out.mkdir(parents=True)
    (out / "half_written.0.1600000000000000.npy").write_bytes(b"")
    (out / "tf_dump_run.json").write_text('{"run": "/old/run_1_0", "complete": false, "files": []}')
    (out / "notes.txt").write_text("mine")
    dispatch([], ws)
    assert sorted(os.listdir(out)) == ["notes.txt", f"relu.0.{US + 1:016d}.npy", "tf_dump_run.json"]
    # a record that is not JSON knows no file: the earlier files are refused, and stay
    (out / "tf_dump_run.json").write_text("not json")
    with pytest.raises(WorkspaceError, match="no tf_dump conversion recorded"):
        dispatch([], ws)
    assert (out / f"relu.0.{US + 1:016d}.npy").is_file()
