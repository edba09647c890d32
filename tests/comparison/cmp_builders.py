"""Chain workspaces with chosen faults, written with precision_tool's own writers, for comparator tests.

:func:`write_chain` writes any chain of given NPU/reference tensors; :func:`chain_case` writes
``x (Data) -> op0 -> op1 -> ...``: one dump file per op (input 0 = the bytes its producer dumped as output 0,
output 0), the reference ``.npy`` of every tensor and the GE Build graph (text or
JSON). Each op computes ``0.5 * in + 0.25 * (i + 1)``; the reference in float32, the NPU in the chosen dtype.
Faults: ``break_at`` adds noise to that op's NPU output (later ops inherit it), ``nan_at`` puts a NaN in it,
``ref_nan_at`` one in that op's reference output (both at ``[0, 0]``: with the same op, NaN the reference computes
too), ``no_ref`` leaves out its reference, ``no_dump`` its dump file.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Iterable, Optional, Sequence, Tuple

import numpy as np

from precision_tool.formats.dump_names import build_dump_name
from precision_tool.formats.dump_writer import TensorSpec, write_dump
from precision_tool.formats.ge_graph import Graph, GraphModel, OpNode, tensor_desc
from precision_tool.formats.ge_io import write_ge_graph_json, write_ge_graph_text
from precision_tool.formats.npy_dir import write_reference_npy

TS = 1700000000000000
SHAPE = (4, 8)


@dataclass(frozen=True)
class Case:
    root: str
    npu: str
    ref: str
    graph: str
    names: tuple


def _desc(origin: str = "", shape=SHAPE):
    return tensor_desc("DT_FLOAT16", "ND", shape, origin_format="ND", origin_shape=shape, origin_name=origin,
                       origin_output_index=0 if origin else None)


def chain_case(root, names: Sequence[str] = ("op0", "op1", "op2", "op3"), *, break_at: Optional[str] = None,
               nan_at: Optional[str] = None, ref_nan_at: Optional[str] = None, no_ref: Iterable[str] = (),
               no_dump: Iterable[str] = (),
               json_graph: bool = False, dtype=np.float16, seed: int = 0, graph_layout: str = "workspace") -> Case:
    """Write the chain under ``root``; ``graph_layout="workspace"`` puts it in ``root/graph/`` (a folder with
    ``ge_proto_*_Build.txt``), else ``root/graph.txt``/``graph.json``."""
    no_ref, no_dump = set(no_ref), set(no_dump)
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(SHAPE).astype(np.float32)
    reference, npu, steps = x, x.astype(dtype), []
    for i, name in enumerate(names):
        reference_out = (0.5 * reference + 0.25 * (i + 1)).astype(np.float32)
        npu_out = (0.5 * npu.astype(np.float32) + 0.25 * (i + 1)).astype(dtype)
        if name == break_at:
            npu_out = (npu_out.astype(np.float32) + rng.standard_normal(SHAPE) * 2.0).astype(dtype)
        if name == nan_at:
            npu_out = npu_out.copy()
            npu_out[0, 0] = np.nan
        if name == ref_nan_at:
            reference_out = reference_out.copy()
            reference_out[0, 0] = np.nan
        steps.append(Step(name, npu_out, None if name in no_ref else reference_out, name not in no_dump))
        reference, npu = reference_out, npu_out
    return write_chain(root, x, x.astype(dtype), steps, json_graph=json_graph, graph_layout=graph_layout)


@dataclass(frozen=True)
class Step:
    """One op of a chain: its NPU output, its reference output (``None``: no reference file), dumped or not."""

    name: str
    npu: np.ndarray
    reference: Optional[np.ndarray]
    dumped: bool = True


def write_chain(root, x_reference, x_npu, steps: Sequence[Step], *, json_graph: bool = False,
                graph_layout: str = "workspace") -> Case:
    """``x -> steps[0] -> steps[1] ...``: each op's input 0 is the previous NPU output, stored as dumped."""
    root = os.fspath(root)
    npu_dir, ref_dir = os.path.join(root, "npu"), os.path.join(root, "ref")
    os.makedirs(npu_dir, exist_ok=True)
    os.makedirs(ref_dir, exist_ok=True)
    write_reference_npy(ref_dir, "x", 0, x_reference, TS)
    nodes = [OpNode("x", "Data", id=0, output_descs=(_desc("x", x_npu.shape),))]
    previous, producer = x_npu, "x"
    for i, step in enumerate(steps):
        if step.dumped:
            file_name = build_dump_name("Add", step.name, i + 1, 0, TS + i + 1).file_name
            write_dump(os.path.join(npu_dir, file_name), step.name, dump_time=TS + i + 1,
                       inputs=[TensorSpec(previous, original_shape=previous.shape)],
                       outputs=[TensorSpec(step.npu, original_shape=step.npu.shape)])
        if step.reference is not None:
            write_reference_npy(ref_dir, step.name, 0, step.reference, TS + i + 1)
        nodes.append(OpNode(step.name, "Add", id=i + 1, inputs=(f"{producer}:0",),
                            input_descs=(_desc(producer, previous.shape),),
                            output_descs=(_desc(step.name, step.npu.shape),),
                            attrs={"_datadump_original_op_names": [step.name]}))
        previous, producer = step.npu, step.name
    model = GraphModel((Graph("ge_default_cmp", tuple(nodes)),), name="ge_default_cmp")
    if graph_layout == "workspace":
        os.makedirs(os.path.join(root, "graph"), exist_ok=True)
        graph = os.path.join(root, "graph")
        write_ge_graph_text(model, os.path.join(graph, "ge_proto_00000001_Build.txt"))
    elif json_graph:
        graph = os.fspath(write_ge_graph_json(model, os.path.join(root, "graph.json")))
    else:
        graph = os.fspath(write_ge_graph_text(model, os.path.join(root, "graph.txt")))
    return Case(root, npu_dir, ref_dir, graph, tuple(step.name for step in steps))


