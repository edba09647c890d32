"""Run many replayed subgraphs in one TensorFlow session on the CPU (TensorFlow imported lazily, here only).

Every :class:`Job` becomes a copy of its TF ops under its own name scope (``replay_<n>/<op>``) in one new
``GraphDef``: each external input is a ``Placeholder`` (or a copy of the reference graph's ``Const``), named
``replay_<n>/__replay_feed_<k>`` apart from any op; a job with a stateful op (op registry) is refused; control
inputs, devices and colocation are dropped, and so are attrs the running TensorFlow's op does not know (a graph
written by TF 2.x replayed under TF 1.15 carries ``MaxPool.explicit_paddings`` and ``MatMul.grad_a``, newer
attrs at their defaults). One ``Session.run`` then computes every job's fetches, so the
cost is one graph import and one run per batch of jobs, not one per op.

float64: a job whose TF ops all accept ``DT_DOUBLE`` for every float attr (the op registry's allowed types) is
run in float64 -- its float attrs, placeholders and constants widened -- so a float32 kernel's own rounding
does not blur the measurement. An op that has no float64 CPU kernel after all is found from the error
TensorFlow raises (``{{node replay_<n>/...}}``); that job is re-run in float32 and says so.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np

from precision_tool.tf_runtime import session_config
from precision_tool.errors import PrecisionToolError
from precision_tool.lazy import lazy_import

tf = lazy_import("tensorflow")

SCOPE = "replay"
RESERVED = "__replay_"  # prefix of the feeds' and constants' names, apart from any TF op's
_NODE_IN_ERROR = re.compile(r"\{\{node (?P<name>[^}]+)\}\}|node '?(?P<other>replay_\d+/[^'\s:]+)")


class ReplayRunError(PrecisionToolError):
    """TensorFlow could not run a replay batch (the message gives TensorFlow's first line)."""


@dataclass
class Job:
    """One subgraph: ``node_defs`` (TF ``NodeDef`` protos of its ops, inputs already the reference's names),
    ``feeds`` ``{tensor: array}``, ``constants`` ``{tensor: Const NodeDef}``, ``fetches`` (tensors).
    After :func:`run_jobs`: ``results`` (arrays in fetch order), ``float64`` (how it ran), ``error``."""

    node_defs: Sequence
    feeds: Dict[str, np.ndarray]
    constants: Dict[str, object]
    fetches: Sequence[str]
    float64: bool = True
    results: List[np.ndarray] = field(default_factory=list)
    error: str = ""


def _op_def(op_type: str):
    from tensorflow.python.framework import op_def_registry

    if hasattr(op_def_registry, "get"):
        return op_def_registry.get(op_type)
    return op_def_registry.get_registered_ops().get(op_type)  # TF 1.15


def is_stateful(node_def) -> bool:
    """The op registry's word: a stateful op (a variable, a random generator, a queue) replays differently."""
    op_def = _op_def(node_def.op)
    return bool(op_def is not None and op_def.is_stateful)


def accepts_float64(node_def) -> bool:
    """True when every float-typed attr of the node allows ``DT_DOUBLE`` (per the op registry). A ``Const``
    never does: widening its ``dtype`` attr would not widen its value."""
    op_def = _op_def(node_def.op)
    if op_def is None or node_def.op == "Const":
        return False
    floats = _float_enums()
    double = tf.float64.as_datatype_enum
    for attr in op_def.attr:
        if attr.type not in ("type", "list(type)") or attr.name not in node_def.attr:
            continue
        value = node_def.attr[attr.name]
        used = [value.type] if attr.type == "type" else list(value.list.type)
        if not any(t in floats for t in used):
            continue
        allowed = list(attr.allowed_values.list.type) if attr.HasField("allowed_values") else []
        if allowed and double not in allowed:
            return False
    return True


def _widen(node_def, floats) -> None:
    double = tf.float64.as_datatype_enum
    for key in node_def.attr:
        value = node_def.attr[key]
        if value.WhichOneof("value") == "type" and value.type in floats:
            value.type = double
        elif value.WhichOneof("value") == "list" and any(t in floats for t in value.list.type):
            types = [double if t in floats else t for t in value.list.type]
            del value.list.type[:]
            value.list.type.extend(types)


def _float_enums():
    return {tf.float32.as_datatype_enum, tf.float16.as_datatype_enum, tf.bfloat16.as_datatype_enum}


def _build(jobs: Sequence[Tuple[int, Job]]):
    """The combined GraphDef, the feed dict and the fetch names (per job, in order)."""
    graph_def = tf.compat.v1.GraphDef()
    feed_dict: Dict[str, np.ndarray] = {}
    fetch_names: Dict[int, List[str]] = {}
    floats = _float_enums()
    for number, job in jobs:
        prefix = f"{SCOPE}_{number}"
        renamed: Dict[str, str] = {}
        for k, (tensor, array) in enumerate(job.feeds.items()):
            array = np.asarray(array)
            if job.float64 and array.dtype.kind == "f":
                array = array.astype(np.float64)
            node = graph_def.node.add(op="Placeholder", name=f"{prefix}/{RESERVED}feed_{k}")
            node.attr["dtype"].type = tf.dtypes.as_dtype(array.dtype).as_datatype_enum
            feed_dict[f"{node.name}:0"] = array
            renamed[tensor] = f"{node.name}:0"
        for k, (tensor, const) in enumerate(job.constants.items()):
            node = graph_def.node.add()
            node.CopyFrom(const)
            node.name = f"{prefix}/{RESERVED}const_{k}"
            node.device = ""
            node.ClearField("input")
            if "_class" in node.attr:
                del node.attr["_class"]
            renamed[tensor] = f"{node.name}:0"
            if job.float64 and node.attr["dtype"].type in floats:
                cast = graph_def.node.add(op="Cast", name=f"{node.name}/to_double", input=[node.name])
                cast.attr["SrcT"].type = node.attr["dtype"].type
                cast.attr["DstT"].type = tf.float64.as_datatype_enum
                renamed[tensor] = f"{cast.name}:0"
        members = {node.name for node in job.node_defs}
        for original in job.node_defs:
            node = graph_def.node.add()
            node.CopyFrom(original)
            node.name = f"{prefix}/{original.name}"
            node.device = ""
            op_def = _op_def(node.op)
            known = {attr.name for attr in op_def.attr} if op_def is not None else set(node.attr)
            for key in [key for key in node.attr if key.startswith("_") or key not in known]:
                del node.attr[key]
            inputs = []
            for source in original.input:
                if source.startswith("^"):
                    continue
                op, _, index = source.partition(":")
                key = f"{op}:{index or 0}"
                inputs.append(f"{prefix}/{source}" if op in members else renamed[key])
            del node.input[:]
            node.input.extend(inputs)
            if job.float64:
                _widen(node, floats)
        fetch_names[number] = [f"{prefix}/{tensor}" for tensor in job.fetches]
    return graph_def, feed_dict, fetch_names


def _run_once(jobs: Sequence[Tuple[int, Job]]) -> None:
    graph_def, feed_dict, fetch_names = _build(jobs)
    graph = tf.Graph()
    with graph.as_default():
        tf.compat.v1.import_graph_def(graph_def, name="")
    order = [name for number, _ in jobs for name in fetch_names[number]]
    with tf.compat.v1.Session(graph=graph, config=session_config()) as session:
        arrays = session.run(order, feed_dict=feed_dict)
    position = 0
    for number, job in jobs:
        count = len(fetch_names[number])
        job.results = [np.asarray(a) for a in arrays[position:position + count]]
        position += count


def _failing_job(error: Exception) -> Optional[int]:
    match = _NODE_IN_ERROR.search(str(error))
    if not match:
        return None
    name = match.group("name") or match.group("other")
    head = name.split("/", 1)[0]
    if head.startswith(f"{SCOPE}_") and head[len(SCOPE) + 1:].isdigit():
        return int(head[len(SCOPE) + 1:])
    return None


def run_jobs(jobs: Sequence[Job]) -> None:
    """Run every job (see the module docstring), filling ``results``, ``float64`` and ``error``.

    A job TensorFlow refuses is retried in float32 if it ran in float64, else given ``error`` (one line); the
    others are re-run without it. Never raises for one bad job.
    """
    for job in jobs:
        stateful = next((node for node in job.node_defs if is_stateful(node)), None)
        if stateful is not None:
            job.error = f"TF op {stateful.name} ({stateful.op}) is stateful: replay would not compute the same"
        job.float64 = job.float64 and all(accepts_float64(node) for node in job.node_defs)
    pending = [(number, job) for number, job in enumerate(jobs) if not job.error]
    while pending:
        try:
            _run_once(pending)
            return
        except (ValueError, KeyError, TypeError, tf.errors.OpError) as error:
            number = _failing_job(error)
            if number is None:
                for item in pending:  # unattributable: run each alone to find out (float64, then float32)
                    run_jobs_alone(item[1])
                return
            job = jobs[number]
            if job.float64:
                job.float64 = False
                continue
            job.error = error_line(error)
            pending = [item for item in pending if item[0] != number]


def run_jobs_alone(job: Job) -> None:
    """Run one job by itself (float64 first when allowed, then float32); sets ``error`` when both fail."""
    for wide in ((True, False) if job.float64 else (False,)):
        job.float64 = wide
        try:
            _run_once([(0, job)])
            job.error = ""
            return
        except (ValueError, KeyError, TypeError, tf.errors.OpError) as error:
            job.error = error_line(error)


_NOISE = ("Graph execution error", "Detected at node", "Node:", "[[", "Original stack", "Traceback", "File ")


def error_line(error: BaseException, with_type: bool = True) -> str:
    """One line saying what went wrong: the first line of the message that is not a TensorFlow stack or node
    banner, after the exception's type unless ``with_type`` is False (a project error's message already is the
    line). At most 300 characters."""
    text = getattr(error, "message", None) or str(error)
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    useful = [line for line in lines if not line.startswith(_NOISE)]
    line = (useful or lines or [type(error).__name__])[0]
    return (f"{type(error).__name__}: {line}" if with_type else line)[:300]
