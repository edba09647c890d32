"""A compare result read back from disk: the CSV, its ``summary.json``, and the verdicts at one threshold.

:func:`load_result` finds the CSV (a file, or the latest ``result_*.csv`` under a folder), reads it with
:func:`~precision_tool.reports.result_csv.read_result_csv` and rebuilds a
:class:`~precision_tool.comparison.ComparisonResult` from its rows -- the same records ``compare`` made, less
the alignment -- so that ``ac``'s verdict (:func:`~precision_tool.checks.verdict.decide_verdict`) can be
decided again from files, and the first divergence found at the threshold asked for.

Verdicts follow ``vcs``: our explicit statuses (``NAN_INF: ...``) decide first; a row with metrics fails below
the threshold or with a ``NaN`` cosine; when ``summary.json`` was made at the same threshold, its list of
failing tensors decides (the CSV's six decimals cannot tell 0.9899996 from 0.99). With ``summary.json`` the
first divergence follows the graph's data edges; without it (msaccucmp's CSV) the ``Index`` column orders the
ops and only compared inputs are known.
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Dict, List, Optional, Tuple

from precision_tool.errors import WorkspaceError

DEFAULT_THRESHOLD = 0.99
_RESULT_NAME = re.compile(r"result_(\d{14})(?:_(\d+))?\.csv")
_RUN_FIRST = "run 'precision_tool -d WORKSPACE ac -c' or 'compare' first, or give -f RESULT_DIR_OR_CSV"


@dataclass(frozen=True)
class ResultSource:
    """One result read back. ``comparison`` is a ``ComparisonResult`` without an alignment (``None``)."""

    csv_path: str
    table: object
    summary: Optional[dict]
    threshold: float
    comparison: object

    @property
    def folder(self) -> str:
        return os.path.dirname(os.path.abspath(self.csv_path))

    @property
    def inputs(self) -> Dict[str, Optional[str]]:
        """The folders the run compared (``npu``, ``reference``, ``graph``, ``mode``...); ``{}`` unknown."""
        return dict((self.summary or {}).get("inputs") or {})


def find_result_csv(target: str) -> str:
    """``target`` itself when it is a file, else the latest ``result_{timestamp}[_n].csv`` under it.

    Raises :class:`WorkspaceError` when there is no such file or folder, or no result in the folder.
    """
    if os.path.isfile(target):
        return target
    if not os.path.isdir(target):
        raise WorkspaceError(f"{target}: no such file or folder", _RUN_FIRST)
    found: List[Tuple[tuple, str]] = []
    for root, _dirs, files in os.walk(target):
        for name in files:
            match = _RESULT_NAME.fullmatch(name)
            if match:
                path = os.path.join(root, name)
                found.append(((match.group(1), int(match.group(2) or 0), os.stat(path).st_mtime_ns), path))
    if not found:
        raise WorkspaceError(f"no result_*.csv under {target}", _RUN_FIRST)
    return max(found)[1]


def load_result(target: str, threshold: Optional[float] = None) -> ResultSource:
    """Read the result at ``target`` (see :func:`find_result_csv`) and judge it at ``threshold``
    (default: the run's, from ``summary.json``, else 0.99)."""
    from precision_tool.reports.result_csv import read_result_csv
    from precision_tool.reports.summary import summary_for_csv

    csv_path = find_result_csv(target)
    table = read_result_csv(csv_path)
    summary = summary_for_csv(csv_path)
    if threshold is None:
        recorded = (summary or {}).get("cosine_threshold")
        threshold = recorded if isinstance(recorded, (int, float)) else DEFAULT_THRESHOLD
    return ResultSource(csv_path, table, summary, float(threshold),
                        comparison_from_table(table, summary, float(threshold)))


def row_status(row, summary: Optional[dict], threshold: float) -> str:
    """The comparator's status of one CSV row: its explicit status, else ``PASS``/``FAIL`` at ``threshold``."""
    from precision_tool.metrics import Status

    if row.status:
        return row.status
    verdict = row.judge(threshold)
    if summary is not None and summary.get("cosine_threshold") == threshold:
        failing = {item.get("tensor_id") for item in summary.get("failing", [])}
        verdict = "fail" if row.tensor_id in failing else "pass"
    return Status.FAIL.value if verdict == "fail" else Status.PASS.value


def comparison_from_table(table, summary: Optional[dict], threshold: float):
    """A ``ComparisonResult`` rebuilt from CSV rows (see the module docstring); ``alignment`` is ``None``."""
    from precision_tool.alignment import find_first_divergence
    from precision_tool.comparison import ComparisonResult, TensorResult
    from precision_tool.metrics import ALL

    results = []
    for row in table.rows:
        key = row.key
        kind, tensor_index = (key[1], key[2]) if key is not None else ("", 0)
        results.append(TensorResult(
            index=row.index if row.index is not None else -1, tensor_id=row.tensor_id, op_name=row.op_name,
            kind=kind, tensor_index=tensor_index, op_type=row.op_type, status=row_status(row, summary, threshold),
            reason=_reason(row, threshold), npu_dtype=row.npu_dtype, address=row.address,
            ground_truth=row.ground_truth or "*", ref_dtype=row.ref_dtype,
            metrics=tuple(row.metrics.get(name) for name in ALL)))
    verdicts = {r.key: r.passed for r in results if r.compared and r.kind}
    if summary is not None and summary.get("order"):
        edges = {op: [tuple(edge) for edge in pairs] for op, pairs in (summary.get("data_inputs") or {}).items()}
        divergence = find_first_divergence(verdicts, summary["order"], edges, summary.get("order_source", "graph"))
    else:
        ordered = sorted(results, key=lambda r: r.index if r.index >= 0 else 1 << 62)
        divergence = find_first_divergence(verdicts, list(dict.fromkeys(r.op_name for r in ordered)), {},
                                           "dump_time")
    return ComparisonResult(results=tuple(results), alignment=None, divergence=divergence,
                            cosine_threshold=threshold)


def _reason(row, threshold: float) -> str:
    """The row's reason without its ``STATUS: `` prefix; for a plain pass or fail (empty cell), the cosine gate
    in the comparator's words (``cosine 0.901050 < 0.99``)."""
    if row.status and row.reason.startswith(row.status + ": "):
        return row.reason[len(row.status) + 2:]
    if row.reason or row.cosine is None:
        return row.reason
    return f"cosine {row.cosine:.6f} {'>=' if row.cosine >= threshold else '<'} {threshold:g}"
