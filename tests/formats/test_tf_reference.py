"""``convert_tfdbg_run``: a tfdbg run -> reference .npy folder, as a typed ``ReferenceConversion``.

The independent sources are values known without precision_tool: tensors written by hand with the
tfdbg writers (the test says what each file must hold), and -- in the ``tf`` test -- a tiny graph whose
outputs are worked out by hand below and also fetched by TensorFlow itself, captured by real tfdbg v1
(``sess_dump``) and v2 (``enable_reference_dump``) in a subprocess. This process never imports TensorFlow.
"""
from __future__ import annotations

import dataclasses
import importlib.util
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from precision_tool.errors import WorkspaceError
from tfdbg_builders import write_graph
from precision_tool.formats import tf_schema, tf_tensor
from precision_tool.formats.tf_reference import (RECORD_FILE, SKIP_FAILED, SKIP_NON_NUMERIC, SKIP_RESOURCE,
                                                 ReferenceConversion, ReferenceTensor, convert_tfdbg_run,
                                                 find_tfdbg_runs)
from precision_tool.formats.tfdbg import list_tfdbg_runs
from precision_tool.formats.tfdbg_v1 import write_tfdbg_v1_tensor
from precision_tool.formats.tfdbg_v2 import write_tfdbg_v2_dump

US = 1_700_000_000_000_000
REPO = Path(__file__).resolve().parents[2]
HAVE_TENSORFLOW = importlib.util.find_spec("tensorflow") is not None


def _npy(folder):
    """The reference files of ``folder`` (not its record)."""
    return sorted(name for name in os.listdir(folder) if name.endswith(".npy"))



def load(conversion: ReferenceConversion, op_name: str, slot: int = 0) -> np.ndarray:
    (tensor,) = [t for t in conversion.tensors if (t.op_name, t.output_slot) == (op_name, slot)]
    return np.load(tensor.path, allow_pickle=False)


def test_values_dtypes_and_names_are_the_dumped_ones(tmp_path):
    run = tmp_path / "run_1700000000000000_0"
    # x @ w with x = [[1, 2], [3, 4]], w = [[1, 0], [0, 2]] is [[1, 4], [3, 8]] (by hand)
    write_tfdbg_v1_tensor(run, "dense/MatMul", 0, np.array([[1, 4], [3, 8]], np.float32), US + 1)
    write_tfdbg_v1_tensor(run, "half.max", 0, np.array([65504, -0.0, 2 ** -24], np.float16), US + 2)
    write_tfdbg_v1_tensor(run, "argmax", 1, np.array([1, 1], np.int64), US + 3)
    write_tfdbg_v1_tensor(run, "mask", 0, np.array([[True], [False]]), US + 4)
    write_graph(run, {"dense/MatMul": "MatMul", "argmax": "ArgMax"})
    conversion = convert_tfdbg_run(run, tmp_path / "ref")

    assert conversion and conversion.run == list_tfdbg_runs(run)[0]
    assert conversion.out_dir == os.path.realpath(tmp_path / "ref")
    assert [(t.op_name, t.output_slot, t.op_type, t.dtype, t.shape, t.file, t.timestamp_us)
            for t in conversion.tensors] == [
        ("dense/MatMul", 0, "MatMul", "DT_FLOAT", (2, 2), f"dense_MatMul.0.{US + 1}.npy", US + 1),
        ("half.max", 0, None, "DT_HALF", (3,), f"half_max.0.{US + 2}.npy", US + 2),
        ("argmax", 1, "ArgMax", "DT_INT64", (2,), f"argmax.1.{US + 3}.npy", US + 3),
        ("mask", 0, None, "DT_BOOL", (2, 1), f"mask.0.{US + 4}.npy", US + 4)]
    assert _npy(tmp_path / "ref") == sorted(t.file for t in conversion.tensors)
    matmul = load(conversion, "dense/MatMul")
    assert matmul.dtype == np.float32 and matmul.tolist() == [[1.0, 4.0], [3.0, 8.0]]
    half = load(conversion, "half.max")
    assert half.dtype == np.float16 and half.tobytes() == np.array([65504, -0.0, 2 ** -24], np.float16).tobytes()
    assert load(conversion, "argmax", 1).tolist() == [1, 1] and load(conversion, "mask").tolist() == [[True], [False]]
    assert conversion.nbytes == 16 + 6 + 16 + 2 == sum(t.nbytes for t in conversion.tensors)
    assert conversion.tensors[0].to_dict() == {"op_name": "dense/MatMul", "output_slot": 0, "op_type": "MatMul",
                                               "dtype": "DT_FLOAT", "shape": [2, 2],
                                               "file": f"dense_MatMul.0.{US + 1}.npy"}
    assert conversion.skipped == conversion.repeated == conversion.fused_op_types == ()
    assert conversion.name_collisions == () and conversion.removed == 0


