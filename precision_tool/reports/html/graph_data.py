"""The NPU graph as page data for the graph view: ops, data edges, and what the comparison found at each op.

:func:`graph_view_data` returns a JSON-ready dict the page's script (``data/graph_view.js``) draws as a DAG, laid out
by dagre in the browser: one entry per op of the Build graph, in execution order, with its producers, TF ops, passes,
verdict, colour value, culprit mark and compared tensors. The colour value (:data:`COLOUR_BY`) is an op's largest local
error over its floor with replay figures (``ac -c``), else its largest relative error against the reference; the
culprit is the run's one judgment's. When the Build graph is gone, the summary's order and data edges give the ops and
edges. The entry's keys and the colour rule: docs/internals/reports.md#graph_data.
"""
from __future__ import annotations

import math
from typing import Any, Dict, List, Optional, Sequence, Tuple

from precision_tool.comparison.attribution import ratio_of
from precision_tool.status import Status

#: The colour value of a local error over a zero floor (an infinite ratio, which JSON cannot hold): past the
#: scale's end, drawn as the worst.
WORST_RATIO = 1e12
COLOUR_BY = {"local": "local error / its floor (replay)", "total": "relative error ||npu - ref|| / ||ref||"}


def graph_view_data(source, findings=None, selection=None) -> Optional[Dict[str, Any]]:
    """The view's data for a :class:`~precision_tool.reports.result_store.StoredResult` and ``ac``'s findings
    (``None``: no checks); ``None`` when neither a graph nor the summary's order names the ops."""
    graphs = _load_graphs(source.inputs, selection)
    comparison = source.comparison
    if graphs:
        seen, ops = set(), []
        for graph in graphs:  # the root graph, then its subgraphs (compared ops may be in either)
            for op in graph.ops:
                if op.name not in seen:
                    seen.add(op.name)
                    ops.append((op.name, op.type, [ref.producer for ref in op.data_inputs],
                                list(op.original_op_names), list(op.pass_names), _layouts(op)))
        name = graphs[0].name
    else:
        order = list(comparison.facts.order) if comparison.facts is not None else []
        edges = comparison.facts.data_inputs if comparison.facts is not None else {}
        if not order:
            return None
        types = {row.op_name: row.op_type for row in comparison.results}
        ops = [(op, types.get(op, ""), [producer for producer, _ in edges.get(op, ())], [], [], "") for op in order]
        name = ""
    rows_of: Dict[str, List[Tuple[int, Any]]] = {}
    for position, row in enumerate(comparison.results):
        rows_of.setdefault(row.op_name, []).append((position, row))
    local = any(row.local_error is not None for row in comparison.results)
    culprit = culprit_of(findings, source)
    overflow = {mark.op_name: mark.label for mark in (findings.overflow_marks if findings is not None else ())}
    index = {op[0]: k for k, op in enumerate(ops)}
    attribution = comparison.verdict.attribution
    entries = []
    for op_name, op_type, producers, tf_ops, passes, layout in ops:
        rows = rows_of.get(op_name, [])
        entries.append({"n": op_name, "t": op_type, "in": sorted({index[p] for p in producers if p in index}),
                        "tf": tf_ops, "p": passes, "k": _status(row for _, row in rows),
                        "v": _colour_value([row for _, row in rows], local), "r": _first_row(rows),
                        "c": 1 if op_name == culprit else 0, "o": overflow.get(op_name, ""),
                        "s": _standard(attribution.op(op_name)),
                        "x": [_tensor_line(row, layout) for _, row in rows]})
    return {"graph": name, "colour_by": "local" if local else "total", "legend": COLOUR_BY["local" if local else
                                                                                             "total"],
            "culprit": culprit or "", "culprit_is": "verdict",
            "ops": entries}


