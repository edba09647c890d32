"""The comparison's worker processes: started once, fed chunk ranges, results collected in order, a death noticed.

Why not ``multiprocessing.Pool`` or ``concurrent.futures.ProcessPoolExecutor``:

* a Pool whose worker dies (the out-of-memory killer, a signal) replaces it and waits for ever for the chunk it
  held: ``compare`` hung instead of failing;
* an executor notices the death, but on Python 3.9 and 3.10 it forks its second worker while its management
  thread runs (CPython issue 90622: a possible deadlock in the child), and both run three threads in this
  process, which cost a 300-op run about 20 ms of CPU beside two workers on two cores.

Here every worker is forked before anything else runs, each is sent one chunk range at a time over its own pipe,
and this process waits on the pipes and on the processes' sentinels together
(``multiprocessing.connection.wait``): a worker that exits without answering raises :class:`WorkerError` at
once. A forked worker inherits the task list; with another start method (not Linux) it is pickled once per
worker. An exception raised in a worker (a bug: user errors become rows) is raised here with the worker's
traceback as its text.
"""
from __future__ import annotations

import multiprocessing
import os
import traceback
from multiprocessing.connection import wait
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence, Tuple

from precision_tool.comparison.worker import Outcome, PairTask, init_pool_worker, run_chunk
from precision_tool.errors import WorkerError

Span = Tuple[int, int]
_STOP = None


def _worker_main(connection, cosine_threshold: Optional[float], parent: int, tasks: Sequence[PairTask]) -> None:
    """A worker: settings (:func:`~precision_tool.comparison.worker.init_pool_worker`), then ``(number, span)``
    in, ``(number, outcomes, None)`` or ``(number, None, traceback text)`` out, until told to stop."""
    init_pool_worker(cosine_threshold, parent, tasks)
    while True:
        try:
            message = connection.recv()
        except EOFError:  # the comparing process is gone
            return
        if message is _STOP:
            return
        number, span = message
        try:
            connection.send((number, run_chunk(span), None))
        except Exception:  # noqa: BLE001 -- a bug: its traceback goes to the comparing process, which raises it
            connection.send((number, None, traceback.format_exc()))


def run_in_workers(tasks: Sequence[PairTask], spans: Sequence[Span], cosine_threshold: Optional[float],
                   processes: int, started: Callable[[], None]) -> Iterator[List[Outcome]]:
    """The outcomes of each span of ``tasks``, in span order, computed by ``processes`` workers; ``started`` is
    called once all are forked (no fork follows). Raises :class:`WorkerError` when a worker dies, and
    ``RuntimeError`` with a worker's traceback when comparing raised one there."""
    context = multiprocessing.get_context("fork" if "fork" in multiprocessing.get_all_start_methods() else None)
    workers = []
    try:
        for _ in range(processes):
            ours, theirs = context.Pipe()
            process = context.Process(target=_worker_main, args=(theirs, cosine_threshold, os.getpid(), tasks),
                                      daemon=True)
            process.start()
            theirs.close()
            workers.append((process, ours))
        started()
        yield from _collect(workers, spans, len(tasks))
    finally:
        _stop(workers)


def _collect(workers, spans: Sequence[Span], total: int) -> Iterator[List[Outcome]]:
    pending = iter(enumerate(spans))
    busy: Dict[Any, int] = {}  # connection -> the span number it computes
    done: Dict[int, List[Outcome]] = {}
    delivered = compared = 0
    for _, connection in workers:
        _send_next(connection, pending, busy)
    watched = {process.sentinel: (process, connection) for process, connection in workers}
    while delivered < len(spans):
        readable: List[Any] = wait(list(busy) + list(watched))
        for ready in readable:
            if ready in watched:  # a worker ended: an answer it sent first is still read from its pipe
                process, connection = watched.pop(ready)
                if connection in busy and not connection.poll():
                    raise _died(process, compared, total)
                continue
            try:
                number, outcomes, failure = ready.recv()
            except EOFError:
                raise _died(next(p for p, c in workers if c is ready), compared, total) from None
            if failure is not None:
                raise RuntimeError(f"a comparison worker failed:\n{failure}")
            done[number] = outcomes
            compared += len(outcomes)
            del busy[ready]
            _send_next(ready, pending, busy)
        while delivered in done:
            yield done.pop(delivered)
            delivered += 1


def _died(process, compared: int, total: int) -> WorkerError:
    process.join(timeout=1)
    code = process.exitcode
    if code is None:
        how = "its pipe closed"
    elif code < 0:
        how = f"killed by signal {-code}{', SIGKILL: out of memory?' if code == -9 else ''}"
    else:
        how = f"exit code {code}"
    return WorkerError(f"a comparison worker process died after {compared} of {total} tensors ({how}); nothing was "
                       f"written", "the system log (dmesg) names an out-of-memory kill")


def _send_next(connection, pending, busy: Dict[Any, int]) -> None:
    item = next(pending, None)
    if item is not None:
        connection.send(item)
        busy[connection] = item[0]


def _stop(workers) -> None:
    """Tell every worker to stop, wait a moment, then kill what is left."""
    for _, connection in workers:
        try:
            connection.send(_STOP)
        except (OSError, ValueError):
            pass
    for process, connection in workers:
        process.join(timeout=5)
        if process.is_alive():
            process.kill()
            process.join()
        connection.close()


__all__ = ["run_in_workers"]
