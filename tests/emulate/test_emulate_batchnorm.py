"""Emulated models with FusedBatchNorm / V2 / V3 in inference (issue 16): a Keras 2 (``tf_keras``) CNN, a
TF1-style function of ``tf.compat.v1.nn.fused_batch_norm`` and raw V1/V2 ops, and a Keras 2 MobileNetV2.

Emulations and ``ac -c`` run once in a subprocess (scripts/bn_cases.py). The tests read the workspaces with
precision_tool's own readers and check them against expectations derived here: batch norm computed by hand
with numpy from the models' own weights (``weights.npz``) -- on the float32 reference within float32
tolerance, on the NPU's own dumped inputs within one float16 step."""
import glob
import importlib.util
import json
import os
from pathlib import Path

import numpy as np
import pytest
from emulate_helpers import assert_clean_autocheck, run_cases_script

from precision_tool.formats.dump_file import read_dump_header
from precision_tool.formats.dump_names import scan_dump_folder
from precision_tool.formats.fusion_result import read_fusion_result
from precision_tool.formats.ge_io import read_ge_graph
from precision_tool.formats.npy_dir import reference_op_name
from precision_tool.formats.origin_tensor import read_origin_tensor

pytestmark = pytest.mark.tf
REPO = Path(__file__).resolve().parents[2]
SCRIPT = Path(__file__).resolve().parent / "scripts" / "bn_cases.py"
PARAMETERS = ("scale", "offset", "mean", "variance")


class Cases:
    def __init__(self, root: Path):
        self.root = root
        self.summary = json.loads((root / "summary.json").read_text())
        self.weights = dict(np.load(root / "weights.npz"))

    def __getitem__(self, name: str) -> Path:
        return self.root / name

    def params(self, prefix: str):
        """scale, offset, mean, variance and epsilon of one batch norm, as the model holds them."""
        return [self.weights[f"{prefix}/{name}"] for name in PARAMETERS + ("epsilon",)]


@pytest.fixture(scope="module")
def cases(tmp_path_factory) -> Cases:
    for module in ("tensorflow", "tf_keras"):  # looked for, not imported: TensorFlow stays out of this process
        if importlib.util.find_spec(module) is None:
            pytest.skip(f"{module} is not installed")
    out = tmp_path_factory.mktemp("batchnorm")
    run_cases_script(SCRIPT, out)
    return Cases(out)


# ------------------------------------------------------------------------------------------ helpers
def run_folder(ws: Path, index: int = 0) -> Path:
    return ws / json.loads((ws / "manifest.json").read_text())["runs"][index]["dump_dir"]


def build_graph(ws: Path, index: int = 0):
    return read_ge_graph(ws / "npu" / f"debug_{index}" / "graph" / "ge_proto_00000001_Build.txt").root


def dump_of(folder: Path, op_name: str):
    found = scan_dump_folder(folder).find(op_name)
    assert found is not None, f"no dump of {op_name} in {folder}"
    return read_dump_header(found.latest.path)


def arrays(dump, entries):
    return [read_origin_tensor(dump, entry).array for entry in entries]


def reference(ws: Path, tf_op: str, index: int = 0) -> np.ndarray:
    (path,) = glob.glob(str(ws / "tf" / "dump" / f"{reference_op_name(tf_op)}.{index}.*.npy"))
    return np.load(path, allow_pickle=False)


def batchnorm(x, scale, offset, mean, variance, epsilon):
    """Inference batch norm in float64: ``scale * (x - mean) / sqrt(variance + epsilon) + offset`` per channel
    (last axis)."""
    x = np.asarray(x, np.float64)
    return (x - mean.astype(np.float64)) * (scale.astype(np.float64) / np.sqrt(variance.astype(np.float64)
                                                                              + float(epsilon))) + offset


def conv2d_same(x, w, depthwise=False):
    """Stride-1 SAME convolution of NHWC ``x`` with an HWIO filter (HWC1 for ``depthwise``), in float64."""
    x, w = np.asarray(x, np.float64), np.asarray(w, np.float64)
    kh, kw = w.shape[:2]
    top, left = (kh - 1) // 2, (kw - 1) // 2
    padded = np.pad(x, ((0, 0), (top, kh - 1 - top), (left, kw - 1 - left), (0, 0)))
    height, width = x.shape[1:3]
    out = 0.0
    for i in range(kh):
        for j in range(kw):
            window = padded[:, i:i + height, j:j + width, :]
            out = out + (window * w[i, j, :, 0] if depthwise else window @ w[i, j])
    return out


