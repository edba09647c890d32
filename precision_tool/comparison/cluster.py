"""Comparing on a Dask cluster (``--cluster ADDRESS``, issue 43): the local workers' chunks, run where the data is.

:func:`run_on_cluster` has :func:`~precision_tool.comparison.processes.run_in_workers`' contract -- the outcomes of
each span of consecutive tasks, in span order, one per task -- with each span a Dask task (``distributed``) instead
of a forked worker's job. A task carries the span's :class:`~precision_tool.comparison.worker.PairTask` records
(paths made absolute, not tensors); the worker reads the dump and reference files itself, at the same paths (a
shared file system, as on an Ascend training cluster), and only the rows come back, spelled as this machine would.

A Dask worker is the user's long-lived process, shared by threads and other work: a task changes nothing
process-wide there (no memory or signal settings, files read rather than mapped) and keeps no cache past its span.

Faults never leave a gap: a task whose worker dies is run again on another (the scheduler's ``allowed-failures``),
past that its pairs are ERROR rows naming the lost worker; when every worker is gone for :func:`worker_wait`
seconds, so are the pairs left. A worker that cannot see a file this machine reads, or runs another version (checked
at the start and by each task, for workers that join later), ends the run in one line naming it. Ctrl-C cancels the
run's tasks. Dask is imported here only, and only with ``--cluster`` (docs/compare.md#on-a-dask-cluster).
"""
from __future__ import annotations

import contextlib
import dataclasses
import os
import re
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
#: The environment variable giving the seconds to wait for a worker when the cluster has none (at the start, or
#: after losing every one mid-run); :data:`WORKER_WAIT_SECONDS` when unset.
ENV_WAIT = "PRECISION_TOOL_CLUSTER_WAIT"
WORKER_WAIT_SECONDS = 30.0
#: ``SCHEME://HOST:PORT`` (an IPv6 host in brackets) for the schemes a separate process can reach without extras.
_ADDRESS = re.compile(r"(tcp|tls|ws|wss)://(\[[0-9A-Fa-f:.]+\]|[^\s/:\[\]]+):([0-9]{1,5})")
#: Dask's configuration keys a ``tls://`` client needs (docs/compare.md#tls).
TLS_KEYS = ("distributed.comm.tls.ca-file", "distributed.comm.tls.client.cert")

Spans = List[Tuple[int, int]]


class UnreadableOnWorker(Exception):
    """Raised by :func:`compare_span` on a worker that cannot open a file of its span: ``args`` are the worker's
    address, the path and the system's reason (kept plain so that it pickles back to the client)."""

    def __init__(self, worker: str, path: str, cause: str):
        super().__init__(worker, path, cause)


class UnfitWorker(Exception):
    """Raised by :func:`compare_span` on a worker whose rows could differ from this machine's: ``args`` are the
    worker's address and what it runs (plain strings, so that it pickles back)."""

    def __init__(self, worker: str, runs: str):
        super().__init__(worker, runs)


class _EveryWorkerLost(Exception):
    """No worker for :func:`worker_wait` seconds while spans were left."""


def cluster_address(given: Optional[str], environ=None) -> str:
    """The scheduler address: ``given`` (``--cluster``), else ``PRECISION_TOOL_CLUSTER``, else ``""`` (compare on
    this machine). A value with no scheme Dask knows is a :class:`UsageError`.

    >>> cluster_address("tcp://10.0.0.5:8786"), cluster_address(None, {})
    ('tcp://10.0.0.5:8786', '')
    """
    environ = os.environ if environ is None else environ
    address = (given if given is not None else environ.get(ENV_CLUSTER, "")).strip()
    match = _ADDRESS.fullmatch(address)
    if address and (match is None or not 0 < int(match.group(3)) < 65536):
        source = "--cluster" if given is not None else ENV_CLUSTER
        raise UsageError(f"{source} {address!r} is not a Dask scheduler address",
                         "give tcp://HOST:PORT or tls://HOST:PORT")
    return address


def worker_wait(environ=None) -> float:
    """Seconds to wait for a worker when the cluster has none: ``PRECISION_TOOL_CLUSTER_WAIT``, else
    :data:`WORKER_WAIT_SECONDS` (a worker restarted by its nanny is back in a few seconds; one started by a job
    queue or an adaptive cluster may take longer: raise it there)."""
    environ = os.environ if environ is None else environ
    given = environ.get(ENV_WAIT, "").strip()
    if not given:
        return WORKER_WAIT_SECONDS
    try:
        seconds = float(given)
    except ValueError:
        seconds = -1.0
    if not 0 < seconds < float("inf"):
        raise UsageError(f"{ENV_WAIT}={given!r} is not a number of seconds", "give a positive number, e.g. 120")
    return seconds


