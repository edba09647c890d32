"""Comparing on a Dask cluster (``--cluster ADDRESS``, issue 43): the local workers' chunks, run where the data is.

:func:`run_on_cluster` has :func:`~precision_tool.comparison.processes.run_in_workers`' contract -- the outcomes of
each span of consecutive tasks, in span order -- with each span a Dask task (``distributed``) instead of a forked
worker's job. A task carries the span's :class:`~precision_tool.comparison.worker.PairTask` records (paths made
absolute, not tensors); the worker reads the dump and reference files itself, at the same paths (a shared file
system, as on an Ascend training cluster), and only the rows come back, written as this machine would write them.

Faults: a task whose worker dies is run again on another (the scheduler's ``allowed-failures``); past that, its
pairs are ERROR rows naming the lost worker. A worker that cannot see a file this machine reads ends the run in one
line naming both (:class:`UnreadableOnWorker`). Ctrl-C cancels the run's tasks. Dask is imported here only, and only
with ``--cluster`` (docs/compare.md#on-a-dask-cluster).
"""
from __future__ import annotations

import dataclasses
import os
import threading
import traceback
import uuid
from typing import Callable, Dict, Iterator, List, Optional, Sequence, Tuple

from precision_tool.comparison.worker import (Outcome, PairComparer, PairTask, files_read, not_compared,
                                              prepare_worker_process)
from precision_tool.errors import UsageError, WorkspaceError

#: The environment variable naming the scheduler when ``--cluster`` is not given.
ENV_CLUSTER = "PRECISION_TOOL_CLUSTER"
#: Seconds to wait for the scheduler when connecting.
CONNECT_SECONDS = 10
_SCHEMES = ("tcp://", "tls://", "inproc://", "ucx://", "ws://", "wss://")
#: Dask's configuration keys a ``tls://`` client needs (docs/compare.md#tls).
TLS_KEYS = ("distributed.comm.tls.ca-file", "distributed.comm.tls.client.cert")

_LOCAL = threading.local()  # a worker thread's comparer: Dask runs tasks in threads, a comparer holds caches
_PREPARED = [False]

Spans = List[Tuple[int, int]]


class UnreadableOnWorker(Exception):
    """Raised by :func:`compare_span` on a worker that cannot open a file of its span: ``args`` are the worker's
    address, the path and the system's reason (kept plain so that it pickles back to the client)."""

    def __init__(self, worker: str, path: str, cause: str):
        super().__init__(worker, path, cause)


def cluster_address(given: Optional[str], environ=None) -> str:
    """The scheduler address: ``given`` (``--cluster``), else ``PRECISION_TOOL_CLUSTER``, else ``""`` (compare on
    this machine). A value with no scheme Dask knows is a :class:`UsageError`.

    >>> cluster_address("tcp://10.0.0.5:8786"), cluster_address(None, {})
    ('tcp://10.0.0.5:8786', '')
    """
    environ = os.environ if environ is None else environ
    address = (given if given is not None else environ.get(ENV_CLUSTER, "")).strip()
    if address and not address.startswith(_SCHEMES):
        source = "--cluster" if given is not None else ENV_CLUSTER
        raise UsageError(f"{source} {address!r} is not a Dask scheduler address",
                         "give tcp://HOST:PORT or tls://HOST:PORT")
    return address


def compare_span(tasks: Sequence[PairTask], cosine_threshold: Optional[float]) -> List[Outcome]:
    """A cluster task: compare ``tasks`` (a span of consecutive pairs) on this worker, reading their files here.

    First every file the span reads must open here; one that does not raises :class:`UnreadableOnWorker` (a
    worker without the shared mount must not pass for unreadable dumps). The worker process is prepared once
    (:func:`~.worker.prepare_worker_process`); each of its threads keeps a comparer of its own."""
    from distributed import get_worker

    for path in sorted({path for task in tasks for path in files_read(task)}):
        if not os.access(path, os.R_OK):
            cause = "no such file" if not os.path.lexists(path) else "permission denied"
            raise UnreadableOnWorker(get_worker().address, path, cause)
    if not _PREPARED[0]:
        prepare_worker_process()
        _PREPARED[0] = True
    comparer = getattr(_LOCAL, "comparer", None)
    if comparer is None or comparer.cosine_threshold != cosine_threshold:
        comparer = _LOCAL.comparer = PairComparer(cosine_threshold)
    try:
        return comparer.run_all(list(tasks))
    except Exception:  # noqa: BLE001 -- a bug: its traceback as text, which always pickles back (as run_in_workers)
        raise RuntimeError(f"a comparison worker ({get_worker().address}) failed:\n{traceback.format_exc()}") from None


