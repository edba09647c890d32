"""The result CSV: msaccucmp's exact columns and cell formats, written atomically, and a reader for ours and its.

One row per NPU tensor in execution order; metrics ``'{:.6f}'``, ``NaN`` where nothing was computed or nothing
applies, ``CompareFailReason`` explaining every honest status. Where we differ from msaccucmp, on purpose (the real
origin shape, ``Index`` as the execution position, the finite elements' metrics of a tensor whose NaN/inf match the
reference's, op names kept exact and quoted when they look like formulas): docs/compare.md#result-csv. The cells
it does not spell out, the quoting rule and how a CSV is read back: docs/internals/reports.md#result_csv.
"""
from __future__ import annotations

import csv
import io
import math
import os
import re
from dataclasses import dataclass
from typing import IO, Iterable, Iterator, List, Optional, Sequence, Tuple

from precision_tool.comparison.result import TensorResult
from precision_tool.errors import ResultCsvError
from precision_tool.fileio import TEXT_LIMIT, open_input, write_text_atomic
from precision_tool.formats.tensor_kind import TensorKind
from precision_tool.metrics import ALL, DEFAULT_COSINE_THRESHOLD, format_value, get_metric
from precision_tool.metrics.moments import PrintedMeanStd
from precision_tool.metrics.tensor_verdict import MATCHING_NON_FINITE
from precision_tool.status import Status

NOT_APPLICABLE = "NaN"
_OP_COLUMNS = ("Index", "OpType", "NPUDump", "DataType", "Address", "GroundTruth", "DataType")
HEADER: Tuple[str, ...] = _OP_COLUMNS + ("TensorIndex", "Shape") + ALL + ("CompareFailReason",)
HEADER_NPU_VS_NPU: Tuple[str, ...] = _OP_COLUMNS + ("Address", "TensorIndex", "Shape") + ALL + ("CompareFailReason",)
LINE_END = "\r\n"
FORMULA_STARTS = ("=", "+", "-", "@", "%", "\uff1d", "\uff0b", "\uff0d", "\t", "\r")
_NEEDS_QUOTES = re.compile(r'[,"\r\n]')
#: Statuses whose reason goes into CompareFailReason (a plain PASS or FAIL shows itself in the cosine cell).
_EXPLAINED = tuple(s.value for s in Status if not s.cosine_gated)
_STATUS_PREFIX = re.compile(r"^(" + "|".join(map(re.escape, _EXPLAINED)) + r"): ")
_MEAN_STD = re.compile(r"\(([^;()]+);([^;()]+)\),\(([^;()]+);([^;()]+)\)")
_ALL_INFOS = tuple(get_metric(name) for name in ALL)  # a row's metric cells, in column order
_MATCHED = re.compile(r"(?:^|; )" + re.escape(MATCHING_NON_FINITE) + r": ([0-9]{1,18}) NaN/inf ")


# --------------------------------------------------------------------------------------------- writing
def quote_cell(text: str) -> str:
    """One CSV cell: quoted (quotes doubled) when it holds ``, " CR LF`` or starts like a formula."""
    if _NEEDS_QUOTES.search(text) or text.startswith(FORMULA_STARTS):
        return '"' + text.replace('"', '""') + '"'
    return text


def csv_line(cells: Iterable[str]) -> str:
    """A CRLF-terminated CSV line; ``csv.reader`` reads the same cells back."""
    return ",".join(quote_cell(str(cell)) for cell in cells) + LINE_END


def number_text(value: Optional[float]) -> str:
    """A metric as the CSV and the terminal tables show it: six decimals, ``NaN`` when not computed.

    >>> number_text(0.9010504), number_text(None)
    ('0.901050', 'NaN')
    """
    return NOT_APPLICABLE if value is None else f"{value:.6f}"


def shape_text(shape: Optional[Sequence[int]]) -> str:
    """``[1,64,64,64]`` (msaccucmp's spelling, no spaces); ``[]`` for a scalar; ``NaN`` when unknown."""
    if shape is None:
        return NOT_APPLICABLE
    return "[" + ",".join(str(int(d)) for d in shape) + "]"


def fail_reason_cell(result: TensorResult) -> str:
    """``""`` for PASS and FAIL, else ``"STATUS: reason"``; the matching non-finite note (see the module
    docstring) alone for PASS and FAIL, else after the reason unless the reason is that note."""
    note = matching_non_finite_note(result)
    if result.status.cosine_gated:
        return note
    cell = f"{result.status.value}: {result.reason}"
    return f"{cell}; {note}" if note and not result.reason.startswith(MATCHING_NON_FINITE) else cell


