"""tfdbg v1/v2 readers and TensorProto decoding.

The ``tf`` tests are the ground truth: one subprocess runs TensorFlow (a graph-mode CNN in a Session
with DumpingDebugWrapperSession, the same CNN idea as a tf.function under tfdbg v2, a set of
``tf.make_tensor_proto`` results, a TFRecord file) and records what TensorFlow's own readers
(``DebugDumpDir``, ``DebugDataReader``, ``make_ndarray``, ``TFRecordWriter``'s payloads) make of them.
This process then reads the same files with precision_tool, which never imports TensorFlow, and
compares bit for bit. TensorFlow is only located (not imported) here, so this process stays light.
The other tests build dumps with the module's own writers.
"""
from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
import textwrap
import tracemalloc

import numpy as np
import pytest

from precision_tool.errors import ReferenceFormatError, WorkspaceError
from precision_tool.formats import npy_dir, tf_schema, tf_tensor, tfdbg, tfdbg_v1, tfdbg_v2, tfrecord

HAVE_TENSORFLOW = importlib.util.find_spec("tensorflow") is not None
SKIP_EXIT = 77  # the generator's exit code for "this TensorFlow cannot make the truth"

GENERATOR = r'''
"""Write tfdbg v1 + v2 dumps of a small CNN, and what TensorFlow's own readers make of them."""
import json, os, sys
SKIP_EXIT = 77
os.environ["TF_ENABLE_ONEDNN_OPTS"] = "0"
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import numpy as np
import tensorflow as tf
if tuple(int(part) for part in tf.__version__.split(".")[:2]) < (2, 15):
    sys.exit(SKIP_EXIT)  # tfdbg v2's reader and the float8/int4 dtypes below need TF >= 2.15
from tensorflow.python.debug import DumpingDebugWrapperSession
from tensorflow.python.debug.lib import debug_data, debug_events_reader
from tensorflow.python.framework import dtypes as tf_dtypes
from tensorflow.python.lib.io import tf_record

out = sys.argv[1]
expected, manifest = {}, {"v1": [], "v2": [], "protos": []}
rng = np.random.RandomState(0)


def widen(array):
    """ml_dtypes arrays (bf16, fp8, int4, quantized) -> what precision_tool returns."""
    if array.dtype.names:  # quantized types: a structured view of an integer
        return array.view(array.dtype[0])
    name = array.dtype.name
    if name.startswith(("bfloat16", "float8", "float4")):
        return array.astype(np.float32)
    if name in ("int4", "int2"):
        return array.astype(np.int8)
    if name in ("uint4", "uint2"):
        return array.astype(np.uint8)
    return array


# ---- tfdbg v2: a tf.function CNN, called twice -------------------------------------------------
v2_dir = os.path.join(out, "v2")
tf.debugging.experimental.enable_dump_debug_info(v2_dir, tensor_debug_mode="FULL_TENSOR", circular_buffer_size=-1)
kernel = tf.Variable(rng.randn(3, 3, 3, 4).astype(np.float32), name="kernel")
dense = tf.Variable(rng.randn(4, 5).astype(np.float32), name="dense")


@tf.function
def cnn(x):
    y = tf.nn.relu(tf.nn.conv2d(x, kernel, strides=1, padding="SAME"))
    y = tf.nn.max_pool2d(y, 2, 2, "VALID")
    logits = tf.matmul(tf.reduce_mean(y, axis=[1, 2]), dense)
    half = tf.cast(logits, tf.float16) * tf.constant(0.5, tf.float16)
    return tf.nn.softmax(logits), tf.argmax(logits, axis=1), tf.greater(logits, 0.0), half


for _ in range(2):
    cnn(tf.constant(rng.randn(2, 8, 8, 3).astype(np.float32)))
tf.debugging.experimental.disable_dump_debug_info()
reader = debug_events_reader.DebugDataReader(v2_dir)
reader.update()
for index, trace in enumerate(reader.graph_execution_traces()):
    key = f"v2_{index}"
    value = reader.graph_execution_trace_to_tensor_value(trace)
    manifest["v2"].append({"key": key, "op_name": trace.op_name, "op_type": trace.op_type,
                           "output_slot": trace.output_slot, "graph_id": trace.graph_id,
                           "wall_time": trace.wall_time, "device": trace.device_name,
                           "convertible": isinstance(value, np.ndarray)})
    if isinstance(value, np.ndarray):
        expected[key] = widen(value)
manifest["v2_record_counts"] = {
    name: sum(1 for _ in tf_record.tf_record_iterator(os.path.join(v2_dir, name))) for name in os.listdir(v2_dir)}

# ---- tfdbg v1: a graph-mode CNN in a Session, Grappler off, two runs ---------------------------
tf.compat.v1.disable_eager_execution()
graph = tf.Graph()
with graph.as_default():
    x = tf.compat.v1.placeholder(tf.float32, [2, 8, 8, 3], name="input")
    with tf.compat.v1.variable_scope("conv1"):
        w = tf.compat.v1.get_variable("w", initializer=rng.randn(3, 3, 3, 8).astype(np.float32))
        b = tf.compat.v1.get_variable("b", initializer=rng.randn(8).astype(np.float32))
        h = tf.nn.relu(tf.nn.bias_add(tf.nn.conv2d(x, w, 1, "SAME", name="conv"), b, name="bias"), name="relu")
    pooled = tf.nn.max_pool2d(h, 2, 2, "VALID", name="pool")
    with tf.compat.v1.variable_scope("fc"):
        fw = tf.compat.v1.get_variable("w", initializer=rng.randn(4 * 4 * 8, 10).astype(np.float32))
        logits = tf.matmul(tf.reshape(pooled, [2, -1], name="flat"), fw, name="logits")
    probs = tf.nn.softmax(logits, name="probs")
    half = tf.cast(logits, tf.float16, name="to_half")
    top = tf.argmax(logits, axis=1, name="top")
    positive = tf.greater(logits, 0.0, name="positive")
    init = tf.compat.v1.global_variables_initializer()
config = tf.compat.v1.ConfigProto()
config.graph_options.rewrite_options.disable_meta_optimizer = True
session = tf.compat.v1.Session(graph=graph, config=config)
session.run(init)
v1_root = os.path.join(out, "v1")
debug_session = DumpingDebugWrapperSession(session, v1_root)
for _ in range(2):
    debug_session.run([probs, half, top, positive], feed_dict={x: rng.randn(2, 8, 8, 3).astype(np.float32)})
for run_index, run_name in enumerate(sorted(os.listdir(v1_root), key=lambda n: [int(p) for p in n.split("_")[1:]])):
    dump = debug_data.DebugDumpDir(os.path.join(v1_root, run_name))
    tensors = []
    for index, datum in enumerate(dump.dumped_tensor_data):
        key = f"v1_{run_index}_{index}"
        value = datum.get_tensor()
        convertible = isinstance(value, np.ndarray)
        if convertible:
            expected[key] = widen(value)
        tensors.append({"key": key, "node_name": datum.node_name, "output_slot": datum.output_slot,
                        "debug_op": datum.debug_op, "timestamp": datum.timestamp, "device": datum.device_name,
                        "op_type": dump.node_op_type(datum.node_name, datum.device_name),
                        "path": datum.file_path, "convertible": convertible})
    manifest["v1"].append({"run": run_name, "tensors": tensors})


# ---- TensorProtos with typed *_val fields and unusual dtypes ----------------------------------
def add_proto(value, dtype=None, shape=None):
    proto = tf.make_tensor_proto(value, dtype=dtype, shape=shape)
    key = f"proto_{len(manifest['protos'])}"
    fields = sorted(f.name for f, _ in proto.ListFields() if f.name not in ("dtype", "tensor_shape"))
    manifest["protos"].append({"key": key, "hex": proto.SerializeToString().hex(), "fields": fields,
                               "dtype": tf_dtypes.as_dtype(proto.dtype).name})
    expected[key] = widen(tf.make_ndarray(proto))


for dtype in [tf.float32, tf.float64, tf.float16, tf.bfloat16, tf.int8, tf.int16, tf.int32, tf.int64, tf.uint8,
              tf.uint16, tf.uint32, tf.uint64, tf.complex64, tf.complex128]:
    scalar = -3 if dtype.is_integer and not dtype.is_unsigned else 3
    add_proto(np.array(scalar).astype(dtype.as_numpy_dtype), dtype, [2, 3])  # one value, broadcast
    add_proto((rng.randn(3, 4) * 50).astype(dtype.as_numpy_dtype), dtype)
add_proto(np.array([1 + 2j, -3.5 - 1j], np.complex64), tf.complex64, [2, 2])  # 2 values, last repeated
add_proto(True, tf.bool, [2, 2])
add_proto(np.array([True, False, True]), tf.bool)
add_proto(np.array([np.inf, -np.inf, np.nan, -0.0, 6e-8, 65504], np.float16), tf.float16)
add_proto(np.float16(-0.0), tf.float16, [2])
add_proto(np.zeros([0, 3], np.float32), tf.float32)
for quantized, base in [(tf.qint8, np.int8), (tf.quint8, np.uint8), (tf.qint16, np.int16),
                        (tf.quint16, np.uint16), (tf.qint32, np.int32)]:
    add_proto(np.arange(6, dtype=base).reshape(2, 3).astype(quantized.as_numpy_dtype), quantized)
for name in ["float8_e5m2", "float8_e4m3fn", "float8_e4m3fnuz", "float8_e4m3b11fnuz", "float8_e5m2fnuz"]:
    dtype = getattr(tf_dtypes, name)
    add_proto(np.arange(256, dtype=np.uint8).view(dtype.as_numpy_dtype), dtype)  # every bit pattern
for name in ["float8_e5m2", "float8_e4m3fn"]:
    dtype = getattr(tf_dtypes, name)
    add_proto(np.array(-1.75).astype(dtype.as_numpy_dtype), dtype, [3])  # float8_val, broadcast
add_proto(np.arange(16, dtype=np.uint8).view(tf_dtypes.float4_e2m1fn.as_numpy_dtype), tf_dtypes.float4_e2m1fn)
add_proto(np.array([-1.5]).astype(tf_dtypes.float4_e2m1fn.as_numpy_dtype), tf_dtypes.float4_e2m1fn, [4])
for name, values in [("int4", [-8, -1, 0, 7]), ("uint4", [0, 1, 15, 9]), ("int2", [-2, -1, 0, 1]),
                     ("uint2", [0, 1, 2, 3])]:
    dtype = getattr(tf_dtypes, name)
    add_proto(np.array(values).astype(dtype.as_numpy_dtype), dtype)
    add_proto(np.array(values[0]).astype(dtype.as_numpy_dtype), dtype, [2, 2])
manifest["string_proto_hex"] = tf.make_tensor_proto([b"a", b"bc"]).SerializeToString().hex()

# ---- a TFRecord file written by TensorFlow -----------------------------------------------------
payloads = [b"", b"x", rng.bytes(100), rng.bytes(5000), rng.bytes(300_001)]
with tf.io.TFRecordWriter(os.path.join(out, "written_by_tf.tfrecord")) as writer:
    for payload in payloads:
        writer.write(payload)
for index, payload in enumerate(payloads):
    expected[f"record_{index}"] = np.frombuffer(payload, np.uint8)
manifest["record_count"] = len(payloads)

np.savez(os.path.join(out, "expected.npz"), **expected)
with open(os.path.join(out, "manifest.json"), "w") as handle:
    json.dump(manifest, handle)
'''