def test_the_result_is_frozen(tmp_path):
    run = tmp_path / "run_1_0"
    write_tfdbg_v1_tensor(run, "x", 0, np.ones(1, np.float32), US)
    conversion = convert_tfdbg_run(run, tmp_path / "ref")
    with pytest.raises(dataclasses.FrozenInstanceError):
        conversion.removed = 3  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        conversion.tensors[0].file = "y.0.1.npy"  # type: ignore[misc]
    assert isinstance(conversion.tensors[0], ReferenceTensor)


def test_skips_say_why_and_each_dump_counts(tmp_path):
    run = tmp_path / "run_1_0"
    handle = tf_schema.TensorProto(dtype=tf_tensor.DT_RESOURCE, resource_handle_val=[b"\x0a\x01d"])
    write_tfdbg_v1_tensor(run, "w", 0, handle, US)
    names = tf_schema.TensorProto(dtype=7, string_val=[b"a", b"b"])
    names.tensor_shape.dim.add(size=2)
    write_tfdbg_v1_tensor(run, "names", 0, names, US + 1)
    write_tfdbg_v1_tensor(run, "w/read", 0, np.array([0.5, 2.0], np.float32), US + 2)
    conversion = convert_tfdbg_run(run, tmp_path / "ref")
    assert [(s.tensor_name, s.dtype, s.reason, s.message) for s in conversion.skipped] == [
        ("w:0", "DT_RESOURCE", SKIP_RESOURCE, ""), ("names:0", "DT_STRING", SKIP_NON_NUMERIC, "")]
    assert [s.describe() for s in conversion.non_numeric] == ["names:0 (DT_STRING)"]
    assert len(conversion.resources) == 1 and conversion.failures == () and conversion
    assert [t.tensor_name for t in conversion.tensors] == ["w/read:0"]
    assert load(conversion, "w/read").tolist() == [0.5, 2.0]


def test_a_tensor_that_cannot_be_read_is_a_failure_and_the_rest_is_written(tmp_path):
    folder = tmp_path / "v2"
    bad = np.full(64, 7.0, np.float32)
    write_tfdbg_v2_dump(folder, [("good", "Relu", 0, np.arange(4, dtype=np.float32), 1_700_000_000.0),
                                 ("bad", "Relu", 0, bad, 1_700_000_001.0)])
    (traces,) = folder.glob("*.graph_execution_traces")
    data = bytearray(traces.read_bytes())
    data[data.rfind(bad.tobytes()[:16]) + 3] ^= 1  # one bit of the payload: its CRC no longer matches
    traces.write_bytes(bytes(data))
    conversion = convert_tfdbg_run(folder, tmp_path / "ref")
    assert not conversion
    (failure,) = conversion.failures
    assert (failure.tensor_name, failure.reason) == ("bad:0", SKIP_FAILED)
    assert failure.message == f"{traces}: TFRecord record 1: data CRC mismatch (corrupt file)" == failure.describe()
    assert [t.op_name for t in conversion.tensors] == ["good"] and load(conversion, "good").tolist() == [0, 1, 2, 3]
    assert _npy(tmp_path / "ref") == ["good.0.1700000000000000.npy"]