def compare_span(tasks: Sequence[PairTask], cosine_threshold: Optional[float],
                 versions: Optional[Tuple[str, str]] = None) -> List[Outcome]:
    """A cluster task: compare ``tasks`` (a span of consecutive pairs) on this worker, reading their files here.

    First this worker must run ``versions`` (this machine's precision_tool and numpy, :func:`_versions`), else
    :class:`UnfitWorker`; and every file the span reads must open here, else :class:`UnreadableOnWorker` (a worker
    without the shared mount must not pass for unreadable dumps). A fresh comparer per span: the worker outlives the
    run, and a cache kept past it could serve a reference replaced since (its key is the path)."""
    if versions is not None and _versions() != tuple(versions):
        raise UnfitWorker(_worker_address(), "precision_tool {} with numpy {}".format(*_versions()))
    for path in sorted({path for task in tasks for path in files_read(task)}):
        if not os.access(path, os.R_OK):
            cause = "no such file" if not os.path.lexists(path) else "permission denied"
            raise UnreadableOnWorker(_worker_address(), path, cause)
    try:
        return PairComparer(cosine_threshold).run_all(list(tasks))
    except Exception:  # noqa: BLE001 -- a bug: its traceback as text, which always pickles back (as run_in_workers)
        raise RuntimeError(f"a comparison worker ({_worker_address()}) failed:\n{traceback.format_exc()}") from None


def _versions() -> Tuple[str, str]:
    import numpy

    import precision_tool

    return precision_tool.__version__, numpy.__version__


def _worker_address() -> str:
    from distributed import get_worker

    try:
        return get_worker().address
    except ValueError:  # not in a worker
        return "this process"


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
        run.submit(plan(threads))  # before waiting for a worker: an adaptive cluster starts them for queued tasks
        started(threads)
        yield from run.outcomes()
    finally:
        if run is not None:
            run.close()
        restore()


