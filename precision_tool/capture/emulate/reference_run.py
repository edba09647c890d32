"""The float32 reference run, captured with the project's own capture helpers.

One ``Session.run`` of the frozen graph (:func:`~precision_tool.tf_runtime.session_config`: every op runs under its
Python name) goes through :func:`precision_tool.capture.reference_dump.sess_dump` into ``tf/tf_debug/<capture>``,
and :func:`precision_tool.formats.tf_reference.convert_tfdbg_run` -- what ``tf_dump`` runs for a user -- converts it
into ``tf/dump/{op}.{output}.{timestamp}.npy`` and keeps the executed graph in ``tf/graph``. Time stamps and the
graph's name are then fixed, so the folders are reproducible, and ``tf/tf_debug`` (wall-clock times) is removed
unless asked to keep it. See docs/internals/emulator.md#reference_run.
"""
from __future__ import annotations

import json
import os
import re
import shutil
from dataclasses import dataclass
from typing import List, Optional, Sequence

import numpy as np

from precision_tool.capture.emulate.emulate_errors import EmulationError
from precision_tool.capture.emulate.tf_freeze import FrozenModel, feed_dict, import_graph
from precision_tool.tf_runtime import session_config
from precision_tool.config import Workspace
from precision_tool.formats.npy_dir import reference_file_name
from precision_tool.formats.tf_graph import INDEX_FILE
from precision_tool.formats.tf_reference import (ReferenceConversion, ReferenceTensor, convert_tfdbg_run,
                                                 find_tfdbg_runs, record_conversion)
from precision_tool.lazy import lazy_import

tf = lazy_import("tensorflow")

REFERENCE_BASE_US = 1731990000000000
REFERENCE_GRAPH_FILE = "graph_reference_cpu_0.pb"
_DEBUG_URL = re.compile(rb"file://[^;]*")


@dataclass(frozen=True)
class ReferenceResult:
    dump_dir: str
    files: List[str]


def convert_capture(tf_debug: str, dump_dir: str, graph_dir: Optional[str] = None) -> ReferenceConversion:
    """Convert the newest tfdbg run in ``tf_debug`` into ``dump_dir`` (and its graph into ``graph_dir``), as
    ``tf_dump -i tf_debug -o dump_dir`` does.

    Raises :class:`EmulationError` when a tensor could not be converted (the message gives the first
    failure), and the library's own errors for a capture holding no run or no values.
    """
    conversion = convert_tfdbg_run(find_tfdbg_runs(tf_debug)[-1], dump_dir, graph_dir=graph_dir)
    if not conversion:
        failures = conversion.failures
        raise EmulationError(f"converting the reference capture {tf_debug} failed for {len(failures)} tensors: "
                             f"{failures[0].message}")
    return conversion


def normalise_names(dump_dir: str, tensors: Sequence[ReferenceTensor], op_order: Sequence[str]) -> List[str]:
    """Give the converted files fixed time stamps.

    Time stamps follow ``op_order`` (the graph's topological order), not tfdbg's clock: TensorFlow
    runs independent ops (constants) in any order, and file names must not depend on it.
    """
    position = {name: k for k, name in enumerate(op_order)}

    def order(tensor: ReferenceTensor):
        return (position.get(tensor.op_name, len(position)), tensor.op_name, tensor.output_slot)

    ordered = sorted(tensors, key=order)
    temporary = []
    for k, tensor in enumerate(ordered):  # two passes: a new name may equal another file's old name
        hidden = os.path.join(dump_dir, f".renaming.{k}.npy")
        os.replace(os.path.join(dump_dir, tensor.file), hidden)
        temporary.append(hidden)
    files = []
    for k, (tensor, hidden) in enumerate(zip(ordered, temporary)):
        name = reference_file_name(tensor.op_name, tensor.output_slot, REFERENCE_BASE_US + 10 * (k + 1))
        target = os.path.join(dump_dir, name)
        os.replace(hidden, target)
        files.append(target)
    return files


