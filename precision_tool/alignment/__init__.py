"""Alignment: which NPU tensor is compared with which reference tensor, and what is left out.

One entry point, :func:`align`. It reads names and dump headers only (never a payload) and returns an
:class:`~precision_tool.alignment.model.Alignment`: the pairs, in producer-first order, each with the rule that
matched it; the NPU tensors left out, each with its reason; and a :class:`Coverage` report.
:meth:`Alignment.first_divergence` names the op that most likely introduced an error (:mod:`.divergence`).
The rules, the modules and an example: docs/internals/alignment.md#entry-point.
"""
from __future__ import annotations

import os
import re
from typing import Iterable, Optional, Tuple, Union

from precision_tool.alignment.divergence import Divergence, DivergentOp, find_first_divergence
from precision_tool.alignment.graph_alignment import LAYOUT_ONLY_OP_TYPES
from precision_tool.alignment.model import (MODE_NPU_VS_NPU, MODE_NPU_VS_TF, RULES, AlignedPair, Alignment, Coverage,
                                            NpuTensorRef, NpyTensorRef, Unaligned)
from precision_tool.alignment.npu_vs_npu import align_npu_vs_npu
from precision_tool.alignment.npu_vs_tf import align_npu_vs_tf
from precision_tool.errors import UsageError, WorkspaceError
from precision_tool.formats.ge_graph import Graph, GraphModel
from precision_tool.formats.dump_tree import DumpSelection
from precision_tool.formats.ge_graph_folders import choose_build_graph, dump_device_id
from precision_tool.formats.ge_io import read_ge_graph

MODE_AUTO = "auto"
_NPY_NAME = re.compile(r"[^.]+\.[0-9]+\.[0-9]+\.npy")  # {op}.{output}.{timestamp}.npy, as npy_dir reads
GraphLike = Union[str, "os.PathLike[str]", Graph, GraphModel, None]

__all__ = ["align", "load_graph", "resolve_graph", "Alignment", "AlignedPair", "Coverage",
           "NpuTensorRef", "NpyTensorRef", "Unaligned", "Divergence", "DivergentOp", "find_first_divergence",
           "LAYOUT_ONLY_OP_TYPES", "RULES", "MODE_AUTO", "MODE_NPU_VS_TF", "MODE_NPU_VS_NPU"]


def align(npu_dump_dir, reference, graph: GraphLike = None, *, mode: str = MODE_AUTO,
          reference_graph: GraphLike = None, tf_op_names: Iterable[str] = (),
          selection: Optional[DumpSelection] = None) -> Alignment:
    """Pair the NPU tensors dumped under ``npu_dump_dir`` with reference tensors.

    Parameters
    ----------
    npu_dump_dir : str or os.PathLike
        Folder of NPU dump files (searched recursively; the latest file of each op is used).
    reference : str or os.PathLike
        A flat folder of TF ``.npy`` files (``{op}.{output}.{timestamp}.npy``) or, NPU vs NPU, the other run's
        dump folder.
    graph : str, os.PathLike, Graph, GraphModel or None
        The NPU run's GE Build graph: a file (text or JSON), a ``DUMP_GRAPH_PATH`` folder (flat, or CANN 8's
        per-process folders: see :func:`resolve_graph`), a loaded ``GraphModel``/``Graph``, or ``None`` (name
        rules only).
    mode : {"auto", "npu_vs_tf", "npu_vs_npu"}
        ``"auto"``: NPU vs TF when ``reference`` directly holds files named like reference tensors, else NPU vs NPU.
    reference_graph : same forms as ``graph``, optional
        NPU vs NPU only: the other run's graph.
    tf_op_names : iterable of str
        Extra TF op names for the ambiguity check of reference file names (NPU vs TF).
    selection : DumpSelection, optional
        The step and device to read of a dump tree holding several (``None``: the newest step of the lowest
        device); a reference tree follows it.

    Returns
    -------
    Alignment

    Raises
    ------
    WorkspaceError
        A folder or graph file is missing.
    UsageError
        An unknown mode, or ``reference_graph`` in NPU-vs-TF mode.
    """
    if mode == MODE_AUTO:
        mode = MODE_NPU_VS_TF if _holds_reference_npy(reference) else MODE_NPU_VS_NPU
    if mode == MODE_NPU_VS_TF:
        if reference_graph is not None:
            raise UsageError("a reference graph is only used when comparing two NPU runs",
                             "drop it, or pass mode='npu_vs_npu'")
        return align_npu_vs_tf(npu_dump_dir, reference, load_graph(graph, npu_dump_dir, selection),
                               tf_op_names, selection)
    if mode == MODE_NPU_VS_NPU:
        return align_npu_vs_npu(npu_dump_dir, reference, load_graph(graph, npu_dump_dir, selection),
                                load_graph(reference_graph, reference, selection), selection)
    raise UsageError(f"unknown alignment mode {mode!r}", f"use {MODE_AUTO}, {MODE_NPU_VS_TF} or {MODE_NPU_VS_NPU}")


def load_graph(graph: GraphLike, dump_dir=None,
               selection: Optional[DumpSelection] = None) -> Optional[Union[Graph, GraphModel]]:
    """A loaded graph from any form :func:`align` accepts (``None`` stays ``None``).

    A folder is resolved by :func:`resolve_graph` (``dump_dir``: the run's NPU dump, whose device picks among
    CANN 8's per-process graph folders); its notes are dropped here, so callers that show them call
    :func:`resolve_graph` first and pass its file.
    """
    if graph is None or isinstance(graph, (Graph, GraphModel)):
        return graph
    path, _ = resolve_graph(graph, dump_dir, selection)
    return read_ge_graph(path) if path is not None else None


def resolve_graph(graph, dump_dir=None,
                  selection: Optional[DumpSelection] = None) -> Tuple[Optional[str], Tuple[str, ...]]:
    """``(graph file, notes)`` for a graph given by path: a file stays itself; a folder is ``DUMP_GRAPH_PATH``,
    and :func:`~precision_tool.formats.ge_graph_folders.choose_build_graph` picks its Build graph -- among
    CANN 8's ``pid_*_deviceid_*`` folders, the one of ``dump_dir``'s device (the ``{device_id}`` level of
    that dump tree) when it is known. The notes (one line each) say which folder was used when it was not
    clear-cut, and which sub-folders were skipped. ``None`` stays ``None``.

    Raises :class:`WorkspaceError` when a folder holds no Build graph.
    """
    if graph is None:
        return None, ()
    path = os.fspath(graph)
    if not os.path.isdir(path):
        return path, ()
    wanted = selection.device if selection is not None else None
    choice = choose_build_graph(path, device_id=dump_device_id(dump_dir, wanted) if dump_dir else None)
    return os.fspath(choice.path), choice.notes


def _holds_reference_npy(folder) -> bool:
    folder = os.fspath(folder)
    if not os.path.isdir(folder):
        raise WorkspaceError(f"{folder}: no such folder", "give the reference .npy folder or the other NPU dump")
    with os.scandir(folder) as entries:
        return any(_NPY_NAME.fullmatch(entry.name) for entry in entries)
