"""Process-wide settings: OpenBLAS's threads for the command line, and the garbage collector paused for a job.

OpenBLAS
--------

numpy loads OpenBLAS, which starts one thread per further CPU when it is loaded; each thread polls for work, on a
CPU, for about 2**28 cycles (0.1 s) before it sleeps -- whether or not anything calls BLAS. precision_tool's
analysis does not (its metrics are element-wise passes), so on a two-core machine that thread only takes 0.1 s of
CPU from the comparison's workers (measured: a 300-op ``compare`` used 0.1 s less CPU and ended 30 ms sooner
without it). :func:`one_blas_thread` asks OpenBLAS for a single thread, which starts none, before numpy is
loaded -- unless the user set the variable, or numpy is already loaded (then it is too late and nothing is
changed). The user's own programs (``run``, ``bisect``'s trial runs) get the environment as it was
(:func:`user_environment`).

The garbage collector
---------------------
Aligning and comparing build hundreds of thousands of small objects (dump headers, graph ops, rows) that hold no
reference cycles and live until the job ends, so every collection the allocations trigger walks them (and the
modules loaded before) for nothing: in a 300-op ``compare`` collections took 22.6 ms of the main process's time,
12.9 ms with the job paused (what is left runs while modules load). :func:`collection_paused` turns the
collector off for a block and back on when the last holder lets go (:func:`hold_collection` and
:func:`release_collection`, for a pause that outlives a block: TensorFlow's background import); reference
counting still frees everything that is not in a cycle.
"""
from __future__ import annotations

import contextlib
import gc
import os
import sys
import threading
from typing import Dict, Iterator

VARIABLE = "OPENBLAS_NUM_THREADS"
_SET_HERE = False


def one_blas_thread() -> bool:
    """Set ``OPENBLAS_NUM_THREADS=1`` for this process if numpy is not loaded and the user did not set it; True
    when set. For the command line's own process only (not called when precision_tool is a library)."""
    global _SET_HERE
    if VARIABLE in os.environ or "numpy" in sys.modules:
        return False
    os.environ[VARIABLE] = "1"
    _SET_HERE = True
    return True


def user_environment(**extra: str) -> Dict[str, str]:
    """This process's environment without what :func:`one_blas_thread` set, plus ``extra``: for the programs
    started on the user's behalf."""
    env = dict(os.environ)
    if _SET_HERE and env.get(VARIABLE) == "1":
        del env[VARIABLE]
    env.update(extra)
    return env


_holders = 0
_resume = False
_lock = threading.Lock()


def hold_collection() -> None:
    """Turn the garbage collector off until every holder has called :func:`release_collection`."""
    global _holders, _resume
    with _lock:
        if _holders == 0:
            _resume = gc.isenabled()
            gc.disable()
        _holders += 1


def release_collection() -> None:
    """Let go of :func:`hold_collection`; the last holder turns the collector back on if it was on before."""
    global _holders
    with _lock:
        _holders = max(0, _holders - 1)
        if _holders == 0 and _resume:
            gc.enable()


@contextlib.contextmanager
def collection_paused() -> Iterator[None]:
    """The garbage collector off for the block (see the module docstring)."""
    hold_collection()
    try:
        yield
    finally:
        release_collection()


__all__ = ["one_blas_thread", "user_environment", "hold_collection", "release_collection", "collection_paused"]
