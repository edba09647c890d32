"""The comparator: :func:`compare_tensors` over every aligned pair, streamed over worker processes.

:func:`compare_alignment` turns an :class:`~precision_tool.alignment.Alignment` into a
:class:`~precision_tool.comparison.result.ComparisonResult`: one row per NPU tensor (compared or not, with the
reason) and per graph op without a dump, in execution order, and the first divergence. Each tensor is judged by the
cosine gate (``-c``, default :data:`DEFAULT_COSINE_THRESHOLD`) and the honest statuses; the fp16 allclose gate is
off (``min_allclose_ratio=0``: its ratio is reported, not gated). Pairs go to forked workers (:mod:`.processes`) in
chunks of consecutive pairs; an input whose bytes and reference are its producer output's shares that output's
result (``reused_from``). Why: docs/compare.md#verdict-per-tensor and docs/compare.md#speed.
"""
from __future__ import annotations

import math
import os
import time
from typing import Callable, Dict, List, Optional, Tuple

from precision_tool.alignment import Alignment
from precision_tool.alignment.npu_side import graphs_of
from precision_tool.comparison.result import ComparisonResult, RunFacts, TensorResult, Timing
from precision_tool.comparison.processes import run_in_workers
from precision_tool.comparison.worker import Outcome, PairComparer, PairTask, reference_identity
from precision_tool.formats.tensor_kind import TensorKind
from precision_tool.metrics import DEFAULT_COSINE_THRESHOLD
from precision_tool.process_env import can_fork
from precision_tool.status import Status

Progress = Callable[[int, int], None]
_MAX_CHUNK = 16
_CHUNKS_PER_WORKER = 8


def default_workers() -> int:
    """Usable CPUs (the process's affinity), at least 1."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return max(1, os.cpu_count() or 1)


def compare_alignment(alignment: Alignment, *, graph=None,
                      cosine_threshold: Optional[float] = DEFAULT_COSINE_THRESHOLD, workers: Optional[int] = None,
                      progress: Optional[Progress] = None, share_inputs: bool = True,
                      workers_started: Optional[Callable[[], None]] = None, cluster: str = "") -> ComparisonResult:
    """Compare every aligned pair and return every row, in execution order, with the first divergence.

    Parameters
    ----------
    alignment : Alignment
        The result of :func:`precision_tool.alignment.align`.
    graph : GraphModel, Graph or None
        The loaded GE graph the alignment used, for the ``GroundTruth`` names and op types of ops without a dump.
    cosine_threshold : float or None
        The cosine gate; ``None`` turns it off (only the honest statuses fail).
    workers : int, optional
        Worker processes (default :func:`default_workers`).
    progress : callable, optional
        Called as ``progress(done, total)`` after each chunk of pairs.
    share_inputs : bool
        Reuse a producer output's result for an identical input (see the module docstring).
    workers_started : callable, optional
        Called once, in this process, when no more worker processes will be forked (right after they start, or
        before comparing when the pairs are compared here): where a caller may start a thread to work while the
        workers compare -- a thread alive at a fork is unsafe.
    cluster : str
        A Dask scheduler's address: the chunks run there (:mod:`.cluster`) instead of in local workers; ``""``
        (the default) compares on this machine and imports no Dask.

    Returns
    -------
    ComparisonResult
    """
    started = time.perf_counter()
    workers = default_workers() if workers is None else max(1, int(workers))
    positions = _positions(alignment)
    names = _ground_truth_names(graph)
    tasks = _tasks(alignment, positions, names, share_inputs)
    outcomes, used_workers = _run(tasks, cosine_threshold, workers, progress, workers_started, cluster)
    computed = _resolve_shared(outcomes, tasks, cosine_threshold)
    rows = computed + _uncompared_rows(alignment, positions, names)
    rows.sort(key=lambda r: r.order_key)
    timing = Timing(compare_s=time.perf_counter() - started, workers=used_workers)
    return ComparisonResult.judged(rows, RunFacts.of(alignment, graph), cosine_threshold, timing)


# --------------------------------------------------------------------------------------------- planning
def _positions(alignment: Alignment) -> Dict[str, int]:
    positions = {name: p for p, name in enumerate(alignment.order)}
    extra = [pair.npu.op_name for pair in alignment.pairs] + [item.npu.op_name for item in alignment.unaligned]
    for name in extra:
        positions.setdefault(name, len(positions))
    return positions


def _ground_truth_names(graph) -> Dict[str, Tuple[str, str]]:
    """``{GE op name: (op type, "tf_a,tf_b")}`` from the graph's ``_datadump_original_op_names``."""
    table: Dict[str, Tuple[str, str]] = {}
    for g in graphs_of(graph):
        for op in g.ops:
            table.setdefault(op.name, (op.type, ",".join(op.original_op_names)))
    return table


def _ground_truth(names: Dict[str, Tuple[str, str]], op_name: str, fallback: str = "*") -> str:
    known = names.get(op_name, ("", ""))[1]
    return known or fallback or "*"


def _tasks(alignment: Alignment, positions, names, share_inputs: bool) -> List[PairTask]:
    outputs = {pair.npu.key: pair for pair in alignment.pairs if pair.npu.kind == TensorKind.OUTPUT}
    tasks = []
    for pair in alignment.pairs:
        npu = pair.npu
        same_as = None
        if share_inputs and npu.kind == TensorKind.INPUT:
            edges = alignment.data_inputs.get(npu.op_name, ())
            if npu.index < len(edges):
                producer, index = edges[npu.index]
                candidate = outputs.get((producer, TensorKind.OUTPUT, index))
                if candidate is not None and _decode_alike(candidate, pair):
                    same_as = candidate.npu
        tasks.append(PairTask(pair, positions[npu.op_name], _ground_truth(names, npu.op_name, pair.ref.op_name),
                              same_as))
    return tasks


