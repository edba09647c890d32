"""The result CSV: msaccucmp's exact columns and cell formats, written atomically, and a reader for ours and its.

Columns (NPU vs TF; NPU vs NPU adds a second ``Address`` after the second ``DataType``, as msaccucmp does)::

    Index,OpType,NPUDump,DataType,Address,GroundTruth,DataType,TensorIndex,Shape,CosineSimilarity,
    MaxAbsoluteError,AccumulatedRelativeError,RelativeEuclideanDistance,KullbackLeiblerDivergence,
    StandardDeviation,MeanAbsoluteError,RootMeanSquareError,MaxRelativeError,MeanRelativeError,CompareFailReason

Cells, as msaccucmp writes them (checked against its CSV on the same files):

- ``Index``: the op's position in execution order, one number per op, repeated on each of its tensor rows
  (msaccucmp writes the GE op id, the same number for a Build graph numbered in topological order);
- ``NPUDump``: the NPU op name; ``GroundTruth``: the TF ops it implements, comma separated (``*`` = none);
- ``DataType``: numpy names (``float16``, ``float32``); ``Address``: the dump header's address, decimal;
- ``TensorIndex``: ``op:input|output:k``; ``Shape``: ``[1,64,64,64]`` -- the NPU tensor in its origin layout.
  msaccucmp writes the flattened length (``[262144]``) for ND tensors; we always write the real shape;
- metrics: ``'{:.6f}'``; StandardDeviation ``(mean_x;std_x),(mean_y;std_y)``; ``NaN`` = not computed;
- ``CompareFailReason``: empty for a plain pass or a cosine below the threshold (the cell shows it); else
  ``STATUS: reason`` (``NAN_INF: NPU has 3 NaN, reference none; ...``, ``NOT_COMPARED: no reference file
  for ...``, ``NO_DUMP: ...``), so every ``NaN`` cell and every honest failure is explained in the row.
- ``NaN`` also fills every cell that does not apply (no dump, no reference), as msaccucmp does.

Quoting and spreadsheet formulas
--------------------------------
Cells are written RFC 4180 style with CRLF line ends, quoted when they hold a comma, a quote or a line
break (what ``csv.writer`` does), **and** when they start with a character a spreadsheet reads as a formula
(``= + - @ %``, full-width ``＝ ＋ －``, tab, carriage return). The value itself is never changed: every CSV
reader (``csv``, pandas, our :func:`read_result_csv`) gets ``-neg/Add`` back exactly, so users' scripts
keep matching names. msaccucmp instead aborts the whole run on such a name (or, with ``errors='replace'``,
prefixes a space, changing it). Quoting is the only neutralisation that keeps the value: LibreOffice and
importers set to "quoted field as text" keep these cells as text; Excel evaluates quoted cells too, so
open the CSV in Excel through *Data > From Text/CSV* with the name columns typed as Text. The terminal view
(``vcs``) never evaluates anything.
"""
from __future__ import annotations

import csv
import math
import os
import re
from dataclasses import dataclass, field
from typing import Dict, Iterable, List, Optional, Sequence, Tuple

from precision_tool.comparison.result import ALL_STATUSES, ERROR, NO_DUMP, NOT_COMPARED, TensorResult
from precision_tool.errors import ResultCsvError
from precision_tool.fileio import atomic_write
from precision_tool.metrics import ALL, Status, format_value

NOT_APPLICABLE = "NaN"
_OP_COLUMNS = ("Index", "OpType", "NPUDump", "DataType", "Address", "GroundTruth", "DataType")
HEADER: Tuple[str, ...] = _OP_COLUMNS + ("TensorIndex", "Shape") + ALL + ("CompareFailReason",)
HEADER_NPU_VS_NPU: Tuple[str, ...] = _OP_COLUMNS + ("Address", "TensorIndex", "Shape") + ALL + ("CompareFailReason",)
LINE_END = "\r\n"
FORMULA_STARTS = ("=", "+", "-", "@", "%", "\uff1d", "\uff0b", "\uff0d", "\t", "\r")
_NEEDS_QUOTES = re.compile(r'[,"\r\n]')
#: Statuses whose reason goes into CompareFailReason (a plain PASS or FAIL shows itself in the cosine cell).
_EXPLAINED = tuple(s for s in ALL_STATUSES if s not in (Status.PASS.value, Status.FAIL.value))
_STATUS_PREFIX = re.compile(r"^(" + "|".join(map(re.escape, _EXPLAINED)) + r"): ")
_FAILING_EXPLAINED = tuple(s.value for s in Status if not s.passed and s is not Status.FAIL)


