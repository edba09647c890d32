"""The replay job: plan, load the inputs, run the subgraphs in batches, measure every output.

:func:`replay_alignment` takes an NPU-vs-TF :class:`~precision_tool.alignment.model.Alignment`, the Build graph and
the workspace's ``tf/dump`` and ``tf/graph``, and returns a :class:`ReplayReport`: one :class:`OpReplay` per
replayed op with an :class:`~.local_error.OutputError` per compared output, the ops that could not be replayed and
why, and notes. A bad tensor or op never raises: that op gets an ``error``. Without a reference graph or TensorFlow
:attr:`ReplayReport.ran` is False and a note says why. Batches are cut after ``batch_bytes`` of fed arrays (256 MiB
by default; float64 copies, intermediates and outputs come on top; one op larger is still one batch), each one
TensorFlow session run (:mod:`.runner`).
"""
from __future__ import annotations

import importlib.util
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np

from precision_tool.comparison.engine import default_workers
from precision_tool.errors import PrecisionToolError
from precision_tool.replay.local_error import UNIT_ROUNDOFF, OutputError, measure_output, round_to
from precision_tool.replay.replay_plan import (KIND_CONVERSION, SOURCE_CONSTANT, SOURCE_NPU, ReplayPlan, ReplayUnit,
                                               plan_replay, tensor_key)
from precision_tool.replay.reference_graph import ReferenceGraph, load_reference_graph
from precision_tool.replay.runner import error_line
from precision_tool.install_hint import tensorflow_install_hint
from precision_tool.tf_runtime import BackgroundImport

DEFAULT_BATCH_BYTES = 256 << 20
FLOATS = ("float16", "bfloat16", "float32")


@dataclass(frozen=True)
class OpReplay:
    """One NPU op's replay. ``feeds``: one line per external input saying where its value came from, and
    ``sources`` its source (``npu``, ``reference``, ``constant``), entry for entry;
    ``width``: the float type the subgraph ran in (``""``: the graph's own); ``error``: why it failed
    (``""`` when it ran)."""

    op_name: str
    op_type: str
    kind: str
    members: Tuple[str, ...]
    feeds: Tuple[str, ...]
    outputs: Tuple[OutputError, ...] = ()
    sources: Tuple[str, ...] = ()
    width: str = ""
    error: str = ""

    @property
    def precision(self) -> str:
        if self.kind == KIND_CONVERSION:
            return "numpy conversion"
        return self.width or "the graph's own dtypes"

    def to_dict(self) -> dict:
        return {"op_name": self.op_name, "op_type": self.op_type, "kind": self.kind, "members": list(self.members),
                "feeds": list(self.feeds), "sources": list(self.sources),
                "outputs": [o.to_dict() for o in self.outputs],
                "precision": self.precision, "error": self.error}


@dataclass(frozen=True)
class ReplayReport:
    """The replay of a comparison (see the module docstring)."""

    ran: bool
    ops: Tuple[OpReplay, ...] = ()
    skipped: Dict[str, str] = field(default_factory=dict)
    notes: Tuple[str, ...] = ()
    seconds: float = 0.0
    index_problem: str = ""
    """Why the reference graphs' ``index.json`` could not be read (every ``*.pb`` was read instead): unusable
    input, however the replay went."""

    def op(self, name: str) -> Optional[OpReplay]:
        return next((op for op in self.ops if op.op_name == name), None)

    def applied_to(self, result):
        """``result`` (a :class:`~precision_tool.comparison.result.ComparisonResult`) with this replay's figures in
        its output rows, a ``not replayed: WHY`` note on the compared outputs of ops it could not replay (the
        error jump names the reason), judged again (:meth:`~precision_tool.comparison.result.ComparisonResult.
        with_rows`)."""
        from dataclasses import replace

        from precision_tool.comparison.attribution import NOT_REPLAYED
        from precision_tool.formats.tensor_kind import TensorKind

        measured: Dict[str, tuple] = {}
        reasons: Dict[str, str] = dict(self.skipped)
        for op in self.ops:
            if op.error:
                reasons[op.op_name] = op.error
            for output in op.outputs:
                measured[output.tensor_id] = (output, op.precision)
        everywhere = "" if self.ran else (self.notes[0] if self.notes else "replay did not run")
        rows = []
        for row in result.results:
            if row.kind == TensorKind.OUTPUT and row.tensor_id in measured:
                output, precision = measured[row.tensor_id]
                row = replace(row, local_error=output.local, local_floor=output.floor,
                              inherited_error=output.inherited, local_method=f"replay {precision}",
                              local_spec_error=output.spec_error,
                              notes=row.notes + ((output.note,) if output.note else ()))
            elif row.kind == TensorKind.OUTPUT and row.compared and (row.op_name in reasons or everywhere):
                row = replace(row, notes=row.notes + (NOT_REPLAYED + reasons.get(row.op_name, everywhere),))
            rows.append(row)
        return result.with_rows(rows)

    def to_dict(self) -> dict:
        return {"ran": self.ran, "ops": [op.to_dict() for op in self.ops], "skipped": dict(self.skipped),
                "notes": list(self.notes), "seconds": round(self.seconds, 3),
                "index_problem": self.index_problem or None}


