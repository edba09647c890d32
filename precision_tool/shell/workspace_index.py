"""What the completer offers from the workspace: op names, types, passes, kernels, dump and npy file names.

Nothing is read until the first completion asks for it (the shell starts without touching the workspace),
and then only names: the Build graph, file names of the dump folder and the ``.npy`` headers of ``tf/dump``
(no tensor payload). Each list is kept until the graph file or a folder's modification time changes. A
workspace that cannot be read completes nothing: completion never raises.
"""
from __future__ import annotations

import os
import threading
from typing import TYPE_CHECKING, Callable, Dict, List, Tuple

from precision_tool.commands import arg_hints
from precision_tool.errors import PrecisionToolError

if TYPE_CHECKING:
    from precision_tool.alignment.workspace_lookup import WorkspaceLookup


class WorkspaceIndex:
    """Completion values by hint (see :mod:`precision_tool.commands.arg_hints`), computed lazily.

    ``lookup`` returns the :class:`~precision_tool.alignment.workspace_lookup.WorkspaceLookup` to read
    (the shell passes the one its commands use, so the graph is parsed once per session).
    """

    def __init__(self, lookup: Callable[[], WorkspaceLookup]):
        self._lookup = lookup
        self._lock = threading.Lock()
        self._cache: Dict[str, Tuple[tuple, List[str]]] = {}
        self._builders = {
            arg_hints.OP_NAME: self._op_names,
            arg_hints.OP_TYPE: self._op_types,
            arg_hints.PASS_NAME: lambda lookup: self._graph_values(lookup, lambda op: op.pass_names),
            arg_hints.KERNEL_NAME: lambda lookup: self._graph_values(lookup, lambda op: (op.kernel_name,)),
            arg_hints.GRAPH_NAME: self._graph_names,
            arg_hints.TENSOR: self._tensor_names,
        }

    def values(self, hint: str) -> List[str]:
        """The sorted values for ``hint``; ``[]`` for hints the index does not serve or on any read error."""
        builder = self._builders.get(hint)
        if builder is None:
            return []
        with self._lock:
            try:
                lookup = self._lookup()
                key = self._freshness(lookup)
                cached = self._cache.get(hint)
                if cached is not None and cached[0] == key:
                    return cached[1]
                values = sorted({value for value in builder(lookup) if value})
            except (PrecisionToolError, OSError):
                return []
            self._cache[hint] = (key, values)
            return values

    def tensor_selectors(self, op_name: str) -> List[str]:
        """``OP:input:k`` and ``OP:output:k`` for a graph op (its data inputs and output descs), else ``[]``."""
        with self._lock:
            try:
                model = self._lookup().graph_model(required=False)
            except (PrecisionToolError, OSError):
                return []
        op = model.find_op(op_name) if model is not None else None
        if op is None:
            return []
        return ([f"{op.name}:input:{k}" for k in range(len(op.data_inputs))]
                + [f"{op.name}:output:{k}" for k in range(len(op.output_descs))])

    @staticmethod
    def _freshness(lookup) -> tuple:
        stamps: List[object] = []
        for path in (lookup.graph_dir, lookup.dump_dir, lookup.reference_dir):
            try:
                stamps.append(os.stat(path).st_mtime_ns)
            except OSError:
                stamps.append(None)
        graph = lookup.graph_file()
        if graph is not None:
            info = os.stat(graph)
            stamps.append((os.fspath(graph), info.st_mtime_ns, info.st_size))
        return tuple(stamps)

    @staticmethod
    def _op_names(lookup) -> List[str]:
        return lookup.op_names()

    @staticmethod
    def _op_types(lookup) -> List[str]:
        """Op types of the graph, else of the dump file names."""
        model = lookup.graph_model(required=False)
        if model is not None:
            return [op.type for _, op in model.all_ops()]
        scan = lookup.dump_scan(required=False)
        return [op.op_type for op in scan.ops] if scan is not None else []

    @staticmethod
    def _graph_values(lookup, field) -> List[str]:
        model = lookup.graph_model(required=False)
        return [value for _, op in model.all_ops() for value in field(op)] if model is not None else []

    @staticmethod
    def _graph_names(lookup) -> List[str]:
        """Root graph names of every Build file, in every per-process graph folder (CANN 8) too."""
        return lookup.graph_names()

    @staticmethod
    def _tensor_names(lookup) -> List[str]:
        """Dumped op names (graph spelling when the graph has them), dump file names, reference file names."""
        names: List[str] = []
        scan = lookup.dump_scan(required=False)
        model = lookup.graph_model(required=False)
        if scan is not None:
            dumped = {op.op_name for op in scan.ops}
            if model is not None:
                from precision_tool.formats.dump_names import sanitize_op_name

                names += [op.name for _, op in model.all_ops() if sanitize_op_name(op.name) in dumped]
            else:
                names += sorted(dumped)
            names += [os.path.basename(op.latest.path) for op in scan.ops]
        if os.path.isdir(lookup.reference_dir):
            names += [name for name in os.listdir(lookup.reference_dir) if name.endswith(".npy")]
        return names

