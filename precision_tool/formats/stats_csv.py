"""Ascend statistics dumps (``dump_data="stats"``) read into one row type, whatever the form.

GE writes one CSV per op task where the tensor dump would be (``{dump name}.csv``): a header, then one row per input
or output -- max, min, mean, element count, NaN/inf counts, and with ``dump_stats`` an L2 norm. msprobe and MindSpore
merge such rows into one ``statistic.csv`` whose rows also name the op. :func:`read_stats_csv` reads every form by its
header (``../shared/docs/ascend-dump-trees.md`` §2): ``NA`` or empty cells are unknown (``None``); rows appended to a
per-op file repeat an input or output, and the last one wins; a bad row or cell is a one-line note and the rest is
read. See docs/internals/formats.md#stats_csv.
"""
from __future__ import annotations

import csv
import io
import math
import os
from dataclasses import dataclass
from typing import Dict, List, Optional, Tuple

from precision_tool.errors import FileFormatError
from precision_tool.fileio import read_input_text
from precision_tool.formats.bounds import parse_decimal, shown_name
from precision_tool.formats.tensor_kind import TensorKind

#: The forms, by what the header holds.
PER_OP = "per-op"  # GE's default header: ..., Shape, Max Value, Min Value, Avg Value, Count, NaN/inf counts
PER_OP_DUMP_STATS = "per-op dump_stats"  # dump_stats: Count right after Shape, then the items chosen (l2norm ...)
MSPROBE = "msprobe statistic.csv"  # Op Type, Op Name, Task ID, Stream ID, Timestamp, Input/Output, Slot, ...
MINDSPORE = "MindSpore statistic.csv"  # Op Type, Op Name, ..., IO, Slot, ... (no Format column)

#: GE's default per-op header, in order.
DEFAULT_HEADER = ("Input/Output", "Index", "Data Size", "Data Type", "Format", "Shape", "Max Value", "Min Value",
                  "Avg Value", "Count", "Nan Count", "Negative Inf Count", "Positive Inf Count")

# column name (lower case) -> field; several spellings for one field across the forms
_COLUMNS: Dict[str, str] = {
    "input/output": "io", "io": "io", "index": "index", "slot": "index", "data size": "data_size",
    "data type": "dtype", "format": "format", "shape": "shape", "max value": "max", "min value": "min",
    "avg value": "mean", "l2norm": "l2norm", "l2norm value": "l2norm", "count": "count", "nan count": "nan",
    "negative inf count": "neg_inf", "positive inf count": "pos_inf", "op type": "op_type", "op name": "op_name",
    "task id": "task_id", "stream id": "stream_id", "timestamp": "timestamp",
}
# columns some forms carry that no comparison of statistics uses: read past without a note
_IGNORED = {"md5 value", "negative zero count", "positive zero count", "zero count"}
_STATISTICS = ("max", "min", "mean", "l2norm")
_COUNTS = ("count", "nan", "neg_inf", "pos_inf", "data_size", "task_id", "stream_id", "timestamp")
_UNKNOWN = {"", "na", "n/a", "none", "null", "-"}
MAX_NOTES = 20  # notes kept per file; the rest are counted


class StatsFormatError(FileFormatError):
    """A file that is no statistics CSV: empty, not text, or a header without the input/output and index columns."""

    format_name = "statistics CSV"