def matching_non_finite_note(result: TensorResult) -> str:
    """The row's ``matching non-finite: ...`` note (:attr:`TensorResult.matched_non_finite`), or ``""``.

    From ``notes`` when the comparator wrote it there; a row that has only the count (a CSV read back) gets
    the short form ``matching non-finite: K NaN/inf at identical positions on both sides``.
    """
    if not result.matched_non_finite:
        return ""
    for note in result.notes:
        if note.startswith(MATCHING_NON_FINITE):
            return note
    if result.reason.startswith(MATCHING_NON_FINITE):
        return result.reason
    return f"{MATCHING_NON_FINITE}: {result.matched_non_finite} NaN/inf at identical positions on both sides"


def result_row(result: TensorResult, npu_vs_npu: bool = False) -> List[str]:
    """The CSV cells of one row (before quoting)."""
    cells = [str(result.index), result.op_type or NOT_APPLICABLE, result.op_name,
             result.npu_dtype or NOT_APPLICABLE, result.address or NOT_APPLICABLE, result.ground_truth or "*",
             result.ref_dtype or NOT_APPLICABLE]
    if npu_vs_npu:
        cells.append(result.ref_address or NOT_APPLICABLE)
    cells += [result.tensor_id or NOT_APPLICABLE, shape_text(result.shape)]
    cells += [format_value(info, value) for info, value in zip(_ALL_INFOS, result.metrics)]
    cells.append(fail_reason_cell(result))
    return cells


def write_result_csv(path, results: Iterable[TensorResult], npu_vs_npu: bool = False) -> str:
    """Write the result CSV atomically (temporary file, then rename); returns ``path``.

    A run killed while writing leaves no file under ``path``: a reader never sees half a result.
    """
    return write_text_atomic(path, result_csv_text(results, npu_vs_npu))


def result_csv_text(results: Iterable[TensorResult], npu_vs_npu: bool = False) -> str:
    """The whole result CSV as text: the header line, then one line per row."""
    header = HEADER_NPU_VS_NPU if npu_vs_npu else HEADER
    return "".join([csv_line(header)] + [csv_line(result_row(result, npu_vs_npu)) for result in results])


# --------------------------------------------------------------------------------------------- reading
MAX_ROW_CHARS = 8 << 20
"""The longest row :func:`read_result_csv` takes (8 Mi characters, quoted line breaks included): a real row
is a few hundred characters, a fused op naming thousands of TF ops a few hundred thousand. The bound is
checked before ``csv`` splits the row, so a gigabyte of commas never becomes a billion cells."""
_WHOLE_NUMBER = re.compile(r"-?[0-9]{1,18}")


@dataclass(frozen=True)
class CsvResult:
    """A result CSV read back: its rows as :class:`TensorResult` records in file order, whether it has the
    NPU-vs-NPU second ``Address``, which metric columns it holds (msaccucmp may write a subset), and each
    row's ``CompareFailReason`` cell as written (msaccucmp remarks on compared rows, such as "This tensor is
    scalar.", are kept there for display)."""

    path: str
    rows: Tuple[TensorResult, ...]
    npu_vs_npu: bool = False
    metric_columns: Tuple[str, ...] = ALL
    reason_cells: Tuple[str, ...] = ()


def read_result_csv(path, cosine_threshold: Optional[float] = DEFAULT_COSINE_THRESHOLD) -> CsvResult:
    """Read a result CSV written by us or by msaccucmp (any subset of metric columns, extra columns ignored).

    Each row becomes a :class:`TensorResult`: our explicit statuses (``NAN_INF: ...`` in CompareFailReason) are kept
    whatever the cosine; a row without metrics is ``NOT_COMPARED`` (``NO_DUMP`` when it names no tensor); any other
    row is judged by the cosine gate at ``cosine_threshold`` (a ``NaN`` cosine beside computed metrics fails). The file
    is opened with :func:`~precision_tool.fileio.open_input` and streamed row by row; the cells that locate a tensor
    must be exact (the rules and bounds: docs/internals/reports.md#result_csv).

    Raises
    ------
    ResultCsvError
        One line naming the file (and the line, for a damaged row): it cannot be read, it is not UTF-8 or not CSV, its
        header lacks the columns every result has, a row is longer than :data:`MAX_ROW_CHARS`, or a row holds a bad
        ``Index``/``TensorIndex``.
    """
    path = os.fspath(path)
    with open_input(path, ResultCsvError, TEXT_LIMIT) as raw, \
            io.TextIOWrapper(raw, encoding="utf-8-sig", newline="") as text:
        lines = _BoundedLines(path, text)
        reader = csv.reader(lines)
        try:
            return _table(path, reader, lines, cosine_threshold)
        except UnicodeDecodeError as error:  # decoded ahead, in blocks: the line is not known
            raise ResultCsvError(path, f"is not UTF-8 text ({error.reason})") from None
        except csv.Error as error:
            raise ResultCsvError(path, f"line {reader.line_num}: not CSV ({error})") from None
        except OSError as error:
            raise ResultCsvError(path, f"cannot read ({error.strerror or error})") from None


