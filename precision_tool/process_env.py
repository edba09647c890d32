"""What the command line sets in its own process and keeps out of the programs it starts for the user.

:func:`one_blas_thread` asks OpenBLAS for a single thread before numpy is loaded (unless the user set the variable,
or numpy is already loaded): precision_tool never calls BLAS, and each idle OpenBLAS thread spins for 0.1 s of CPU.
:func:`quiet_tensorflow_logs` quiets TensorFlow's C++ log for the commands that import TensorFlow. The user's own
programs (``run``, ``bisect``'s trial runs) get the environment as it was (:func:`user_environment`). The processes
the command line forks end when it does (:func:`die_with_parent`). Why, and what it saves:
docs/internals/package.md#process_env.
"""
from __future__ import annotations

import ctypes
import os
import pickle
import signal
import struct
import sys
from typing import Callable, Dict, Optional

VARIABLE = "OPENBLAS_NUM_THREADS"
TF_LOG_LEVEL = "TF_CPP_MIN_LOG_LEVEL"
_SET_HERE: Dict[str, str] = {}  # variable -> the value this module set


def _set_unless_given(variable: str, value: str, module: str) -> bool:
    if variable in os.environ or module in sys.modules:
        return False
    os.environ[variable] = value
    _SET_HERE[variable] = value
    return True


def one_blas_thread() -> bool:
    """Set ``OPENBLAS_NUM_THREADS=1`` for this process if numpy is not loaded and the user did not set it; True
    when set. For the command line's own process only (not called when precision_tool is a library)."""
    return _set_unless_given(VARIABLE, "1", "numpy")


def quiet_tensorflow_logs() -> bool:
    """Set ``TF_CPP_MIN_LOG_LEVEL=2`` for this process (and the workers it forks) if TensorFlow is not loaded and the
    user did not set it; True when set. TensorFlow's C++ start-up lines (``cudart_stub.cc] Could not find cuda
    drivers``, absl's "All log messages before absl::InitializeLog()") would otherwise print above every report
    of a command that imports it (replay, emulate); errors still show. For the command line's own process only."""
    return _set_unless_given(TF_LOG_LEVEL, "2", "tensorflow")


def user_environment(**extra: str) -> Dict[str, str]:
    """This process's environment without what :func:`one_blas_thread` and :func:`quiet_tensorflow_logs` set, plus
    ``extra``: for the programs started on the user's behalf."""
    env = dict(os.environ)
    for variable, value in _SET_HERE.items():
        if env.get(variable) == value:
            del env[variable]
    env.update(extra)
    return env


def process_symbols() -> ctypes.CDLL:
    """The C functions already loaded in this process, libc's among them (``dlopen(NULL)``). Not
    ``ctypes.util.find_library("c")``: on Linux that runs ``ldconfig -p`` in a subprocess, 10 ms per worker."""
    return ctypes.CDLL(None)


_PR_SET_PDEATHSIG = 1  # linux/prctl.h
_LENGTH = struct.Struct("<Q")


def die_with_parent(parent: int) -> bool:
    """Linux: have the kernel send this process SIGTERM when its parent dies (``prctl(PR_SET_PDEATHSIG)``),
    and exit at once if ``parent`` died before the request took effect. False where prctl is unavailable
    (not Linux): there a killed parent's children end only when their pipes are closed."""
    try:
        prctl = process_symbols().prctl
    except (OSError, AttributeError, TypeError):
        return False
    if prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0) != 0:
        return False
    if os.getppid() != parent:
        os._exit(1)
    return True


class Channel:
    """One end of a pipe pair between this process and a child: :meth:`send` pickles to one, :meth:`recv` unpickles
    from the other (either fd may be -1 for a one-way channel).

    A message is its pickle's length (8 bytes, little-endian) then the pickle, read into one buffer. :meth:`recv`
    raises ``EOFError`` when the other side has closed its end (it exited or died) before a whole message arrived.
    """

    def __init__(self, read_fd: int, write_fd: int):
        self.read_fd, self.write_fd = read_fd, write_fd

    def fileno(self) -> int:
        return self.read_fd

    def send(self, message) -> None:
        data = pickle.dumps(message, pickle.HIGHEST_PROTOCOL)
        view = memoryview(_LENGTH.pack(len(data)) + data)
        while view:
            view = view[os.write(self.write_fd, view):]

    def recv(self):
        (length,) = _LENGTH.unpack(self._read(_LENGTH.size))
        return pickle.loads(self._read(length))

    def _read(self, count: int) -> bytearray:
        buffer = bytearray(count)
        view, got = memoryview(buffer), 0
        while got < count:
            step = os.readv(self.read_fd, [view[got:]])  # os.readv exists wherever os.fork does
            if not step:
                raise EOFError("the other end of the pipe is closed")
            got += step
        return buffer

    def close(self) -> None:
        """Close both ends; idempotent. Each descriptor is forgotten before it is closed, so a close cut short (by
        Ctrl-C) and made again never closes a number the process has since given to another file."""
        for name in ("read_fd", "write_fd"):
            fd = getattr(self, name)
            setattr(self, name, -1)
            if fd >= 0:
                try:
                    os.close(fd)
                except OSError:
                    pass