def test_v1_repeats_keep_the_last_dump_in_the_order_of_last_dumps(tmp_path):
    run = tmp_path / "run_1700000000000000_0"
    for i in range(3):
        write_tfdbg_v1_tensor(run, "loop/add", 0, np.array([float(i)], np.float32), US + 10 * i)
    write_tfdbg_v1_tensor(run, "start", 0, np.array([5], np.int32), US + 5)
    write_tfdbg_v1_tensor(run, "out", 0, np.array([9.0], np.float32), US + 100)
    write_graph(run, {"out": "_FusedMatMul"})
    conversion = convert_tfdbg_run(run, tmp_path / "ref")
    assert [t.op_name for t in conversion.tensors] == ["start", "loop/add", "out"]
    assert load(conversion, "loop/add").tolist() == [2.0]
    assert conversion.tensors[1].timestamp_us == US + 20 and not conversion.keeps_every_execution
    assert conversion.repeated == (("loop/add:0", 3),)
    assert conversion.fused_op_types == (("_FusedMatMul", 1),)


def test_v2_repeats_are_all_kept_first_under_the_bare_name(tmp_path):
    """tfdbg v2 keeps every execution: ``op``, then ``op@1``, ``op@2`` (docs/capture-keras-tf2.md)."""
    folder = tmp_path / "v2"
    traces = [("loop/add", "AddV2", 0, np.array([float(i)], np.float32), 1_700_000_000.0 + i) for i in range(3)]
    traces.insert(1, ("start", "Const", 0, np.array([5], np.int32), 1_699_999_999.0))
    traces.append(("out", "_FusedMatMul", 0, np.array([9.0], np.float32), 1_700_000_010.0))
    write_tfdbg_v2_dump(folder, traces)
    conversion = convert_tfdbg_run(folder, tmp_path / "ref")
    assert [t.op_name for t in conversion.tensors] == ["loop/add", "start", "loop/add@1", "loop/add@2", "out"]
    assert [load(conversion, name).tolist() for name in ("loop/add", "loop/add@1", "loop/add@2")] == [
        [0.0], [1.0], [2.0]]
    assert [(t.tf_op_name, t.execution) for t in conversion.tensors[2:4]] == [("loop/add", 1), ("loop/add", 2)]
    assert conversion.tensors[3].timestamp_us == 1_700_000_002_000_000 and conversion.keeps_every_execution
    assert conversion.repeated == (("loop/add:0", 3),)
    assert conversion.fused_op_types == (("_FusedMatMul", 1),)


def test_collisions_older_files_and_clean(tmp_path):
    run = tmp_path / "run_1_0"
    for k, name in enumerate(["a/b", "a_b", "a.b", "c"]):
        write_tfdbg_v1_tensor(run, name, 0, np.full(1, k, np.float32), US + k)
    out = tmp_path / "ref"
    out.mkdir()
    for name in ("old.0.1600000000000000.npy", "notes.txt", "old.npy"):
        (out / name).write_bytes(b"")
    with pytest.raises(WorkspaceError, match="holds 1 reference file"):  # not ours: never deleted silently
        convert_tfdbg_run(run, out)
    conversion = convert_tfdbg_run(run, out, clean=True)
    assert conversion.name_collisions == (("a_b", ("a.b", "a/b", "a_b")),)
    assert conversion.removed == 1 and conversion.replaced_run == ""
    # a/b, a_b and a.b all become a_b.0.<their own stamp>.npy: three files, each with its own values
    assert [np.load(out / t.file).tolist() for t in conversion.tensors] == [[0.0], [1.0], [2.0], [3.0]]
    again = convert_tfdbg_run(run, out)  # the previous conversion's files, recorded: replaced
    assert again.removed == 4 and again.replaced_run == str(run)
    assert sorted(os.listdir(out)) == sorted(["notes.txt", "old.npy", RECORD_FILE,
                                              *(t.file for t in again.tensors)])


