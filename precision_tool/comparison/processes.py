"""The comparison's worker processes: forked once, fed chunk ranges, results collected in order, a death noticed.

Not ``multiprocessing`` or ``concurrent.futures``: a Pool waits for ever on a dead worker's chunk, an executor
runs threads and forks beside them. Every worker is forked (``os.fork``) before anything else runs and talks to
this process over two pipes of its own (chunk ranges in, results out); a worker that dies raises
:class:`WorkerError` at once, and a worker's exception is raised here with its traceback. Workers ignore SIGINT;
Ctrl-C kills and reaps them. Without ``os.fork`` the engine compares in its own process. The reasons and the
protocol: docs/internals/comparison.md#worker-processes.
"""
from __future__ import annotations

import os
import select
import time
import traceback
from typing import Callable, Dict, Iterator, List, Optional, Sequence, Tuple

from precision_tool.comparison.worker import Outcome, PairTask, init_pool_worker, run_chunk
from precision_tool.errors import WorkerError
from precision_tool.process_env import Channel, Child, fork_child

Span = Tuple[int, int]
_STOP = None
#: How long a stopped worker may take to finish (it is between chunks, so at once) before it is killed.
STOP_SECONDS = 5.0


class Worker:
    """A forked worker: the child process (:class:`~precision_tool.process_env.Child`) and this process's channel
    to it."""

    def __init__(self, pid: int, channel: Channel):
        self.child, self.channel = Child(pid), channel

    def reap(self, timeout: float) -> bool:
        """Wait up to ``timeout`` seconds for the process to end and reap it; whether it has. The end is seen as
        the end-of-file of its result pipe (its last open end closes when it exits); answers still in the pipe are
        dropped."""
        deadline = time.monotonic() + timeout
        fd = self.channel.read_fd
        while not self.child.wait(block=False):
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            if fd < 0:
                time.sleep(min(left, 0.01))
                continue
            poller = select.poll()
            poller.register(fd, select.POLLIN)
            if poller.poll(left * 1000) and not os.read(fd, 1 << 16):  # end of file: it is exiting
                self.child.wait()
        return True


def _worker_main(channel: Channel, cosine_threshold: Optional[float], tasks: Sequence[PairTask]) -> None:
    """A worker: settings (:func:`~precision_tool.comparison.worker.init_pool_worker`), then ``(number, span)``
    in, ``(number, outcomes, None)`` or ``(number, None, traceback text)`` out, until told to stop."""
    init_pool_worker(cosine_threshold, tasks, forked=True)
    while True:
        try:
            message = channel.recv()
        except EOFError:  # the comparing process is gone
            return
        if message is _STOP:
            return
        number, span = message
        answer: Tuple[int, Optional[List[Outcome]], Optional[str]]
        try:
            answer = (number, run_chunk(span), None)
        except Exception:  # noqa: BLE001 -- a bug: its traceback goes to the comparing process, which raises it
            answer = (number, None, traceback.format_exc())
        try:
            channel.send(answer)
        except BrokenPipeError:  # the comparing process is gone
            return


def _fork_worker(cosine_threshold, tasks, inherited: List[Worker]) -> Worker:
    """Fork one worker (:func:`~precision_tool.process_env.fork_child`: it runs :func:`_worker_main` and never
    returns into the caller's code). ``OSError`` when no process can be forked (its pipes are closed first)."""
    to_child_read, to_child_write = os.pipe()
    try:
        to_parent_read, to_parent_write = os.pipe()
    except OSError:
        os.close(to_child_read)
        os.close(to_child_write)
        raise
    def worker() -> None:
        try:
            os.close(to_child_write)
            os.close(to_parent_read)
            for other in inherited:  # the earlier workers' pipes: their ends of file must not wait for this process
                other.channel.close()
            _worker_main(Channel(to_child_read, to_parent_write), cosine_threshold, tasks)
        except BaseException:  # a bug outside a chunk: its traceback, then exit code 1
            traceback.print_exc()
            raise

    try:
        pid = fork_child(worker)
    except OSError:
        for fd in (to_child_read, to_child_write, to_parent_read, to_parent_write):
            os.close(fd)
        raise
    os.close(to_child_read)
    os.close(to_parent_write)
    return Worker(pid, Channel(to_parent_read, to_child_write))


def run_in_workers(tasks: Sequence[PairTask], spans: Sequence[Span], cosine_threshold: Optional[float],
                   processes: int, started: Callable[[], None]) -> Iterator[List[Outcome]]:
    """The outcomes of each span of ``tasks``, in span order, computed by ``processes`` forked workers; ``started``
    is called once all are forked (no fork follows). Raises :class:`WorkerError` when a worker dies, and
    ``RuntimeError`` with a worker's traceback when comparing raised one there."""
    workers: List[Worker] = []
    finished = False
    try:
        for _ in range(processes):
            workers.append(_fork_worker(cosine_threshold, tasks, workers))
        started()
        yield from _collect(workers, spans, len(tasks))
        finished = True
    finally:
        _stop(workers, gently=finished)


def _collect(workers: List[Worker], spans: Sequence[Span], total: int) -> Iterator[List[Outcome]]:
    pending = iter(enumerate(spans))
    by_fd = {worker.channel.fileno(): worker for worker in workers}
    busy: Dict[int, int] = {}  # result pipe -> the span number its worker computes
    done: Dict[int, List[Outcome]] = {}
    delivered = compared = 0
    poller = select.poll()
    for worker in workers:
        poller.register(worker.channel.fileno(), select.POLLIN)
        _send_or_died(worker, pending, busy, compared, total)
    while delivered < len(spans):
        for fd, _ in poller.poll():
            worker = by_fd[fd]
            try:
                number, outcomes, failure = worker.channel.recv()
            except EOFError:
                raise _died(worker, compared, total) from None
            if failure is not None:
                raise RuntimeError(f"a comparison worker failed:\n{failure}")
            done[number] = outcomes
            compared += len(outcomes)
            del busy[fd]
            if not _send_or_died(worker, pending, busy, compared, total):
                poller.unregister(fd)
        while delivered in done:
            yield done.pop(delivered)
            delivered += 1


def _died(worker: Worker, compared: int, total: int) -> WorkerError:
    worker.reap(timeout=1)
    return WorkerError(f"a comparison worker process died after {compared} of {total} tensors "
                       f"({worker.child.how_it_ended()}); nothing was written",
                       "the system log (dmesg) names an out-of-memory kill")


def _send_or_died(worker: Worker, pending, busy: Dict[int, int], compared: int, total: int) -> bool:
    """Send ``worker`` the next span; False when none is left. A worker whose pipe is closed (it died right after
    answering) raises :class:`WorkerError`."""
    item = next(pending, None)
    if item is None:
        return False
    try:
        worker.channel.send(item)
    except OSError:
        raise _died(worker, compared, total) from None
    busy[worker.channel.fileno()] = item[0]
    return True


def _stop(workers: List[Worker], gently: bool) -> None:
    """End and reap every worker: after a complete run, told to stop and given :data:`STOP_SECONDS`; after an
    error or an interrupt (a worker may be busy with a large tensor), killed at once."""
    for worker in workers:
        if gently:
            try:
                worker.channel.send(_STOP)
            except OSError:  # it is already gone
                pass
        else:
            worker.child.kill()
    for worker in workers:
        if not worker.reap(STOP_SECONDS if gently else 1.0):
            worker.child.kill()
            worker.reap(timeout=5.0)
        worker.channel.close()


__all__ = ["run_in_workers", "Channel", "STOP_SECONDS"]