def fp16_steps(npu, expected) -> float:
    """Largest ``|npu - expected|`` in float16 steps (spacing) of the expected value."""
    expected16 = np.asarray(expected, np.float64).astype(np.float16)
    spacing = np.spacing(np.abs(expected16)).astype(np.float64)
    return float(np.max(np.abs(np.asarray(npu, np.float64) - expected16.astype(np.float64)) / spacing))


def assert_bn_dump_types(dump, fused_lead: bool):
    """Activation float16 in 5HD, the four parameters float32, one float16 output."""
    first = 2 if fused_lead else 1  # a fused Conv2D reads x and its filter first
    params = dump.inputs[first:first + 4]
    assert dump.inputs[0].dtype_name == "DT_FLOAT16" and dump.inputs[0].format_name == "NC1HWC0"
    assert [e.dtype_name for e in params] == ["DT_FLOAT"] * 4
    assert len(dump.outputs) == 1 and dump.outputs[0].dtype_name == "DT_FLOAT16"
    return arrays(dump, params)


# ---------------------------------------------------------------------------------- ac -c, every model
@pytest.mark.parametrize("case", ["keras2_cnn", "keras2_cnn_off", "tf1_function", "mobilenet_keras2"])
def test_ac_names_no_culprit_and_every_dumped_npu_tensor_is_aligned(cases, case):
    info = cases.summary["workspaces"][case]
    assert_clean_autocheck(info)
    assert set(info["methods"].values()) == {"replay"}  # every compared op replayed from its own inputs
    assert max(info["scores"].values()) <= 1  # and at the floor its float16 output explains


# ------------------------------------------------------------------------------------ Keras 2 CNN
def test_keras2_conv_batchnorm_relu_is_fused_and_depthwise_batchnorm_is_bninfer(cases):
    ws = cases["keras2_cnn"]
    graph = build_graph(ws)
    conv1, conv2 = graph.op("k2cnn/conv1/Conv2D"), graph.op("k2cnn/conv2/Conv2D")
    assert conv1.original_op_names == ("k2cnn/conv1/Conv2D", "k2cnn/bn1/FusedBatchNormV3", "k2cnn/relu1/Relu")
    assert conv1.pass_names == ("ConvBatchnormFusionPass", "TbeConvElemwiseFusionPass")
    assert conv2.original_op_names == ("k2cnn/conv2/Conv2D", "k2cnn/conv2/BiasAdd", "k2cnn/bn2/FusedBatchNormV3",
                                       "k2cnn/relu2/Relu6")
    assert conv2.pass_names == ("ConvBiasaddFusionPass", "ConvBatchnormFusionPass", "TbeConvElemwiseFusionPass")
    bn3 = graph.op("k2cnn/bn3/FusedBatchNormV3")
    assert bn3.type == "BNInfer" and bn3.original_op_names == ("k2cnn/bn3/FusedBatchNormV3",)
    assert graph.op("k2cnn/dw/depthwise").original_op_names == ("k2cnn/dw/depthwise",)
    assert graph.op("image").type == "Data"  # a Keras 2 model's input keeps its Keras name
    fusion = read_fusion_result(ws / "fusion" / "fusion_result.json")
    (record,) = fusion.graphs
    assert {p.name: p.effect_times for p in record.passes}["ConvBatchnormFusionPass"] == 2
    unfused = build_graph(ws, 1)
    assert [(op.name, op.type) for op in unfused.ops if op.name.startswith("k2cnn/bn") and op.type != "Const"] == \
        [(f"k2cnn/bn{k}/FusedBatchNormV3", "BNInfer") for k in (1, 2, 3)]


def test_keras2_reference_batch_norm_equals_a_hand_computation(cases):
    ws = cases["keras2_cnn"]
    for layer, before in (("bn1", "k2cnn/conv1/Conv2D"), ("bn2", "k2cnn/conv2/BiasAdd"),
                          ("bn3", "k2cnn/dw/depthwise")):
        expected = batchnorm(reference(ws, before), *cases.params(f"keras2/{layer}"))
        got = reference(ws, f"k2cnn/{layer}/FusedBatchNormV3")
        assert got.dtype == np.float32
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5 * np.abs(expected).max())


