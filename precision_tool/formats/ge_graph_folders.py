"""Which GE Build graph to read from a ``DUMP_GRAPH_PATH`` folder, in every layout CANN has used.

GE writes its graphs into ``DUMP_GRAPH_PATH`` itself (CANN 7.0 and older), ``{pid}_{deviceid}/`` (8.0.RC1, 8.0.0)
or ``pid_{pid}_deviceid_{deviceid}/`` (8.5, 9.x, current). :func:`choose_build_graph` reads exactly one folder, so
graphs of different processes or devices are never mixed: the folders holding the named graph, then those of the
dump's device, then the one whose newest Build file was written last (a note names it and the others); in it,
:func:`~precision_tool.formats.ge_io.find_build_graph` picks the file. A sub-folder that cannot be used is a note,
and the others are still searched. The rule step by step: docs/internals/formats.md#ge_graph_folders.
"""
from __future__ import annotations

import errno
import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Dict, Iterable, List, Optional, Sequence, Set, Tuple

from precision_tool.errors import GraphFormatError, WorkspaceError

if TYPE_CHECKING:  # pragma: no cover - ge_io imports this module
    from precision_tool.formats.ge_io import BuildGraphName

# pid_{pid}_deviceid_{deviceid} (CANN 8.5+) or {pid}_{deviceid} (CANN 8.0); ASCII digits, at most 10 (a pid or
# device id is below 2**32): a longer run is a look-alike name, never int()'s 4,300-digit limit.
_GRAPH_FOLDER_NAME = re.compile(r"(?:pid_([0-9]{1,10})_deviceid_([0-9]{1,10})"
                                r"|([0-9]{1,10})_([0-9]{1,10}))\Z")
# Names that look like an attempt at one of those, to be reported when they do not match.
_LOOKS_LIKE_GRAPH_FOLDER = re.compile(r"(?:pid_?|[0-9]+_)|.*deviceid", re.IGNORECASE)
_TIME_FOLDER = re.compile(r"[0-9]{14}\Z")  # {time} level of the data-dump tree: YYYYMMDDHHMMSS
_DEVICE_FOLDER = re.compile(r"[0-9]{1,10}\Z")
FOLDER_FORMS = "pid_<pid>_deviceid_<device> or <pid>_<device>"


@dataclass(frozen=True)
class GraphFolder:
    """A folder holding Build graph files: ``DUMP_GRAPH_PATH`` itself (flat: ``pid`` and ``device_id`` are
    ``None``) or one of its per-process folders. ``newest`` is its newest Build file (the one
    :func:`~precision_tool.formats.ge_io.find_build_graph` takes) and ``newest_ns`` that file's write time."""

    path: str
    newest: str
    newest_ns: int
    pid: Optional[int] = None
    device_id: Optional[int] = None

    @property
    def is_flat(self) -> bool:
        return self.pid is None

    @property
    def label(self) -> str:
        """How notes name it: the per-process folder's own name, or the flat folder's path."""
        return self.path if self.is_flat else os.path.basename(self.path)


@dataclass(frozen=True)
class GraphFolderScan:
    """What :func:`scan_graph_folders` found under ``root``: the candidate ``folders`` (flat ``root`` first when
    it holds Build files, then per-process folders by name), the per-process folders holding no Build graph
    (``empty``, by name), and one note per entry that could not be used (``problems``)."""

    root: str
    folders: Tuple[GraphFolder, ...]
    empty: Tuple[str, ...] = ()
    problems: Tuple[str, ...] = ()


@dataclass(frozen=True)
class BuildGraphChoice:
    """The Build graph file chosen under ``root`` and why.

    ``folder`` is the folder it came from, ``others`` the candidate folders not used (empty when the choice
    was the only one), ``notes`` one line each: sub-folders skipped as unusable, then the choice when it was
    not clear-cut. A caller shows the notes beside its output.
    """

    root: str
    path: Path
    folder: GraphFolder
    others: Tuple[GraphFolder, ...] = ()
    notes: Tuple[str, ...] = ()


