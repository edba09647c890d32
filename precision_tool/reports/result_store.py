"""Results on disk: the lossless result file, and a stored result read back and judged at a threshold.

Every compare run writes ``result_{timestamp}.jsonl`` beside its CSV: a header line, then one
:meth:`TensorResult.to_dict` per line in the CSV's order, every value at full precision
(docs/compare.md#the-lossless-result-file). :func:`load_result` reads a stored result for ``vcs``, ``ni``, ``report``
and ``ac``'s page from the best source there is -- that file, else the CSV with its ``summary.json``, else the CSV
alone -- and judges every row at the threshold asked for (:meth:`ComparisonResult.judged_at`). Damaged or hostile
files are one :class:`ResultFileError` or ``ResultCsvError`` naming the file, never a guess. The sources and the
bounds: docs/internals/reports.md#result_store.
"""
from __future__ import annotations

import io
import json
import os
import re
from dataclasses import dataclass, replace
from typing import Any, Dict, Iterable, Iterator, List, Optional, Tuple

from precision_tool.comparison.result import ComparisonResult, RunFacts, TensorResult, Timing, order_by_index
from precision_tool.errors import PrecisionToolError, ResultCsvError, ResultFileError, WorkspaceError
from precision_tool.fileio import TEXT_LIMIT, atomic_write, open_input
from precision_tool.metrics import ALL, DEFAULT_COSINE_THRESHOLD
from precision_tool.status import Status

