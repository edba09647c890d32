"""Render a :class:`~precision_tool.reports.report.Report` as terminal text or JSON (one place for both)."""
from __future__ import annotations

import json
import math
import numbers
from dataclasses import dataclass
from typing import Any, List

from tabulate import tabulate

from precision_tool.reports.report import Report, Table, Text


@dataclass(frozen=True)
class OutputSettings:
    """How tables look.

    ``table_format`` is tabulate's ``tablefmt``. ``float_format`` formats the cells that are real,
    non-integer numbers (``float``, numpy floating scalars); every other cell is printed as it is, so text
    that looks like a number (an op called ``1e5``, a value a report already formatted) is never re-parsed.
    ``max_rows`` truncates long tables with a note (0 = no limit).

    >>> table = Report().add_table(["op", "cosine", "count", "note"], [["1e5", 0.123456789, 3, "0.50"]])
    >>> print(format_report(table, OutputSettings(float_format=".3f")))
    op    cosine    count    note
    ----  --------  -------  ------
    1e5   0.123     3        0.50
    """

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
    cells = [[_cell(value, settings.float_format) for value in row] for row in rows]
    text = tabulate(cells, headers=list(table.headers), tablefmt=settings.table_format,
                    disable_numparse=True) if rows else "(none)"
    lines = [table.title] if table.title else []
    lines.append(text)
    if note:
        lines.append(note)
    return "\n".join(lines)


def _cell(value: Any, float_format: str) -> Any:
    """``value`` formatted with ``float_format`` when it is a real, non-integer number, else as it is.

    (tabulate's own ``floatfmt`` is ignored with ``disable_numparse``, which keeps number-like text intact.)
    """
    if isinstance(value, numbers.Real) and not isinstance(value, numbers.Integral):
        return format(value, float_format)
    return value


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
