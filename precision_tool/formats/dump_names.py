"""Names of Ascend dump files, and finding the dump files under a folder.

``{op_type}.{op_name'}.{task_id}.{stream_id}.{timestamp}`` (``ascend-formats.md`` §1): ``op_name'`` is the GE op
name with ``/``, ``.``, ``\\`` and space made ``_``, the timestamp 16 digits (microseconds), and FFTS+ tasks append
up to four numbers (:attr:`DumpName.extra`). Names are parsed from the right, so an op name holding dots comes back
whole. Exception dumps (Lite ``exception_info.{stream_id}.{task_id}.{timestamp}``, mode-1
``{op_type}.{op_name}.{task_id}.{timestamp}``) are :class:`ExceptionDumpName`. A name of 255 bytes or more is
a hashed file name resolved by the folder's ``mapping.csv``. Exact rules: docs/internals/formats.md#dump_names.
"""
from __future__ import annotations

import csv
import io
import itertools
import os
import re
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Dict, List, Mapping, Optional, Sequence, Tuple, Union

from precision_tool.errors import DumpFormatError, WorkspaceError
from precision_tool.fileio import read_input_text
from precision_tool.formats.dump_tree import (Choice, DumpSelection, choose_folders, device_folder_of,
                                              position_of, with_empty_devices)

MAPPING_FILE_NAME = "mapping.csv"
MAX_FILE_NAME_BYTES = 255  # names this long or longer are stored under a hash
MAPPING_LIMIT = 256 << 20  # bytes of mapping.csv read: ~1,000,000 rows of 255-byte names
TIMESTAMP_DIGITS = 16
MAX_EXTRA_FIELDS = 4
OPDEBUG_OP_TYPE = "Opdebug"
OPDEBUG_OP_NAME = "Node_OpDebug"
EXCEPTION_DUMP_PREFIX = "exception_info"  # Lite exception dumps: exception_info.{stream}.{task}.{timestamp}
CALENDAR_TIMESTAMP_DIGITS = 17  # YYYYMMDDhhmmssmmm, the Lite timestamp of current CANN code
# Side files found in dump trees (converted tensors, mappings, reports): never dumps.
SIDE_FILE_SUFFIXES = (".npy", ".csv", ".json", ".txt")
STATS_SUFFIX = ".csv"  # a statistics dump: the tensor dump's path + ".csv" (dump_data="stats")
_SANITISED = re.compile(r"[/.\\ ]")
_NUMBER = re.compile(r"[0-9]{1,20}")  # ASCII digits of a uint64 at most: int() can never fail on them


def sanitize_op_name(op_name: str) -> str:
    """The op name as it appears in a file name: ``/``, ``.``, ``\\`` and space become ``_``."""
    return _SANITISED.sub("_", op_name)


def _is_number(text: str) -> bool:
    """1 to 20 ASCII digits (a uint64): ``'²'`` or a 5,000-digit field is not a number, so not a dump name."""
    return _NUMBER.fullmatch(text) is not None


@dataclass(frozen=True)
class DumpName:
    """The fields of a dump file name. ``op_name`` is as written in the name (sanitised)."""

    op_type: str
    op_name: str
    task_id: int
    stream_id: int
    timestamp: int
    extra: Tuple[int, ...] = ()

    @property
    def is_opdebug(self) -> bool:
        """True for an overflow record (``Opdebug.Node_OpDebug....``)."""
        return self.op_type == OPDEBUG_OP_TYPE and self.op_name == OPDEBUG_OP_NAME

    @property
    def context_id(self) -> Optional[int]:
        """FFTS+ context id: the second extra field when there are at least three (``....{ts}.4.3.4.0``
        has task type 4, context 3, thread 4), as CANN's comparator reads it; else ``None``."""
        return self.extra[1] if len(self.extra) >= 3 else None

    @property
    def thread_id(self) -> Optional[int]:
        """FFTS+ thread id: the third extra field when there are at least three, else ``None``."""
        return self.extra[2] if len(self.extra) >= 3 else None

    @property
    def file_name(self) -> str:
        """The name back in file form (timestamp zero-padded to 16 digits)."""
        fields = [self.op_type, self.op_name, str(self.task_id), str(self.stream_id),
                  f"{self.timestamp:0{TIMESTAMP_DIGITS}d}", *(str(value) for value in self.extra)]
        return ".".join(fields)


