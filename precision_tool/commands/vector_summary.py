"""``vcs [-f RESULT] [-c 0.99] [-l 10]``: the culprit and the failing tensors of a result, first divergence first.

Reads our results and msaccucmp's CSVs: ``-f`` a result or a folder to search, else the latest result under
``WORKSPACE/temp/vector_compare`` (the latest timestamp in its name; file time breaks ties), read and judged by
:func:`precision_tool.reports.result_store.load_result`. The run's culprit -- ``ac``'s when ``ac -c`` wrote the
result, else the comparison's own judgment (:mod:`precision_tool.comparison.judgment`) -- is listed first with its
local error, even when its output still passes the cosine gate; then the failing tensors. Exit code:
:func:`~precision_tool.comparison.judgment.exit_code` of the result read back, and 2 when the result itself cannot
be read. See docs/commands.md#vcs and docs/internals/commands.md#vcs.
"""
from __future__ import annotations

import os
from typing import Optional

from precision_tool.commands.command_registry import Command, Context
from precision_tool.errors import WorkspaceError
from precision_tool.status import Status
from precision_tool.metrics.tensor_verdict import threshold_text

DEFAULT_LIMIT = 10


def add_arguments(parser):
    from precision_tool.commands.options import add_cosine_option, add_limit_option, add_result_file_option

    add_result_file_option(parser)
    add_cosine_option(parser, None, default_text="the run's threshold, else 0.99")
    add_limit_option(parser, DEFAULT_LIMIT, "show at most N tensors")


def handle(args, ctx: Context):
    from precision_tool.comparison.attribution import exceeds_floor
    from precision_tool.comparison.judgment import exit_code
    from precision_tool.comparison.same_model import drift_lines, mismatch_lines
    from precision_tool.comparison.noise import noise_line
    from precision_tool.comparison.systemic import systemic_line
    from precision_tool.comparison.underflow import underflow_line, underflow_text
    from precision_tool.reports.format import counted, inheriting_clause
    from precision_tool.reports.report import Report
    from precision_tool.reports.result_csv import number_text
    from precision_tool.reports.result_outputs import require_result_folder
    from precision_tool.reports.result_store import FROM_CSV, RUN_FIRST, load_result, position_text
    from precision_tool.reports.summary import exit_status, unusable_inputs, unusable_note

    if args.file and not os.path.lexists(args.file):  # a dangling symlink is named as one by its reader
        raise WorkspaceError(f"{args.file}: no such file or folder")
    from precision_tool.commands.stats_views import statistics_report, stored_statistics_for

    statistics = stored_statistics_for(args.file, ctx.data_dir, ctx.selection)
    if statistics is not None:
        return statistics_report(statistics, args.limit, "vcs")
    target = args.file or require_result_folder(ctx.data_dir)
    stored = load_result(target, args.cosine, hint=RUN_FIRST, selection=ctx.selection)
    comparison, threshold = stored.comparison, stored.threshold
    judgment = comparison.verdict
    errors = [r for r in comparison.results if r.status is Status.ERROR]
    counts = comparison.counts()
    compared = counts["compared"]
    not_compared = counts["not_compared"] + counts["ops_without_dump"]  # (unreadable files: among the unusable)
    unusable = unusable_inputs(comparison.facts.coverage)
    divergence = comparison.divergence
    first = divergence.first.op_name if divergence.first is not None else None
    culprit = stored.culprit_name
    failing_at = [(k, r) for k, r in enumerate(comparison.results) if r.compared and not r.passed]
    lead = _culprit_rows(comparison, culprit, failing_at)
    failing_at.sort(key=lambda item: (item[1].op_name != first, item[1].index if item[1].index >= 0 else 1 << 62))
    failing = [r for _k, r in failing_at]
    listed = lead + [item for item in failing_at if item not in lead]
    shown = listed if args.limit <= 0 else listed[:max(args.limit, len(lead))]

    coverage = comparison.facts.coverage
    position = "" if coverage is None else position_text(coverage.dump_step, coverage.dump_device)
    report = Report(title=f"{stored.csv_path}{f' ({position})' if position else ''}: {compared} tensors compared, "
                          f"{len(failing)} below cosine {threshold_text(threshold)} or failing"
                          + (f"; culprit {culprit}" if culprit else ""))
    replayed = any(r.local_error is not None for _k, r in listed)

    def reason(k: int, row) -> str:
        text = stored.shown_reason(k)
        return f"float16 underflow ({underflow_text(row)}); {text}" if judgment.underflows(row) else text

    if shown:
        rows = [[_index_value(r.index), r.tensor_id + (" (culprit)" if (k, r) in lead else ""), r.op_type,
                 number_text(r.cosine), number_text(r.metric("MaxAbsoluteError")),
                 number_text(r.metric("MeanRelativeError"))]
                + ([_ratio_text(r)] if replayed else []) + [reason(k, r)] for k, r in shown]
        report.add_table(["index", "tensor", "op type", "cosine", "max abs err", "mean rel err"]
                         + (["local/floor"] if replayed else []) + ["reason"], rows)
        if len(shown) < len(listed):
            report.add_text(f"... {len(listed) - len(shown)} more (-l 0 shows all)")
    lines = mismatch_lines(judgment.mismatches) + drift_lines(judgment.mismatches)
    if culprit:
        lines.append(_culprit_line(stored, comparison, culprit, lead))
    if judgment.systemic:
        lines.append(systemic_line(judgment.systemic))
    if first is not None:
        inherited = len(divergence.inherited)
        standouts = {op.op_name for op in comparison.attribution.standouts}
        adding = sum(op.op_name in standouts for op in divergence.inherited)
        where = "the culprit" if first == culprit else "listed after the culprit" if culprit else "listed first"
        lines.append(f"First divergence: {first} ({where}); {inheriting_clause(inherited, adding)}")
    if replayed and failing:
        adding = len([r for r in failing if r.local_error is not None and exceeds_floor(_ratio(r))])
        rest = len(failing) - adding
        who = "is an output whose op adds" if adding == 1 else "are outputs whose ops add"
        others = "; the other inherits it" if rest == 1 else (f"; the other {rest} inherit it" if rest else "")
        lines.append(f"local/floor (ac -c's replay of each op on its own inputs; the floor is the error the dtype's "
                     f"rounding alone makes, docs/local-error.md): {adding} of the "
                     f"{counted(len(failing), 'failing tensor')} {who} more error than its dtype explains{others}")
    if judgment.underflow:
        lines.append(underflow_line(judgment.underflow))
    if judgment.noise:
        lines.append(noise_line(judgment) + "; not listed")
    if errors:
        lines.append(f"{len(errors)} aligned tensors could not be read: " + ", ".join(r.tensor_id for r in errors[:5]))
    if not_compared:
        lines.append(f"{not_compared} rows were not compared (no reference or no dump)")
    if unusable:
        lines.append(unusable_note(unusable))
    if stored.origin == FROM_CSV:
        lines.append("No summary.json for this CSV: order from the Index column, no graph edges")
    if lines:
        report.add_text(*lines)
    report.exit_code = exit_code(bool(failing or errors), bool(culprit), compared, len(unusable),
                                 judgment.same_model)
    report.status = exit_status(report.exit_code, len(failing) + len(errors), compared, len(unusable), culprit,
                                judgment.same_model)
    report.data = {"csv": stored.csv_path, "cosine_threshold": threshold, "compared": compared,
                   "dump_step": None if coverage is None else coverage.dump_step,
                   "dump_device": None if coverage is None else coverage.dump_device,
                   "culprit": _culprit_data(stored, comparison, culprit),
                   "first_divergence": None if divergence.first is None else divergence.first.to_dict(),
                   "failing": [{"index": _index_value(r.index), "tensor_id": r.tensor_id, "op_type": r.op_type,
                                "cosine": r.cosine, "reason": reason(k, r), "local_error": r.local_error,
                                "local_floor": r.local_floor, "underflow": judgment.underflows(r)}
                               for k, r in failing_at],
                   "below_noise": [r.tensor_id for r in judgment.noise],
                   "model_mismatch": [m.to_dict() for m in judgment.mismatches],
                   "errors": [r.tensor_id for r in errors], "not_compared": not_compared,
                   "unusable_inputs": [list(item) for item in unusable],
                   "summary": stored.summary is not None, "source": stored.origin}
    return report


