"""Tiny files for the reproducers of issue 14 (``test_reproducers.py``), written with precision_tool's writers.

:func:`tiny_workspace` writes a workspace whose compare passes (exit 0): graph ``ge_default_1`` is ``input``
(Data) -> ``RELU`` (Relu) -> ``out/Add`` (adds ``RELU`` and ``input``), float32 ``[2, 3]`` tensors, one dump per
executed op and a reference ``.npy`` per TF op. ``RELU`` is ``relu1/Relu`` unless a hostile name is given.
"""
from __future__ import annotations

import io
import os
import struct
from pathlib import Path
from typing import Dict, Optional

import numpy as np

from precision_tool.formats import tf_schema
from precision_tool.formats.dump_names import build_dump_name
from precision_tool.formats.dump_writer import TensorSpec, build_dump_bytes, write_dump
from precision_tool.formats.ge_graph import Graph, GraphModel, OpNode, tensor_desc
from precision_tool.formats.ge_io import write_ge_graph_text
from precision_tool.formats.npy_dir import write_reference_npy
from precision_tool.formats.tfdbg import as_tensor_proto
from precision_tool.formats.tfdbg_v1 import write_tfdbg_v1_tensor

TS = 1700000000000000
SHAPE = (2, 3)
RELU = "relu1/Relu"
DUMP_DIR = os.path.join("npu", "debug_0", "dump", "20240101000000", "0", "ge_default_1", "1", "0")
GRAPH_DIR = os.path.join("npu", "debug_0", "graph")
GRAPH_FILE = os.path.join(GRAPH_DIR, "ge_proto_00000001_Build.txt")
REF_DIR = os.path.join("tf", "dump")
OVERFLOW_DIR = os.path.join("overflow", "dump", "20240101000000", "0", "ge_default_1", "1", "0")


def values() -> Dict[str, np.ndarray]:
    image = np.array([[1.0, -2.0, 3.0], [-4.0, 5.0, -6.0]], dtype=np.float32)
    relu = np.maximum(image, 0)
    return {"input": image, "relu": relu, "out/Add": relu + image}


def _desc(origin: str = "") -> object:
    return tensor_desc("DT_FLOAT", "ND", SHAPE, origin_format="ND", origin_shape=SHAPE, origin_name=origin,
                       origin_output_index=0 if origin else None)


def graph(relu: str = RELU) -> GraphModel:
    ops = (OpNode("input", "Data", id=0, output_descs=[_desc("input")]),
           OpNode(relu, "Relu", id=1, inputs=["input:0"], input_descs=[_desc()], output_descs=[_desc(relu)],
                  attrs={"_datadump_original_op_names": [relu]}),
           OpNode("out/Add", "Add", id=2, inputs=[f"{relu}:0", "input:0"], input_descs=[_desc(), _desc()],
                  output_descs=[_desc("out/Add")], attrs={"_datadump_original_op_names": ["out/Add"]}))
    return GraphModel((Graph("ge_default_1", ops),))


def dump_name(op_type: str, op_name: str, position: int) -> str:
    return build_dump_name(op_type, op_name, position + 2, 1, TS + position).file_name


def tiny_workspace(root, relu: str = RELU, planted: bool = False) -> Path:
    """Write the workspace under ``root`` and return it. ``planted``: the NPU's ``RELU`` output is negated, so
    compare fails it (exit 1) and lists it by name."""
    root = Path(root)
    v = values()
    (root / DUMP_DIR).mkdir(parents=True)
    write_dump(root / DUMP_DIR / dump_name("Relu", relu, 0), relu, inputs=[v["input"]],
               outputs=[-v["relu"] if planted else v["relu"]], dump_time=TS)
    write_dump(root / DUMP_DIR / dump_name("Add", "out/Add", 1), "out/Add", inputs=[v["relu"], v["input"]],
               outputs=[v["out/Add"]], dump_time=TS + 1)
    (root / GRAPH_DIR).mkdir(parents=True)
    write_ge_graph_text(graph(relu), root / GRAPH_FILE)
    (root / REF_DIR).mkdir(parents=True)
    for name, array in (("input", v["input"]), (relu, v["relu"]), ("out/Add", v["out/Add"])):
        write_reference_npy(root / REF_DIR, name, 0, array, TS)
    return root


def relu_dump(root, relu: str = RELU) -> Path:
    return Path(root) / DUMP_DIR / dump_name("Relu", relu, 0)


def relu_reference(root) -> Path:
    return next(p for p in (Path(root) / REF_DIR).iterdir() if p.name.startswith("relu1_Relu."))


def dump_with_shape(op_name: str, shape, count: int = 1) -> bytes:
    """A dump whose one output declares ``shape`` and holds ``count`` float32 values."""
    return build_dump_bytes(op_name, outputs=[TensorSpec(np.ones(count, np.float32), shape=tuple(shape))],
                            dump_time=TS)


def npy_file(header: str, payload: bytes, version: int = 1, header_len: Optional[int] = None) -> bytes:
    """An ``.npy`` file with the header dict text ``header`` (padded as numpy pads it) and ``payload``."""
    preamble = 10 if version == 1 else 12
    text = header + " " * ((64 - (len(header) + preamble + 1) % 64) % 64) + "\n"
    size = len(text) if header_len is None else header_len
    field = struct.pack("<H", size) if version == 1 else struct.pack("<I", size)
    return b"\x93NUMPY" + bytes([version, 0]) + field + text.encode("latin1") + payload


def npy_bytes(array) -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, array, allow_pickle=False)
    return buffer.getvalue()


def v1_run(root, tensors, node_names: Optional[Dict[str, str]] = None) -> Path:
    """A tfdbg v1 run under ``root/tf/tf_debug``: ``tensors`` is ``{op_name: array or TensorProto}``; a
    ``node_names`` entry replaces the Event's ``node_name`` of that op (``op:slot:DebugIdentity``)."""
    run = Path(root) / "tf" / "tf_debug" / f"run_{TS}_0"
    for position, (op_name, value) in enumerate(tensors.items()):
        path = write_tfdbg_v1_tensor(run, op_name, 0, value, TS + position)
        if node_names and op_name in node_names:
            event = tf_schema.Event.FromString(Path(path).read_bytes())
            event.summary.value[0].node_name = node_names[op_name]
            Path(path).write_bytes(event.SerializeToString())
    return run


def tensor_proto_with_dims(count: int):
    proto = as_tensor_proto(np.ones(1, np.float32))
    del proto.tensor_shape.dim[:]
    for _ in range(count):
        proto.tensor_shape.dim.add(size=1)
    return proto


def v1_tensor_path(run, op_name: str) -> Path:
    folder = next(p for p in Path(run).iterdir() if p.name.startswith("_tfdbg_device_"))
    return next(folder.glob(op_name + "_0_DebugIdentity_*"))
