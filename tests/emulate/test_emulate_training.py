"""A training step emulated (issue 16): forward, loss, gradients and the variable updates of step N of a Conv/BN/ReLU
network (scripts/train_conv_bn.py) with Momentum, SGD, Nesterov, Keras 2's SGD, a static and a dynamic loss scale.

The emulations run once in a subprocess (scripts/train_cases.py). Checked against independent sources: the
variables' values after the step as TensorFlow's own optimizer kernels write them (real variables, the original
graph) against the reference of the emulated update ops, and the step's loss; the NPU op types, layouts and dtypes
Ascend uses for training (CANN's BNTrainingUpdate, Conv2DBackpropInputD/FilterD, float32 weight gradients and
master weights); a bias planted in a backward convolution named by ``ac -c``."""
import json
from pathlib import Path

import numpy as np
import pytest
from emulate_helpers import CaseOutput, assert_clean_autocheck, run_case_output

from test_emulate_batchnorm import build_graph, reference

pytestmark = pytest.mark.tf
SCRIPTS = Path(__file__).resolve().parent / "scripts"
CLEAN = ("momentum", "momentum_step3", "sgd", "nesterov", "keras_sgd", "loss_scale", "dynamic_loss_scale")
TOP_LEVEL_WRITES = CLEAN[:-1]  # the dynamic loss scale writes inside tf.conds: checked by variable below
# what scripts/train_conv_bn.py trains: two blocks of a bias-free conv and a batch norm, and the dense head
TRAINABLE = {"block1_conv/kernel", "block1_bn/gamma", "block1_bn/beta", "block2_conv/kernel", "block2_bn/gamma",
             "block2_bn/beta", "logits/kernel", "logits/bias"}


@pytest.fixture(scope="module")
def cases(tmp_path_factory) -> CaseOutput:
    return CaseOutput(run_case_output(tmp_path_factory, SCRIPTS / "train_cases.py", ("tensorflow", "tf_keras")))


def _trainable(expected) -> set:
    """The variables TensorFlow's Momentum keeps a slot for (``<variable>/Momentum``): the trainable ones."""
    return {key[len("variables/"):-len("/Momentum")] for key in expected.files
            if key.startswith("variables/") and key.endswith("/Momentum")}


@pytest.mark.parametrize("case", CLEAN)
def test_ac_names_no_culprit_and_every_dumped_npu_tensor_is_aligned(cases, case):
    assert_clean_autocheck(cases.summary[case])


@pytest.mark.parametrize("case", TOP_LEVEL_WRITES)
def test_the_updated_variables_equal_what_tensorflows_optimizer_kernels_write(cases, case):
    expected = np.load(str(cases[f"{case}.expected.npz"]))
    writes = [key for key in expected.files if key != "loss" and not key.startswith("variables/")]
    # two moving averages per batch norm (2), and one update per trainable variable: 2 kernels, 2 gammas, 2 betas,
    # the dense kernel and bias (Keras's SGD also counts its iterations: an integer)
    assert sum("AssignMovingAvg" in key for key in writes) == 4
    assert len([key for key in writes if "AssignMovingAvg" not in key and not key.endswith("/accum")
                and expected[key].dtype.kind == "f"]) == len(TRAINABLE)
    for key in writes:
        np.testing.assert_allclose(reference(cases[case], key), expected[key], rtol=2e-5, atol=1e-7, err_msg=key)
    np.testing.assert_allclose(reference(cases[case], "loss"), expected["loss"], rtol=1e-6)