def _timestamp_index(fields: Sequence[str]) -> Optional[int]:
    """Index of the timestamp field (the rule: docs/internals/formats.md#dump_names); ``None`` if there is none."""
    last = len(fields) - 1
    for index in range(last, 3, -1):
        if len(fields[index]) == TIMESTAMP_DIGITS and _is_number(fields[index]):
            trailing = fields[index + 1:]
            if len(trailing) <= MAX_EXTRA_FIELDS and all(_is_number(field) for field in trailing) \
                    and _is_number(fields[index - 1]) and _is_number(fields[index - 2]):
                return index
        if not _is_number(fields[index]):
            break  # a timestamp is only ever followed by numbers
    has_timestamp_like_field = any(len(field) in (TIMESTAMP_DIGITS, CALENDAR_TIMESTAMP_DIGITS) and _is_number(field)
                                   for field in fields[2:])
    if not has_timestamp_like_field and all(_is_number(field) for field in fields[-3:]):
        return last
    return None


def parse_dump_name(file_name: str) -> Optional[DumpName]:
    """Parse a dump file name (a base name, not a path); ``None`` if it is not one.

    >>> parse_dump_name("Conv2D.scope_conv1.3.2.1700000000000001")
    DumpName(op_type='Conv2D', op_name='scope_conv1', task_id=3, stream_id=2, timestamp=1700000000000001, extra=())
    >>> parse_dump_name("Conv2D.scope_conv1.3.2.1700000000000001.output.0.npy") is None
    True
    """
    fields = file_name.split(".")
    if len(fields) < 5 or not fields[0]:
        return None
    index = _timestamp_index(fields)
    if index is None:
        return None
    op_name = ".".join(fields[1:index - 2])
    if not op_name:
        return None
    return DumpName(op_type=fields[0], op_name=op_name, task_id=int(fields[index - 2]),
                    stream_id=int(fields[index - 1]), timestamp=int(fields[index]),
                    extra=tuple(int(field) for field in fields[index + 1:]))


