"""TF1 graph code as a model (``graph_model()``), TF1 layers in ``model()`` refused in one line, and a failed
emulation leaving nothing behind (issue 16).

The emulations run once in a subprocess (scripts/graph_cases.py): the TF1 ResNet-style block of
scripts/tf1_resnet_graph.py (``tf.compat.v1.layers`` convolutions and fused batch norms, ``get_variable``
dense head), the control-flow models of scripts/control_flow.py, and an emulation whose NPU numerics
crash after the reference was captured. The tests read the workspaces with precision_tool's own readers;
batch norm is checked against a hand computation on each op's own dumped inputs and parameters."""
import os
from pathlib import Path

import numpy as np
import pytest
from emulate_helpers import CaseOutput, assert_clean_autocheck, run_case_output

from test_emulate_batchnorm import (arrays, assert_bn_dump_types, batchnorm, build_graph, dump_of, fp16_steps,
                                    reference, run_folder)

pytestmark = pytest.mark.tf
REPO = Path(__file__).resolve().parents[2]
SCRIPTS = Path(__file__).resolve().parent / "scripts"
EPSILON = 1e-3  # tf1_resnet_graph.py's


@pytest.fixture(scope="module")
def cases(tmp_path_factory) -> CaseOutput:
    return CaseOutput(run_case_output(tmp_path_factory, SCRIPTS / "graph_cases.py", ("tensorflow", "tf_keras")))


# ------------------------------------------------------------------------------- TF1 graph code
def test_tf1_graph_model_ac_names_no_culprit_and_every_dumped_npu_tensor_is_aligned(cases):
    info = cases.summary["tf1_graph"]
    assert_clean_autocheck(info)
    assert set(info["methods"].values()) == {"replay"} and max(info["scores"].values()) <= 1
    # the emulator switched tf.compat.v1.layers to Keras 2, which the test process had not asked for
    assert info["legacy_keras_before"] is None and info["legacy_keras"] == "1"


def test_tf1_graph_model_keeps_its_graph_names_and_fuses_conv_batchnorm_relu(cases):
    ws = cases["tf1_graph"]
    graph = build_graph(ws)
    assert graph.op("image").type == "Data"  # the placeholder is named after graph_model's parameter
    expected = {
        "block/stem/Conv2D": ("block/stem/Conv2D", "block/stem_bn/FusedBatchNormV3", "block/stem_relu"),
        "block/conv1/Conv2D": ("block/conv1/Conv2D", "block/conv1/BiasAdd", "block/bn1/FusedBatchNormV3",
                               "block/relu1"),
        "block/conv2/Conv2D": ("block/conv2/Conv2D", "block/bn2/FusedBatchNormV3"),  # the residual add follows
        "head/logits": ("head/logits", "head/logits_bias"),
    }
    for name, tf_ops in expected.items():
        assert graph.op(name).original_op_names == tf_ops
    assert graph.op("block/residual").type == "Add" and graph.op("head/prob").type == "SoftmaxV2"
    unfused = build_graph(ws, 1)
    assert [op.type for op in unfused.ops if op.name.endswith("FusedBatchNormV3")] == ["BNInfer"] * 3


@pytest.mark.parametrize("layer, before", [("stem_bn", "stem/Conv2D"), ("bn1", "conv1/BiasAdd"),
                                           ("bn2", "conv2/Conv2D")])
def test_tf1_batch_norm_reads_its_initialised_variables_and_computes_bninfer(cases, layer, before):
    ws = cases["tf1_graph"]
    dump = dump_of(run_folder(ws, 1), f"block/{layer}/FusedBatchNormV3")  # fusion off: BNInfer alone
    scale, offset, mean, variance = assert_bn_dump_types(dump, fused_lead=False)
    # the script's initialisers, not tf.compat.v1.layers' defaults (ones, zeros, zeros, ones)
    assert 0.5 <= scale.min() < scale.max() <= 1.5 and 0.5 <= variance.min() < variance.max() <= 2.0
    assert np.abs(offset).max() > 0 and np.abs(mean).max() > 0
    (x,) = arrays(dump, dump.inputs[:1])
    (y,) = arrays(dump, dump.outputs)
    assert fp16_steps(y, batchnorm(x, scale, offset, mean, variance, EPSILON)) <= 1
    expected = batchnorm(reference(ws, f"block/{before}"), scale, offset, mean, variance, EPSILON)
    np.testing.assert_allclose(reference(ws, f"block/{layer}/FusedBatchNormV3"), expected, rtol=1e-5,
                               atol=1e-5 * np.abs(expected).max())


# ------------------------------------------------------------------------------ TF1 layers in model()
def test_tf1_layers_in_model_point_to_graph_model(cases):
    refused = cases.summary["refused"]["tf1_layers"]
    assert refused["type"] == "ModelScriptError" and "\n" not in refused["error"]
    assert refused["error"].startswith(f"{SCRIPTS / 'bn_unsupported.py'}: tracing model() on inputs of shape "
                                       "(2, 8, 8, 3) failed: AttributeError: ")
    assert refused["error"].endswith("(model() is traced with tf.function; for TF1 graph code (tf.compat.v1.layers, "
                                     "get_variable) define graph_model(inputs) instead of model(): see MODEL_SCRIPT "
                                     "in docs/emulate.md)")
    assert not refused["left_folder"] and refused["leftovers"] == []


# ------------------------------------------------------------------------------ failed emulations
def test_a_failure_while_writing_leaves_nothing_and_the_next_run_succeeds(cases):
    staging = cases.summary["staging"]
    assert staging["first_error"] == "kernel crashed"
    assert not staging["first_left_parent"]  # not even the parent folder it had to create
    assert staging["retry"] == {"error": "", "type": ""} and staging["retry_has_manifest"]
    assert staging["forced_error"] == "kernel crashed"
    assert staging["forced_failure_kept_earlier"]  # --force replaces only once the new emulation is complete
    assert staging["forced_retry"] == {"error": "", "type": ""} and staging["forced_retry_fusion"] == "off"
    assert staging["leftovers"] == []  # no staging or replaced folder stays behind
    assert sorted(os.listdir(cases["staged"])) == ["ws"]
