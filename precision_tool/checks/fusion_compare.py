r"""Fusion on vs fusion off: which fused ops compute something their unfused TF ops do not.

``npu/debug_0`` (fusion on) is aligned with ``npu/debug_1`` (fusion off) in ``npu_vs_npu`` mode and every pair is
summarised by :math:`d = \lVert x - y \rVert_2 / \lVert y \rVert_2` (:math:`x` fusion on, :math:`y` fusion off). An
op **differs** when :math:`d_{\text{out}} - g \cdot d_{\text{in}} > \text{floor}` (maxima over its outputs and its
inputs; ``floor`` = 0.01, ``g`` = 2: :func:`precision_tool.comparison.attribution.fusion_excess`); an honest failure
counts as :math:`d = \infty`. A differing op fusion made is a **fusion culprit**, named with its passes; one it did
not make is listed apart. Why no threshold on :math:`d` alone: docs/internals/checks.md#fusion_compare.
"""
from __future__ import annotations

import math
import os
from dataclasses import dataclass
from typing import Dict, List, Optional, Tuple

from precision_tool.checks.fusion_summary import FusedOp, fused_op_of
from precision_tool.comparison.attribution import FUSION_FLOOR, FUSION_GROWTH, fusion_differs
from precision_tool.errors import PrecisionToolError
from precision_tool.formats.dump_tree import DumpSelection
from precision_tool.formats.tensor_kind import OUTPUT

DEFAULT_FLOOR = FUSION_FLOOR
DEFAULT_GROWTH = FUSION_GROWTH
_METRICS = ("CosineSimilarity", "RelativeEuclideanDistance", "MaxAbsoluteError")


@dataclass(frozen=True)
class TensorDiff:
    """One fusion-on tensor against its fusion-off counterpart.

    ``distance`` is the relative Euclidean distance (``inf`` for an honest failure, see the module docstring;
    ``None`` when it could not be computed); ``status``/``reason`` are
    :func:`~precision_tool.metrics.compare_tensors`'s.
    """

    tensor_id: str
    other: str
    rule: str
    status: str
    distance: Optional[float]
    cosine: Optional[float] = None
    max_abs_error: Optional[float] = None
    reason: str = ""

    def to_dict(self) -> dict:
        return {"tensor_id": self.tensor_id, "other": self.other, "rule": self.rule, "status": self.status,
                "distance": self.distance, "cosine": self.cosine, "max_abs_error": self.max_abs_error,
                "reason": self.reason}


@dataclass(frozen=True)
class OpDiff:
    """One fusion-on op: how far its outputs are from the fusion-off run, and how far its inputs already were.

    ``fused`` is set when fusion made the op. ``differs`` applies the rule of the module docstring.
    """

    op_name: str
    op_type: str
    position: int
    output_distance: float
    input_distance: float
    excess: float
    differs: bool
    worst_output: str
    other: str
    fused: Optional[FusedOp] = None

    def to_dict(self) -> dict:
        return {"op_name": self.op_name, "op_type": self.op_type, "position": self.position,
                "output_distance": self.output_distance, "input_distance": self.input_distance,
                "excess": self.excess, "differs": self.differs, "worst_output": self.worst_output,
                "other": self.other, "fused": None if self.fused is None else self.fused.to_dict()}


@dataclass(frozen=True)
class FusionComparison:
    """Result of :func:`compare_fusion_runs`.

    ``ops`` holds every fusion-on op with a compared output, in execution order; ``culprits`` the differing
    ops that fusion made, ``other_differences`` the differing ops it did not. ``tensors`` holds every
    compared pair; ``not_compared`` counts the fusion-on tensors without a counterpart; ``unreadable`` has one
    line per tensor that could not be read. ``steps_differ``: one line when the two runs were read at different
    steps (``--step`` asked for one the fusion-off run lacks; it holds one step only): their weights differ, so
    a difference is not the fusion's, and no op is a culprit (every differing op is an other difference).
    ``read_at``: ``"step N"`` when the fusion-on run was read at another step than its newest, the one a
    comparison detailed without ``--step`` (to match the fusion-off run's only step): a verdict on an op then
    says at which step fusion was measured; ``""`` otherwise.
    """

    fused_dir: str
    unfused_dir: str
    floor: float
    growth: float
    ops: Tuple[OpDiff, ...] = ()
    tensors: Tuple[TensorDiff, ...] = ()
    not_compared: int = 0
    unreadable: Tuple[str, ...] = ()
    steps_differ: str = ""
    read_at: str = ""

    @property
    def culprits(self) -> Tuple[OpDiff, ...]:
        return tuple(op for op in self.ops if op.differs and op.fused is not None and not self.steps_differ)

    @property
    def other_differences(self) -> Tuple[OpDiff, ...]:
        return tuple(op for op in self.ops if op.differs and (op.fused is None or bool(self.steps_differ)))

    def op(self, name: str) -> Optional[OpDiff]:
        return next((op for op in self.ops if op.op_name == name), None)

    def to_dict(self) -> dict:
        return {"fused_dir": self.fused_dir, "unfused_dir": self.unfused_dir, "floor": self.floor,
                "growth": self.growth, "culprits": [op.op_name for op in self.culprits],
                "other_differences": [op.op_name for op in self.other_differences],
                "ops": [op.to_dict() for op in self.ops], "not_compared": self.not_compared,
                "unreadable": list(self.unreadable),
                **({"steps_differ": self.steps_differ} if self.steps_differ else {})}