def run_on_cluster(tasks: Sequence[PairTask], plan: Callable[[int], Spans], cosine_threshold: Optional[float],
                   address: str, started: Callable[[int], None]) -> Iterator[List[Outcome]]:
    """The outcomes of each span of ``tasks``, in span order, computed on the Dask cluster at ``address``.

    ``plan(threads)`` cuts the tasks into spans for the cluster's ``threads``; ``started(threads)`` is called once
    they are submitted. A span whose workers kept dying gives ERROR rows naming the last one. Raises
    :class:`WorkspaceError` when the scheduler cannot be reached or is lost, or when a worker cannot open a file
    this machine can; re-raises a worker's own exception. Ctrl-C (any exit before the end) cancels the run's tasks.
    """
    restore = _silence_dask_logs()
    futures: list = []
    client = None
    try:
        client = _connect(address)
        _check_workers(client)
        threads = max(1, sum(client.nthreads().values()))
        spans = plan(threads)
        cwd = os.getcwd()
        sent = [_absolute(task, cwd) for task in tasks]
        run = uuid.uuid4().hex[:12]
        futures = [client.submit(compare_span, sent[start:stop], cosine_threshold,
                                 key=f"precision_tool-{run}-{number}", pure=False)
                   for number, (start, stop) in enumerate(spans)]
        started(threads)
        for (start, stop), future in zip(spans, futures):
            outcomes = _result(future, sent[start:stop], start, len(tasks), cosine_threshold, address)
            yield [_as_given(outcome, task, used) for outcome, task, used
                   in zip(outcomes, tasks[start:stop], sent[start:stop])]
        futures = []
    finally:
        if client is not None:
            if futures:
                client.cancel(futures)
            client.close()
        restore()


def _silence_dask_logs() -> Callable[[], None]:
    """Mute Dask's loggers (each of ``distributed``, ``distributed.client``, ``tornado``... has a stderr handler of
    its own): they print a lost connection's traceback, where this run says one line. Returns what restores them."""
    import logging

    try:
        import distributed  # noqa: F401 -- it sets its loggers' levels when first imported
    except ImportError:
        return lambda: None
    loggers = [logging.getLogger(name) for name in ("distributed", "tornado", "bokeh")]
    loggers += [logger for name, logger in logging.root.manager.loggerDict.items()
                if name.startswith(("distributed.", "tornado.")) and isinstance(logger, logging.Logger)]
    levels = [(logger, logger.level) for logger in loggers]
    for logger, _ in levels:
        logger.setLevel(logging.CRITICAL + 1)

    def restore() -> None:
        for logger, level in levels:
            logger.setLevel(level)

    return restore


# ------------------------------------------------------------------------------------------------ connecting
def _connect(address: str):
    try:
        from distributed import Client
    except ImportError:
        raise UsageError(f"--cluster {address}: Dask's distributed is not installed here",
                         "pip install 'precision_tool[cluster]' (Python 3.10 or later), or leave --cluster "
                         "out") from None
    security = _security(address)
    try:
        return Client(address, timeout=CONNECT_SECONDS, set_as_default=False, security=security)
    except (OSError, TimeoutError) as error:
        raise WorkspaceError(f"cannot reach the Dask scheduler at {address} ({' '.join(str(error).split())})",
                             "is it running there, with these certificates? Or leave --cluster out to compare "
                             "here") from None


def _security(address: str):
    """``distributed.security.Security`` from Dask's configuration (``~/.config/dask/*.yaml``, the folder
    ``DASK_CONFIG`` names, or ``DASK_DISTRIBUTED__COMM__TLS__...`` variables), checked: a ``tls://`` scheduler
    needs a CA file and a client certificate that exist; ``None`` for other schemes."""
    if not address.startswith("tls://"):
        return None
    import dask.config
    from distributed.security import Security

    for key in TLS_KEYS:
        path = dask.config.get(key, None)
        if not path:
            raise UsageError(f"--cluster {address}: Dask's configuration names no {key}",
                             "set it in a YAML file of ~/.config/dask or of the folder DASK_CONFIG names, or as DASK_"
                             + key.upper().replace(".", "__").replace("-", "_") + "; docs/compare.md#tls")
        if not os.path.isfile(path):
            raise UsageError(f"--cluster {address}: {key} {path}: no such file")
    return Security(require_encryption=True)


#: What each worker must run as this machine does, for its rows to be this machine's: evaluated there.
_VERSIONS = "(__import__('precision_tool').__version__, __import__('numpy').__version__)"