def _reference_lookup(alignment, reference_dir: str, graph: ReferenceGraph):
    from precision_tool.alignment.reference_index import ReferenceIndex
    from precision_tool.formats.npy_dir import read_npy_dir

    files = alignment.reference_files or read_npy_dir(reference_dir)
    index = ReferenceIndex(files, graph.nodes.keys())

    def lookup(tensor: str):
        op, _, k = tensor.rpartition(":")
        return index.find(op, int(k)).ref

    return lookup


def _as_fed(array: np.ndarray, ref) -> np.ndarray:
    """The NPU array as the TF op takes it: the reference tensor's dtype and shape when it holds as many
    elements; else (no reference tensor, an input fed by position, or a reference file that disagrees with
    the dump) the NPU's own shape, a float array as float32, TF's float type -- the dump is what the op read."""
    if ref is None or array.size != int(np.prod(tuple(ref.shape), dtype=np.int64)):
        return array.astype(np.float32) if array.dtype.kind == "f" else array
    if tuple(array.shape) != tuple(ref.shape):
        array = array.reshape(tuple(ref.shape))  # a scalar the NPU dumps as [1], a matrix dumped as its NZ origin
    with np.errstate(over="ignore", invalid="ignore"):
        return array.astype(np.dtype(ref.dtype), copy=False)


def _load_feed(feed) -> np.ndarray:
    if feed.source == SOURCE_NPU:
        float32 = feed.ref is not None and np.dtype(feed.ref.dtype) == np.float32 and feed.dumped.dtype in FLOATS
        wanted = np.float32 if float32 else None  # what _as_fed makes of it: cast in the layout pass instead
        return _as_fed(np.asarray(feed.dumped.load(dtype=wanted).array), feed.ref)
    return np.asarray(feed.ref.load())


class _NodeDefs:
    """TF ``NodeDef`` protos by name, each graph file parsed once; inputs set to the cleaned graph's
    (reference names, no debug nodes)."""

    def __init__(self, graph: ReferenceGraph):
        self.graph = graph
        self.parsed: Dict[str, dict] = {}

    def __call__(self, names: Sequence[str]):
        import tensorflow as tf

        out = []
        for name in names:
            path = self.graph.files[name]
            if path not in self.parsed:
                with open(path, "rb") as handle:
                    graph_def = tf.compat.v1.GraphDef.FromString(handle.read())
                self.parsed[path] = {node.name: node for node in graph_def.node}
            node = tf.compat.v1.NodeDef()
            node.CopyFrom(self.parsed[path][name])
            del node.input[:]
            node.input.extend(self.graph[name].data_inputs)
            out.append(node)
        return out


def _op_replay(unit: ReplayUnit, **figures) -> OpReplay:
    """The :class:`OpReplay` of ``unit``: its names and feeds, and ``figures`` (outputs, width, error)."""
    return OpReplay(unit.op_name, unit.op_type, unit.kind, unit.members, tuple(f.describe() for f in unit.feeds),
                    sources=tuple(f.source for f in unit.feeds), **figures)


