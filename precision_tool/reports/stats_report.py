"""The statistics part of the ``ac -c`` report on a ``dump_data="stats"`` run: what was compared, the suspects
with their figures, what statistics cannot show, and the ``dump_layer`` of the full dump to take next."""
from __future__ import annotations

from typing import List

from precision_tool.comparison.attribution import JUMP_FACTOR
from precision_tool.reports.format import counted
from precision_tool.reports.report import Report

#: One line on what a statistics comparison cannot show (docs/statistics.md#what-statistics-cannot-show).
CANNOT_SHOW = ("Statistics prove a tensor wrong, never right: errors that cancel in the mean or stay inside the "
               "range move no statistic, and zero-mean noise moves the mean and the L2 norm by far less than its "
               "size (measured: 2% noise on a mid-network ResNet50 conv names no suspect). No suspect is no clean "
               "bill; a full dump (action='dump') compared with 'ac -c' is.")
#: What exit 0 means after a statistics run, where "all checks passed" would mislead.
NO_SUSPECT_MEANING = "no suspect by statistics, which clears no op (see above)"


def add_statistics_section(report: Report, section, limit: int, second_run: str = "", stored: str = "") -> None:
    """The section (``section``: a :class:`~precision_tool.checks.stats_check.StatisticsSection`); ``second_run``:
    the command line that captures the full dump of the plan (an emulated workspace's), or ``""``; ``stored``: the
    file the judgment was written to (``vcs``, ``ni`` and ``report`` read it), or ``""``."""
    if section is None:
        return
    if section.error:
        report.add_text(f"Statistics comparison not run: {section.error}")
        return
    judgment = section.judgment
    title = (f"Statistics compared (dump_data=\"stats\"): {counted(judgment.tensors, 'tensor')} of "
             f"{counted(len(judgment.ops), 'op')} with {section.inputs.get('reference')}; "
             f"{judgment.measured:,} ops measured")
    suspects = judgment.suspects
    if suspects:
        shown = suspects if not limit else suspects[:limit]
        counts = any(op.mismatch for op in shown)  # the column only when a count tells an op apart
        rows = [[op.op_name, op.op_type, _figure(op.output), _figure(op.input), _figure(op.jump)]
                + ([op.mismatch] if counts else []) for op in shown]
        more = f" (first {len(shown)} of {len(suspects)})" if len(shown) < len(suspects) else ""
        headers = ["suspect", "op type", "output RED >=", "inputs RED >=", "jump"]
        headers += ["counts differ"] if counts else []
        report.add_table(headers, rows,
                         title=f"{title}; suspects, earliest first{more} (an op whose outputs' statistics prove "
                               f"at least {JUMP_FACTOR:g} times the error its inputs' do):")
    else:
        largest = next((op for op in judgment.ops if op.jump is not None), None)
        tail = f" (largest jump {largest.jump:.3g}, {largest.op_name})" if largest is not None else ""
        report.add_text(f"{title}; no suspect{tail}.")
    lines: List[str] = list(section.notes)
    shown = judgment.unread[:limit or None]
    lines += [f"Statistics not used: {line}" for line in shown]
    if len(shown) < len(judgment.unread):
        lines.append(f"... and {len(judgment.unread) - len(shown)} more not used (-l 0 lists them)")
    unmeasured = [op.op_name for op in judgment.ops if op.jump is None and not op.mismatch]
    if unmeasured:
        named = ", ".join(unmeasured[:limit or None]) + (" ..." if limit and len(unmeasured) > limit else "")
        lines.append(f"{counted(len(unmeasured), 'op')} not measured (an input or output without statistics on both "
                     f"sides: no reference counterpart, an NA statistic, a zero reference proved wrong): {named}")
    if section.unaligned:
        lines.append(f"{counted(section.unaligned, 'NPU tensor')} with no reference counterpart, not judged")
    lines.append(CANNOT_SHOW)
    lines.extend(_plan_lines(section.plan, second_run))
    if stored:
        lines.append(f"Judgment: {stored}")
    report.add_text(*lines)


def _plan_lines(plan, second_run: str) -> List[str]:
    from precision_tool.checks.stats_check import size_text

    if plan is None or not plan.ops:
        return []
    within = (f"{size_text(plan.size)} of the {size_text(plan.budget)} budget" if plan.size <= plan.budget else
              f"{size_text(plan.size)}, over the {size_text(plan.budget)} budget: the first suspect is always named")
    what = "the suspects" if plan.suspects == len(plan.ops) else "the suspects, then the ops feeding them"
    lines = [f"Dump {counted(len(plan.ops), 'op')} in full next ({within}, --dump-budget): {what}:",
             f"  config = npu_tf_config.session_dump_config(config, action='dump', dump_layer={plan.value!r})"]
    if plan.left_out:
        lines.append(f"  left out by the budget: {' '.join(plan.left_out)}")
    if second_run:
        lines.append(f"  emulated here: {second_run}")
    lines.append("then run 'ac -c' on that run's workspace: the suspects' tensors, replayed, decide.")
    return lines


def _figure(value) -> str:
    return "" if value is None else f"{value:.3g}"


__all__ = ["add_statistics_section", "CANNOT_SHOW", "NO_SUSPECT_MEANING"]
