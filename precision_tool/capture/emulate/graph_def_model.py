"""A frozen TF1 graph as a model: a MODEL_SCRIPT's ``graph_def()``, which returns ``(source, feeds, fetches)``.

:func:`load_graph_def` checks that contract and reads the source -- a ``GraphDef``, a binary ``.pb`` file, or a
meta graph with its checkpoint, frozen here -- into a :class:`GraphDefModel`. :func:`freeze_graph_def` makes the
emulator's :class:`~.tf_freeze.FrozenModel` from it for a batch: the graph cut to what the fetches need, unfrozen
variables refused, each fed placeholder given its array's shape, no node renamed. Every problem is one
:class:`ModelScriptError` line. The contract: docs/emulate.md#model_script; more:
docs/internals/emulator.md#graph_def_model.
"""
from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from typing import Any, Dict, List, Sequence, Tuple

import numpy as np

from precision_tool.capture.emulate.emulate_errors import ModelScriptError
from precision_tool.capture.emulate.tf_freeze import FrozenModel, quiet_tensorflow_logger
from precision_tool.lazy import lazy_import
from precision_tool.tf_runtime import session_config

tf = lazy_import("tensorflow")

LABEL = "graph_def()"
# Ops that hold or touch a variable: a graph with one of them (among what the fetches need) is not frozen.
VARIABLE_TYPES = frozenset({"Variable", "VariableV2", "TemporaryVariable", "VarHandleOp", "_VarHandlesOp",
                            "ReadVariableOp", "_ReadVariablesOp", "ResourceGather", "VarIsInitializedOp",
                            "AssignVariableOp", "Assign", "AssignAdd", "AssignSub"})
FREEZE_HINT = ("freeze it first: tf.compat.v1.graph_util.convert_variables_to_constants(session, graph_def, "
               "output_names) in the session holding the values, or return the meta graph and its checkpoint")
_DROPPED_ATTRS = ("_output_shapes",)  # shapes recorded for another batch


@dataclass(frozen=True)
class GraphDefModel:
    """A frozen GraphDef (serialized) with its feeds (placeholder tensor names, ``op:0``, one per input
    array) and fetches (output tensor names), as :func:`load_graph_def` read them from ``graph_def()``.

    Calling it is using it as a function of TF ops: the graph is imported (under the name scope
    ``graph_def``) onto one tensor per feed and the fetched tensors are returned. The emulator does not do
    that (names would change): :func:`~.tf_freeze.freeze_model` hands it to :func:`freeze_graph_def`.
    """

    graph_def: bytes
    feeds: Tuple[str, ...]
    fetches: Tuple[str, ...]
    source: str = "GraphDef"
    label: str = LABEL

    def __call__(self, *tensors):
        graph_def = tf.compat.v1.GraphDef.FromString(self.graph_def)
        found = tf.compat.v1.import_graph_def(graph_def, input_map=dict(zip(self.feeds, tensors)),
                                              return_elements=list(self.fetches), name="graph_def")
        return found[0] if len(found) == 1 else list(found)


# --------------------------------------------------------------------------------------- loading
def _names(value: Any, what: str, script: str) -> Tuple[str, ...]:
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, (list, tuple)) or not items or not all(isinstance(n, str) and n for n in items):
        raise ModelScriptError(f"{script}: {LABEL} gave {what} {value!r}; expected a name or a list of names",
                               CONTRACT)
    return tuple(items)


def _tensor_name(name: str) -> Tuple[str, int]:
    """``op:K`` or ``op`` (output 0) as ``(op, K)``; ``(name, -1)`` for a malformed index."""
    op, colon, index = name.rpartition(":")
    if not colon:
        return name, 0
    return (op, int(index)) if index.isdigit() else (name, -1)


CONTRACT = ("graph_def() returns (graph, feeds, fetches): a tf.compat.v1.GraphDef, a .pb path, a .meta path or "
            "(meta_path, checkpoint_prefix); placeholder names, one per inputs() array; output tensor names")