def _check_workers(client) -> None:
    """Every worker runs the precision_tool and numpy versions this machine runs (a row's bits may depend on
    either); else a :class:`UsageError` naming the first worker that does not, or that cannot import them. A
    scheduler without workers is a :class:`WorkspaceError`."""
    import numpy

    import precision_tool

    mine = (precision_tool.__version__, numpy.__version__)
    found = client.run(eval, _VERSIONS, on_error="return")  # eval pickles by name: a worker without us can answer
    if not found:  # its tasks would wait for a worker for ever
        raise WorkspaceError(f"the Dask scheduler at {client.scheduler.address} has no workers",
                             f"start some (dask worker {client.scheduler.address}), or leave --cluster out")
    for worker, theirs in sorted(found.items()):
        if isinstance(theirs, BaseException):
            raise UsageError(f"Dask worker {worker} cannot import precision_tool or numpy "
                             f"({type(theirs).__name__}: {theirs})",
                             f"install precision_tool {mine[0]} with numpy {mine[1]} on every worker")
        if tuple(theirs) != mine:
            raise UsageError(f"Dask worker {worker} runs precision_tool {theirs[0]} with numpy {theirs[1]}, this "
                             f"machine {mine[0]} with numpy {mine[1]}",
                             "install the same on every worker: the rows must not depend on where they were made")


# ------------------------------------------------------------------------------------------------ results
def _result(future, tasks: Sequence[PairTask], start: int, total: int, cosine_threshold, address: str
            ) -> List[Outcome]:
    """The span's outcomes. When workers died running it past the scheduler's ``allowed-failures``: an ERROR row
    per pair naming the last (never a silent gap: the run goes on, its exit code counting them). When a worker could
    not open a file: compared here if this machine cannot open it either (the rows say why, as locally), else a
    :class:`WorkspaceError` naming the worker and the path."""
    from distributed import KilledWorker

    try:
        return future.result()
    except KilledWorker as error:
        worker = getattr(getattr(error, "last_worker", None), "address", None) or "a worker"
        tries = getattr(error, "allowed_failures", 0) + 1
        reason = (f"lost worker {worker}: workers died {tries} times running pairs {start + 1}-{start + len(tasks)} "
                  f"of {total} (the scheduler's allowed-failures: {tries - 1}); not compared")
        return [not_compared(task, reason) for task in tasks]
    except UnreadableOnWorker as error:
        worker, path, cause = error.args
        if os.access(path, os.R_OK):
            raise WorkspaceError(f"Dask worker {worker} cannot read {path} ({cause}), which this machine reads",
                                 "every worker must see the dumps and references at the same paths as this "
                                 "machine: docs/compare.md#on-a-dask-cluster") from None
        return PairComparer(cosine_threshold).run_all(list(tasks))
    except BaseException as error:  # asyncio's CancelledError is no Exception; Ctrl-C goes on up
        if not isinstance(error, _cancelled()):
            raise
        raise WorkspaceError(f"lost the Dask scheduler at {address} during the comparison "
                             f"({type(error).__name__})", "start it again and re-run") from None


def _cancelled() -> Tuple[type, ...]:
    """What ``future.result()`` raises when the scheduler is lost: a cancelled future, a closed connection."""
    from asyncio import CancelledError as AsyncCancelled
    from concurrent.futures import CancelledError

    from distributed.comm import CommClosedError

    return (CancelledError, AsyncCancelled, CommClosedError)


# ------------------------------------------------------------------------------------------------ paths
def _absolute(task: PairTask, cwd: str) -> PairTask:
    """``task`` with every path absolute against this machine's ``cwd``: a worker's working folder is its own."""
    def fixed(ref):
        return ref if ref is None or os.path.isabs(ref.path) else dataclasses.replace(
            ref, path=os.path.join(cwd, ref.path))

    pair = dataclasses.replace(task.pair, npu=fixed(task.pair.npu), ref=fixed(task.pair.ref))
    return dataclasses.replace(task, pair=pair, same_as=fixed(task.same_as))


def _as_given(outcome: Outcome, task: PairTask, used: PairTask) -> Outcome:
    """``outcome`` as a local run writes it: the paths as this machine's ``task`` spells them (the row's dump path,
    and any path a reason or note quotes)."""
    spelled: Dict[str, str] = {}
    for mine, theirs in ((task.pair.npu, used.pair.npu), (task.pair.ref, used.pair.ref),
                         (task.same_as, used.same_as)):
        if mine is not None and theirs is not None and mine.path != theirs.path:
            spelled[theirs.path] = mine.path
    row, shared = outcome
    if not spelled:
        return outcome

    def given(text: str) -> str:
        for absolute, relative in spelled.items():
            text = text.replace(absolute, relative)
        return text

    return dataclasses.replace(row, npu_dump=given(row.npu_dump), reason=given(row.reason),
                               notes=tuple(given(note) for note in row.notes)), shared


__all__ = ["cluster_address", "compare_span", "run_on_cluster", "UnreadableOnWorker", "ENV_CLUSTER"]
