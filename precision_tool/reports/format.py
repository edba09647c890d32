"""Render a :class:`~precision_tool.reports.report.Report` as terminal text or JSON (one place for both)."""
from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any, List

from tabulate import tabulate

from precision_tool.reports.report import Report, Table, Text


@dataclass(frozen=True)
class OutputSettings:
    """How tables look. ``max_rows`` truncates long tables with a note (0 = no limit)."""

    table_format: str = "simple"
    float_format: str = ".6g"
    max_rows: int = 0


def format_report(report: Report, settings: OutputSettings = OutputSettings()) -> str:
    """The report as text: title, each block, status; blocks separated by a blank line."""
    parts: List[str] = []
    if report.title:
        parts.append(report.title)
    for block in report.blocks:
        if isinstance(block, Table):
            parts.append(_format_table(block, settings))
        elif isinstance(block, Text):
            parts.append("\n".join(block.lines))
    if report.status:
        parts.append(report.status)
    return "\n\n".join(p for p in parts if p)


def _format_table(table: Table, settings: OutputSettings) -> str:
    rows = list(table.rows)
    note = ""
    if settings.max_rows and len(rows) > settings.max_rows:
        note = f"... {len(rows) - settings.max_rows} more rows not shown"
        rows = rows[: settings.max_rows]
    text = tabulate(rows, headers=list(table.headers), tablefmt=settings.table_format,
                    floatfmt=settings.float_format, disable_numparse=True) if rows else "(none)"
    lines = [table.title] if table.title else []
    lines.append(text)
    if note:
        lines.append(note)
    return "\n".join(lines)


def _json_safe(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)  # "nan", "inf": JSON has no literal for them
    if isinstance(value, dict):
        return {str(k): _json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_safe(v) for v in value]
    if hasattr(value, "item") and callable(value.item):  # numpy scalar
        return _json_safe(value.item())
    return value


def report_to_json(report: Report) -> str:
    """The machine-readable form: ``{"title", "status", "exit_code", "data"}`` (NaN/inf as strings)."""
    return json.dumps(_json_safe({"title": report.title, "status": report.status,
                                  "exit_code": report.exit_code, "data": report.data}), indent=2)