def load_graph_def(value: Any, script: str) -> GraphDefModel:
    """Check what ``graph_def()`` returned (docs/emulate.md#model_script) and read its source; a meta graph is frozen
    here (restored from its checkpoint in a ``tf.compat.v1`` session).

    Raises
    ------
    ModelScriptError
        a return value of another shape, a missing or unreadable file, a checkpoint that does not restore.
    """
    if not isinstance(value, (tuple, list)) or len(value) != 3:
        raise ModelScriptError(f"{script}: {LABEL} returned {type(value).__name__}", CONTRACT)
    source, feeds, fetches = value[0], _names(value[1], "feeds", script), _names(value[2], "fetches", script)
    feeds, fetches = (tuple(f"{op}:{k}" if k >= 0 else op for op, k in map(_tensor_name, names))
                      for names in (feeds, fetches))  # op:K, a malformed name kept for the error naming it
    base = os.path.dirname(os.path.abspath(script))
    if isinstance(source, (tuple, list)) and len(source) == 2 and all(isinstance(p, (str, os.PathLike))
                                                                       for p in source):
        meta, checkpoint = (os.path.join(base, os.fspath(p)) for p in source)
        return GraphDefModel(_freeze_meta_graph(meta, checkpoint, feeds, fetches, script), feeds, fetches,
                             os.fspath(source[0]))
    if not isinstance(source, (str, os.PathLike)):
        loaded = sys.modules.get("tensorflow")  # a GraphDef was made by TensorFlow: not imported for less
        if loaded is not None and isinstance(source, loaded.compat.v1.GraphDef):
            return GraphDefModel(source.SerializeToString(), feeds, fetches)
        raise ModelScriptError(f"{script}: {LABEL} gave a graph of type {type(source).__name__}", CONTRACT)
    path = os.path.join(base, os.fspath(source))
    if not os.path.isfile(path):
        raise ModelScriptError(f"{script}: {LABEL}: no such file {path}", CONTRACT)
    if path.endswith(".meta"):
        checkpoint = path[:-len(".meta")]
        return GraphDefModel(_freeze_meta_graph(path, checkpoint, feeds, fetches, script), feeds, fetches,
                             os.fspath(source))
    try:
        with open(path, "rb") as handle:
            graph_def = tf.compat.v1.GraphDef.FromString(handle.read())
    except Exception as error:  # protobuf's DecodeError, or an unreadable file
        raise ModelScriptError(f"{script}: {LABEL}: {path} is not a binary GraphDef ({type(error).__name__})",
                               "write it with tf.io.write_graph(graph_def, folder, name, as_text=False)") from error
    return GraphDefModel(graph_def.SerializeToString(), feeds, fetches, os.fspath(source))


def _freeze_meta_graph(meta: str, checkpoint: str, feeds: Sequence[str], fetches: Sequence[str],
                       script: str) -> bytes:
    """Import ``meta``, restore ``checkpoint`` into its variables and freeze what the feeds and fetches need
    (names missing from the graph are left for :func:`freeze_graph_def` to report)."""
    if not os.path.isfile(meta):
        raise ModelScriptError(f"{script}: {LABEL}: no such meta graph {meta}", CONTRACT)
    graph = tf.Graph()
    step = "importing the meta graph"
    try:
        with quiet_tensorflow_logger(), graph.as_default(), \
                tf.compat.v1.Session(graph=graph, config=session_config()) as session:
            saver = tf.compat.v1.train.import_meta_graph(meta, clear_devices=True)
            present = {op.name for op in graph.get_operations()}
            keep = [op for op in dict.fromkeys(_tensor_name(n)[0] for n in (*feeds, *fetches)) if op in present]
            if saver is not None:
                step = f"restoring checkpoint {checkpoint}"
                saver.restore(session, checkpoint)
            step = "freezing it"
            frozen = tf.compat.v1.graph_util.convert_variables_to_constants(session, graph.as_graph_def(), keep)
    except ModelScriptError:
        raise
    except Exception as error:  # a broken meta graph, a missing or mismatched checkpoint
        lines = [line.strip() for line in str(error).splitlines() if line.strip()]
        cause = f"{type(error).__name__}: {lines[0]}" if lines else type(error).__name__
        raise ModelScriptError(f"{script}: {LABEL}: {step} ({meta}) failed: {cause}") from error
    return frozen.SerializeToString()


# -------------------------------------------------------------------------------------- freezing
def _op_name(input_name: str) -> str:
    """The op an input of a NodeDef comes from (``^op`` control inputs and ``op:K`` outputs alike)."""
    return input_name.lstrip("^").split(":")[0]


def cut_graph(graph_def, keep: Sequence[str]) -> List[Any]:
    """The nodes of ``graph_def`` that the ops ``keep`` need (themselves included), in graph order."""
    nodes = {node.name: node for node in graph_def.node}
    needed, stack = set(), list(keep)
    while stack:
        name = stack.pop()
        if name in needed or name not in nodes:
            continue
        needed.add(name)
        stack.extend(_op_name(i) for i in nodes[name].input)
    return [node for node in graph_def.node if node.name in needed]


def _shape_text(shape) -> str:
    dims = ["None" if d.size < 0 else str(d.size) for d in shape.dim]
    return f"({', '.join(dims)}{',' if len(dims) == 1 else ''})"


def _conflicts(shape, wanted: Tuple[int, ...]) -> bool:
    if shape.unknown_rank:
        return False
    return len(shape.dim) != len(wanted) or any(0 <= d.size != w for d, w in zip(shape.dim, wanted))