# ----------------------------------------------------------------------------------------- listing
def build_files_in(folder: str, problems: Optional[List[str]] = None) -> List[Tuple[int, int, Path]]:
    """``(mtime_ns, index, path)`` of each Build graph file directly in ``folder``, newest first.

    Build files are ``ge_proto_*_Build.txt`` and the ONNX form GE writes beside them, ``ge_onnx_*_Build.pbtxt``
    (:func:`~precision_tool.formats.ge_io.parse_build_graph_name`). An ONNX file is left out when a ge_proto file
    of the same dump index (and graph id, when both names have one) is there: the two hold the same graph, and
    only ge_proto keeps string attributes at every DUMP_GE_GRAPH level. Only regular files count (a symlink to
    one too). Entries named like a Build file that are something else (a FIFO, a device such as a symlink to
    ``/dev/zero``, a folder) or cannot be examined (a symlink loop, a dangling link) are skipped, with a note in
    ``problems`` when given. Raises :class:`WorkspaceError` when ``folder`` is not a folder or cannot be listed.
    """
    from precision_tool.formats.ge_io import parse_build_graph_name

    found = []
    names: Dict[str, "BuildGraphName"] = {}
    for entry in _list(folder):
        name = parse_build_graph_name(entry.name)
        if name is None:
            continue
        try:
            info = entry.stat()
        except OSError as exc:
            _note(problems, f"{entry.path}: skipped, {_os_reason(exc)}")
            continue
        if not stat.S_ISREG(info.st_mode):
            _note(problems, f"{entry.path}: skipped, {_kind(info.st_mode)}, not a regular file")
            continue
        found.append((info.st_mtime_ns, name.index, Path(entry.path)))
        names[os.fspath(Path(entry.path))] = name  # as found's paths are keyed: Path drops a leading "./"
    proto_names = [name for name in names.values() if name.form == "ge_proto"]
    found = [item for item in found if not _has_proto_twin(names[os.fspath(item[2])], proto_names)]
    found.sort(reverse=True)
    return found


def _has_proto_twin(name: "BuildGraphName", proto_names: Sequence["BuildGraphName"]) -> bool:
    """Whether ``name`` is an ONNX Build file whose graph a ge_proto file of ``proto_names`` also holds: same
    dump index, and same graph id unless one of the names has none (ge_proto names before late 2023)."""
    if name.form != "ge_onnx":
        return False
    return any(proto.index == name.index and (None in (proto.graph_id, name.graph_id) or
                                              proto.graph_id == name.graph_id) for proto in proto_names)


def _note(problems: Optional[List[str]], line: str) -> None:
    if problems is not None:
        problems.append(line)


def _list(folder: str) -> List[os.DirEntry]:
    try:
        with os.scandir(folder) as listing:
            return sorted(listing, key=lambda entry: entry.name)
    except FileNotFoundError:
        raise WorkspaceError(f"{folder}: no such folder") from None
    except NotADirectoryError:
        raise WorkspaceError(f"{folder}: not a folder") from None
    except OSError as exc:
        raise WorkspaceError(f"{folder}: cannot be listed ({_os_reason(exc)})") from None


def _os_reason(exc: OSError) -> str:
    if exc.errno == errno.ELOOP:
        return "symlink loop"
    if exc.errno == errno.ENOENT:
        return "dangling symlink"
    return exc.strerror or str(exc)


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device file"
    return "a file"


def scan_graph_folders(root) -> GraphFolderScan:
    """The folders under ``root`` (``DUMP_GRAPH_PATH``) that hold Build graphs (:class:`GraphFolderScan`).

    A per-process folder reached twice (a symlink to another, or to ``root``) counts once.
    Raises :class:`WorkspaceError` when ``root`` is missing, not a folder or cannot be listed.
    """
    root = os.fspath(root)
    problems: List[str] = []
    candidates: List[GraphFolder] = []
    empty: List[str] = []
    seen: Set[Tuple[int, int]] = set()
    flat = build_files_in(root, problems)
    seen.add(_identity(root))
    if flat:
        candidates.append(GraphFolder(root, os.fspath(flat[0][2]), flat[0][0]))
    for entry in _list(root):
        match = _GRAPH_FOLDER_NAME.match(entry.name)
        if match is None:
            if _LOOKS_LIKE_GRAPH_FOLDER.match(entry.name) and not _is_plain_file(entry):
                problems.append(f"{entry.path}: skipped, the name is not {FOLDER_FORMS}")
            continue
        if not _is_folder(entry.path, problems):
            continue
        key = _identity(entry.path)
        if key in seen:
            continue
        seen.add(key)
        try:
            files = build_files_in(entry.path, problems)
        except WorkspaceError as error:
            problems.append(f"{error}, skipped")
            continue
        pid, device = (match.group(1), match.group(2)) if match.group(1) else (match.group(3), match.group(4))
        if files:
            candidates.append(GraphFolder(entry.path, os.fspath(files[0][2]), files[0][0], int(pid), int(device)))
        else:
            empty.append(entry.name)
    return GraphFolderScan(root, tuple(candidates), tuple(empty), tuple(problems))


