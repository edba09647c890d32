"""One call computed in a forked child while the caller goes on (precision_tool.overlap): the same value as the
call itself, the same error raised in the caller's process, and no child left behind whatever happens."""
import os
import signal
import threading
import time

import pytest

from precision_tool import overlap
from precision_tool.overlap import NO_FORK_VARIABLE, overlapped
from tests.comparison.test_processes import _children

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="forking is what is tested")


def where_and_what(value):
    return os.getpid(), {"value": value, "big": b"x" * (3 << 20)}  # larger than a pipe's buffer


def test_the_value_is_computed_in_a_child_and_comes_back_whole():
    before = _children()
    with overlapped(where_and_what, 7) as pending:
        pid, value = pending.result()
    assert pid != os.getpid() and value == {"value": 7, "big": b"x" * (3 << 20)}
    assert pending.result()[1] is value  # asked again: the same object, nothing recomputed
    assert _children() == before


def fails(log):
    with open(log, "a") as handle:
        handle.write(f"{os.getpid()}\n")
    raise ValueError("damaged graph")


def test_an_error_is_raised_by_the_call_made_again_in_this_process(tmp_path):
    log = tmp_path / "calls"
    with overlapped(fails, str(log)) as pending:
        with pytest.raises(ValueError, match="damaged graph"):
            pending.result()
    pids = [int(line) for line in log.read_text().split()]
    assert len(pids) == 2 and pids[0] != os.getpid() and pids[1] == os.getpid()


def unpicklable():
    return lambda: os.getpid()


def test_a_value_that_does_not_pickle_is_computed_here():
    with overlapped(unpicklable) as pending:
        assert pending.result()() == os.getpid()


def slow_pid(seconds):
    time.sleep(seconds)
    return os.getpid()


def test_a_child_killed_meanwhile_leaves_the_call_to_this_process():
    before = set(_children())
    with overlapped(slow_pid, 0.5) as pending:
        (child,) = set(_children()) - before
        os.kill(child, signal.SIGKILL)
        assert pending.result() == os.getpid()  # the call made again here
    assert set(_children()) == before


def test_nothing_is_forked_while_another_thread_runs_or_when_told_not_to(monkeypatch):
    before = _children()
    stop = threading.Event()
    thread = threading.Thread(target=stop.wait)
    thread.start()
    try:
        pending = overlapped(slow_pid, 0)
        assert _children() == before and pending.result() == os.getpid()
    finally:
        stop.set()
        thread.join()
    monkeypatch.setenv(NO_FORK_VARIABLE, "1")
    assert overlapped(slow_pid, 0).result() == os.getpid()
    monkeypatch.delenv(NO_FORK_VARIABLE)
    assert overlapped(slow_pid, 0, fork=False).result() == os.getpid()


def test_leaving_without_the_result_kills_and_reaps_the_child():
    before = _children()
    with overlapped(slow_pid, 30):
        assert len(_children()) == len(before) + 1
    assert _children() == before


def test_the_child_ignores_ctrl_c():
    before = set(_children())
    with overlapped(slow_pid, 0.3) as pending:
        (child,) = set(_children()) - before
        time.sleep(0.1)  # its handler set
        os.kill(child, signal.SIGINT)
        assert pending.result() == child  # it finished its work and answered


def test_resolved_passes_anything_else_through():
    assert overlap.resolved(3) == 3 and overlap.resolved(None) is None
    assert overlap.resolved(overlapped(slow_pid, 0)) != os.getpid()


def _open_fds():
    return set(os.listdir("/proc/self/fd")) if os.path.isdir("/proc/self/fd") else set()


def test_a_fork_that_fails_leaves_the_call_to_this_process_and_no_descriptor_open(monkeypatch):
    def no_fork():
        raise BlockingIOError(11, "Resource temporarily unavailable")

    before = _open_fds()
    monkeypatch.setattr(os, "fork", no_fork)
    with overlapped(slow_pid, 0) as pending:
        assert pending.result() == os.getpid()
    assert _open_fds() == before


def test_children_reaped_by_the_kernel_still_give_their_value():
    """Where SIGCHLD is ignored (a daemon embedding the library) the kernel reaps children itself: waitpid finds
    none, and the value read is used all the same."""
    previous = signal.signal(signal.SIGCHLD, signal.SIG_IGN)
    try:
        with overlapped(where_and_what, 3) as pending:
            pid, value = pending.result()
        assert pid != os.getpid() and value["value"] == 3
    finally:
        signal.signal(signal.SIGCHLD, previous)


def test_a_ctrl_c_while_the_child_is_reaped_leaves_it_to_the_next_close(monkeypatch):
    """Closing twice never closes a descriptor twice, and a wait cut short by Ctrl-C keeps the child's pid, so the
    ``with`` block's own close kills and reaps it: no zombie is left behind in a long-lived shell."""
    before, fds = _children(), _open_fds()
    real_waitpid = os.waitpid
    interrupted = []

    def waitpid(pid, options):
        if options == 0 and not interrupted:
            interrupted.append(pid)
            raise KeyboardInterrupt
        return real_waitpid(pid, options)

    pending = overlapped(slow_pid, 30)
    monkeypatch.setattr(os, "waitpid", waitpid)
    with pytest.raises(KeyboardInterrupt):
        pending.close()  # killed, then the wait for it interrupted
    pending.close()
    pending.close()
    assert interrupted and _children() == before and _open_fds() == fds
    with pytest.raises(ProcessLookupError):
        os.kill(interrupted[0], 0)  # reaped, not a zombie
