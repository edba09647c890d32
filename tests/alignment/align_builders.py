"""Small NPU/TF workspaces for alignment tests, written with precision_tool's own writers.

A graph is a list of :class:`OpNode` made with :func:`node`; :func:`write_workspace` writes the GE graph
(protobuf text), one dump file per dumped node (as many inputs as data inputs, as many outputs as output
descs, timestamps in list order) and the reference ``.npy`` files.
"""
from __future__ import annotations

import os
from typing import Dict, Iterable, Optional, Sequence, Tuple

import numpy as np

from precision_tool.formats.dump_names import build_dump_name
from precision_tool.formats.dump_writer import TensorSpec, write_dump
from precision_tool.formats.ge_graph import Graph, GraphModel, OpNode, tensor_desc
from precision_tool.formats.ge_io import write_ge_graph_json, write_ge_graph_text
from precision_tool.formats.npy_dir import write_reference_npy

TS = 1700000000000000
SHAPE = (2, 3)
VALUES = np.arange(6, dtype=np.float32).reshape(SHAPE)


def desc(origin: Optional[str] = None, index: Optional[int] = None, shape=SHAPE, origin_format="ND"):
    """An ND float desc with origin format/shape and, optionally, ``_datadump_origin_name``/index."""
    return tensor_desc("DT_FLOAT", "ND", shape, origin_format=origin_format, origin_shape=shape,
                       origin_name=origin or "", origin_output_index=index)


def node(name: str, op_type: str = "Add", inputs: Sequence[str] = (), outputs=1,
         original: Optional[Sequence[str]] = None,
         origins: Optional[Sequence[Optional[Tuple[str, Optional[int]]]]] = None) -> OpNode:
    """An op; ``outputs`` is a count or a list of descs; ``origins[k]`` = (origin name, index) for output k."""
    if isinstance(outputs, int):
        origins = origins or [None] * outputs
        outputs = [desc(*origin) if origin else desc() for origin in origins]
    data = [ref for ref in inputs if not ref.endswith(":-1") and ref]
    attrs = {} if original is None else {"_datadump_original_op_names": list(original)}
    return OpNode(name, op_type, inputs=list(inputs), input_descs=[desc() for _ in data], output_descs=outputs,
                  attrs=attrs)


def graph(nodes: Iterable[OpNode], name: str = "ge_default_1") -> GraphModel:
    return GraphModel((Graph(name, tuple(nodes)),))


def write_dumps(folder, nodes: Sequence[OpNode], skip: Iterable[str] = (), header_original: Dict[str, Sequence] = None,
                raw_names: bool = True, start: int = TS, values=VALUES) -> Dict[str, str]:
    """One dump per node not in ``skip``; returns ``{op name: path}``.

    ``header_original[op] = [(tf name, index) or None per output]`` writes ``OriginalOp`` into the header;
    ``raw_names=False`` leaves the header's op name empty (only the file name carries it).
    """
    os.makedirs(folder, exist_ok=True)
    skip = set(skip)
    header_original = header_original or {}
    paths = {}
    for position, op in enumerate(nodes):
        if op.name in skip or op.type in ("Data", "NetOutput", "Const"):
            continue
        originals = header_original.get(op.name) or [None] * len(op.output_descs)
        outputs = [TensorSpec(values, original_shape=values.shape, original_op=tuple(orig) if orig else None)
                   for orig in originals]
        inputs = [TensorSpec(values, original_shape=values.shape) for _ in op.data_inputs]
        file_name = build_dump_name(op.type, op.name, position, 0, start + position).file_name
        path = os.path.join(os.fspath(folder), file_name)
        write_dump(path, op.name if raw_names else "", inputs=inputs, outputs=outputs, dump_time=start + position)
        paths[op.name] = path
    return paths


def write_refs(folder, tensors: Iterable, values=VALUES) -> None:
    """``tensors``: ``"name"`` (output 0) or ``("name", index)``."""
    os.makedirs(folder, exist_ok=True)
    for tensor in tensors:
        name, index = (tensor, 0) if isinstance(tensor, str) else tensor
        write_reference_npy(folder, name, index, values, TS)


def write_workspace(root, nodes: Sequence[OpNode], refs: Iterable, skip: Iterable[str] = (), json_graph=False,
                    **dump_options):
    """Write graph + dumps + references under ``root``; returns (dump dir, reference dir, graph path)."""
    root = os.fspath(root)
    dump_dir, ref_dir = os.path.join(root, "npu"), os.path.join(root, "ref")
    write_dumps(dump_dir, nodes, skip, **dump_options)
    write_refs(ref_dir, refs)
    model = graph(nodes)
    if json_graph:
        graph_path = write_ge_graph_json(model, os.path.join(root, "graph.json"))
    else:
        os.makedirs(os.path.join(root, "graph"), exist_ok=True)
        graph_path = write_ge_graph_text(model, os.path.join(root, "graph", "ge_proto_00000001_Build.txt"))
    return dump_dir, ref_dir, os.fspath(graph_path)


def pairing(alignment) -> Dict[str, str]:
    """``{npu tensor id: reference tensor id}``."""
    return {pair.npu.tensor_id: pair.ref.tensor_id for pair in alignment.pairs}


def reasons(alignment) -> Dict[str, str]:
    return dict(alignment.coverage.unaligned)