def _identity(path: str) -> Tuple[int, int]:
    info = os.stat(path)
    return info.st_dev, info.st_ino


def _is_plain_file(entry: os.DirEntry) -> bool:
    try:
        return entry.is_file()
    except OSError:
        return False


def _is_folder(path: str, problems: List[str]) -> bool:
    """Whether ``path`` is a folder (following symlinks); if not, a note in ``problems`` says what it is."""
    try:
        mode = os.stat(path).st_mode
    except OSError as exc:
        problems.append(f"{path}: skipped, {_os_reason(exc)}")
        return False
    if not stat.S_ISDIR(mode):
        problems.append(f"{path}: skipped, {_kind(mode)} where a graph folder should be")
        return False
    return True


# ----------------------------------------------------------------------------------------- choosing
def choose_build_graph(root, graph_name: Optional[str] = None, device_id: Optional[int] = None) -> BuildGraphChoice:
    """The Build graph file to read under ``root`` (``DUMP_GRAPH_PATH``): docs/internals/formats.md#ge_graph_folders.

    Parameters
    ----------
    root : ``DUMP_GRAPH_PATH``: flat, or holding ``pid_*_deviceid_*`` / ``{pid}_{device}`` folders.
    graph_name : only Build graphs whose root graph has this name (the dump tree's ``{model_name}``).
    device_id : the data dump's ``{device_id}`` when known (:func:`dump_device_id`).

    Raises
    ------
    WorkspaceError : ``root`` is missing, holds no Build graph, or none called ``graph_name``.
    """
    return choose_from_scan(scan_graph_folders(root), graph_name, device_id)


def choose_from_scan(scan: GraphFolderScan, graph_name: Optional[str] = None,
                     device_id: Optional[int] = None) -> BuildGraphChoice:
    """:func:`choose_build_graph` on a scan already made (a caller that first checks ``scan.folders``)."""
    from precision_tool.formats.ge_io import BUILD_GRAPH_HINT, no_build_graph

    root, folders, problems = scan.root, scan.folders, scan.problems
    notes = list(problems)
    if not folders:
        where = f" or its per-process folders ({', '.join(scan.empty)})" if scan.empty else ""
        raise no_build_graph(f"{root}{where}", _with_problems(BUILD_GRAPH_HINT, problems))
    files: Dict[str, Path] = {}
    pool: List[GraphFolder] = list(folders)
    seen: List[str] = []
    if graph_name is not None:
        pool = []
        for folder in folders:
            path, names = _named_file(folder.path, graph_name)
            if path is not None:
                pool.append(folder)
                files[folder.path] = path
            seen.extend(_shown(folder, name) for name in names)
        if not pool:
            raise WorkspaceError(f"no Build graph in {root} has a root graph called {graph_name!r}",
                                 "found " + "; ".join(seen))
    wrong_device = ""
    if device_id is not None and any(folder.device_id is not None for folder in pool):
        matching = [folder for folder in pool if folder.device_id == device_id]
        if matching:
            pool = matching
        else:
            wrong_device = f"no graph folder of the dump's device {device_id}"
    chosen = max(pool, key=lambda folder: (folder.newest_ns, folder.path))
    others = tuple(folder for folder in folders if folder is not chosen)
    if len(pool) > 1 or wrong_device:
        notes.append(_choice_note(root, chosen, pool, others, device_id, wrong_device, graph_name))
    path = files.get(chosen.path, Path(chosen.newest))
    return BuildGraphChoice(root, path, chosen, others, tuple(notes))