def _table(path: str, reader, lines: "_BoundedLines", threshold: Optional[float]) -> CsvResult:
    """The rows ``reader`` yields, after the header, as :class:`CsvResult`."""
    header = next(reader, None)
    if header is None:
        raise ResultCsvError(path, "is empty; a result CSV starts with msaccucmp's header line")
    columns = _columns(path, header)
    lines.row_done()
    rows, reasons = [], []
    for cells in reader:
        lines.row_done()
        if not cells or all(not cell for cell in cells):
            continue
        rows.append(_row(path, reader.line_num, cells, columns, threshold))
        reasons.append(_raw_cell(cells, columns["reason"]))
    return CsvResult(path, tuple(rows), npu_vs_npu=columns["ref_address"] is not None,
                     metric_columns=tuple(columns["metrics"]), reason_cells=tuple(reasons))


class _BoundedLines:
    """The physical lines of ``text`` for ``csv.reader``, refusing a row longer than :data:`MAX_ROW_CHARS`
    before it is split into cells (``csv.reader`` pulls exactly one row's lines per row)."""

    def __init__(self, path: str, text: IO[str]):
        self.path, self.text, self.row_chars, self.number = path, text, 0, 0

    def row_done(self) -> None:
        self.row_chars = 0

    def __iter__(self) -> Iterator[str]:
        return self

    def __next__(self) -> str:
        line = self.text.readline(MAX_ROW_CHARS + 1 - self.row_chars)
        if not line:
            raise StopIteration
        self.row_chars += len(line)
        self.number += 1
        if self.row_chars > MAX_ROW_CHARS:
            raise ResultCsvError(self.path, f"line {self.number}: a row is longer than {MAX_ROW_CHARS:,} characters: "
                                            "not a result CSV")
        return line


def _columns(path: str, header: List[str]) -> dict:
    header = [cell.strip() for cell in header]
    missing = [name for name in ("Index", "OpType", "NPUDump", "GroundTruth", "TensorIndex") if name not in header]
    if missing:
        raise ResultCsvError(path, f"header lacks {', '.join(missing)}: not a compare result CSV")
    ground = header.index("GroundTruth")
    dtypes = [i for i, name in enumerate(header) if name == "DataType"]
    addresses = [i for i, name in enumerate(header) if name == "Address"]
    return {
        "index": header.index("Index"), "op_type": header.index("OpType"), "npu_dump": header.index("NPUDump"),
        "ground_truth": ground, "tensor_id": header.index("TensorIndex"),
        "shape": header.index("Shape") if "Shape" in header else None,
        "npu_dtype": next((i for i in dtypes if i < ground), None),
        "ref_dtype": next((i for i in dtypes if i > ground), None),
        "address": next((i for i in addresses if i < ground), None),
        "ref_address": next((i for i in addresses if i > ground), None),
        "reason": header.index("CompareFailReason") if "CompareFailReason" in header else None,
        "metrics": {name: header.index(name) for name in ALL if name in header},
    }


def _raw_cell(cells: List[str], position: Optional[int]) -> str:
    """The cell at ``position`` as written; ``""`` for a column the header or the row lacks."""
    return cells[position] if position is not None and position < len(cells) else ""


def _cell(cells: List[str], position: Optional[int]) -> str:
    """The cell at ``position``; ``""`` also for ``NaN`` (msaccucmp's "does not apply")."""
    text = _raw_cell(cells, position)
    return "" if text == NOT_APPLICABLE else text


def _metric(text: str, name: str):
    if name == "StandardDeviation":
        match = _MEAN_STD.fullmatch(text.strip())
        try:
            return PrintedMeanStd(*(float(part) for part in match.groups())) if match else None
        except ValueError:  # "(abc;1),(1;1)": not msaccucmp's cell; shown as NaN, the row still read
            return None
    try:
        value = float(text)
    except ValueError:
        return None
    return None if math.isnan(value) else value


