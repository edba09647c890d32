"""Finding things in a workspace: the NPU run's Build graph, its ops, its dump files, the reference files.

One :class:`WorkspaceLookup` per NPU run (``npu/debug_N``) answers every "which file / which op" question of ``ls``,
``ni``, ``pt``, ``cp``, ``replay`` and the shell's completion index, reading the dumps at its selection's step and
device; graphs and alignments are parsed once and kept while their files are unchanged.
See docs/internals/alignment.md#workspace-lookup for the graph, op-name and file rules.
"""
from __future__ import annotations

import copy
import difflib
import os
from pathlib import Path
from typing import TYPE_CHECKING, Dict, List, Optional, Tuple, Union, overload

from precision_tool.config import Workspace
from precision_tool.errors import WorkspaceError
from precision_tool.formats.dump_names import (DumpFileRef, DumpOp, DumpScan, ExceptionDumpRef, sanitize_op_name,
                                              scan_dump_folder)
from precision_tool.formats.dump_tree import DEFAULT_SELECTION, DumpSelection
from precision_tool.formats.ge_graph import GraphModel, OpNode

if TYPE_CHECKING:  # typing.Literal is Python 3.8+; annotations are never evaluated at run time here
    from typing import Literal  # novermin (type checkers only)


def _signature(path) -> Tuple[str, int, int]:
    info = os.stat(path)
    return (os.fspath(path), info.st_mtime_ns, info.st_size)


