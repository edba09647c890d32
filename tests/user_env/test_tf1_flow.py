"""The TF1 user's whole flow on Python 3.7 + TF 1.15, as the original precision_tool's README had it.

1. ``tests/capture/scripts/tf1_readme_flow.py``: ``session_dump_config(config, action='dump')`` (TF ignores the
   NpuOptimizer on CPU), ``seed_everything()``, a small tf.layers/tf.nn CNN in graph mode, then
   ``with tf.Session(config=reference_session_config(config)) as sess: sess = sess_dump(sess)``, ``sess.run``,
   and ``y.eval()`` on the user's own session afterwards.
2. ``python -m precision_tool -d WS tf_dump`` converts the run; its .npy files must hold exactly what
   ``sess.run`` returned (TensorFlow itself is the reference here).
3. An NPU side is built from those values with precision_tool's writers (plain numpy, run here on the users'
   numpy): every compute op's dump holds the reference rounded to float16, except ``relu1``, whose output gets
   +1.0 everywhere; the Build graph lists the ops with their TF names. ``ac -c`` must name ``relu1`` and exit 1,
   and its cosine for ``relu1`` must equal the one numpy computes from the two arrays.

Skipped where TensorFlow is not 1.x (the script is TF1 code).
"""
import csv
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from precision_tool.formats.npy_dir import read_npy_dir, reference_op_name

from .npu_side import build_npu_side, cli, tensorflow_version


TF_VERSION = tensorflow_version()
pytestmark = [pytest.mark.compat,
              pytest.mark.skipif(not (TF_VERSION or "").startswith("1."),
                                 reason=f"TF1 flow: needs TensorFlow 1.x, not {TF_VERSION or 'none'}")]

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "tests" / "capture" / "scripts" / "tf1_readme_flow.py"
PERTURBED, DELTA = "relu1", 1.0


@pytest.fixture(scope="module")
def flow(tmp_path_factory):
    out = tmp_path_factory.mktemp("tf1_flow")
    workspace = out / "precision_data"
    env = dict(os.environ, PYTHONPATH=str(REPO), TF_CPP_MIN_LOG_LEVEL="2", PRECISION_TOOL_DATA=str(workspace))
    for name in ("PRECISION_TOOL_SEED", "PRECISION_TOOL_ACTION", "DUMP_GE_GRAPH", "DUMP_GRAPH_LEVEL",
                 "DUMP_GRAPH_PATH", "TF_ENABLE_ONEDNN_OPTS"):
        env.pop(name, None)
    done = subprocess.run([sys.executable, str(SCRIPT), str(out)], env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, universal_newlines=True, timeout=300)
    assert done.returncode == 0, done.stdout[-4000:]
    result = json.loads((out / "result.json").read_text())
    fetched = np.load(out / "fetched.npz")
    result["fetched"] = {key.replace("__", "/"): fetched[key] for key in fetched.files}
    result["output"], result["workspace"], result["out"] = done.stdout, workspace, out
    converted = cli(workspace, "tf_dump")
    assert converted.returncode == 0, converted.stdout
    result["tf_dump"] = converted.stdout
    return result


def reference(workspace):
    """``{tf op name: output 0}`` of the converted reference."""
    return {ref.file_op_name: np.load(ref.path, allow_pickle=False) for ref in read_npy_dir(workspace / "tf" / "dump")
            if ref.output_index == 0}


def test_the_readme_script_runs_and_the_users_session_stays_usable(flow):
    assert flow["wrapped_user_session"] and flow["eval_equals_run"] and flow["user_session_closed"]
    assert flow["import_seed"] == 2022
    output = flow["output"]
    # session_dump_config ran, TF ran on CPU, and the user is told that nothing goes to the NPU folders (issue 39)
    assert "[precision_tool] no NPU on this machine (npu_bridge, Huawei's TF adapter, is not installed)" in output
    assert "[precision_tool] seed 2022: python, numpy, tensorflow seeded (TensorFlow: " \
           "tf.compat.v1.set_random_seed on the default graph); deterministic ops unchanged" in output
    assert "[precision_tool] WARNING" not in output  # the reference config keeps Grappler off: no fused names


