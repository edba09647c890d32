"""One call computed in a forked process while this one goes on: :func:`overlapped`.

``compare`` spends most of its serial time on two jobs that do not need each other: reading the Build graph and
reading every dump header and reference listing (and, at the end, writing the result file beside the CSV and the
summary). On two cores one of them can run in a child process: ``overlapped(read_ge_graph, path)`` forks, the
child reads the graph and sends it back pickled, and this process reads the dump headers meanwhile;
:meth:`Overlapped.result` then gives exactly what ``read_ge_graph(path)`` gives.

Exactly, errors included: the child sends back only a value. Whatever goes wrong there -- the call raises (a
damaged graph), the value does not pickle, the child is killed -- leaves :meth:`Overlapped.result` to make the call
itself, in this process, so an error is raised here as if nothing had been forked. Nothing is forked, and the call
is made by :meth:`~Overlapped.result`, where forking is unsafe or impossible: no ``os.fork`` (Windows), another
thread running (a fork copies no thread but may copy a lock one holds), or ``PRECISION_TOOL_NO_FORK`` set. The
child ignores SIGINT (Ctrl-C interrupts this process, which kills it), dies with this process (Linux), writes
nothing to the terminal and skips every exit handler (``os._exit``).

Use it as a context manager: leaving the ``with`` block without asking for the result kills and reaps the child.
"""
from __future__ import annotations

import os
import threading
from typing import Any, Callable, Generic, Optional, TypeVar

from precision_tool.process_env import Channel, Child, can_fork, fork_child

T = TypeVar("T")

#: Setting this environment variable (to anything) makes every :func:`overlapped` call run in this process.
NO_FORK_VARIABLE = "PRECISION_TOOL_NO_FORK"
_UNSET = object()


def can_fork_now() -> bool:
    """Whether forking is possible and safe here: ``os.fork`` exists, no other thread runs, and
    :data:`NO_FORK_VARIABLE` is not set."""
    return can_fork() and threading.active_count() == 1 and NO_FORK_VARIABLE not in os.environ


class Overlapped(Generic[T]):
    """``function(*args)``, being computed in a forked child (or, where none was forked, on demand). ``fork=False``
    forks nothing: the call is made by :meth:`result`."""

    def __init__(self, function: Callable[..., T], *args: Any, fork: bool = True):
        self._function, self._args = function, args
        self._value: Any = _UNSET
        self._child: Optional[Child] = None
        self._read_fd = -1
        if fork and can_fork_now():
            self._fork()

    def _fork(self) -> None:
        try:
            read_fd, write_fd = os.pipe()
        except OSError:  # no descriptor left: the call is made here
            return
        function, args = self._function, self._args

        def child() -> None:  # compute and send the value; any failure: the parent makes the call itself
            os.close(read_fd)
            Channel(-1, write_fd).send(function(*args))

        self._read_fd = read_fd  # kept from here on, so that close() ends whatever has begun
        try:
            self._child = Child(fork_child(child))  # (a Ctrl-C during the fork kills the child there)
        except OSError:  # no process can be forked now (EAGAIN, ENOMEM): the call is made here
            self.close()
        finally:
            os.close(write_fd)

    def result(self) -> T:
        """``function(*args)``: the child's value, or -- nothing forked, or the child failed -- the call made now."""
        if self._value is _UNSET:
            value = self._collect() if self._child is not None else _UNSET
            self._value = self._function(*self._args) if value is _UNSET else value
        return self._value

    def _collect(self) -> Any:
        """The child's value, or ``_UNSET`` when it sent none whole (it failed, or was killed)."""
        try:
            return Channel(self._read_fd, -1).recv()
        except EOFError:  # it sent no whole value
            return _UNSET
        except Exception:  # noqa: BLE001 -- a value that does not unpickle: computed here instead
            return _UNSET
        finally:
            self.close()  # the value is in, or never will be: the child is exiting (or is killed)

    def _reap(self, kill: bool = False) -> None:
        """Wait for the child (killed first if ``kill`` and it still runs). One reaped elsewhere is left alone, and a
        wait cut short by Ctrl-C leaves it to the next :meth:`close` (:class:`~precision_tool.process_env.Child`)."""
        child = self._child
        if child is None:
            return
        if kill:
            child.kill()
        child.wait()
        self._child = None

    def close(self) -> None:
        """Stop waiting for the child: kill it if it still runs, and reap it. Idempotent."""
        read_fd, self._read_fd = self._read_fd, -1  # forgotten before it is closed: never closed twice
        if read_fd >= 0:
            os.close(read_fd)
        self._reap(kill=True)

    def __enter__(self) -> "Overlapped[T]":
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()


def overlapped(function: Callable[..., T], *args: Any, fork: bool = True) -> Overlapped[T]:
    """``function(*args)`` started in a forked child (see the module docstring); ``.result()`` gives its value."""
    return Overlapped(function, *args, fork=fork)


def resolved(value: Any) -> Any:
    """``value.result()`` for an :class:`Overlapped`, else ``value`` itself."""
    return value.result() if isinstance(value, Overlapped) else value


__all__ = ["Overlapped", "overlapped", "resolved", "can_fork_now", "NO_FORK_VARIABLE"]
