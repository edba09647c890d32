"""The HTML page: one self-contained file (CSS, SVG and JavaScript inline; no network, no external assets).

Sections, top to bottom: the verdict, the accuracy plot (:mod:`.plot`), the failing tensors' element errors
(:mod:`.histogram`), the graph view (:mod:`.graph_data`), the table of every CSV row, the coverage report, and ``ac``'s
overflow and fusion sections (docs/internals/reports.md#page). The table is complete without JavaScript (CI artifact
viewers often block scripts); ``report.js`` only adds sorting, the filter and the row counter, then sets
``data-status="ok"`` on ``<body>``. Every piece of data goes through :mod:`.markup` escaping; no data is placed inside
a script: the graph view's data is JSON in a ``<script type="application/json">`` element (with ``<`` written
``\\u003c``, so no text in it can close the element), which the view's script parses.
"""
from __future__ import annotations

import json
import os
from typing import Dict, List

from precision_tool.reports.html.data import ReportData
from precision_tool.reports.html.details import histogram_labels
from precision_tool.reports.html.histogram import histogram_svg
from precision_tool.reports.html.markup import element, text
from precision_tool.reports.html.plot import accuracy_plot_svg
from precision_tool.reports.report import Table, Text
from precision_tool.metrics.tensor_verdict import threshold_text

ASSET_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "data")
_NAME_COLUMNS = ("NPUDump", "GroundTruth", "TensorIndex")
_LONG_CELL = 40


def _asset(name: str) -> str:
    with open(os.path.join(ASSET_DIR, name), encoding="utf-8") as handle:
        return handle.read()


def _paragraph(content: str, **attrs) -> str:
    return element("p", content, attrs)


def _list(items, **attrs) -> str:
    return element("ul", "".join(element("li", text(item)) for item in items), attrs) if items else ""


def _header(data: ReportData) -> str:
    counts = data.counts
    pills = [("good" if not counts["failed"] else "", f"{counts['compared']} compared"),
             ("bad" if counts["failed"] else "good", f"{counts['failed']} failing"),
             ("", f"{counts['passed']} passing"),
             ("", f"cosine threshold {threshold_text(data.threshold)}")]
    if counts.get("errors"):
        pills.append(("bad", f"{counts['errors']} unreadable"))
    if counts.get("not_compared"):
        pills.append(("", f"{counts['not_compared']} without reference"))
    meta = [f"Result {element('code', text(data.csv_path))}"]
    inputs = data.inputs
    if inputs.get("npu"):
        meta.append(f"NPU dump {element('code', text(inputs['npu']))}")
    if inputs.get("reference"):
        meta.append(f"reference {element('code', text(inputs['reference']))}")
    meta.append(text(f"made {data.created} by {data.tool}"))
    return (element("h1", text(data.title)) + _paragraph(" &middot; ".join(meta), class_="meta")
            + element("ul", "".join(element("li", text(label), class_=f"pill {kind}".strip())
                                    for kind, label in pills), class_="pills", id="counts"))


def _verdict_card(data: ReportData) -> str:
    findings = data.findings
    parts: List[str] = [element("h2", "Verdict")]
    clean = False
    if findings is not None:
        verdict = findings.verdict
        clean = verdict.culprit is None and not data.failing_rows
        parts.append(_paragraph(text(verdict.headline), class_="headline", id="verdict-headline"))
        if verdict.culprit is not None:
            parts.append(_list(verdict.culprit.reasons, id="culprit-reasons"))
        if verdict.also:
            parts.append(_paragraph("Also:") + _list(verdict.also))
        if verdict.next_commands:
            commands = "\n".join(f"{findings.command_prefix} {command}".strip() for command in verdict.next_commands)
            parts.append(_paragraph("Next:") + element("pre", text(commands)))
    else:
        first = data.divergence.first if data.divergence is not None else None
        clean = first is None and not data.failing_rows
        if first is None:
            headline = "No op fails on matching inputs."
        elif first.unknown_inputs:
            headline = (f"First divergence: {first.op_name} (outputs {list(first.failed_outputs)} fail; its inputs "
                        f"{list(first.unknown_inputs)} were not compared and are assumed right)")
        else:
            headline = (f"First divergence: {first.op_name} (outputs {list(first.failed_outputs)} fail on inputs that "
                        "still match)")
        parts.append(_paragraph(text(headline), class_="headline", id="verdict-headline"))
        parts.append(_paragraph(text("Overflow and fusion were not checked for this page: 'precision_tool -d "
                                     "WORKSPACE report -f RESULT' adds them."), class_="note"))
    for note in data.notes:
        parts.append(_paragraph(text(note), class_="note"))
    return element("section", "".join(parts), class_=f"card verdict{' clean' if clean else ''}", id="verdict")