@dataclass(frozen=True)
class ExceptionDumpName:
    """The fields of an exception dump's file name (see the module docstring for both forms).

    Attributes
    ----------
    task_id : the task that raised the AI Core error.
    stream_id : its stream (Lite names); ``None`` for mode-1 names, which carry none.
    timestamp : the timestamp field as a number: microseconds since the epoch (16 digits) or the digits of
        ``YYYYMMDDhhmmssmmm`` (17 digits); :attr:`time_text` puts either in words.
    op_type, op_name : mode-1 names only (``op_name`` as written, sanitised); ``""`` for Lite names.
    extra : mode-1 FFTS+ fields after the timestamp.
    timestamp_digits : how many digits the timestamp field has (16 or 17 for the known forms).
    """

    task_id: int
    timestamp: int
    stream_id: Optional[int] = None
    op_type: str = ""
    op_name: str = ""
    extra: Tuple[int, ...] = ()
    timestamp_digits: int = TIMESTAMP_DIGITS

    @property
    def lite(self) -> bool:
        """True for ``exception_info.{stream}.{task}.{timestamp}`` (raw-byte tensors)."""
        return self.stream_id is not None

    @property
    def when(self) -> Optional[datetime]:
        """The timestamp as a naive :class:`~datetime.datetime`: UTC for a microsecond epoch, as written (the
        device's clock) for ``YYYYMMDDhhmmssmmm``; ``None`` when it is neither (or not a real date)."""
        if self.timestamp_digits == TIMESTAMP_DIGITS:
            return datetime(1970, 1, 1) + timedelta(microseconds=self.timestamp)
        if self.timestamp_digits == CALENDAR_TIMESTAMP_DIGITS:
            text = f"{self.timestamp:0{CALENDAR_TIMESTAMP_DIGITS}d}"
            try:
                return datetime.strptime(text[:14], "%Y%m%d%H%M%S") + timedelta(milliseconds=int(text[14:]))
            except ValueError:
                return None
        return None

    @property
    def time_text(self) -> str:
        """``2024-06-04 08:20:51.810963 UTC`` (microsecond epoch), ``2025-06-11 17:15:38.370`` (calendar form, no
        time zone known), else the digits as written.

        >>> ExceptionDumpName(3, 20250611171538370, 2, timestamp_digits=17).time_text
        '2025-06-11 17:15:38.370'
        """
        when = self.when
        if when is None:
            return self.timestamp_text
        if self.timestamp_digits == TIMESTAMP_DIGITS:
            return when.strftime("%Y-%m-%d %H:%M:%S.%f") + " UTC"
        return when.strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]

    @property
    def timestamp_text(self) -> str:
        """The timestamp field as written (zero-padded to :attr:`timestamp_digits`)."""
        return f"{self.timestamp:0{self.timestamp_digits}d}"

    @property
    def file_name(self) -> str:
        """The name back in file form."""
        if self.lite:
            return f"{EXCEPTION_DUMP_PREFIX}.{self.stream_id}.{self.task_id}.{self.timestamp_text}"
        fields = [self.op_type, self.op_name, str(self.task_id), self.timestamp_text,
                  *(str(value) for value in self.extra)]
        return ".".join(fields)

    def to_dict(self) -> dict:
        return {"form": "lite" if self.lite else "mode1", "stream_id": self.stream_id, "task_id": self.task_id,
                "timestamp": self.timestamp_text, "time": self.time_text, "op_type": self.op_type or None,
                "op_name": self.op_name or None}


def _is_exception_timestamp(text: str) -> bool:
    return len(text) in (TIMESTAMP_DIGITS, CALENDAR_TIMESTAMP_DIGITS) and _is_number(text)


def parse_exception_dump_name(file_name: str) -> Optional[ExceptionDumpName]:
    """Parse an exception dump's file name (a base name); ``None`` if it is not one.

    A Lite name is exactly four fields, ``exception_info`` and three numbers; its timestamp may have any length
    (1 to 20 digits). A mode-1 name needs a 16- or 17-digit timestamp, a numeric task id before it, an op type
    and a one-field op name before that, and must not parse as a normal dump name (:func:`parse_dump_name`
    wins).

    >>> name = parse_exception_dump_name("exception_info.13.3.1717489251810963")
    >>> name.stream_id, name.task_id, name.lite, name.time_text
    (13, 3, True, '2024-06-04 08:20:51.810963 UTC')
    >>> parse_exception_dump_name("Add.add_1.3.20250611171538370").op_name
    'add_1'
    >>> parse_exception_dump_name("Add.add_1.3.2.1717489251810963") is None  # a normal dump name
    True
    """
    fields = file_name.split(".")
    if fields[0] == EXCEPTION_DUMP_PREFIX:
        if len(fields) != 4 or not all(_is_number(field) for field in fields[1:]):
            return None
        return ExceptionDumpName(task_id=int(fields[2]), timestamp=int(fields[3]), stream_id=int(fields[1]),
                                 timestamp_digits=len(fields[3]))
    if len(fields) < 4 or not fields[0] or parse_dump_name(file_name) is not None:
        return None
    op_type, op_name, task_id, timestamp, *trailing = fields
    if op_name and _is_number(task_id) and _is_exception_timestamp(timestamp) \
            and len(trailing) <= MAX_EXTRA_FIELDS and all(_is_number(field) for field in trailing):
        return ExceptionDumpName(task_id=int(task_id), timestamp=int(timestamp), op_type=op_type, op_name=op_name,
                                 extra=tuple(int(field) for field in trailing), timestamp_digits=len(timestamp))
    return None