def assert_bit_exact(actual, expected, what=""):
    """Same dtype, same shape, same bytes (so NaN payloads and -0.0 count too)."""
    assert actual is not None, what
    assert actual.dtype == expected.dtype, f"{what}: dtype {actual.dtype} != {expected.dtype}"
    assert actual.shape == expected.shape, f"{what}: shape {actual.shape} != {expected.shape}"
    assert np.ascontiguousarray(actual).tobytes() == np.ascontiguousarray(expected).tobytes(), what


@pytest.fixture(scope="module")
def tf_truth(tmp_path_factory):
    """(folder, manifest, expected arrays) written by the TensorFlow subprocess."""
    if not HAVE_TENSORFLOW:
        pytest.skip("TensorFlow is not installed")
    out = tmp_path_factory.mktemp("tf_truth")
    script = out / "generate.py"
    script.write_text(GENERATOR)
    env = dict(os.environ, TF_ENABLE_ONEDNN_OPTS="0", TF_CPP_MIN_LOG_LEVEL="2")
    result = subprocess.run([sys.executable, str(script), str(out)], capture_output=True, text=True, timeout=600,
                            env=env)
    if result.returncode == SKIP_EXIT:
        pytest.skip("this TensorFlow is older than 2.15 (no tfdbg v2 reader, no float8/int4 dtypes)")
    assert result.returncode == 0, result.stderr[-4000:]
    manifest = json.loads((out / "manifest.json").read_text())
    with np.load(out / "expected.npz", allow_pickle=False) as data:
        expected = {key: data[key] for key in data.files}
    return out, manifest, expected