# --------------------------------------------------------------------------------------------- writing
def quote_cell(text: str) -> str:
    """One CSV cell: quoted (quotes doubled) when it holds ``, " CR LF`` or starts like a formula."""
    if _NEEDS_QUOTES.search(text) or text.startswith(FORMULA_STARTS):
        return '"' + text.replace('"', '""') + '"'
    return text


def csv_line(cells: Iterable[str]) -> str:
    """A CRLF-terminated CSV line; ``csv.reader`` reads the same cells back."""
    return ",".join(quote_cell(str(cell)) for cell in cells) + LINE_END


def shape_text(shape: Optional[Sequence[int]]) -> str:
    """``[1,64,64,64]`` (msaccucmp's spelling, no spaces); ``[]`` for a scalar; ``NaN`` when unknown."""
    if shape is None:
        return NOT_APPLICABLE
    return "[" + ",".join(str(int(d)) for d in shape) + "]"


def fail_reason_cell(result: TensorResult) -> str:
    """``""`` for PASS and FAIL, else ``"STATUS: reason"``."""
    if result.status in (Status.PASS.value, Status.FAIL.value):
        return ""
    return f"{result.status}: {result.reason}"


def result_row(result: TensorResult, npu_vs_npu: bool = False) -> List[str]:
    """The CSV cells of one row (before quoting)."""
    cells = [str(result.index), result.op_type or NOT_APPLICABLE, result.op_name,
             result.npu_dtype or NOT_APPLICABLE, result.address or NOT_APPLICABLE, result.ground_truth or "*",
             result.ref_dtype or NOT_APPLICABLE]
    if npu_vs_npu:
        cells.append(result.ref_address or NOT_APPLICABLE)
    cells += [result.tensor_id or NOT_APPLICABLE, shape_text(result.shape)]
    cells += [format_value(name, value) for name, value in zip(ALL, result.metrics)]
    cells.append(fail_reason_cell(result))
    return cells


def write_result_csv(path, results: Iterable[TensorResult], npu_vs_npu: bool = False) -> str:
    """Write the result CSV atomically (temporary file, then rename); returns ``path``.

    A run killed while writing leaves no file under ``path``: a reader never sees half a result.
    """
    header = HEADER_NPU_VS_NPU if npu_vs_npu else HEADER
    with atomic_write(path, "w") as handle:
        handle.write(csv_line(header))
        for result in results:
            handle.write(csv_line(result_row(result, npu_vs_npu)))
    return os.fspath(path)


# --------------------------------------------------------------------------------------------- reading
@dataclass(frozen=True)
class CsvRow:
    """One row of a result CSV (ours or msaccucmp's).

    ``metrics`` maps each metric column present to a float (``None`` for ``NaN``/``nan``/empty);
    StandardDeviation stays text. ``status`` is ours when the row says it (``NAN_INF``, ``NOT_COMPARED``, ...),
    ``NOT_COMPARED``/``NO_DUMP`` when no metric was computed, else ``""``: judged by its cosine.
    """

    line: int
    index: Optional[int]
    op_type: str
    npu_dump: str
    npu_dtype: str
    address: str
    ground_truth: str
    ref_dtype: str
    tensor_id: str
    ref_address: str
    shape: str
    metrics: Dict[str, object] = field(default_factory=dict)
    reason: str = ""
    status: str = ""

    @property
    def key(self) -> Optional[Tuple[str, str, int]]:
        """``(op, kind, k)`` parsed from ``TensorIndex``; ``None`` for op-level rows."""
        parts = self.tensor_id.rsplit(":", 2)
        if len(parts) != 3 or parts[1] not in ("input", "output") or not parts[2].isdigit():
            return None
        return parts[0], parts[1], int(parts[2])

    @property
    def op_name(self) -> str:
        key = self.key
        return key[0] if key else self.npu_dump

    @property
    def cosine(self) -> Optional[float]:
        value = self.metrics.get("CosineSimilarity")
        return value if isinstance(value, float) else None

    def judge(self, cosine_threshold: float) -> str:
        """``"pass"``, ``"fail"``, ``"error"`` or ``"not_compared"`` at ``cosine_threshold``.

        Our explicit statuses decide first (``NAN_INF`` fails whatever the cosine; ``BOTH_ZERO`` passes);
        otherwise a row with metrics fails when its cosine is below the threshold or is ``NaN`` -- a NaN
        cosine beside computed metrics is msaccucmp's way of saying NaN data or an all-zero side.
        """
        if self.status in (NOT_COMPARED, NO_DUMP):
            return "not_compared"
        if self.status == ERROR:
            return "error"
        if self.status in _FAILING_EXPLAINED:
            return "fail"
        if self.status in (Status.BOTH_ZERO.value, Status.EMPTY.value):
            return "pass"
        cosine = self.cosine
        return "fail" if cosine is None or cosine < cosine_threshold else "pass"