def read_mapping(folder: Union[str, os.PathLike]) -> Dict[str, str]:
    """``{hashed file name: original file name}`` from ``folder/mapping.csv``; ``{}`` if absent.

    Rows that do not have exactly two cells are ignored. The names it gives are parsed like any file name, so
    a field of 5,000 digits or a ``'²'`` simply makes the name unrecognised. Raises :class:`DumpFormatError`
    naming the file when it is there but cannot be read -- not a regular file (a FIFO cannot hang the scan),
    a dangling or looping symlink, over :data:`MAPPING_LIMIT`, not CSV: then the hashed names it lists cannot
    be resolved, which the caller must say rather than treat as "no mapping".
    """
    path = os.path.join(os.fspath(folder), MAPPING_FILE_NAME)
    if not os.path.lexists(path):
        return {}
    mapping: Dict[str, str] = {}
    text = read_input_text(path, DumpFormatError, MAPPING_LIMIT, errors="replace")
    try:
        for row in csv.reader(io.StringIO(text, newline="")):
            if len(row) == 2 and row[0].strip():
                mapping[row[0].strip()] = os.path.basename(row[1].strip())
    except csv.Error as error:
        raise DumpFormatError(path, f"not CSV ({error})") from None
    return mapping


def parse_any_dump_name(file_name: str) -> Optional[Union[DumpName, ExceptionDumpName]]:
    """:func:`parse_dump_name`, else :func:`parse_exception_dump_name`; ``None`` if the name is neither."""
    name = parse_dump_name(file_name)
    return name if name is not None else parse_exception_dump_name(file_name)


def dump_name_of_file(path: Union[str, os.PathLike]) -> Union[DumpName, ExceptionDumpName]:
    """The :class:`DumpName` (or, for an exception dump, :class:`ExceptionDumpName`) of one explicitly given
    file, resolving a hashed name through the ``mapping.csv`` beside it. Raises :class:`DumpFormatError` when
    the name is neither."""
    path = os.fspath(path)
    base = os.path.basename(path)
    name = parse_any_dump_name(base)
    if name is not None:
        return name
    try:
        resolved = read_mapping(os.path.dirname(path) or ".").get(base, base)
    except DumpFormatError as error:
        raise DumpFormatError(path, f"file name {base!r} is not a dump name and the mapping.csv that could "
                                    f"resolve a hashed name cannot be read ({error.cause})") from None
    name = parse_any_dump_name(resolved)
    if name is None:
        raise DumpFormatError(
            path, f"file name {resolved!r} is not {{op_type}}.{{op_name}}.{{task_id}}.{{stream_id}}.{{timestamp}} "
                  f"nor an exception dump's {EXCEPTION_DUMP_PREFIX}.{{stream_id}}.{{task_id}}.{{timestamp}}",
            "rename it, or list hashed names in mapping.csv")
    return name


@dataclass(frozen=True)
class BuiltDumpName:
    """What :func:`build_dump_name` returns.

    ``file_name`` is what to create on disk: ``full_name`` itself, or a decimal hash when the full
    name is 255 bytes or more; then ``mapping_row`` is ``(hash, full_name)`` for that folder's
    ``mapping.csv`` (see :func:`append_mapping_row`), else ``None``.
    """

    file_name: str
    full_name: str
    mapping_row: Optional[Tuple[str, str]]


def build_dump_name(op_type: str, op_name: str, task_id: int, stream_id: int, timestamp: int) -> BuiltDumpName:
    """Name a dump file the way the Ascend runtime does.

    ``op_name`` (and ``op_type``, for safety) are sanitised with :func:`sanitize_op_name`; the
    timestamp is zero-padded to 16 digits. Ids must be non-negative integers.
    """
    for label, value in (("task_id", task_id), ("stream_id", stream_id), ("timestamp", timestamp)):
        if int(value) < 0:
            raise ValueError(f"{label} must be >= 0, not {value}")
    full_name = DumpName(sanitize_op_name(op_type), sanitize_op_name(op_name), int(task_id), int(stream_id),
                         int(timestamp)).file_name
    if len(full_name.encode("utf-8")) < MAX_FILE_NAME_BYTES:
        return BuiltDumpName(full_name, full_name, None)
    import hashlib  # only the writer (emulation) names files: reading never needs it

    hashed = str(int.from_bytes(hashlib.sha256(full_name.encode("utf-8")).digest()[:8], "big"))
    return BuiltDumpName(hashed, full_name, (hashed, full_name))