def _with_problems(hint: str, problems: Sequence[str]) -> str:
    return hint if not problems else f"{hint}; {'; '.join(problems)}"


def _shown(folder: GraphFolder, text: str) -> str:
    return text if folder.is_flat else f"{folder.label}/{text}"


def _named_file(folder: str, graph_name: str) -> Tuple[Optional[Path], List[str]]:
    """The newest Build file of ``folder`` whose root graph is ``graph_name``, and ``file: name`` of each
    file looked at (for the error when no folder has it)."""
    from precision_tool.formats.ge_io import root_graph_name

    seen = []
    for _, _, path in build_files_in(folder):
        try:
            name = root_graph_name(path)
        except GraphFormatError as error:
            seen.append(f"{path.name}: unreadable ({error.cause})")
            continue
        if name == graph_name:
            return path, seen
        seen.append(f"{path.name}: {name}")
    return None, seen


def _choice_note(root: str, chosen: GraphFolder, pool: Sequence[GraphFolder], others: Iterable[GraphFolder],
                 device_id: Optional[int], wrong_device: str, graph_name: Optional[str]) -> str:
    """One line: which graph folder was used, why, and which others exist."""
    what = f"graph {graph_name!r}" if graph_name is not None else "Build graph"
    if len(pool) > 1:
        among = f"{len(pool)} folders"
        if graph_name is not None:
            among += f" holding {graph_name!r}"
        if device_id is not None and not wrong_device:
            among += f" of device {device_id}"
        why = f"the newest of {among}"
    else:
        why = "the only candidate"
    line = f"{what} of {root}: used {chosen.label} ({why}"
    line += f"; {wrong_device})" if wrong_device else ")"
    rest = [folder.label for folder in others]
    if rest:
        line += "; also there: " + ", ".join(rest)
    return line


# ----------------------------------------------------------------------------------------- the dump's device
def dump_device_ids(dump_dir) -> Tuple[int, ...]:
    """The ``{device_id}`` levels of the data-dump tree at ``dump_dir``, sorted; ``()`` when none is found.

    ``dump_dir`` may be the dump path (``{time}/{device_id}/...`` below it), a ``{time}`` folder, or a folder
    inside a device folder (then its path names the device). A device folder with no file below it is not
    counted, as the dump scan does not count it. Folders that cannot be listed are ignored: this only helps
    choose a graph.

    >>> dump_device_ids("/no/such/folder/20240101000000/3/ge_default_1/1/0")
    (3,)
    """
    path = os.path.abspath(os.fspath(dump_dir))
    parts = Path(path).parts
    for upper, lower in zip(parts, parts[1:]):
        if _TIME_FOLDER.match(upper) and _DEVICE_FOLDER.match(lower):
            return (int(lower),)
    times = [path] if _TIME_FOLDER.match(os.path.basename(path)) else _subfolders(path, _TIME_FOLDER)
    devices = {int(os.path.basename(device)) for time in times for device in _subfolders(time, _DEVICE_FOLDER)
               if _holds_files(device)}  # as the dump scan counts devices: an empty device folder is not one
    return tuple(sorted(devices))


def _holds_files(folder: str) -> bool:
    """Whether any file lies below ``folder`` (stops at the first)."""
    for _, _, files in os.walk(folder):
        if files:
            return True
    return False


def dump_device_id(dump_dir, wanted: Optional[int] = None) -> Optional[int]:
    """The device whose dumps a scan of the tree at ``dump_dir`` reads, so its graph is read with them: the
    tree's one device; of several, ``wanted`` (``--device N``) when the tree holds it, else the lowest
    (:mod:`~precision_tool.formats.dump_tree`'s default); ``None`` when there is none."""
    devices = dump_device_ids(dump_dir) if dump_dir else ()
    if not devices:
        return None
    return wanted if wanted in devices else devices[0]


def _subfolders(folder: str, name: "re.Pattern[str]") -> List[str]:
    try:
        with os.scandir(folder) as listing:
            entries = [entry for entry in listing if name.match(entry.name)]
    except OSError:
        return []
    found = []
    for entry in entries:
        try:
            if entry.is_dir():
                found.append(entry.path)
        except OSError:
            continue
    return found
