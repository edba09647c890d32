"""What the page shows, as plain data: :class:`ReportData`, built by :func:`build_report_data`.

Inputs are a :class:`~precision_tool.reports.html.result_source.ResultSource` (the CSV and ``summary.json``),
optionally ``ac``'s :class:`~precision_tool.reports.html.findings.CheckFindings` and the failing tensors'
:class:`~precision_tool.reports.html.details.Details`. Everything here is text and numbers; the page
(:mod:`.page`) only lays it out.
"""
from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from typing import Dict, Optional, Tuple

from precision_tool import __version__
from precision_tool.reports.html.details import Details
from precision_tool.reports.html.plot import PlotPoint

PASS, FAIL, ERROR_VERDICT, NOT_COMPARED_VERDICT = "pass", "fail", "error", "not_compared"


@dataclass(frozen=True)
class Column:
    """A table column: its CSV name, and whether it sorts as a number."""

    name: str
    numeric: bool = False


@dataclass(frozen=True)
class TableRow:
    """One CSV row on the page: ``cells`` are the texts shown, in the CSV's format (numeric columns sort by the
    number shown; ``NaN`` last); ``detail`` is the position of its element details, if any."""

    position: int
    verdict: str
    op_name: str
    tensor_id: str
    cells: Tuple[str, ...]
    first_divergence: bool = False
    detail: Optional[int] = None


@dataclass(frozen=True)
class ReportData:
    """Everything on the page (see the module docstring)."""

    title: str
    csv_path: str
    threshold: float
    columns: Tuple[Column, ...]
    rows: Tuple[TableRow, ...]
    points: Tuple[PlotPoint, ...]
    counts: Dict[str, int]
    divergence: object
    summary: Optional[dict] = None
    findings: object = None
    details: Details = Details()
    notes: Tuple[str, ...] = ()
    created: str = field(default_factory=lambda: time.strftime("%Y-%m-%d %H:%M:%S"))
    tool: str = f"precision_tool {__version__}"

    @property
    def first_divergence(self) -> Optional[str]:
        first = getattr(self.divergence, "first", None)
        return first.op_name if first is not None else None

    @property
    def failing_rows(self) -> Tuple[TableRow, ...]:
        return tuple(row for row in self.rows if row.verdict in (FAIL, ERROR_VERDICT))


def _format_metric(value) -> str:
    if value is None:
        return "NaN"
    if isinstance(value, float):
        return f"{value:.6f}"
    return str(value)


def _columns(table) -> Tuple[Column, ...]:
    from precision_tool.metrics import ALL

    present = table.rows[0].metrics if table.rows else {name: None for name in ALL}
    metrics = [Column(name, numeric=name != "StandardDeviation") for name in ALL if name in present]
    return (Column("Index", True), Column("OpType"), Column("NPUDump"), Column("DataType"), Column("Address", True),
            Column("GroundTruth"), Column("DataType"), Column("TensorIndex"), Column("Shape"), *metrics,
            Column("CompareFailReason"))


def _verdict(result) -> str:
    from precision_tool.comparison import ERROR

    if result.status == ERROR:
        return ERROR_VERDICT
    if result.compared:
        return PASS if result.passed else FAIL
    return NOT_COMPARED_VERDICT


def _row(position: int, csv_row, result, columns, first: Optional[str], detail: Optional[int]) -> TableRow:
    verdict = _verdict(result)
    reason = csv_row.reason or (result.reason if verdict == FAIL else "")
    cells = [str(csv_row.index) if csv_row.index is not None else "", csv_row.op_type, csv_row.npu_dump,
             csv_row.npu_dtype, csv_row.address, csv_row.ground_truth, csv_row.ref_dtype, csv_row.tensor_id or "NaN",
             csv_row.shape]
    cells += [_format_metric(csv_row.metrics.get(column.name)) for column in columns[9:-1]]
    cells.append(reason)
    return TableRow(position, verdict, result.op_name, csv_row.tensor_id, tuple(cells),
                    first_divergence=verdict == FAIL and result.op_name == first, detail=detail)


def build_report_data(source, findings=None, details: Details = Details(), title: str = "") -> ReportData:
    """The page's data from a result read back, ``ac``'s findings (or ``None``) and the element details."""
    comparison = source.comparison
    first = comparison.divergence.first.op_name if comparison.divergence.first is not None else None
    detail_of = {detail.tensor_id: k for k, detail in enumerate(details.tensors)}
    columns = _columns(source.table)
    rows, points = [], []
    for position, (csv_row, result) in enumerate(zip(source.table.rows, comparison.results)):
        row = _row(position, csv_row, result, columns, first, detail_of.get(csv_row.tensor_id))
        rows.append(row)
        if row.verdict in (PASS, FAIL):
            points.append(PlotPoint(position, csv_row.index, csv_row.tensor_id, result.op_name, result.cosine,
                                    result.metric("MaxRelativeError"), row.verdict == FAIL))
    counts = comparison.counts()
    notes = []
    if source.summary is None:
        notes.append("No summary.json for this CSV (msaccucmp's, or another run's folder): order from the Index "
                     "column, no graph edges, no coverage report, no element details.")
    if details.note:
        notes.append(f"Element errors not shown: {details.note}")
    workspace = getattr(findings, "workspace", "") if findings is not None else ""
    page_title = title or f"Accuracy report: {workspace or os.path.basename(source.csv_path)}"
    return ReportData(title=page_title, csv_path=os.path.abspath(source.csv_path), threshold=source.threshold,
                      columns=columns, rows=tuple(rows), points=tuple(points), counts=counts,
                      divergence=comparison.divergence, summary=source.summary, findings=findings, details=details,
                      notes=tuple(notes))