def append_mapping_row(folder: Union[str, os.PathLike], row: Tuple[str, str]) -> str:
    """Append ``hash,original_name`` to ``folder/mapping.csv`` (created if needed); returns its path."""
    path = os.path.join(os.fspath(folder), MAPPING_FILE_NAME)
    with open(path, "a", newline="", encoding="utf-8") as handle:
        csv.writer(handle, lineterminator="\n").writerow(row)
    return path


# ------------------------------------------------------------------------------------------- scanning

@dataclass(frozen=True)
class DumpFileRef:
    """A dump file found on disk. ``stored_name`` is the hashed on-disk name when the real name came
    from ``mapping.csv``, else ``None``."""

    path: str
    name: DumpName
    stored_name: Optional[str] = None


@dataclass(frozen=True)
class ExceptionDumpRef:
    """An exception dump found on disk (see :class:`DumpFileRef` for ``stored_name``)."""

    path: str
    name: ExceptionDumpName
    stored_name: Optional[str] = None


@dataclass(frozen=True)
class DumpOp:
    """Every dump of one op (same op type and name): ``latest`` is the one to compare,
    ``superseded`` the older executions, newest first."""

    op_type: str
    op_name: str
    latest: DumpFileRef
    superseded: Tuple[DumpFileRef, ...] = ()


@dataclass(frozen=True)
class DumpScan:
    """Result of :func:`scan_dump_folder`.

    Attributes
    ----------
    root : the folder scanned.
    ops : one :class:`DumpOp` per op, by latest timestamp then name; Opdebug files excluded.
    overflow_records : every Opdebug file, oldest first (each is a separate overflow event).
    unrecognised : paths of files that are neither dumps nor side files (npy, csv, json, txt),
        including hashed names missing from ``mapping.csv``.
    unreadable : folders that could not be listed.
    unresolved : ``(path, message)`` of each file not named like a dump in a folder whose ``mapping.csv``
        could not be read: a hashed dump, probably, that is lost unless the mapping is repaired -- unusable
        input, not a stray file (these paths are in ``unrecognised`` too).
    exception_dumps : every exception dump (the tensors of an op that raised an AI Core error), oldest first
        (by :attr:`ExceptionDumpName.when`, then path); never among ``ops``: they are not compared.
    choice : the step and device kept, with a note when the tree holds others or one was asked for.
    stats : the statistics CSVs of a ``dump_data="stats"`` run (``{dump name}.csv``, hashed names resolved through
        ``mapping.csv`` as the dumps' are), one :class:`DumpOp` per op as for ``ops``; read them with
        :func:`~precision_tool.formats.stats_csv.read_stats_csv`.
    """

    root: str
    ops: Tuple[DumpOp, ...]
    overflow_records: Tuple[DumpFileRef, ...]
    unrecognised: Tuple[str, ...]
    unreadable: Tuple[str, ...]
    unresolved: Tuple[Tuple[str, str], ...] = ()
    exception_dumps: Tuple[ExceptionDumpRef, ...] = ()
    choice: Choice = Choice(None, None)
    stats: Tuple[DumpOp, ...] = ()

    def find(self, op_name: str) -> Optional[DumpOp]:
        """The op whose name (raw GE name or sanitised) matches, or ``None``."""
        wanted = sanitize_op_name(op_name)
        return next((op for op in self.ops if op.op_name == wanted), None)


