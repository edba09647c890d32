"""The garbage collector paused while a job builds its data, and what a forked worker does with it.

Aligning and comparing build hundreds of thousands of small objects (dump headers, graph ops, rows) that live
until the job ends and form no reference cycles (a test checks that a comparison leaves no cyclic garbage), so
reference counting frees them all and the collections their allocations trigger only walk them (and the modules
loaded before) for nothing: in a 300-op ``compare`` collections took 22.6 ms of the main process's time, 12.9 ms
with the job paused (what is left runs while modules load).

:func:`collection_paused` turns the collector off for a block. A pause can outlive a block -- TensorFlow's
background import starts during a comparison and ends after it, in its own thread -- so pauses are counted
(:func:`hold_collection`, :func:`release_collection`): the collector is turned off by the first hold and back on
by the last release, and only if it was on at the first hold. A release without a hold is a bug and raises.
A forked worker starts with no hold (:func:`forked_child`).
"""
from __future__ import annotations

import contextlib
import gc
import threading
from typing import Iterator

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
    """Let go of :func:`hold_collection`; the last holder turns the collector back on if it was on at the first
    hold. ``RuntimeError`` when nothing holds it."""
    global _holders
    with _lock:
        if _holders == 0:
            raise RuntimeError("release_collection() without hold_collection()")
        if _holders == 1 and _resume:
            gc.enable()
        _holders -= 1


@contextlib.contextmanager
def collection_paused() -> Iterator[None]:
    """The garbage collector off for the block (see the module docstring)."""
    hold_collection()
    try:
        yield
    finally:
        release_collection()


def forked_child() -> None:
    """In a process just forked (a comparison worker): no holds, the collector on, and every object inherited
    frozen out of its sight -- the parent's objects made during a pause were never collected there, so this
    process's first collections would otherwise walk all of them (3-4 ms per worker for 300 ops) and copy the
    pages they touch. Frozen objects are still freed by reference counting."""
    global _holders, _resume
    _holders, _resume = 0, False
    gc.freeze()
    gc.enable()


__all__ = ["hold_collection", "release_collection", "collection_paused", "forked_child"]