# ---- against TensorFlow --------------------------------------------------------------------------
@pytest.mark.tf
def test_v1_runs_are_listed_oldest_first_like_the_folders_tensorflow_wrote(tf_truth):
    out, manifest, _ = tf_truth
    runs = tfdbg.list_tfdbg_runs(out / "v1")
    assert [os.path.basename(run.path) for run in runs] == [run["run"] for run in manifest["v1"]]
    assert all(run.version == 1 for run in runs)
    assert runs[0].timestamp_us < runs[1].timestamp_us


@pytest.mark.tf
def _as_reported(node_name: str) -> str:
    """DebugDumpDir names a fed placeholder by its executed node ``_arg_{name}_0_{i}``; we report ``name``."""
    match = re.fullmatch(r"_arg_(.+)_0_\d+", node_name)
    return match.group(1) if match else node_name


def test_v1_tensors_equal_debug_dump_dir_bit_exactly(tf_truth):
    out, manifest, expected = tf_truth
    compared = 0
    for run_index, run in enumerate(manifest["v1"]):
        records = list(tfdbg.iter_tfdbg(out / "v1", run=run_index, skip_resources=False))
        ours = {(r.op_name, r.output_slot, r.timestamp_us): r for r in records}
        theirs = {(_as_reported(t["node_name"]), t["output_slot"], t["timestamp"]): t for t in run["tensors"]}
        fed = {key[0] for key, t in theirs.items() if t["node_name"] != key[0]}
        assert fed and all(ours[key].op_type == "Placeholder" for key in ours if key[0] in fed)
        assert sorted(ours) == sorted(theirs)  # same tensors: names, slots, timestamps
        assert [r.index for r in records] == list(range(len(records)))
        for key, truth in theirs.items():
            record = ours[key]
            assert record.device == truth["device"]
            assert record.op_type == ("Placeholder" if key[0] in fed else truth["op_type"])
            assert os.path.samefile(record.path, truth["path"])
            if truth["convertible"]:
                assert_bit_exact(record.load(), expected[truth["key"]], record.tensor_name)
                assert record.dtype == expected[truth["key"]].dtype
                assert record.shape == expected[truth["key"]].shape
                compared += 1
            else:
                assert record.dtype_name == "DT_RESOURCE" and record.load() is None and not record.loadable
    assert compared == sum(t["convertible"] for run in manifest["v1"] for t in run["tensors"]) >= 30