def _walk_files(root: str, unreadable: List[str]):
    """Yield ``(folder, entry names)`` depth-first; follows symlinked folders once (loops are cut
    by remembering each folder's device and inode).

    The names are every entry that is not a folder: regular files, and also FIFOs, devices, sockets and
    dangling symlinks, so that one named like a dump is found and then refused by the dump reader in one
    line naming it, rather than silently missing -- and a folder named like a dump file (GE's own folders are
    named by times, numbers and model names, never so), which is not entered but refused the same way."""
    seen = set()
    stack = [root]
    while stack:
        folder = stack.pop()
        try:
            info = os.stat(folder)
            key = (info.st_dev, info.st_ino)
            if key in seen:
                continue
            seen.add(key)
            with os.scandir(folder) as listing:
                entries = sorted(listing, key=lambda entry: entry.name)
        except OSError:
            unreadable.append(folder)
            continue
        files, folders = [], []
        for entry in entries:
            try:
                if entry.is_dir() and parse_dump_name(entry.name) is None:
                    folders.append(entry.path)
                else:
                    files.append(entry.name)
            except OSError:  # e.g. a symlink loop: not a folder to enter; the reader names the cause
                files.append(entry.name)
        stack.extend(reversed(folders))  # visit sub-folders in name order
        yield folder, files


def scan_dump_folder(root: Union[str, os.PathLike], selection: Optional[DumpSelection] = None) -> DumpScan:
    """Find every dump file under ``root`` (recursively) by name alone; headers are not read.

    Of a tree holding several steps or devices, only one step of one device is kept (:mod:`~.dump_tree`):
    ``selection`` (the command's ``--step``/``--device``), else the newest step of the lowest device;
    :attr:`DumpScan.choice` says which, and what else the tree holds (and is recorded in the selection's
    :attr:`~.dump_tree.DumpSelection.log` for the command's report).

    Dot files (temporary files) and side files (``.npy``, ``.csv``, ``.json``, ``.txt``) are
    skipped. Hashed names are resolved through each folder's own ``mapping.csv``. Dumps are grouped
    by ``(op_type, op_name)``; the latest timestamp wins (ties broken by path) and the rest are kept
    in :attr:`DumpOp.superseded`. Opdebug overflow records and exception dumps are listed apart.

    Raises :class:`WorkspaceError` if ``root`` is not a folder.
    """
    root = os.fspath(root)
    if not os.path.isdir(root):
        raise WorkspaceError(f"{root}: not a folder", "give the folder that holds the dump files")
    found: List[DumpFileRef] = []
    unrecognised: List[str] = []
    unreadable: List[str] = []
    unresolved: List[Tuple[str, str]] = []
    exceptions: List[ExceptionDumpRef] = []
    stats_found: List[DumpFileRef] = []
    device_folders: List[Tuple[int, str]] = []
    for folder, files in _walk_files(root, unreadable):
        device = device_folder_of(folder)
        if device is not None:
            device_folders.append((device, folder))
        mapping: Dict[str, str] = {}
        mapping_error = None
        if MAPPING_FILE_NAME in files:
            try:
                mapping = read_mapping(folder)
            except DumpFormatError as error:
                mapping_error = error
        for file_name in files:
            if file_name.lower().endswith(STATS_SUFFIX) and not file_name.startswith("."):
                stats_name = _stats_name(file_name, mapping)
                if stats_name is not None:
                    hashed = file_name[:-len(STATS_SUFFIX)] in mapping
                    stats_found.append(DumpFileRef(os.path.join(folder, file_name), stats_name,
                                                   file_name if hashed else None))
                continue
            if file_name.startswith(".") or file_name.lower().endswith(SIDE_FILE_SUFFIXES):
                continue
            real_name = mapping.get(file_name, file_name)
            name = parse_dump_name(real_name)
            path = os.path.join(folder, file_name)
            exception = parse_exception_dump_name(real_name) if name is None else None
            if exception is not None:
                exceptions.append(ExceptionDumpRef(path, exception, file_name if real_name != file_name else None))
                continue
            if name is None:
                unrecognised.append(path)
                if mapping_error is not None:
                    unresolved.append((path, f"{path}: not named like a dump, and the mapping.csv that could "
                                             f"resolve a hashed name cannot be read ({mapping_error.cause})"))
                continue
            found.append(DumpFileRef(path, name, file_name if real_name != file_name else None))
    per_folder: Dict[str, int] = {}
    for path in itertools.chain((ref.path for ref in found), (ref.path for ref in exceptions),
                                (ref.path for ref in stats_found)):
        folder = os.path.dirname(path)
        per_folder[folder] = per_folder.get(folder, 0) + 1
    choice, kept_folders = choose_folders(root, sorted(per_folder), selection, per_folder)
    dumped = {device for device, _ in choice.held}  # a device with dumps in another session's folder is not empty
    choice = with_empty_devices(choice, [(device, os.path.relpath(folder, root)) for device, folder in device_folders
                                         if device not in dumped and not any(
                                             path == folder or path.startswith(folder + os.sep)
                                             for path in per_folder)])
    if selection is not None:
        selection.record(root, choice)
    kept = set(kept_folders)
    found = [ref for ref in found if os.path.dirname(ref.path) in kept]
    exceptions = [ref for ref in exceptions if os.path.dirname(ref.path) in kept]
    stats_found = [ref for ref in stats_found if os.path.dirname(ref.path) in kept]

    def chosen(path: str) -> bool:  # a file no dump name was read from: kept unless it lies in another step/device
        position = position_of(os.path.dirname(path))
        return position is None or choice.keeps(position)

    unrecognised = [path for path in unrecognised if chosen(path)]
    unreadable = [folder for folder in unreadable if chosen(os.path.join(folder, ""))]
    unresolved = [(path, message) for path, message in unresolved if chosen(path)]
    return DumpScan(root=root, choice=choice, ops=_group_by_op(ref for ref in found if not ref.name.is_opdebug),
                    overflow_records=tuple(sorted((ref for ref in found if ref.name.is_opdebug),
                                                  key=lambda ref: (ref.name.timestamp, ref.path))),
                    unrecognised=tuple(unrecognised), unreadable=tuple(unreadable), unresolved=tuple(unresolved),
                    exception_dumps=tuple(sorted(exceptions, key=exception_dump_order)),
                    stats=_group_by_op(stats_found))


