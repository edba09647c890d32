"""The NPU side of an alignment: dumped ops with their headers, and which graph op each one is.

A dump file's name carries the op name sanitised (``/``, ``.``, ``\\`` and space -> ``_``); its header carries
the raw name. The raw name is preferred everywhere: it tells ``a/b`` from ``a_b``. Only when a header has no
op name does the file name decide, and then a graph op is chosen only if exactly one graph op sanitises to it.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Dict, List, Optional, Set, Tuple, Union

from precision_tool.errors import PrecisionToolError, WorkspaceError
from precision_tool.formats.dump_file import DumpFile, TensorEntry, read_dump_header
from precision_tool.formats.dump_names import DumpOp, sanitize_op_name, scan_dump_folder
from precision_tool.formats.dump_tree import Choice, DumpSelection
from precision_tool.formats.ge_graph import Graph, GraphModel, OpNode, TensorDesc
from precision_tool.formats import dtypes
from precision_tool.formats.tensor_kind import INPUT

# Op types GE keeps in a Build graph that are not executed as tasks, so never dumped: not reported as
# "graph op without a dump".
NOT_DUMPED_OP_TYPES = frozenset({
    "Data", "RefData", "AippData", "Const", "Constant", "Variable", "VariableV2", "NetOutput", "PlaceHolder",
    "End", "StreamActive", "StreamSwitch", "Send", "Recv", "MemcpyAsync", "NoOp",
})


def why_not_dumped(op_type: str, dump_dir: str) -> str:
    """Why a graph op of ``op_type`` has no dump file under ``dump_dir``, as far as can be told: never for
    :data:`NOT_DUMPED_OP_TYPES` (not tasks); no dump folder at all; else left out by the dump settings."""
    if op_type in NOT_DUMPED_OP_TYPES:
        return "ops GE does not run as tasks (Data, Const, ...) are never dumped"
    if not os.path.isdir(dump_dir):
        return f"there is no dump folder {dump_dir}"
    if not op_type:
        return "no op of that name was dumped: ls lists the dumped ops"
    return (f"a {op_type} op runs as a task, so the dump settings left it out (dump_mode, dump_layer or "
            "dump_step) or it did not run in the dumped step")


@dataclass(frozen=True)
class DumpedOp:
    """One dumped op: its latest file and that file's header (``None`` when unreadable, see ``error``)."""

    op: DumpOp
    header: Optional[DumpFile]
    error: str = ""

    @property
    def name(self) -> str:
        """The raw op name from the header, else the (sanitised) name from the file name -- also when the header's
        name is another op's (:attr:`names_disagree`)."""
        return self.header.op_name if self.has_raw_name else self.op.op_name  # type: ignore[union-attr]

    @property
    def has_raw_name(self) -> bool:
        return self.header is not None and bool(self.header.op_name) and not self.names_disagree

    @property
    def names_disagree(self) -> bool:
        """The header names another op than the file name does (``/``, ``.``, ``\\`` and space aside): a header
        written over, or a file renamed. The file name is then taken, as GE derived it from the op it dumped, and
        the alignment's coverage says so."""
        return (self.header is not None and bool(self.header.op_name)
                and sanitize_op_name(self.header.op_name) != self.op.op_name)

    @property
    def file_op_name(self) -> str:
        return self.op.op_name

    @property
    def op_type(self) -> str:
        return self.op.op_type

    @property
    def path(self) -> str:
        return self.op.latest.path

    @property
    def timestamp(self) -> int:
        return self.op.latest.name.timestamp

    def entries(self, kind: str) -> Tuple[TensorEntry, ...]:
        if self.header is None:
            return ()
        return self.header.inputs if kind == INPUT else self.header.outputs


def read_dumped_ops(dump_dir: Union[str, os.PathLike], selection: Optional[DumpSelection] = None,
                    statistics: bool = False) -> Tuple[List[DumpedOp], Tuple[Tuple[str, str], ...], Choice]:
    """Every op dumped under ``dump_dir`` (recursively; one step of one device of a tree holding several:
    ``selection``, else the command's), latest file each, by dump time; headers read -- with ``(path, message)``
    of the files that could not even be identified (hashed names whose ``mapping.csv`` cannot be read:
    :attr:`~precision_tool.formats.dump_names.DumpScan.unresolved`), and the step and device read
    (:attr:`~precision_tool.formats.dump_names.DumpScan.choice`, whose note is ``""`` when there was nothing to
    choose). With ``statistics``, the ops of a ``dump_data="stats"`` run instead: each op's latest statistics CSV,
    read as the header of the dump it stands for (:func:`~precision_tool.formats.stats_csv.stats_header`).

    A header that cannot be read does not stop the others: the op is kept with ``header=None`` and the
    error message, for the coverage report. A folder holding no file of the kind asked for, but the other
    (statistics and no tensor dump, or the reverse), is a :class:`WorkspaceError`: there is nothing to pair.
    """
    from precision_tool.formats.stats_csv import read_stats_csv, stats_header

    if not os.path.isdir(dump_dir):
        raise WorkspaceError(f"{os.fspath(dump_dir)}: no such folder", "give the folder that holds the NPU dump files")
    scan = scan_dump_folder(dump_dir, selection)
    if statistics and not scan.stats:
        raise WorkspaceError(f"{os.fspath(dump_dir)}: no statistics dump (.csv files of dump_data=\"stats\")")
    if not statistics and not scan.ops and scan.stats:
        files = f"{len(scan.stats)} .csv file{'' if len(scan.stats) == 1 else 's'}"  # one per op: its latest
        raise WorkspaceError(f"{os.fspath(dump_dir)}: holds statistics dumps only ({files} of dump_data=\"stats\"), "
                             "no tensor dump to compare",
                             "'ac -c' judges statistics and names the ops to dump in full; compare needs a tensor "
                             "dump (dump_data=\"tensor\", the default)")
    found = []
    for op in scan.stats if statistics else scan.ops:
        try:
            header = stats_header(read_stats_csv(op.latest.path)) if statistics else read_dump_header(op.latest.path)
            found.append(DumpedOp(op, header))
        except PrecisionToolError as error:
            found.append(DumpedOp(op, None, str(error)))
    return found, scan.unresolved, scan.choice


