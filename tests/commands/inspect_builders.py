"""A small workspace (``precision_data`` layout) for the inspection commands and the shell, written with
precision_tool's own writers.

Graph ``ge_default_1``: ``input`` (Data) -> ``conv1/Conv2D`` (fused Conv2D+BiasAdd, weights from the Const
``conv1/weight``) -> ``relu1/Relu`` -> ``out/Add`` (adds ``relu1/Relu`` and ``conv1/Conv2D``). Activations are
stored NC1HWC0 (origin NHWC ``[1, 4, 4, 3]``), float16. Every executed op has a dump file under
``npu/debug_0/dump/<ts>/0/ge_default_1/1/0`` and a reference in ``tf/dump``. The planted error: the NPU
output of ``out/Add`` is the reference times 1.5.
"""
from __future__ import annotations

import os
from typing import Dict

import numpy as np

from precision_tool.formats.dump_names import build_dump_name
from precision_tool.formats.dump_writer import TensorSpec, write_dump
from precision_tool.formats.ge_graph import Graph, GraphModel, OpNode, tensor_desc
from precision_tool.formats.ge_io import write_ge_graph_text
from precision_tool.formats.layouts import to_device
from precision_tool.formats.npy_dir import write_reference_npy

TS = 1700000000000000
SHAPE = (1, 4, 4, 3)
STORED = (1, 1, 4, 4, 16)
DUMP_SUBDIR = os.path.join("npu", "debug_0", "dump", "20240101000000", "0", "ge_default_1", "1", "0")
PLANTED_OP = "out/Add"
OPS = ("input", "conv1/weight", "conv1/Conv2D", "relu1/Relu", "out/Add")


def activation_desc(origin_name: str = "") -> object:
    return tensor_desc("DT_FLOAT16", "NC1HWC0", STORED, origin_format="NHWC", origin_shape=SHAPE,
                       origin_name=origin_name, origin_output_index=0 if origin_name else None)


def build_graph() -> GraphModel:
    weight = tensor_desc("DT_FLOAT16", "ND", (3,), origin_format="ND", origin_shape=(3,))
    ops = (
        OpNode("input", "Data", id=0, output_descs=[activation_desc("input")]),
        OpNode("conv1/weight", "Const", id=1, output_descs=[weight]),
        OpNode("conv1/Conv2D", "Conv2D", id=2, inputs=["input:0", "conv1/weight:0"],
               input_descs=[activation_desc(), weight], output_descs=[activation_desc("conv1/BiasAdd")],
               attrs={"_datadump_original_op_names": ["conv1/Conv2D", "conv1/BiasAdd"],
                      "pass_name": ["ConvBiasaddFusionPass"], "conv1/Conv2D_kernelname": "te_conv2d_abc",
                      "_ge_attr_op_kernel_lib_name": "AIcoreEngine"}),
        OpNode("relu1/Relu", "Relu", id=3, inputs=["conv1/Conv2D:0"], input_descs=[activation_desc()],
               output_descs=[activation_desc("relu1/Relu")],
               attrs={"relu1/Relu_kernelname": "te_relu_def", "_datadump_original_op_names": ["relu1/Relu"]}),
        OpNode("out/Add", "Add", id=4, inputs=["relu1/Relu:0", "conv1/Conv2D:0"],
               input_descs=[activation_desc(), activation_desc()], output_descs=[activation_desc("out/Add")],
               attrs={"out/Add_kernelname": "te_add_123", "_datadump_original_op_names": ["out/Add"]}),
    )
    return GraphModel((Graph("ge_default_1", ops),))


def reference_values() -> Dict[str, np.ndarray]:
    """The TF tensors (float32, NHWC) by TF op name."""
    rng = np.random.default_rng(7)
    image = rng.standard_normal(SHAPE).astype(np.float32)
    bias_add = (image * 2.0 + 0.5).astype(np.float32)
    relu = np.maximum(bias_add, 0)
    return {"input": image, "conv1/BiasAdd": bias_add, "relu1/Relu": relu, "out/Add": relu + bias_add,
            "conv1/weight": np.array([0.5, -0.25, 1.0], dtype=np.float32)}


def _stored(array: np.ndarray) -> TensorSpec:
    return TensorSpec(to_device(array.astype(np.float16), "NHWC", "NC1HWC0"), format="NC1HWC0", original_shape=SHAPE)


def write_inspect_workspace(root) -> str:
    """Write the workspace under ``root``; returns ``root`` as a string."""
    root = os.fspath(root)
    ref = reference_values()
    npu_out = dict(ref)
    npu_out["out/Add"] = ref["out/Add"] * 1.5  # the planted error
    dump_dir = os.path.join(root, DUMP_SUBDIR)
    os.makedirs(dump_dir, exist_ok=True)
    weight = TensorSpec(ref["conv1/weight"].astype(np.float16), original_shape=(3,))
    dumps = [("Conv2D", "conv1/Conv2D", [_stored(ref["input"]), weight], "conv1/BiasAdd"),
             ("Relu", "relu1/Relu", [_stored(ref["conv1/BiasAdd"])], "relu1/Relu"),
             ("Add", "out/Add", [_stored(ref["relu1/Relu"]), _stored(ref["conv1/BiasAdd"])], "out/Add")]
    for position, (op_type, name, inputs, output) in enumerate(dumps):
        file_name = build_dump_name(op_type, name, position + 2, 1, TS + position).file_name
        write_dump(os.path.join(dump_dir, file_name), name, inputs=inputs, outputs=[_stored(npu_out[output])],
                   dump_time=TS + position)
    graph_dir = os.path.join(root, "npu", "debug_0", "graph")
    os.makedirs(graph_dir, exist_ok=True)
    write_ge_graph_text(build_graph(), os.path.join(graph_dir, "ge_proto_00000001_Build.txt"))
    ref_dir = os.path.join(root, "tf", "dump")
    os.makedirs(ref_dir, exist_ok=True)
    for name, values in ref.items():
        write_reference_npy(ref_dir, name, 0, values, TS)
    return root


def dump_path(root, op_name: str) -> str:
    """The dump file of ``op_name`` in a workspace written by :func:`write_inspect_workspace`."""
    folder = os.path.join(os.fspath(root), DUMP_SUBDIR)
    wanted = op_name.replace("/", "_")
    return next(os.path.join(folder, f) for f in os.listdir(folder) if f.split(".")[1] == wanted)


def add_steps_and_devices(root) -> str:
    """Make the workspace's dump a tree of several steps and devices (issue 17): its step folder copied to step 3
    of device 0 and to step 3 of device 1 (a second ``{time}`` folder), where ``out/Add``'s dump is left out, so
    that which folder a command read shows. Returns ``root`` as a string."""
    import shutil

    root = os.fspath(root)
    step_0 = os.path.join(root, DUMP_SUBDIR)
    shutil.copytree(step_0, os.path.join(os.path.dirname(step_0), "3"))
    device_1 = os.path.join(root, "npu", "debug_0", "dump", "20240101000009", "1", "ge_default_1", "1", "3")
    shutil.copytree(step_0, device_1)
    (add,) = [name for name in os.listdir(device_1) if name.startswith("Add.")]
    os.remove(os.path.join(device_1, add))
    return root
