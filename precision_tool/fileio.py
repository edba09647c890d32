"""Files in and out: inputs opened safely, outputs written atomically.

Reading: every reader opens its input through :func:`open_input` (or :func:`read_input_bytes` /
:func:`read_input_text`), which checks with ``fstat`` that it is a regular file within the reader's limit before a
byte is read; anything else raises the caller's :class:`~precision_tool.errors.FileFormatError` subclass. Mapped
reads: a comparison worker (:func:`allow_mapped_reads`) maps the files it reads whole (:func:`map_bytes`) or window
by window (:func:`read_windows`), and a file cut short meanwhile is reported as shrunk (:func:`shrunk_while_mapped`).
Writing: every file goes through :func:`atomic_write`, a temporary file renamed over the destination only when
complete. The details and the measurements: docs/internals/package.md#fileio.
"""
from __future__ import annotations

import contextlib
import errno
import io
import mmap
import os
import stat
from typing import IO, Any, BinaryIO, Callable, Dict, Iterator, List, Optional, Type, cast

import numpy as np

from precision_tool.errors import FileFormatError

try:
    from precision_tool import _mapguard  # type: ignore[attr-defined]
except ImportError:  # not built (no C compiler at install): files are read, never mapped
    _mapguard = None

TEMP_PREFIX = ".precision_tool-"
NO_LIMIT = None
TEXT_LIMIT = 1 << 30
"""The default size limit of :func:`read_input_text` and :func:`read_input_bytes`: 1 GiB (a 200,000-op GE
graph dump is ~120 MB); binary tensor readers stream with :func:`open_input` and check sizes themselves."""

_KINDS = ((stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))


def open_input(path, error: Type[FileFormatError] = FileFormatError, limit: Optional[int] = NO_LIMIT) -> BinaryIO:
    """Open ``path`` for binary reading after checking it is a regular file of at most ``limit`` bytes.

    See docs/internals/package.md#fileio. The returned handle is buffered, positioned at 0, and keeps ``O_NONBLOCK``
    (which changes nothing for a regular file: reads wait for the disk as ever); ``error`` is raised as
    ``error(path, cause)``.
    """
    path = os.fspath(path)
    try:
        descriptor = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    except OSError as failure:
        raise error(path, _open_cause(failure)) from None
    try:
        info = os.fstat(descriptor)
        kind = next((name for test, name in _KINDS if test(info.st_mode)), None)
        if kind is not None or not stat.S_ISREG(info.st_mode):
            raise error(path, f"is {kind or 'not a regular file'}, not a regular file")
        if limit is not None and info.st_size > limit:
            raise error(path, f"is {info.st_size:,} bytes, more than this reader takes ({limit:,})")
        # O_NONBLOCK (which kept a FIFO from blocking the open) changes nothing for a regular file, so it stays;
        # the buffer size a default buffer would take (the file system's block size), given explicitly, spares the
        # terminal check (isatty) a default buffer makes.
        block = getattr(info, "st_blksize", 0)
        return os.fdopen(descriptor, "rb", buffering=block if block > 1 else io.DEFAULT_BUFFER_SIZE)
    except BaseException:
        os.close(descriptor)
        raise


def map_input(path, dtype, shape, offset: int, error: Type[FileFormatError] = FileFormatError) -> np.ndarray:
    """A read-only memory map of the ``prod(shape)`` items of ``dtype`` at byte ``offset`` of ``path``.

    Nothing is read until the array is indexed, and then only the pages indexed: a slice of a tensor of any size
    costs what it covers. :func:`open_input`'s checks apply; the caller has checked that the bytes lie inside
    the file (a file cut short later makes indexing fail with SIGBUS, as for any mapped file). An array of no
    elements is returned unmapped (``mmap`` cannot map 0 bytes).
    """
    try:
        with open_input(path, error) as handle:
            return map_handle(handle, dtype, shape, offset)
    except (OSError, ValueError) as failure:
        raise error(os.fspath(path), f"cannot map {failure}") from None


def map_handle(handle: BinaryIO, dtype, shape, offset: int) -> np.ndarray:
    """:func:`map_input` over a file already opened (and checked) by the caller; numpy's ``OSError``/``ValueError``
    are the caller's to word. The map outlives the handle."""
    dtype = np.dtype(dtype)
    shape = tuple(int(dim) for dim in shape)
    if not all(shape):
        return np.zeros(shape, dtype)
    mapped = np.memmap(handle, dtype=dtype, mode="r", offset=offset, shape=shape)
    return mapped.view(np.ndarray)  # a plain array; the map stays alive as its base


# --------------------------------------------------------------------------------------------- mapped reads
_mapping = False
_watched: Dict[int, str] = {}  # the guard's slot -> the path mapped there
_freed_faulted: List[str] = []  # maps freed after a fault, before shrunk_while_mapped looked


def allow_mapped_reads() -> bool:
    """From now on, :func:`map_bytes` maps in this process -- if the SIGBUS guard installs
    (docs/internals/package.md#fileio); returns whether it does. Only for processes that check
    :func:`shrunk_while_mapped` after reading (the comparison workers)."""
    global _mapping
    _mapping = _mapguard is not None and bool(_mapguard.install())
    return _mapping


class _WatchedMap(mmap.mmap):
    """A copy-on-write map whose address range the guard watches until the map is freed."""

    slot = -1

    def __del__(self) -> None:
        if self.slot >= 0 and _mapguard is not None:
            path = _watched.pop(self.slot, "")
            if _mapguard.unwatch(self.slot):  # freed before its reader asked: the fault must still be reported
                _freed_faulted.append(path)
            self.slot = -1


