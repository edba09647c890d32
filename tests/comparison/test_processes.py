"""The comparison's worker processes (precision_tool.comparison.processes): chunk results come back in order, a
worker that dies ends the run at once with one line naming how (a multiprocessing.Pool waited for ever), and a
bug in a worker comes back with its traceback."""
import os
import signal
import struct
import time

import pytest

from precision_tool.comparison import processes
from precision_tool.errors import WorkerError

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="the tests replace run_chunk in forked workers")


def _spans(count, size):
    return [(start, min(start + size, count)) for start in range(0, count, size)]


def _run(monkeypatch, chunk, count=40, size=3, workers=2):
    monkeypatch.setattr(processes, "run_chunk", chunk)
    started = []
    out = list(processes.run_in_workers(list(range(count)), _spans(count, size), 0.99, workers,
                                        lambda: started.append(True)))
    return out, started


def test_results_come_back_in_span_order_whichever_worker_finishes_first(monkeypatch):
    def chunk(span):
        time.sleep(0.02 if span[0] % 2 else 0.0)  # odd spans finish last
        return [(span, os.getpid())]

    out, started = _run(monkeypatch, chunk)
    assert [item[0][0] for item in out] == _spans(40, 3) and started == [True]
    assert len({item[0][1] for item in out}) == 2 and os.getpid() not in {item[0][1] for item in out}


@pytest.mark.parametrize("how", ["sigkill", "exit"])
def test_a_worker_that_dies_ends_the_run_at_once(monkeypatch, how):
    def chunk(span):
        if span[0] == 9:
            if how == "sigkill":
                os.kill(os.getpid(), signal.SIGKILL)
            os._exit(3)
        time.sleep(0.01)
        return [span]

    started = time.perf_counter()
    with pytest.raises(WorkerError) as raised:
        _run(monkeypatch, chunk)
    assert time.perf_counter() - started < 10
    text = str(raised.value)
    assert "died" in text and "nothing was written" in text and "\n" not in text
    assert ("(killed by signal 9, SIGKILL: out of memory?)" if how == "sigkill" else "(exit code 3)") in text


def test_a_bug_in_a_worker_comes_back_with_its_traceback(monkeypatch):
    def chunk(span):
        if span[0] == 6:
            raise ZeroDivisionError("planted")
        return [span]

    with pytest.raises(RuntimeError, match="(?s)comparison worker failed.*ZeroDivisionError: planted"):
        _run(monkeypatch, chunk)


@pytest.mark.parametrize("dies", [False, True])
def test_every_worker_is_gone_after_the_run(monkeypatch, dies):
    def chunk(span):
        if dies and span[0] == 3:
            os._exit(1)
        return [os.getpid()]

    before = _children()
    try:
        out, _ = _run(monkeypatch, chunk, count=12)
        assert not dies and len({pid for (pid,) in out}) == 2
    except WorkerError:
        assert dies
    assert _children() == before  # stopped and reaped: none left running or as a zombie


def _children():
    """This process's children, from /proc (empty where there is none)."""
    try:
        with open(f"/proc/{os.getpid()}/task/{os.getpid()}/children") as handle:
            return [int(pid) for pid in handle.read().split()]
    except OSError:
        return []


def test_an_interrupt_kills_busy_workers_at_once_and_they_print_nothing(monkeypatch, capfd):
    """Ctrl-C reaches the whole process group: the workers ignore it and this process, interrupted, kills them
    without waiting for a chunk that would take half a minute. (The group here is the test runner's, so SIGINT
    is sent to the workers one by one.)"""
    def chunk(span):
        time.sleep(30)
        return [span]

    def interrupt(signum, frame):
        for pid in set(_children()) - set(before):
            os.kill(pid, signal.SIGINT)
        time.sleep(0.2)  # time for a worker that did not ignore it to print its traceback
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGALRM, interrupt)
    before = _children()
    started = time.perf_counter()
    try:
        signal.setitimer(signal.ITIMER_REAL, 0.3)
        with pytest.raises(KeyboardInterrupt):
            _run(monkeypatch, chunk, count=12)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    assert time.perf_counter() - started < 5
    assert _children() == before
    assert "Traceback" not in capfd.readouterr().err


def test_answers_larger_than_a_pipe_buffer_come_back_whole(monkeypatch):
    def chunk(span):
        return [bytes([span[0] % 256]) * (3 << 20)]  # 3 MiB: many pipe buffers

    out, _ = _run(monkeypatch, chunk, count=12, size=4)
    assert [len(item[0]) for item in out] == [3 << 20] * 3
    assert [item[0][:1] for item in out] == [b"\x00", b"\x04", b"\x08"]


def test_a_channel_says_end_of_file_when_the_writer_closes_mid_message():
    read_fd, write_fd = os.pipe()
    os.write(write_fd, struct.pack("<Q", 100) + b"x" * 10)  # a length of 100, then 10 bytes
    os.close(write_fd)
    channel = processes.Channel(read_fd, -1)
    with pytest.raises(EOFError):
        channel.recv()
    channel.close()


def test_a_worker_that_dies_right_after_answering_is_a_worker_error(monkeypatch):
    """Its pipe is closed when the next span is sent to it: a WorkerError naming how it ended, not a
    BrokenPipeError traceback."""
    parent = os.getpid()
    real_send = processes.Channel.send

    def send(self, message):
        real_send(self, message)
        if os.getpid() != parent and message is not None:
            os._exit(0)  # killed just after its answer left

    real_next = processes._send_or_died

    def late(worker, pending, busy, compared, total):
        time.sleep(0.1)  # the worker is gone by then
        return real_next(worker, pending, busy, compared, total)

    monkeypatch.setattr(processes.Channel, "send", send)
    monkeypatch.setattr(processes, "_send_or_died", late)
    before = _children()
    with pytest.raises(WorkerError, match=r"died after .* \(exit code 0\)"):
        _run(monkeypatch, lambda span: [], count=10, size=1)
    assert _children() == before
