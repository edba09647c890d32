"""The ``ac`` report: overflow, fusion, comparison, then the verdict -- one screen, plus ``data`` for ``--json``."""
from __future__ import annotations

from typing import List, Optional

from precision_tool.reports.dump_choice import dump_choice_line
from precision_tool.reports.exception_report import add_exception_dumps
from precision_tool.reports.fusion_report import add_fusion_comparison, add_passes
from precision_tool.reports.overflow_report import add_casts, add_dump_scan, add_overflow_records
from precision_tool.reports.report import Report
from precision_tool.reports.stats_report import add_statistics_section
from precision_tool.reports.format import counted, exit_line
from precision_tool.metrics.tensor_verdict import gate_text


def add_overflow_section(report: Report, section, limit: int) -> None:
    add_overflow_records(report, section.records)
    if section.notes:
        report.add_text(*section.notes)
    add_dump_scan(report, section.scan, limit)
    add_casts(report, section.casts, limit)
    add_exception_dumps(report, section.exception_dumps, limit)


def add_fusion_section(report: Report, section, limit: int) -> None:
    add_passes(report, section.overview)
    add_fusion_comparison(report, section.comparison, limit)
    if section.notes:
        report.add_text(*section.notes)


def add_compare_section(report: Report, section, paths, limit: int) -> None:
    """Counts, the failing tensors (first divergence first) and where the result files are."""
    if section is None:
        return
    if section.error:
        report.add_text(f"Comparison with the reference not run: {section.error}")
        return
    from precision_tool.reports.result_csv import number_text

    result = section.result
    counts = result.counts()
    title = (f"Compared {counted(counts['compared'], 'tensor')} with {section.inputs.get('reference')} "
             f"({gate_text(result.cosine_threshold)}): {counts['passed']:,} passed, {counts['failed']:,} failed")
    failing = result.failing_in_order()
    if failing:
        shown = failing if not limit else failing[:limit]
        rows = [[r.tensor_id or r.op_name, r.op_type, r.status.value,
                 number_text(r.cosine), r.reason] for r in shown]
        more = f" (first {len(shown)} of {len(failing)})" if len(shown) < len(failing) else ""
        report.add_table(["tensor", "op type", "status", "cosine", "reason"], rows,
                         title=f"{title}; failing tensors, first divergence first{more}:")
    else:
        report.add_text(title + ".")
    coverage = result.facts.coverage
    if coverage is not None and coverage.dump_choice:
        report.add_text(dump_choice_line(coverage.dump_choice))
    if section.steps:
        report.add_text(*steps_lines(section.steps))
    if paths is not None:
        report.add_text(f"Result: {paths.csv}", f"Summary: {paths.summary}",
                        *([paths.cleaned_line()] if paths.cleaned else []))


def steps_lines(steps) -> List[str]:
    """``First diverging step: S (OP; F of N tensors fail)`` -- or that no step diverges -- over the steps of
    the device compared one by one (:attr:`~precision_tool.checks.autocheck.CompareSection.steps`), and one line
    per step that could not be compared."""
    from precision_tool.comparison.tree_runs import first_diverging
    from precision_tool.formats.dump_tree import numbers_text

    first = first_diverging(steps)
    compared = numbers_text(run.step for run in steps if not run.error)
    device = steps[0].device
    if first is None:
        lines = [f"No step diverges: steps {compared} of device {device} compared."]
    else:
        lines = [f"First diverging step: {first.step} ({first.first_divergence}; {len(first.failing)} of "
                 f"{first.compared} tensors fail); steps {compared} of device {device} compared."]
    return lines + [f"Step {run.step} not compared: {run.error}" for run in steps if run.error]


def add_verdict(report: Report, verdict, command_prefix: str = "") -> None:
    """The headline, the culprit's reasons, what else was found, and the next commands: on one line as typed in
    the shell, or one per line behind ``command_prefix`` (``precision_tool -d WORKSPACE``) for a terminal."""
    lines = [f"Verdict: {verdict.headline}"]
    if verdict.culprit is not None:
        lines += [f"  - {reason}" for reason in verdict.culprit.reasons]
    if verdict.also:
        lines.append("Also:")
        lines += [f"  - {line}" for line in verdict.also]
    if verdict.next_commands and command_prefix:
        lines.append("Next:")
        lines += [f"  {command_prefix} {command}" for command in verdict.next_commands]
    elif verdict.next_commands:
        lines.append("Next: " + "   ".join(verdict.next_commands))
    report.add_text(*lines)


