"""Where things are: the workspace (``precision_data/``) layout users know from the original tool.

``npu/debug_0`` (and ``npu/debug_1``, a second NPU run kept apart) hold the NPU dumps and Build graphs,
``overflow/dump`` the Opdebug records, ``tf/tf_debug``, ``tf/dump`` and ``tf/graph`` the reference, ``fusion/`` and
``precision/`` the files users edit, ``temp/`` the tool's outputs (the tree: docs/internals/package.md#config). The
workspace is ``-d DIR``, else ``$PRECISION_TOOL_DATA``, else ``./precision_data``. Outputs never go into an input
folder: every folder or file a command writes is checked first by :func:`check_output_dir` /
:func:`check_output_file` (or their ``ensure_`` forms, which also create the folder) against the command's inputs
and, in a workspace, :attr:`Workspace.input_folders`.
"""
from __future__ import annotations

import contextlib
import os
import re
from dataclasses import dataclass
from typing import Iterator, Optional, Sequence, Tuple

from precision_tool.errors import WorkspaceError

ENV_DATA_DIR = "PRECISION_TOOL_DATA"
DEFAULT_DATA_DIR = "precision_data"
_ELSEWHERE = "choose an output folder outside the input"
MAX_FILE_NAME_BYTES = 255  # Linux's NAME_MAX
_NOT_IN_FILE_NAMES = re.compile('[\x00-\x1f\x7f-\x9f/\\\\:*?"<>|\ud800-\udfff]')


def default_data_dir() -> str:
    return os.environ.get(ENV_DATA_DIR) or DEFAULT_DATA_DIR


def __getattr__(name: str) -> str:
    """The original tool's ``config.ROOT_DIR`` and ``config.DATA_ROOT_DIR``, computed when read.

    The original had ``ROOT_DIR = ''`` and ``DATA_ROOT_DIR = os.path.join(ROOT_DIR, 'precision_data')``, so
    scripts that build paths from them keep working: ``DATA_ROOT_DIR`` is the workspace (absolute; it
    follows ``PRECISION_TOOL_DATA``) and ``ROOT_DIR`` the folder that holds it.
    """
    if name == "DATA_ROOT_DIR":
        return os.path.abspath(default_data_dir())
    if name == "ROOT_DIR":
        return os.path.dirname(os.path.abspath(default_data_dir()))
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


@dataclass(frozen=True)
class Workspace:
    root: str

    def npu_run(self, index: int = 0) -> str:
        """``npu/debug_N``: one NPU run's dump and graph folders, and its ``debug_dir``."""
        return os.path.join(self.root, "npu", f"debug_{index}")

    def npu_dump(self, index: int = 0) -> str:
        return os.path.join(self.npu_run(index), "dump")

    def npu_graph(self, index: int = 0) -> str:
        return os.path.join(self.npu_run(index), "graph")

    @property
    def overflow_dump(self) -> str:
        return os.path.join(self.root, "overflow", "dump")

    @property
    def tf_debug(self) -> str:
        return os.path.join(self.root, "tf", "tf_debug")

    @property
    def tf_dump(self) -> str:
        return os.path.join(self.root, "tf", "dump")

    @property
    def tf_graph(self) -> str:
        """``tf/graph``: the executed TF graphs ``tf_dump`` keeps (the original tool's ``TF_GRAPH_DIR``)."""
        return os.path.join(self.root, "tf", "graph")

    @property
    def fusion_switch(self) -> str:
        """The fusion switch file users edit (action ``fusion_switch``), created from the shipped template."""
        return os.path.join(self.root, "fusion", "fusion_switch.cfg")

    @property
    def customize_dtypes(self) -> str:
        """The per-op dtype file the NPU reads (``customize_dtypes``): ops named there with float32 dtypes are kept
        in float32 (``bisect precision`` writes it; ``emulate`` honours it)."""
        return os.path.join(self.root, "precision", "customize_dtypes.cfg")

    @property
    def run_config_files(self) -> Tuple[str, ...]:
        """The files that configure an NPU run rather than record one: the fusion switch file and the
        customize_dtypes file. A folder holding only these is a workspace waiting for its run."""
        return (self.fusion_switch, self.customize_dtypes)

    @property
    def fusion_result(self) -> str:
        return os.path.join(self.root, "fusion", "fusion_result.json")

    @property
    def temp(self) -> str:
        return os.path.join(self.root, "temp")

    def require_root(self) -> None:
        """:class:`WorkspaceError` (one line) unless :attr:`root` is a folder -- and not a folder inside a
        workspace (``-d precision_data/npu`` one level too deep), which is said with the root to give instead."""
        root = self.root
        if not os.path.isdir(root):
            cause = "not a folder" if os.path.lexists(root) else "no such workspace folder"
            raise WorkspaceError(f"{root}: {cause}", WORKSPACE_HINT)
        enclosing = enclosing_workspace(root)
        if enclosing is not None:
            raise WorkspaceError(f"{root}: not a workspace root but a folder inside the workspace {enclosing}",
                                 f"give -d {enclosing}")

    @property
    def input_folders(self) -> Tuple[str, ...]:
        """The folders the tool reads and never writes into, whether they exist yet or not: ``npu`` (every NPU
        run: dumps, graphs, ``debug_dir``), ``overflow``, ``tf/dump``, ``tf/tf_debug``, ``tf/graph`` and
        ``fusion``. The workspace root and ``temp`` (the tool's outputs) are not inputs. (``tf_dump`` writes
        ``tf/dump`` and ``tf/graph`` from ``tf/tf_debug``: it leaves those two out of its check.)"""
        return (os.path.join(self.root, "npu"), os.path.dirname(self.overflow_dump), self.tf_dump, self.tf_debug,
                self.tf_graph, os.path.dirname(self.fusion_result))