def _measure(unit: ReplayUnit, results: Sequence[np.ndarray]) -> Tuple[OutputError, ...]:
    errors = []
    for fetch, replay in zip(unit.fetches, results):
        npu = np.asarray(fetch.npu.load(dtype=np.float64).array)  # measured in float64: cast in the layout pass
        reference = np.asarray(fetch.ref.load()) if fetch.ref is not None else None
        errors.append(measure_output(fetch.npu.tensor_id, npu, replay, fetch.npu.dtype, reference))
    return tuple(errors)


def _conversion(unit: ReplayUnit) -> OpReplay:
    feed = unit.feeds[0]
    try:
        source = np.asarray(feed.dumped.load().array)
        results = []
        for fetch in unit.fetches:
            if fetch.npu.dtype in UNIT_ROUNDOFF and source.dtype.kind == "f":  # float16/bfloat16/float32 targets
                results.append(round_to(source, fetch.npu.dtype))
            else:
                with np.errstate(over="ignore", invalid="ignore"):
                    results.append(source.astype(np.dtype(fetch.npu.dtype)) if fetch.npu.dtype else source)
        return _op_replay(unit, outputs=_measure(unit, results))
    except (PrecisionToolError, ValueError, TypeError) as error:
        return _op_replay(unit, error=error_line(error, with_type=False))


LOW_PRECISION = ("float16", "bfloat16")


def replay_width(unit: ReplayUnit) -> str:
    """The float type to replay ``unit`` in: ``float32`` when every output the NPU wrote is float16 or
    bfloat16 -- float32's own rounding (``2^-24``) is ``2^13`` below float16's unit roundoff (``2^-11``) and
    ``2^16`` below bfloat16's, so it cannot blur a local error measured against their floors -- else
    ``float64`` (a float32 output's floor is ``1e-5``: float32 kernels would blur it). float32 kernels are
    several times faster than float64 ones on the CPU."""
    return "float32" if all(fetch.npu.dtype in LOW_PRECISION for fetch in unit.fetches) else "float64"


def _run_batch(node_defs: _NodeDefs, batch: List[Tuple[ReplayUnit, Dict[str, np.ndarray]]]) -> List[OpReplay]:
    from precision_tool.replay.runner import Job, run_jobs

    jobs = []
    for unit, feeds in batch:
        constants = {}
        for feed in unit.feeds:
            if feed.source == SOURCE_CONSTANT:
                constants[feed.tensor] = node_defs([feed.constant])[0]
        jobs.append(Job(node_defs(unit.members), feeds, constants, [f.tensor for f in unit.fetches],
                        width=replay_width(unit)))
    run_jobs(jobs)
    with ThreadPoolExecutor(max_workers=default_workers()) as pool:  # numpy leaves the GIL in its array passes
        return list(pool.map(_finish, batch, jobs))


def _finish(item: Tuple[ReplayUnit, Dict[str, np.ndarray]], job) -> OpReplay:
    """The :class:`OpReplay` of one ran job: its measured outputs, or why there are none."""
    unit = item[0]
    if job.error:
        why = job.error if job.error.startswith("TF op ") else f"TensorFlow could not run it: {job.error}"
        return _op_replay(unit, width=job.width, error=why)
    try:
        outputs = _measure(unit, job.results)
    except (PrecisionToolError, ValueError, TypeError) as error:
        return _op_replay(unit, width=job.width, error=error_line(error, with_type=False))
    return _op_replay(unit, outputs=outputs, width=job.width)


def replay_alignment(alignment, ge_graph, reference_dir: str, graph_dir: str,
                     batch_bytes: int = DEFAULT_BATCH_BYTES, only: Optional[Sequence[str]] = None,
                     tensorflow: Optional[BackgroundImport] = None) -> ReplayReport:
    """Replay every compared NPU op of ``alignment`` (see the module docstring), or the ops named in ``only``.

    ``tensorflow``: an import the caller started early (:meth:`BackgroundImport.start`, e.g. while the
    comparison ran); else TensorFlow is imported in a thread while the inputs are read, when any op needs it.

    Never raises: replay only adds evidence, so whatever stops it as a whole (an unreadable reference folder, a
    broken TensorFlow) becomes the report's note and ``ac`` goes on without it.
    """
    started = time.perf_counter()
    try:
        return _replay(alignment, ge_graph, reference_dir, graph_dir, batch_bytes, only, tensorflow, started)
    finally:
        if tensorflow is not None:
            tensorflow.wait()  # never leave the import running (nothing may fork meanwhile)