def test_a_dynamic_loss_scale_takes_the_path_of_finite_gradients_and_updates_as_tensorflow_does(cases):
    ws = cases["dynamic_loss_scale"]
    expected = np.load(str(cases["dynamic_loss_scale.expected.npz"]))
    outputs = [name.split(":")[0] for name in json.loads((ws / "manifest.json").read_text())["outputs"]]
    updates = {name: name.split("/update_", 1)[1].rsplit("/", 1)[0] for name in outputs
               if name.endswith("/ResourceApplyMomentum")}
    # one update per trainable variable (TensorFlow keeps a Momentum slot for each), in the finite branch: applied
    assert _trainable(expected) == TRAINABLE
    assert sorted(updates.values()) == sorted(TRAINABLE) and all(name.startswith("cond_1/then/") for name in updates)
    for name, variable in updates.items():
        np.testing.assert_allclose(reference(ws, name), expected[f"variables/{variable}"], rtol=2e-5, atol=1e-7)
    # the scale's step counter (good_steps) counts the finite step: TensorFlow's value after the step
    (counter,) = [name for name in outputs if name.endswith("AssignAddVariableOp")]
    assert reference(ws, counter) == expected["variables/good_steps"] == 1
    np.testing.assert_allclose(reference(ws, "loss"), expected["loss"], rtol=1e-6)


def test_step_n_is_the_step_after_n_float32_steps(cases):
    manifest = json.loads((cases["momentum_step3"] / "manifest.json").read_text())
    assert manifest["training_step"] == 3 and manifest["runs"][0]["dump_dir"].endswith("/1/3")
    step0 = np.load(str(cases["momentum.expected.npz"]))["loss"]
    step3 = np.load(str(cases["momentum_step3.expected.npz"]))["loss"]
    assert step3 < step0  # three steps of training lowered the loss: another step, other weights


def _types(ws: Path) -> dict:
    graph = build_graph(ws)
    found = {}
    for op in graph.ops:
        found.setdefault(op.type, []).append(op)
    return found


def _descs(descs):
    return [(d.dtype, d.layout) for d in descs]


def test_the_npu_graph_uses_ascends_training_ops_layouts_and_dtypes(cases):
    types = _types(cases["momentum"])
    assert len(types["BNTrainingUpdate"]) == 2 and len(types["BNTrainingUpdateGrad"]) == 2
    assert "BNInfer" not in types and "FusedBatchNormV3" not in types
    for op in types["BNTrainingUpdate"]:  # y in fp16 5HD; batch mean/variance and saved statistics in float32
        assert _descs(op.output_descs) == [("DT_FLOAT16", "NC1HWC0")] + [("DT_FLOAT", "ND")] * 4
    for op in types["BNTrainingUpdateGrad"]:  # dx; scale and offset gradients in float32
        assert _descs(op.output_descs) == [("DT_FLOAT16", "NC1HWC0"), ("DT_FLOAT", "ND"), ("DT_FLOAT", "ND")]
    assert len(types["Conv2DBackpropInputD"]) == 2  # block1's too: tf.gradients groups both halves of a Conv2D grad
    for op in types["Conv2DBackpropInputD"]:
        assert _descs(op.input_descs)[1:] == [("DT_FLOAT16", "FRACTAL_Z"), ("DT_FLOAT16", "NC1HWC0")]
        assert _descs(op.output_descs) == [("DT_FLOAT16", "NC1HWC0")]
    assert len(types["Conv2DBackpropFilterD"]) == 2
    for op in types["Conv2DBackpropFilterD"]:  # the weight gradient leaves in float32
        assert _descs(op.input_descs)[0::2] == [("DT_FLOAT16", "NC1HWC0")] * 2
        assert _descs(op.output_descs) == [("DT_FLOAT", "FRACTAL_Z")]
    updates = [op for ops in types.values() for op in ops if op.name.endswith("ResourceApplyMomentum")]
    # the update ops of TensorFlow's own training graph (scripts/train_cases.py ran it), by name: one per variable
    expected = np.load(str(cases["momentum.expected.npz"]))
    assert sorted(op.name for op in updates) == sorted(key for key in expected.files
                                                       if key.endswith("/ResourceApplyMomentum"))
    assert len(updates) == len(TRAINABLE) and _trainable(expected) == TRAINABLE
    for op in updates:  # master weights stay float32
        assert [d.dtype for d in op.output_descs] == ["DT_FLOAT"]


