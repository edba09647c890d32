"""Results on disk: the lossless result file, and a stored result read back and judged at a threshold.

Every compare run (``compare``, ``vc``, ``ac -c``) writes, beside ``summary.json``:

* ``result_{timestamp}.jsonl`` -- the lossless record, JSON lines. Line 1 is the header::

      {"format": "precision_tool.results", "version": 1, "result_csv": "result_{timestamp}.csv",
       "cosine_threshold": 0.99, "facts": {mode, order, order_source, data_inputs, coverage},
       "inputs": {npu, reference, graph, reference_graph}, "timing": {...}}

  then one :meth:`TensorResult.to_dict` per line, in the CSV's order: every value at full precision
  (non-finite floats as ``"nan"``/``"inf"``/``"-inf"``), the status, the reason, the reference, the rule;
* ``result_{timestamp}.csv`` -- msaccucmp's columns, written last: an export for users' scripts
  (:mod:`.result_csv`).

:func:`load_result` reads a stored result for ``vcs``, ``ni``, ``report`` and ``ac``'s page. It finds the CSV
(:func:`find_result_csv`), then takes the best source there is:

=================  ==========================================================================================
``results file``   ``result_{ts}.jsonl`` naming this CSV: every row exactly as the run made it, with the run's
                   order, graph edges and coverage
``csv+summary``    a CSV written before result files existed, with its ``summary.json``: rows from the CSV's six
                   decimals; order, edges and coverage from the summary; at the summary's own threshold its
                   list of failing tensors decides the rows the rounding cannot (0.9899996 shows as 0.990000)
``csv``            a CSV alone (msaccucmp's): rows from the cells, ops ordered by the ``Index`` column, no
                   graph edges, coverage unknown
=================  ==========================================================================================

and judges every row at the threshold asked for (default: the run's, else 0.99) with
:meth:`ComparisonResult.judged_at`, so the first divergence is found again at that threshold.
"""
from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, replace
from typing import Any, Dict, Iterable, List, Optional, Tuple

from precision_tool.comparison.result import ComparisonResult, RunFacts, TensorResult, Timing, order_by_index
from precision_tool.errors import ResultFileError, WorkspaceError
from precision_tool.fileio import atomic_write
from precision_tool.metrics import ALL, DEFAULT_COSINE_THRESHOLD
from precision_tool.status import Status

FORMAT = "precision_tool.results"
VERSION = 1
RESULT_NAME = re.compile(r"result_(\d{14})(?:_(\d+))?\.csv")
FROM_RESULTS_FILE, FROM_CSV_AND_SUMMARY, FROM_CSV = "results file", "csv+summary", "csv"
RUN_FIRST = "run 'compare' or 'vc' first, or give -f CSV"


def results_path_for(csv_path: str) -> str:
    """``.../result_{ts}.jsonl`` beside ``.../result_{ts}.csv``."""
    root, _ext = os.path.splitext(os.fspath(csv_path))
    return root + ".jsonl"


# --------------------------------------------------------------------------------------------- writing
def write_results_file(path: str, result: ComparisonResult, result_csv: str) -> str:
    """Write ``result`` losslessly to ``path`` (atomically: temporary file, then rename); returns ``path``."""
    header = {"format": FORMAT, "version": VERSION, "result_csv": os.path.basename(result_csv),
              "cosine_threshold": result.cosine_threshold, "facts": result.facts.to_dict(),
              "inputs": dict(result.inputs), "timing": result.timing.to_dict()}
    with atomic_write(path, "w", encoding="utf-8") as handle:
        handle.write(json.dumps(header, allow_nan=False) + "\n")
        for row in result.results:
            handle.write(json.dumps(row.to_dict(), allow_nan=False, ensure_ascii=False) + "\n")
    return os.fspath(path)


# --------------------------------------------------------------------------------------------- reading
def read_results_file(path: str) -> Tuple[Dict[str, Any], ComparisonResult]:
    """``(header, result)`` from a file :func:`write_results_file` wrote; the result at the run's threshold.

    Raises :class:`ResultFileError` naming the file and line on anything malformed (with a hint: the CSV
    beside it can still be read alone). A damaged file is never silently replaced by the rounded CSV.
    """
    try:
        return _read_results_file(path)
    except ResultFileError as error:
        raise ResultFileError(path, error.cause, _DAMAGED_HINT) from None


_DAMAGED_HINT = "move it aside to read the result CSV beside it instead, at six decimals"