def _replay(alignment, ge_graph, reference_dir: str, graph_dir: str, batch_bytes: int,
            only: Optional[Sequence[str]], tensorflow: Optional[BackgroundImport], started: float) -> ReplayReport:
    try:
        graph = load_reference_graph(graph_dir)
    except PrecisionToolError as error:
        return ReplayReport(False, notes=(f"replay not run: {error}",))
    if importlib.util.find_spec("tensorflow") is None:
        return ReplayReport(False, notes=(f"replay not run: TensorFlow is not installed; {tensorflow_install_hint()}",))
    try:
        lookup = _reference_lookup(alignment, reference_dir, graph)
        plan = plan_replay(alignment.pairs, alignment.order, graph, ge_graph, lookup,
                           [item.npu for item in alignment.unaligned])
        if only is not None:
            wanted = set(only)
            plan = ReplayPlan(tuple(u for u in plan.units if u.op_name in wanted),
                              {op: why for op, why in plan.skipped.items() if op in wanted})
        if any(unit.kind != KIND_CONVERSION for unit in plan.units):
            tensorflow = tensorflow or BackgroundImport()
            tensorflow.start()
        try:
            replays = _replay_units(plan, _NodeDefs(graph), tensorflow, batch_bytes)
        finally:
            if tensorflow is not None:
                tensorflow.wait()
    except _ReplayUnavailable as error:
        return ReplayReport(False, notes=(str(error),), seconds=time.perf_counter() - started)
    except Exception as error:  # noqa: BLE001 -- see the docstring: a note, never a lost verdict
        return ReplayReport(False, notes=(f"replay not run: {error_line(error)}",),
                            seconds=time.perf_counter() - started)
    ops = tuple(replays[unit.op_name] for unit in plan.units)
    return ReplayReport(True, ops, dict(plan.skipped), graph.notes, time.perf_counter() - started,
                        graph.index_problem)


def _replay_units(plan: ReplayPlan, node_defs: "_NodeDefs", tensorflow: Optional[BackgroundImport],
                  batch_bytes: int) -> Dict[str, OpReplay]:
    """Conversions in numpy; subgraphs in batches of at most ``batch_bytes`` of inputs, once TensorFlow is in."""
    replays: Dict[str, OpReplay] = {}
    batch: List[Tuple[ReplayUnit, Dict[str, np.ndarray]]] = []
    size = 0

    def flush() -> None:
        nonlocal batch, size
        failure = tensorflow.wait() if tensorflow is not None else "TensorFlow was not imported"
        if failure:
            raise _ReplayUnavailable(f"replay not run: {failure}")
        replays.update((r.op_name, r) for r in _run_batch(node_defs, batch))
        batch, size = [], 0

    for unit in plan.units:
        if unit.kind == KIND_CONVERSION:
            replays[unit.op_name] = _conversion(unit)
            continue
        try:
            feeds = {feed.tensor: _load_feed(feed) for feed in unit.feeds if feed.source != SOURCE_CONSTANT}
        except (PrecisionToolError, ValueError, TypeError) as error:
            why = error_line(error, with_type=False)
            replays[unit.op_name] = _op_replay(unit, error=f"an input could not be read: {why}")
            continue
        batch.append((unit, feeds))
        size += sum(a.nbytes for a in feeds.values())
        if size >= batch_bytes:
            flush()
    if batch:
        flush()
    return replays


class _ReplayUnavailable(Exception):
    """TensorFlow could not be imported after all (its message is the note)."""


__all__ = ["OpReplay", "ReplayReport", "replay_alignment", "tensor_key"]
