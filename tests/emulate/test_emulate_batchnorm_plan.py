"""FusedBatchNorm / V2 / V3 on hand-built graphs (no TensorFlow): in inference BNInfer with y alone, float32
parameters, ConvBatchnormFusionPass after a Conv2D (not after a depthwise convolution); in training
BNTrainingUpdate with float32 statistics; and the batch norms the emulator refuses (issue 16)."""
import pytest

from precision_tool.capture.emulate import op_tables as T
from precision_tool.capture.emulate.emulate_errors import EmulationError
from precision_tool.capture.emulate.graph_info import TfGraph, TfOp, TfTensor
from precision_tool.capture.emulate.npu_plan import plan_npu_graph
from precision_tool.capture.emulate.tf_freeze import check_batchnorms

F32 = "float32"
NHWC = (2, 4, 4, 16)


def op(name, op_type, inputs=(), shape=(), **attrs):
    return TfOp(name, op_type, tuple(f"{i}:0" if ":" not in i else i for i in inputs), (TfTensor(F32, shape),),
                attrs or None)


def batchnorm(name, x, op_type="FusedBatchNormV3", params=("gamma", "beta", "mean", "var"), **attrs):
    """A batch norm as TensorFlow describes it: y, batch mean and variance, reserve spaces 1-2 (channel
    vectors) and, for V3, reserve space 3 of no static shape."""
    channels = (NHWC[-1],)
    outputs = (TfTensor(F32, NHWC),) + (TfTensor(F32, channels),) * 4
    if op_type == "FusedBatchNormV3":
        outputs += (TfTensor(F32, (), dynamic=True),)
    return TfOp(name, op_type, (f"{x}:0",) + tuple(f"{p}:0" for p in params), outputs,
                dict({"is_training": False, "data_format": "NHWC", "epsilon": 1e-3}, **attrs))


def graph(*ops, outputs=("out:0",)):
    head = [op("x", "Placeholder", shape=NHWC), op("w", "Const", shape=(1, 1, 16, 16)),
            op("dw_w", "Const", shape=(3, 3, 16, 1)), op("bias", "Const", shape=(16,))]
    head += [op(name, "Const", shape=(16,)) for name in ("gamma", "beta", "mean", "var")]
    return TfGraph(tuple(head) + tuple(ops), ("x:0",), outputs)


def conv_bn_relu(op_type="FusedBatchNormV3"):
    return graph(op("conv", "Conv2D", ["x", "w"], NHWC), batchnorm("bn", "conv", op_type),
                 op("relu", "Relu", ["bn"], NHWC), op("out", "Identity", ["relu"], NHWC))


@pytest.mark.parametrize("op_type", sorted(T.BATCHNORM_TYPES))
def test_conv_then_batch_norm_then_relu_is_one_op_by_conv_batchnorm_fusion(op_type):
    plan = plan_npu_graph(conv_bn_relu(op_type), fusion=True)
    (group,) = plan.groups
    assert group.members == ("conv", "bn", "relu") and group.activation == "relu"
    assert group.graph_passes == (T.PASS_CONV_BATCHNORM,) and group.ub_pass == T.PASS_UB_CONV_ELEMWISE
    conv = plan.op("conv")
    inputs = plan.input_tensors(conv)
    assert [t.tf_tensor for t in inputs] == ["x:0", "w:0", "gamma:0", "beta:0", "mean:0", "var:0"]
    assert [t.dtype for t in inputs] == ["float16", "float16"] + [F32] * 4  # parameters not folded, float32
    assert [t.format for t in inputs] == ["NC1HWC0", "FRACTAL_Z"] + ["ND"] * 4
    (out,) = conv.outputs
    assert (out.tf_tensor, out.dtype, out.format) == ("relu:0", "float16", "NC1HWC0")
    assert {("bn", k) for k in (1, 2, 3, 4)} <= plan.fp32_inputs


@pytest.mark.parametrize("op_type", sorted(T.BATCHNORM_TYPES))
def test_with_fusion_off_the_batch_norm_is_bninfer_with_y_alone(op_type):
    plan = plan_npu_graph(conv_bn_relu(op_type), fusion=False)
    bn = plan.op("bn")
    assert (bn.type, bn.compute_dtype, bn.tf_ops) == ("BNInfer", "float16", ("bn",))
    assert [(t.dtype, t.format) for t in plan.input_tensors(bn)] == [("float16", "NC1HWC0")] + [(F32, "ND")] * 4
    (y,) = bn.outputs  # no batch mean/variance, no reserve space: BNInfer has none
    assert (y.tf_tensor, y.dtype, y.format, y.shape) == ("bn:0", "float16", "NC1HWC0", NHWC)
    assert "bn:5" not in plan.tensor_dtypes and plan.op("relu").inputs == (("bn", 0),)


def test_conv_bias_then_batch_norm_takes_both_passes_and_ends_without_activation():
    plan = plan_npu_graph(graph(op("conv", "Conv2D", ["x", "w"], NHWC),
                                op("conv/BiasAdd", "BiasAdd", ["conv", "bias"], NHWC),
                                batchnorm("bn", "conv/BiasAdd", "FusedBatchNorm"),
                                op("out", "Identity", ["bn"], NHWC)))
    (group,) = plan.groups
    assert group.members == ("conv", "conv/BiasAdd", "bn") and group.activation is None
    assert group.graph_passes == (T.PASS_CONV_BIAS, T.PASS_CONV_BATCHNORM)
    assert [t.dtype for t in plan.input_tensors(plan.op("conv"))] == ["float16"] * 3 + [F32] * 4  # bias: fp16


