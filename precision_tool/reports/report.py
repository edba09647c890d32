"""What every command returns: plain data that one formatter turns into text or JSON.

Handlers never print. They return a :class:`Report` -- a title, some blocks (tables or lines of text),
a status line, an exit code and a JSON-ready ``data`` dict for machines -- and
:func:`precision_tool.reports.format.format_report` renders it for a terminal (pgcli's
``(title, rows, headers, status)`` + ``format_output`` split).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, List, Sequence, Union

from precision_tool.errors import EXIT_OK


@dataclass(frozen=True)
class Table:
    """Rows under headers; cells are plain values (str, int, float, None)."""

    headers: Sequence[str]
    rows: Sequence[Sequence[Any]]
    title: str = ""


@dataclass(frozen=True)
class Text:
    """Free lines of text, printed as they are."""

    lines: Sequence[str]


Block = Union[Table, Text]


@dataclass
class Report:
    """The result of one command.

    ``exit_code`` is what the batch CLI exits with (0 ok, 1 a check failed, 2 unusable input);
    ``data`` is what ``--json`` prints, so CI scripts never parse the table text.
    """

    title: str = ""
    blocks: List[Block] = field(default_factory=list)
    status: str = ""
    exit_code: int = EXIT_OK
    data: dict = field(default_factory=dict)

    def add_table(self, headers, rows, title: str = "") -> "Report":
        self.blocks.append(Table(list(headers), [list(r) for r in rows], title))
        return self

    def add_text(self, *lines: str) -> "Report":
        self.blocks.append(Text(list(lines)))
        return self
