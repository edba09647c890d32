"""Issue 37's five cases, run as a user runs them: emulate, ``ac -c``, then the ``vcs`` and ``bisect`` lines it prints.
What is planted (and where) is the emulator's, said on its command line; what must come out is the issue's:

1. a clean TF1 training step whose convs have a bias before a training batch norm passes (``ac -c`` exit 0, no
   below-noise tensor listed by ``vcs``);
2. the ``bisect fusion`` line ``ac`` prints for a fault of ConvBiasaddFusionPass names that pass, although the
   model's harmless ReLU6-clamped overflow fails in every trial;
3. a float16-only fault whose output still passes the cosine gate is listed by ``vcs`` and named by the
   ``bisect precision`` line ``ac`` prints;
4. a reference of other weights (another seed) gives no culprit and exit 2;
5. a MobileNetV2 whose activations shrink below float16's range is said to underflow.
"""
import json
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from precision_tool.capture.determinism import DEFAULT_SEED
from precision_tool.cli import main

pytestmark = pytest.mark.tf

REPO = Path(__file__).resolve().parents[2]
CNN = str(REPO / "sample_dumps" / "models" / "cnn.py")
SCRIPTS = REPO / "tests" / "emulate" / "scripts"
CONV2 = "small_cnn_1/conv2_1/convolution"


def emulate(workspace, script, *flags, env=None):
    """``precision_tool emulate`` in a child process (it seeds TensorFlow for the process it runs in)."""
    done = subprocess.run([sys.executable, "-m", "precision_tool", "emulate", str(script), "-o", str(workspace),
                           "--numerics", "ideal", *flags], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          env=dict(os.environ, **(env or {})))
    assert done.returncode == 0, done.stdout.decode(errors="replace")[-3000:]
    return workspace


def run_json(capsys, workspace, *args):
    code = main(["-d", str(workspace), "--json", *args])
    return code, json.loads(capsys.readouterr().out)


def printed(report, command):
    """The line ``ac`` printed for ``command`` (``bisect fusion``, ``vcs`` ...), as argv for this interpreter."""
    (line,) = [line for line in report["data"]["verdict"]["next_commands"] if line.startswith(command)]
    words = shlex.split(line)
    cut = words.index("--") if "--" in words else len(words)
    after = words[cut + 1:]
    if after[:1] == ["precision_tool"]:  # the tool as this test runs it (the venv's bin may not be on PATH)
        after = [sys.executable, "-m", "precision_tool", *after[1:]]
    return words[:cut] + (["--", *after] if cut < len(words) else [])


def test_case1_a_clean_training_step_with_conv_biases_before_batch_norm_passes(tmp_path, capsys):
    workspace = emulate(tmp_path / "ws", SCRIPTS / "train_conv_bn.py", env={"PRECISION_TOOL_TRAIN_CONV_BIAS": "1"})
    code, report = run_json(capsys, workspace, "ac", "-c", "-o", str(tmp_path / "out"))
    judgment = report["data"]["compare"]["judgment"]
    noise = judgment["below_noise"]
    assert code == 0 and report["data"]["verdict"]["culprit"] is None, report["data"]["verdict"]
    assert any("BiasAdd_grad/BiasAddGrad:output:0" in name for name in noise)  # the sum that cancels
    assert any("ResourceApplyMomentum" in name for name in noise)  # and the bias update made from it
    code, listed = run_json(capsys, workspace, "vcs", "-f", str(tmp_path / "out"), "-l", "0")
    assert code == 0 and listed["data"]["failing"] == [] and listed["data"]["culprit"] is None
    assert set(listed["data"]["below_noise"]) == set(noise)


def test_case2_bisect_fusion_names_the_pass_despite_the_harmless_overflow(tmp_path, capsys):
    fault = ["--perturb-pass", "ConvBiasaddFusionPass=0.2"]
    workspace = emulate(tmp_path / "ws", CNN, "--fusion", "both", *fault)
    code, report = run_json(capsys, workspace, "ac", "-c", "-o", str(tmp_path / "out"))
    assert code == 1 and "ConvBiasaddFusionPass" in report["data"]["verdict"]["culprit"]["passes"]
    code, bisected = run_json(capsys, workspace, *printed(report, "bisect fusion"))
    data = bisected["data"]
    assert code == 0 and data["culprit_passes"] == ["ConvBiasaddFusionPass"], data
    assert any("conv3_1" in name for name in data["outside"])  # the clamped overflow every trial keeps


