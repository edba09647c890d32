"""Issue 38's escapes, run as a user runs them under the default ``--numerics ascend910``: a fault of every op of
one fusion pass, and float16 accumulation over long reductions, each once escaped with exit 0; and the clean
emulation names nobody although its native float16 kernels add error the replay does not."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from precision_tool.cli import main

pytestmark = pytest.mark.tf

REPO = Path(__file__).resolve().parents[2]
RESNET_BLOCK = REPO / "tests" / "emulate" / "scripts" / "tf1_resnet_graph.py"
WIDE = '''import numpy as np
import tensorflow as tf
v1 = tf.compat.v1


def graph_model(image):
    x = tf.nn.relu(v1.layers.conv2d(image, 512, 1, name="expand"))
    y = tf.nn.relu(v1.layers.conv2d(x, 16, 3, padding="same", name="wide"))  # 3 x 3 x 512 = 4,608 terms
    pooled = tf.reduce_mean(y, axis=[1, 2])
    w1 = v1.get_variable("w1", [16, 2048], initializer=v1.glorot_uniform_initializer())
    w2 = v1.get_variable("w2", [2048, 10], initializer=v1.glorot_uniform_initializer())
    return tf.nn.softmax(tf.matmul(tf.nn.relu(tf.matmul(pooled, w1)), w2, name="dense_out"))  # 2,048 terms


def inputs():
    return np.random.default_rng(3).uniform(-1.0, 1.0, (2, 6, 6, 8)).astype("float32")
'''


def emulate(workspace, script, *flags):
    done = subprocess.run([sys.executable, "-m", "precision_tool", "emulate", str(script), "-o", str(workspace),
                           *flags], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=dict(os.environ))
    assert done.returncode == 0, done.stdout.decode(errors="replace")[-3000:]
    return workspace


def autocheck(capsys, workspace):
    code = main(["-d", str(workspace), "--json", "ac", "-c", "--workers", "1"])
    data = json.loads(capsys.readouterr().out)["data"]
    return code, data["verdict"], data["compare"]["judgment"]


def test_a_fault_of_every_op_of_one_pass_is_named_as_the_pass(tmp_path, capsys):
    workspace = emulate(tmp_path / "ws", RESNET_BLOCK, "--perturb-pass", "ConvBatchnormFusionPass=0.02")
    code, verdict, judgment = autocheck(capsys, workspace)
    assert code == 1 and verdict["culprit"]["op_name"] == "block/stem/Conv2D"
    # TbeConvElemwiseFusionPass's two ops are some of them: not named again; the three are all the Conv2D ops too
    fault, kernel = judgment["systemic"]
    assert (fault["kind"], fault["name"], fault["measured"]) == ("fusion pass", "ConvBatchnormFusionPass", 3)
    assert (kernel["kind"], kernel["name"], kernel["ops"]) == ("op type", "Conv2D", fault["ops"])
    assert any("systemic fault of the fusion pass" in reason for reason in verdict["culprit"]["reasons"])
    code = main(["-d", str(workspace), "vcs"])
    assert code == 1 and "Systemic: fusion pass ConvBatchnormFusionPass: 3 of 3" in capsys.readouterr().out


def test_float16_accumulation_over_thousands_of_terms_is_named(tmp_path, capsys):
    script = tmp_path / "wide.py"
    script.write_text(WIDE)
    for planted in ("wide/Conv2D", "dense_out"):
        workspace = emulate(tmp_path / planted.replace("/", "_"), script, "--perturb", f"{planted}=fp16acc")
        code, verdict, judgment = autocheck(capsys, workspace)
        assert code == 1 and verdict["culprit"]["op_name"] == planted, verdict
        (measured,) = [op for op in judgment["standouts"] if op["op_name"] == planted]
        assert measured["beyond_spec"] and measured["score"] > 1  # beyond the Cube op's 4 roundings


def test_the_clean_emulation_with_native_float16_kernels_names_nobody(tmp_path, capsys):
    workspace = emulate(tmp_path / "ws", RESNET_BLOCK, "--precision-mode", "allow_mix_precision")
    manifest = json.loads((workspace / "manifest.json").read_text())
    assert (manifest["numerics"], manifest["precision_mode"]) == ("ascend910", "allow_mix_precision")
    code, verdict, judgment = autocheck(capsys, workspace)
    assert code == 0 and verdict["culprit"] is None and judgment["systemic"] == []
