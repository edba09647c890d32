"""Comparing on a Dask cluster (``--cluster ADDRESS``, issue 43): the local workers' chunks, run where the data is.

:func:`run_on_cluster` has :func:`~precision_tool.comparison.processes.run_in_workers`' contract -- the outcomes of
each span of consecutive tasks, in span order -- with each span a Dask task (``distributed``) instead of a forked
worker's job. A task carries the span's :class:`~precision_tool.comparison.worker.PairTask` records (paths, not
tensors); the worker reads the dump and reference files itself, at the same paths (a shared file system, as on an
Ascend training cluster), and only the rows come back. A task whose worker dies is run again elsewhere, up to
:data:`RETRIES` times (Dask's retries), then its pairs are ERROR rows naming the lost worker. Dask is imported here
only, and only with ``--cluster``
(docs/compare.md#on-a-dask-cluster).
"""
from __future__ import annotations

import os
import threading
import uuid
from typing import Callable, Iterator, List, Optional, Sequence, Tuple

from precision_tool.comparison.worker import Outcome, PairComparer, PairTask, not_compared, prepare_worker_process
from precision_tool.errors import UsageError, WorkspaceError

#: The environment variable naming the scheduler when ``--cluster`` is not given.
ENV_CLUSTER = "PRECISION_TOOL_CLUSTER"
#: How many times a task is run again when its worker dies (then the run fails, naming the worker).
RETRIES = 2
#: Seconds to wait for the scheduler when connecting.
CONNECT_SECONDS = 10
_SCHEMES = ("tcp://", "tls://", "inproc://", "ucx://", "ws://", "wss://")

_LOCAL = threading.local()  # a worker thread's comparer: Dask runs tasks in threads, a comparer holds caches
_PREPARED = [False]


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
    The worker process is prepared once (:func:`~.worker.prepare_worker_process`); each of its threads keeps a
    comparer of its own."""
    if not _PREPARED[0]:
        prepare_worker_process()
        _PREPARED[0] = True
    comparer = getattr(_LOCAL, "comparer", None)
    if comparer is None or comparer.cosine_threshold != cosine_threshold:
        comparer = _LOCAL.comparer = PairComparer(cosine_threshold)
    return comparer.run_all(list(tasks))


def run_on_cluster(tasks: Sequence[PairTask], spans: Sequence[Tuple[int, int]], cosine_threshold: Optional[float],
                   address: str, started: Callable[[], None]) -> Iterator[List[Outcome]]:
    """The outcomes of each span of ``tasks``, in span order, computed on the Dask cluster at ``address``.

    A span whose worker died :data:`RETRIES` + 1 times gives ERROR rows naming it. Raises
    :class:`WorkspaceError` when the scheduler cannot be reached, and re-raises a worker's own exception. Ctrl-C
    (or any exit before the end) cancels the run's tasks on the cluster.
    """
    client = _connect(address)
    futures: list = []
    try:
        run = uuid.uuid4().hex[:12]
        futures = [client.submit(compare_span, list(tasks[start:stop]), cosine_threshold, key=f"precision_tool-"
                                 f"{run}-{number}", retries=RETRIES, pure=False)
                   for number, (start, stop) in enumerate(spans)]
        started()
        for (start, stop), future in zip(spans, futures):
            yield _result(future, tasks[start:stop], start, len(tasks))
        futures = []
    finally:
        if futures:
            client.cancel(futures)
        client.close()


def _connect(address: str):
    try:
        from distributed import Client
    except ImportError:
        raise UsageError(f"--cluster {address}: Dask's distributed is not installed here",
                         "pip install 'precision_tool[cluster]' (Python 3.10 or later), or leave --cluster "
                         "out") from None

    try:
        return Client(address, timeout=CONNECT_SECONDS, set_as_default=False)
    except (OSError, TimeoutError) as error:
        raise WorkspaceError(f"cannot reach the Dask scheduler at {address} ({' '.join(str(error).split())})",
                             "start it (dask scheduler), or leave --cluster out to compare here") from None


def _result(future, tasks: Sequence[PairTask], start: int, total: int) -> List[Outcome]:
    """The span's outcomes; when its worker died on every try, an ERROR row per pair naming the lost worker (never a
    silent gap: the run goes on, and its exit code counts them as pairs that could not be compared)."""
    from distributed import KilledWorker

    try:
        return future.result()
    except KilledWorker as error:
        worker = getattr(getattr(error, "last_worker", None), "address", None) or "a worker"
        reason = (f"lost worker {worker}: it died comparing pairs {start + 1}-{start + len(tasks)} of {total}, "
                  f"{RETRIES + 1} times (the cluster's retries); not compared")
        return [not_compared(task, reason) for task in tasks]


__all__ = ["cluster_address", "compare_span", "run_on_cluster", "ENV_CLUSTER", "RETRIES"]
