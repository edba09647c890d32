"""Fusion grouping, precision, layouts and Cast/TransData insertion on hand-built graphs (no TensorFlow)."""
import pytest

from precision_tool.capture.emulate import op_tables as T
from precision_tool.capture.emulate.artifacts import build_ge_graph
from precision_tool.capture.emulate.graph_info import TfGraph, TfOp, TfTensor, constant_ops, tensor_aliases
from precision_tool.capture.emulate.npu_plan import plan_npu_graph

F32 = "float32"


def op(name, op_type, inputs=(), shape=(), dtype=F32):
    return TfOp(name, op_type, tuple(f"{i}:0" if ":" not in i else i for i in inputs), (TfTensor(dtype, shape),))


def cnn_graph():
    """x -> conv(+bias, relu) -> maxpool -> conv2(+bias) -> add(residual) -> mean -> dense(+bias) -> softmax."""
    ops = [
        op("x", "Placeholder", shape=(2, 8, 8, 3)),
        op("w1", "Const", shape=(3, 3, 3, 16)), op("b1", "Const", shape=(16,)),
        op("w1/read", "Identity", ["w1"], shape=(3, 3, 3, 16)),
        op("conv1/Conv2D", "Conv2D", ["x", "w1/read"], (2, 8, 8, 16)),
        op("conv1/BiasAdd", "BiasAdd", ["conv1/Conv2D", "b1"], (2, 8, 8, 16)),
        op("conv1/Relu", "Relu", ["conv1/BiasAdd"], (2, 8, 8, 16)),
        op("pool", "MaxPool", ["conv1/Relu"], (2, 4, 4, 16)),
        op("w2", "Const", shape=(3, 3, 16, 16)), op("b2", "Const", shape=(16,)),
        op("conv2/Conv2D", "Conv2D", ["pool", "w2"], (2, 4, 4, 16)),
        op("conv2/BiasAdd", "BiasAdd", ["conv2/Conv2D", "b2"], (2, 4, 4, 16)),
        op("add", "AddV2", ["pool", "conv2/BiasAdd"], (2, 4, 4, 16)),
        op("axes", "Const", shape=(2,), dtype="int32"),
        op("gap", "Mean", ["add", "axes"], (2, 16)),
        op("wd", "Const", shape=(16, 10)), op("bd", "Const", shape=(10,)),
        op("dense/MatMul", "MatMul", ["gap", "wd"], (2, 10)),
        op("dense/BiasAdd", "BiasAdd", ["dense/MatMul", "bd"], (2, 10)),
        op("prob", "Softmax", ["dense/BiasAdd"], (2, 10)),
        op("out", "Identity", ["prob"], (2, 10)),
    ]
    return TfGraph(tuple(ops), ("x:0",), ("out:0",))


@pytest.fixture(scope="module")
def fused():
    return plan_npu_graph(cnn_graph(), fusion=True)


@pytest.fixture(scope="module")
def unfused():
    return plan_npu_graph(cnn_graph(), fusion=False)


def test_constants_and_pass_through_ops_are_found():
    graph = cnn_graph()
    assert {"w1", "b1", "w1/read", "axes", "wd", "bd", "w2", "b2"} <= constant_ops(graph)
    assert tensor_aliases(graph) == {"w1/read:0": "w1:0", "out:0": "prob:0"}


def test_conv_bias_relu_and_matmul_bias_become_one_npu_op_each(fused):
    groups = {g.name: g for g in fused.groups}
    conv1 = groups["conv1/Conv2D"]
    assert conv1.members == ("conv1/Conv2D", "conv1/BiasAdd", "conv1/Relu")
    assert conv1.graph_passes == (T.PASS_CONV_BIAS,) and conv1.ub_pass == T.PASS_UB_CONV_ELEMWISE
    assert groups["conv2/Conv2D"].members == ("conv2/Conv2D", "conv2/BiasAdd")
    assert groups["conv2/Conv2D"].ub_pass == ""
    dense = groups["dense/MatMul"]
    assert dense.members == ("dense/MatMul", "dense/BiasAdd") and dense.graph_passes == (T.PASS_MATMUL_BIAS,)
    assert [g.name for g in fused.groups] == ["conv1/Conv2D", "pool", "conv2/Conv2D", "add", "gap",
                                              "dense/MatMul", "prob"]
    # the fused op stands for its last TF op's output
    assert fused.op("conv1/Conv2D").outputs[0].tf_tensor == "conv1/Relu:0"


def test_fusion_off_gives_one_npu_op_per_tf_op(unfused):
    assert all(len(g.members) == 1 and not g.graph_passes and not g.ub_pass for g in unfused.groups)
    # every op cnn_graph() computes with (not its input, constants or pass-through Identity), in graph order
    computed = [o.name for o in cnn_graph().ops if o.type not in ("Placeholder", "Const", "Identity")]
    assert [g.name for g in unfused.groups] == computed  # 11: conv1 3, conv2 2, dense 2, pool, add, gap, prob