@dataclass(frozen=True)
class TensorStats:
    """The statistics of one input or output, as a statistics dump states them; ``None``: not stated (``NA``, an
    empty cell, or no such column in this form).

    ``max``/``min``/``mean``/``l2norm`` are over the tensor's values as the device computed them (GE's ``Avg Value``
    is the mean); ``count`` is the number of elements, ``nan``/``neg_inf``/``pos_inf`` those of each kind.
    ``shape`` is ``()`` for GE's ``-`` (no shape). ``op_name`` and the ids are set by the merged forms only (a
    per-op file's name says them). ``line``: the row's line in its file.
    """

    kind: TensorKind
    index: int
    dtype: str = ""
    format: str = ""
    shape: Optional[Tuple[int, ...]] = None
    count: Optional[int] = None
    max: Optional[float] = None
    min: Optional[float] = None
    mean: Optional[float] = None
    l2norm: Optional[float] = None
    nan: Optional[int] = None
    neg_inf: Optional[int] = None
    pos_inf: Optional[int] = None
    data_size: Optional[int] = None
    op_type: str = ""
    op_name: str = ""
    task_id: Optional[int] = None
    stream_id: Optional[int] = None
    timestamp: Optional[int] = None
    line: int = 0

    @property
    def tensor_id(self) -> str:
        """``op:input:0`` (with the op's name when the row states it, else ``input:0``)."""
        return f"{self.op_name}:{self.kind}:{self.index}" if self.op_name else f"{self.kind}:{self.index}"


@dataclass(frozen=True)
class StatsFile:
    """One statistics CSV read: its ``form`` (:data:`PER_OP`, :data:`PER_OP_DUMP_STATS`, :data:`MSPROBE`,
    :data:`MINDSPORE`), its ``rows`` in file order (of a per-op file, one per input or output: the last written),
    ``superseded`` rows an appended write repeated, and one ``notes`` line per row or cell that could not be read."""

    path: str
    form: str
    columns: Tuple[str, ...]
    rows: Tuple[TensorStats, ...]
    superseded: int = 0
    notes: Tuple[str, ...] = ()

    def find(self, kind: TensorKind, index: int, op_name: str = "") -> Optional[TensorStats]:
        """The row of ``op_name``'s (a per-op file: the op's) input or output ``index``, or ``None``."""
        return next((row for row in reversed(self.rows)
                     if row.kind == kind and row.index == index and row.op_name == op_name), None)


def read_stats_csv(path) -> StatsFile:
    """Read a statistics CSV of any form (module docstring).

    Raises
    ------
    StatsFormatError
        the file is empty, is not UTF-8 text, or its first line is no statistics header (it lacks the input/output
        or the index column, or names no statistic); also the errors of :func:`~precision_tool.fileio.open_input`
        (a folder, a FIFO, no such file).
    """
    path = os.fspath(path)
    text = read_input_text(path, StatsFormatError, errors="strict")
    lines, broken = _csv_lines(text.lstrip("\ufeff"))
    while lines and not any(cell.strip() for cell in lines[0]):
        lines.pop(0)
    if not lines:
        raise StatsFormatError(path, "is empty: no header, no rows")
    header = [cell.strip() for cell in lines[0]]
    fields = [_COLUMNS.get(name.lower(), "") for name in header]
    if "io" not in fields or "index" not in fields or not set(fields) & set(_STATISTICS + ("count",)):
        raise StatsFormatError(path, f"is no statistics CSV: its header {shown_name(','.join(header), 80)} lacks "
                               "the Input/Output, Index and statistic columns")
    notes: List[str] = []
    unknown = [name for name, field in zip(header, fields) if not field and name.lower() not in _IGNORED]
    if unknown:
        notes.append(f"columns not read: {', '.join(shown_name(name, 40) for name in unknown[:5])}")
    rows: List[TensorStats] = []
    skipped = 0
    for number, cells in enumerate(lines[1:], start=2):
        if not any(cell.strip() for cell in cells) or [cell.strip() for cell in cells] == header:
            continue  # a blank line, or the header again (a file rewritten from the start by another process)
        row, problems = _row(cells, header, fields, number)
        if len(notes) < MAX_NOTES:
            notes.extend(problems[:MAX_NOTES - len(notes)])
        else:
            skipped += len(problems)
        if row is not None:
            rows.append(row)
    if skipped:
        notes.append(f"{skipped} more problem(s) not listed")
    if broken:
        notes.append(broken)
    merged = "op_name" in fields
    kept, superseded = (rows, 0) if merged else _last_of_each(rows)
    return StatsFile(path, _form(header, fields), tuple(header), tuple(kept), superseded, tuple(notes))


