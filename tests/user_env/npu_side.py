"""The user flows' helpers: the CLI as a user types it, and an NPU side written from a reference with
precision_tool's writers (plain numpy).

:func:`build_npu_side` writes ``npu/debug_0`` as an unfused NPU run would: one dump per compute op holding
the reference output rounded to float16 (or perturbed), the op's inputs as its producers' NPU outputs, and
the Build graph naming each op after its TF op.
"""
import os
import subprocess
import sys
from pathlib import Path

import numpy as np

from precision_tool.capture.emulate.artifacts import (FIRST_TASK_ID, GRAPH_FILE_NAME, RUN_BASE_US, STREAM_ID,
                                                      TIMESTAMP_STEP_US, dump_folder, model_name_for)
from precision_tool.formats import dtypes, ge_graph as G
from precision_tool.formats.dump_names import build_dump_name
from precision_tool.formats.dump_writer import TensorSpec, write_dump
from precision_tool.formats.ge_io import write_ge_graph_text
from precision_tool.formats.npy_dir import reference_op_name

REPO = Path(__file__).resolve().parents[2]
TASK_TYPES = {"Conv2D", "BiasAdd", "Relu", "MaxPool", "Reshape", "MatMul", "Softmax"}
WEIGHT_TYPES = {"Identity", "ReadVariableOp"}  # TF1 variables are read through Identity, TF2 ones ReadVariableOp


def tensorflow_version():
    """The installed TensorFlow's version, read from its package metadata (importing TF would take seconds)."""
    try:
        from importlib import metadata
    except ImportError:  # Python 3.7
        import importlib_metadata as metadata
    for dist in ("tensorflow", "tensorflow-cpu", "tensorflow-gpu"):
        try:
            return metadata.version(dist)
        except metadata.PackageNotFoundError:
            continue
    return None



def _layout(shape, role="activation"):
    if len(shape) != 4:
        return "ND"
    return "HWCN" if role == "weight" else "NHWC"


def _dtype_enum(array):
    return dtypes.dtype_name(dtypes.dtype_code(array.dtype))


def _desc(array, layout, origin=None):
    name, index = origin or ("", None)
    return G.tensor_desc(_dtype_enum(array), layout, array.shape, origin_format=layout, origin_shape=array.shape,
                         origin_name=name, origin_output_index=index)


def build_npu_side(workspace, ops, values, perturb=None):
    """``npu/debug_0``: one dump per compute op (the reference output in float16, or ``perturb[op](that)``)
    and the Build graph. ``ops``: ``{"name", "type", "inputs"}`` per TF op, in execution order.

    The forward ops keep their TF names (no fusion). Inputs of a compute op are its producers' NPU outputs;
    other producers (the input, weights, the reshape's shape) are graph-only nodes whose values come from the
    reference. Returns ``{op name: NPU output}``.
    """
    by_name = {op["name"]: op for op in ops}
    tasks = [op for op in ops if op["type"] in TASK_TYPES]
    base_us = RUN_BASE_US["debug_0"]
    model = model_name_for(base_us)
    folder = dump_folder(str(workspace / "npu" / "debug_0" / "dump"), base_us, model)
    os.makedirs(folder)
    npu, nodes, listed = {}, [], set()

    def value_of(tensor):
        producer = tensor.rsplit(":", 1)[0]
        if producer in npu:
            return npu[producer]
        array = values[reference_op_name(producer)]
        return array.astype(np.float16) if array.dtype.kind == "f" else array

    def role(tensor):
        return "weight" if by_name[tensor.rsplit(":", 1)[0]]["type"] in WEIGHT_TYPES else "activation"

    for k, op in enumerate(tasks):
        inputs = [value_of(t) for t in op["inputs"]]
        for tensor, array in zip(op["inputs"], inputs):
            producer = tensor.rsplit(":", 1)[0]
            if producer not in npu and producer not in listed:  # graph-only producer, listed once
                listed.add(producer)
                kind = "Data" if by_name[producer]["type"] == "Placeholder" else "Const"
                nodes.append(G.OpNode(name=producer, type=kind, id=len(nodes),
                                      output_descs=(_desc(array, _layout(array.shape, role(tensor)), (producer, 0)),),
                                      attrs={G.KERNEL_LIB: "DNN_VM_GE_LOCAL_OP_STORE"}))
        output = values[reference_op_name(op["name"])].astype(np.float16)
        if op["name"] in (perturb or {}):
            output = perturb[op["name"]](output)
        npu[op["name"]] = output
        layout = _layout(output.shape)
        in_layouts = [_layout(a.shape, role(t)) for t, a in zip(op["inputs"], inputs)]
        specs_in = [TensorSpec(a, format=f, original_shape=a.shape) for a, f in zip(inputs, in_layouts)]
        spec_out = TensorSpec(output, format=layout, original_shape=output.shape, original_op=(op["name"], 0),
                              original_format=layout)
        stamp = base_us + TIMESTAMP_STEP_US * (k + 1)
        name = build_dump_name(op["type"], op["name"], FIRST_TASK_ID + k, STREAM_ID, stamp)
        write_dump(os.path.join(folder, name.file_name), op["name"], specs_in, [spec_out], dump_time=stamp)
        nodes.append(G.OpNode(
            name=op["name"], type=op["type"], id=len(nodes), stream_id=STREAM_ID,
            inputs=tuple(G.InputRef.parse(t) for t in op["inputs"]),
            input_descs=tuple(_desc(a, f) for a, f in zip(inputs, in_layouts)),
            output_descs=(_desc(output, layout, (op["name"], 0)),),
            attrs={G.ORIGINAL_OP_NAMES: [op["name"]], G.KERNEL_LIB: "AIcoreEngine",
                   op["name"] + G.KERNEL_NAME_SUFFIX: f"te_{op['type'].lower()}_{k}"}))
    graph = G.Graph(model, tuple(nodes), inputs=("input",), outputs=(tasks[-1]["name"],))
    os.makedirs(workspace / "npu" / "debug_0" / "graph", exist_ok=True)
    write_ge_graph_text(G.GraphModel((graph,), name=model),
                        workspace / "npu" / "debug_0" / "graph" / GRAPH_FILE_NAME)
    return npu


def cli(workspace, *argv):
    """``python -m precision_tool -d WORKSPACE ...`` as the user types it."""
    return subprocess.run([sys.executable, "-m", "precision_tool", "-d", str(workspace), *argv],
                          env=dict(os.environ, PYTHONPATH=str(REPO)), stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, universal_newlines=True, timeout=300)
