"""A workspace whose op ``relu1/Relu`` is called :data:`EVIL` -- a name holding terminal control characters
(ESC ``[31m``, BEL, the one-byte C1 CSI ``0x9b``, DEL) -- written with precision_tool's own writers.

It is :mod:`inspect_builders`'s graph and references with that one op renamed wherever a name is stored: the
GE Build graph (op name, the consumer's input, the kernel-name attribute, the original TF op name, the output's
origin name), the dump file's name and header, and the reference ``.npy`` file's name. Only :data:`EVIL` and
``out/Add`` are dumped; :data:`EVIL`'s NPU output is the reference negated (cosine -1), so it is the one
failing tensor, the first divergence and the culprit every command names.
"""
from __future__ import annotations

import dataclasses
import os

import inspect_builders as ib
from precision_tool.formats.dump_names import build_dump_name
from precision_tool.formats.dump_writer import write_dump
from precision_tool.formats.ge_graph import Graph, GraphModel
from precision_tool.formats.ge_io import write_ge_graph_text
from precision_tool.formats.npy_dir import write_reference_npy

PLAIN = "relu1/Relu"
EVIL = "relu1/Re\x1b[31mlu\x07\x9b2J\x7f"
EVIL_SHOWN = "relu1/Re\\x1b[31mlu\\x07\\x9b2J\\x7f"  # EVIL as a terminal shows it, escaped by hand


def rename(value):
    """``value`` with ``relu1/Relu`` replaced by :data:`EVIL` when it is text; other values as they are."""
    return value.replace(PLAIN, EVIL) if isinstance(value, str) else value


def _renamed_attrs(attrs) -> dict:
    return {rename(key): [rename(v) for v in value] if isinstance(value, list) else rename(value)
            for key, value in attrs.items()}


def _renamed_op(op):
    descs = [dataclasses.replace(desc, attrs=_renamed_attrs(desc.attrs)) for desc in op.output_descs]
    return dataclasses.replace(op, name=rename(op.name), inputs=[rename(str(ref)) for ref in op.inputs],
                               attrs=_renamed_attrs(op.attrs), output_descs=descs)


def write_hostile_workspace(root) -> str:
    """Write the workspace under ``root``; returns ``root`` as a string."""
    root = os.fspath(root)
    ref = {rename(name): values for name, values in ib.reference_values().items()}
    dump_dir = os.path.join(root, ib.DUMP_SUBDIR)
    os.makedirs(dump_dir, exist_ok=True)
    dumps = [("Relu", EVIL, [ref["conv1/BiasAdd"]], -ref[EVIL]),
             ("Add", "out/Add", [ref[EVIL], ref["conv1/BiasAdd"]], ref["out/Add"])]
    for position, (op_type, name, inputs, output) in enumerate(dumps):
        file_name = build_dump_name(op_type, name, position + 3, 1, ib.TS + position).file_name
        write_dump(os.path.join(dump_dir, file_name), name, inputs=[ib._stored(array) for array in inputs],
                   outputs=[ib._stored(output)], dump_time=ib.TS + position)
    graph_dir = os.path.join(root, "npu", "debug_0", "graph")
    os.makedirs(graph_dir, exist_ok=True)
    model = ib.build_graph()
    graph = Graph(model.root.name, tuple(_renamed_op(op) for op in model.root.ops))
    write_ge_graph_text(GraphModel((graph,)), os.path.join(graph_dir, "ge_proto_00000001_Build.txt"))
    ref_dir = os.path.join(root, "tf", "dump")
    os.makedirs(ref_dir, exist_ok=True)
    for name, values in ref.items():
        write_reference_npy(ref_dir, name, 0, values, ib.TS)
    return root


def dump_of(root, op_name: str) -> str:
    """The dump file of ``op_name`` in a workspace written by :func:`write_hostile_workspace`."""
    folder = os.path.join(os.fspath(root), ib.DUMP_SUBDIR)
    wanted = op_name.replace("/", "_")
    return next(os.path.join(folder, name) for name in os.listdir(folder) if name.split(".")[1] == wanted)


def listing(root) -> list:
    """Every folder and file under ``root`` (relative), with file sizes: what a refused write must not change."""
    found = []
    for folder, folders, files in os.walk(root):
        found += [(os.path.relpath(os.path.join(folder, name), root), None) for name in folders]
        found += [(os.path.relpath(os.path.join(folder, name), root), os.path.getsize(os.path.join(folder, name)))
                  for name in files]
    return sorted(found)