def _decode_alike(output_pair, input_pair) -> bool:
    a, b = output_pair.npu, input_pair.npu
    return (reference_identity(output_pair.ref) == reference_identity(input_pair.ref)
            and (a.dtype, a.shape, a.origin_format, a.origin_shape) == (b.dtype, b.shape, b.origin_format,
                                                                         b.origin_shape))


def _chunks(count: int, workers: int) -> List[Tuple[int, int]]:
    """``[start, stop)`` ranges of consecutive tasks: about :data:`_CHUNKS_PER_WORKER` per worker, at most
    :data:`_MAX_CHUNK` tasks each."""
    size = max(1, min(_MAX_CHUNK, math.ceil(count / (workers * _CHUNKS_PER_WORKER))))
    return [(start, min(start + size, count)) for start in range(0, count, size)]


# --------------------------------------------------------------------------------------------- running
def _run(tasks: List[PairTask], cosine_threshold, workers: int, progress: Optional[Progress],
         workers_started: Optional[Callable[[], None]] = None, cluster: str = "") -> Tuple[List[Outcome], int]:
    """Every task's outcome in task order, and the number of processes that compared (on a cluster, its threads).

    Work is always done in worker processes -- even with ``workers=1`` -- so that their process-wide settings
    (:func:`~precision_tool.comparison.worker.prepare_worker_process`) never touch the caller's process (a
    long-lived shell, a test runner). Only a run too small to fill two chunks, or a system that cannot fork
    (:func:`~precision_tool.process_env.can_fork`), compares in this process.
    """
    outcomes: List[Outcome] = []
    if progress:
        progress(0, len(tasks))
    started = workers_started or (lambda: None)
    if cluster:  # chunks for the cluster's threads, on its workers: the rows must not depend on where they were made
        from precision_tool.comparison.cluster import run_on_cluster

        threads = workers

        def on_cluster(count: int) -> None:
            nonlocal threads
            threads = count
            started()

        for chunk_outcomes in run_on_cluster(tasks, lambda count: _chunks(len(tasks), count), cosine_threshold,
                                             cluster, on_cluster):
            outcomes.extend(chunk_outcomes)
            if progress:
                progress(len(outcomes), len(tasks))
        return outcomes, threads
    chunks = _chunks(len(tasks), workers)
    if len(chunks) < 2 or not can_fork():
        started()
        comparer = PairComparer(cosine_threshold)
        for start, stop in chunks:
            outcomes.extend(comparer.run_all(tasks[start:stop]))
        if progress and tasks:
            progress(len(outcomes), len(tasks))
        return outcomes, 1
    processes = min(workers, len(chunks))
    for chunk_outcomes in run_in_workers(tasks, chunks, cosine_threshold, processes, started):
        outcomes.extend(chunk_outcomes)
        if progress:
            progress(len(outcomes), len(tasks))
    return outcomes, processes


def _resolve_shared(outcomes: List[Outcome], tasks: List[PairTask], cosine_threshold) -> List[TensorResult]:
    """Give each input that matched its producer's bytes the producer's result; compare the rare input whose
    producer could not be compared after all."""
    by_id = {row.tensor_id: row for row, shared in outcomes if not shared}
    rows: List[TensorResult] = []
    fallback: Optional[PairComparer] = None
    for (row, shared), task in zip(outcomes, tasks):
        if not shared:
            rows.append(row)
            continue
        source = by_id.get(shared)
        if source is not None and source.compared:
            rows.append(row.sharing_outcome_of(source))
            continue
        fallback = fallback or PairComparer(cosine_threshold)
        rows.append(fallback.run(PairTask(task.pair, task.index, task.ground_truth))[0])
    return rows


def _uncompared_rows(alignment: Alignment, positions, names) -> List[TensorResult]:
    rows = []
    for item in alignment.unaligned:
        npu = item.npu
        rows.append(TensorResult(index=positions[npu.op_name], tensor_id=npu.tensor_id, op_name=npu.op_name,
                                 kind=npu.kind, tensor_index=npu.index, op_type=npu.op_type, status=Status.NOT_COMPARED,
                                 reason=item.reason, npu_dump=npu.path, npu_dtype=npu.dtype,
                                 ground_truth=_ground_truth(names, npu.op_name),
                                 shape=tuple(npu.origin_shape) if npu.origin_shape is not None else tuple(npu.shape)))
    for op_name in alignment.coverage.graph_ops_without_dump:
        position = positions.setdefault(op_name, len(positions))
        rows.append(TensorResult(index=position, tensor_id="", op_name=op_name, kind="", tensor_index=-1,
                                 op_type=names.get(op_name, ("", ""))[0], status=Status.NO_DUMP,
                                 reason="the graph runs this op but the dump folder has no file for it",
                                 ground_truth=_ground_truth(names, op_name)))
    for path, message in alignment.coverage.unreadable:
        position = len(positions)
        positions[path] = position
        rows.append(TensorResult(index=position, tensor_id="", op_name=os.path.basename(path), kind="",
                                 tensor_index=-1, op_type="", status=Status.NOT_COMPARED,
                                 reason=f"unreadable dump file: {message}", npu_dump=path))
    return rows
