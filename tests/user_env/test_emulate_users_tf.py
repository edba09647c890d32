"""``emulate`` in the users' own environments (issue 39): TF1 graph code (``graph_model()``: tf.compat.v1.layers,
fused batch norm) and a TF1 training step (``train_graph()``) on TensorFlow 1.15 / Python 3.7 as on TF 2.x, and a
TF2 custom training step (``model()`` returning a ``tf.GradientTape`` step with batch norm in training mode) on TF
2.x with every Keras installed (Keras 3, ``tf_keras``; Keras 2.6 under TF 2.6).

Each is emulated and checked by the CLI as a user types it, in this interpreter: ``ac -c`` exits 0 with no
culprit, and every dumped NPU tensor is aligned. The TF2 step's reference is checked against TensorFlow itself: the
step run eagerly (scripts/tf2_step_truth.py) gives the loss, the gradients and every variable's value after the
step, which the reference of the step's outputs and of its modelled writes must equal.
"""
import glob
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from precision_tool.formats.npy_dir import reference_op_name
from sample_counts import dumped_tensors

from .npu_side import REPO, cli, tensorflow_version

TF_VERSION = tensorflow_version() or ""
pytestmark = [pytest.mark.compat, pytest.mark.tf,
              pytest.mark.skipif(not TF_VERSION, reason="needs TensorFlow (emulate runs the model)")]
SCRIPTS = REPO / "tests" / "emulate" / "scripts"
GAPS = ("npu_only_ops", "unaligned", "graph_ops_without_dump", "dumped_not_in_graph", "ambiguous", "unreadable",
        "unreadable_references")


