"""The line that says which step and device of an NPU dump tree a command read: ``NPU dumps: ...``.

Written once here for every command: ``compare`` and ``ac`` put it among their lines
(:func:`dump_choice_line`), and the registry adds it to any other report whose command scanned a tree that
held several steps or devices, or was asked for one (:func:`add_dump_choices`).
"""
from __future__ import annotations

from typing import List, Sequence, Tuple

from precision_tool.formats.dump_tree import Choice
from precision_tool.reports.report import Report, Text

PREFIX = "NPU dumps"


def dump_choice_line(note: str, root: str = "") -> str:
    """``NPU dumps: NOTE``, or ``NPU dumps of ROOT: NOTE`` when several trees were read.

    >>> dump_choice_line("dumps of step 5 on device 0 (as asked)")
    'NPU dumps: dumps of step 5 on device 0 (as asked)'
    """
    return f"{PREFIX} of {root}: {note}" if root else f"{PREFIX}: {note}"


def _text_lines(report: Report) -> List[str]:
    return [line for block in report.blocks if isinstance(block, Text) for line in block.lines]


def add_dump_choices(report: Report, choices: Sequence[Tuple[str, Choice]]) -> Report:
    """Add one line per ``(root, choice)`` a command's scans recorded
    (:class:`~precision_tool.formats.dump_tree.ChoiceLog`) that the report does not say already, naming the
    folder when several were read or the report has such a line already; the lines also go to
    ``report.data["dump_choice"]`` (a list). Returns ``report``."""
    said = _text_lines(report)
    roots = {root for root, _ in choices}
    # a folder is named when several were read -- also when the report says one already (ac's compare line), so
    # that a second, unnamed line does not read as contradicting it (a user walk found two)
    named = len(roots) > 1 or any(line.startswith(PREFIX) for line in said)
    lines = [dump_choice_line(choice.note, root if named else "") for root, choice in choices
             if not any(choice.note in line for line in said)]
    lines = list(dict.fromkeys(lines))
    if lines:
        report.add_text(*lines)
        if isinstance(report.data, dict):
            report.data.setdefault("dump_choice", []).extend(lines)
    return report

