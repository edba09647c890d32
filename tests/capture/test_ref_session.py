"""sess_dump and estimator_dump on TF 1.15, 2.6 and 2.21: capture in a subprocess, ``tf_dump`` here.

``scripts/v1_reference_capture.py`` runs with the interpreter running pytest (so in each user environment with
its own TensorFlow); this process never imports TensorFlow. Values are checked against what TensorFlow returned
to the script, and the linear model's against values derived by hand:
x = [[1, 2], [3, 4]], w = [[0.5], [-1]], b = 0.25 give pred = x w + b = [[-1.25], [-2.25]]; with
y = [[1], [0]], loss = mean((pred - y)^2) = (2.25^2 + 2.25^2) / 2 = 5.0625 (all exact in float32). One SGD step
(rate 0.1): dloss/dw = x^T (pred - y) = [[-9], [-13.5]], dloss/db = -4.5, so w = [[1.4], [0.35]], b = 0.7.
"""
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from precision_tool.commands.command_registry import CommandRegistry, Context
from precision_tool.commands.tf_dump import COMMAND
from precision_tool.formats.npy_dir import read_npy_dir

pytestmark = pytest.mark.compat

REPO = Path(__file__).resolve().parents[2]
SCRIPT = Path(__file__).resolve().parent / "scripts" / "v1_reference_capture.py"
PRED = [[-1.25], [-2.25]]
LOSS = 5.0625
STEPPED_W, STEPPED_B = [[1.4], [0.35]], [0.7]


@pytest.fixture(scope="module")
def capture(tmp_path_factory):
    pytest.importorskip("tensorflow")
    out = tmp_path_factory.mktemp("v1_reference")
    env = dict(os.environ, PYTHONPATH=str(REPO), TF_CPP_MIN_LOG_LEVEL="2")
    for name in ("TF_ENABLE_ONEDNN_OPTS", "PRECISION_TOOL_DATA", "PRECISION_TOOL_SEED"):
        env.pop(name, None)
    done = subprocess.run([sys.executable, str(SCRIPT), str(out)], env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, universal_newlines=True, timeout=300)
    assert done.returncode == 0, done.stdout[-4000:]
    result = json.loads((out / "result.json").read_text())
    result["_output"], result["_out"] = done.stdout, out
    return result


def tf_dump(workspace, *argv):
    return CommandRegistry([COMMAND]).dispatch(["tf_dump", *argv], Context(data_dir=str(workspace)))


def dumped_types(report):
    return {entry["op_name"]: entry["op_type"] for entry in report.data["tensors"]}


def output0(folder):
    return {ref.file_op_name: np.load(ref.path, allow_pickle=False) for ref in read_npy_dir(folder)
            if ref.output_index == 0}


def test_sess_dump_wraps_the_users_session_which_stays_the_default(capture):
    """`with tf.Session() as sess: sess = sess_dump(sess)` then `relu.eval()`: the original tool's pattern."""
    state = capture["grappler_on"]
    assert state["same_session"] and state["default_is_original"] and state["eval_equal"]
    assert state["closed_after_with"]  # closed by the user's `with`, not by sess_dump


GRAPPLER = ("the session runs Grappler, which fuses ops (Conv2D+BiasAdd+Relu run as one _FusedConv2D named after "
            "the Relu), so tfdbg dumps the fused op and the Conv2D and BiasAdd names the NPU dump refers to are "
            "missing; ")


def test_a_grappler_session_is_warned_about_once_with_the_fix(capture):
    warnings = [w for w in capture["warnings"] if w.startswith("CaptureWarning")]
    sess_dump = (f"CaptureWarning: sess_dump: {GRAPPLER}create it with "
                 "tf.Session(config=npu_tf_config.reference_session_config(config)) (the session is wrapped as it is)")
    estimator = (f"CaptureWarning: estimator_dump: {GRAPPLER}pass config=npu_tf_config.reference_session_config("
                 "config) to MonitoredTrainingSession (Estimator: RunConfig(session_config="
                 "npu_tf_config.reference_session_config(config)))")
    assert warnings == [sess_dump] + ([] if "skipped" in capture["estimator"] else [estimator])
    assert capture["_output"].count("[precision_tool] WARNING: sess_dump: the session runs Grappler") == 1