WORKSPACE_HINT = f"give the workspace folder with -d DIR or ${ENV_DATA_DIR}"
_WORKSPACE_PARTS = ("npu", "overflow", "tf", "fusion")


def looks_like_workspace(folder: str) -> bool:
    """Whether ``folder`` holds any of a workspace's own folders (``npu``, ``overflow``, ``tf``, ``fusion``)."""
    return any(os.path.isdir(os.path.join(folder, part)) for part in _WORKSPACE_PARTS)


def enclosing_workspace(folder: str, levels: int = 8) -> Optional[str]:
    """The workspace ``folder`` lies inside when it is not one itself: the nearest of its parents (up to
    ``levels`` up) holding ``npu/debug_0``, ``overflow/dump`` or ``tf/dump``, relative to the current folder
    when ``folder`` was given relative. ``None`` for a workspace, or a folder no workspace encloses."""
    if looks_like_workspace(folder):
        return None
    current = os.path.abspath(folder)
    for _ in range(levels):
        parent = os.path.dirname(current)
        if parent == current:
            return None
        if any(os.path.isdir(os.path.join(parent, *part)) for part in
               (("npu", "debug_0"), ("overflow", "dump"), ("tf", "dump"))):
            return parent if os.path.isabs(folder) else os.path.relpath(parent)
        current = parent
    return None


def input_folders_of(*paths: str) -> Tuple[str, ...]:
    """The folder each input stands for: a folder itself, a file (or anything that is not a folder) the
    folder holding it. Pass them as ``folders=`` when a command's input file lies in a folder the tool scans
    (a dump file's step folder, a graph file's graph folder): then no output goes into that folder or below.

    >>> input_folders_of("/no/such/dump/Add.add.1.1.1700000000000000")
    ('/no/such/dump',)
    """
    return tuple(path if os.path.isdir(path) else os.path.dirname(os.path.abspath(path)) for path in paths)


def _inside(real_path: str, real_folder: str) -> bool:
    """``real_path`` is ``real_folder`` or below it (both already resolved)."""
    return real_path == real_folder or real_path.startswith(real_folder.rstrip(os.sep) + os.sep)


def _refuse_inside_inputs(name: str, out_dir: str, input_paths: Sequence[str], folders: Sequence[str]) -> str:
    """The real path of ``out_dir``; :class:`WorkspaceError` naming ``name`` when it lies in an input (the
    rules of :func:`check_output_dir`)."""
    real_out = os.path.realpath(out_dir)
    for path in input_paths:
        real_in = os.path.realpath(path)
        if os.path.isdir(real_in):
            if _inside(real_out, real_in):
                raise WorkspaceError(f"{name}: output folder would be inside the input {path}", _ELSEWHERE)
        elif real_out == os.path.dirname(real_in):
            raise WorkspaceError(f"{name}: output folder would be the folder of the input file {path}", _ELSEWHERE)
    for folder in folders:
        if _inside(real_out, os.path.realpath(folder)):
            raise WorkspaceError(f"{name}: output folder would be inside the input {folder}", _ELSEWHERE)
    return real_out