def test_an_op_with_two_consumers_ends_the_fused_chain():
    graph = cnn_graph()
    ops = list(graph.ops) + [op("tap", "Relu", ["conv1/BiasAdd"], (2, 8, 8, 16))]
    plan = plan_npu_graph(TfGraph(tuple(ops), graph.inputs, graph.outputs + ("tap:0",)))
    assert plan.op("conv1/Conv2D").tf_ops == ("conv1/Conv2D", "conv1/BiasAdd")  # BiasAdd feeds two ops
    assert plan.op("conv1/Relu").tf_ops == ("conv1/Relu",)


def test_keras_batch_norm_after_conv_is_fused_as_batchnorm():
    ops = [op("x", "Placeholder", shape=(1, 4, 4, 8)), op("w", "Const", shape=(1, 1, 8, 16)),
           op("scale", "Const", shape=(16,)), op("shift", "Const", shape=(16,)),
           op("conv", "Conv2D", ["x", "w"], (1, 4, 4, 16)),
           op("bn/mul_1", "Mul", ["conv", "scale"], (1, 4, 4, 16)),
           op("bn/add_1", "AddV2", ["bn/mul_1", "shift"], (1, 4, 4, 16)),
           op("relu6", "Relu6", ["bn/add_1"], (1, 4, 4, 16))]
    (group,) = plan_npu_graph(TfGraph(tuple(ops), ("x:0",), ("relu6:0",))).groups
    assert group.members == ("conv", "bn/mul_1", "bn/add_1", "relu6")
    assert group.graph_passes == (T.PASS_CONV_BATCHNORM,) and group.activation == "relu6"


def bn_graph():
    """x -> conv + bias -> Keras 3 inference batch norm (mul_1 by a per-channel scale, add_1 of the
    offset) -> relu6, then a scalar Mul (not a batch norm) after a second conv."""
    ops = [op("x", "Placeholder", shape=(1, 4, 4, 8)), op("w", "Const", shape=(1, 1, 8, 16)),
           op("bias", "Const", shape=(16,)), op("scale", "Const", shape=(16,)), op("shift", "Const", shape=(16,)),
           op("conv", "Conv2D", ["x", "w"], (1, 4, 4, 16)),
           op("conv/BiasAdd", "BiasAdd", ["conv", "bias"], (1, 4, 4, 16)),
           op("bn/mul_1", "Mul", ["conv/BiasAdd", "scale"], (1, 4, 4, 16)),
           op("bn/add_1", "AddV2", ["shift", "bn/mul_1"], (1, 4, 4, 16)),
           op("relu6", "Relu6", ["bn/add_1"], (1, 4, 4, 16)),
           op("w2", "Const", shape=(1, 1, 16, 16)), op("half", "Const", shape=()),
           op("conv2", "Conv2D", ["relu6", "w2"], (1, 4, 4, 16)),
           op("scaled", "Mul", ["conv2", "half"], (1, 4, 4, 16))]
    return TfGraph(tuple(ops), ("x:0",), ("scaled:0",))


@pytest.mark.parametrize("fusion", [True, False])
def test_batch_norm_parameters_stay_float32_bias_follows_the_op(fusion):
    plan = plan_npu_graph(bn_graph(), fusion=fusion)
    assert plan.fp32_inputs == {("bn/mul_1", 1), ("bn/add_1", 0)}
    const_dtypes = {o.outputs[0].tf_tensor: o.outputs[0].dtype for o in plan.ops if o.kind == "const"}
    assert const_dtypes == {"w:0": "float16", "bias:0": "float16", "scale:0": "float32", "shift:0": "float32",
                            "w2:0": "float16", "half:0": "float16"}
    assert not any(o.type == "Cast" and o.outputs[0].tf_tensor in ("scale:0", "shift:0") for o in plan.ops)
    for name in ("bn/mul_1", "bn/add_1"):  # float16 activation in and out, float32 parameters
        npu_op = plan.op_for_tf(name)
        assert npu_op.compute_dtype == "float16" and npu_op.outputs[0].dtype == "float16"
    graph = build_ge_graph(plan, "ge_default_x_1").root
    readers = {plan.op_for_tf(n).name for n in ("conv/BiasAdd", "bn/mul_1", "bn/add_1")}
    descs = {src.producer: d.dtype for name in readers
             for src, d in zip(graph.op(name).inputs, graph.op(name).input_descs)}
    assert descs["scale"] == descs["shift"] == "DT_FLOAT" and descs["bias"] == "DT_FLOAT16"


