"""The garbage collector held off while TensorFlow imports in the background, and what a forked worker does.

TensorFlow's import (replay: ``ac -c``, ``replay``) allocates objects by the hundred thousand; with the collector
held off it makes no collections and is 0.35-0.6 s faster (gain shown by ``make bench``: benchmarks/machinery.py).
Holds are counted (:func:`hold_collection`, :func:`release_collection`, released from the import's own thread):
the collector is turned off by the first hold and back on by the last release, and only if it was on at the first
hold; a release without a hold is a bug and raises. A forked worker starts with no hold (:func:`forked_child`).
"""
from __future__ import annotations

import gc
import threading

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


def forked_child() -> None:
    """In a process just forked (a comparison worker): no holds (a fork during TensorFlow's background import
    inherits its hold, which no thread of this process will release), the collector on, and every object inherited
    frozen out of its sight, so that its collections do not walk (and copy the pages of) the parent's objects.
    Frozen objects are still freed by reference counting."""
    global _holders, _resume
    _holders, _resume = 0, False
    gc.freeze()
    gc.enable()


__all__ = ["hold_collection", "release_collection", "forked_child"]