def _diff(pair) -> TensorDiff:
    from precision_tool.metrics import compare_tensors

    result = compare_tensors(pair.npu.load().array, pair.ref.load().array, metrics=_METRICS, cosine_threshold=None,
                             min_allclose_ratio=0.0)
    distance = result.value("RelativeEuclideanDistance")
    if not result.passed:
        distance = math.inf  # an honest failure (NaN/inf, shape, count, one side zero), never a small number
    return TensorDiff(pair.npu.tensor_id, pair.ref.tensor_id, pair.rule, result.status.value, distance,
                      result.value("CosineSimilarity"), result.value("MaxAbsoluteError"), result.reason)


def compare_fusion_runs(fused_dump: str, unfused_dump: str, fused_graph=None, unfused_graph=None, *,
                        floor: float = DEFAULT_FLOOR, growth: float = DEFAULT_GROWTH,
                        selection: Optional[DumpSelection] = None) -> FusionComparison:
    """Compare the fusion-on run with the fusion-off run op by op (see the module docstring).

    Parameters
    ----------
    fused_dump, unfused_dump : the two runs' dump folders (``npu/debug_0/dump``, ``npu/debug_1/dump``).
    fused_graph, unfused_graph : their Build graphs (file, folder, loaded model or ``None``); without the
        fusion-on graph no op can be recognised as fused and inputs fall back to 0.
    floor, growth : the rule's constants.
    selection : the step and device to read of the fusion-on run (the fusion-off run follows it).

    Raises
    ------
    WorkspaceError : a dump folder or graph file is missing.
    """
    from precision_tool.alignment import align, load_graph
    from precision_tool.alignment.npu_side import graphs_of

    fused_model, unfused_model = load_graph(fused_graph), load_graph(unfused_graph)
    alignment = align(fused_dump, unfused_dump, fused_model, mode="npu_vs_npu", reference_graph=unfused_model,
                      selection=selection)
    graph_ops = {op.name: op for graph in graphs_of(fused_model) for op in graph.ops}
    tensors: List[TensorDiff] = []
    unreadable: List[str] = []
    by_key: Dict[Tuple[str, str, int], TensorDiff] = {}
    op_types: Dict[str, str] = {}
    for pair in alignment.pairs:
        op_types.setdefault(pair.npu.op_name, pair.npu.op_type)
        try:
            diff = _diff(pair)
        except PrecisionToolError as error:
            unreadable.append(f"{pair.npu.tensor_id}: {error}")
            continue
        tensors.append(diff)
        by_key[pair.npu.key] = diff
    ops = _op_diffs(alignment, by_key, op_types, graph_ops, floor, growth)
    return FusionComparison(os.fspath(fused_dump), os.fspath(unfused_dump), floor, growth, tuple(ops),
                            tuple(tensors), len(alignment.unaligned), tuple(unreadable),
                            *_steps_read(alignment, selection))


def _steps_read(alignment, selection: Optional[DumpSelection]) -> Tuple[str, str]:
    """``(steps_differ, read_at)`` of :class:`FusionComparison`, from the two runs' choices the alignment made:
    the fusion-off run followed to another step than the fusion-on run's; the fusion-on run read at another step
    than its device's newest, no step being asked for (to match the fusion-off run's only one)."""
    if len(alignment.choices) < 2 or alignment.choices[0].step is None or alignment.choices[1].step is None:
        return "", ""
    fused, unfused = alignment.choices
    if unfused.step != fused.step:
        return (f"the fusion-on run was read at step {fused.step}, the fusion-off run at step {unfused.step} (its "
                f"only one): the weights differ between steps, so no difference is blamed on fusion; compare step "
                f"{unfused.step} (--step {unfused.step}) for a fusion verdict"), ""
    steps = fused.steps_of(fused.device)
    moved = (selection is None or selection.step is None) and bool(steps) and steps[-1] != fused.step
    return "", f"step {fused.step}" if moved else ""


def _op_diffs(alignment, by_key, op_types, graph_ops, floor: float, growth: float) -> List[OpDiff]:
    outputs: Dict[str, List[Tuple[int, TensorDiff]]] = {}
    inputs: Dict[str, Dict[int, TensorDiff]] = {}
    for (op_name, kind, index), diff in by_key.items():
        if kind == OUTPUT:
            outputs.setdefault(op_name, []).append((index, diff))
        else:
            inputs.setdefault(op_name, {})[index] = diff
    order = list(dict.fromkeys(list(alignment.order) + list(outputs)))
    found = []
    for position, op_name in enumerate(order):
        if op_name not in outputs:
            continue
        worst_index, worst = max(outputs[op_name], key=lambda item: item[1].distance or 0.0)
        output_distance = worst.distance or 0.0
        input_distance = _input_distance(op_name, inputs.get(op_name, {}), alignment.data_inputs, by_key)
        excess, differs = fusion_differs(output_distance, input_distance, floor, growth)
        graph_op = graph_ops.get(op_name)
        fused = fused_op_of(graph_op) if graph_op is not None else None
        found.append(OpDiff(op_name, graph_op.type if graph_op is not None else op_types.get(op_name, ""),
                            position, output_distance, input_distance, excess, differs, worst.tensor_id,
                            worst.other, fused))
    return found


def _input_distance(op_name: str, compared: Dict[int, TensorDiff], data_inputs, by_key) -> float:
    edges = data_inputs.get(op_name, ())
    count = max([len(edges)] + [k + 1 for k in compared])
    distances = []
    for k in range(count):
        if k in compared:
            distances.append(compared[k].distance or 0.0)
        elif k < len(edges):
            producer = by_key.get((edges[k][0], OUTPUT, edges[k][1]))
            if producer is not None:
                distances.append(producer.distance or 0.0)
    return max(distances, default=0.0)