def _plot_card(data: ReportData) -> str:
    marks = data.findings.overflow_marks if data.findings is not None else ()
    svg = accuracy_plot_svg(data.points, data.threshold, data.first_divergence, marks)
    hint = ("Each point is a compared tensor in execution order; hover for its name, click to jump to its row. "
            "The red line marks the first divergence, orange triangles the ops the overflow checks name.")
    return element("section", element("h2", "Where the error starts") + _paragraph(text(hint), class_="meta")
                   + element("div", svg, class_="plot-wrap"), class_="card", id="plot")


def _worst_table(detail) -> str:
    head = element("tr", "".join(element("th", label, class_=cls) for label, cls in (
        ("#", "num"), ("index", ""), ("NPU", "num"), ("reference", "num"), ("abs error", "num"),
        ("rel error", "num"))))
    rows = []
    for rank, item in enumerate(detail.worst, start=1):
        rel = f"{item.rel_error:.4g}"
        cells = [(str(rank), "num"), (str(list(item.index)), "mono"), (f"{item.npu:.6g}", "num"),
                 (f"{item.reference:.6g}", "num"), (f"{item.abs_error:.4g}", "num"), (rel, "num")]
        rows.append(element("tr", "".join(element("td", text(value), class_=cls) for value, cls in cells)))
    return element("table", element("thead", head) + element("tbody", "".join(rows)), class_="plain worst")


def _detail_card(position: int, detail, first: str, row_of: dict) -> str:
    row = row_of.get(detail.tensor_id)
    link = element("a", "table row", href=f"#row-{row}") if row is not None else ""
    lines = [f"{detail.op_type or '?'}: {detail.status}: {detail.reason}"]
    if detail.reference:
        lines.append(f"reference {detail.reference}; NPU shape {list(detail.shape)}")
    if detail.same_bytes_as:
        lines.append(f"also {', '.join(detail.same_bytes_as)}: the same bytes, fed by this output (not shown twice)")
    parts = [element("h3", text(detail.tensor_id)), _paragraph(text(" / ".join(lines)) + (f" ({link})" if link else ""),
                                                            class_="meta")]
    if detail.histogram is not None:
        parts.append(histogram_svg(detail.histogram, histogram_labels(detail.histogram.edges),
                                   title="how many elements have which relative error"))
        parts.append(_paragraph(text(f"The {len(detail.worst)} largest absolute errors:")) + _worst_table(detail))
    if detail.note:
        parts.append(_paragraph(text(detail.note), class_="note"))
    cls = "detail first" if detail.op_name == first else "detail"
    return element("article", "".join(parts), class_=cls, id=f"detail-{position}", data_op=detail.op_name)


def _details_card(data: ReportData) -> str:
    details = data.details
    if not details.tensors:
        return ""
    row_of = {row.tensor_id: row.position for row in data.rows if row.tensor_id}
    cards = "".join(_detail_card(k, detail, data.first_divergence or "", row_of)
                    for k, detail in enumerate(details.tensors))
    more = (_paragraph(text(f"{details.skipped} more failing tensor(s) not detailed (report --details 0 details "
                            "all)."), class_="meta") if details.skipped else "")
    return element("section", element("h2", "Failing tensors: where the error sits") + more
                   + element("div", cards, class_="details-grid"), class_="card", id="details")


def _column_keys(data: ReportData) -> List[str]:
    seen: Dict[str, int] = {}
    keys: List[str] = []
    for column in data.columns:
        seen[column.name] = seen.get(column.name, 0) + 1
        keys.append(column.name if seen[column.name] == 1 else f"{column.name}_{seen[column.name]}")
    return keys


