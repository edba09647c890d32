"""Report blocks for exception dumps (:mod:`precision_tool.checks.exception_dumps`): one row per file.

Shared by ``ov``, ``ac`` and ``ls``, so an AI Core error's dumps read the same everywhere: never as an overflow,
never as ops to compare. Builders only format what they are given; they read no file.
"""
from __future__ import annotations

from typing import Sequence

from precision_tool.reports.report import Report

HEADERS = ("time", "stream", "task", "op", "tensors", "path")
WHAT = "the inputs of an op that raised an AI Core error"


def exception_rows(infos, tensors: bool = True) -> list:
    """``[time, stream, task, op, tensors, path]`` per
    :class:`~precision_tool.checks.exception_dumps.ExceptionDumpInfo` (``-`` for a stream a mode-1 name does not
    carry, or an op a Lite dump does not name); without the ``tensors`` cell when ``tensors`` is False."""
    rows = []
    for info in infos:
        name = info.name
        cells = [name.time_text, "-" if name.stream_id is None else name.stream_id, name.task_id, info.op_name or "-"]
        rows.append([*cells, *([info.tensors_text] if tensors else []), info.path])
    return rows


def add_exception_dumps(report: Report, infos: Sequence, limit: int = 0) -> None:
    """A table of the exception dumps in the order given (oldest first); nothing when there are none. At most
    ``limit`` rows (0: all), then one line for the rest. The ``tensors`` column is left out when no header was
    read (``ls`` lists by file names alone)."""
    if not infos:
        return
    shown = infos if not limit else infos[:limit]
    title = (f"AI Core error: {len(infos)} exception dump(s) -- {WHAT}, not an overflow "
             "(dc converts them, pt FILE prints them):")
    tensors = any(info.header_read or info.problem for info in infos)
    headers = HEADERS if tensors else tuple(header for header in HEADERS if header != "tensors")
    report.add_table(headers, exception_rows(shown, tensors), title=title)
    if len(shown) < len(infos):
        report.add_text(f"{len(infos) - len(shown)} later exception dump(s) not listed (-l 0 lists all)")


def exception_status(infos: Sequence) -> str:
    """``1 exception dump of an AI Core error (stream 13, task 3)`` -- the first one's ids; ``""`` for none."""
    if not infos:
        return ""
    first = infos[0].name
    ids = f"task {first.task_id}" if first.stream_id is None else f"stream {first.stream_id}, task {first.task_id}"
    plural = "s" if len(infos) != 1 else ""
    return f"{len(infos)} exception dump{plural} of an AI Core error (first: {ids})"