def test_a_batch_norm_after_a_depthwise_convolution_stays_bninfer_with_fusion_on():
    plan = plan_npu_graph(graph(op("dw", "DepthwiseConv2dNative", ["x", "dw_w"], NHWC),
                                batchnorm("bn", "dw", "FusedBatchNormV2"), op("relu6", "Relu6", ["bn"], NHWC),
                                op("out", "Identity", ["relu6"], NHWC)), fusion=True)
    assert [(g.members, g.graph_passes) for g in plan.groups] == [(("dw",), ()), (("bn",), ()), (("relu6",), ())]
    assert plan.op("bn").type == "BNInfer"


def test_a_convolution_read_twice_or_computed_parameters_keep_the_batch_norm_apart():
    twice = graph(op("conv", "Conv2D", ["x", "w"], NHWC), batchnorm("bn", "conv"),
                  op("tap", "Relu", ["conv"], NHWC), op("out", "AddV2", ["bn", "tap"], NHWC))
    assert [g.members for g in plan_npu_graph(twice).groups] == [("conv",), ("bn",), ("tap",), ("out",)]
    computed = graph(op("conv", "Conv2D", ["x", "w"], NHWC), op("m", "Mean", ["x", "gamma"], (16,)),
                     batchnorm("bn", "conv", params=("gamma", "beta", "m", "var")),
                     op("out", "Identity", ["bn"], NHWC))
    plan = plan_npu_graph(computed)
    assert [g.members for g in plan.groups] == [("conv",), ("m",), ("bn",)]
    assert plan.op("bn").type == "BNInfer" and [t.dtype for t in plan.input_tensors(plan.op("bn"))][3] == F32


def test_inference_batch_norms_reading_only_y_pass_the_check():
    check_batchnorms(conv_bn_relu())
    unattributed = TfOp("bn", "FusedBatchNormV3", ("conv:0", "gamma:0", "beta:0", "mean:0", "var:0"),
                        batchnorm("bn", "conv").outputs)  # a hand-built record without attributes: inference
    check_batchnorms(graph(op("conv", "Conv2D", ["x", "w"], NHWC), unattributed, outputs=("bn:0",)))


def test_a_training_mode_batch_norm_is_bn_training_update_with_float32_statistics_and_never_fused():
    # what Ascend runs for is_training=True: BNTrainingReduce + BNTrainingUpdate (emulated as one op of the second
    # type); its statistics are outputs, read by the moving averages and the gradient, kept in float32
    training = graph(op("conv", "Conv2D", ["x", "w"], NHWC), batchnorm("net/bn", "conv", is_training=True),
                     op("relu", "Relu", ["net/bn"], NHWC), op("use_mean", "Neg", ["net/bn:1"], (16,)),
                     outputs=("relu:0", "use_mean:0", "net/bn:3"))
    check_batchnorms(training, "model.py")  # reading the statistics is fine in training
    plan = plan_npu_graph(training, fusion=True)
    assert [g.members for g in plan.groups] == [("conv",), ("net/bn",), ("relu",), ("use_mean",)]
    bn = plan.op("net/bn")
    assert bn.type == "BNTrainingUpdate"
    assert [(t.tf_tensor, t.dtype, t.format) for t in bn.outputs] == (
        [("net/bn:0", "float16", "NC1HWC0")] + [(f"net/bn:{k}", F32, "ND") for k in range(1, 5)])  # not 5: dynamic
    assert [t.dtype for t in plan.input_tensors(bn)] == ["float16"] + [F32] * 4


def test_reading_a_statistic_or_an_nchw_batch_norm_is_refused():
    reads_mean = graph(op("conv", "Conv2D", ["x", "w"], NHWC), batchnorm("bn", "conv"),
                       op("mean_id", "Identity", ["bn:1"], (16,)), op("use", "Neg", ["mean_id"], (16,)),
                       outputs=("bn:0", "use:0"))
    with pytest.raises(EmulationError, match=r"^m.py: use reads bn:1 \(batch_mean\) of inference batch norm bn "
                                             r"\(FusedBatchNormV3\), which the NPU's BNInfer does not produce"):
        check_batchnorms(reads_mean, "m.py")
    returns_reserve = graph(op("conv", "Conv2D", ["x", "w"], NHWC), batchnorm("bn", "conv"),
                            outputs=("bn:0", "bn:5"))
    with pytest.raises(EmulationError, match=r"^m.py: model\(\) returns bn:5 \(reserve_space_3\)"):
        check_batchnorms(returns_reserve, "m.py")
    nchw = graph(op("conv", "Conv2D", ["x", "w"], NHWC), batchnorm("bn", "conv", data_format="NCHW"),
                 outputs=("bn:0",))
    with pytest.raises(EmulationError, match=r"^m.py: bn \(FusedBatchNormV3\) has data_format NCHW"):
        check_batchnorms(nchw, "m.py")


def test_a_convolution_with_a_computed_filter_keeps_the_batch_norm_apart():
    computed_filter = graph(op("w2", "Neg", ["x"], (1, 1, 16, 16)), op("conv", "Conv2D", ["x", "w2"], NHWC),
                            batchnorm("bn", "conv"), op("out", "Identity", ["bn"], NHWC))
    assert [g.members for g in plan_npu_graph(computed_filter).groups] == [("w2",), ("conv",), ("bn",)]