def autocheck_report(result, *, limit: int, paths=None, exit_code: int = 0, elapsed_s: Optional[float] = None,
                     command_prefix: str = "", second_run: str = "", stored_statistics: str = "") -> Report:
    """The whole ``ac`` report from an :class:`~precision_tool.checks.autocheck.AutocheckResult`;
    ``command_prefix`` as in :func:`add_verdict`; ``second_run``: on a statistics run, the command that captures
    the full dump of its suspects, and ``stored_statistics`` where its judgment was written
    (:func:`~precision_tool.reports.stats_report.add_statistics_section`)."""
    report = Report(title=f"Auto-check of {result.workspace}")
    add_overflow_section(report, result.overflow, limit)
    add_fusion_section(report, result.fusion, limit)
    add_compare_section(report, result.compare, paths, limit)
    add_statistics_section(report, result.statistics, limit, second_run, stored_statistics)
    add_verdict(report, result.verdict, command_prefix)
    timing = ", ".join(f"{name[:-2]} {seconds:.2f} s" for name, seconds in result.timing.items())
    report.status = exit_line(exit_code, elapsed_s, timing, _exit_meaning(result, exit_code))
    report.exit_code = exit_code
    report.data = autocheck_data(result, paths)
    return report


def _exit_meaning(result, exit_code: int) -> str:
    """What the exit code means where the usual words would mislead: at exit 0, "all checks passed" only when no op
    adds error beyond its floor either; at exit 2, runs that do not compute the same model; else ``""``."""
    if result.statistics is not None and exit_code == 0:
        from precision_tool.reports.stats_report import NO_SUSPECT_MEANING

        return NO_SUSPECT_MEANING
    outcome = result.compare.result if result.compare is not None else None
    if exit_code == 2 and outcome is not None and not outcome.verdict.same_model:
        from precision_tool.reports.summary import SAME_MODEL_MEANING

        return f"{SAME_MODEL_MEANING} (see above)"
    attribution = outcome.attribution if outcome is not None else None
    above = attribution.above_floor if attribution is not None and exit_code == 0 else ()
    if not above:
        return ""
    largest = max(above, key=lambda op: op.score or 0.0)
    verb = "exceeds its" if len(above) == 1 else "exceed their"
    return (f"no tensor fails and no op stands out, but {counted(len(above), 'op')} {verb} floor (largest: "
            f"{largest.op_name}, {largest.ratio_text})")


def autocheck_data(result, paths=None) -> dict:
    compare = None
    if result.compare is not None:
        compare = {"error": result.compare.error or None, "inputs": result.compare.inputs}
        if result.compare.result is not None:
            outcome = result.compare.result
            coverage = outcome.facts.coverage
            compare.update(counts=outcome.counts(), divergence=outcome.divergence.to_dict(),
                           failing=[r.tensor_id or r.op_name for r in outcome.failing],
                           result_csv=paths.csv if paths is not None else None,
                           summary=paths.summary if paths is not None else None,
                           dump_step=coverage.dump_step if coverage is not None else None,
                           dump_device=coverage.dump_device if coverage is not None else None,
                           dump_choice=coverage.dump_choice or None if coverage is not None else None,
                           judgment=outcome.verdict.to_dict())
        if result.compare.attribution is not None:
            compare["local_error"] = result.compare.attribution.to_dict()
        if result.compare.steps:
            compare["steps"] = [run.to_dict() for run in result.compare.steps]
        if result.compare.replay is not None:
            compare["replay"] = {key: value for key, value in result.compare.replay.to_dict().items() if key != "ops"}
    return {"workspace": result.workspace, "overflow": result.overflow.to_dict(),
            "fusion": result.fusion.to_dict(), "compare": compare, "verdict": result.verdict.to_dict(),
            "statistics": None if result.statistics is None else result.statistics.to_dict(),
            "timing": {name: round(seconds, 4) for name, seconds in result.timing.items()}}
