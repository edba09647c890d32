"""``ac``'s findings for the page: the verdict, the overflow and fusion sections, and the ops to mark as overflowed.

Two ways in, one record out (:class:`CheckFindings`): :func:`findings_from_autocheck` (``ac -c --html``: the sections
``ac`` just computed) and :func:`findings_from_workspace` (``report``: the overflow and fusion checks run again on the
workspace and the verdict decided with the comparison read back from the CSV, exactly as ``ac -c`` decides it). The
sections are rendered by ``ac``'s own report builders (:mod:`precision_tool.reports.autocheck_report`), so the page
shows what the terminal shows.
"""
from __future__ import annotations

import os
import shlex
from dataclasses import dataclass
from typing import Dict, Optional, Tuple

from precision_tool.formats.dump_tree import DumpSelection

from precision_tool.checks.run_verdict import Verdict
from precision_tool.reports.report import Report


@dataclass(frozen=True)
class OverflowMark:
    """An op the overflow checks name, and one line saying why (for the plot's marker and its hover text)."""

    op_name: str
    label: str


@dataclass(frozen=True)
class CheckFindings:
    """``verdict`` (a :class:`~precision_tool.checks.run_verdict.Verdict`), the overflow and fusion sections as
    ``ac`` prints them (``sections``), the ops to mark, and the shell prefix of the next commands."""

    workspace: str
    verdict: Verdict
    sections: Report
    overflow_marks: Tuple[OverflowMark, ...] = ()
    command_prefix: str = ""


def overflow_marks(overflow) -> Tuple[OverflowMark, ...]:
    """Every op an Opdebug record names (with its status words), then every op whose output holds inf/NaN or
    saturated fp16 values in the normal run; one mark per op, first reason kept."""
    marks: Dict[str, OverflowMark] = {}
    for finding in overflow.records.findings:
        if finding.op_name and finding.status_lines:
            marks.setdefault(finding.op_name, OverflowMark(
                finding.op_name, f"overflow record {finding.position}: {'; '.join(finding.status_lines)}"))
    if overflow.scan is not None:
        for op in overflow.scan.ops:
            marks.setdefault(op.op_name, OverflowMark(op.op_name, f"normal run: {op.origin} inf/NaN/saturation"))
    return tuple(marks.values())


def _sections(overflow, fusion, limit: int) -> Report:
    """The overflow and fusion sections as ``ac`` prints them (the verdict has its own place on the page)."""
    from precision_tool.reports.autocheck_report import add_fusion_section, add_overflow_section

    report = Report()
    add_overflow_section(report, overflow, limit)
    add_fusion_section(report, fusion, limit)
    return report


def command_prefix_for(workspace: str) -> str:
    """``precision_tool -d WORKSPACE``, quoted for a shell."""
    return f"precision_tool -d {shlex.quote(workspace)}"


def findings_from_autocheck(result, limit: int = 5) -> CheckFindings:
    """The findings of an :class:`~precision_tool.checks.autocheck.AutocheckResult` (``ac``'s own run)."""
    prefix = command_prefix_for(result.workspace)
    return CheckFindings(result.workspace, result.verdict,
                         _sections(result.overflow, result.fusion, limit),
                         overflow_marks(result.overflow), prefix)


def is_workspace(root: str) -> bool:
    """True when ``root`` holds an NPU dump run or an overflow run (what ``ac`` needs)."""
    from precision_tool.config import Workspace

    workspace = Workspace(root)
    return os.path.isdir(workspace.npu_dump(0)) or os.path.isdir(workspace.overflow_dump)


def workspace_of_result(data_dir: str, inputs: dict) -> Optional[str]:
    """The workspace to check: ``data_dir`` when it is one, else the one the run's NPU dump lies in
    (``.../WORKSPACE/npu/debug_N/dump``, from ``summary.json``); ``None`` when neither is."""
    if data_dir and is_workspace(data_dir):
        return data_dir
    npu = inputs.get("npu") or ""
    parts = os.path.normpath(npu).split(os.sep)
    if len(parts) >= 4 and parts[-1] == "dump" and parts[-2].startswith("debug_") and parts[-3] == "npu":
        root = os.sep.join(parts[:-3]) or os.sep
        if is_workspace(root):
            return root
    return None


def _stored_npu_run(source) -> str:
    """The NPU run ``ac`` named in its ``bisect`` lines when it wrote the result (its summary's verdict), so the
    page suggests the same command; ``""`` otherwise (a placeholder is shown)."""
    verdict = (source.summary or {}).get("verdict") or {}
    commands = verdict.get("next_commands") if isinstance(verdict, dict) else None
    for line in commands if isinstance(commands, list) else ():
        if isinstance(line, str) and line.startswith("bisect ") and " -- " in line:
            return line.split(" -- ", 1)[1]
    return ""


def findings_from_workspace(workspace: str, source, limit: int = 5,
                            selection: Optional[DumpSelection] = None) -> CheckFindings:
    """Run ``ac``'s overflow and fusion checks on ``workspace`` and decide the verdict with the comparison of
    ``source`` (a :class:`~precision_tool.reports.result_store.StoredResult`)."""
    from precision_tool.checks.autocheck import CompareSection, check_fusion, check_overflow
    from precision_tool.checks.run_verdict import decide_verdict
    from precision_tool.config import Workspace

    folder = Workspace(workspace)
    selection = DumpSelection() if selection is None else selection
    overflow = check_overflow(folder, limit, selection)
    fusion = check_fusion(folder, selection=selection)
    compare = CompareSection(result=source.comparison, inputs=source.inputs, out_folder=source.folder,
                             asked_device=selection.device)
    verdict = decide_verdict(overflow, fusion, compare, npu_run=_stored_npu_run(source))
    prefix = command_prefix_for(workspace)
    return CheckFindings(workspace, verdict, _sections(overflow, fusion, limit),
                         overflow_marks(overflow), prefix)