class WorkspaceLookup:
    """Lookups in NPU run ``run`` (``npu/debug_{run}``) of the workspace at ``data_dir``, its dumps read at
    ``selection``'s step and device (:meth:`reading` gives the same lookup, caches shared, at another)."""

    def __init__(self, data_dir: str, run: int = 0, selection: DumpSelection = DEFAULT_SELECTION):
        if run < 0:
            raise WorkspaceError(f"run index must be >= 0, not {run}")
        self.workspace = Workspace(os.fspath(data_dir))
        self.run = run
        self._graphs: Dict[str, Tuple[tuple, GraphModel]] = {}
        self._cache: Dict[str, Tuple[object, object]] = {}
        #: One line each about the last graph lookup: sub-folders skipped, and which per-process graph folder
        #: was used when that was not clear-cut. Commands that read the graph show them.
        self.graph_notes: Tuple[str, ...] = ()
        self.selection = selection

    def reading(self, selection: DumpSelection) -> "WorkspaceLookup":
        """This lookup (its graph and alignment caches shared) reading the dumps at ``selection``."""
        other = copy.copy(self)
        other.selection, other.graph_notes = selection, ()
        return other

    # ------------------------------------------------------------------ folders
    @property
    def run_label(self) -> str:
        return f"npu/debug_{self.run}"

    @property
    def dump_dir(self) -> str:
        return self.workspace.npu_dump(self.run)

    @property
    def graph_dir(self) -> str:
        return self.workspace.npu_graph(self.run)

    @property
    def reference_dir(self) -> str:
        return self.workspace.tf_dump

    def require_run(self) -> None:
        """``WorkspaceError`` when the workspace has no folder ``npu/debug_{run}`` (naming the runs it has)."""
        self.require_workspace()
        if os.path.isdir(self.workspace.npu_run(self.run)):
            return
        npu = os.path.join(self.workspace.root, "npu")
        runs = sorted(int(name[6:]) for name in (os.listdir(npu) if os.path.isdir(npu) else ())
                      if name.startswith("debug_") and name[6:].isdigit())
        have = f"runs here: {', '.join(map(str, runs))}" if runs else "no npu/debug_N folder at all"
        raise WorkspaceError(f"{self.workspace.root}: no NPU run {self.run} ({self.run_label}); {have}",
                             "choose one with -r N" if runs else "capture an NPU dump run first")

    def require_workspace(self) -> None:
        """``WorkspaceError`` unless the workspace folder exists."""
        self.workspace.require_root()

    # ------------------------------------------------------------------ graph
    def dump_device_id(self) -> Optional[int]:
        """The one ``{device_id}`` level of the run's dump tree, or ``None`` (no dump, or several devices)."""
        from precision_tool.formats.ge_graph_folders import dump_device_id

        return dump_device_id(self.dump_dir, self.selection.device) if os.path.isdir(self.dump_dir) else None

    def graph_choice(self, graph_name: Optional[str] = None):
        """The :class:`~precision_tool.formats.ge_graph_folders.BuildGraphChoice` of the run's graph folder, or
        ``None`` when there is no graph folder or no Build file in it (then without ``graph_name`` only).
        Sets :attr:`graph_notes`."""
        from precision_tool.formats.ge_graph_folders import choose_from_scan, scan_graph_folders

        self.graph_notes = ()
        if not os.path.isdir(self.graph_dir):
            return None
        scan = scan_graph_folders(self.graph_dir)
        self.graph_notes = scan.problems
        if not scan.folders and not graph_name:
            return None
        choice = choose_from_scan(scan, graph_name or None, self.dump_device_id())
        self.graph_notes = choice.notes
        return choice

    def graph_file(self, graph_name: Optional[str] = None) -> Optional[Path]:
        """The Build graph file to read, or ``None`` when the run has no graph folder or no Build file.

        With ``graph_name``, the newest Build file whose root graph has that name (``WorkspaceError`` if
        none has). CANN 8's per-process folders: see :meth:`graph_choice`.
        """
        choice = self.graph_choice(graph_name)
        return choice.path if choice is not None else None

    def graph_names(self) -> List[str]:
        """The root graph names of every Build file of the run (every per-process folder), for ``-g``."""
        from precision_tool.formats.ge_graph_folders import scan_graph_folders
        from precision_tool.formats.ge_io import build_graph_files, root_graph_name

        if not os.path.isdir(self.graph_dir):
            return []
        return [root_graph_name(path) for folder in scan_graph_folders(self.graph_dir).folders
                for path in build_graph_files(folder.path)]

    @overload
    def graph_model(self, graph_name: Optional[str] = None, required: Literal[True] = True) -> GraphModel: ...

    @overload
    def graph_model(self, graph_name: Optional[str] = None, *, required: bool) -> Optional[GraphModel]: ...

    def graph_model(self, graph_name: Optional[str] = None, required: bool = True) -> Optional[GraphModel]:
        """The parsed Build graph (kept until its file changes); ``None`` when absent and not ``required``."""
        from precision_tool.formats.ge_io import no_build_graph, read_ge_graph

        path = self.graph_file(graph_name)
        if path is None:
            if required:
                self.require_run()
                if os.path.isdir(self.graph_dir):  # its error names the per-process folders and skipped entries
                    from precision_tool.formats.ge_graph_folders import choose_build_graph

                    choose_build_graph(self.graph_dir)
                raise no_build_graph(self.graph_dir)
            return None
        signature = _signature(path)
        cached = self._graphs.get(os.fspath(path))
        if cached is not None and cached[0] == signature:
            model = cached[1]
        else:
            model = read_ge_graph(path)
            self._graphs[os.fspath(path)] = (signature, model)
        self.graph_notes = tuple(dict.fromkeys(self.graph_notes + model.notes))  # what the file could not carry
        return model

    def find_op(self, name: str, graph_name: Optional[str] = None) -> OpNode:
        """The graph op called ``name`` (or whose sanitised name is ``name``); ``WorkspaceError`` otherwise."""
        model = self.graph_model(graph_name)
        op = model.find_op(name)
        if op is not None:
            return op
        wanted = sanitize_op_name(name)
        matches = [op for _, op in model.all_ops() if sanitize_op_name(op.name) == wanted]
        if len(matches) == 1:
            return matches[0]
        names = [op.name for _, op in model.all_ops()]
        if len(matches) > 1:
            raise WorkspaceError(f"{name!r} could be op " + " or ".join(repr(op.name) for op in matches),
                                 "give the name with its / and . as in the graph")
        close = difflib.get_close_matches(name, names, n=3, cutoff=0.6)
        hint = f"did you mean {', '.join(close)}?" if close else "list ops with 'ls -n PATTERN'"
        raise WorkspaceError(f"no op {name!r} in graph {model.root.name} of {self.run_label}", hint)

    def op_names(self) -> List[str]:
        """Every op name of the graph (root graph first), or of the dump files when there is no graph."""
        model = self.graph_model(required=False)
        if model is not None:
            return list(dict.fromkeys(op.name for _, op in model.all_ops()))
        scan = self.dump_scan(required=False)
        return [op.op_name for op in scan.ops] if scan is not None else []

    # ------------------------------------------------------------------ dumps
    def dump_scan(self, required: bool = True) -> Optional[DumpScan]:
        """Dump files of the run by name (headers are not read); ``None`` without a dump folder if not
        ``required``."""
        if not os.path.isdir(self.dump_dir):
            if required:
                raise WorkspaceError(f"{self.dump_dir}: no NPU dump folder",
                                     "collect a dump first (see docs/capture-session.md)")
            return None
        return scan_dump_folder(self.dump_dir, self.selection)

    def dumped_op(self, op_name: str, scan: Optional[DumpScan] = None) -> Optional[DumpOp]:
        """The dump files of ``op_name`` (latest and older executions), or ``None``."""
        scan = scan if scan is not None else self.dump_scan(required=False)
        return scan.find(op_name) if scan is not None else None

    def find_dump_file(self, base_name: str) -> Optional[str]:
        """The path of the dump file (or exception dump) called ``base_name`` somewhere under the run's dump
        folder."""
        scan = self.dump_scan(required=False)
        if scan is None:
            return None
        refs: List[Union[DumpFileRef, ExceptionDumpRef]] = [*scan.exception_dumps]
        refs += [ref for op in scan.ops for ref in (op.latest, *op.superseded)]
        for ref in refs:
            if os.path.basename(ref.path) == base_name or ref.name.file_name == base_name:
                return ref.path
        return None

    # ------------------------------------------------------------------ references
    def reference_files(self):
        """The reference ``.npy`` files of ``tf/dump`` (latest per tensor, headers read); ``[]`` without."""
        from precision_tool.formats.npy_dir import read_npy_dir

        if not os.path.isdir(self.reference_dir):
            return []
        key = (os.stat(self.reference_dir).st_mtime_ns,)
        return self._cached("references", key, lambda: read_npy_dir(self.reference_dir))

    def find_reference_file(self, base_name: str) -> Optional[str]:
        """``tf/dump/base_name`` (or ``base_name + '.npy'``) when it is a file there."""
        for name in (base_name, base_name + ".npy"):
            path = os.path.join(self.reference_dir, name)
            if os.path.isfile(path):
                return path
        return None

    def alignment(self):
        """The run's NPU-vs-TF alignment (headers only), kept while the graph, dumps and references are the
        same; ``None`` without dumps or references."""
        from precision_tool.alignment import align

        scan = self.dump_scan(required=False)
        if scan is None or not os.path.isdir(self.reference_dir):
            return None
        graph_path = self.graph_file()
        key = (None if graph_path is None else _signature(graph_path),
               tuple(op.latest.path for op in scan.ops), os.stat(self.reference_dir).st_mtime_ns)
        graph = self.graph_model(required=False)
        return self._cached("alignment", key, lambda: align(self.dump_dir, self.reference_dir, graph,
                                                            mode="npu_vs_tf", selection=self.selection))

    def _cached(self, name: str, key, build):
        cached = self._cache.get(name)
        if cached is not None and cached[0] == key:
            return cached[1]
        value = build()
        self._cache[name] = (key, value)
        return value