def normalise_graph(graph_dir: str, conversion: ReferenceConversion) -> str:
    """Rename the one kept graph ``graph_reference_cpu_0.pb`` and rewrite ``index.json`` without wall-clock
    names; returns the graph's path. Raises :class:`EmulationError` when no graph was kept."""
    if len(conversion.graphs) != 1:
        raise EmulationError(f"the reference capture kept {len(conversion.graphs)} executed graphs, expected 1: "
                             + "; ".join(conversion.notes or ("no note",)))
    kept = conversion.graphs[0]
    target = os.path.join(graph_dir, REFERENCE_GRAPH_FILE)
    with open(kept.path, "rb") as handle:
        graph_def = tf.compat.v1.GraphDef.FromString(handle.read())
    for node in graph_def.node:  # tfdbg's debug nodes name the capture folder (a wall-clock time)
        for key in ("debug_urls", "debug_ops_spec"):
            if key in node.attr:
                fixed = [_DEBUG_URL.sub(b"file://tf/tf_debug", text) for text in node.attr[key].list.s]
                del node.attr[key].list.s[:]
                node.attr[key].list.s.extend(fixed)
    with open(target, "wb") as handle:
        handle.write(graph_def.SerializeToString(deterministic=True))
    if kept.path != target:
        os.remove(kept.path)
    entry = {"file": REFERENCE_GRAPH_FILE, "run": "emulated reference", "device": kept.device,
             "source": "precision_tool emulate", "nodes": kept.nodes}
    with open(os.path.join(graph_dir, INDEX_FILE), "w", encoding="utf-8") as handle:
        json.dump({"graphs": [entry]}, handle, indent=1)
        handle.write("\n")
    return target


def check_reference_names(dump_dir: str, expected_ops: Sequence[str]) -> None:
    """Every TF op the NPU ops name must have a reference tensor, else the capture fused names."""
    present = {name.rsplit(".", 3)[0] for name in os.listdir(dump_dir) if name.endswith(".npy")}
    from precision_tool.formats.npy_dir import reference_op_name
    missing = [op for op in expected_ops if reference_op_name(op) not in present]
    if missing:
        raise EmulationError(f"the reference capture has no tensor for {len(missing)} ops, e.g. {missing[0]}",
                             "TensorFlow was probably imported before precision_tool with oneDNN on; "
                             "set TF_ENABLE_ONEDNN_OPTS=0")


def drop_reserve_spaces(dump_dir: str, tensors: Sequence[ReferenceTensor], graph) -> List[ReferenceTensor]:
    """``tensors`` without the reserve spaces of batch-norm ops, whose files are removed: outputs 3 to 5 of an
    inference ``FusedBatchNorm*`` (TensorFlow's CPU kernel leaves them uninitialised, so they would differ
    from run to run, and Ascend's ``BNInfer`` has no such output), output 5 of a training one (its saved
    statistics, 3 and 4, are kept: ``BNTrainingUpdate`` writes them), outputs 3 and 4 of a gradient."""
    from precision_tool.capture.emulate.op_tables import BATCHNORM_GRAD_TYPES, BATCHNORM_TYPES

    first_reserved = {}
    for op in graph.get_operations():
        if op.type in BATCHNORM_TYPES:  # training: outputs 3-4 are the saved statistics, 5 the kernel's own
            training = op.node_def.attr["is_training"].b if "is_training" in op.node_def.attr else False
            first_reserved[op.name] = 5 if training else 3
        elif op.type in BATCHNORM_GRAD_TYPES:  # outputs 3-4: unused reserve spaces
            first_reserved[op.name] = 3
    kept = []
    for tensor in tensors:
        if tensor.output_slot >= first_reserved.get(tensor.op_name, tensor.output_slot + 1):
            os.remove(os.path.join(dump_dir, tensor.file))
        else:
            kept.append(tensor)
    return kept


def capture_reference(frozen: FrozenModel, batch: Sequence[np.ndarray], workspace: Workspace,
                      op_order: Sequence[str], keep_tfdbg: bool = False) -> ReferenceResult:
    """Run the float32 reference once under ``sess_dump`` and convert it (see the module docstring)."""
    from precision_tool.capture.reference_dump import new_capture_dir, sess_dump
    from precision_tool.capture.settings import silenced

    capture_dir = new_capture_dir(workspace.tf_debug)
    graph = import_graph(frozen)
    with tf.compat.v1.Session(graph=graph, config=session_config()) as session, silenced():
        dumping = sess_dump(session, capture_dir)
        dumping.run(list(frozen.outputs), feed_dict=feed_dict(frozen, batch))
    conversion = convert_capture(capture_dir, workspace.tf_dump, workspace.tf_graph)
    tensors = drop_reserve_spaces(workspace.tf_dump, conversion.tensors, graph)
    files = normalise_names(workspace.tf_dump, tensors, op_order)
    record_conversion(workspace.tf_dump, "precision_tool emulate", [os.path.basename(f) for f in files])
    normalise_graph(workspace.tf_graph, conversion)
    if not keep_tfdbg:
        shutil.rmtree(workspace.tf_debug)
    return ReferenceResult(workspace.tf_dump, sorted(files))