FORMAT = "precision_tool.results"
#: Version 2 (issue 37): rows may hold the status BELOW_NOISE and facts the graph's sources; version 1 files read as
#: they are (none of either), an older tool refuses version 2 by name.
VERSION = 2
READABLE_VERSIONS = (1, 2)
RESULT_NAME = re.compile(r"result_([0-9]{14})(?:_([0-9]{1,9}))?\.csv")
FROM_RESULTS_FILE, FROM_CSV_AND_SUMMARY, FROM_CSV = "results file", "csv+summary", "csv"
RUN_FIRST = ("run 'compare', 'vc' or 'ac -c' first, or give -f with the folder they wrote to (-o) or a result "
             "CSV")


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

    The file is opened with :func:`~precision_tool.fileio.open_input` (a regular file of at most 1 GiB; a
    FIFO or a symlink to ``/dev/zero`` is refused, never read) and read line by line; each line is
    :func:`parse_stored_json` and every header field is type-checked (:func:`check_run_facts`).

    Raises :class:`ResultFileError` naming the file and line on anything malformed (with a hint: the CSV
    beside it can still be read alone). A damaged file is never silently replaced by the rounded CSV.
    """
    try:
        return _read_results_file(path)
    except ResultFileError as error:
        raise ResultFileError(path, error.cause, _DAMAGED_HINT) from None


_DAMAGED_HINT = "move it aside to read the result CSV beside it instead, at six decimals"


def _read_results_file(path: str) -> Tuple[Dict[str, Any], ComparisonResult]:
    header: Optional[Dict[str, Any]] = None
    rows: List[TensorResult] = []
    for number, line in _numbered_lines(path):
        if not line.strip():
            continue
        if header is None:
            header = _header(path, number, _json_line(path, number, line))
        else:
            rows.append(_row(path, number, _json_line(path, number, line)))
    if header is None:
        raise ResultFileError(path, "is empty")
    try:
        facts_data = header["facts"]
        check_run_facts(facts_data, "facts")
        facts = RunFacts.from_dict(facts_data)
        threshold = check_threshold(header["cosine_threshold"], "cosine_threshold")
        inputs = check_inputs(optional(header, "inputs", {}), "inputs")
        timing = optional(header, "timing", {})
        check_timing(timing, "timing")
        run_timing = Timing(float(timing.get("align_s", 0.0)), float(timing.get("compare_s", 0.0)),
                            int(timing.get("workers", 1)))
    except KeyError as error:
        raise ResultFileError(path, f"line 1: the header lacks {error}") from None
    except (TypeError, ValueError, AttributeError) as error:
        raise ResultFileError(path, f"line 1: malformed header ({error})") from None
    return header, ComparisonResult.judged(rows, facts, threshold, run_timing, inputs)


def _numbered_lines(path: str) -> Iterator[Tuple[int, str]]:
    """``(number, line)`` of the file at ``path``, split at ``\\n`` only (U+2028 or U+0085 may stand in a
    name), streamed: the file is never held whole beside its parsed rows."""
    with open_input(path, ResultFileError, TEXT_LIMIT) as raw, \
            io.TextIOWrapper(raw, encoding="utf-8", newline="\n") as text:
        try:
            yield from enumerate(text, start=1)
        except UnicodeDecodeError as error:  # decoded ahead, in blocks: the line is not known
            raise ResultFileError(path, f"is not UTF-8 text ({error.reason})") from None
        except OSError as error:
            raise ResultFileError(path, f"cannot read ({error.strerror or error})") from None


def _header(path: str, number: int, data: Any) -> Dict[str, Any]:
    if number != 1 or not isinstance(data, dict) or data.get("format") != FORMAT:
        raise ResultFileError(path, f"line {number} is not a {FORMAT} header")
    if data.get("version") not in READABLE_VERSIONS or isinstance(data.get("version"), bool):
        raise ResultFileError(path, f"version {repr(data.get('version'))[:40]} is not one this tool reads "
                                    f"({', '.join(str(v) for v in READABLE_VERSIONS)})")
    return data


def _json_line(path: str, number: int, line: str) -> Any:
    try:
        return parse_stored_json(line)
    except ValueError as error:
        raise ResultFileError(path, f"line {number} is not JSON ({error})") from None


def _row(path: str, number: int, data: Any) -> TensorResult:
    try:
        if not isinstance(data, dict):
            raise TypeError(f"a row is an object, not {json_kind(data)}")
        return TensorResult.from_dict(data)
    except KeyError as error:
        raise ResultFileError(path, f"line {number}: malformed row (it lacks {error})") from None
    except (TypeError, ValueError, AttributeError, OverflowError) as error:
        raise ResultFileError(path, f"line {number}: malformed row ({error})") from None


# --------------------------------------------------------------------------------------------- stored JSON
MAX_JSON_INT_DIGITS = 30
"""The longest integer our JSON files hold (counts, indices, dims are at most 19 digits): a longer one is
refused before ``int()`` sees it -- Python 3.11+ refuses 4,300 digits with ``ValueError``, older versions
spend minutes on a million."""


def parse_stored_json(text: str) -> Any:
    """``text`` parsed as the strict JSON of our result files and ``summary.json``.

    ``ValueError`` with a short cause (at most 80 characters) for: not JSON; ``NaN``/``Infinity`` literals
    (we write non-finite numbers as strings); an integer of more than :data:`MAX_JSON_INT_DIGITS` digits;
    nesting too deep for the parser (its ``RecursionError``, e.g. 100,000 ``[``).
    """
    try:
        return json.loads(text, parse_int=_bounded_int, parse_constant=_no_constant)
    except RecursionError:
        raise ValueError("nested too deeply") from None
    except ValueError as error:
        raise ValueError(str(error)[:80]) from None


def _bounded_int(digits: str) -> int:
    if len(digits.lstrip("-")) > MAX_JSON_INT_DIGITS:
        raise ValueError(f"an integer of {len(digits.lstrip('-')):,} digits, more than {MAX_JSON_INT_DIGITS}")
    return int(digits)


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON (non-finite numbers are written as strings)")


def json_kind(value: Any) -> str:
    """What ``value`` is, in JSON's words (``an object``, ``a list``, ``a string``...), for error messages."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true/false"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, dict):
        return "an object"
    return "a list" if isinstance(value, list) else "a string" if isinstance(value, str) else type(value).__name__


def expect(ok: bool, value: Any, field: str, expected: str) -> None:
    """Raise ``ValueError("FIELD is a list, not an object")`` unless ``ok``: the one message of every check."""
    if not ok:
        raise ValueError(f"{field} is {json_kind(value)}, not {expected}")


def is_count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def optional(data: Dict[str, Any], key: str, empty: Any) -> Any:
    """``data[key]``, or ``empty`` when the key is absent or ``null`` -- but a wrong-typed ``0``, ``""`` or
    ``[]`` is kept, for its check to refuse."""
    value = data.get(key)
    return empty if value is None else value


def check_list(value: Any, field: str, item_ok, expected_item: str) -> None:
    """A list whose every item passes ``item_ok``; the message names the first bad item (``order[3] is a
    number, not a string``)."""
    expect(isinstance(value, list), value, field, "a list")
    for position, item in enumerate(value):
        expect(item_ok(item), item, f"{field}[{position}]", expected_item)


def check_texts(value: Any, field: str) -> None:
    check_list(value, field, lambda item: isinstance(item, str), "a string")


def check_object(value: Any, field: str) -> None:
    expect(isinstance(value, dict), value, field, "an object")


def _check_pairs(value: Any, field: str, second: str) -> None:
    """A list of two-item lists ``[string, string]`` (``second="text"``) or ``[string, count]``."""
    second_ok = (lambda item: isinstance(item, str)) if second == "text" else is_count
    check_list(value, field, lambda pair: isinstance(pair, list) and len(pair) == 2 and isinstance(pair[0], str)
               and second_ok(pair[1]), "a [string, string] pair" if second == "text" else "a [string, count] pair")


_COVERAGE_COUNTS = ("aligned_count", "npu_tensors", "dump_step", "dump_device")
_COVERAGE_NAMES = ("npu_only_ops", "reference_only", "dumped_not_in_graph", "graph_ops_without_dump", "ambiguous",
                   "ignored_references")
_COVERAGE_PAIRS = ("unaligned", "unreadable", "unreadable_references")


def check_run_facts(data: Any, field: str = "") -> None:
    """Type-check the run facts :meth:`RunFacts.to_dict` writes (the result file's ``facts``, and the same keys
    at the top of ``summary.json``), field by field, before :meth:`RunFacts.from_dict` reads them.

    ``mode``, ``order_source``: strings; ``order``: a list of strings; ``data_inputs``: an object of lists of
    ``[producer, output index]``; ``sources``: an object of strings; ``coverage``: ``null`` or an object whose
    counts are counts, whose name lists are lists of strings and whose
    ``unaligned``/``unreadable``/``unreadable_references`` are ``[string, string]`` pairs. A key that is absent or
    ``null`` is empty; keys this version does not know are left alone. ``ValueError`` naming the first wrong field
    (``facts.order is a string, not a list``, ``facts.order[3] is a number, not a string``).
    """
    prefix = f"{field}." if field else ""
    check_object(data, field or "the facts")
    for key in ("mode", "order_source"):
        if key in data:
            expect(isinstance(data[key], str), data[key], prefix + key, "a string")
    if "order" in data:
        check_texts(data["order"], prefix + "order")
    edges = optional(data, "data_inputs", {})
    check_object(edges, prefix + "data_inputs")
    for op, pairs in edges.items():
        _check_pairs(pairs, f"{prefix}data_inputs[{op[:40]!r}]", "count")
    coverage = data.get("coverage")
    if coverage is not None:
        _check_coverage(coverage, prefix + "coverage")
    sources = optional(data, "sources", {})
    check_object(sources, prefix + "sources")
    for op, kind in sources.items():
        expect(isinstance(kind, str), kind, f"{prefix}sources[{op[:40]!r}]", "a string")


def _check_coverage(coverage: Any, field: str) -> None:
    check_object(coverage, field)
    for key in _COVERAGE_COUNTS:
        if key in coverage:
            expect(is_count(coverage[key]), coverage[key], f"{field}.{key}", "a count")
    for key in _COVERAGE_NAMES:
        check_texts(optional(coverage, key, []), f"{field}.{key}")
    for key in _COVERAGE_PAIRS:
        _check_pairs(optional(coverage, key, []), f"{field}.{key}", "text")


def check_threshold(value: Any, field: str) -> Optional[float]:
    """A stored cosine threshold: ``null`` (gate off) or a number from -1 to 1; returned as a float."""
    if value is None:
        return None
    expect(is_number(value), value, field, "a number from -1 to 1")
    if not -1.0 <= value <= 1.0:
        raise ValueError(f"{field} {value:g} is not a number from -1 to 1")
    return float(value)


def check_inputs(value: Any, field: str) -> Dict[str, Optional[str]]:
    """The folders a run compared: an object of strings (or ``null``: not given); returned as a dict."""
    check_object(value, field)
    for key, path in value.items():
        expect(path is None or isinstance(path, str), path, f"{field}.{key}", "a string or null")
    return dict(value)


def check_timing(value: Any, field: str) -> None:
    """``{align_s, compare_s, total_s: seconds, workers: count}``, every key optional."""
    check_object(value, field)
    for key in ("align_s", "compare_s", "total_s"):
        if key in value:
            expect(is_number(value[key]), value[key], f"{field}.{key}", "a number of seconds")
    if "workers" in value:
        expect(is_count(value["workers"]), value["workers"], f"{field}.workers", "a count")


# --------------------------------------------------------------------------------------------- finding
def result_csvs(folder: str) -> List[str]:
    """Every ``result_{timestamp}[_n].csv`` under ``folder``, oldest first (temporary files never match);
    the file's own time (``lstat``: a symlink is not followed) breaks ties between equal names. Whatever the
    entry is -- a FIFO, a symlink or a folder named like a result -- it is listed: its reader refuses it in
    one line."""
    found: List[Tuple[tuple, str]] = []
    for root, dirs, files in os.walk(folder):
        named_like_results = [name for name in dirs if RESULT_NAME.fullmatch(name)]  # listed, not searched
        dirs[:] = [name for name in dirs if name not in named_like_results]
        for name in files + named_like_results:
            match = RESULT_NAME.fullmatch(name)
            if match:
                path = os.path.join(root, name)
                found.append(((match.group(1), int(match.group(2) or 0), _mtime(path), path), path))
    return [path for _key, path in sorted(found)]


def _mtime(path: str) -> int:
    try:
        return os.lstat(path).st_mtime_ns
    except OSError:  # removed since it was listed
        return 0


def find_result_csv(target: str, hint: str = RUN_FIRST, selection=None) -> str:
    """``target`` itself when it is not a folder, else the latest ``result_{timestamp}[_n].csv`` under it -- with a
    ``selection`` (:class:`~precision_tool.formats.dump_tree.DumpSelection`: ``--step``/``--device``), one whose
    run compared that step and device (:func:`recorded_position`), chosen as dumps are: a step alone, of the lowest
    device; a device alone, its newest step; both, the latest of them.

    A ``-f result_{ts}.jsonl`` means the CSV beside it, when there is one. Anything else that exists -- a
    file, but also a FIFO, a device or a dangling symlink -- is returned as it is, for its reader to refuse
    in one line saying what it is.

    Raises :class:`WorkspaceError` (with ``hint``) when there is no such file or folder, or no result in it (of
    the step and device asked for: the error lists those the results hold).
    """
    if os.path.lexists(target) and not os.path.isdir(target):
        root, ext = os.path.splitext(target)
        if ext == ".jsonl" and os.path.isfile(root + ".csv"):  # -f result_{ts}.jsonl: the result it belongs to
            return root + ".csv"
        return target
    if not os.path.isdir(target):
        raise WorkspaceError(f"{target}: no such file or folder", hint)
    found = result_csvs(target)
    if not found:
        raise WorkspaceError(f"no result_*.csv under {target}", hint)
    if selection is None or (selection.step is None and selection.device is None):
        return found[-1]
    positions = {path: recorded_position(path) for path in found}
    matching = [path for path in found  # oldest first
                if selection.step in (None, positions[path][0]) and selection.device in (None, positions[path][1])]
    if matching:  # as the dumps are chosen: a step asked for, of the lowest device; a device, its newest step
        if selection.device is None:
            return min(reversed(matching), key=lambda path: _or_last(positions[path][1]))
        if selection.step is None:
            return max(reversed(matching), key=lambda path: _or_first(positions[path][0]))
        return matching[-1]
    held = sorted({position for position in positions.values() if position != (None, None)},
                  key=lambda position: (_or_first(position[1]), _or_first(position[0])))
    listed = "; ".join(position_text(*position) for position in held) or "none records a step or device"
    raise WorkspaceError(f"no result of {position_text(selection.step, selection.device)} under {target} "
                         f"(results of: {listed})",
                         "compare it first, if the dumps hold it (ls lists their steps): compare --step N --device N")


def recorded_position(csv_path: str) -> Tuple[Optional[int], Optional[int]]:
    """``(step, device)`` the run of ``csv_path`` compared (``coverage.dump_step`` and ``dump_device``): from its
    ``summary.json`` when that describes it, else from the first line of its lossless results file (an ``-out``
    folder holding several runs keeps only the last summary); ``(None, None)`` when neither records them --
    dumps not in step folders, an older result, files that cannot be read."""
    from precision_tool.reports.summary import summary_for_csv

    try:
        facts = summary_for_csv(csv_path) or _results_header_facts(results_path_for(csv_path))
    except (PrecisionToolError, ValueError):
        return None, None
    coverage = facts.get("coverage") or {}
    step, device = coverage.get("dump_step"), coverage.get("dump_device")
    return (step if is_count(step) else None), (device if is_count(device) else None)


def _results_header_facts(path: str) -> Dict[str, Any]:
    """The run facts in the header line of the results file at ``path`` (``{}`` when there is none); the rows are
    not read."""
    if not os.path.isfile(path):
        return {}
    for number, line in _numbered_lines(path):
        facts = _header(path, number, _json_line(path, number, line)).get("facts")
        return facts if isinstance(facts, dict) else {}
    return {}


def _or_last(number: Optional[int]) -> int:
    """Sort key: a number, an unknown one after every number."""
    return (1 << 62) if number is None else number


def _or_first(number: Optional[int]) -> int:
    """Sort key: a number, an unknown one before every number."""
    return -1 if number is None else number


def position_text(step: Optional[int], device: Optional[int]) -> str:
    """``"step 5 on device 0"``, ``"step 5"``, ``"device 1"`` (``""`` for neither)."""
    if step is not None:
        return f"step {step}" + (f" on device {device}" if device is not None else "")
    return f"device {device}" if device is not None else ""


# --------------------------------------------------------------------------------------------- loading
@dataclass(frozen=True)
class StoredResult:
    """A result read back (the sources: docs/internals/reports.md#result_store).

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

    @property
    def ac_culprit(self) -> Optional[Dict[str, Any]]:
        """``ac``'s culprit (``op_name``, ``op_type``, ``evidence``, ...) when ``ac -c`` wrote this run and named
        one (its summary's ``verdict``), else ``None``: then the comparison's own
        (:attr:`~precision_tool.comparison.result.ComparisonResult.culprit`) is the run's. A culprit named by first
        divergence depends on the cosine gate: read at another threshold (``vcs -c``) it is not ``ac``'s any more."""
        summary = self.summary or {}
        verdict = summary.get("verdict") or {}
        culprit = verdict.get("culprit") if isinstance(verdict, dict) else None
        if not (isinstance(culprit, dict) and isinstance(culprit.get("op_name"), str)):
            return None
        moved = summary.get("cosine_threshold") != self.comparison.cosine_threshold
        if moved and str(culprit.get("evidence") or "").startswith("first divergence"):
            return None  # decided by the cosine gate at another threshold: the comparison judged again decides
        return culprit

    @property
    def culprit_name(self) -> str:
        """The run's culprit op: ``ac``'s (:attr:`ac_culprit`), else the comparison's, else ``""``."""
        if self.ac_culprit is not None:
            return str(self.ac_culprit["op_name"])
        culprit = self.comparison.culprit
        return culprit.op_name if culprit is not None else ""

    def reason_cell(self, position: int) -> str:
        """Row ``position``'s CompareFailReason as the CSV has it: our ``STATUS: reason`` (empty for a plain
        PASS/FAIL), or whatever msaccucmp wrote, remarks on compared rows included."""
        if self.csv_reasons:
            return self.csv_reasons[position]
        from precision_tool.reports.result_csv import fail_reason_cell

        return fail_reason_cell(self.comparison.results[position])

    def shown_reason(self, position: int) -> str:
        """What a reader is shown as row ``position``'s reason (``vcs``, ``ni``, the HTML table): the CSV's cell, or
        for a failing row whose cell is empty (a plain FAIL, as msaccucmp leaves it) the row's reason, else the
        cosine gate's words (``cosine 0.901050 < 0.99``)."""
        from precision_tool.comparison.result import cosine_gate_reason

        cell = self.reason_cell(position)
        row = self.comparison.results[position]
        if cell or row.status.verdict != "fail":
            return cell
        return row.reason or cosine_gate_reason(row.cosine, self.threshold)

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


def load_result(target: str, threshold: Optional[float] = None, hint: str = RUN_FIRST,
                selection=None) -> StoredResult:
    """Read the result at ``target`` (a CSV, or a folder searched for the latest: of ``selection``'s step and device
    when given, :func:`find_result_csv`) judged at ``threshold`` (default: the run's, else 0.99). Raises
    :class:`WorkspaceError`, ``ResultCsvError`` or :class:`ResultFileError` with one line naming the file."""
    from precision_tool.reports.result_csv import read_result_csv
    from precision_tool.reports.summary import summary_for_csv

    csv_path = find_result_csv(target, hint, selection)
    summary = summary_for_csv(csv_path)
    results_path = results_path_for(csv_path)
    if os.path.lexists(results_path):  # a FIFO or a dangling symlink named like it is refused, not skipped
        header, comparison = read_results_file(results_path)
        if header.get("result_csv") == os.path.basename(csv_path):
            _check_csv_is_a_file(csv_path)
            chosen = comparison.cosine_threshold if threshold is None else threshold
            return StoredResult(csv_path, comparison.judged_at(chosen), FROM_RESULTS_FILE, ALL, summary)
    run_threshold = None if summary is None else summary.get("cosine_threshold")
    chosen = threshold if threshold is not None else (run_threshold if run_threshold is not None
                                                      else DEFAULT_COSINE_THRESHOLD)
    table = read_result_csv(csv_path, chosen)
    if summary is not None and summary.get("order"):
        rows = _failing_from_summary(table.rows, summary) if run_threshold == chosen else table.rows
        facts = RunFacts.from_dict(summary)  # checked field by field by summary_for_csv
    else:
        rows = table.rows
        facts = RunFacts("npu_vs_npu" if table.npu_vs_npu else "npu_vs_tf", order_by_index(rows), "dump_time")
    origin = FROM_CSV if summary is None else FROM_CSV_AND_SUMMARY
    inputs = {key: path for key, path in optional(summary or {}, "inputs", {}).items() if key != "mode"}
    comparison = ComparisonResult.judged(rows, facts, chosen, inputs=inputs)
    return StoredResult(csv_path, comparison, origin, table.metric_columns, summary, table.reason_cells)


def _check_csv_is_a_file(csv_path: str) -> None:
    """The CSV a result file belongs to must be a regular file too, though its rows come from the result file:
    a FIFO, a folder or a dangling symlink in its place is named (``ResultCsvError``), not passed over."""
    with open_input(csv_path, ResultCsvError, TEXT_LIMIT):
        pass


def _failing_from_summary(rows: Iterable[TensorResult], summary: Dict[str, Any]) -> Tuple[TensorResult, ...]:
    """At the run's own threshold, the run's list of failing tensors decides the cosine-gated rows."""
    ids = {item["tensor_id"] for item in summary.get("failing") or ()}
    decided = []
    for row in rows:
        if row.status.cosine_gated:
            row = replace(row, status=Status.FAIL if row.tensor_id in ids else Status.PASS)
        decided.append(row)
    return tuple(decided)
