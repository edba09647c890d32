"""Element errors of the failing tensors: a histogram of relative errors and the worst elements, per tensor.

The CSV holds one line per tensor; where the error sits needs the tensors themselves. :func:`failing_details` aligns
the run's folders again (from ``summary.json``'s ``inputs``: names and headers only), loads each failing pair the way
the comparator does (:meth:`~precision_tool.alignment.NpuTensorRef.load` in the origin layout, the reference ``.npy``
or the other run's dump) and computes :func:`~precision_tool.metrics.errors_detail.error_histogram` and
:func:`~precision_tool.metrics.errors_detail.worst_elements` for the first ``limit`` failing tensors (first divergence
first), one pair in memory at a time. Anything missing (no ``summary.json``, a moved folder, an unreadable tensor)
becomes a one-line ``note``, never an error: the rest of the page is still worth having.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Dict, List, Optional, Tuple

from precision_tool.formats.dump_tree import DumpSelection

DEFAULT_DETAILS = 10
DEFAULT_WORST = 10


@dataclass(frozen=True)
class TensorDetail:
    """One failing tensor: its histogram (``None`` when not loaded), worst elements, and a note on why not."""

    tensor_id: str
    op_name: str
    op_type: str
    status: str
    reason: str
    reference: str = ""
    shape: Tuple[int, ...] = ()
    histogram: object = None
    worst: Tuple[object, ...] = ()
    note: str = ""
    same_bytes_as: Tuple[str, ...] = ()  # failing inputs that are this output's very bytes (shown once, here)


@dataclass(frozen=True)
class Details:
    """The details shown, and a note when some or all could not be made (``""`` otherwise)."""

    tensors: Tuple[TensorDetail, ...] = ()
    note: str = ""
    skipped: int = 0


def _load_reference(ref):
    from precision_tool.alignment import NpyTensorRef

    return ref.load() if isinstance(ref, NpyTensorRef) else ref.load().array


def _detail(row, pair, worst_count: int) -> TensorDetail:
    import numpy as np

    from precision_tool.errors import PrecisionToolError
    from precision_tool.metrics.errors_detail import error_histogram, worst_elements

    base = TensorDetail(row.tensor_id, row.op_name, row.op_type, row.status, row.reason)
    if pair is None:
        return _replace(base, note="the tensor is not in the run's folders any more (not aligned again)")
    try:
        npu = pair.npu.load().array
        reference = np.asarray(_load_reference(pair.ref))
        histogram = error_histogram(npu, reference, "rel")
        worst = worst_elements(npu, reference, worst_count, "abs")
    except (PrecisionToolError, OSError, ValueError) as error:
        return _replace(base, reference=pair.ref.tensor_id, note=f"not loaded: {error}")
    return _replace(base, reference=pair.ref.tensor_id, shape=tuple(int(d) for d in npu.shape),
                    histogram=histogram, worst=worst)


def _replace(detail: TensorDetail, **changes) -> TensorDetail:
    import dataclasses

    return dataclasses.replace(detail, **changes)


def _align_again(inputs, mode: str, selection: Optional[DumpSelection] = None):
    """The run's alignment, or a one-line reason why it cannot be redone."""
    from precision_tool.alignment import align
    from precision_tool.errors import PrecisionToolError

    npu, reference = inputs.get("npu"), inputs.get("reference")
    if not npu or not reference:
        return None, "the result names no NPU dump or reference folder to load tensors from"
    missing = [path for path in (npu, reference) if not os.path.isdir(path)]
    if missing:
        return None, f"{missing[0]} is gone: element errors need the run's dump folders"
    try:
        return align(npu, reference, inputs.get("graph"), mode=mode,
                     reference_graph=inputs.get("reference_graph") if mode == "npu_vs_npu" else None,
                     selection=selection), ""
    except PrecisionToolError as error:
        return None, f"the run's folders could not be aligned again: {error}"


def failing_details(source, limit: int = DEFAULT_DETAILS, worst_count: int = DEFAULT_WORST,
                    selection: Optional[DumpSelection] = None) -> Details:
    """Details of the first ``limit`` failing tensors of ``source`` (0 = all), first divergence first, its dumps
    read at ``selection``'s step and device."""
    from precision_tool.status import Status

    failing = [row for row in source.comparison.failing_in_order() if row.status is not Status.ERROR and row.tensor_id]
    shown_ids = {row.tensor_id for row in failing}
    same_bytes: Dict[str, List[str]] = {}  # an input that is its producer's failing output: one card for both
    for row in failing:
        if row.reused_from in shown_ids:
            same_bytes.setdefault(row.reused_from, []).append(row.tensor_id)
    failing = [row for row in failing if row.reused_from not in shown_ids]
    chosen = failing if limit <= 0 else failing[:limit]
    if not chosen:
        return Details()
    if not source.has_run_facts:
        alignment, note = None, "no summary.json beside the CSV: element errors need the dump folders it names"
    else:
        alignment, note = _align_again(source.inputs, source.comparison.facts.mode, selection)
    skipped = len(failing) - len(chosen)
    if alignment is None:
        details = [TensorDetail(r.tensor_id, r.op_name, r.op_type, r.status, r.reason, note=note) for r in chosen]
    else:
        pairs = {pair.npu.tensor_id: pair for pair in alignment.pairs}
        details = [_detail(row, pairs.get(row.tensor_id), worst_count) for row in chosen]
    details = [_replace(d, same_bytes_as=tuple(same_bytes.get(d.tensor_id, ()))) for d in details]
    return Details(tuple(details), note if alignment is None else "", skipped)


def histogram_labels(edges) -> Tuple[str, ...]:
    """Bin labels for relative-error decades: ``0``, ``1e-06``, ... the lower edge of each bin, ``>=1`` last.

    >>> histogram_labels((0.0, 1e-6, 1e-5, 1.0, float("inf")))
    ('<1e-06', '1e-06', '1e-05', '>=1')
    """
    labels = []
    for low, high in zip(edges, edges[1:]):
        if low == 0:
            labels.append(f"<{high:g}")
        elif high == float("inf"):
            labels.append(f">={low:g}")
        else:
            labels.append(f"{low:g}")
    return tuple(labels)