def _csv_lines(text: str) -> Tuple[List[List[str]], str]:
    """The rows of ``text`` as the ``csv`` module splits them, up to a line it cannot split (an unclosed quote at
    the end, a cell over its size limit), and a note naming that line (``""`` when there is none)."""
    reader = csv.reader(io.StringIO(text, newline=""))
    lines: List[List[str]] = []
    try:
        for cells in reader:
            lines.append(cells)
    except csv.Error as error:
        return lines, f"line {reader.line_num}: {error}: the rest of the file not read"
    return lines, ""


def _form(header: List[str], fields: List[str]) -> str:
    if "op_name" in fields:
        return MSPROBE if "format" in fields else MINDSPORE
    return PER_OP if tuple(header) == DEFAULT_HEADER else PER_OP_DUMP_STATS


def _last_of_each(rows: List[TensorStats]) -> Tuple[List[TensorStats], int]:
    """Of rows repeating an input or output (an appended write), the last; in the order of their last write."""
    last: Dict[Tuple[TensorKind, int], TensorStats] = {}
    for row in rows:
        last.pop((row.kind, row.index), None)
        last[(row.kind, row.index)] = row
    return list(last.values()), len(rows) - len(last)


def _row(cells: List[str], header: List[str], fields: List[str], number: int
         ) -> Tuple[Optional[TensorStats], List[str]]:
    """The row at line ``number`` and its problems; ``None`` for a row without a usable input/output and index."""
    where = f"line {number}"
    if len(cells) != len(header):
        return None, [f"{where}: {len(cells)} cells where the header has {len(header)}: row not read"]
    values: Dict[str, object] = {}
    problems: List[str] = []
    for name, field, cell in zip(header, fields, cells):
        if not field:
            continue
        cell = cell.strip()
        if field == "io":
            kind = TensorKind.parse(cell.lower())
            if kind is None:
                return None, [f"{where}: {name} {shown_name(cell, 40)} is neither Input nor Output: row not read"]
            values["kind"] = kind
        elif field == "index":
            index = parse_decimal(cell, 9)
            if index is None:
                return None, [f"{where}: {name} {shown_name(cell, 40)} is no input/output index: row not read"]
            values["index"] = index
        elif field in ("dtype", "format", "op_type", "op_name"):
            values[field] = "" if cell.lower() in _UNKNOWN else cell
        elif field == "shape":
            values["shape"], problem = _shape(cell)
            if problem:
                problems.append(f"{where}: {name} {shown_name(cell, 40)} {problem}")
        elif cell.lower() in _UNKNOWN:
            continue
        elif field in _COUNTS:
            count = parse_decimal(cell)
            if count is None:
                problems.append(f"{where}: {name} {shown_name(cell, 40)} is not a count: taken as unknown")
            else:
                values[field] = count
        else:
            number_value = _number(cell)
            if number_value is None:
                problems.append(f"{where}: {name} {shown_name(cell, 40)} is not a number: taken as unknown")
            elif math.isinf(number_value) and cell.lstrip("+-").lower() not in ("inf", "infinity"):
                problems.append(f"{where}: {name} {shown_name(cell, 40)} is beyond a double's range (no device "
                                "writes it): taken as unknown")
            else:
                values[field] = number_value
    return TensorStats(line=number, **values), problems  # type: ignore[arg-type]


def _number(cell: str) -> Optional[float]:
    """A statistic: an ASCII decimal, or ``nan``/``inf``/``-inf`` (a tensor holding them has them as its max or
    mean); a decimal beyond float range is ``inf``, as ``float`` reads it (the row's reader notes it and leaves the
    cell unknown). ``1_000``, ``0x10``, ``٣`` and text are ``None``."""
    if not cell.isascii() or "_" in cell:
        return None
    try:
        return float(cell)
    except ValueError:
        return None