def graphs_of(graph: Union[Graph, GraphModel, None]) -> Tuple[Graph, ...]:
    if graph is None:
        return ()
    if isinstance(graph, Graph):
        return (graph,)
    return tuple(graph.graphs)


class GraphIndex:
    """Ops of one GE graph dump (root graph and subgraphs) by name and by sanitised name, built once."""

    def __init__(self, graph: Union[Graph, GraphModel]):
        self.graphs = graphs_of(graph)
        self.by_name: Dict[str, OpNode] = {}
        self.by_sanitised: Dict[str, List[str]] = {}
        for g in self.graphs:
            for op in g.ops:
                if op.name in self.by_name:
                    continue
                self.by_name[op.name] = op
                self.by_sanitised.setdefault(sanitize_op_name(op.name), []).append(op.name)
        self._consumers: Optional[Dict[str, set]] = None

    def find(self, name: str) -> Optional[OpNode]:
        return self.by_name.get(name)

    def match_dump(self, dumped: DumpedOp) -> Tuple[Optional[OpNode], str]:
        """``(graph op, problem)`` for a dumped op: by raw header name, else by sanitised file name when only
        one graph op has it. ``problem`` is non-empty when several graph ops could be meant."""
        if dumped.has_raw_name:
            op = self.by_name.get(dumped.name)
            if op is not None:
                return op, ""
        candidates = self.by_sanitised.get(sanitize_op_name(dumped.name), ())
        if len(candidates) == 1:
            return self.by_name[candidates[0]], ""
        if len(candidates) > 1:
            return None, (f"dump file {os.path.basename(dumped.path)} could be graph op "
                          + " or ".join(repr(name) for name in candidates) + " (names differ only in / . \\ or space)")
        return None, ""

    def order(self) -> List[str]:
        """Op names, every graph in topological order, root graph first."""
        names: List[str] = []
        seen = set()
        for g in self.graphs:
            for op in g.topological_order().ops:
                if op.name not in seen:
                    seen.add(op.name)
                    names.append(op.name)
        return names

    def tf_names(self) -> Set[str]:
        """Every TF op name the graph mentions: ``_datadump_original_op_names`` and output origin names."""
        names: Set[str] = set()
        for op in self.by_name.values():
            names.update(op.original_op_names)
            names.update(desc.origin_name for desc in op.output_descs if desc.origin_name)
        return names

    def data_inputs(self) -> Dict[str, Tuple[Tuple[str, int], ...]]:
        return {name: tuple((ref.producer, ref.index) for ref in op.data_inputs)
                for name, op in self.by_name.items()}

    def consumers(self, name: str) -> set:
        """Names of ops reading any output of ``name`` through a data edge (index built on first use)."""
        if self._consumers is None:
            table: Dict[str, set] = {}
            for op in self.by_name.values():
                for ref in op.data_inputs:
                    table.setdefault(ref.producer, set()).add(op.name)
            self._consumers = table
        return self._consumers.get(name, set())


def input_desc(op: OpNode, k: int) -> Optional[TensorDesc]:
    """The graph's desc of dumped input ``k`` (the k-th data input; empty optional inputs keep their desc
    slot in GE's list, control edges have none)."""
    position = -1
    seen = -1
    for slot, ref in enumerate(ref for ref in op.inputs if not ref.is_control):
        if not ref.is_empty:
            seen += 1
            if seen == k:
                position = slot
                break
    if position < 0 or position >= len(op.input_descs):
        return None
    return op.input_descs[position]


def origin_of(desc: Optional[TensorDesc], entry: Optional[TensorEntry]):
    """``(format, shape, format_from, shape_from)``: the graph desc's origin format/shape, else the header's."""
    fmt, fmt_from, shape, shape_from = "", "", None, ""
    if desc is not None and desc.origin_format:
        fmt, fmt_from = desc.origin_format, "graph"
    elif entry is not None and entry.original_format_code:
        fmt, fmt_from = dtypes.format_name(entry.original_format_code), "header"
    if desc is not None and desc.origin_shape is not None:
        shape, shape_from = desc.origin_shape, "graph"
    elif entry is not None and entry.original_shape is not None:
        shape, shape_from = entry.original_shape, "header"
    return fmt, shape, fmt_from, shape_from