def test_keras2_fused_conv_batchnorm_relu_dump_is_the_conv_then_batch_norm_in_float32(cases):
    ws = cases["keras2_cnn"]
    dump = dump_of(run_folder(ws), "k2cnn/conv1/Conv2D")
    params = assert_bn_dump_types(dump, fused_lead=True)
    scale, offset, mean, variance, epsilon = cases.params("keras2/bn1")
    for got, want in zip(params, (scale, offset, mean, variance)):
        assert np.array_equal(got, want)  # the model's weights, float32 bits
    x, w = arrays(dump, dump.inputs[:2])
    assert x.dtype == w.dtype == np.float16 and w.shape == (3, 3, 3, 16)
    # float16 inputs, float32 accumulation and batch norm, one rounding before the ReLU, one after
    before_relu = batchnorm(conv2d_same(x, w), scale, offset, mean, variance, epsilon).astype(np.float16)
    expected = np.maximum(before_relu.astype(np.float64), 0.0)
    (out,) = arrays(dump, dump.outputs)
    assert out.dtype == np.float16 and fp16_steps(out, expected) <= 1
    assert (dump.outputs[0].original_op_name, dump.outputs[0].original_output_index) == ("k2cnn/relu1/Relu", 0)
    reference_relu = reference(ws, "k2cnn/relu1/Relu")
    assert np.abs(out - reference_relu).max() <= 1e-2 * np.abs(reference_relu).max()


@pytest.mark.parametrize("case, layer", [("keras2_cnn", "bn3"), ("keras2_cnn_off", "bn1"),
                                         ("keras2_cnn_off", "bn2")])
def test_keras2_bninfer_is_the_batch_norm_of_its_own_float16_input(cases, case, layer):
    ws = cases[case]
    dump = dump_of(run_folder(ws), f"k2cnn/{layer}/FusedBatchNormV3")
    params = assert_bn_dump_types(dump, fused_lead=False)
    for got, want in zip(params, cases.params(f"keras2/{layer}")):
        assert np.array_equal(got, want)
    (x,) = arrays(dump, dump.inputs[:1])
    (y,) = arrays(dump, dump.outputs)
    assert fp16_steps(y, batchnorm(x, *cases.params(f"keras2/{layer}"))) <= 1
    assert not any(name.startswith("k2cnn_" + layer) and ".1." in name  # no statistics dumped under any name
                   for name in os.listdir(run_folder(ws)))


# ---------------------------------------------------------------------------------- TF1 function
def test_tf1_function_batch_norms_v3_v2_v1_map_to_fusion_and_bninfer(cases):
    ws = cases["tf1_function"]
    graph = build_graph(ws)
    assert graph.op("conv1").original_op_names == ("conv1", "bn1", "relu1")
    assert graph.op("conv1").pass_names == ("ConvBatchnormFusionPass", "TbeConvElemwiseFusionPass")
    assert graph.op("conv3").original_op_names == ("conv3", "conv3_bias", "bn3")  # V1, no activation after it
    assert graph.op("conv3").pass_names == ("ConvBiasaddFusionPass", "ConvBatchnormFusionPass")
    assert graph.op("bn2").type == "BNInfer"  # V2 after the depthwise convolution
    unfused = build_graph(ws, 1)
    assert {name: unfused.op(name).type for name in ("bn1", "bn2", "bn3")} == dict.fromkeys(
        ("bn1", "bn2", "bn3"), "BNInfer")
    for layer, before in (("bn1", "conv1"), ("bn2", "dw"), ("bn3", "conv3_bias")):
        expected = batchnorm(reference(ws, before), *cases.params(f"tf1/{layer}"))
        np.testing.assert_allclose(reference(ws, layer), expected, rtol=1e-5, atol=1e-5 * np.abs(expected).max())
        dump = dump_of(run_folder(ws, 1), layer)  # fusion off: BNInfer on its own float16 input
        params = assert_bn_dump_types(dump, fused_lead=False)
        assert all(np.array_equal(a, b) for a, b in zip(params, cases.params(f"tf1/{layer}")))
        (x,) = arrays(dump, dump.inputs[:1])
        (y,) = arrays(dump, dump.outputs)
        assert fp16_steps(y, batchnorm(x, *cases.params(f"tf1/{layer}"))) <= 1, layer