def test_with_grappler_on_the_dump_holds_one_fused_op_named_after_the_relu(capture):
    """Measured on TF 1.15 (no oneDNN in its CPU wheel), 2.6 and 2.21 (oneDNN off): the remapper's fusion."""
    workspace = capture["_out"] / "ws_grappler_on"
    report = tf_dump(workspace, "-i", capture["grappler_on"]["capture"])
    types = dumped_types(report)
    assert types["relu"] == "_FusedConv2D" and "conv" not in types and "bias" not in types
    assert report.data["fused_op_types"] == {"_FusedConv2D": 1}
    np.testing.assert_array_equal(output0(workspace / "tf" / "dump")["relu"],
                                  np.load(capture["_out"] / "grappler_on_relu.npy"))


def test_with_the_reference_config_every_op_keeps_its_name(capture):
    workspace = capture["_out"] / "ws_reference"
    types = dumped_types(tf_dump(workspace))
    assert (types["conv"], types["bias"], types["relu"]) == ("Conv2D", "BiasAdd", "Relu")
    relu = output0(workspace / "tf" / "dump")["relu"]
    np.testing.assert_array_equal(relu, np.load(capture["_out"] / "reference_relu.npy"))
    assert relu.shape == (2, 6, 6, 4) and relu.min() == 0.0


def test_monitored_training_session_hook(capture):
    assert capture["monitored"] == {"pred": PRED, "loss": LOSS}
    workspace = capture["_out"] / "ws_monitored"
    types = dumped_types(tf_dump(workspace))
    add = "Add" if capture["tf_version"].startswith("1.") else "AddV2"  # tf.add's op in TF 1 and TF 2
    assert (types["matmul"], types["pred"], types["loss"]) == ("MatMul", add, "Mean")
    values = output0(workspace / "tf" / "dump")
    assert values["pred"].tolist() == PRED and values["loss"] == np.float32(LOSS)


def test_estimator_hook(capture):
    estimator = capture["estimator"]
    if "skipped" in estimator:
        pytest.skip(estimator["skipped"])
    np.testing.assert_allclose(estimator["w"], STEPPED_W, rtol=1e-6)
    np.testing.assert_allclose(estimator["b"], STEPPED_B, rtol=1e-6)
    workspace = capture["_out"] / "ws_estimator"
    listing = tf_dump(workspace, "--list")
    assert len(listing.blocks[0].rows) == 1  # the training step is the one run the hook saw
    assert dumped_types(tf_dump(workspace))["matmul"] == "MatMul"
    values = output0(workspace / "tf" / "dump")
    assert values["pred"].tolist() == PRED and values["loss"] == np.float32(LOSS)
    assert values["matmul"].tolist() == [[-1.5], [-2.5]]


def test_with_remapping_off_the_warning_does_not_claim_fused_names(monkeypatch, capsys, tmp_path):
    pytest.importorskip("tensorflow")
    from precision_tool.capture import reference_dump as reference
    from precision_tool.capture.npu_config import session_dump_config

    monkeypatch.setenv("PRECISION_TOOL_DATA", str(tmp_path))
    monkeypatch.setattr(reference, "_GRAPPLER_WARNED", set())
    config = session_dump_config(None, "dump")  # the original README's NPU config: remapping OFF
    with pytest.warns(UserWarning):  # a CaptureWarning
        assert reference.warn_grappler_once("sess_dump", "fix it", config)
    err = capsys.readouterr().err
    assert "remapping off, so Conv2D, BiasAdd and Relu keep their names" in err and "_FusedConv2D" not in err
    config.graph_options.rewrite_options.remapping = type(config.graph_options.rewrite_options).ON
    with pytest.warns(UserWarning):
        assert reference.warn_grappler_once("estimator_dump", "fix it", config)
    assert "run as one _FusedConv2D" in capsys.readouterr().err