def test_run_given_as_a_path_or_as_a_found_run(tmp_path):
    capture = tmp_path / "tf_debug" / "capture"
    write_tfdbg_v1_tensor(capture / f"run_{US}_0", "x", 0, np.ones(1, np.float32), US)
    write_tfdbg_v1_tensor(capture / f"run_{US + 5}_1", "y", 0, np.ones(1, np.float32), US + 5)
    runs = find_tfdbg_runs(tmp_path / "tf_debug")
    assert [os.path.basename(run.path) for run in runs] == [f"run_{US}_0", f"run_{US + 5}_1"]
    by_run = convert_tfdbg_run(runs[-1], tmp_path / "a")
    by_path = convert_tfdbg_run(capture / f"run_{US + 5}_1", tmp_path / "b")
    assert [t.to_dict() for t in by_run.tensors] == [t.to_dict() for t in by_path.tensors]
    assert by_run.run.path == runs[-1].path and by_path.run.version == 1
    with pytest.raises(WorkspaceError, match=rf"^{capture}: holds 2 tfdbg runs, not one \(pass one run_"):
        convert_tfdbg_run(capture, tmp_path / "c")


def test_whole_run_problems_are_one_line_errors_naming_the_folder(tmp_path):
    with pytest.raises(WorkspaceError, match=rf"^{tmp_path / 'none'}: no such folder"):
        convert_tfdbg_run(tmp_path / "none", tmp_path / "ref")
    write_tfdbg_v2_dump(tmp_path / "v2", [])
    with pytest.raises(WorkspaceError, match=rf"^{tmp_path / 'v2'}: the run holds no tensor with values "
                                             r"\(enable_reference_dump\(\) must run before"):
        convert_tfdbg_run(tmp_path / "v2", tmp_path / "ref")
    run = tmp_path / "run_1_0"
    write_tfdbg_v1_tensor(run, "x", 0, np.ones(1, np.float32), US)
    with pytest.raises(WorkspaceError, match="output folder would be inside the input"):
        convert_tfdbg_run(run, run / "ref")
    assert not (run / "ref").exists()
    with pytest.raises(WorkspaceError, match=r"no tfdbg run here or in its sub-folders"):
        find_tfdbg_runs(tmp_path / "ref")


# -- real TensorFlow --------------------------------------------------------------------------------------------
CAPTURE = r'''
"""A 2x2 graph under real tfdbg v1 (sess_dump) and v2 (enable_reference_dump); prints what TF computed."""
import json, os, sys
import precision_tool.tf_config as npu_tf_config  # first: TF_ENABLE_ONEDNN_OPTS=0
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import numpy as np
import tensorflow as tf

out = sys.argv[1]
W = [[1.0, 0.0], [0.0, 2.0]]
result = {}
with tf.Graph().as_default() as graph:
    x = tf.compat.v1.placeholder(tf.float32, [2, 2], name="x")
    w = tf.constant(W, name="w")
    mm = tf.linalg.matmul(x, w, name="mm")
    act = tf.nn.relu(mm - tf.constant(3.0, name="three"), name="act")
    as_int = tf.cast(act, tf.int32, name="as_int")
    total = tf.reduce_sum(act, name="total")
    session = tf.compat.v1.Session(graph=graph, config=npu_tf_config.reference_session_config())
    dumping = npu_tf_config.sess_dump(session, os.path.join(out, "v1"))
    fetched = dumping.run([mm, act, as_int, total], feed_dict={x: [[1.0, 2.0], [3.0, 4.0]]})
    result["v1"] = {"fetched": [np.asarray(v).tolist() for v in fetched],
                    "types": {op.name: op.type for op in graph.get_operations()}}


@tf.function
def step(x):
    mm = tf.linalg.matmul(x, tf.constant(W, name="w"), name="mm")
    return tf.nn.relu(mm - 3.0, name="act")


npu_tf_config.enable_reference_dump(os.path.join(out, "v2"))
first = step(tf.constant([[1.0, 2.0], [3.0, 4.0]]))
last = step(tf.constant([[4.0, 1.0], [1.0, 3.0]]))
npu_tf_config.disable_reference_dump()
result["v2"] = {"fetched": [first.numpy().tolist(), last.numpy().tolist()]}
print(json.dumps(result))
'''


