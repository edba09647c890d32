"""Comparing on a Dask cluster (``--cluster ADDRESS``, issue 43): the local workers' chunks, run where the data is.

:func:`run_on_cluster` has :func:`~precision_tool.comparison.processes.run_in_workers`' contract -- the outcomes of
each span of consecutive tasks, in span order, one per task -- with each span a Dask task (``distributed``) instead
of a forked worker's job. A task carries the span's :class:`~precision_tool.comparison.worker.PairTask` records
(paths made absolute, not tensors); the worker reads the dump and reference files itself, at the same paths (a
shared file system, as on an Ascend training cluster), and only the rows come back, spelled as this machine would.

A Dask worker is the user's long-lived process, shared by threads and other work: a task changes nothing
process-wide there (no memory or signal settings, files read rather than mapped) and keeps no cache past its span.

Faults never leave a gap: a task whose worker dies is run again on another (the scheduler's ``allowed-failures``),
past that its pairs are ERROR rows naming the lost worker; when every worker is gone for
:data:`WORKER_WAIT_SECONDS`, so are the pairs left. A worker that cannot see a file this machine reads, or runs
another version, ends the run in one line naming it. Ctrl-C cancels the run's tasks. Dask is imported here only,
and only with ``--cluster`` (docs/compare.md#on-a-dask-cluster).
"""
from __future__ import annotations

import dataclasses
import os
import time
import traceback
import uuid
from typing import Callable, Dict, Iterator, List, Optional, Sequence, Tuple

from precision_tool.comparison.worker import Outcome, PairComparer, PairTask, files_read, not_compared
from precision_tool.errors import UsageError, WorkspaceError

#: The environment variable naming the scheduler when ``--cluster`` is not given.
ENV_CLUSTER = "PRECISION_TOOL_CLUSTER"
#: Seconds to wait for the scheduler when connecting.
CONNECT_SECONDS = 10
#: Seconds to wait for a worker when the cluster has none: at the start, or after losing every one mid-run.
WORKER_WAIT_SECONDS = 15
_SCHEMES = ("tcp://", "tls://", "inproc://", "ucx://", "ws://", "wss://")
#: Dask's configuration keys a ``tls://`` client needs (docs/compare.md#tls).
TLS_KEYS = ("distributed.comm.tls.ca-file", "distributed.comm.tls.client.cert")

Spans = List[Tuple[int, int]]


class UnreadableOnWorker(Exception):
    """Raised by :func:`compare_span` on a worker that cannot open a file of its span: ``args`` are the worker's
    address, the path and the system's reason (kept plain so that it pickles back to the client)."""

    def __init__(self, worker: str, path: str, cause: str):
        super().__init__(worker, path, cause)