class _ClusterRun:
    """One comparison on the cluster: the client, the tasks as sent (paths absolute), their spans' futures (each
    released once its rows are taken: a worker lost later must not make Dask compute it again), and every worker
    seen (to name them if all are lost)."""

    def __init__(self, client, address: str, tasks: Sequence[PairTask], cosine_threshold: Optional[float]):
        self.client, self.address, self.tasks, self.cosine_threshold = client, address, tasks, cosine_threshold
        cwd = os.getcwd()
        self.sent = [_absolute(task, cwd) for task in tasks]
        self.spans: Spans = []
        self.futures: list = []
        self.seen: List[str] = []
        self.wait_seconds = worker_wait()

    def threads(self) -> int:
        """The cluster's threads, its workers checked (:func:`_check_workers`); with no worker yet, this machine's
        CPUs (the tasks wait for workers, :meth:`_wait`)."""
        with self._scheduler_calls():
            nthreads = self._workers()
            _check_workers(self.client)
        return sum(nthreads.values()) or os.cpu_count() or 1

    def submit(self, spans: Spans) -> None:
        run = uuid.uuid4().hex[:12]
        self.spans = spans
        self.futures = [self.client.submit(compare_span, self.sent[start:stop], self.cosine_threshold, _versions(),
                                           key=f"precision_tool-{run}-{number}", pure=False)
                        for number, (start, stop) in enumerate(spans)]

    def outcomes(self) -> Iterator[List[Outcome]]:
        """Each span's outcomes in order, spelled as given (:func:`_as_given`); once every worker is lost, the
        spans left are ERROR rows (or, if no worker ever came, a :class:`WorkspaceError`)."""
        for number, (start, stop) in enumerate(self.spans):
            future = self.futures[number]
            try:
                outcomes = self._span_outcomes(future, start, stop)
            except _EveryWorkerLost:
                with self._scheduler_calls():
                    workers = self._everyone()
                if not workers:
                    raise WorkspaceError(f"the Dask scheduler at {self.address} has no workers (waited "
                                         f"{self.wait_seconds:g} s for one)",
                                         f"start some (dask worker {self.address}), set {ENV_WAIT} to wait longer, "
                                         "or leave --cluster out") from None
                reason = (f"lost every worker of the cluster ({', '.join(workers)}), none back within "
                          f"{self.wait_seconds:g} s, with pairs {start + 1}-{len(self.tasks)} of {len(self.tasks)} to "
                          f"compare; not compared")
                for left_start, left_stop in self.spans[number:]:
                    yield self._as_given(left_start, left_stop,
                                         [not_compared(task, reason) for task in self.sent[left_start:left_stop]])
                break
            future.release()
            self.futures[number] = None
            yield self._as_given(start, stop, outcomes)

    def close(self) -> None:
        pending = [future for future in self.futures if future is not None]
        if pending:
            self.client.cancel(pending)
        self.client.close()

    def _span_outcomes(self, future, start: int, stop: int) -> List[Outcome]:
        """The span's outcomes, one per pair; ERROR rows when its workers kept dying (past the scheduler's
        ``allowed-failures``, naming the last) or when what came back is not one row per pair. A worker that could
        not open a file: the span is compared here if this machine cannot open it either (the rows say why, as
        locally), else :class:`WorkspaceError` naming the worker and the path. A worker of another version, or
        without precision_tool: :class:`UsageError`."""
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
        except UnfitWorker as error:
            worker, runs = error.args
            raise _unfit(worker, runs) from None
        except ImportError as error:  # a worker that joined without precision_tool could not even load the task
            raise _unfit("a worker that joined during the run", f"no precision_tool ({error})") from None
        if [row.tensor_id for row, _ in outcomes] != [task.pair.npu.tensor_id for task in sent]:
            reason = (f"a worker sent back {len(outcomes)} rows for pairs {start + 1}-{stop} of {total}, not one per "
                      f"pair (another precision_tool build there?); not compared")
            return [not_compared(task, reason) for task in sent]
        return outcomes

    def _wait(self, future) -> List[Outcome]:
        """``future``'s result; :class:`_EveryWorkerLost` once the cluster has had no worker for ``wait_seconds``
        (a task with no worker waits for ever). A worker busy for long is not lost: only an empty cluster counts."""
        from asyncio import TimeoutError as AsyncTimeout

        idle_since: Optional[float] = None
        while True:
            with self._scheduler_calls():
                try:
                    return future.result(timeout=1)
                except (TimeoutError, AsyncTimeout):
                    pass
                if self._workers():
                    idle_since = None
                elif idle_since is None:
                    idle_since = time.monotonic()
                elif time.monotonic() - idle_since >= self.wait_seconds:
                    raise _EveryWorkerLost()

    def _everyone(self) -> List[str]:
        """Every worker the run had: those seen, and those the scheduler's event log says joined after this client
        connected (one that joined and died between two looks is still named)."""
        workers = list(self.seen)
        connected = False
        for _, event in self.client.get_events("all"):
            if not isinstance(event, dict):
                continue
            if event.get("action") == "add-client" and event.get("client") == self.client.id:
                connected = True
            elif connected and event.get("action") == "add-worker" and event.get("worker") not in workers:
                workers.append(event["worker"])
        return workers

    def _workers(self) -> Dict[str, int]:
        """The workers and their threads now; each is remembered in :attr:`seen`."""
        nthreads = self.client.nthreads()
        self.seen.extend(worker for worker in sorted(nthreads) if worker not in self.seen)
        return nthreads

    @contextlib.contextmanager
    def _scheduler_calls(self):
        """Whatever a call to the scheduler raises once it is gone (a cancelled future, a closed or refused
        connection, a client whose scheduler handle is gone) becomes one :class:`WorkspaceError`."""
        try:
            yield
        except BaseException as error:  # asyncio's CancelledError is no Exception; Ctrl-C goes on up
            if not isinstance(error, _cancelled() + (OSError, AttributeError)):
                raise
            raise WorkspaceError(f"lost the Dask scheduler at {self.address} during the comparison (its connection "
                                 f"closed)", "start it again and re-run") from None

    def _as_given(self, start: int, stop: int, outcomes: List[Outcome]) -> List[Outcome]:
        return [_as_given(outcome, task, used)
                for outcome, task, used in zip(outcomes, self.tasks[start:stop], self.sent[start:stop])]


def _unfit(worker: str, runs: str) -> UsageError:
    mine = "precision_tool {} with numpy {}".format(*_versions())
    return UsageError(f"Dask worker {worker} runs {runs}, this machine {mine}",
                      "install the same on every worker: the rows must not depend on where they were made")


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
    """Every worker there now runs the precision_tool and numpy versions this machine runs (a row's bits may depend
    on either); else a :class:`UsageError` naming the first worker that does not, or that cannot import them. (A
    worker joining later is checked by its first task, :func:`compare_span`.)"""
    found = client.run(eval, _VERSIONS, on_error="return")  # eval pickles by name: a worker without us can answer
    for worker, theirs in sorted(found.items()):
        if isinstance(theirs, BaseException):
            raise _unfit(worker, f"no precision_tool or numpy ({type(theirs).__name__}: {theirs})")
        if tuple(theirs) != _versions():
            raise _unfit(worker, "precision_tool {} with numpy {}".format(*theirs))


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


__all__ = ["cluster_address", "compare_span", "run_on_cluster", "worker_wait", "UnfitWorker", "UnreadableOnWorker",
           "ENV_CLUSTER", "ENV_WAIT"]
