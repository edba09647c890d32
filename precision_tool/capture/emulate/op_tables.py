"""What the emulated NPU does with each TensorFlow op type: precision, layout, fusion, NPU op type.

Precision, as ``allow_mix_precision`` is emulated (the modes: :mod:`~precision_tool.capture.emulate.hardware`):
:data:`CUBE_TYPES` take float16 inputs, accumulate in float32 and write float16; :data:`FP32_KEPT_TYPES` stay
float32; batch-norm parameters are read in float32. Layout: :data:`CONV_TYPES` and :data:`VECTOR_5HD_TYPES` work on
NC1HWC0, filters are FRACTAL_Z, :data:`MATMUL_TYPES` FRACTAL_NZ, :data:`ELEMENTWISE_TYPES` keep their input's layout
when shapes allow, everything else is plain. Fusion (:mod:`~precision_tool.capture.emulate.fusion_groups`):
:data:`AFFINE_TYPES` and one of :data:`ACTIVATION_TYPES` after a Cube op. See
docs/emulate.md#what-the-emulated-npu-does and docs/internals/emulator.md#op_tables.
"""
from __future__ import annotations

CONV_TYPES = frozenset({"Conv2D", "DepthwiseConv2dNative"})
MATMUL_TYPES = frozenset({"MatMul", "BatchMatMul", "BatchMatMulV2", "BatchMatMulV3"})
# The backward convolutions of a training step, Cube ops too: the input gradient reads the filter (FRACTAL_Z) and
# the output gradient (NC1HWC0) and writes NC1HWC0; the filter gradient reads the input and the output gradient
# (NC1HWC0) and writes FRACTAL_Z in float32 (CANN's Conv2DBackpropFilterD: weight gradients leave in float32).
# Their sizes (input 0, resp. 1) are constants. The backward MatMuls are MatMuls.
CONV_BACKPROP_INPUT_TYPES = frozenset({"Conv2DBackpropInput", "DepthwiseConv2dNativeBackpropInput"})
CONV_BACKPROP_FILTER_TYPES = frozenset({"Conv2DBackpropFilter", "DepthwiseConv2dNativeBackpropFilter"})
FUSION_LEAD_TYPES = CONV_TYPES | MATMUL_TYPES  # what absorbs the ops after it (fusion_groups.py)
CUBE_TYPES = FUSION_LEAD_TYPES | CONV_BACKPROP_INPUT_TYPES | CONV_BACKPROP_FILTER_TYPES

FP32_KEPT_TYPES = frozenset({
    "Softmax", "LogSoftmax", "Exp", "Log", "Log1p", "Pow", "Sqrt", "Rsqrt", "Erf", "Mean", "Sum", "Prod",
    "L2Loss", "SoftmaxCrossEntropyWithLogits", "SparseSoftmaxCrossEntropyWithLogits",
})

# A NodeDef attribute marking an op the NPU computes in float32 whatever its inputs: the arithmetic of a variable
# update in a training step (train_step.py), as master weights are float32 under mixed precision.
KEEP_FP32_ATTR = "_precision_tool_keep_fp32"

BATCHNORM_TYPES = frozenset({"FusedBatchNorm", "FusedBatchNormV2", "FusedBatchNormV3"})
BATCHNORM_PARAMETER_POSITIONS = (1, 2, 3, 4)  # scale, offset, mean, variance: read in float32
# The backward pass of a training batch norm: inputs y_backprop, x, scale, reserve_space_1-3; outputs x_backprop,
# scale_backprop, offset_backprop and two unused reserve spaces. Ascend: BNTrainingUpdateGrad + BNTrainingReduceGrad.
BATCHNORM_GRAD_TYPES = frozenset({"FusedBatchNormGrad", "FusedBatchNormGradV2", "FusedBatchNormGradV3"})
BATCHNORM_GRAD_FP32_POSITIONS = (2, 3, 4, 5)  # scale and the saved statistics: read in float32
# A training batch norm runs as BNTrainingReduce (sum, square sum) + BNTrainingUpdate, emulated as one op named
# after the TF op, of the second type; its statistics outputs (1-4) and its grad's parameter gradients stay float32.
BATCHNORM_TRAINING_NPU_TYPE = "BNTrainingUpdate"
BATCHNORM_GRAD_NPU_TYPE = "BNTrainingUpdateGrad"
# FusedBatchNorm's outputs. In inference (is_training=False) only ``y`` is computed: TensorFlow's CPU kernel
# copies mean and variance into outputs 1-2 and writes zeros into 3-5; Ascend's BNInfer has ``y`` alone.
BATCHNORM_OUTPUT_NAMES = ("y", "batch_mean", "batch_variance", "reserve_space_1", "reserve_space_2",
                          "reserve_space_3")
# Convolutions ConvBatchnormFusionPass merges a following 4-parameter batch norm into. CANN lets
# DepthwiseConv2D in only with a 2-input (mean, variance) batch norm, which TensorFlow never writes.
CONV_BATCHNORM_LEADS = frozenset({"Conv2D"})