def test_a_fault_in_the_backward_pass_is_found_there(cases):
    info = cases.summary["backward_bias"]
    assert info["exit"] == 1 and info["cli_no_replay_exit"] == 1
    assert info["culprit"] == "gradients/block2_conv/Conv2D_grad/Conv2DBackpropInput"
    assert info["methods"]["gradients/block2_conv/Conv2D_grad/Conv2DBackpropInput"] == "replay"


def test_what_the_emulator_does_not_model_is_refused_in_one_line(cases):
    adam, dense = cases.summary["adam"], cases.summary["step_without_training"]
    assert adam["type"] == "EmulationError" and not adam["left_folder"]
    assert adam["error"].startswith(f"{SCRIPTS / 'train_conv_bn.py'}: op ")
    assert "(ResourceApplyAdam) writes a variable in a way the emulator does not model" in adam["error"]
    assert dense == {"error": f"--step 2: {SCRIPTS / 'dense_function.py'} is not a training step; --step needs "
                              "train_graph(), or a model() step that writes variables (a TF2 training step)",
                     "type": "EmulationError", "left_folder": False}


# -------------------------------------------------------------------------- train_variants.py
# (variant, write op, variable whose value after TensorFlow's step it must equal)
VARIANT_WRITES = [
    ("ema", "ExponentialMovingAverage/AssignMovingAvg/AssignSubVariableOp", "fc1/kernel/ExponentialMovingAverage"),
    ("ema", "ExponentialMovingAverage/AssignMovingAvg_1/AssignSubVariableOp", "fc1/bias/ExponentialMovingAverage"),
    ("clip", "clip", "fc1/kernel"),
    ("embedding", "GradientDescent/update_emb/ResourceScatterAdd", "emb"),
    ("dropout", "GradientDescent/update_fc1/kernel/ResourceApplyGradientDescent", "fc1/kernel"),
]


@pytest.mark.parametrize("variant", ["ema", "clip", "embedding", "dropout"])
def test_training_variants_are_clean(cases, variant):
    assert_clean_autocheck(cases.summary[f"variant_{variant}"])


@pytest.mark.parametrize("variant, write, variable", VARIANT_WRITES)
def test_reads_after_writes_sparse_updates_and_dropout_at_step_n_follow_tensorflow(cases, variant, write, variable):
    # an EMA applied after the step averages the new weights; a clip after the step clips them; a sparse update
    # adds its rows; dropout at step 2 draws the mask TensorFlow draws at step 2 (the loss says so)
    ws, expected = cases[f"variant_{variant}"], np.load(str(cases[f"variant_{variant}.expected.npz"]))
    np.testing.assert_allclose(reference(ws, write), expected[f"variables/{variable}"], rtol=2e-5, atol=1e-7)
    np.testing.assert_allclose(reference(ws, "loss"), expected["loss"], rtol=1e-6)


def test_training_through_a_loop_and_an_assign_tensor_are_refused_in_one_line(cases):
    rnn, assign = cases.summary["variant_rnn"], cases.summary["variant_assign"]
    script = SCRIPTS / "train_variants.py"
    assert rnn["type"] == "EmulationError" and not rnn["left_folder"]
    assert rnn["error"].startswith(f"{script}: op gradients/lstm/")
    assert rnn["error"].endswith("is the gradient of a while loop (training through a tf.while_loop or a Keras RNN), "
                                 "which the emulator does not unroll (for a training step, unroll the loop in the "
                                 "model: LSTM(..., unroll=True), a Python for loop)")
    assert assign == {"error": f"{script}: train_graph() returned no training op (a tf.Operation) (return (loss, "
                               "optimizer.minimize(loss)); for a variable's assign, return its .op)",
                      "type": "ModelScriptError", "left_folder": False}