@dataclass(frozen=True)
class ResultTable:
    """A result CSV read back: its rows in file order and whether it has the NPU-vs-NPU second Address."""

    path: str
    rows: Tuple[CsvRow, ...]
    npu_vs_npu: bool = False


def read_result_csv(path) -> ResultTable:
    """Read a result CSV written by us or by msaccucmp (any subset of metric columns, extra columns ignored).

    Raises
    ------
    ResultCsvError : the file cannot be read, or its header lacks the columns every result has.
    """
    path = os.fspath(path)
    try:
        with open(path, newline="", encoding="utf-8-sig") as handle:
            lines = list(csv.reader(handle))
    except (OSError, UnicodeDecodeError, csv.Error) as error:
        raise ResultCsvError(path, f"cannot read as CSV ({getattr(error, 'strerror', None) or error})") from None
    if not lines:
        raise ResultCsvError(path, "is empty; a result CSV starts with msaccucmp's header line")
    columns = _columns(path, lines[0])
    rows = []
    for number, cells in enumerate(lines[1:], start=2):
        if not cells or all(not cell for cell in cells):
            continue
        rows.append(_row(number, cells, columns))
    return ResultTable(path, tuple(rows), npu_vs_npu=columns["ref_address"] is not None)


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


def _cell(cells: List[str], position: Optional[int]) -> str:
    if position is None or position >= len(cells):
        return ""
    return cells[position]


def _metric(text: str, name: str):
    if name == "StandardDeviation":
        return None if text in ("", NOT_APPLICABLE) else text
    try:
        value = float(text)
    except ValueError:
        return None
    return None if math.isnan(value) else value


def _row(number: int, cells: List[str], columns: dict) -> CsvRow:
    index_text = _cell(cells, columns["index"])
    metrics = {name: _metric(_cell(cells, position), name) for name, position in columns["metrics"].items()}
    reason = _cell(cells, columns["reason"])
    tensor_id = _cell(cells, columns["tensor_id"])
    match = _STATUS_PREFIX.match(reason)
    if match:
        status = match.group(1)
    elif all(value is None for value in metrics.values()):
        status = NO_DUMP if tensor_id in ("", NOT_APPLICABLE) else NOT_COMPARED
    else:
        status = ""
    return CsvRow(line=number, index=int(index_text) if index_text.lstrip("-").isdigit() else None,
                  op_type=_cell(cells, columns["op_type"]), npu_dump=_cell(cells, columns["npu_dump"]),
                  npu_dtype=_cell(cells, columns["npu_dtype"]), address=_cell(cells, columns["address"]),
                  ground_truth=_cell(cells, columns["ground_truth"]), ref_dtype=_cell(cells, columns["ref_dtype"]),
                  ref_address=_cell(cells, columns["ref_address"]),
                  tensor_id="" if tensor_id == NOT_APPLICABLE else tensor_id, shape=_cell(cells, columns["shape"]),
                  metrics=metrics, reason=reason, status=status)