def workspace_case(data_dir, **options) -> Case:
    """The chain laid out as a workspace: ``npu/debug_0/{dump,graph}`` and ``tf/dump``."""
    data_dir = os.fspath(data_dir)
    return as_workspace(data_dir, chain_case(os.path.join(data_dir, "_staging"), **options))


def as_workspace(data_dir, case: Case) -> Case:
    """``case`` (written in ``data_dir/<staging>``) moved into the workspace layout of ``data_dir``:
    ``npu/debug_0/{dump,graph}`` and ``tf/dump``; the staging folder is removed."""
    data_dir = os.fspath(data_dir)
    staging = case.root
    run = os.path.join(data_dir, "npu", "debug_0")
    os.makedirs(run)
    os.rename(case.npu, os.path.join(run, "dump"))
    os.rename(case.graph, os.path.join(run, "graph"))
    os.makedirs(os.path.join(data_dir, "tf"))
    os.rename(case.ref, os.path.join(data_dir, "tf", "dump"))
    os.rmdir(staging)
    return Case(data_dir, os.path.join(run, "dump"), os.path.join(data_dir, "tf", "dump"), os.path.join(run, "graph"),
                case.names)


def tree_listing(folder) -> dict:
    """``{relative path: (size, mtime_ns)}`` of every file under ``folder`` (to prove nothing was written)."""
    listing = {}
    for root, _dirs, files in os.walk(folder):
        for name in files:
            path = os.path.join(root, name)
            info = os.stat(path)
            listing[os.path.relpath(path, folder)] = (info.st_size, info.st_mtime_ns)
    return listing


#: The ``{time}`` folder of each device in :func:`chain_dump_tree` (one process per device, five seconds apart).
TREE_TIMES = {0: "20240613143502", 1: "20240613143507"}


def chain_dump_tree(tmp_path, root, broken: Tuple[int, int]):
    """GE's ``{time}/{device}/{model}/{model_id}/{step}`` tree under ``root``: the :func:`chain_case` dumped at
    steps 0 and 5 of devices 0 and 1, where only ``broken = (device, step)`` holds the chain broken at op2 (its
    output off by noise of 2.0; same seed, so the same reference). Returns the clean case (reference, graph)."""
    import shutil

    clean = chain_case(tmp_path / "clean")
    faulty = chain_case(tmp_path / "broken", break_at="op2")
    for device in (0, 1):
        for step in (0, 5):
            source = faulty if (device, step) == tuple(broken) else clean
            shutil.copytree(source.npu, os.path.join(str(root), TREE_TIMES[device], str(device), "ge_default_cmp",
                                                     "1", str(step)))
    return clean
