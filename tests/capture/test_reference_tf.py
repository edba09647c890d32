"""Reference captures with real TensorFlow 2.21, end to end: capture in a subprocess, ``tf_dump`` here.

The graph-mode script trains a small CNN one step under ``sess_dump`` and under
``MonitoredTrainingSession`` + ``estimator_dump``; the TF2 script runs ``model.fit`` and a custom
``tf.function`` step under ``enable_reference_dump`` (scripts/*.py). This process never imports
TensorFlow for these tests: it converts the captures with ``tf_dump`` and checks names and values.
"""
import numpy as np
import pytest

from precision_tool.commands.command_registry import CommandRegistry, Context
from precision_tool.commands.tf_dump import COMMAND
from precision_tool.formats.npy_dir import read_npy_dir, reference_op_name
from precision_tool.formats.tfdbg import iter_tfdbg

pytestmark = pytest.mark.tf
pytest.importorskip("tensorflow")


def tf_dump(data_dir, *argv):
    return CommandRegistry([COMMAND]).dispatch(["tf_dump", *argv], Context(data_dir=str(data_dir)))


def reference_arrays(folder):
    """{file op name: array} of output 0 of each op in a reference folder."""
    return {ref.file_op_name: np.load(ref.path, allow_pickle=False) for ref in read_npy_dir(folder)
            if ref.output_index == 0}


def test_session_capture_names_are_tf_op_names_one_to_one(tf_captures):
    capture = tf_captures["graph"]
    result = capture.result()
    assert result["onednn_env"] == "0" and result["session"]["grappler_off"]
    report = tf_dump(capture.out / "ws_session")
    ops = result["session"]["ops"]
    dumped = {entry["op_name"]: entry["op_type"] for entry in report.data["tensors"]}
    # fed placeholders run as _arg_x_0_0 / _arg_y_0_1 but are reported under their own names
    assert not [name for name in dumped if name.startswith("_arg_")]
    assert dumped["x"] == dumped["y"] == "Placeholder"
    assert dumped == {name: ops[name] for name in dumped}
    fetches = result["session"]["fetches"]
    assert [dumped[fetches[k]] for k in ("conv", "bias", "relu")] == ["Conv2D", "BiasAdd", "Relu"]
    assert report.data["fused_op_types"] == {} and report.data["repeated"] == {}
    assert report.data["skipped_resources"] == 4  # the four variable handles


def test_session_capture_values_equal_what_the_session_returned(tf_captures):
    capture = tf_captures["graph"]
    result = capture.result()
    tf_dump(capture.out / "ws_session")
    references = reference_arrays(capture.out / "ws_session" / "tf" / "dump")
    fetched = np.load(capture.out / "session_fetched.npz")
    for key, op_name in result["session"]["fetches"].items():
        np.testing.assert_array_equal(references[reference_op_name(op_name)], fetched[key], err_msg=key)


def test_first_run_is_the_initialiser_and_default_is_the_last(tf_captures):
    capture = tf_captures["graph"]
    capture.result()
    listing = tf_dump(capture.out / "ws_session", "--list")
    assert len(listing.blocks[0].rows) == 2
    init = tf_dump(capture.out / "ws_session", "--run", "0", "-o", str(capture.out / "init_dump"))
    names = {entry["op_name"] for entry in init.data["tensors"]}
    assert "conv1/w/Initializer/random_uniform" in names and "conv1/relu" not in names
    assert "conv1/relu" in {entry["op_name"] for entry in tf_dump(capture.out / "ws_session").data["tensors"]}


def test_monitored_training_session_hook(tf_captures):
    capture = tf_captures["graph"]
    result = capture.result()
    report = tf_dump(capture.out / "ws_monitored")
    dumped = {entry["op_name"]: entry["op_type"] for entry in report.data["tensors"]}
    fetches = result["monitored"]["fetches"]
    assert [dumped[fetches[k]] for k in ("conv", "bias", "relu")] == ["Conv2D", "BiasAdd", "Relu"]
    ops = result["monitored"]["ops"]
    assert all(ops.get(name) == op_type for name, op_type in dumped.items() if not name.startswith("_arg_"))
    references = reference_arrays(capture.out / "ws_monitored" / "tf" / "dump")
    fetched = np.load(capture.out / "monitored_fetched.npz")
    np.testing.assert_array_equal(references[reference_op_name(fetches["relu"])], fetched["relu"])
    np.testing.assert_array_equal(references["loss"], fetched["loss"])