@pytest.mark.tf
def test_v1_default_is_the_last_run_without_resource_handles(tf_truth):
    out, manifest, _ = tf_truth
    last = manifest["v1"][-1]["tensors"]
    names = sorted((r.op_name, r.output_slot) for r in tfdbg.iter_tfdbg(out / "v1"))
    assert names == sorted((_as_reported(t["node_name"]), t["output_slot"]) for t in last if t["convertible"])
    assert len(names) < len(last)  # the variable handles were left out


@pytest.mark.tf
def test_v2_traces_equal_debug_data_reader_bit_exactly(tf_truth):
    out, manifest, expected = tf_truth
    records = list(tfdbg.iter_tfdbg(out / "v2", skip_resources=False))
    assert len(records) == len(manifest["v2"]) >= 30
    assert [record.index for record in records] == list(range(len(records)))
    for record, truth in zip(records, manifest["v2"]):
        assert (record.op_name, record.output_slot, record.op_type) == (
            truth["op_name"], truth["output_slot"], truth["op_type"])
        assert record.graph_id == truth["graph_id"] and record.device == truth["device"]
        assert abs(record.timestamp_us - truth["wall_time"] * 1e6) <= 1
        assert_bit_exact(record.load(), expected[truth["key"]], record.tensor_name)
        assert (record.dtype, record.shape) == (expected[truth["key"]].dtype, expected[truth["key"]].shape)