def test_fused_batch_norm_reads_parameters_in_float32_and_writes_y_alone():
    ops = [op("x", "Placeholder", shape=(1, 4, 4, 8)), op("w", "Const", shape=(1, 1, 8, 16))]
    ops += [op(name, "Const", shape=(16,)) for name in ("gamma", "beta", "mean", "var")]
    ops += [op("conv", "Conv2D", ["x", "w"], (1, 4, 4, 16)),
            TfOp("bn", "FusedBatchNormV3", ("conv:0", "gamma:0", "beta:0", "mean:0", "var:0"),
                 (TfTensor(F32, (1, 4, 4, 16)),) + (TfTensor(F32, (16,)),) * 5)]
    plan = plan_npu_graph(TfGraph(tuple(ops), ("x:0",), ("bn:0",)), fusion=False)  # fused: see batchnorm tests
    bn = plan.op("bn")
    assert (bn.type, bn.compute_dtype) == ("BNInfer", "float16")
    assert [t.dtype for t in plan.input_tensors(bn)] == ["float16"] + ["float32"] * 4
    assert [t.dtype for t in bn.outputs] == ["float16"]  # BNInfer has no statistics or reserve outputs


def test_precision_cube_ops_fp16_listed_ops_fp32_others_follow(fused):
    dtypes = {op.name: op.compute_dtype for op in fused.ops if op.kind == "compute"}
    assert dtypes == {"conv1/Conv2D": "float16", "pool": "float16", "conv2/Conv2D": "float16", "add": "float16",
                      "gap": "float32", "dense/MatMul": "float16", "prob": "float32"}
    assert "Mean" in T.FP32_KEPT_TYPES and "Softmax" in T.FP32_KEPT_TYPES


def test_layouts_of_activations_weights_and_matmul(fused):
    conv = fused.op("conv1/Conv2D")
    x, w, b = fused.input_tensors(conv)
    assert (x.format, x.origin_format, x.device_shape) == ("NC1HWC0", "NHWC", (2, 1, 8, 8, 16))
    assert (w.format, w.origin_format, w.dtype) == ("FRACTAL_Z", "HWCN", "float16")
    assert (b.format, b.dtype) == ("ND", "float16")
    assert conv.outputs[0].format == "NC1HWC0"
    dense = fused.op("dense/MatMul")
    assert [t.format for t in fused.input_tensors(dense)] == ["FRACTAL_NZ", "FRACTAL_NZ", "ND"]
    assert dense.outputs[0].format == "FRACTAL_NZ" and dense.outputs[0].device_shape == (1, 1, 16, 16)
    assert fused.op("add").outputs[0].format == "NC1HWC0"  # elementwise keeps the device layout


def test_cast_and_transdata_are_inserted_where_dtype_or_layout_changes(fused):
    chain = []
    ref = fused.op("dense/MatMul").inputs[0]
    while fused.op(ref[0]).kind in ("cast", "transdata"):
        op_ = fused.op(ref[0])
        out = op_.outputs[0]
        chain.append((op_.type, out.dtype, out.format))
        ref = op_.inputs[0]
    assert ref[0] == "gap"
    assert chain == [("TransData", "float16", "FRACTAL_NZ"), ("Cast", "float16", "ND")]
    first = fused.op(fused.op("conv1/Conv2D").inputs[0][0])
    assert (first.type, first.outputs[0].format) == ("TransData", "NC1HWC0")
    assert fused.op(first.inputs[0][0]).type == "Cast"
    assert fused.ops[0].type == "Data" and fused.ops[-1].type == "NetOutput"
    (net_in,) = fused.input_tensors(fused.ops[-1])
    assert (net_in.dtype, net_in.format) == ("float32", "ND")


def test_execution_order_and_names(fused):
    kinds = [op.kind for op in fused.ops]
    assert kinds.index("const") > kinds.index("data") and kinds.index("compute") > kinds.index("const")
    names = [op.name for op in fused.ops]
    assert len(names) == len(set(names))
    position = {name: k for k, name in enumerate(names)}
    for op_ in fused.ops:
        assert all(position[producer] < position[op_.name] for producer, _ in op_.inputs)


def test_ge_graph_carries_original_names_passes_and_origin_attrs(fused):
    graph = build_ge_graph(fused, "ge_default_x_1").root
    conv = graph.op("conv1/Conv2D")
    assert conv.original_op_names == ("conv1/Conv2D", "conv1/BiasAdd", "conv1/Relu")
    assert conv.pass_names == (T.PASS_CONV_BIAS, T.PASS_UB_CONV_ELEMWISE)
    (out,) = conv.output_descs
    assert (out.origin_name, out.origin_output_index, out.origin_format, out.origin_shape) == \
        ("conv1/Relu", 0, "NHWC", (2, 8, 8, 16))
    assert (out.dtype, out.layout, out.shape) == ("DT_FLOAT16", "NC1HWC0", (2, 1, 8, 8, 16))
    assert conv.kernel_name.startswith("te_conv2d_") and conv.kernel_lib == "AIcoreEngine"
    assert [str(ref) for ref in conv.inputs] == [f"{graph.ops[k].name}:0" for k in
                                                 [graph.ops.index(graph.op(r.producer)) for r in conv.inputs]]
    cast = graph.ops_of_type("Cast")[0]
    assert cast.original_op_names == () and cast.output_descs[0].origin_name == ""
    assert [op_.id for op_ in graph.ops] == list(range(len(graph.ops)))
