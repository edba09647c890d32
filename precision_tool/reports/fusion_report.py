"""Report blocks for the fusion checks: passes that fired, fused ops, fusion-on vs fusion-off culprits."""
from __future__ import annotations

import os

from precision_tool.reports.report import Report
from precision_tool.reports.format import counted

_FAMILY = {"graph_fusion": "graph", "ub_fusion": "UB"}


def add_passes(report: Report, overview) -> None:
    """Every pass with its counts and how many graph ops it marks (effective passes first). Without a
    fusion_result.json the counts are unknown, shown as ``-``, and the headline counts the passes the graph
    names instead of claiming none took effect."""
    records = overview.records
    source = ("no fusion_result.json was read (see the notes)" if records is None
              else f"fusion_result.json holds {records} graph record(s)")
    if not overview.passes:
        report.add_text(f"Fusion: no pass recorded: {source}, and no graph op names a pass.")
        return
    counted = records is not None

    def count(value: int):
        return value if counted else "-"

    rows = [[p.name, _FAMILY.get(p.family, p.family), count(p.match_times), count(p.effect_times), len(p.ops)]
            for p in overview.passes]
    if counted:
        headline = (f"Fusion: {len(overview.effective_passes)} pass(es) took effect ({source}, counts summed "
                    "over them as written); ")
    else:
        headline = f"Fusion: {len(overview.passes)} pass(es) named on graph ops ({source}: no pass counts); "
    headline += (f"{len(overview.fused_ops)} of {overview.graph_ops} graph ops are fused (fusion lists them with the "
                 "TF ops they replaced; an op several passes fused counts under each):" if overview.graph_ops else
                 "no Build graph read, so which ops they fused is unknown:")
    report.add_table(["pass", "family", "matched", "took effect", "ops marked"], rows, title=headline)


def _tf_ops_text(tf_ops, width: int = 3) -> str:
    shown = ", ".join(tf_ops[:width])
    return shown + (f" (+{len(tf_ops) - width})" if len(tf_ops) > width else "")


def add_fused_ops(report: Report, fused_ops, title: str = "") -> None:
    """Each fused op, the TF ops it replaced and the passes that made it."""
    rows = [[op.name, op.type, _tf_ops_text(op.tf_ops), op.passes_text] for op in fused_ops]
    report.add_table(["fused op", "type", "TF ops replaced", "made by"], rows,
                     title=title or f"{len(fused_ops)} fused op(s):")


def run_label(dump_dir: str) -> str:
    """``npu/debug_1`` for ``.../npu/debug_1/dump``; other folders as given."""
    parts = os.path.normpath(dump_dir).split(os.sep)
    if len(parts) >= 3 and parts[-1] == "dump":
        return "/".join(parts[-3:-1])
    return dump_dir


def add_fusion_comparison(report: Report, comparison, limit: int = 0, all_ops: bool = False) -> None:
    """The verdict of the fusion-on vs fusion-off comparison: culprits (or none), and with ``all_ops`` every
    compared op with its distances."""
    if comparison is None:
        return
    rule = (f"an op differs when its output's relative distance to the other run exceeds {comparison.growth:g} x "
            f"its inputs' by more than {comparison.floor:g}")
    culprits = comparison.culprits
    ops = comparison.ops if all_ops else culprits + comparison.other_differences
    outcome = (f"{len(culprits)} fused op(s) differ from their unfused TF ops" if culprits
               else "no fused op differs from its unfused TF ops")
    header = (f"Fusion on vs off ({run_label(comparison.fused_dir)} vs {run_label(comparison.unfused_dir)}): "
              f"{counted(len(comparison.ops), 'op')} compared, {outcome}.\n({rule})")
    if not ops:
        lines = [header]
    else:
        shown = ops if not limit else ops[:limit]
        rows = [[op.op_name, op.op_type, f"{op.output_distance:.3g}", f"{op.input_distance:.3g}",
                 f"{op.excess:.3g}", "yes" if op.differs else "-",
                 op.fused.passes_text if op.fused is not None else "(not fused)"] for op in shown]
        report.add_table(["op", "type", "distance out", "distance in", "excess", "differs", "made by"], rows,
                         title=header)
        lines = []
    notes = lines
    if comparison.steps_differ:
        notes.append(f"Not comparable: {comparison.steps_differ}.")
    if comparison.not_compared:
        notes.append(f"{comparison.not_compared} fusion-on tensor(s) have no fusion-off counterpart.")
    if comparison.unreadable:
        notes.append(f"{len(comparison.unreadable)} tensor(s) could not be read: {comparison.unreadable[0]}")
    if notes:
        report.add_text(*notes)