@pytest.mark.tf
def test_tensor_protos_equal_make_ndarray_for_every_dtype(tf_truth):
    _, manifest, expected = tf_truth
    used_fields = set()
    for case in manifest["protos"]:
        array = tf_tensor.tensor_proto_to_numpy(bytes.fromhex(case["hex"]))
        assert_bit_exact(array, expected[case["key"]], f"{case['dtype']} {case['fields']}")
        used_fields.update(case["fields"])
    # the comparison covered the typed fields, not only tensor_content
    assert {"half_val", "float8_val", "int_val", "scomplex_val", "bool_val", "uint64_val"} <= used_fields
    assert len({case["dtype"] for case in manifest["protos"]}) >= 30


@pytest.mark.tf
def test_string_tensor_is_reported_as_unsupported(tf_truth):
    _, manifest, _ = tf_truth
    with pytest.raises(ReferenceFormatError, match="DT_STRING tensors hold strings, not numbers: not supported"):
        tf_tensor.tensor_proto_to_numpy(bytes.fromhex(manifest["string_proto_hex"]), source="x.pb")


@pytest.mark.tf
def test_tfrecord_files_written_by_tensorflow_read_back_with_crcs_checked(tf_truth):
    out, manifest, expected = tf_truth
    payloads = list(tfrecord.read_records(out / "written_by_tf.tfrecord"))
    assert len(payloads) == manifest["record_count"]
    for index, payload in enumerate(payloads):
        assert bytes(payload) == expected[f"record_{index}"].tobytes()
    for name, count in manifest["v2_record_counts"].items():
        assert sum(1 for _ in tfrecord.read_records(out / "v2" / name)) == count, name


@pytest.mark.tf
def test_tfdbg_dump_to_npy_folder_round_trip_keeps_real_names(tf_truth, tmp_path):
    out, _, _ = tf_truth
    records = list(tfdbg.iter_tfdbg(out / "v1"))
    for record in records:
        npy_dir.write_reference_npy(tmp_path, record.op_name, record.output_slot, record.load(), record.timestamp_us)
    mapping = npy_dir.build_name_mapping(r.op_name for r in records)
    references = {(r.op_name, r.output_index): r for r in npy_dir.read_npy_dir(tmp_path, mapping)}
    assert sorted(references) == sorted((r.op_name, r.output_slot) for r in records)
    for record in records:
        assert_bit_exact(references[(record.op_name, record.output_slot)].load(), record.load(), record.op_name)


READER_SCRIPT = textwrap.dedent("""
    import json, sys
    from precision_tool.formats import tfdbg
    count = 0
    for path in sys.argv[1:]:
        for run in range(len(tfdbg.list_tfdbg_runs(path))):
            for record in tfdbg.iter_tfdbg(path, run=run, skip_resources=False):
                record.load()
                count += 1
    heavy = sorted(name for name in sys.modules if name.split(".")[0] in ("tensorflow", "keras", "ml_dtypes"))
    print(json.dumps({"count": count, "heavy": heavy}))
""")