def _column_css(data: ReportData) -> str:
    """Per-column cell styles by position (``td:nth-child``), so the rows carry no class per cell."""
    rules = []
    for style, wanted in (("text-align:right;font-variant-numeric:tabular-nums", lambda c: c.numeric),
                          ("font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace",
                           lambda c: c.name in _NAME_COLUMNS),
                          ("white-space:normal;min-width:240px", lambda c: c.name == "CompareFailReason")):
        selectors = [f"#tensor-table td:nth-child({k + 1})" for k, column in enumerate(data.columns) if wanted(column)]
        if selectors:
            rules.append(",".join(selectors) + "{" + style + "}")
    return "\n".join(rules)


def _cell(value: str, column, extra: str = "") -> str:
    if column.name == "GroundTruth" and len(value) > _LONG_CELL:
        return element("td", text(value) + extra, {"class": "long", "title": value})
    return element("td", text(value) + extra)


def _table_card(data: ReportData) -> str:
    keys = _column_keys(data)
    head = element("tr", "".join(element("th", element("span", text(column.name)), {
        "data-key": key, "data-type": "num" if column.numeric else "text", "scope": "col"})
        for column, key in zip(data.columns, keys)))
    body = []
    tensor_column = next(k for k, column in enumerate(data.columns) if column.name == "TensorIndex")
    for row in data.rows:
        classes = [row.verdict] + (["first"] if row.first_divergence else [])
        cells = []
        for k, (value, column) in enumerate(zip(row.cells, data.columns)):
            extra = ""
            if k == tensor_column and row.first_divergence:
                extra = element("span", "first divergence", class_="badge")
            if k == tensor_column and row.detail is not None:
                extra += " " + element("a", "details", href=f"#detail-{row.detail}")
            cells.append(_cell(value, column, extra))
        body.append(element("tr", "".join(cells), {"id": f"row-{row.position}", "class": " ".join(classes),
                                                   "data-op": row.op_name}))
    table = element("table", element("thead", head) + element("tbody", "".join(body)), id="tensor-table",
                    data_rows=len(data.rows))
    intro = ("Every row of the result CSV, in its columns. Failing rows are red, the first divergence darker. "
             "Click a column to sort; the filter matches any cell.")
    return element("section", element("h2", text(f"All tensors ({len(data.rows)})"))
                   + _paragraph(text(intro), class_="meta")
                   + element("div", "", id="table-controls") + element("div", table, class_="table-wrap"),
                   class_="card", id="tensors")


def _name_list(title: str, items, limit: int = 200) -> str:
    if not items:
        return ""
    shown = list(items)[:limit]
    lines = [" -- ".join(item) if isinstance(item, (list, tuple)) else str(item) for item in shown]
    more = f" (first {limit})" if len(items) > limit else ""
    return element("details", element("summary", text(f"{title}: {len(items)}{more}"))
                   + element("pre", text("\n".join(lines)), class_="text-block"))


def _coverage_card(data: ReportData) -> str:
    counts = data.counts
    facts = data.facts
    coverage = facts.coverage.to_dict() if facts is not None and facts.coverage is not None else None
    rows = [("compared", counts["compared"]), ("passed", counts["passed"]), ("failed", counts["failed"]),
            ("aligned but unreadable", counts.get("errors", 0)),
            ("NPU tensors without a reference", counts.get("not_compared", 0)),
            ("graph ops without a dump", counts.get("ops_without_dump", 0))]
    if coverage:
        rows.insert(0, ("NPU tensors dumped", coverage.get("npu_tensors", 0)))
        rows.append(("reference tensors compared with nothing", len(coverage.get("reference_only", []))))
    table = element("table", element("tbody", "".join(
        element("tr", element("th", text(label)) + element("td", text(value))) for label, value in rows)),
                    class_="plain")
    lists = ""
    if coverage:
        lists = "".join(_name_list(title, coverage.get(key) or []) for title, key in (
            ("NPU tensors without a reference (and why)", "unaligned"), ("dumped ops with no reference at all",
                                                                        "npu_only_ops"),
            ("reference tensors compared with nothing", "reference_only"),
            ("graph ops without a dump", "graph_ops_without_dump"), ("dumped ops not in the graph",
                                                                     "dumped_not_in_graph"),
            ("ambiguous names not guessed", "ambiguous"), ("unreadable dump files", "unreadable")))
        if facts is not None and facts.order_source != "graph":
            lists += _paragraph(text("No graph: tensors matched by name, inputs not compared, order by dump time."),
                                class_="note")
    else:
        lists = _paragraph(text("No summary.json: the coverage report needs precision_tool's own result."),
                           class_="note")
    return element("section", element("h2", "Coverage: what was compared, and what was not") + table + lists,
                   class_="card", id="coverage")


