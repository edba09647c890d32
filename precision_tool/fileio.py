"""Atomic file writes: a reader (or a killed run) never sees a half-written output.

Every file precision_tool writes -- dump files, npy tensors, graph JSON, result CSVs -- goes through
:func:`atomic_write`: the bytes go to a hidden temporary file in the destination folder, which is renamed
over the destination only when complete (``os.replace`` is atomic on one file system). On any error the
temporary file is removed and the destination is untouched.
"""
from __future__ import annotations

import contextlib
import os
import secrets
from typing import IO, Any, Iterator

import numpy as np

TEMP_PREFIX = ".precision_tool-"


@contextlib.contextmanager
def atomic_write(path, mode: str = "wb", encoding: str | None = None) -> Iterator[IO]:
    """Open a temporary file beside ``path`` for writing; rename it to ``path`` on success.

    ``mode`` is ``"wb"`` or ``"w"`` (text, ``encoding`` default utf-8, ``newline=""`` so CSV writers
    control line endings). ``OSError`` from creating, writing or renaming propagates; callers turn it into
    their own typed error naming ``path``.
    """
    if mode not in ("wb", "w"):
        raise ValueError(f"atomic_write mode must be 'wb' or 'w', not {mode!r}")
    path = os.fspath(path)
    folder = os.path.dirname(path) or "."
    temp_path = os.path.join(folder, f"{TEMP_PREFIX}{os.getpid()}-{secrets.token_hex(6)}.tmp")
    descriptor = os.open(temp_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        handle: IO[Any]
        if mode == "w":
            handle = os.fdopen(descriptor, "w", encoding=encoding or "utf-8", newline="")
        else:
            handle = os.fdopen(descriptor, "wb")
        with handle:
            yield handle
        os.replace(temp_path, path)
    finally:
        if os.path.exists(temp_path):
            os.unlink(temp_path)


def save_npy_atomic(path, array) -> str:
    """``np.save(path, array, allow_pickle=False)``, atomically; returns ``path``."""
    with atomic_write(path) as handle:
        np.save(handle, np.asarray(array), allow_pickle=False)
    return os.fspath(path)
