"""``ac -c`` on a statistics run (``dump_data="stats"``): the suspects, and the ``dump_layer`` of a second, small
full dump.

:func:`check_statistics` aligns the run's statistics CSVs with the reference (the rules of a tensor dump) and judges
them (:func:`~precision_tool.comparison.stats_evidence.judge_statistics`). :func:`plan_dump_layer` turns the
suspects into the ``dump_layer`` to capture next: the suspects, earliest first, then the ops producing their inputs,
as long as their dumped bytes (the CSVs' ``Data Size``) stay within the budget. That run's tensors go through the
normal ``ac -c``, whose replay decides. See docs/statistics.md.
"""
from __future__ import annotations

import dataclasses
import os
import re
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Tuple

from precision_tool.comparison.attribution import JUMP_FACTOR
from precision_tool.comparison.stats_evidence import StatsJudgment
from precision_tool.errors import PrecisionToolError, UsageError
from precision_tool.formats.dump_tree import DEFAULT_SELECTION, DumpSelection

#: ``dump_layer``'s default size budget: the suspects and their producers are added while their dumps fit in it.
DEFAULT_BUDGET = 1 << 30
_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}


def parse_size(text: str) -> int:
    """Bytes of ``512M``, ``2G``, ``1.5g``, ``4096`` or ``4096B`` (binary units).

    >>> parse_size("512M"), parse_size("1.5g"), parse_size("4096")
    (536870912, 1610612736, 4096)
    """
    match = re.fullmatch(r"\s*([0-9]+(?:\.[0-9]*)?)\s*([kKmMgGtT]?)[iI]?[bB]?\s*", text)
    if match is None:
        raise UsageError(f"--dump-budget {text!r} is not a size", "give bytes or a size such as 512M or 2G")
    return int(float(match.group(1)) * _UNITS[match.group(2).upper()])


