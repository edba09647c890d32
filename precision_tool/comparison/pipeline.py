"""One comparison job from folders: :class:`CompareRequest` in, a :class:`ComparisonResult` out.

``compare``, ``vc`` and ``ac -c`` all run this: check the folders, load the graphs, align
(:func:`precision_tool.alignment.align`), compare (:func:`~precision_tool.comparison.engine.compare_alignment`)
and record what was compared and how long aligning took. Writing the outputs is
:func:`precision_tool.reports.result_outputs.write_outputs`; the exit code is
:meth:`ComparisonResult.exit_code`.
"""
from __future__ import annotations

import os
import time
from dataclasses import dataclass, replace
from typing import Any, Callable, Optional, Tuple

from precision_tool.alignment import Alignment
from precision_tool.comparison.result import ComparisonResult
from precision_tool.errors import WorkspaceError
from precision_tool.formats.dump_tree import DumpSelection
from precision_tool.metrics import DEFAULT_COSINE_THRESHOLD

Progress = Callable[[int, int], None]


@dataclass(frozen=True)
class CompareRequest:
    """The inputs of one comparison.

    ``graph``/``reference_graph``: a file, a ``DUMP_GRAPH_PATH`` folder (flat or CANN 8's per-process folders;
    :func:`~precision_tool.alignment.resolve_graph` picks the file by the dump's device), or ``None``; ``mode``:
    ``auto``, ``npu_vs_tf`` or ``npu_vs_npu``; ``cosine``: the gate (``None`` = off); ``workers``: processes
    (``None`` = every usable CPU); ``selection``: the step and device to read of a dump tree holding several
    (``None``: the newest step of the lowest device), whose log gets the scans' choices; ``cluster``: a Dask
    scheduler's address to compare on (``""``: this machine; :mod:`~precision_tool.comparison.cluster`).
    """

    npu_dir: str
    reference: str
    graph: Optional[str] = None
    mode: str = "auto"
    reference_graph: Optional[str] = None
    cosine: Optional[float] = DEFAULT_COSINE_THRESHOLD
    workers: Optional[int] = None
    selection: Optional[DumpSelection] = None
    cluster: str = ""

    @property
    def input_paths(self):
        """Every input given, for the check that no output goes inside one."""
        return [p for p in (self.npu_dir, self.reference, self.graph, self.reference_graph) if p]


def check_request(request: CompareRequest) -> None:
    """Raise :class:`WorkspaceError` when the NPU or the reference folder is missing."""
    for label, path in (("NPU dump", request.npu_dir), ("reference", request.reference)):
        if not os.path.isdir(path):
            raise WorkspaceError(f"{path}: no such folder", f"give the {label} folder")


@dataclass(frozen=True)
class AlignedRequest:
    """A request whose folders and graphs were read and aligned: what is left is comparing. ``notes``: one line
    each about which Build graph a graph folder gave (:func:`~precision_tool.alignment.resolve_graph`)."""

    request: CompareRequest
    alignment: Alignment
    graph: Any
    align_s: float
    notes: Tuple[str, ...] = ()


def align_request(request: CompareRequest) -> AlignedRequest:
    """Check the folders, load the graphs and align. Raises the typed errors of a missing folder or an
    unreadable graph, before any tensor is read (so a caller can plan its outputs only after this)."""
    from precision_tool.alignment import align, load_graph, resolve_graph

    started = time.perf_counter()
    check_request(request)
    graph_file, notes = resolve_graph(request.graph, request.npu_dir, request.selection)
    reference_graph_file, reference_notes = resolve_graph(request.reference_graph, request.reference,
                                                          request.selection)
    graph, reference_graph = load_graph(graph_file), load_graph(reference_graph_file)
    alignment = align(request.npu_dir, request.reference, graph, mode=request.mode,
                      reference_graph=reference_graph, selection=request.selection)
    read_notes = tuple(note for model in (graph, reference_graph) for note in getattr(model, "notes", ()))
    return AlignedRequest(request, alignment, graph, time.perf_counter() - started,
                          notes + reference_notes + read_notes)


def compare_aligned(aligned: AlignedRequest, progress: Optional[Progress] = None,
                    workers_started: Optional[Callable[[], None]] = None) -> ComparisonResult:
    """Compare every aligned pair; the result records the inputs (absolute paths) and the time aligning took.
    ``workers_started``: see :func:`~precision_tool.comparison.engine.compare_alignment`."""
    from precision_tool.comparison.engine import compare_alignment

    request = aligned.request
    result = compare_alignment(aligned.alignment, graph=aligned.graph, cosine_threshold=request.cosine,
                               workers=request.workers, progress=progress, workers_started=workers_started,
                               cluster=request.cluster)
    inputs = {"npu": os.path.abspath(request.npu_dir), "reference": os.path.abspath(request.reference),
              "graph": os.path.abspath(request.graph) if request.graph else None,
              "reference_graph": os.path.abspath(request.reference_graph) if request.reference_graph else None}
    return replace(result, timing=replace(result.timing, align_s=aligned.align_s), inputs=inputs)


def run_comparison(request: CompareRequest, progress: Optional[Progress] = None) -> ComparisonResult:
    """:func:`align_request` then :func:`compare_aligned`."""
    return compare_aligned(align_request(request), progress)