def test_sess_dump_wraps_the_users_session_which_stays_usable(tf_captures):
    """The original's pattern: `with Session() as sess: sess = sess_dump(sess)`, then `.eval()` on the default
    session -- the user's own, neither closed nor replaced."""
    session = tf_captures["graph"].result()["session"]
    assert session["same_session"] and session["default_is_original"]
    # eval ran after the SGD step, so it sees the updated weights: lower loss than the dumped step's
    assert session["eval_after_step"] < session["loss_of_step"]


def test_grappler_on_is_warned_loudly_once_and_the_session_still_wrapped(tf_captures):
    capture = tf_captures["graph"]
    result = capture.result()
    warnings = result["warnings"]
    assert len(warnings) == 2  # one per helper, although sess_dump wrapped two Grappler-on sessions
    assert warnings[0].startswith("CaptureWarning: estimator_dump: the session runs Grappler, which fuses ops")
    assert "config=npu_tf_config.reference_session_config(config)" in warnings[0]
    assert warnings[1].startswith("CaptureWarning: sess_dump: the session runs Grappler, which fuses ops")
    assert warnings[1].endswith("create it with tf.Session(config=npu_tf_config.reference_session_config(config)) "
                                "(the session is wrapped as it is)")
    assert result["_output"].count("[precision_tool] WARNING: sess_dump: the session runs Grappler") == 1
    grappler_on = result["grappler_on"]
    assert grappler_on["same_session"] and grappler_on["still_open"]
    # What Grappler does to the dump: fetching only the Relu, Conv2D+BiasAdd+Relu ran as one _FusedConv2D
    report = tf_dump(capture.out / "ws_warnings", "-i", grappler_on["capture"])
    dumped = {entry["op_name"]: entry["op_type"] for entry in report.data["tensors"]}
    assert dumped[grappler_on["relu"]] == "_FusedConv2D" and report.data["fused_op_types"] == {"_FusedConv2D": 1}
    assert not {"conv1/conv", "conv1/bias"} & set(dumped)
    fused = reference_arrays(capture.out / "ws_warnings" / "tf" / "dump")[reference_op_name(grappler_on["relu"])]
    np.testing.assert_array_equal(fused, np.load(capture.out / "grappler_on_fetched.npz")["relu"])


def test_npu_config_runs_on_cpu_and_keeps_op_names(tf_captures):
    result = tf_captures["graph"].result()
    npu = result["npu"]
    assert np.isfinite(npu["loss"])
    dumped = {record.op_name: record.op_type for record in iter_tfdbg(npu["tfdbg_root"])}
    assert [dumped.get(npu["fetches"][k]) for k in ("conv", "bias", "relu", "logits")] == [
        "Conv2D", "BiasAdd", "Relu", "BiasAdd"]
    workspace = tf_captures["graph"].out / "ws_npu"
    # fusion_off keeps the dumps in npu/debug_0 as the original did (7cc8e3e); PRECISION_TOOL_NPU_RUN=1 moves them
    assert npu["env"] == {"DUMP_GE_GRAPH": "2", "DUMP_GRAPH_LEVEL": "3",
                          "DUMP_GRAPH_PATH": str(workspace / "npu" / "debug_0" / "graph")}
    # no NPU here (no npu_bridge): the config is set, but no NPU folder is made for dumps that never come (issue 39)
    assert not (workspace / "npu" / "debug_0" / "dump").exists()


