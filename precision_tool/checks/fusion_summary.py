"""What fusion did to a run: the passes that fired, and each fused NPU op with the TF ops it replaced.

Two sources, either may be missing (``ascend-formats.md`` §6-7): ``fusion_result.json`` -- per pass, how often it
matched and took effect (:class:`PassUse`); the GE **Build** graph -- per op, ``_datadump_original_op_names`` (the TF
ops it implements), ``pass_name`` (graph-fusion passes) and ``pass_name_ub`` (the UB-fusion pass) (:class:`FusedOp`).
A pass that fired but marks no op of the graph still shows in :attr:`FusionOverview.passes`; an op marked by a pass
the result file does not list still shows in :attr:`FusionOverview.fused_ops`. :meth:`FusionOverview.ops_made_by`
is the data behind ``ls -f PASS``.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Dict, Iterable, List, Optional, Tuple

from precision_tool.formats.fusion_result import GRAPH_FUSION, UB_FUSION, FusionResult
from precision_tool.formats.ge_graph import PASS_NAME, PASS_NAME_UB, GraphModel, OpNode


@dataclass(frozen=True)
class PassUse:
    """One fusion pass over every graph of the result file: summed counts, and the ops it marks."""

    name: str
    family: str
    match_times: int = 0
    effect_times: int = 0
    ops: Tuple[str, ...] = ()

    @property
    def took_effect(self) -> bool:
        return self.effect_times > 0

    def to_dict(self) -> dict:
        return {"name": self.name, "family": self.family, "match_times": self.match_times,
                "effect_times": self.effect_times, "ops": list(self.ops)}


@dataclass(frozen=True)
class FusedOp:
    """An NPU op made by fusion: it implements several TF ops, or a pass marked it.

    ``graph_passes`` come from ``pass_name``, ``ub_pass`` from ``pass_name_ub`` (``""`` when none).
    """

    name: str
    type: str
    tf_ops: Tuple[str, ...]
    graph_passes: Tuple[str, ...] = ()
    ub_pass: str = ""
    kernel: str = ""

    @property
    def passes(self) -> Tuple[str, ...]:
        """Every pass that made the op: graph passes first, then the UB pass."""
        return self.graph_passes + ((self.ub_pass,) if self.ub_pass else ())

    @property
    def passes_text(self) -> str:
        """``"ConvBiasaddFusionPass (graph), TbeConvElemwiseFusionPass (UB)"``; ``"-"`` when none is recorded."""
        parts = [f"{name} (graph)" for name in self.graph_passes]
        if self.ub_pass:
            parts.append(f"{self.ub_pass} (UB)")
        return ", ".join(parts) or "-"

    def to_dict(self) -> dict:
        return {"name": self.name, "type": self.type, "tf_ops": list(self.tf_ops),
                "graph_passes": list(self.graph_passes), "ub_pass": self.ub_pass or None, "kernel": self.kernel}


_UB_PASS_NAME = re.compile(r"A?Tbe[A-Z0-9]|.*UbFusion")


def looks_like_ub_pass(name: str) -> bool:
    """Whether a pass name is a UB-fusion pass's, by the names CANN gives them: ``Tbe...`` (also
    ``ATbe...``) or ``...UbFusion`` -- every ``ub_fusion`` pass of the real fusion_result.json files in
    ``../shared/real-world`` and no ``graph_fusion`` one. Older CANN stores UB passes in ``pass_name`` (the
    graph-pass attribute), so the attribute alone does not tell."""
    return _UB_PASS_NAME.match(name) is not None


def fused_op_of(op: OpNode) -> Optional[FusedOp]:
    """The :class:`FusedOp` view of ``op``, or ``None`` when fusion did not make it. A UB pass found in
    ``pass_name`` (:func:`looks_like_ub_pass`) is its UB pass when ``pass_name_ub`` names none."""
    if not op.is_fused:
        return None
    named = op.attrs.get(PASS_NAME) or ()
    named = (named,) if isinstance(named, str) else tuple(str(p) for p in named)
    ub_pass = str(op.attrs.get(PASS_NAME_UB) or "")
    graph_passes = tuple(name for name in named if not looks_like_ub_pass(name))
    ub_in_graph_attr = [name for name in named if looks_like_ub_pass(name)]
    if ub_in_graph_attr and not ub_pass:
        ub_pass = ub_in_graph_attr[0]
        graph_passes += tuple(ub_in_graph_attr[1:])  # a second one has no other place: listed, as recorded
    elif ub_in_graph_attr:
        graph_passes += tuple(ub_in_graph_attr)
    return FusedOp(op.name, op.type, op.original_op_names, graph_passes, ub_pass, op.kernel_name)


@dataclass(frozen=True)
class FusionOverview:
    """Passes (effective first, then by name) and fused ops (graph order); ``notes`` says what was missing."""

    passes: Tuple[PassUse, ...] = ()
    fused_ops: Tuple[FusedOp, ...] = ()
    graph_ops: int = 0
    notes: Tuple[str, ...] = ()
    records: Optional[int] = None
    """Records (graphs) read from fusion_result.json; ``None`` when no result file was read."""

    @property
    def effective_passes(self) -> Tuple[PassUse, ...]:
        return tuple(p for p in self.passes if p.took_effect)

    def fused_op(self, name: str) -> Optional[FusedOp]:
        return next((op for op in self.fused_ops if op.name == name), None)

    def ops_made_by(self, pattern: str) -> Tuple[FusedOp, ...]:
        """Fused ops one of whose passes matches ``pattern`` (case-insensitive regex search; a pattern that
        does not compile is matched as a plain substring)."""
        try:
            regex = re.compile(pattern, re.IGNORECASE)
            matches = lambda name: regex.search(name) is not None  # noqa: E731
        except re.error:
            matches = lambda name: pattern.lower() in name.lower()  # noqa: E731
        return tuple(op for op in self.fused_ops if any(matches(name) for name in op.passes))

    def to_dict(self) -> dict:
        return {"passes": [p.to_dict() for p in self.passes], "fused_ops": [op.to_dict() for op in self.fused_ops],
                "graph_ops": self.graph_ops, "notes": list(self.notes), "records": self.records}


def _families(result: Optional[FusionResult]) -> Dict[str, Tuple[str, int, int]]:
    totals: Dict[str, List] = {}
    for graph in (result.graphs if result is not None else ()):
        for record in graph.passes:
            entry = totals.setdefault(record.name, [record.family, 0, 0])
            entry[1] += record.match_times
            entry[2] += record.effect_times
    return {name: (family, match, effect) for name, (family, match, effect) in totals.items()}


def summarize_fusion(model: Optional[GraphModel], result: Optional[FusionResult],
                     notes: Iterable[str] = ()) -> FusionOverview:
    """Combine the Build graph and the fusion result (either may be ``None``) into a :class:`FusionOverview`.

    Counts of a pass are summed over the result file's records, as written (a graph recorded by several
    processes counts once per record). A pass found only on graph ops gets family ``graph_fusion`` or
    ``ub_fusion`` from the attribute that names it (:func:`fused_op_of`), and zero counts.
    """
    fused: List[FusedOp] = []
    graph_ops = 0
    if model is not None:
        for _, op in model.all_ops():
            graph_ops += 1
            view = fused_op_of(op)
            if view is not None:
                fused.append(view)
    counts = _families(result)
    marked: Dict[str, List[str]] = {}
    family_of_marked: Dict[str, str] = {}
    for fused_op in fused:
        for name in fused_op.graph_passes:
            marked.setdefault(name, []).append(fused_op.name)
            family_of_marked.setdefault(name, GRAPH_FUSION)
        if fused_op.ub_pass:
            marked.setdefault(fused_op.ub_pass, []).append(fused_op.name)
            family_of_marked.setdefault(fused_op.ub_pass, UB_FUSION)
    passes = []
    for name in sorted(set(counts) | set(marked)):
        family, match, effect = counts.get(name, (family_of_marked.get(name, GRAPH_FUSION), 0, 0))
        passes.append(PassUse(name, family, match, effect, tuple(marked.get(name, ()))))
    passes.sort(key=lambda p: (not p.took_effect, p.family, p.name))
    return FusionOverview(tuple(passes), tuple(fused), graph_ops, tuple(notes),
                          len(result.graphs) if result is not None else None)