def check_output_dir(out_dir: str, *input_paths: str, folders: Sequence[str] = ()) -> str:
    """The real path of output folder ``out_dir``, refusing one in the user's inputs; nothing is created.

    For an input folder, ``out_dir`` may be neither the folder nor anywhere below it (a later scan of
    the folder would find our outputs). For an input file (or a path that does not exist), ``out_dir`` may
    not be the file's own folder; pass the file's folder in ``folders`` (:func:`input_folders_of`) to forbid
    everything below it too. ``folders`` are input folders whether or not they exist yet (a workspace's
    :attr:`Workspace.input_folders`). Paths are compared after resolving symbolic links. Raises
    :class:`WorkspaceError` naming ``out_dir`` and the input.
    """
    return _refuse_inside_inputs(out_dir, out_dir, input_paths, folders)


def ensure_output_dir(out_dir: str, *input_paths: str, folders: Sequence[str] = ()) -> str:
    """:func:`check_output_dir`, then create the folder; returns its real path. The check runs before
    anything is written."""
    real_out = check_output_dir(out_dir, *input_paths, folders=folders)
    if os.path.exists(real_out) and not os.path.isdir(real_out):
        raise WorkspaceError(f"{out_dir}: is a file, not a folder", "give an output folder")
    try:
        os.makedirs(real_out, exist_ok=True)
    except OSError as exc:
        raise WorkspaceError(f"{out_dir}: cannot create output folder ({exc.strerror})") from exc
    return real_out


@contextlib.contextmanager
def new_folders_removed_on_failure(*paths: str) -> Iterator[None]:
    """Remove, when the ``with`` block raises (Ctrl-C too), the folders of ``paths`` that did not exist before it and
    are empty after it -- from the deepest up, so a failed ``tf_dump -d NEW`` leaves no ``NEW/tf/graph`` behind. A
    folder that holds anything stays, and the exception goes on."""
    missing = []
    for path in paths:
        path = os.path.abspath(path)
        while not os.path.exists(path):
            missing.append(path)
            parent = os.path.dirname(path)
            if parent == path:
                break
            path = parent
    try:
        yield
    except BaseException:
        for folder in sorted(set(missing), key=len, reverse=True):
            try:
                os.rmdir(folder)  # only an empty folder
            except OSError:
                pass
        raise


def check_output_file(out_file: str, *input_paths: str, folders: Sequence[str] = ()) -> str:
    """Output file ``out_file`` as ``{real path of its folder}/{its name}``, refusing one in the user's inputs;
    nothing is created.

    The file's folder obeys :func:`check_output_dir`'s rules (same ``input_paths`` and ``folders``), and the
    file may not be one of the ``input_paths`` itself (a symbolic link to it included). A symbolic link at
    ``out_file`` is not followed: an atomic write replaces it. Raises :class:`WorkspaceError` naming
    ``out_file``.
    """
    real_file = os.path.realpath(out_file)
    for path in input_paths:
        if real_file == os.path.realpath(path):
            raise WorkspaceError(f"{out_file}: the output file is the input {path}", "choose another output file")
    folder = _refuse_inside_inputs(out_file, os.path.dirname(os.path.abspath(out_file)), input_paths, folders)
    return os.path.join(folder, os.path.basename(out_file))


def ensure_output_file(out_file: str, *input_paths: str, folders: Sequence[str] = ()) -> str:
    """:func:`check_output_file`, then create the file's folder; returns the checked path. The file itself
    is left to the caller's atomic write."""
    path = check_output_file(out_file, *input_paths, folders=folders)
    ensure_output_dir(os.path.dirname(path))
    return path


def output_file_name(text: str, suffix: str = "") -> str:
    """A file name for an output named after ``text`` (an op or tensor name from the user's files), ending in
    ``suffix``.

    ``/ \\ : * ? " < > |``, control characters (NUL included) and lone surrogates become ``_``, so the name
    can be neither a path nor refused by ``open``. A name longer than 255 UTF-8 bytes (Linux's limit) keeps
    as much of its start as fits and ends in ``-`` and 16 hex digits of ``text``'s SHA-256, so two long names
    sharing a start stay two files; ``suffix`` is always kept.

    >>> output_file_name("scope/conv:0", ".npy"), output_file_name("a" + chr(0) + "b")
    ('scope_conv_0.npy', 'a_b')
    >>> name = output_file_name("x" * 300, ".dot"); len(name), name.endswith(".dot")
    (255, True)
    """
    stem = _NOT_IN_FILE_NAMES.sub("_", text)
    if len((stem + suffix).encode("utf-8")) <= MAX_FILE_NAME_BYTES:
        return stem + suffix
    import hashlib  # here: its OpenSSL binding costs 2 ms of every command's start-up

    digest = "-" + hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]
    room = MAX_FILE_NAME_BYTES - len((digest + suffix).encode("utf-8"))
    return stem.encode("utf-8")[:max(room, 0)].decode("utf-8", "ignore") + digest + suffix
