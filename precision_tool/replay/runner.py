"""Run many replayed subgraphs in one TensorFlow session on the CPU (TensorFlow imported lazily, here only).

Every :class:`Job` becomes a copy of its TF ops under its own name scope (``replay_<n>/<op>``) in one new
``GraphDef``, its external inputs placeholders (or copies of the reference graph's constants); one ``Session.run``
computes every job's fetches. A job runs at its :attr:`Job.width` (``float64`` or ``float32``) when every op accepts
it, else at the next: ``float64`` -> ``float32`` -> the graph's own types; an op without a CPU kernel for the width
is found from TensorFlow's error and re-run at the next. What is dropped from the copies, and why:
docs/internals/replay.md#runner.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np

from precision_tool.tf_runtime import session_config
from precision_tool.lazy import lazy_import

tf = lazy_import("tensorflow")

SCOPE = "replay"
RESERVED = "__replay_"  # prefix of the feeds' and constants' names, apart from any TF op's
_NODE_IN_ERROR = re.compile(r"\{\{node (?P<name>[^}]+)\}\}|node '?(?P<other>replay_\d+/[^'\s:]+)")


@dataclass
class Job:
    """One subgraph: ``node_defs`` (TF ``NodeDef`` protos of its ops, inputs already the reference's names),
    ``feeds`` ``{tensor: array}``, ``constants`` ``{tensor: Const NodeDef}``, ``fetches`` (tensors),
    ``width`` (``"float64"``, ``"float32"`` or ``""``, see the module docstring). After :func:`run_jobs`:
    ``results`` (arrays in fetch order), ``width`` (how it ran), ``error``."""

    node_defs: Sequence
    feeds: Dict[str, np.ndarray]
    constants: Dict[str, object]
    fetches: Sequence[str]
    width: str = "float64"
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


WIDTHS = ("float64", "float32", "")
"""The widths a job may run at, widest first; ``""`` is the graph's own types."""


def _narrower(width: str):
    """The float type enums ``width`` widens: float32/float16/bfloat16 for float64, float16/bfloat16 for
    float32, none for ``""``."""
    narrow = {"float64": (tf.float32, tf.float16, tf.bfloat16), "float32": (tf.float16, tf.bfloat16)}
    return {dtype.as_datatype_enum for dtype in narrow.get(width, ())}


def accepts_width(node_def, width: str) -> bool:
    """True when every float attr of the node that ``width`` widens allows that type (per the op registry).
    A ``Const`` never does: widening its ``dtype`` attr would not widen its value. Always true for ``""``."""
    if not width:
        return True
    op_def = _op_def(node_def.op)
    if op_def is None or node_def.op == "Const":
        return False
    narrower = _narrower(width)
    wide = tf.dtypes.as_dtype(width).as_datatype_enum
    for attr in op_def.attr:
        if attr.type not in ("type", "list(type)") or attr.name not in node_def.attr:
            continue
        value = node_def.attr[attr.name]
        used = [value.type] if attr.type == "type" else list(value.list.type)
        if not any(t in narrower for t in used):
            continue
        allowed = list(attr.allowed_values.list.type) if attr.HasField("allowed_values") else []
        if allowed and wide not in allowed:
            return False
    return True


def _widen(node_def, narrower, wide: int) -> None:
    for key in node_def.attr:
        value = node_def.attr[key]
        if value.WhichOneof("value") == "type" and value.type in narrower:
            value.type = wide
        elif value.WhichOneof("value") == "list" and any(t in narrower for t in value.list.type):
            types = [wide if t in narrower else t for t in value.list.type]
            del value.list.type[:]
            value.list.type.extend(types)


def _build(jobs: Sequence[Tuple[int, Job]]):
    """The combined GraphDef, the feed dict and the fetch names (per job, in order)."""
    graph_def = tf.compat.v1.GraphDef()
    feed_dict: Dict[str, np.ndarray] = {}
    fetch_names: Dict[int, List[str]] = {}
    for number, job in jobs:
        prefix = f"{SCOPE}_{number}"
        renamed: Dict[str, str] = {}
        narrower = _narrower(job.width)
        wide = tf.dtypes.as_dtype(job.width).as_datatype_enum if job.width else 0
        for k, (tensor, array) in enumerate(job.feeds.items()):
            array = np.asarray(array)
            if job.width and array.dtype.kind == "f" and array.dtype.itemsize < np.dtype(job.width).itemsize:
                array = array.astype(job.width)
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
            if node.attr["dtype"].type in narrower:
                cast = graph_def.node.add(op="Cast", name=f"{node.name}/widened", input=[node.name])
                cast.attr["SrcT"].type = node.attr["dtype"].type
                cast.attr["DstT"].type = wide
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
            if narrower:
                _widen(node, narrower, wide)
        fetch_names[number] = [f"{prefix}/{tensor}" for tensor in job.fetches]
    return graph_def, feed_dict, fetch_names


def _run_once(jobs: Sequence[Tuple[int, Job]]) -> None:
    graph_def, feed_dict, fetch_names = _build(jobs)
    graph = tf.Graph()
    with graph.as_default():
        tf.compat.v1.import_graph_def(graph_def, name="")
    order = [name for number, _ in jobs for name in fetch_names[number]]
    with tf.compat.v1.Session(graph=graph, config=session_config(threads=0)) as session:
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


def _next_width(job: Job) -> bool:
    """Move ``job`` to the next width its ops all accept; False when it ran at the last one already."""
    for width in WIDTHS[WIDTHS.index(job.width) + 1:]:
        if all(accepts_width(node, width) for node in job.node_defs):
            job.width = width
            return True
    return False


def run_jobs(jobs: Sequence[Job]) -> None:
    """Run every job (see the module docstring), filling ``results``, ``width`` and ``error``.

    A job TensorFlow refuses is retried at the next width, else given ``error`` (one line); the others are
    re-run without it. Never raises for one bad job.
    """
    for job in jobs:
        stateful = next((node for node in job.node_defs if is_stateful(node)), None)
        if stateful is not None:
            job.error = f"TF op {stateful.name} ({stateful.op}) is stateful: replay would not compute the same"
        if not all(accepts_width(node, job.width) for node in job.node_defs):
            _next_width(job)
    pending = [(number, job) for number, job in enumerate(jobs) if not job.error]
    while pending:
        try:
            _run_once(pending)
            return
        except (ValueError, KeyError, TypeError, tf.errors.OpError) as error:
            number = _failing_job(error)
            if number is None:
                for item in pending:  # unattributable: run each alone to find out, width by width
                    run_jobs_alone(item[1])
                return
            job = jobs[number]
            if _next_width(job):
                continue
            job.error = error_line(error)
            pending = [item for item in pending if item[0] != number]


def run_jobs_alone(job: Job) -> None:
    """Run one job by itself, at each width it accepts in turn; sets ``error`` when all fail."""
    while True:
        try:
            _run_once([(0, job)])
            job.error = ""
            return
        except (ValueError, KeyError, TypeError, tf.errors.OpError) as error:
            job.error = error_line(error)
            if not _next_width(job):
                return


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