def test_tf_dump_holds_what_the_session_returned(flow):
    values = reference(flow["workspace"])
    assert sorted(flow["fetched"]) == ["conv1/BiasAdd", "conv1/Conv2D", "fc/BiasAdd", "fc/MatMul", "flat",
                                       "pool1/MaxPool", "prob", "relu1"]
    for name, value in flow["fetched"].items():
        np.testing.assert_array_equal(values[reference_op_name(name)], value, err_msg=name)
    types = {op["name"]: op["type"] for op in flow["ops"]}
    assert [types[name] for name in ("conv1/Conv2D", "conv1/BiasAdd", "relu1", "pool1/MaxPool", "fc/MatMul")] == [
        "Conv2D", "BiasAdd", "Relu", "MaxPool", "MatMul"]
    # what sess.run(fetches) executes, one output each: the input; conv1's and fc's kernel and bias, each a variable
    # and its /read; conv1/Conv2D, conv1/BiasAdd, relu1, pool1/MaxPool, flat and its shape, fc/MatMul, fc/BiasAdd and
    # prob
    assert f"wrote {1 + 2 * 2 * 2 + 9} tensors" in flow["tf_dump"]


def cosine(a, b):
    a, b = a.astype(np.float64).ravel(), b.astype(np.float64).ravel()
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


def test_ac_names_the_perturbed_op_and_exits_1(flow, tmp_path):
    workspace = flow["workspace"]
    values = reference(workspace)
    npu = build_npu_side(workspace, flow["ops"], values,
                         {PERTURBED: lambda output: (output.astype(np.float32) + DELTA).astype(np.float16)})
    result_dir = tmp_path / "ac"
    checked = cli(workspace, "ac", "-c", "-o", str(result_dir))
    text = checked.stdout
    assert checked.returncode == 1, text
    # replayed under this very TensorFlow from the graph tf_dump kept: relu1 adds the +1.0 itself
    assert "Verdict: Most likely culprit: relu1 (Relu), by local error (replay)" in text
    # (float32: the output is float16, see replay_width)
    assert "relu1:output:0 replayed (float32) on the op's own dumped inputs" in text
    assert "against the reference its output 0 fails (FAIL: cosine" in text
    (csv_path,) = result_dir.glob("result_*.csv")
    with open(csv_path, newline="", encoding="utf-8") as handle:
        rows = {row["TensorIndex"]: row for row in csv.DictReader(handle)}
    # the perturbed output, and the MaxPool input that reads it, against what numpy says about the two arrays
    relu_npu, relu_ref = npu[PERTURBED], values[PERTURBED]
    expected_cosine = cosine(relu_npu, relu_ref)
    expected_mean_error = float(np.mean(np.abs(relu_npu.astype(np.float64) - relu_ref)))
    assert expected_cosine < 0.99 and abs(expected_mean_error - DELTA) < 1e-3  # +1.0 everywhere, in float16
    for tensor in ("relu1:output:0", "pool1/MaxPool:input:0"):
        assert abs(float(rows[tensor]["CosineSimilarity"]) - expected_cosine) <= 1e-6, tensor
        assert abs(float(rows[tensor]["MeanAbsoluteError"]) - expected_mean_error) <= 1e-6, tensor
    # everything else passes: float16 rounding alone; the zero biases have no cosine (NaN) and count as BOTH_ZERO
    others = {tensor: row["CosineSimilarity"] for tensor, row in rows.items()
              if tensor not in ("relu1:output:0", "pool1/MaxPool:input:0")}
    # every tensor npu_side dumps: the 8 compute ops' outputs and their 13 inputs (Conv2D, BiasAdd, Reshape, MatMul
    # and BiasAdd two each, Relu, MaxPool and Softmax one each), but the two above
    assert len(others) == 8 + 13 - 2
    assert {tensor for tensor, value in others.items() if value == "NaN"} == {"conv1/BiasAdd:input:1",
                                                                              "fc/BiasAdd:input:1"}
    assert all(float(value) >= 0.9999 for value in others.values() if value != "NaN")