class Child:
    """A child process of this one (forked by :func:`fork_child`), reaped by this one: its pid, and once reaped the
    ``waitpid`` status (-1 when it was reaped elsewhere -- by a ``waitpid(-1)``, or by the kernel where SIGCHLD is
    ignored -- so how it ended is unknown).

    A child reaped is never signalled again: its pid may be another process's by then. A wait cut short (Ctrl-C)
    leaves the child unreaped, for the next :meth:`wait` or :meth:`kill`.
    """

    def __init__(self, pid: int):
        self.pid = pid
        self.status: Optional[int] = None

    def wait(self, block: bool = True) -> bool:
        """Reap it -- waiting for it to end, or with ``block=False`` only if it has ended; whether it is reaped."""
        if self.status is None:
            try:
                pid, status = os.waitpid(self.pid, 0 if block else os.WNOHANG)
            except ChildProcessError:  # reaped elsewhere
                pid, status = self.pid, -1
            if pid:
                self.status = status
        return self.status is not None

    def kill(self) -> None:
        """SIGKILL it if it still runs (a child that has ended is reaped instead); reaping a killed one is left to
        :meth:`wait`."""
        if not self.wait(block=False):
            try:
                os.kill(self.pid, signal.SIGKILL)
            except OSError:
                pass

    def how_it_ended(self) -> str:
        """``"exit code N"`` or ``"killed by signal N"`` (with a guess for SIGKILL); while unreaped, or reaped
        elsewhere, what is known: that its pipe closed."""
        status = self.status
        if status is None or status < 0:
            return "its pipe closed"
        if os.WIFSIGNALED(status):
            number = os.WTERMSIG(status)
            return f"killed by signal {number}{', SIGKILL: out of memory?' if number == signal.SIGKILL else ''}"
        return f"exit code {os.WEXITSTATUS(status)}"


def can_fork() -> bool:
    """Whether this system forks processes (``os.fork`` exists: Linux, macOS, the BSDs; not Windows)."""
    return hasattr(os, "fork")


def fork_child(body: Callable[[], None]) -> int:
    """Fork a child that runs ``body()`` and ends (``os._exit``: 0 when ``body`` returned, 1 when it raised) without
    ever returning into the caller's code; the child's pid. Raises ``OSError`` when no process can be forked.

    What every child of ours needs: standard output and error flushed first (or the child's copy of unwritten
    output could be written twice); SIGINT ignored in the child, which :func:`die_with_parent`. SIGINT is blocked
    across the fork, so a Ctrl-C then cannot raise in the child before it ignores it; in this process it is
    delivered once the fork is done, and if it interrupts here the child is killed and reaped before the
    ``KeyboardInterrupt`` goes on. (The mask, not ``signal.signal``, is switched in this process: on Python 3.7
    ``signal.signal`` leaves a reference cycle through the caller's frames each time.)
    """
    parent = os.getpid()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (AttributeError, OSError, ValueError):
            pass
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        pid = os.fork()
    except BaseException:
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)
        raise
    if pid:
        try:
            signal.pthread_sigmask(signal.SIG_SETMASK, mask)  # a Ctrl-C pending meanwhile is raised here
            return pid
        except BaseException:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            raise
    code = 1
    try:
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # a pending SIGINT is dropped with it
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)
        die_with_parent(parent)
        body()
        code = 0
    finally:
        os._exit(code)
    return 0  # pragma: no cover -- never reached


__all__ = ["one_blas_thread", "user_environment", "process_symbols", "die_with_parent", "can_fork", "fork_child",
           "Channel", "Child"]