def parse_tensor_id(tensor_id: str) -> Optional[Tuple[str, TensorKind, int]]:
    """``(op, kind, k)`` from ``op:input|output:k``; ``None`` for anything else (op names may hold colons).

    ``k`` is ASCII digits only, at most 9 of them (``str.isdigit`` would take ``²``, which ``int`` refuses).

    >>> parse_tensor_id("a/b:c:output:12"), parse_tensor_id("x:output:\u00b2"), parse_tensor_id("")
    (('a/b:c', <TensorKind.OUTPUT: 'output'>, 12), None, None)
    """
    parts = tensor_id.rsplit(":", 2)
    if len(parts) != 3 or not _TENSOR_NUMBER.fullmatch(parts[2]):
        return None
    kind = TensorKind.parse(parts[1])
    return None if kind is None else (parts[0], kind, int(parts[2]))


_TENSOR_NUMBER = re.compile(r"[0-9]{1,9}")


def _shape(text: str) -> Optional[Tuple[int, ...]]:
    text = text.strip()
    if not (text.startswith("[") and text.endswith("]")):
        return None
    inner = text[1:-1].strip()
    dims = [d.strip() for d in inner.split(",")] if inner else []
    if not all(_WHOLE_NUMBER.fullmatch(d) and not d.startswith("-") for d in dims):
        return None
    return tuple(int(d) for d in dims)


def _shown(text: str) -> str:
    """A cell quoted for an error message: ``repr`` (control characters escaped), at most 40 characters."""
    return repr(text[:40] + ("..." if len(text) > 40 else ""))


def _index(path: str, number: int, text: str) -> int:
    """The ``Index`` cell: ``-1`` when empty or ``NaN``; an ASCII whole number of at most 18 digits."""
    if not text:
        return -1
    if not _WHOLE_NUMBER.fullmatch(text):
        raise ResultCsvError(path, f"line {number}: Index {_shown(text)} is not a whole number of at most 18 digits")
    return int(text)


def _tensor_id(path: str, number: int, text: str) -> Optional[Tuple[str, TensorKind, int]]:
    """The ``TensorIndex`` cell parsed; a cell shaped ``op:input|output:k`` whose ``k`` is not a tensor number
    (``²``, thousands of digits) is a damaged row, not a name."""
    parsed = parse_tensor_id(text)
    parts = text.rsplit(":", 2)
    if parsed is None and len(parts) == 3 and TensorKind.parse(parts[1]) is not None:
        raise ResultCsvError(path, f"line {number}: TensorIndex {_shown(text)} does not end in a tensor number "
                                   "of at most 9 ASCII digits")
    return parsed


def _row(path: str, number: int, cells: List[str], columns: dict, threshold: Optional[float]) -> TensorResult:
    metrics = {name: _metric(_cell(cells, position), name) for name, position in columns["metrics"].items()}
    values = tuple(metrics.get(name) for name in ALL)
    reason = _raw_cell(cells, columns["reason"])
    tensor_id = _cell(cells, columns["tensor_id"])
    parsed = _tensor_id(path, number, tensor_id)
    op_name, kind, tensor_index = parsed if parsed is not None else (_cell(cells, columns["npu_dump"]), "", -1)
    match = _STATUS_PREFIX.match(reason)
    if match:
        status = Status(match.group(1))
        reason = reason[match.end():]
    elif all(value is None for value in metrics.values()):
        status = Status.NOT_COMPARED if tensor_id else Status.NO_DUMP
    else:
        cosine = metrics.get("CosineSimilarity")
        passed = threshold is None or (isinstance(cosine, float) and cosine >= threshold)
        status = Status.PASS if passed else Status.FAIL
    matched = _MATCHED.search(reason) if status.compared else None
    return TensorResult(index=_index(path, number, _cell(cells, columns["index"])), tensor_id=tensor_id,
                        op_name=op_name, kind=kind, tensor_index=tensor_index, op_type=_cell(cells, columns["op_type"]),
                        status=status, reason=reason, npu_dtype=_cell(cells, columns["npu_dtype"]),
                        address=_cell(cells, columns["address"]),
                        ground_truth=_cell(cells, columns["ground_truth"]) or "*",
                        ref_dtype=_cell(cells, columns["ref_dtype"]), ref_address=_cell(cells, columns["ref_address"]),
                        shape=_shape(_cell(cells, columns["shape"])), metrics=values,
                        matched_non_finite=int(matched.group(1)) if matched else 0)