def test_case3_an_fp16_only_fault_that_passes_the_cosine_gate_is_listed_and_bisected(tmp_path, capsys):
    workspace = emulate(tmp_path / "ws", CNN, "--perturb", f"{CONV2}=0.05@fp16")
    code, report = run_json(capsys, workspace, "ac", "-c", "-o", str(tmp_path / "out"))
    assert code == 1 and report["data"]["verdict"]["culprit"]["op_name"] == CONV2
    assert report["data"]["compare"]["counts"]["failed"] == 0  # every tensor passes the cosine gate
    code, listed = run_json(capsys, workspace, *printed(report, "vcs"))
    assert code == 1 and listed["data"]["culprit"]["op_name"] == CONV2
    assert listed["data"]["culprit"]["measured"]["standout"] is True
    out = (main(["-d", str(workspace), *printed(report, "vcs")]), capsys.readouterr().out)[1]
    assert f"{CONV2}:output:0 (culprit)" in out.splitlines()[4]  # the table's first row, under title and header
    code, bisected = run_json(capsys, workspace, *printed(report, "bisect precision"))
    assert code == 0 and bisected["data"]["culprit_ops"] == [CONV2], bisected["data"]
    assert bisected["data"]["candidates"][0] == CONV2


def test_case4_a_reference_of_other_weights_gives_no_culprit_and_exit_2(tmp_path, capsys):
    workspace = emulate(tmp_path / "ws", CNN)
    other = emulate(tmp_path / "other", CNN, "--seed", "1")
    assert json.loads((workspace / "manifest.json").read_text())["seed"] == DEFAULT_SEED == 2022
    shutil.rmtree(workspace / "tf")
    shutil.copytree(other / "tf", workspace / "tf")
    code, report = run_json(capsys, workspace, "ac", "-c", "-o", str(tmp_path / "out"))
    verdict = report["data"]["verdict"]
    assert code == 2 and verdict["culprit"] is None
    assert verdict["headline"] == "No verdict: the two runs do not compute the same model."
    mismatch = report["data"]["compare"]["judgment"]["model_mismatch"]
    assert [item["kind"] for item in mismatch] == ["constant"]  # the weights; the batch is the script's own
    code, listed = run_json(capsys, workspace, "vcs", "-f", str(tmp_path / "out"))
    assert code == 2 and listed["data"]["culprit"] is None


def test_case5_float16_underflow_is_named_not_called_drift(tmp_path, capsys):
    workspace = emulate(tmp_path / "ws", SCRIPTS / "mobilenet_v2_underflow.py")
    code, report = run_json(capsys, workspace, "ac", "-c", "-o", str(tmp_path / "out"))
    verdict = report["data"]["verdict"]
    text = " ".join(verdict["also"])
    assert code == 1 and verdict["culprit"] is None and "underflow" in text
    assert "keep the ops that produce them in float32" in text and "accumulated rounding (drift)" not in text
    assert "scale the loss" not in text  # a forward pass: no loss to scale
    assert any(line.startswith("bisect precision") for line in verdict["next_commands"])


def test_a_trial_that_computes_another_model_is_an_error_not_a_verdict(tmp_path, capsys):
    """The workspace's step has conv biases (an environment variable of the script); the bisect command repeats the
    emulation's arguments but not its environment, so its trials build the model without them: bisect refuses
    them, naming what differs, instead of 'proving' a fix on another model (a newcomer walk found this)."""
    planted = "block2_conv/Conv2D"
    workspace = emulate(tmp_path / "ws", SCRIPTS / "train_conv_bn.py", "--perturb", f"{planted}=0.05@fp16",
                        env={"PRECISION_TOOL_TRAIN_CONV_BIAS": "1"})
    command = [sys.executable, "-m", "precision_tool", "emulate", str(SCRIPTS / "train_conv_bn.py"), "--fusion",
               "switch", "--numerics", "ideal", "--perturb", f"{planted}=noise:0.05@fp16"]
    assert "PRECISION_TOOL_TRAIN_CONV_BIAS" not in os.environ
    code = main(["-d", str(workspace), "bisect", "precision", "--", *command])
    err = capsys.readouterr().err
    assert code == 2 and "the command does not compute the failing run's model" in err
    assert "bias" in err and "environment variables" in err
