"""Report blocks for the overflow checks: records with their located ops, the dump scan, lossy casts.

Builders append :class:`~precision_tool.reports.report.Table`/``Text`` blocks to a report and return plain
``data`` for ``--json``; they never read files.
"""
from __future__ import annotations

from typing import List, Optional

from precision_tool.reports.report import Report
from precision_tool.reports.format import counted

TENSOR_HEADERS = ("tensor", "dtype", "shape", "max", "min", "mean", "inf", "nan")


def number(value: Optional[float]) -> str:
    """``4.2``, ``65504``, ``1.2346e-05``; ``-`` for ``None``."""
    return "-" if value is None else f"{value:.5g}"


def shape_cell(summary) -> str:
    return f"{summary.layout} [{', '.join(str(d) for d in summary.shape)}]"


def tensor_rows(tensors) -> List[list]:
    rows = []
    for t in tensors:
        label = t.label + (f" ({t.note})" if t.note else "")
        rows.append([label, t.dtype, shape_cell(t), number(t.max), number(t.min), number(t.mean), t.inf, t.nan])
    return rows


def add_overflow_records(report: Report, check) -> None:
    """One table per shown record (first overflow first), then a line for records beyond the limit and one
    per undecodable record."""
    if not check.folder_exists:
        return
    if check.not_read:
        report.add_text(f"Overflow run: its records were not read: {check.not_read}.")
        return
    total = check.records
    if total == 0:
        report.add_text(f"Overflow run: no Opdebug records in {check.folder}.")
        return
    report.add_text(f"Overflow run: {total} Opdebug record(s) in {check.folder}, oldest first "
                    "(the first overflow leads; later ones usually inherit it):")
    for finding in check.shown:
        ids = f"task {finding.task_id}, stream {finding.stream_id}"
        if finding.context_id is not None or finding.thread_id is not None:
            ids += f", context {finding.context_id}, thread {finding.thread_id}"
        head = (f"[{finding.position}] {finding.op_type or '?'} {finding.op_name or '(op not found)'}  "
                f"{finding.unit} {ids}, status {finding.status_text}, timestamp {finding.timestamp}")
        lines = [head] + [f"    {line}" for line in finding.status_lines or ("no status bit set",)]
        if finding.problem:
            lines.append(f"    {finding.problem}")
        if finding.tensors:
            report.add_table(TENSOR_HEADERS, tensor_rows(finding.tensors), title="\n".join(lines))
        else:
            report.add_text(*lines)
    hidden = check.findings[len(check.shown):]
    if hidden:
        names = ", ".join(f"[{f.position}] {f.op_name or f'task {f.task_id}'}" for f in hidden[:8])
        more = f" and {len(hidden) - 8} more" if len(hidden) > 8 else ""
        report.add_text(f"{len(hidden)} later record(s) not detailed (-l 0 shows all): {names}{more}")
    if check.failures:
        report.add_text(f"{len(check.failures)} record(s) could not be decoded:",
                        *(f"  {line}" for line in check.failures))


def add_dump_scan(report: Report, scan, limit: int = 0) -> None:
    """The normal run's outputs holding inf/NaN or saturated fp16 values, in execution order."""
    if scan is None:
        return
    if not scan.ops:
        report.add_text(f"Dump scan of {scan.folder}: {counted(scan.ops_scanned, 'op')}, no output holds inf/NaN or "
                        "saturated fp16 values.")
    else:
        first = scan.first_introduced
        shown = scan.ops if not limit else scan.ops[:limit]
        rows = [[op.position, op.op_name, op.op_type, op.worst.label, op.worst.inf, op.worst.nan,
                 op.worst.saturated, "-" if op.worst.first_non_finite is None else list(op.worst.first_non_finite),
                 op.origin + (f" (inputs {list(op.bad_inputs)})" if op.bad_inputs else "")] for op in shown]
        title = (f"Dump scan of {scan.folder}: {len(scan.ops)} of {counted(scan.ops_scanned, 'op')} write inf/NaN or "
                 f"saturated fp16 values; they first appear at {first.op_name}:")
        report.add_table(["#", "op", "type", "tensor", "inf", "nan", "saturated", "first at", "origin"], rows,
                         title=title)
    if scan.unreadable:
        report.add_text(f"{len(scan.unreadable)} dump file(s) or tensor(s) could not be read:",
                        *(f"  {line}" for line in scan.unreadable[:10]))


def add_casts(report: Report, casts, limit: int = 0) -> None:
    """Casts that lose information."""
    if casts is None or not casts.lossy:
        if casts is not None and casts.casts_checked:
            report.add_text(f"Casts: {casts.casts_checked} narrowing cast(s) checked, none loses information.")
        return
    shown = casts.lossy if not limit else casts.lossy[:limit]
    rows = [[cast.op_name, cast.op_type, f"{cast.from_dtype} -> {cast.to_dtype}", "; ".join(cast.losses)]
            for cast in shown]
    report.add_table(["op", "type", "cast", "what is lost"], rows,
                     title=f"Casts that lose information ({len(casts.lossy)} of {casts.casts_checked} checked):")