@pytest.mark.tf
def test_reading_every_dump_never_imports_tensorflow(tf_truth):
    out, manifest, _ = tf_truth
    result = subprocess.run([sys.executable, "-c", READER_SCRIPT, str(out / "v1"), str(out / "v2")],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["heavy"] == []
    assert report["count"] == sum(len(run["tensors"]) for run in manifest["v1"]) + len(manifest["v2"])


# ---- synthetic dumps (no TensorFlow) --------------------------------------------------------------
ARRAYS = {
    "conv1/Conv2D": np.arange(24, dtype=np.float32).reshape(2, 3, 4) - 7.5,
    "conv1/Cast": np.array([[1.5, -0.0, np.inf]], dtype=np.float16),
    "top/ArgMax": np.array([3, 1], dtype=np.int64),
    "mask": np.array([True, False]),
    "scalar": np.float64(2.5),
    "empty": np.zeros((0, 4), dtype=np.int32),
}


def write_v1_run(run_dir, stamp0=1_700_000_000_000_000):
    for offset, (name, array) in enumerate(ARRAYS.items()):
        tfdbg_v1.write_tfdbg_v1_tensor(run_dir, name, 0, array, stamp0 + offset)
    return run_dir


def test_device_folder_names_round_trip():
    device = "/job:my_job/replica:0/task:1/device:GPU:3"
    folder = tfdbg.device_folder_name(device)
    assert folder == "_tfdbg_device_,job_my_job,replica_0,task_1,device_GPU_3"
    assert tfdbg.device_name_from_folder(folder) == device


def test_v1_synthetic_run_reads_back_every_array_in_timestamp_order(tmp_path):
    write_v1_run(tmp_path / "run_1700000000000000_0")
    records = list(tfdbg.iter_tfdbg(tmp_path))
    assert [r.op_name for r in records] == list(ARRAYS)
    for record, (name, array) in zip(records, ARRAYS.items()):
        assert record.source_format == "tfdbg_v1" and record.op_type is None
        assert record.device == tfdbg.DEFAULT_DEVICE
        loaded = record.load()
        assert_bit_exact(loaded, np.asarray(array), name)
        assert loaded.flags.writeable


def test_v1_ignores_metadata_graph_and_summary_files(tmp_path):
    run = write_v1_run(tmp_path / "run_5_0")
    device_dir = run / tfdbg.device_folder_name(tfdbg.DEFAULT_DEVICE)
    (run / "_tfdbg_core_metadata_sessionrun00000000000001_1").write_bytes(b"not a tensor")
    (device_dir / "conv1" / "Conv2D_0_DebugNumericSummary_1700000000000009").write_bytes(b"summary")
    graph = tf_schema.GraphDef()
    graph.node.add(name="conv1/Conv2D", op="Conv2D")
    (device_dir / "_tfdbg_graph_hash123_1").write_bytes(tf_schema.Event(graph_def=graph.SerializeToString())
                                                        .SerializeToString())
    records = list(tfdbg.iter_tfdbg(run))
    assert len(records) == len(ARRAYS)
    assert records[0].op_type == "Conv2D" and records[1].op_type is None


def test_runs_sort_by_timestamp_then_counter_and_default_to_the_last(tmp_path):
    for name in ["run_20_1", "run_20_0", "run_3_7"]:
        tfdbg_v1.write_tfdbg_v1_tensor(tmp_path / name, f"op_{name}", 0, np.zeros(1, np.float32), 1)
    (tmp_path / "run_99_0").mkdir()  # no device folder: not a run
    runs = tfdbg.list_tfdbg_runs(tmp_path)
    assert [os.path.basename(r.path) for r in runs] == ["run_3_7", "run_20_0", "run_20_1"]
    assert [r.op_name for r in tfdbg.iter_tfdbg(tmp_path)] == ["op_run_20_1"]
    assert [r.op_name for r in tfdbg.iter_tfdbg(tmp_path, run=0)] == ["op_run_3_7"]
    with pytest.raises(WorkspaceError, match="run 5 does not exist"):
        tfdbg.iter_tfdbg(tmp_path, run=5)


def test_a_folder_without_dumps_is_a_workspace_error(tmp_path):
    with pytest.raises(WorkspaceError, match="no tfdbg dump here"):
        tfdbg.list_tfdbg_runs(tmp_path)
    with pytest.raises(WorkspaceError, match="no such folder"):
        tfdbg.list_tfdbg_runs(tmp_path / "missing")


def test_resource_handles_are_skipped_unless_asked_for(tmp_path):
    resource = tf_schema.TensorProto(dtype=tf_tensor.DT_RESOURCE, resource_handle_val=[b"\x0a\x03dev"])
    tfdbg_v1.write_tfdbg_v1_tensor(tmp_path, "var", 0, resource, 1)
    tfdbg_v1.write_tfdbg_v1_tensor(tmp_path, "read", 0, np.ones(2, np.float32), 2)
    assert [r.op_name for r in tfdbg.iter_tfdbg(tmp_path)] == ["read"]
    records = list(tfdbg.iter_tfdbg(tmp_path, skip_resources=False))
    assert [r.op_name for r in records] == ["var", "read"] and [r.index for r in records] == [0, 1]
    assert records[0].load() is None and records[0].dtype is None


def test_string_tensors_are_listed_but_refuse_to_load(tmp_path):
    strings = tf_schema.TensorProto(dtype=7, string_val=[b"a"])
    strings.tensor_shape.dim.add(size=1)
    tfdbg_v1.write_tfdbg_v1_tensor(tmp_path, "names", 0, strings, 1)
    (record,) = tfdbg.iter_tfdbg(tmp_path)
    assert record.dtype_name == "DT_STRING" and not record.loadable
    with pytest.raises(ReferenceFormatError, match="names_0_DebugIdentity_1: DT_STRING tensors hold strings"):
        record.load()


def test_truncated_event_file_names_the_file_in_one_line(tmp_path):
    path = tfdbg_v1.write_tfdbg_v1_tensor(tmp_path, "a/b", 0, np.arange(100, dtype=np.float32), 1)
    data = open(path, "rb").read()
    open(path, "wb").write(data[: len(data) - 10])
    with pytest.raises(ReferenceFormatError) as caught:
        list(tfdbg.iter_tfdbg(tmp_path))
    message = str(caught.value)
    assert message.startswith(path + ": ") and "\n" not in message
    assert "truncated" in message or "claims" in message


@pytest.mark.parametrize("content, cause", [
    (b"", "empty file"),
    (tf_schema.Event(wall_time=1.0, step=3).SerializeToString(), "has no summary value"),
    (b"\xff" * 12, "varint"),
])
def test_event_files_that_are_not_tensor_dumps_are_refused(tmp_path, content, cause):
    path = tfdbg_v1.write_tfdbg_v1_tensor(tmp_path, "x", 0, np.zeros(1, np.float32), 1)
    open(path, "wb").write(content)
    with pytest.raises(ReferenceFormatError, match=cause):
        list(tfdbg.iter_tfdbg(tmp_path))


def test_a_dump_changed_after_listing_is_detected_on_load(tmp_path):
    path = tfdbg_v1.write_tfdbg_v1_tensor(tmp_path, "x", 0, np.zeros(8, np.float32), 1)
    (record,) = tfdbg.iter_tfdbg(tmp_path)
    open(path, "wb").write(b"\x0a\x05")
    with pytest.raises(ReferenceFormatError, match="x_0_DebugIdentity_1"):
        record.load()


def v2_traces():
    return [(name, "Op" + str(i), 0, array, 1700000000.0 + i / 1e3) for i, (name, array) in enumerate(ARRAYS.items())]


def test_v2_synthetic_dump_reads_back_with_op_types(tmp_path):
    tfdbg_v2.write_tfdbg_v2_dump(tmp_path, v2_traces())
    records = list(tfdbg.iter_tfdbg(tmp_path))
    assert [(r.op_name, r.op_type, r.index) for r in records] == [
        (name, "Op" + str(i), i) for i, name in enumerate(ARRAYS)]
    assert records[1].timestamp_us == 1700000000001000 and records[0].graph_id == "graph-0"
    for record, array in zip(records, ARRAYS.values()):
        loaded = record.load()
        assert_bit_exact(loaded, np.asarray(array), record.op_name)
        assert loaded.flags.writeable


def test_v2_corrupt_tensor_bytes_fail_the_crc_on_load_unless_unchecked(tmp_path):
    tfdbg_v2.write_tfdbg_v2_dump(tmp_path, v2_traces())
    (path,) = tmp_path.glob("*.graph_execution_traces")
    data = bytearray(path.read_bytes())
    position = data.find(ARRAYS["conv1/Conv2D"].tobytes()) + 5
    data[position] ^= 0x40
    path.write_bytes(bytes(data))
    first = next(tfdbg.iter_tfdbg(tmp_path))  # listing reads headers only: the flip is in the data
    with pytest.raises(ReferenceFormatError, match="data CRC mismatch"):
        first.load()
    unchecked = next(tfdbg.iter_tfdbg(tmp_path, verify=False)).load()
    assert not np.array_equal(unchecked, ARRAYS["conv1/Conv2D"])


def test_v2_dump_without_tensor_values_says_how_to_recapture(tmp_path):
    proto = tf_tensor.numpy_to_tensor_proto(np.array([0.0, 1.0], np.float32))
    tfdbg_v2.write_tfdbg_v2_dump(tmp_path, [("a", "Relu", 0, proto, 1.0)])
    (path,) = tmp_path.glob("*.graph_execution_traces")
    event = tf_schema.DebugEvent.FromString(bytes(next(tfrecord.read_records(path))))
    event.graph_execution_trace.tensor_debug_mode = 2  # CURT_HEALTH
    path.write_bytes(tfrecord.encode_record(event.SerializeToString()))
    with pytest.raises(ReferenceFormatError, match=r"CURT_HEALTH.*\(re-capture with tensor_debug_mode='FULL_TENSOR'\)"):
        list(tfdbg.iter_tfdbg(tmp_path))


def test_listing_a_big_dump_reads_headers_only_and_loading_holds_one_tensor(tmp_path):
    megabyte = np.arange(1 << 18, dtype=np.float32)  # 1 MiB each
    for i in range(12):
        tfdbg_v1.write_tfdbg_v1_tensor(tmp_path / "v1", f"layer{i}/out", 0, megabyte + i, 100 + i)
    tfdbg_v2.write_tfdbg_v2_dump(tmp_path / "v2", [(f"layer{i}", "Relu", 0, megabyte + i, 1.0 + i) for i in range(12)])
    for folder in ("v1", "v2"):
        tracemalloc.start()
        records = list(tfdbg.iter_tfdbg(tmp_path / folder))
        _, listing_peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        tracemalloc.start()  # a new peak (tracemalloc.reset_peak is Python 3.9+)
        total = 0.0
        for record in records:
            total += float(record.load()[0])
        _, loading_peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        assert len(records) == 12 and total == sum(range(12))
        assert listing_peak < 512 * 1024, folder  # 12 MiB of tensors listed in under 0.5 MiB
        assert loading_peak < 3 * megabyte.nbytes, folder  # one tensor at a time (plus a CRC temporary)


def test_fed_placeholders_get_their_own_names_back(tmp_path):
    """TF runs a fed placeholder as ``_arg_{name}_0_{i}``; only names the feed keys file lists are renamed."""
    run = tmp_path / "run_1700000000000000_0"
    values = np.arange(6, dtype=np.float32).reshape(2, 3)
    tfdbg_v1.write_tfdbg_v1_tensor(run, "_arg_scope/x_0_0", 0, values, 1700000000000001)
    tfdbg_v1.write_tfdbg_v1_tensor(run, "_arg_y_0_1", 0, values, 1700000000000002)
    tfdbg_v1.write_tfdbg_v1_tensor(run, "_arg_not_fed_0_2", 0, values, 1700000000000003)
    # what tfdbg writes: the repr of the feed dict's keys (tensors, or names when fed by string)
    (run / "_tfdbg_feed_keys_info_").write_bytes(
        b"\x12omdict_keys([<tf.Tensor 'scope/x:0' shape=(2, 3) dtype=float32>, 'y:0'])")
    records = {r.op_name: r for r in tfdbg.iter_tfdbg(run)}
    assert sorted(records) == ["_arg_not_fed_0_2", "scope/x", "y"]
    assert records["scope/x"].op_type == records["y"].op_type == "Placeholder"
    assert np.array_equal(records["scope/x"].load(), values)
    (run / "_tfdbg_feed_keys_info_").unlink()
    assert sorted(r.op_name for r in tfdbg.iter_tfdbg(run)) == ["_arg_not_fed_0_2", "_arg_scope/x_0_0", "_arg_y_0_1"]