def map_bytes(handle: BinaryIO, path, offset: int, length: int) -> Optional[np.ndarray]:
    """The ``length`` bytes at ``offset`` of the open file ``handle`` (of ``path``) as a writable uint8 array
    backed by a copy-on-write map of the file (writes stay in memory), or ``None`` where the caller should read
    them: mapped reads not allowed here (:func:`allow_mapped_reads`), no bytes, the file already shorter than
    ``offset + length`` (the read then says so), every guard slot taken, or the map refused."""
    if not _mapping or length <= 0:
        return None
    start = offset - offset % mmap.ALLOCATIONGRANULARITY  # maps start on a page: only what is asked for is mapped
    try:
        mapped = _WatchedMap(handle.fileno(), offset - start + length, access=mmap.ACCESS_COPY, offset=start)
    except (OSError, ValueError, OverflowError):
        return None
    slot = _mapguard.watch(mapped)
    if slot < 0:
        mapped.close()
        return None
    mapped.slot = slot
    _watched[slot] = os.fspath(path)
    return np.frombuffer(mapped, np.uint8, count=length, offset=offset - start)


def read_windows(handle: BinaryIO, path, offset: int, length: int, step: int,
                 shrank: Callable[[int], Exception]) -> Iterator[np.ndarray]:
    """The ``length`` bytes at ``offset`` of the open file ``handle`` (of ``path``) as consecutive uint8 arrays of
    ``step`` bytes, the last one shorter: a tensor streamed in fixed memory. Where :func:`map_bytes` maps, each is a
    map of its own, freed with the array (the metric passes then read the page cache, as for whole files); else each
    is read into one buffer, reused, so each is valid only until the next. ``shrank(start)`` is raised when a read
    finds the file ending before window ``start`` (bytes from ``offset``) is whole; a mapped window reads zeros
    there instead, and :func:`shrunk_while_mapped` reports it."""
    step = max(1, step)
    buffer: Optional[np.ndarray] = None
    for start in range(0, length, step):
        count = min(step, length - start)
        window = map_bytes(handle, path, offset + start, count)
        if window is None:
            if buffer is None:
                buffer = np.empty(min(step, length), np.uint8)  # not zero-filled: every byte is read over
            window = buffer[:count]
            handle.seek(offset + start)
            if cast(io.BufferedReader, handle).readinto(window.data) != count:
                raise shrank(start)
        yield window


def shrunk_while_mapped() -> List[str]:
    """The files (paths, as given to :func:`map_bytes`) cut short while mapped since the last call: where they
    were read past their new end, zeros were read instead, so whatever was computed from them is void and their
    maps must be dropped. Empty when nothing is mapped in this process."""
    if not _mapping or _mapguard is None:
        return []
    shrunk = _freed_faulted + [_watched.get(slot, "") for slot in _mapguard.faulted()]
    del _freed_faulted[:]
    return shrunk


def prefetch(path) -> None:
    """Ask the kernel to start reading ``path`` into the page cache now (``posix_fadvise(WILLNEED)``), so a read
    that comes later finds it there: the comparator calls it for the next pair while it computes the current
    one. Returns at once; a no-op where the call does not exist, and for anything that is not a regular file or
    cannot be opened (the real read reports it)."""
    advise = getattr(os, "posix_fadvise", None)
    if advise is None:
        return
    try:
        descriptor = os.open(os.fspath(path), os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    except (OSError, ValueError):
        return
    try:
        advise(descriptor, 0, 0, os.POSIX_FADV_WILLNEED)  # refused (ESPIPE) for a FIFO, harmless for a device
    except OSError:
        pass
    finally:
        os.close(descriptor)


def read_input_bytes(path, error: Type[FileFormatError] = FileFormatError, limit: Optional[int] = TEXT_LIMIT) -> bytes:
    """The bytes of the regular file ``path`` (:func:`open_input`'s checks)."""
    try:
        with open_input(path, error, limit) as handle:
            return handle.read()
    except OSError as failure:
        raise error(os.fspath(path), f"cannot read ({failure.strerror or failure})") from None


def read_input_text(path, error: Type[FileFormatError] = FileFormatError, limit: Optional[int] = TEXT_LIMIT,
                    encoding: str = "utf-8", errors: str = "strict") -> str:
    """The text of the regular file ``path`` (:func:`open_input`'s checks); a decoding error is ``error`` too."""
    data = read_input_bytes(path, error, limit)
    try:
        return data.decode(encoding, errors)
    except UnicodeDecodeError as failure:
        raise error(os.fspath(path), f"is not {encoding} text (byte {failure.start})") from None


def _open_cause(failure: OSError) -> str:
    if failure.errno == errno.ELOOP:
        return "cannot open: a symlink loop"
    if failure.errno == errno.ENOENT:
        return "does not exist (or is a dangling symlink)"
    return f"cannot open ({failure.strerror or failure})"


def temp_path_beside(path) -> str:
    """A fresh temporary file name in ``path``'s folder, ``.precision_tool-{PID}-{12 hex}.tmp``: the name that
    :func:`~precision_tool.reports.result_outputs.remove_stale_temp_files` removes once its process is gone."""
    folder = os.path.dirname(os.fspath(path)) or "."
    return os.path.join(folder, f"{TEMP_PREFIX}{os.getpid()}-{os.urandom(6).hex()}.tmp")


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
    temp_path = temp_path_beside(path)
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


def write_text_atomic(path, text: str) -> str:
    """Write ``text`` (UTF-8, line endings as given) to ``path`` atomically, in one write; returns ``path``."""
    with atomic_write(path, "w") as handle:
        handle.write(text)
    return os.fspath(path)


def save_npy_atomic(path, array) -> str:
    """``np.save(path, array, allow_pickle=False)``, atomically; returns ``path``."""
    with atomic_write(path) as handle:
        np.save(handle, np.asarray(array), allow_pickle=False)
    return os.fspath(path)
