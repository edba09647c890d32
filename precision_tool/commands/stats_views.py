"""``vcs``, ``report`` and ``ni`` on a statistics run (``dump_data="stats"``): they show ``ac -c``'s stored judgment
(:mod:`precision_tool.reports.stats_store`), the one decision, instead of looking for a tensor comparison that a
statistics run cannot have."""
from __future__ import annotations

import os
from typing import Optional

from precision_tool.errors import PrecisionToolError, WorkspaceError


def stored_statistics_for(file: Optional[str], data_dir: str, selection):
    """The stored judgment to show, or ``None`` (a tensor comparison: the command goes on as usual).

    ``file`` when it is one (``statistics_*.json``). Else the workspace's newest, when it is newer than its newest
    tensor result (both are named by the time they were written). With neither, a workspace whose NPU dump holds
    statistics and no tensor dump is a :class:`WorkspaceError` saying to run ``ac -c``: only then is the dump
    folder scanned, never on the way to a result that is there."""
    import glob

    from precision_tool.checks.stats_check import holds_statistics_only
    from precision_tool.config import Workspace
    from precision_tool.reports.result_outputs import workspace_result_folder
    from precision_tool.reports.stats_store import PREFIX, load_statistics, newest_statistics

    if file:
        return load_statistics(file) if os.path.basename(file).startswith(PREFIX) else None
    folder = workspace_result_folder(data_dir)
    judged = newest_statistics(folder)
    compared = max(glob.glob(os.path.join(glob.escape(folder), "*", "result_*.csv")), key=os.path.basename,
                   default=None)
    if judged is not None:
        stamp = os.path.basename(judged)[len(PREFIX):]
        if compared is None or stamp >= os.path.basename(compared)[len("result_"):]:
            return load_statistics(judged)
        return None
    workspace = Workspace(data_dir)
    if compared is not None or not holds_statistics_only(workspace.npu_dump(0), selection):
        return None
    raise WorkspaceError(f"{workspace.npu_dump(0)} holds statistics (dump_data=\"stats\") and no judgment of them "
                         f"is under {folder}", f"run 'precision_tool -d {data_dir} ac -c' first; a judgment that "
                         "'ac -c -o DIR' wrote elsewhere is read with -f DIR/statistics_....json")


def statistics_report(stored, limit: int, command: str, tail: str = ""):
    """The stored judgment as ``command`` shows it: the statistics section, the verdict, ``tail`` (one line), and
    the exit code ``ac -c`` gave."""
    from precision_tool.reports.format import exit_line
    from precision_tool.reports.report import Report
    from precision_tool.reports.stats_report import add_statistics_section

    report = Report(title=f"{command}: the statistics judgment of 'ac -c' ({stored.path})")
    add_statistics_section(report, stored.section, limit, stored.second_run)
    also = ["Also:", *(f"  - {line}" for line in stored.also)] if stored.also else []
    report.add_text(f"Verdict: {stored.headline}", *also, *([tail] if tail else []))
    from precision_tool.reports.stats_report import NO_SUSPECT_MEANING

    meaning = NO_SUSPECT_MEANING if stored.exit_code == 0 else ""
    report.status = exit_line(stored.exit_code, None, "", meaning)
    report.exit_code = stored.exit_code
    report.data = {"statistics": stored.section.to_dict(), "verdict": stored.headline, "judgment": stored.path}
    return report


def add_op_statistics(report, data: dict, op_name: str, file: Optional[str], data_dir: str, selection) -> bool:
    """``ni``'s section for one op of a statistics run: whether ``ac -c`` named it a suspect, with its figures, or
    that ``ac -c`` has not judged the run yet. False (nothing added) for a tensor workspace."""
    try:
        stored = stored_statistics_for(file, data_dir, selection)
    except PrecisionToolError as error:  # a statistics run not judged yet, or a judgment that cannot be read
        report.add_text(f"Statistics: {error}")
        data["statistics"] = None
        return True
    if stored is None:
        return False
    judgment = stored.section.judgment
    found = next((op for op in judgment.ops if op.op_name == op_name), None) if judgment is not None else None
    if found is None:
        report.add_text(f"Statistics: not judged ({stored.path} has no op of this name: no statistics of it were "
                        "dumped, or none has a reference counterpart)")
        data["statistics"] = None
        return True
    from precision_tool.checks.stats_check import suspect_reason
    from precision_tool.comparison.attribution import JUMP_FACTOR

    if found.suspect:
        what = f"a suspect: {suspect_reason(found)}"
    elif found.jump is None or found.output is None:
        what = "not measured (an input or output has no statistics to compare)"
    else:
        what = (f"not a suspect: its outputs prove RED >= {found.output:.3g}, jump {found.jump:.3g} (a suspect from "
                f"{JUMP_FACTOR:g}); statistics clear no op")
    report.add_text(f"Statistics ('ac -c', {stored.path}): {what}")
    data["statistics"] = found.to_dict()
    return True


__all__ = ["stored_statistics_for", "statistics_report", "add_op_statistics"]
