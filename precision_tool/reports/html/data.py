"""What the page shows, as plain data: :class:`ReportData`, built by :func:`build_report_data`.

Inputs are a :class:`~precision_tool.reports.result_store.StoredResult` (the result read back),
optionally ``ac``'s :class:`~precision_tool.reports.html.findings.CheckFindings` and the failing tensors'
:class:`~precision_tool.reports.html.details.Details`. Everything here is text and numbers; the page
(:mod:`.page`) only lays it out.
"""
from __future__ import annotations

import dataclasses
import os
import time
from dataclasses import dataclass, field
from typing import Any, Dict, Mapping, Optional, Tuple

from precision_tool import __version__
from precision_tool.alignment import Divergence
from precision_tool.comparison.result import RunFacts
from precision_tool.reports.html.details import Details
from precision_tool.reports.html.graph_data import culprit_and_evidence, culprit_of, graph_view_data
from precision_tool.reports.html.findings import CheckFindings
from precision_tool.reports.html.plot import PlotPoint

PASS, FAIL = "pass", "fail"  # Status.verdict words the page styles and plots


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
    divergence: Divergence
    facts: Optional[RunFacts] = None
    inputs: Mapping[str, Optional[str]] = field(default_factory=dict)
    findings: Optional[CheckFindings] = None
    details: Details = Details()
    notes: Tuple[str, ...] = ()
    graph: Optional[Dict[str, Any]] = None  # the graph view's data (.graph_data); None: no graph to draw
    culprit: str = ""  # the run's culprit: ac's verdict (findings, or stored with the result), else the judgment's
    culprit_evidence: str = ""  # how it was found: "local error (replay)", "first divergence", ...
    same_model: bool = True  # False: the runs do not compute the same model (no op is judged)
    created: str = field(default_factory=lambda: time.strftime("%Y-%m-%d %H:%M:%S"))
    tool: str = f"precision_tool {__version__}"

    @property
    def first_divergence(self) -> Optional[str]:
        first = self.divergence.first
        return first.op_name if first is not None else None

    @property
    def failing_rows(self) -> Tuple[TableRow, ...]:
        return tuple(row for row in self.rows if row.verdict in (FAIL, "error"))


def _columns(metric_columns: Tuple[str, ...], npu_vs_npu: bool) -> Tuple[Column, ...]:
    from precision_tool.metrics import ALL

    metrics = [Column(name, numeric=name != "StandardDeviation") for name in ALL if name in metric_columns]
    addresses = (Column("Address", True),) if npu_vs_npu else ()
    return (Column("Index", True), Column("OpType"), Column("NPUDump"), Column("DataType"), Column("Address", True),
            Column("GroundTruth"), Column("DataType"), *addresses, Column("TensorIndex"), Column("Shape"), *metrics,
            Column("CompareFailReason"))


_SHOWN_FIRST = ("Index", "TensorIndex", "OpType")
_SHOWN_LAST = ("Shape", "DataType", "GroundTruth", "NPUDump", "Address")


def display_order(columns: Tuple[Column, ...]) -> Tuple[int, ...]:
    """The page shows the CSV's columns in another order: what a reader scans first -- the row, the tensor, its op
    type, then the metrics from CosineSimilarity on and the reason -- and the bookkeeping last (shapes, dtypes,
    ground-truth names, dump paths, addresses, which are zero on most dumps). Indexes into ``columns``.

    >>> display_order((Column("Index"), Column("NPUDump"), Column("Address"), Column("TensorIndex"),
    ...                Column("CosineSimilarity")))
    (0, 3, 4, 1, 2)
    """
    def rank(k: int) -> tuple:
        name = columns[k].name
        if name in _SHOWN_FIRST:
            return (0, _SHOWN_FIRST.index(name), k)
        if name in _SHOWN_LAST:
            return (2, _SHOWN_LAST.index(name), k)
        return (1, 0, k)  # the metrics and the reason, in the CSV's order
    return tuple(sorted(range(len(columns)), key=rank))


def _row(position: int, result, metric_columns: Tuple[str, ...], npu_vs_npu: bool, first: Optional[str],
         detail: Optional[int], reason: str) -> TableRow:
    """The CSV's cells of ``result`` (only the metric columns the CSV holds) and the reason shown
    (:meth:`~precision_tool.reports.result_store.StoredResult.shown_reason`: a plain ``FAIL`` shows the cosine
    gate's words)."""
    from precision_tool.metrics import ALL
    from precision_tool.reports.result_csv import result_row

    verdict = result.status.verdict
    cells = result_row(result, npu_vs_npu)
    metrics_at = len(cells) - 1 - len(ALL)
    shown = [cell for name, cell in zip(ALL, cells[metrics_at:-1]) if name in metric_columns]
    cells = cells[:metrics_at] + shown + [reason]
    return TableRow(position, verdict, result.op_name, result.tensor_id, tuple(cells),
                    first_divergence=verdict == FAIL and result.op_name == first, detail=detail)


def build_report_data(source, findings: Optional[CheckFindings] = None, details: Optional[Details] = None,
                      title: str = "", selection=None) -> ReportData:
    """The page's data from a result read back (a :class:`~precision_tool.reports.result_store.StoredResult`),
    ``ac``'s findings (or ``None``) and the element details (``selection``: the dump step and device read)."""
    details = details if details is not None else Details()
    comparison = source.comparison
    first = comparison.divergence.first.op_name if comparison.divergence.first is not None else None
    detail_of = {detail.tensor_id: k for k, detail in enumerate(details.tensors)}
    columns = _columns(source.metric_columns, comparison.npu_vs_npu)
    rows, points = [], []
    for position, result in enumerate(comparison.results):
        row = _row(position, result, source.metric_columns, comparison.npu_vs_npu, first,
                   detail_of.get(result.tensor_id), source.shown_reason(position))
        rows.append(row)
        if row.verdict in (PASS, FAIL):
            points.append(PlotPoint(position, result.index if result.index >= 0 else None, result.tensor_id,
                                    result.op_name, result.cosine, result.metric("MaxRelativeError"),
                                    row.verdict == FAIL, result.local_error, result.local_floor,
                                    result.metric("RelativeEuclideanDistance")))
    counts = comparison.counts()
    order = display_order(columns)
    notes = []
    if not source.has_run_facts:
        notes.append("No summary.json for this CSV (msaccucmp's, or another run's folder): order from the Index "
                     "column, no graph edges, no coverage report, no element details.")
    if details.note:
        notes.append(f"Element errors not shown: {details.note}")
    workspace = getattr(findings, "workspace", "") if findings is not None else ""
    page_title = title or f"Accuracy report: {workspace or os.path.basename(source.csv_path)}"
    return ReportData(title=page_title, csv_path=os.path.abspath(source.csv_path), threshold=source.threshold,
                      columns=tuple(columns[k] for k in order),
                      rows=tuple(dataclasses.replace(row, cells=tuple(row.cells[k] for k in order)) for row in rows),
                      points=tuple(points), counts=counts,
                      divergence=comparison.divergence, facts=comparison.facts if source.has_run_facts else None,
                      inputs=dict(source.inputs), findings=findings, details=details, notes=tuple(notes),
                      graph=graph_view_data(source, findings, selection) if source.has_run_facts else None,
                      culprit=culprit_of(findings, source), same_model=comparison.verdict.same_model,
                      culprit_evidence=culprit_and_evidence(findings, source)[1])
