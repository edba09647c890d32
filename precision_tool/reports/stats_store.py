"""``ac -c``'s judgment of a statistics run, stored for ``vcs``, ``ni`` and ``report`` to read the same decision.

``statistics_{timestamp}.json`` in the folder ``ac -c`` writes to (``WORKSPACE/temp/vector_compare/{timestamp}`` or
``-o``): ``{"format": FORMAT, "statistics": StatisticsSection.to_dict(), "verdict": Verdict.to_dict(),
"exit_code": N, "second_run": "..."}``, written atomically, strict JSON (an infinite figure as ``"inf"``, as the
summaries write it). :func:`newest_statistics` finds the newest under the
workspace's result folder; :func:`load_statistics` reads one, a damaged or foreign file being a one-line
:class:`~precision_tool.errors.WorkspaceError` naming it.
"""
from __future__ import annotations

import glob
import json
import os
from dataclasses import dataclass
from typing import Optional, Tuple

from precision_tool.errors import PrecisionToolError, WorkspaceError

FORMAT = "precision_tool statistics judgment 1"
PREFIX = "statistics_"


@dataclass(frozen=True)
class StoredStatistics:
    """A stored judgment: ``section`` (a :class:`~precision_tool.checks.stats_check.StatisticsSection`), the
    verdict's ``headline`` and ``also`` lines, the ``exit_code`` of the ``ac -c`` that wrote it, its ``second_run``
    line, ``path``."""

    section: object
    headline: str
    exit_code: int
    second_run: str
    path: str
    also: Tuple[str, ...] = ()


def write_statistics(folder: str, stamp: str, section, verdict, exit_code: int, second_run: str = "") -> str:
    """Write the judgment into ``folder`` (created) as ``statistics_{stamp}.json``; its path."""
    from precision_tool.fileio import write_text_atomic
    from precision_tool.reports.summary import summary_text

    os.makedirs(folder, exist_ok=True)
    data = {"format": FORMAT, "statistics": section.to_dict(), "verdict": verdict.to_dict(), "exit_code": exit_code,
            "second_run": second_run}
    return write_text_atomic(os.path.join(folder, f"{PREFIX}{stamp}.json"), summary_text(data))  # inf as "inf"


def newest_statistics(result_folder: str) -> Optional[str]:
    """The newest ``statistics_*.json`` under ``result_folder`` (by name: the names carry their timestamp), or
    ``None``."""
    found = glob.glob(os.path.join(glob.escape(result_folder), "*", f"{PREFIX}*.json"))
    found += glob.glob(os.path.join(glob.escape(result_folder), f"{PREFIX}*.json"))
    return max(found, key=os.path.basename) if found else None


def load_statistics(path: str) -> StoredStatistics:
    """Read a stored judgment; :class:`WorkspaceError` (one line, naming ``path``) when it cannot be."""
    from precision_tool.checks.stats_check import StatisticsSection
    from precision_tool.fileio import read_input_text

    try:
        data = json.loads(read_input_text(path))
        if data.get("format") != FORMAT:
            raise ValueError(f"not a statistics judgment of precision_tool (format {data.get('format')!r})")
        section = StatisticsSection.from_dict(data["statistics"])
        return StoredStatistics(section, str(data["verdict"]["headline"]), int(data["exit_code"]),
                                str(data.get("second_run") or ""), os.path.abspath(path),
                                tuple(map(str, data["verdict"].get("also") or ())))
    except PrecisionToolError:  # a file that cannot be read as text: its reader's one line
        raise
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as error:
        raise WorkspaceError(f"{path}: cannot read the statistics judgment ({error})",
                             "run 'ac -c' on the statistics run again") from None


__all__ = ["write_statistics", "newest_statistics", "load_statistics", "StoredStatistics", "FORMAT"]