def _culprit_rows(comparison, culprit: str, failing_at):
    """``[(position, row)]`` of the culprit's output to list first: the output its local error was measured on,
    else its failing outputs, else its first compared output."""
    if not culprit:
        return []
    outputs = [(k, r) for k, r in enumerate(comparison.results)
               if r.op_name == culprit and r.kind == "output" and r.compared]
    measured = comparison.attribution.op(culprit)
    chosen = [item for item in outputs if measured is not None and item[1].tensor_id == measured.tensor_id]
    failing = [item for item in failing_at if item[1].op_name == culprit and item[1].kind == "output"]
    return chosen or failing or outputs[:1]


def _culprit_line(stored, comparison, culprit: str, lead) -> str:
    """``Culprit (WHOSE): OP, by METHOD: figures (listed first ...)`` -- said even when its output passes the cosine
    gate, in words that fit how it was found."""
    ac = stored.ac_culprit
    measured = comparison.attribution.op(culprit)
    how = str(ac.get("evidence") or "") if ac is not None else comparison.culprit.how if comparison.culprit else ""
    figures = f": {measured.summary}" if measured is not None and measured.measured else ""
    passes = bool(lead) and all(row.passed for _k, row in lead)
    if not lead:
        tail = " (no compared output of it to list)"
    elif passes and how.startswith("local error"):
        tail = " (listed first although its output passes the cosine gate: the error is its own, not yet large)"
    elif passes:
        tail = " (listed first although its output passes the cosine gate)"
    else:
        tail = " (listed first)"
    source = "ac's verdict" if ac is not None else "the comparison's judgment"
    return f"Culprit ({source}): {culprit}, by {how}{figures}{tail}"


def _culprit_data(stored, comparison, culprit: str):
    if not culprit:
        return None
    measured = comparison.attribution.op(culprit)
    ac = stored.ac_culprit
    method = ac.get("evidence") if ac is not None else (comparison.culprit.how if comparison.culprit else "")
    return {"op_name": culprit, "method": method, "from": "ac" if ac is not None else "comparison",
            "measured": None if measured is None else measured.to_dict()}


def _ratio(row) -> float:
    from precision_tool.comparison.attribution import ratio_of

    return ratio_of(row) or 0.0


def _ratio_text(row) -> str:
    """``local / floor`` of a replayed output (``ac -c``), ``""`` for a row replay did not measure."""
    return "" if row.local_error is None or row.local_floor is None else f"{_ratio(row):.3g}"


def _index_value(index: int) -> Optional[int]:
    return index if index >= 0 else None


COMMAND = Command(
    name="vcs",
    summary="List the culprit and the failing tensors of a compare result, first divergence first.",
    add_arguments=add_arguments,
    handler=handle,
    aliases=("vector_summary",),
    epilog=("Reads precision_tool's and msaccucmp's result CSVs. Exit code 1 when a tensor fails or a culprit is "
            "named; 2 when the runs do not compute the same model, nothing was compared or the run could not read "
            "some input files (and nothing fails), or the result cannot be read."),
)