class _EveryWorkerLost(Exception):
    """No worker for :data:`WORKER_WAIT_SECONDS` while spans were left."""


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
    worker without the shared mount must not pass for unreadable dumps). A fresh comparer per span: the worker
    outlives the run, and a cache kept past it could serve a reference replaced since (its key is the path)."""
    from distributed import get_worker

    for path in sorted({path for task in tasks for path in files_read(task)}):
        if not os.access(path, os.R_OK):
            cause = "no such file" if not os.path.lexists(path) else "permission denied"
            raise UnreadableOnWorker(get_worker().address, path, cause)
    try:
        return PairComparer(cosine_threshold).run_all(list(tasks))
    except Exception:  # noqa: BLE001 -- a bug: its traceback as text, which always pickles back (as run_in_workers)
        raise RuntimeError(f"a comparison worker ({get_worker().address}) failed:\n{traceback.format_exc()}") from None


def run_on_cluster(tasks: Sequence[PairTask], plan: Callable[[int], Spans], cosine_threshold: Optional[float],
                   address: str, started: Callable[[int], None]) -> Iterator[List[Outcome]]:
    """The outcomes of each span of ``tasks``, in span order, computed on the Dask cluster at ``address``.

    ``plan(threads)`` cuts the tasks into spans for the cluster's ``threads``; ``started(threads)`` is called once
    they are submitted. Raises :class:`WorkspaceError` when the scheduler cannot be reached or is lost, has no
    worker, or a worker cannot open a file this machine can; :class:`UsageError` for a worker of another version or
    unusable TLS settings; re-raises a worker's own exception. Ctrl-C (any exit before the end) cancels the run's
    tasks.
    """
    restore = _silence_dask_logs()
    run: Optional[_ClusterRun] = None
    try:
        run = _ClusterRun(_connect(address), address, tasks, cosine_threshold)
        threads = run.threads()
        run.submit(plan(threads))
        started(threads)
        yield from run.outcomes()
    finally:
        if run is not None:
            run.close()
        restore()


class _ClusterRun:
    """One comparison on the cluster: the client, the tasks as sent (paths absolute), their spans' futures, and
    every worker seen (to name them if all are lost)."""

    def __init__(self, client, address: str, tasks: Sequence[PairTask], cosine_threshold: Optional[float]):
        self.client, self.address, self.tasks, self.cosine_threshold = client, address, tasks, cosine_threshold
        cwd = os.getcwd()
        self.sent = [_absolute(task, cwd) for task in tasks]
        self.spans: Spans = []
        self.futures: list = []
        self.seen: List[str] = []

    def threads(self) -> int:
        """The cluster's threads, once it has a worker (waiting up to :data:`WORKER_WAIT_SECONDS`), every worker
        checked (:func:`_check_workers`)."""
        if not self._workers(WORKER_WAIT_SECONDS):  # else its tasks would wait for ever
            raise WorkspaceError(f"the Dask scheduler at {self.address} has no workers (waited "
                                 f"{WORKER_WAIT_SECONDS} s)",
                                 f"start some (dask worker {self.address}), or leave --cluster out")
        _check_workers(self.client)
        return max(1, sum(self.client.nthreads().values()))

    def submit(self, spans: Spans) -> None:
        run = uuid.uuid4().hex[:12]
        self.spans = spans
        self.futures = [self.client.submit(compare_span, self.sent[start:stop], self.cosine_threshold,
                                           key=f"precision_tool-{run}-{number}", pure=False)
                        for number, (start, stop) in enumerate(spans)]

    def outcomes(self) -> Iterator[List[Outcome]]:
        """Each span's outcomes in order, spelled as given (:func:`_as_given`); once every worker is lost, the
        spans left are ERROR rows."""
        for number, ((start, stop), future) in enumerate(zip(self.spans, self.futures)):
            try:
                outcomes = self._span_outcomes(future, start, stop)
            except _EveryWorkerLost:
                self.client.cancel(self.futures[number:])
                reason = (f"lost every worker of the cluster ({', '.join(self.seen) or 'none seen'}), none back "
                          f"within {WORKER_WAIT_SECONDS} s, with pairs {start + 1}-{len(self.tasks)} of "
                          f"{len(self.tasks)} to compare; not compared")
                for left_start, left_stop in self.spans[number:]:
                    yield self._as_given(left_start, left_stop,
                                         [not_compared(task, reason) for task in self.sent[left_start:left_stop]])
                break
            yield self._as_given(start, stop, outcomes)
        self.futures = []

    def close(self) -> None:
        if self.futures:
            self.client.cancel(self.futures)
        self.client.close()

    def _span_outcomes(self, future, start: int, stop: int) -> List[Outcome]:
        """The span's outcomes, one per pair; ERROR rows when its workers kept dying (past the scheduler's
        ``allowed-failures``, naming the last) or when what came back is not one row per pair. A worker that could
        not open a file: the span is compared here if this machine cannot open it either (the rows say why, as
        locally), else :class:`WorkspaceError` naming the worker and the path."""
        from distributed import KilledWorker

        sent, total = self.sent[start:stop], len(self.tasks)
        try:
            outcomes = self._wait(future)
        except KilledWorker as error:
            worker = getattr(getattr(error, "last_worker", None), "address", None) or "a worker"
            tries = getattr(error, "allowed_failures", 0) + 1
            reason = (f"lost worker {worker}: workers died {tries} times running pairs {start + 1}-{stop} of {total} "
                      f"(the scheduler's allowed-failures: {tries - 1}); not compared")
            return [not_compared(task, reason) for task in sent]
        except UnreadableOnWorker as error:
            worker, path, cause = error.args
            if os.access(path, os.R_OK):
                raise WorkspaceError(f"Dask worker {worker} cannot read {path} ({cause}), which this machine reads",
                                     "every worker must see the dumps and references at the same paths as this "
                                     "machine: docs/compare.md#on-a-dask-cluster") from None
            return PairComparer(self.cosine_threshold).run_all(list(sent))
        except BaseException as error:  # asyncio's CancelledError is no Exception; Ctrl-C goes on up
            if not isinstance(error, _cancelled()):
                raise
            raise WorkspaceError(f"lost the Dask scheduler at {self.address} during the comparison (its connection "
                                 f"closed)", "start it again and re-run") from None
        if [row.tensor_id for row, _ in outcomes] != [task.pair.npu.tensor_id for task in sent]:
            reason = (f"a worker sent back {len(outcomes)} rows for pairs {start + 1}-{stop} of {total}, not one per "
                      f"pair (another precision_tool build there?); not compared")
            return [not_compared(task, reason) for task in sent]
        return outcomes

    def _wait(self, future) -> List[Outcome]:
        """``future``'s result; :class:`_EveryWorkerLost` once the cluster has had no worker for
        :data:`WORKER_WAIT_SECONDS` (a task with no worker waits for ever)."""
        from asyncio import TimeoutError as AsyncTimeout

        idle_since: Optional[float] = None
        while True:
            try:
                return future.result(timeout=1)
            except (TimeoutError, AsyncTimeout):
                pass
            if self._workers(0):
                idle_since = None
            elif idle_since is None:
                idle_since = time.monotonic()
            elif time.monotonic() - idle_since >= WORKER_WAIT_SECONDS:
                raise _EveryWorkerLost()

    def _workers(self, seconds: float) -> Dict[str, int]:
        """The workers and their threads, waiting up to ``seconds`` for one; each is remembered in :attr:`seen`."""
        deadline = time.monotonic() + seconds
        while True:
            nthreads = self.client.nthreads()
            self.seen.extend(worker for worker in sorted(nthreads) if worker not in self.seen)
            if nthreads or time.monotonic() >= deadline:
                return nthreads
            time.sleep(0.25)

    def _as_given(self, start: int, stop: int, outcomes: List[Outcome]) -> List[Outcome]:
        return [_as_given(outcome, task, used)
                for outcome, task, used in zip(outcomes, self.tasks[start:stop], self.sent[start:stop])]


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


def _cancelled() -> Tuple[type, ...]:
    """What ``future.result()`` raises when the scheduler is lost: a cancelled future, a closed connection."""
    from asyncio import CancelledError as AsyncCancelled
    from concurrent.futures import CancelledError

    from distributed.comm import CommClosedError

    return (CancelledError, AsyncCancelled, CommClosedError)


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
    ``DASK_CONFIG`` names, or ``DASK_DISTRIBUTED__COMM__TLS__...`` variables), checked before connecting: a
    ``tls://`` scheduler needs a CA file and a client certificate, files that make a TLS context; ``None`` for other
    schemes."""
    if not address.startswith("tls://"):
        return None
    import ssl

    import dask.config
    from distributed.security import Security

    files = []
    for key in TLS_KEYS + ("distributed.comm.tls.client.key",):
        path = dask.config.get(key, None)
        if not path:
            if key == "distributed.comm.tls.client.key":
                continue  # the certificate's file may hold its key
            raise UsageError(f"--cluster {address}: Dask's configuration names no {key}",
                             "set it in a YAML file of ~/.config/dask or of the folder DASK_CONFIG names, or as DASK_"
                             + key.upper().replace(".", "__").replace("-", "_") + "; docs/compare.md#tls")
        if not os.path.isfile(path):
            why = "is a folder" if os.path.isdir(path) else "no such file"
            raise UsageError(f"--cluster {address}: {key} {path}: {why}")
        files.append(path)
    security = Security(require_encryption=True)
    try:
        security.get_connection_args("client")  # loads the files into a TLS context
    except (ssl.SSLError, OSError, ValueError) as error:
        raise UsageError(f"--cluster {address}: the TLS files of Dask's configuration ({', '.join(files)}) make no "
                         f"TLS context: {' '.join(str(error).split())}",
                         "each must be PEM: the CA's certificate, the client's certificate and its key") from None
    return security


#: What each worker must run as this machine does, for its rows to be this machine's: evaluated there.
_VERSIONS = "(__import__('precision_tool').__version__, __import__('numpy').__version__)"


def _check_workers(client) -> None:
    """Every worker runs the precision_tool and numpy versions this machine runs (a row's bits may depend on
    either); else a :class:`UsageError` naming the first worker that does not, or that cannot import them."""
    import numpy

    import precision_tool

    mine = (precision_tool.__version__, numpy.__version__)
    found = client.run(eval, _VERSIONS, on_error="return")  # eval pickles by name: a worker without us can answer
    for worker, theirs in sorted(found.items()):
        if isinstance(theirs, BaseException):
            raise UsageError(f"Dask worker {worker} cannot import precision_tool or numpy "
                             f"({type(theirs).__name__}: {theirs})",
                             f"install precision_tool {mine[0]} with numpy {mine[1]} on every worker")
        if tuple(theirs) != mine:
            raise UsageError(f"Dask worker {worker} runs precision_tool {theirs[0]} with numpy {theirs[1]}, this "
                             f"machine {mine[0]} with numpy {mine[1]}",
                             "install the same on every worker: the rows must not depend on where they were made")


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