VECTOR_5HD_TYPES = frozenset({"MaxPool", "AvgPool"}) | BATCHNORM_TYPES | BATCHNORM_GRAD_TYPES

ACTIVATION_TYPES = frozenset({"Relu", "Relu6", "LeakyRelu", "Elu", "Selu", "Sigmoid", "Tanh", "Softplus"})
AFFINE_TYPES = frozenset({"BiasAdd", "Add", "AddV2", "Sub", "Mul"})
ELEMENTWISE_TYPES = ACTIVATION_TYPES | AFFINE_TYPES | frozenset({
    "Softsign", "Neg", "Abs", "Square", "Floor", "Round", "Sign", "RealDiv", "Div", "Maximum", "Minimum",
    "SquaredDifference", "AddN", "Exp", "Log", "Sqrt", "Rsqrt", "Reciprocal", "ClipByValue",
})

# TensorFlow op type -> the NPU (CANN) op type written in graphs and dump file names.
NPU_OP_TYPES = {
    "DepthwiseConv2dNative": "DepthwiseConv2D",
    "MatMul": "MatMulV2",
    "BatchMatMul": "BatchMatMulV2",
    "BatchMatMulV3": "BatchMatMulV2",
    "AddV2": "Add",
    "Mean": "ReduceMeanD",
    "Sum": "ReduceSumD",
    "Prod": "ReduceProdD",
    "Softmax": "SoftmaxV2",
    "LogSoftmax": "LogSoftmaxV2",
    "Pad": "PadD",
    "ConcatV2": "ConcatV2D",
    "FusedBatchNormV3": "BNInfer",
    "FusedBatchNormV2": "BNInfer",
    "FusedBatchNorm": "BNInfer",
    "Conv2DBackpropInput": "Conv2DBackpropInputD",
    "Conv2DBackpropFilter": "Conv2DBackpropFilterD",
    "DepthwiseConv2dNativeBackpropInput": "DepthwiseConv2DBackpropInputD",
    "DepthwiseConv2dNativeBackpropFilter": "DepthwiseConv2DBackpropFilterD",
    "RealDiv": "RealDiv",
    "Squeeze": "Squeeze",
}

# Graph-fusion and UB-fusion pass names recorded on fused ops (modelled on CANN's catalogue).
PASS_CONV_BIAS = "ConvBiasaddFusionPass"
PASS_CONV_BATCHNORM = "ConvBatchnormFusionPass"
PASS_MATMUL_BIAS = "MatMulBiasAddFusionPass"
PASS_UB_CONV_ELEMWISE = "TbeConvElemwiseFusionPass"
PASS_UB_MATMUL_ELEMWISE = "TbeMatmulElemwiseFusionPass"
GRAPH_PASSES = (PASS_CONV_BIAS, PASS_CONV_BATCHNORM, PASS_MATMUL_BIAS)
UB_PASSES = (PASS_UB_CONV_ELEMWISE, PASS_UB_MATMUL_ELEMWISE)
EMULATED_PASSES = GRAPH_PASSES + UB_PASSES

DEVICE_FORMATS = frozenset({"NC1HWC0", "FRACTAL_NZ", "FRACTAL_Z"})


def npu_op_type(tf_type: str, training: bool = False) -> str:
    """The CANN op type for a TensorFlow op type (the TF name when CANN uses the same); ``training``: the op's
    ``is_training`` (a training batch norm is ``BNTrainingUpdate``, an inference one ``BNInfer``)."""
    if tf_type in BATCHNORM_TYPES and training:
        return BATCHNORM_TRAINING_NPU_TYPE
    if tf_type in BATCHNORM_GRAD_TYPES:
        return BATCHNORM_GRAD_NPU_TYPE
    return NPU_OP_TYPES.get(tf_type, tf_type)


def plain_format(rank: int) -> str:
    """The plain layout label GE gives a tensor of this rank from a TF model: NHWC for 4-D, else ND."""
    return "NHWC" if rank == 4 else "ND"

# Control flow. Functional ops (If/While/Case) are unrolled before the graph is described (control_flow.py);
# TF1's lowered forms, Switch/Merge (conditionals) and Enter/Exit/NextIteration/LoopCond (loops; a lowered loop
# has Switch/Merge too), are refused, naming the construct.
LOOP_TYPES = frozenset({"While", "StatelessWhile", "Enter", "RefEnter", "Exit", "RefExit", "NextIteration",
                        "RefNextIteration", "LoopCond"})
BRANCH_TYPES = frozenset({"If", "StatelessIf", "Case", "StatelessCase", "Switch", "RefSwitch", "Merge",
                          "RefMerge", "_SwitchN"})
CONTROL_FLOW_TYPES = LOOP_TYPES | BRANCH_TYPES
# The op that names a construct in the error: one per loop / conditional, named after its scope.
LOOP_ANCHORS = ("While", "StatelessWhile", "LoopCond")
BRANCH_ANCHORS = ("If", "StatelessIf", "Case", "StatelessCase", "Switch", "RefSwitch", "_SwitchN")