def _shape(cell: str) -> Tuple[Optional[Tuple[int, ...]], str]:
    """GE's ``2x3x4`` (``-``: no shape, ``()``); ``(None, why)`` for anything else."""
    if cell == "-":
        return (), ""
    if cell == "" or cell.lower() in _UNKNOWN:
        return None, ""
    dims = [parse_decimal(part, 19) for part in cell.split("x")]
    if any(dim is None for dim in dims):
        return None, "is no shape (dimensions joined by x): taken as unknown"
    return tuple(dims), ""  # type: ignore[arg-type]


# --------------------------------------------------------------------------------------------- as a dump header
def stats_header(stats: StatsFile):
    """A per-op statistics file as the header of the dump file it stands for: its inputs and outputs with the data
    type, format and shape it states, no payload (size and offset 0) and no original op, so that the one alignment
    pairs its tensors with the reference as it pairs a dump's. A data type or format it does not name (``NA``) is
    ``DT_UNDEFINED`` / ``ND``; a shape it does not state is ``()``."""
    from precision_tool.formats import dtypes
    from precision_tool.formats.dump_file import DumpFile, TensorEntry

    def entries(kind: TensorKind):
        rows = sorted((row for row in stats.rows if row.kind == kind and not row.op_name), key=lambda r: r.index)
        return tuple(TensorEntry(kind, row.index, dtypes.DTYPE_BY_ENUM_NAME.get(row.dtype, dtypes.DT_UNDEFINED),
                                 dtypes.FORMAT_BY_NAME.get(row.format, dtypes.FORMAT_BY_NAME["ND"]),
                                 row.shape or (), None, 0, 0) for row in rows)

    return DumpFile(stats.path, "", 0, "", entries(TensorKind.INPUT), entries(TensorKind.OUTPUT), (), (), (), 0, 0)


# --------------------------------------------------------------------------------------------- writing
_CELL = {"io": lambda row: "Input" if row.kind == TensorKind.INPUT else "Output", "index": lambda row: row.index}


def stats_csv_text(rows, columns=DEFAULT_HEADER, header: bool = True) -> str:
    """The per-op CSV GE writes for ``rows`` (:class:`TensorStats`), with ``columns`` (default GE's default header;
    a ``dump_stats`` header puts ``Count`` after ``Shape``): the header line unless ``header`` is false (GE writes
    it only the first time it sees a file name), then one line per row. Unknown values are ``NA``; shapes join
    their dimensions with ``x`` (``-`` for none); a whole statistic is written as an integer (``100``), another as
    its shortest round-trip decimal.

    >>> row = TensorStats(TensorKind.OUTPUT, 0, "DT_FLOAT16", "ND", (2, 2), 4, 1.5, -0.5, 0.25, nan=0, neg_inf=0,
    ...                   pos_inf=0, data_size=8)
    >>> print(stats_csv_text([row], header=False), end="")
    Output,0,8,DT_FLOAT16,ND,2x2,1.5,-0.5,0.25,4,0,0,0
    """
    fields = [_COLUMNS[name.lower()] for name in columns]
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    if header:
        writer.writerow(columns)
    for row in rows:
        writer.writerow([_cell(row, field) for field in fields])
    return out.getvalue()


def _cell(row: TensorStats, field: str) -> str:
    if field in _CELL:
        return str(_CELL[field](row))
    value = getattr(row, field)
    if field == "shape":
        return "NA" if value is None else "x".join(str(dim) for dim in value) or "-"
    if value is None or value == "":
        return "NA"
    return _number_text(float(value)) if field in _STATISTICS else str(value)


def _number_text(value: float) -> str:
    """``100`` for a whole number (as the facts' example row writes it), else the shortest round-trip decimal."""
    if value == value and abs(value) < 1e16 and value == int(value):
        return str(int(value))
    return repr(value)


__all__ = ["read_stats_csv", "stats_csv_text", "stats_header", "StatsFile", "TensorStats", "StatsFormatError",
           "DEFAULT_HEADER", "PER_OP", "PER_OP_DUMP_STATS", "MSPROBE", "MINDSPORE"]
