"""Render a :class:`~precision_tool.reports.report.Report` as terminal text or JSON (one place for both).

Everything shown on a terminal -- report text here, and the one-line errors of ``cli.main`` and the shell --
goes through :func:`terminal_safe`, so names from hostile dumps and graphs cannot send escape sequences.
"""
from __future__ import annotations

import json
import math
import numbers
import re
from dataclasses import dataclass
from typing import Any, List, Optional


from precision_tool.reports.report import Report, Table, Text

# C0 controls but tab and newline, DEL, C1 controls, the bidirectional overrides and isolates, lone surrogates.
_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")


def terminal_safe(text: str) -> str:
    r"""``text`` with every character that could drive a terminal shown as its Python escape instead.

    Replaced, each by ``\xNN`` (``\uNNNN`` above 0xff) as ``repr`` writes it: the C0 controls (ESC, BEL, NUL, CR,
    backspace ...) except tab and newline, DEL, the C1 controls (0x80-0x9f; 0x9b starts an escape sequence on its
    own), the bidirectional overrides and isolates (U+202A-U+202E, U+2066-U+2069, which reorder the rest of the line)
    and lone surrogates (undecodable bytes of a file name; ``print`` cannot encode them). Why escapes and not ``?``,
    and why tab and newline stay: docs/internals/reports.md#format.

    >>> print(terminal_safe("conv\x1b[31m\x07/a\x9b\x7f b"))
    conv\x1b[31m\x07/a\x9b\x7f b
    >>> print(terminal_safe("\u202eabc \udcff"))
    \u202eabc \udcff
    """
    return _UNSAFE.sub(_escape, text)


def _escape(match) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


@dataclass(frozen=True)
class OutputSettings:
    """How tables look.

    ``table_format`` is tabulate's ``tablefmt``. ``float_format`` formats the cells that are real,
    non-integer numbers (``float``, numpy floating scalars); every other cell is printed as it is, so text
    that looks like a number (an op called ``1e5``, a value a report already formatted) is never re-parsed.
    ``max_rows`` truncates long tables with a note (0 = no limit).

    >>> table = Report().add_table(["op", "cosine", "count", "note"], [["1e5", 0.123456789, 3, "0.50"]])
    >>> print(format_report(table, OutputSettings(float_format=".3f")))
    op    cosine    count    note
    ----  --------  -------  ------
    1e5   0.123     3        0.50
    """

    table_format: str = "simple"
    float_format: str = ".6g"
    max_rows: int = 0


def counted(count: int, noun: str, plural: Optional[str] = None) -> str:
    """``"1 op"``, ``"2 ops"``, ``"1,024 dump files"``: a count with its noun in the right number (``plural``
    when adding an ``s`` is wrong: ``counted(2, "pass", "passes")``).

    >>> counted(1, "dump file"), counted(0, "op"), counted(2, "pass", "passes")
    ('1 dump file', '0 ops', '2 passes')
    """
    return f"{count:,} {noun if count == 1 else (plural or noun + 's')}"


def inheriting_clause(count: int, adding: int = 0) -> str:
    """How many later ops fail only by inheriting the first divergence's error, as ``compare`` and ``vcs`` say it;
    ``adding`` of the ``count`` later failing ops add error of their own too (the judgment's standouts).

    >>> inheriting_clause(0)
    'no later op fails only by inheriting its error'
    >>> inheriting_clause(3)
    '3 later ops fail only by inheriting its error'
    >>> inheriting_clause(8, 3)
    '8 later ops fail after it: 5 only by inheriting its error, 3 adding error of their own too'
    """
    if not count:
        return "no later op fails only by inheriting its error"
    if not adding:
        return f"{counted(count, 'later op')} {'fails' if count == 1 else 'fail'} only by inheriting its error"
    own = "adding error of its own too" if adding == 1 else "adding error of their own too"
    return (f"{counted(count, 'later op')} {'fails' if count == 1 else 'fail'} after it: {count - adding} only by "
            f"inheriting its error, {adding} {own}")


EXIT_MEANINGS = {0: "all checks passed", 1: "a check found a problem (see above)",
                 2: "some input could not be used (see above)"}


def exit_line(exit_code: int, seconds: Optional[float] = None, detail: str = "", meaning: str = "") -> str:
    """A job's last line: its exit code and what the code means (``meaning`` when the job says it better), then the
    time taken and ``detail``.

    >>> exit_line(1, 1.574, "compare 0.35 s, replay 1.18 s")
    'exit 1: a check found a problem (see above); 1.57 s (compare 0.35 s, replay 1.18 s)'
    """
    line = f"exit {exit_code}: {meaning or EXIT_MEANINGS.get(exit_code, 'see above')}"
    if seconds is not None:
        line += f"; {seconds:.2f} s" + (f" ({detail})" if detail else "")
    elif detail:
        line += f"; {detail}"
    return line


def format_report(report: Report, settings: OutputSettings = OutputSettings()) -> str:
    """The report as terminal text: title, each block, status; blocks separated by a blank line.

    Every piece of text (title, lines, table titles, headers and cells) is made :func:`terminal_safe` before
    the tables are laid out, so columns line up with the escapes as shown.
    """
    parts: List[str] = []
    if report.title:
        parts.append(terminal_safe(report.title))
    for block in report.blocks:
        if isinstance(block, Table):
            parts.append(_format_table(block, settings))
        elif isinstance(block, Text):
            parts.append(terminal_safe("\n".join(block.lines)))
    if report.status:
        parts.append(terminal_safe(report.status))
    return "\n\n".join(p for p in parts if p)


def _format_table(table: Table, settings: OutputSettings) -> str:
    rows = list(table.rows)
    note = ""
    if settings.max_rows and len(rows) > settings.max_rows:
        note = f"... {len(rows) - settings.max_rows} more rows not shown"
        rows = rows[: settings.max_rows]
    cells = [[_cell(value, settings.float_format) for value in row] for row in rows]
    headers = [terminal_safe(str(header)) for header in table.headers]
    from tabulate import tabulate  # here: tabulate imports importlib.metadata, 30 ms of every start-up otherwise

    text = tabulate(cells, headers=headers, tablefmt=settings.table_format,
                    disable_numparse=True) if rows else "(none)"
    lines = [terminal_safe(table.title)] if table.title else []
    lines.append(text)
    if note:
        lines.append(note)
    return "\n".join(lines)


def _cell(value: Any, float_format: str) -> Any:
    """``value`` formatted with ``float_format`` when it is a real, non-integer number; integers and ``None``
    as they are; anything else as its ``str``, made :func:`terminal_safe`.

    (tabulate's own ``floatfmt`` is ignored with ``disable_numparse``, which keeps number-like text intact.)
    """
    if isinstance(value, numbers.Real) and not isinstance(value, numbers.Integral):
        return format(value, float_format)
    if value is None or isinstance(value, numbers.Integral):
        return value
    return terminal_safe(str(value))


def _json_safe(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)  # "nan", "inf": JSON has no literal for them
    if isinstance(value, dict):
        return {str(k): _json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_safe(v) for v in value]
    if hasattr(value, "item") and callable(value.item):  # numpy scalar
        return _json_safe(value.item())
    return value


def report_to_json(report: Report) -> str:
    """The machine-readable form: ``{"title", "status", "exit_code", "data"}`` (NaN/inf as strings; the status
    without the terminal's pointer "(see above)": a script has no "above")."""
    status = report.status.replace(" (see above)", "") if isinstance(report.status, str) else report.status
    return json.dumps(_json_safe({"title": report.title, "status": status,
                                  "exit_code": report.exit_code, "data": report.data}), indent=2)