@pytest.mark.tf
@pytest.mark.skipif(not HAVE_TENSORFLOW, reason="TensorFlow is not installed")
def test_real_tfdbg_captures_hold_the_hand_computed_values(tmp_path):
    env = dict(os.environ, PYTHONPATH=str(REPO), TF_CPP_MIN_LOG_LEVEL="2")
    env.pop("TF_ENABLE_ONEDNN_OPTS", None)
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(CAPTURE), str(tmp_path)], env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    tf_result = json.loads(done.stdout.strip().splitlines()[-1])

    # By hand: x @ w = [[1, 4], [3, 8]]; relu(. - 3) = [[0, 1], [0, 5]]; as int32 the same; sum 6.
    mm, act, total = [[1.0, 4.0], [3.0, 8.0]], [[0.0, 1.0], [0.0, 5.0]], 6.0
    assert tf_result["v1"]["fetched"] == [mm, act, [[0, 1], [0, 5]], total]

    (run,) = find_tfdbg_runs(tmp_path / "v1")
    v1 = convert_tfdbg_run(run, tmp_path / "ref_v1")
    assert v1 and v1.run.version == 1 and v1.repeated == () and v1.fused_op_types == ()
    written = {t.op_name: t for t in v1.tensors}
    types = tf_result["v1"]["types"]
    assert {name: t.op_type for name, t in written.items()} == {name: types[name] for name in written}
    assert {"x", "w", "mm", "act", "as_int", "total"} <= set(written)
    assert (written["as_int"].dtype, written["total"].shape) == ("DT_INT32", ())
    assert load(v1, "x").tolist() == [[1.0, 2.0], [3.0, 4.0]] and load(v1, "w").tolist() == [[1.0, 0.0], [0.0, 2.0]]
    assert load(v1, "mm").tolist() == mm and load(v1, "act").tolist() == act
    as_int = load(v1, "as_int")
    assert as_int.dtype == np.int32 and as_int.tolist() == [[0, 1], [0, 5]]
    assert load(v1, "total").dtype == np.float32 and load(v1, "total").item() == total
    assert _npy(tmp_path / "ref_v1") == sorted(t.file for t in v1.tensors)

    # v2: two calls of one tf.function; the first call keeps the bare names, the second is op@1.
    # By hand: [[4, 1], [1, 3]] @ w = [[4, 2], [1, 6]]; relu(. - 3) = [[1, 0], [0, 3]].
    assert tf_result["v2"]["fetched"] == [act, [[1.0, 0.0], [0.0, 3.0]]]
    (run,) = find_tfdbg_runs(tmp_path / "v2")
    v2 = convert_tfdbg_run(run, tmp_path / "ref_v2")
    assert v2 and v2.run.version == 2
    assert load(v2, "mm").tolist() == mm and load(v2, "act").tolist() == act
    assert load(v2, "mm@1").tolist() == [[4.0, 2.0], [1.0, 6.0]] and load(v2, "act@1").tolist() == [[1.0, 0.0],
                                                                                                    [0.0, 3.0]]
    assert {t.op_name: t.op_type for t in v2.tensors}["mm"] == "MatMul"
    assert dict(v2.repeated)["mm:0"] == 2 and dict(v2.repeated)["act:0"] == 2