def _set_placeholder(node, array: np.ndarray, k: int, script: str) -> None:
    """Give placeholder ``node`` the shape of ``array`` (inputs() item ``k``), refusing conflicts."""
    if node.op != "Placeholder":
        raise ModelScriptError(f"{script}: {LABEL}: feed {node.name} is a {node.op} node, not a Placeholder",
                               "feed the graph's placeholders")
    declared = tf.as_dtype(node.attr["dtype"].type)
    given = tf.as_dtype(array.dtype)
    if declared != given:
        raise ModelScriptError(f"{script}: {LABEL}: placeholder {node.name} is {declared.name} but inputs() item {k} "
                               f"is {array.dtype}", "give inputs() the placeholder's dtype")
    shape = node.attr["shape"].shape if "shape" in node.attr else None
    if shape is not None and _conflicts(shape, array.shape):
        raise ModelScriptError(f"{script}: {LABEL}: placeholder {node.name} has shape {_shape_text(shape)} but "
                               f"inputs() item {k} has shape {tuple(array.shape)}",
                               "give inputs() arrays of the placeholders' shapes, in the order of the feeds")
    node.attr["shape"].shape.CopyFrom(tf.TensorShape(array.shape).as_proto())


def freeze_graph_def(model: GraphDefModel, batch: Sequence[np.ndarray], script: str = "MODEL_SCRIPT") -> FrozenModel:
    """The emulator's :class:`FrozenModel` of ``model`` for ``batch`` (see the module docstring).

    Checked in this order, each refused in one line: as many feeds as arrays; feeds and fetches naming
    nodes of the graph; an unfed placeholder or a variable among what the fetches need; each feed a
    ``Placeholder`` whose dtype and declared shape (``None`` dimensions match anything) fit its array; the
    cut graph importing in TensorFlow with every fetch found. Devices and recorded ``_output_shapes`` are
    cleared.

    Raises
    ------
    ModelScriptError
    """
    graph_def = tf.compat.v1.GraphDef.FromString(model.graph_def)
    if len(model.feeds) != len(batch):
        raise ModelScriptError(f"{script}: {LABEL} names {len(model.feeds)} feeds but inputs() gives "
                               f"{len(batch)} arrays", "one placeholder per input array, in order")
    nodes: Dict[str, Any] = {node.name: node for node in graph_def.node}
    placeholders = [node.name for node in graph_def.node if node.op == "Placeholder"]
    for feed in model.feeds:
        op, index = _tensor_name(feed)
        if op not in nodes or index != 0:
            raise ModelScriptError(f"{script}: {LABEL}: feed {feed} is not a placeholder of the graph "
                                   f"(its placeholders: {', '.join(placeholders) or 'none'})")
    for fetch in model.fetches:
        op, index = _tensor_name(fetch)
        if op not in nodes or index < 0:
            raise ModelScriptError(f"{script}: {LABEL}: fetch {fetch} is not a tensor of the graph",
                                   "fetch tensor names op:K of the GraphDef's nodes")
    feed_ops = [_tensor_name(f)[0] for f in model.feeds]
    if len(set(feed_ops)) != len(feed_ops):
        raise ModelScriptError(f"{script}: {LABEL}: a placeholder is fed twice ({', '.join(model.feeds)})")
    kept = cut_graph(graph_def, [_tensor_name(f)[0] for f in model.fetches] + feed_ops)
    for node in kept:
        if node.op in VARIABLE_TYPES:
            raise ModelScriptError(f"{script}: {LABEL}: node {node.name} ({node.op}) is an unfrozen variable",
                                   FREEZE_HINT)
        if node.op == "Placeholder" and node.name not in feed_ops:
            raise ModelScriptError(f"{script}: {LABEL}: the fetches need placeholder {node.name}, which is not fed",
                                   "add it to the feeds and its array to inputs()")
    for k, (op, array) in enumerate(zip(feed_ops, batch)):
        _set_placeholder(nodes[op], array, k, script)
    cut = tf.compat.v1.GraphDef()
    cut.versions.CopyFrom(graph_def.versions)
    cut.library.CopyFrom(graph_def.library)
    for node in kept:
        node.device = ""
        for attr in _DROPPED_ATTRS:
            if attr in node.attr:
                del node.attr[attr]
        cut.node.add().CopyFrom(node)
    _check_imports(cut, model.fetches, script)
    return FrozenModel(cut.SerializeToString(), tuple(f"{op}:0" for op in feed_ops), model.fetches)


def _check_imports(graph_def, fetches: Sequence[str], script: str) -> None:
    """Import the cut graph once: TensorFlow's shape inference with the batch's shapes, and outputs that exist."""
    try:
        with tf.Graph().as_default():
            tf.compat.v1.import_graph_def(graph_def, return_elements=list(fetches), name="")
    except Exception as error:  # ValueError: a shape the batch does not fit, an output index out of range
        lines = [line.strip() for line in str(error).splitlines() if line.strip()]
        cause = lines[0] if lines else type(error).__name__
        raise ModelScriptError(f"{script}: {LABEL}: the graph does not import with the batch's shapes: "
                               f"{type(error).__name__}: {cause}") from error
