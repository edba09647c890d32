"""The original tool's ``NpuPrintLossScaleCallBack`` under a real ``model.fit`` in every environment.

``scripts/loss_scale_print.py`` runs in subprocesses with the TensorFlow of the interpreter running pytest:
TF 1.15's ``tf.keras`` (graph mode, its experimental LossScaleOptimizer), Keras 2.6, Keras 3 on TF 2.21, and --
where tf_keras is installed -- tf_keras imported directly and tf_keras as ``tf.keras`` (``TF_USE_LEGACY_KERAS=1``).
The expected scales are Keras' documented dynamic loss scaling: it starts at 2**15 = 32768 and halves on every
step whose gradients are not finite (here every step: the loss is infinite). ``not_overflow_status`` is NPU's
``last_step_finite``, which no Keras optimizer has: ``n/a``.
"""
import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from precision_tool.capture.callbacks import original_line

pytestmark = pytest.mark.compat

REPO = Path(__file__).resolve().parents[2]
SCRIPT = Path(__file__).resolve().parent / "scripts" / "loss_scale_print.py"
LINE = "PrecisionTool: Train steps {}, loss_scale={} / not_overflow_status={}"
OVERFLOW = [LINE.format(0, "32768.000", "n/a"), LINE.format(1, "16384.000", "n/a")]
NPU_LIKE = [LINE.format(0, "1024.000", "False"), LINE.format(1, "1024.000", "False")]
PLAIN = [LINE.format(0, "n/a", "n/a"), LINE.format(1, "n/a", "n/a")]
HAVE_TF_KERAS = importlib.util.find_spec("tf_keras") is not None
RUNS = {"tf.keras": ("tf.keras", {})}
if HAVE_TF_KERAS:
    RUNS.update({"tf_keras": ("tf_keras", {}), "legacy tf.keras": ("tf.keras", {"TF_USE_LEGACY_KERAS": "1"})})


@pytest.fixture(scope="module")
def printed():
    """``{run: the script's JSON}`` for every run of :data:`RUNS`, started at once."""
    pytest.importorskip("tensorflow")
    processes = {}
    for name, (flavour, extra) in RUNS.items():
        env = dict(os.environ, PYTHONPATH=str(REPO), TF_CPP_MIN_LOG_LEVEL="2")
        env.pop("TF_USE_LEGACY_KERAS", None)
        env.update(extra)
        processes[name] = subprocess.Popen([sys.executable, str(SCRIPT), flavour], env=env, stdout=subprocess.PIPE,
                                           stderr=subprocess.PIPE, universal_newlines=True)
    results = {}
    for name, process in processes.items():
        out, err = process.communicate(timeout=300)
        assert process.returncode == 0, f"{name}: {err[-3000:]}"
        results[name] = json.loads(out.splitlines()[-1])
    return results


def test_the_line_is_the_originals_and_missing_values_are_na():
    class NpuOptimizer:  # the two values NPU's NPULossScaleOptimizer has, as plain numbers
        loss_scale, last_step_finite = 65536.0, True

    assert original_line(7, NpuOptimizer()) == LINE.format(7, "65536.000", "True")
    assert original_line(0, object()) == LINE.format(0, "n/a", "n/a")


def test_keras_loss_scale_optimizer_scales_are_printed_before_each_step(printed):
    result = printed["tf.keras"]
    assert result["overflow"] == OVERFLOW
    assert result["is_original_class"]


def test_npu_like_optimizer_and_plain_sgd(printed):
    result = printed["tf.keras"]
    assert result["npu_like"] == NPU_LIKE and result["plain"] == PLAIN


def test_the_callback_derives_from_tf_keras_callback(printed):
    base = printed["tf.keras"]["callback_base"]
    version = printed["tf.keras"]["tf_version"]
    if version.startswith("1."):
        assert base == "tensorflow.python.keras.callbacks"
    elif version.startswith("2.6."):
        assert base == "keras.callbacks"  # Keras 2.6 is tf.keras
    else:
        assert base.startswith("keras.src.")  # Keras 3


@pytest.mark.skipif(not HAVE_TF_KERAS, reason="tf_keras is not installed here")
def test_tf_keras_imported_directly_gets_a_tf_keras_callback(printed):
    """tf.keras is Keras 3, the model is tf_keras': a Keras 3 Callback would break tf_keras' fit."""
    result = printed["tf_keras"]
    assert result["overflow"] == OVERFLOW and result["plain"] == PLAIN
    assert result["callback_base"].startswith("tf_keras.") and not result["is_original_class"]


@pytest.mark.skipif(not HAVE_TF_KERAS, reason="tf_keras is not installed here")
def test_tf_keras_as_tf_keras_with_the_legacy_switch(printed):
    result = printed["legacy tf.keras"]
    assert result["overflow"] == OVERFLOW and result["npu_like"] == NPU_LIKE and result["plain"] == PLAIN
    assert result["callback_base"].startswith("tf_keras.") and result["is_original_class"]