def test_tf1_fused_conv_bias_batchnorm_dump_reads_the_bias_in_float16_and_parameters_in_float32(cases):
    dump = dump_of(run_folder(cases["tf1_function"]), "conv3")
    assert [e.dtype_name for e in dump.inputs] == ["DT_FLOAT16"] * 3 + ["DT_FLOAT"] * 4
    x, w, bias = arrays(dump, dump.inputs[:3])
    scale, offset, mean, variance, epsilon = cases.params("tf1/bn3")
    expected = batchnorm(conv2d_same(x, w) + bias.astype(np.float64), scale, offset, mean, variance, epsilon)
    (out,) = arrays(dump, dump.outputs)
    assert fp16_steps(out, expected) <= 1


# ---------------------------------------------------------------------------------- MobileNetV2
def test_keras2_mobilenet_v2_every_batch_norm_is_dumped_with_float32_parameters(cases):
    ws = cases["mobilenet_keras2"]
    graph = build_graph(ws)
    scan = scan_dump_folder(run_folder(ws))
    batch_norms = {name.rsplit(".", 3)[0] for name in os.listdir(ws / "tf" / "dump")
                   if name.rsplit(".", 3)[0].endswith("FusedBatchNormV3")}
    # the model's layers as Keras reports them (scripts/bn_cases.py): 52 batch norms, 35 after a Conv2D, 17 after a
    # DepthwiseConv2D (MobileNetV2: stem, 17 blocks of depthwise and project, 16 of them with an expand, last conv)
    layers = cases.summary["model_layers"]["mobilenet_keras2"]
    after = layers["batch_norms_after"]
    assert set(after) == {"Conv2D", "DepthwiseConv2D"}
    assert len(batch_norms) == sum(after.values())
    carriers = {}
    for op in graph.ops:
        for name in op.original_op_names:
            if name.endswith("FusedBatchNormV3"):
                carriers[reference_op_name(name)] = op
    assert set(carriers) == batch_norms  # every batch norm is implemented by a dumped NPU op
    types = {}
    for op in set(carriers.values()):
        assert scan.find(op.name) is not None, op.name
        types[op.type] = types.get(op.type, 0) + 1
        assert_bn_dump_types(dump_of(run_folder(ws), op.name), fused_lead=op.type == "Conv2D")
    # after a Conv2D: fused into it (ConvBatchnormFusionPass); after a DepthwiseConv2D: BNInfer on its own
    assert types == {"Conv2D": after["Conv2D"], "BNInfer": after["DepthwiseConv2D"]}
    assert sum(op.type == "DepthwiseConv2D" for op in graph.ops) == layers["depthwise"]
    assert cases.summary["workspaces"]["mobilenet_keras2"]["seconds"] < 120


# -------------------------------------------------------------------------------------- refusals
def test_inference_statistics_and_tf1_layers_are_refused_in_one_line(cases):
    refused = cases.summary["refused"]
    script = str(REPO / "tests" / "emulate" / "scripts" / "bn_unsupported.py")
    assert refused["statistics"]["type"] == "EmulationError" and not refused["statistics"]["left_folder"]
    assert refused["statistics"]["error"].startswith(
        f"{script}: model() returns bn:1 (batch_mean) of inference batch norm bn (FusedBatchNormV3), which the "
        "NPU's BNInfer does not produce")
    tf1 = refused["tf1_layers"]
    assert tf1["type"] == "ModelScriptError" and not tf1["left_folder"] and "\n" not in tf1["error"]
    assert "failed: AttributeError: `batch_normalization` is not available with Keras 3." in tf1["error"]
    assert "for TF1 graph code (tf.compat.v1.layers, get_variable) define graph_model(inputs)" in tf1["error"]
    assert "dynamic shape" not in " ".join(r["error"] for r in refused.values())


def test_the_reference_keeps_no_batch_norm_reserve_space(cases):
    """TensorFlow's CPU kernel leaves outputs 3-5 of an inference batch norm uninitialised: a reference file of
    them would differ between two emulations of one model. Outputs 0-2 are kept."""
    seen = 0
    for ws in (p for p in cases.root.iterdir() if (p / "manifest.json").is_file()):
        names = [path.name for path in (ws / "tf" / "dump").glob("*FusedBatchNorm*.npy")]
        slots = {int(name.rsplit(".", 3)[1]) for name in names}
        seen += len(names)
        if names:
            assert slots <= {0, 1, 2} and 0 in slots, (ws, sorted(names))
    assert seen, "no batch-norm reference file at all: the test would prove nothing"