def render_blocks(report) -> str:
    """A :class:`~precision_tool.reports.report.Report`'s blocks as HTML: tables and preformatted text."""
    parts = []
    for block in report.blocks:
        if isinstance(block, Table):
            caption = _paragraph(text(block.title)) if block.title else ""
            head = element("tr", "".join(element("th", text(h)) for h in block.headers))
            rows = "".join(element("tr", "".join(element("td", text("" if v is None else v)) for v in r))
                           for r in block.rows)
            parts.append(caption + element("table", element("thead", head) + element("tbody", rows), class_="plain"))
        elif isinstance(block, Text):
            parts.append(element("pre", text("\n".join(block.lines)), class_="text-block"))
    return "".join(parts)


def _checks_card(data: ReportData) -> str:
    if data.findings is None:
        return ""
    return element("section", element("h2", "Overflow and fusion checks (as ac prints them)")
                   + render_blocks(data.findings.sections), class_="card", id="checks")


def _graph_card(data: ReportData) -> str:
    """The graph view (``id="graph-view"``): controls, the drawing, the clicked op's panel, and the data."""
    graph = data.graph
    if not graph:
        return ""
    culprit = f"thick red border: {graph['culprit_is']}" if graph.get("culprit") else "no culprit"
    hint = (f"The NPU graph ({len(graph['ops'])} ops{', ' + graph['graph'] if graph.get('graph') else ''}), laid "
            f"out by dagre. Colour: {graph['legend']}, green to red (green: the op adds no error of its own, even "
            f"when it fails by inheriting it); red outline: a tensor of the op fails the cosine gate; grey: nothing "
            f"of the op compared; amber: unreadable; {culprit}; "
            "orange corner: overflow. Dashed boxes are name scopes: click one to open it; click an op for its "
            "tensors and its table row. Constants (weights) are hidden until you ask for them.")
    payload = json.dumps(graph, separators=(",", ":"), allow_nan=False).replace("<", "\\u003c")
    return element("section", element("h2", "Where in the graph") + _paragraph(text(hint), class_="meta")
                   + element("div", "", id="graph-controls")
                   + element("div", element("div", "", id="graph-canvas") + element("aside", "", id="graph-panel"),
                             class_="graph-wrap")
                   + '<script type="application/json" id="graph-data">' + payload + "</script>",
                   class_="card", id="graph-view", data_ops=len(graph["ops"]))


def _graph_scripts(data: ReportData) -> str:
    return (element("script", _asset("dagre.min.js")) + element("script", _asset("graph_view.js"))
            if data.graph else "")


def render_page(data: ReportData, graph_only: bool = False) -> str:
    """The whole page as one HTML string; ``graph_only``: the header and the graph view alone."""
    footer = element("footer", text(f"{data.tool}: precision_tool report. Self-contained: this file needs no "
                                    "network and no other file."))
    if graph_only:
        sections = [_header(data), _graph_card(data) or _paragraph(text("No graph: the result names no Build "
                                                                          "graph and no execution order."),
                                                                     class_="note"), footer]
    else:
        sections = [_header(data), _verdict_card(data), _plot_card(data), _graph_card(data), _details_card(data),
                    _table_card(data), _coverage_card(data), _checks_card(data), footer]
    head = ('<meta charset="utf-8">'
            + '<meta name="viewport" content="width=device-width, initial-scale=1">'
            + element("title", text(data.title)) + element("style", _asset("report.css") + _column_css(data) + "\n"))
    body = element("main", "".join(sections)) + _graph_scripts(data) + element("script", _asset("report.js"))
    return ('<!DOCTYPE html>\n<html lang="en">\n<head>' + head + '</head>\n<body data-status="loading">' + body
            + "</body>\n</html>\n")