def size_text(size: int) -> str:
    """``size`` bytes in the largest binary unit that keeps it at least 1 (``1.5 GiB``, ``512 MiB``, ``100 B``)."""
    for unit, scale in (("TiB", 1 << 40), ("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if size >= scale:
            return f"{size / scale:.3g} {unit}"
    return f"{size} B"


@dataclass(frozen=True)
class DumpLayerPlan:
    """``ops`` to name in ``dump_layer``, in order: the first ``suspects`` of them are suspects, the others their
    producers; ``size``: their dumps' bytes (inputs and outputs as the statistics state them); ``left_out``:
    suspects or producers that did not fit the ``budget``."""

    ops: Tuple[str, ...]
    size: int
    budget: int
    left_out: Tuple[str, ...] = ()
    suspects: int = 0

    @property
    def value(self) -> str:
        """The ``dump_layer`` value: GE node names separated by spaces, as the adapter takes it."""
        return " ".join(self.ops)

    def to_dict(self) -> dict:
        return {"dump_layer": self.value, "ops": list(self.ops), "bytes": self.size, "budget": self.budget,
                "left_out": list(self.left_out), "suspects": self.suspects}

    @classmethod
    def from_dict(cls, data: dict) -> "DumpLayerPlan":
        return cls(tuple(map(str, data["ops"])), int(data["bytes"]), int(data["budget"]),
                   tuple(map(str, data["left_out"])), int(data["suspects"]))


@dataclass(frozen=True)
class StatisticsSection:
    """The statistics comparison: ``judgment`` and the ``plan`` for the full dump, or the ``error`` that stopped
    it. ``inputs`` names the folders read; ``notes`` what the alignment or the graph said."""

    judgment: Optional[StatsJudgment] = None
    plan: Optional[DumpLayerPlan] = None
    error: str = ""
    inputs: Dict[str, Optional[str]] = field(default_factory=dict)
    notes: Tuple[str, ...] = ()
    unaligned: int = 0

    def to_dict(self) -> dict:
        return {"error": self.error or None, "inputs": self.inputs, "notes": list(self.notes),
                "unaligned_tensors": self.unaligned,
                "judgment": None if self.judgment is None else self.judgment.to_dict(),
                "dump_layer": None if self.plan is None else self.plan.to_dict()}

    @classmethod
    def from_dict(cls, data: dict) -> "StatisticsSection":
        """The section :meth:`to_dict` wrote (``ac -c``'s stored judgment, for ``vcs``, ``ni`` and ``report``)."""
        judgment, plan = data["judgment"], data["dump_layer"]
        return cls(None if judgment is None else StatsJudgment.from_dict(judgment),
                   None if plan is None else DumpLayerPlan.from_dict(plan), data["error"] or "", dict(data["inputs"]),
                   tuple(map(str, data["notes"])), int(data["unaligned_tensors"]))


def holds_statistics_only(dump_dir: str, selection: DumpSelection = DEFAULT_SELECTION) -> bool:
    """Whether the NPU dump folder (its selected step and device) holds statistics CSVs and no tensor dump."""
    from precision_tool.formats.dump_names import scan_dump_folder

    if not os.path.isdir(dump_dir):
        return False
    try:
        scan = scan_dump_folder(dump_dir, selection.unlogged())
    except PrecisionToolError:
        return False
    return bool(scan.stats) and not scan.ops


def check_statistics(npu_dir: str, reference: str, graph_folder: Optional[str],
                     selection: DumpSelection = DEFAULT_SELECTION, budget: int = DEFAULT_BUDGET) -> StatisticsSection:
    """Align the statistics run ``npu_dir`` with the reference ``reference`` (through the Build graph under
    ``graph_folder`` when there is one) and judge it; errors are kept in the section."""
    from precision_tool.alignment import load_graph, resolve_graph
    from precision_tool.alignment.npu_vs_tf import align_npu_vs_tf
    from precision_tool.comparison.stats_evidence import judge_statistics, pair_evidence

    inputs = {"npu": npu_dir, "reference": reference, "graph": graph_folder}
    if not os.path.isdir(reference):
        return StatisticsSection(error=f"no reference folder {reference}: run precision_tool tf_dump after the "
                                       "CPU/GPU run", inputs=inputs)
    try:
        graph_file, notes = resolve_graph(graph_folder, npu_dir, selection)
        graph = load_graph(graph_file)
        alignment = align_npu_vs_tf(npu_dir, reference, graph, selection=selection, statistics=True)
    except PrecisionToolError as error:
        return StatisticsSection(error=str(error), inputs=inputs)
    if not alignment.pairs:
        return StatisticsSection(error="nothing was compared: no NPU tensor of the statistics has a reference "
                                       "counterpart", inputs=inputs, notes=notes)
    evidence = pair_evidence(alignment)
    coverage = alignment.coverage
    unread = tuple(f"{path}: {message}" if not message.startswith(path) else message
                   for path, message in coverage.unreadable + coverage.unreadable_references) + evidence.notes
    judgment = judge_statistics(evidence.pairs, unread)
    sizes: Dict[str, int] = {}
    for item in evidence.pairs:
        sizes[item.pair.npu.op_name] = sizes.get(item.pair.npu.op_name, 0) + (item.size or 0)
    plan = plan_dump_layer(judgment, sizes, _producers(graph), budget)
    unaligned = alignment.coverage.npu_tensors - alignment.coverage.aligned_count
    return StatisticsSection(judgment, plan, "", inputs, tuple(notes), unaligned)


def _producers(graph) -> Dict[str, Tuple[str, ...]]:
    """Each op of the Build graph and the ops feeding its data inputs (``{}`` without a graph)."""
    from precision_tool.formats.ge_graph import GraphModel

    if graph is None:
        return {}
    ops = (op for _, op in graph.all_ops()) if isinstance(graph, GraphModel) else graph.ops
    return {op.name: tuple(ref.producer for ref in op.data_inputs) for op in ops}


def plan_dump_layer(judgment: StatsJudgment, sizes: Dict[str, int], producers: Dict[str, Tuple[str, ...]],
                    budget: int = DEFAULT_BUDGET) -> DumpLayerPlan:
    """The suspects (earliest first), then each suspect's producers that the statistics run dumped (``sizes``
    holds every dumped op), each added while the total stays within ``budget``; the first suspect is always named
    (a plan without it is no plan), and what does not fit is in ``left_out``."""
    suspects = [op.op_name for op in judgment.suspects]
    wanted: List[str] = list(suspects)
    for name in suspects:
        wanted.extend(p for p in producers.get(name, ()) if p in sizes and p not in wanted)
    chosen: List[str] = []
    left: List[str] = []
    total = 0
    for name in wanted:
        size = sizes.get(name, 0)
        if chosen and total + size > budget:
            left.append(name)
            continue
        chosen.append(name)
        total += size
    return DumpLayerPlan(tuple(chosen), total, budget, tuple(left), sum(name in suspects for name in chosen))


def statistics_verdict(section: StatisticsSection, base):
    """The verdict of a statistics run, with ``base`` the verdict of its overflow and fusion sections alone
    (:func:`~precision_tool.checks.run_verdict.decide_verdict` without a comparison).

    The earliest suspect is the lead to confirm (``checked`` is False: statistics name suspects, a full dump
    replayed convicts); the other suspects, and an overflow or fusion lead, are in ``also``. Without a suspect,
    ``base``'s lead stands; without one either, no verdict, which is no clean bill
    (docs/statistics.md#what-statistics-cannot-show). ``base``'s ``ac -c`` suggestion is dropped: this is it.
    """
    from precision_tool.checks.run_verdict import STATISTICS, Culprit, Verdict

    judgment = section.judgment
    commands = tuple(command for command in base.next_commands if command != "ac -c")
    if judgment is None or not judgment.suspects:
        why = section.error or "statistics name no suspect, and cannot clear an op (a full dump compared with " \
                               "'ac -c' can)"
        if base.culprit is not None:
            culprit = dataclasses.replace(base.culprit, reasons=tuple(_without_ac_c(r) for r in base.culprit.reasons))
            return Verdict(culprit, base.also + (f"statistics: {why}",), commands, checked=False,
                           unchecked="a statistics run cannot; a full dump compared with 'ac -c' can")
        return Verdict(None, base.also, commands, checked=False, withheld=why)
    first, *others = judgment.suspects
    also = tuple(f"also a suspect: {op.op_name} ({op.op_type}), {suspect_reason(op)}" for op in others)
    if base.culprit is not None:
        also += (f"{base.culprit.evidence}: {base.culprit.op_name} ({base.culprit.op_type or 'unknown type'}), "
                 + "; ".join(base.culprit.reasons[:1]),)
    ni = (f"ni {_quote(first.op_name)}",)
    return Verdict(Culprit(first.op_name, first.op_type, STATISTICS, (suspect_reason(first),), ni),
                   also + base.also, ni + tuple(c for c in commands if c not in ni), checked=False)


def _without_ac_c(reason: str) -> str:
    """A lead's reason as said after ``ac -c`` on a statistics run, which cannot check it (not "run ac -c")."""
    return reason.replace("run ac -c to see whether", "a full dump compared with 'ac -c' would tell whether")


def suspect_reason(op) -> str:
    """Why ``op`` (an :class:`~precision_tool.comparison.stats_evidence.OpJump`) is a suspect, with its figures."""
    if op.mismatch:
        return f"its output's counts differ from the reference's and its inputs' do not: {op.mismatch}"
    inputs = "its inputs' prove none" if not op.input else f"its inputs' prove RED >= {op.input:.3g}"
    return (f"its outputs' statistics prove RED >= {op.output:.3g}, {inputs} (floor {op.floor:.3g}): jump "
            f"{op.jump:.3g} >= {JUMP_FACTOR:g}")


def _quote(text: str) -> str:
    import shlex

    return shlex.quote(text)


__all__ = ["check_statistics", "plan_dump_layer", "holds_statistics_only", "StatisticsSection", "DumpLayerPlan",
           "parse_size", "size_text", "DEFAULT_BUDGET",
           "statistics_verdict", "suspect_reason"]