def _stats_name(file_name: str, mapping: Mapping[str, str]) -> Optional[DumpName]:
    """The dump name of a statistics CSV ``{dump name}.csv`` (a hashed dump name resolved through ``mapping``),
    or ``None`` for any other CSV (``mapping.csv``, ``statistic.csv``, results); Opdebug records have no stats."""
    stem = file_name[:-len(STATS_SUFFIX)]
    name = parse_dump_name(mapping.get(stem, stem))
    return name if name is not None and not name.is_opdebug else None


def exception_dump_order(ref: ExceptionDumpRef) -> Tuple[datetime, str]:
    """Sort key of exception dumps, oldest first; a timestamp in no known form sorts last; ties by path. (A
    microsecond epoch is UTC and a calendar timestamp the device's clock: across the two forms the order is
    only as good as the device's time zone is close to UTC.)"""
    return (ref.name.when or datetime.max, ref.path)


def _group_by_op(refs) -> Tuple[DumpOp, ...]:
    groups: Dict[Tuple[str, str], List[DumpFileRef]] = {}
    for ref in refs:
        groups.setdefault((ref.name.op_type, ref.name.op_name), []).append(ref)
    ops = []
    for (op_type, op_name), members in groups.items():
        if len(members) > 1:  # a folder named like a newer dump of the op must not hide its readable file
            members.sort(key=lambda ref: (not os.path.isdir(ref.path), ref.name.timestamp, ref.path), reverse=True)
        ops.append(DumpOp(op_type, op_name, members[0], tuple(members[1:])))
    ops.sort(key=lambda op: (op.latest.name.timestamp, op.op_name, op.op_type))
    return tuple(ops)