def test_keras_step_capture_names_and_values(tf_captures):
    capture = tf_captures["eager"]
    result = capture.result()
    assert result["onednn_env"] == "0"
    report = tf_dump(capture.out / "ws_keras")
    assert report.data["run"] == result["keras"]["step_root"] and report.data["tfdbg_version"] == 2
    ops = result["keras"]["step_ops"]
    dumped = {entry["op_name"]: entry["op_type"] for entry in report.data["tensors"]}
    forward = {name: op_type for name, op_type in ops.items() if op_type in ("Conv2D", "BiasAdd", "Relu", "MatMul")}
    assert sorted(forward.values()) == ["BiasAdd", "BiasAdd", "Conv2D", "MatMul", "MatMul", "MatMul", "Relu"]
    assert {name: dumped.get(name) for name in forward} == forward
    assert report.data["fused_op_types"] == {}
    # no disable_reference_dump() in the script: the function graph was written at exit, and tf_dump kept it
    from precision_tool.replay.reference_graph import load_reference_graph

    graph = load_reference_graph(str(capture.out / "ws_keras" / "tf" / "graph"))
    assert {name: graph[name].op for name in forward} == forward
    references = reference_arrays(capture.out / "ws_keras" / "tf" / "dump")
    fetched = np.load(capture.out / "step_fetched.npz")
    (relu,) = [name for name, op_type in forward.items() if op_type == "Relu"]
    np.testing.assert_array_equal(references[reference_op_name(relu)], fetched["relu"])
    outputs = result["keras"]["step_outputs"]
    assert outputs["relu"] == [relu, 0]
    for key in ("loss", "logits"):
        op_name, index = outputs[key]
        (path,) = [ref.path for ref in read_npy_dir(capture.out / "ws_keras" / "tf" / "dump")
                   if ref.file_op_name == reference_op_name(op_name) and ref.output_index == index]
        np.testing.assert_array_equal(np.load(path, allow_pickle=False), fetched[key], err_msg=key)


def test_keras_fit_capture(tf_captures):
    capture = tf_captures["eager"]
    result = capture.result()
    report = tf_dump(capture.out / "ws_keras", "--run", "-2", "-o", str(capture.out / "fit_dump"))
    assert report.data["run"] == result["keras"]["fit_root"]
    types = {}
    for entry in report.data["tensors"]:
        types.setdefault(entry["op_type"], []).append(entry["op_name"])
    assert {"Conv2D", "BiasAdd", "Relu", "MatMul"} <= set(types)
    (conv,), (relu,) = types["Conv2D"], types["Relu"]  # Keras 3 names them seq_1/conv_1/{convolution,Relu}
    assert conv.startswith("seq") and conv.endswith("/convolution") and relu == conv.rsplit("/", 1)[0] + "/Relu"
    scalars = [np.load(capture.out / "fit_dump" / entry["file"]) for entry in report.data["tensors"]
               if entry["dtype"] == "DT_FLOAT" and entry["shape"] == []]
    assert any(value == np.float32(result["keras"]["fit_loss"]) for value in scalars)  # the loss fit reported


def test_seed_everything(tf_captures):
    seed = tf_captures["eager"].result()["seed"]
    assert seed["same_draws"] and seed["determinism"] and seed["pythonhashseed"] == "7"
    assert seed["default_deterministic"] is False  # seed_everything(7) alone only seeds, as the original
    assert seed["summary"] == {
        "seed": 7, "seeded": ["python", "numpy", "tensorflow", "keras"],
        "tensorflow": "tf.random.set_seed, and the default graph's seed for tf.compat.v1 graph mode",
        "deterministic": True, "determinism": "deterministic ops on (tf.config.experimental.enable_op_determinism)"}
    assert seed["graph_seed"] == 7


def test_loss_scale_callback(tf_captures):
    callback = tf_captures["eager"].result()["callback"]
    assert callback["overflow_lines"] == [
        "[precision_tool] step 0: loss inf (NOT FINITE), loss scale 16384 "
        "(lowered from 32768: overflow, update skipped)",
        "[precision_tool] step 1: loss inf (NOT FINITE), loss scale 8192 "
        "(lowered from 16384: overflow, update skipped)",
        "[precision_tool] 2 of 2 steps overflowed: [0, 1]"]
    assert callback["overflow_steps"] == [0, 1]
    plain = callback["plain_lines"]
    assert len(plain) == 3 and plain[-1] == "[precision_tool] 0 of 2 steps overflowed"
    assert all(line.endswith("(finite), loss scale n/a (no LossScaleOptimizer)") for line in plain[:2])