def _read_results_file(path: str) -> Tuple[Dict[str, Any], ComparisonResult]:
    try:
        with open(path, encoding="utf-8") as handle:
            lines = handle.read().split("\n")  # not splitlines(): U+2028 or U+0085 may stand in a name
    except (OSError, UnicodeDecodeError) as error:
        raise ResultFileError(path, f"cannot read ({getattr(error, 'strerror', None) or error})") from None
    if not any(line.strip() for line in lines):
        raise ResultFileError(path, "is empty")
    header = _json_line(path, 1, lines[0])
    if not isinstance(header, dict) or header.get("format") != FORMAT:
        raise ResultFileError(path, f"line 1 is not a {FORMAT} header")
    if header.get("version") != VERSION:
        raise ResultFileError(path, f"version {header.get('version')!r} is not one this tool reads ({VERSION})")
    rows: List[TensorResult] = []
    for number, line in enumerate(lines[1:], start=2):
        if line.strip():
            rows.append(_row(path, number, _json_line(path, number, line)))
    try:
        facts = RunFacts.from_dict(header["facts"])
        threshold = header["cosine_threshold"]
        if threshold is not None and not (isinstance(threshold, (int, float)) and not isinstance(threshold, bool)
                                          and -1.0 <= threshold <= 1.0):
            raise ValueError(f"cosine_threshold {str(threshold)[:20]} is not a number from -1 to 1")
        if threshold is not None:
            threshold = float(threshold)
        inputs = {str(k): (None if v is None else str(v)) for k, v in dict(header.get("inputs") or {}).items()}
        timing = header.get("timing") or {}
        run_timing = Timing(float(timing.get("align_s", 0.0)), float(timing.get("compare_s", 0.0)),
                            int(timing.get("workers", 1)))
    except (KeyError, TypeError, ValueError, AttributeError) as error:
        raise ResultFileError(path, f"line 1: malformed header ({type(error).__name__}: {error})") from None
    return header, ComparisonResult.judged(rows, facts, threshold, run_timing, inputs)


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON (non-finite numbers are written as strings)")


def _json_line(path: str, number: int, line: str) -> Any:
    try:
        return json.loads(line, parse_constant=_no_constant)
    except (ValueError, RecursionError) as error:
        raise ResultFileError(path, f"line {number} is not JSON ({str(error)[:80]})") from None


def _row(path: str, number: int, data: Any) -> TensorResult:
    try:
        if not isinstance(data, dict):
            raise TypeError(f"a row is an object, not {type(data).__name__}")
        return TensorResult.from_dict(data)
    except (KeyError, TypeError, ValueError, AttributeError, OverflowError) as error:
        raise ResultFileError(path, f"line {number}: malformed row ({type(error).__name__}: {error})") from None


# --------------------------------------------------------------------------------------------- finding
def result_csvs(folder: str) -> List[str]:
    """Every ``result_{timestamp}[_n].csv`` under ``folder``, oldest first (temporary files never match);
    file time breaks ties between equal names."""
    found: List[Tuple[tuple, str]] = []
    for root, _dirs, files in os.walk(folder):
        for name in files:
            match = RESULT_NAME.fullmatch(name)
            if match:
                path = os.path.join(root, name)
                found.append(((match.group(1), int(match.group(2) or 0), os.stat(path).st_mtime_ns, path), path))
    return [path for _key, path in sorted(found)]


def find_result_csv(target: str, hint: str = RUN_FIRST) -> str:
    """``target`` itself when it is a file, else the latest ``result_{timestamp}[_n].csv`` under it.

    Raises :class:`WorkspaceError` (with ``hint``) when there is no such file or folder, or no result in it.
    """
    if os.path.isfile(target):
        root, ext = os.path.splitext(target)
        if ext == ".jsonl" and os.path.isfile(root + ".csv"):  # -f result_{ts}.jsonl: the result it belongs to
            return root + ".csv"
        return target
    if not os.path.isdir(target):
        raise WorkspaceError(f"{target}: no such file or folder", hint)
    found = result_csvs(target)
    if not found:
        raise WorkspaceError(f"no result_*.csv under {target}", hint)
    return found[-1]