def _load_graphs(inputs, selection=None) -> List[Any]:
    """The root graph and subgraphs of the Build graph the result was compared with; ``[]`` when it is gone or
    unreadable."""
    from precision_tool.alignment import load_graph
    from precision_tool.alignment.npu_side import graphs_of
    from precision_tool.errors import PrecisionToolError

    path = inputs.get("graph") if inputs else None
    if not path:
        return []
    try:
        loaded = load_graph(path, inputs.get("npu"), selection)
    except (PrecisionToolError, OSError):
        return []
    return list(graphs_of(loaded)) if loaded is not None else []


def _first_row(rows) -> Optional[int]:
    """The table row the view links to: the op's first output row, else its first row."""
    outputs = [position for position, row in rows if row.kind == "output"]
    return outputs[0] if outputs else (rows[0][0] if rows else None)


def culprit_of(findings, source) -> str:
    """``ac``'s culprit when ``findings`` hold its verdict, else the stored run's (:attr:`StoredResult.culprit_name
    <precision_tool.reports.result_store.StoredResult.culprit_name>`: ``ac``'s kept in its summary, else the
    comparison's judgment)."""
    return culprit_and_evidence(findings, source)[0]


def culprit_and_evidence(findings, source) -> Tuple[str, str]:
    """:func:`culprit_of` and how it was found (``local error (replay)``, ``first divergence`` ...); ``("", "")``
    when there is none."""
    culprit = getattr(getattr(findings, "verdict", None), "culprit", None)
    if culprit is not None:
        return culprit.op_name, culprit.evidence
    if source.ac_culprit is not None:
        return source.culprit_name, str(source.ac_culprit.get("evidence") or "")
    choice = source.comparison.culprit
    return (choice.op_name, choice.how) if choice is not None else ("", "")


def _status(rows) -> str:
    """``fail`` if any tensor fails, ``error`` if one could not be read, ``pass`` if any passed, else ``none``."""
    verdicts = {row.status.verdict for row in rows}
    for verdict in ("fail", "error", "pass"):
        if verdict in verdicts:
            return verdict
    return "none"


def _finite(value) -> Optional[float]:
    return float(value) if value is not None and math.isfinite(value) else None


def _standard(measured) -> str:
    """A replayed op's local error and what it was held to, and whether it is beyond Ascend's standard."""
    if measured is None or not measured.measured or not measured.spec_text:
        return ""
    verdict = "beyond" if measured.beyond_spec else "within"
    return f"{measured.summary.split(': ')[0]}: {verdict} Ascend's operator standard"


def _colour_value(rows: Sequence[Any], local: bool) -> Optional[float]:
    """The largest local/floor ratio over the op's replayed outputs (``local``), else the largest relative
    error over its compared outputs, else over its compared inputs; ``None`` when there is none."""
    if local:
        ratios = [ratio for ratio in (ratio_of(row) for row in rows if _finite(row.local_error) is not None
                                      and _finite(row.local_floor) is not None and row.status is not Status.BELOW_NOISE)
                  if ratio is not None]
        return min(max(ratios), WORST_RATIO) if ratios else None  # JSON has no inf: a zero floor's op as the worst
    compared = [row for row in rows if row.compared]
    outputs = [row for row in compared if row.kind == "output"] or compared
    values = [_finite(row.metric("RelativeEuclideanDistance")) for row in outputs]
    kept = [value for value in values if value is not None]
    return max(kept) if kept else None


def _tensor_line(row, layout: str) -> List[Any]:
    return [row.tensor_id, _finite(row.cosine), _finite(row.local_error), _finite(row.inherited_error),
            _finite(row.metric("RelativeEuclideanDistance")), list(row.shape) if row.shape else [],
            layout if row.kind == "output" else ""]


def _layouts(op) -> str:
    """``NC1HWC0 (origin NHWC)``: the first output's stored layout and its origin layout, when they differ."""
    if not op.output_descs:
        return ""
    desc = op.output_descs[0]
    origin = desc.origin_format
    return desc.layout if not origin or origin == desc.layout else f"{desc.layout} (origin {origin})"