def _installed(module: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(module) is not None


def _keras_variants():
    if TF_VERSION.startswith("1."):
        return []
    return [k for k in ("keras", "tf_keras") if _installed(k)]


def emulate(tmp_path: Path, script: Path, *argv, env=None) -> Path:
    workspace = tmp_path / "ws"
    done = subprocess.run([sys.executable, "-m", "precision_tool", "emulate", str(script), "-o", str(workspace),
                           *argv], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          universal_newlines=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:]
    return workspace


def assert_clean(workspace: Path, out: Path) -> dict:
    checked = cli(workspace, "ac", "-c", "-o", str(out))
    assert checked.returncode == 0, checked.stdout[-3000:]
    assert "Verdict: No culprit found." in checked.stdout
    summary = json.loads((out / "summary.json").read_text())
    coverage = summary["coverage"]
    assert coverage["aligned_count"] == coverage["npu_tensors"] > 0
    for key in GAPS:
        assert coverage[key] == [], (key, coverage[key])
    assert summary["counts"]["failed"] == 0 and summary["judgment"]["culprit"] is None
    return summary


def user_env(**extra):
    import os

    env = dict(os.environ, PYTHONPATH=str(REPO), TF_CPP_MIN_LOG_LEVEL="2", **extra)
    env.pop("TF_USE_LEGACY_KERAS", None)
    return env


def test_graph_model_emulates_and_compares_clean(tmp_path):
    workspace = emulate(tmp_path, SCRIPTS / "tf1_resnet_graph.py", env=user_env())
    summary = assert_clean(workspace, tmp_path / "ac")
    # every input and output of every dump file (their headers): the three batch norms of the script among them,
    # each fused into its convolution or alone
    assert summary["coverage"]["npu_tensors"] == dumped_tensors(workspace)


def test_train_graph_emulates_and_compares_clean(tmp_path):
    workspace = emulate(tmp_path, SCRIPTS / "train_conv_bn.py", env=user_env())
    assert_clean(workspace, tmp_path / "ac")
    manifest = json.loads((workspace / "manifest.json").read_text())
    assert manifest["training_step"] == 0
    assert sum(name.endswith("/ResourceApplyMomentum:0") or name.endswith("/ApplyMomentum:0")
               for name in manifest["outputs"]) == 8  # 2 kernels, 2 gammas, 2 betas, the dense kernel and bias


def reference(workspace: Path, op_name: str) -> np.ndarray:
    (path,) = glob.glob(str(workspace / "tf" / "dump" / f"{reference_op_name(op_name)}.0.*.npy"))
    return np.load(path, allow_pickle=False)


@pytest.mark.parametrize("apply", ["0", "1"], ids=["gradients", "sgd_applied"])
@pytest.mark.parametrize("keras", _keras_variants() or [pytest.param("none", marks=pytest.mark.skip(
    reason=f"a TF2 training step needs TensorFlow 2, not {TF_VERSION}"))])
def test_a_tf2_gradient_tape_step_emulates_and_its_writes_are_what_tensorflow_computes(tmp_path, keras, apply):
    env = user_env(PRECISION_TOOL_KERAS=keras, PRECISION_TOOL_APPLY=apply)
    script = SCRIPTS / "tf2_train_step.py"
    workspace = emulate(tmp_path, script, env=env)
    assert_clean(workspace, tmp_path / "ac")
    truth_file = tmp_path / "truth.npz"
    done = subprocess.run([sys.executable, str(REPO / "tests" / "user_env" / "scripts" / "tf2_step_truth.py"),
                           str(script), str(truth_file)], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          universal_newlines=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:]
    truth = np.load(str(truth_file))
    manifest = json.loads((workspace / "manifest.json").read_text())
    outputs = [name.split(":")[0] for name in manifest["outputs"]]
    returned = [key for key in truth.files if key.startswith("output/")]
    # the step returns the loss and one gradient per trainable variable (2 kernels, 2 gammas, 2 betas, dense kernel
    # and bias): the first outputs of the model, in order
    assert len(returned) == 9
    for k in range(len(returned)):
        np.testing.assert_allclose(reference(workspace, outputs[k]), truth[f"output/{k}"], rtol=2e-5, atol=1e-6,
                                   err_msg=f"output {k}")
    # every variable the step changed is the value of one modelled write (its new value, an output of the model)
    writes = {name: reference(workspace, name) for name in outputs[len(returned):]}
    changed = [key for key in truth.files if key.startswith("variable/")]
    matched, unwritten = set(), []
    for key in changed:  # (a beta starts at 0: after one step it equals its momentum buffer; both writes match)
        value = truth[key]
        hits = {name for name, written in writes.items() if written.shape == value.shape
                and np.allclose(written, value, rtol=2e-5, atol=1e-6)}
        matched |= hits
        unwritten += [] if hits else [key]
    moving = [key for key in changed if "moving" in key]
    assert len(moving) == 4 and not set(moving) & set(unwritten)  # two batch norms, mean and variance each
    if apply == "0":  # only the moving averages are written
        assert len(writes) == 4 and matched == set(writes)
    else:  # and every trainable variable, its momentum buffer and the step counter
        assert len(writes) >= 4 + 8 + 8 and matched == set(writes) and unwritten == [], (len(writes), unwritten)


@pytest.mark.parametrize("case", ["pb", "meta"])
def test_graph_def_emulates_and_compares_clean(tmp_path, case):
    """A frozen GraphDef written by this TensorFlow (``convert_variables_to_constants``), and the meta graph with
    its checkpoint, given by ``graph_def()``."""
    models = tmp_path / "models"
    models.mkdir()
    build = ("import sys; sys.path.insert(0, sys.argv[1]); from graph_def_cases import build; build(sys.argv[2])")
    done = subprocess.run([sys.executable, "-c", build, str(SCRIPTS), str(models)], env=user_env(),
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:]
    script = models / "frozen_graph_model.py"
    script.write_bytes((SCRIPTS / script.name).read_bytes())
    workspace = emulate(tmp_path, script, env=user_env(PRECISION_TOOL_GD_CASE=case))
    assert_clean(workspace, tmp_path / "ac")