# --------------------------------------------------------------------------------------------- loading
@dataclass(frozen=True)
class StoredResult:
    """A result read back (see the module docstring).

    ``comparison`` is judged at ``threshold``; ``origin`` says which source it came from; ``summary`` is the
    run's ``summary.json`` when it names this CSV (``None`` otherwise); ``metric_columns`` are the metric
    columns the CSV holds (all ten for ours); ``csv_reasons`` are the CSV's ``CompareFailReason`` cells as
    written, row for row, when the rows were read from the CSV (``()`` from the result file).
    """

    csv_path: str
    comparison: ComparisonResult
    origin: str
    metric_columns: Tuple[str, ...] = ALL
    summary: Optional[Dict[str, Any]] = None
    csv_reasons: Tuple[str, ...] = ()

    def reason_cell(self, position: int) -> str:
        """Row ``position``'s CompareFailReason as the CSV has it: our ``STATUS: reason`` (empty for a plain
        PASS/FAIL), or whatever msaccucmp wrote, remarks on compared rows included."""
        if self.csv_reasons:
            return self.csv_reasons[position]
        from precision_tool.reports.result_csv import fail_reason_cell

        return fail_reason_cell(self.comparison.results[position])

    @property
    def threshold(self) -> float:
        threshold = self.comparison.cosine_threshold
        return DEFAULT_COSINE_THRESHOLD if threshold is None else threshold

    @property
    def folder(self) -> str:
        return os.path.dirname(os.path.abspath(self.csv_path))

    @property
    def inputs(self) -> Dict[str, Optional[str]]:
        """The folders the run compared (``npu``, ``reference``, ``graph``...); ``{}`` when unknown."""
        return dict(self.comparison.inputs)

    @property
    def has_run_facts(self) -> bool:
        """True when order, edges and coverage are the run's own (not a bare CSV's Index order)."""
        return self.origin != FROM_CSV

    def rows_of_op(self, op_name: str) -> Tuple[Tuple[int, TensorResult], ...]:
        """``(position, row)`` of the rows whose tensor belongs to ``op_name`` (or, for rows without a tensor,
        that name it)."""
        return tuple((k, row) for k, row in enumerate(self.comparison.results) if row.op_name == op_name)


def load_result(target: str, threshold: Optional[float] = None, hint: str = RUN_FIRST) -> StoredResult:
    """Read the result at ``target`` (a CSV, or a folder searched for the latest) judged at ``threshold``
    (default: the run's, else 0.99). Raises :class:`WorkspaceError`, ``ResultCsvError`` or
    :class:`ResultFileError` with one line naming the file."""
    from precision_tool.reports.result_csv import read_result_csv
    from precision_tool.reports.summary import summary_for_csv

    csv_path = find_result_csv(target, hint)
    summary = summary_for_csv(csv_path)
    results_path = results_path_for(csv_path)
    if os.path.isfile(results_path):
        header, comparison = read_results_file(results_path)
        if header.get("result_csv") == os.path.basename(csv_path):
            chosen = comparison.cosine_threshold if threshold is None else threshold
            return StoredResult(csv_path, comparison.judged_at(chosen), FROM_RESULTS_FILE, ALL, summary)
    run_threshold = _summary_threshold(summary)
    chosen = threshold if threshold is not None else (run_threshold if run_threshold is not None
                                                      else DEFAULT_COSINE_THRESHOLD)
    table = read_result_csv(csv_path, chosen)
    if summary is not None and summary.get("order"):
        rows = _failing_from_summary(table.rows, summary) if run_threshold == chosen else table.rows
        facts = _summary_facts(summary)
    else:
        rows, facts = table.rows, None
    if facts is None:
        facts = RunFacts("npu_vs_npu" if table.npu_vs_npu else "npu_vs_tf", order_by_index(rows), "dump_time")
    origin = FROM_CSV if summary is None else FROM_CSV_AND_SUMMARY
    inputs = {str(k): (v if isinstance(v, str) else None) for k, v in _dict(summary, "inputs").items()
              if k != "mode"}
    comparison = ComparisonResult.judged(rows, facts, chosen, inputs=inputs)
    return StoredResult(csv_path, comparison, origin, table.metric_columns, summary, table.reason_cells)


def _dict(data: Optional[Dict[str, Any]], key: str) -> Dict[str, Any]:
    value = (data or {}).get(key)
    return value if isinstance(value, dict) else {}


def _summary_facts(summary: Dict[str, Any]) -> Optional[RunFacts]:
    """The run's facts from an older ``summary.json``; ``None`` when they are malformed (order by Index then)."""
    try:
        return RunFacts.from_dict(summary)
    except (KeyError, TypeError, ValueError, AttributeError):
        return None


def _summary_threshold(summary: Optional[Dict[str, Any]]) -> Optional[float]:
    recorded = (summary or {}).get("cosine_threshold")
    return float(recorded) if isinstance(recorded, (int, float)) and not isinstance(recorded, bool) else None


def _failing_from_summary(rows: Iterable[TensorResult], summary: Dict[str, Any]) -> Tuple[TensorResult, ...]:
    """At the run's own threshold, the run's list of failing tensors decides the cosine-gated rows."""
    failing = summary.get("failing")
    if not isinstance(failing, list):
        return tuple(rows)
    ids = {item.get("tensor_id") for item in failing
           if isinstance(item, dict) and isinstance(item.get("tensor_id"), str)}
    decided = []
    for row in rows:
        if row.status.cosine_gated:
            row = replace(row, status=Status.FAIL if row.tensor_id in ids else Status.PASS)
        decided.append(row)
    return tuple(decided)
