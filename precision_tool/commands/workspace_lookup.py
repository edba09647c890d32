"""Finding things in a workspace: the NPU run's Build graph, its ops, its dump files, the reference files.

One :class:`WorkspaceLookup` per NPU run (``npu/debug_N``) answers every "which file / which op" question of
``ls``, ``ni``, ``pt``, ``cp`` and the shell's completion index, so the rules live in one place:

* the graph is the newest ``ge_proto_*_Build.txt`` in ``npu/debug_N/graph`` (or the one whose root graph
  is called ``-g NAME``), parsed once and kept while the file is unchanged;
* an op name is looked up as given, then by its sanitised form (``a/b.c`` -> ``a_b_c``, as dump file names
  spell it) when exactly one graph op sanitises to it; otherwise the error suggests close names;
* dump files are found by name under ``npu/debug_N/dump`` (no header is read); references are the ``.npy``
  files of ``tf/dump``.

In the shell the lookups live for the whole session (:func:`lookup_for` keeps them in the context's
:class:`~precision_tool.commands.registry.Session`); in the batch CLI each command makes a fresh one.
"""
from __future__ import annotations

import difflib
import os
from pathlib import Path
from typing import TYPE_CHECKING, Dict, List, Optional, Tuple, overload

from precision_tool.commands.registry import Context
from precision_tool.config import Workspace
from precision_tool.errors import WorkspaceError
from precision_tool.formats.dump_names import DumpOp, DumpScan, sanitize_op_name, scan_dump_folder
from precision_tool.formats.ge_graph import GraphModel, OpNode

if TYPE_CHECKING:  # typing.Literal is Python 3.8+; annotations are never evaluated at run time here
    from typing import Literal  # novermin (type checkers only)


def _signature(path) -> Tuple[str, int, int]:
    info = os.stat(path)
    return (os.fspath(path), info.st_mtime_ns, info.st_size)


class WorkspaceLookup:
    """Lookups in NPU run ``run`` (``npu/debug_{run}``) of the workspace at ``data_dir``."""

    def __init__(self, data_dir: str, run: int = 0):
        if run < 0:
            raise WorkspaceError(f"run index must be >= 0, not {run}")
        self.workspace = Workspace(os.fspath(data_dir))
        self.run = run
        self._graphs: Dict[str, Tuple[tuple, GraphModel]] = {}
        self._cache: Dict[str, Tuple[object, object]] = {}

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

    def require_workspace(self) -> None:
        """``WorkspaceError`` unless the workspace folder exists."""
        if not os.path.isdir(self.workspace.root):
            raise WorkspaceError(f"{self.workspace.root}: no such workspace folder",
                                 "pass -d DATA_DIR or set PRECISION_TOOL_DATA")

    # ------------------------------------------------------------------ graph
    def graph_file(self, graph_name: Optional[str] = None) -> Optional[Path]:
        """The Build graph file to read, or ``None`` when the run has no graph folder or no Build file.

        With ``graph_name``, the newest Build file whose root graph has that name (``WorkspaceError`` if
        none has).
        """
        from precision_tool.formats.ge_io import build_graph_files, find_build_graph

        if not os.path.isdir(self.graph_dir):
            return None
        if graph_name:
            return find_build_graph(self.graph_dir, graph_name)
        files = build_graph_files(self.graph_dir)
        return files[0] if files else None

    @overload
    def graph_model(self, graph_name: Optional[str] = None, required: Literal[True] = True) -> GraphModel: ...

    @overload
    def graph_model(self, graph_name: Optional[str] = None, *, required: bool) -> Optional[GraphModel]: ...

    def graph_model(self, graph_name: Optional[str] = None, required: bool = True) -> Optional[GraphModel]:
        """The parsed Build graph (kept until its file changes); ``None`` when absent and not ``required``."""
        from precision_tool.formats.ge_io import BUILD_GRAPH_HINT, read_ge_graph

        path = self.graph_file(graph_name)
        if path is None:
            if required:
                raise WorkspaceError(f"no GE Build graph (ge_proto_*_Build.txt) in {self.graph_dir}",
                                     BUILD_GRAPH_HINT)
            return None
        signature = _signature(path)
        cached = self._graphs.get(os.fspath(path))
        if cached is not None and cached[0] == signature:
            return cached[1]
        model = read_ge_graph(path)
        self._graphs[os.fspath(path)] = (signature, model)
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
        return scan_dump_folder(self.dump_dir)

    def dumped_op(self, op_name: str, scan: Optional[DumpScan] = None) -> Optional[DumpOp]:
        """The dump files of ``op_name`` (latest and older executions), or ``None``."""
        scan = scan if scan is not None else self.dump_scan(required=False)
        return scan.find(op_name) if scan is not None else None

    def find_dump_file(self, base_name: str) -> Optional[str]:
        """The path of the dump file called ``base_name`` somewhere under the run's dump folder."""
        scan = self.dump_scan(required=False)
        if scan is None:
            return None
        for op in scan.ops:
            for ref in (op.latest, *op.superseded):
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
                                                            mode="npu_vs_tf"))

    def _cached(self, name: str, key, build):
        cached = self._cache.get(name)
        if cached is not None and cached[0] == key:
            return cached[1]
        value = build()
        self._cache[name] = (key, value)
        return value


def lookup_for(ctx: Context, run: int = 0) -> WorkspaceLookup:
    """The :class:`WorkspaceLookup` of run ``run`` for this context, kept in ``ctx.session.lookups``: one per
    workspace and run for a whole shell session."""
    lookups = ctx.session.lookups
    key = (os.path.abspath(ctx.data_dir), run)
    if key not in lookups:
        lookups[key] = WorkspaceLookup(ctx.data_dir, run)
    return lookups[key]
