"""``vcs [-f RESULT] [-c 0.99] [-l 10]``: the tensors of a result below a cosine threshold, first divergence first.

Reads our results and msaccucmp's CSVs. Without ``-f`` it reads the latest result under
``WORKSPACE/temp/vector_compare`` (``-f`` may also name a folder to search). Results are written atomically,
so every ``result_*.csv`` found is complete; the latest is the one with the latest timestamp in its name
(file time breaks ties).

Reading and judging is :func:`precision_tool.reports.result_store.load_result`: our lossless result file
when it is there (exact at any threshold; the run's order and graph edges), else the CSV -- explicit
statuses in CompareFailReason (``NAN_INF: ...``) fail whatever the cosine, other rows with metrics fail below
the threshold or with a ``NaN`` cosine, and without the run's facts (msaccucmp's CSV) the order is the
``Index`` column and only compared inputs are known. The reason column shows CompareFailReason as the CSV has
it (msaccucmp's remarks included).

Exit code: :func:`~precision_tool.comparison.result.exit_code_for` of the result read back, as ``compare`` decided
it -- 1 a tensor is listed; 2 nothing was compared, or the run could not read some input files (its coverage
says so) and nothing fails, or the result itself cannot be read; else 0.
"""
from __future__ import annotations

import os
from typing import Optional

from precision_tool.commands.registry import Command, Context
from precision_tool.errors import WorkspaceError
from precision_tool.status import Status
from precision_tool.metrics.verdict import threshold_text

DEFAULT_LIMIT = 10


def add_arguments(parser):
    from precision_tool.commands.options import add_cosine_option, add_limit_option, add_result_file_option

    add_result_file_option(parser)
    add_cosine_option(parser, None, default_text="the run's threshold, else 0.99")
    add_limit_option(parser, DEFAULT_LIMIT, "show at most N tensors")


def handle(args, ctx: Context):
    from precision_tool.reports.format import counted, inheriting_clause
    from precision_tool.reports.report import Report
    from precision_tool.reports.result_csv import number_text
    from precision_tool.reports.result_outputs import workspace_result_folder
    from precision_tool.formats.dump_tree import requested
    from precision_tool.reports.result_store import FROM_CSV, RUN_FIRST, load_result, position_text
    from precision_tool.reports.summary import exit_status, run_exit_code, unusable_inputs, unusable_note

    target = args.file or workspace_result_folder(ctx.data_dir)
    if args.file and not os.path.lexists(args.file):  # a dangling symlink is named as one by its reader
        raise WorkspaceError(f"{args.file}: no such file or folder")
    if not args.file and not os.path.isdir(target):
        raise WorkspaceError(f"{target}: no such folder", RUN_FIRST)
    stored = load_result(target, args.cosine, hint=RUN_FIRST, selection=requested())
    comparison, threshold = stored.comparison, stored.threshold
    errors = [r for r in comparison.results if r.status is Status.ERROR]
    counts = comparison.counts()
    compared = counts["compared"]
    not_compared = counts["not_compared"] + counts["ops_without_dump"]  # (unreadable files: among the unusable)
    unusable = unusable_inputs(comparison.facts.coverage)
    divergence = comparison.divergence
    first = divergence.first.op_name if divergence.first is not None else None
    failing_at = [(k, r) for k, r in enumerate(comparison.results) if r.compared and not r.passed]
    failing_at.sort(key=lambda item: (item[1].op_name != first, item[1].index if item[1].index >= 0 else 1 << 62))
    failing = [r for _k, r in failing_at]
    shown = failing_at if args.limit <= 0 else failing_at[:args.limit]

    coverage = comparison.facts.coverage
    position = "" if coverage is None else position_text(coverage.dump_step, coverage.dump_device)
    report = Report(title=f"{stored.csv_path}{f' ({position})' if position else ''}: {compared} tensors compared, "
                          f"{len(failing)} below cosine {threshold_text(threshold)} or failing")
    replayed = any(r.local_error is not None for r in failing)
    if shown:
        rows = [[_index_value(r.index), r.tensor_id, r.op_type, number_text(r.cosine),
                 number_text(r.metric("MaxAbsoluteError")), number_text(r.metric("MeanRelativeError"))]
                + ([_ratio_text(r)] if replayed else []) + [stored.shown_reason(k)] for k, r in shown]
        report.add_table(["index", "tensor", "op type", "cosine", "max abs err", "mean rel err"]
                         + (["local/floor"] if replayed else []) + ["reason"], rows)
        if len(shown) < len(failing):
            report.add_text(f"... {len(failing) - len(shown)} more (-l 0 shows all)")
    lines = []
    if first is not None:
        inherited = len(divergence.inherited)
        lines.append(f"First divergence: {first} (listed first); {inheriting_clause(inherited)}")
    if replayed:
        adding = len([r for r in failing if r.local_error is not None and _ratio(r) > 1])
        rest = len(failing) - adding
        who = "is an output whose op adds" if adding == 1 else "are outputs whose ops add"
        others = "; the other inherits it" if rest == 1 else (f"; the other {rest} inherit it" if rest else "")
        lines.append(f"local/floor (ac -c's replay of each op on its own inputs; the floor is the error the dtype's "
                     f"rounding alone makes, docs/local-error.md): {adding} of the "
                     f"{counted(len(failing), 'failing tensor')} {who} more error than its dtype explains{others}")
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
    report.exit_code = run_exit_code(comparison)
    report.status = exit_status(report.exit_code, len(failing) + len(errors), compared, len(unusable))
    report.data = {"csv": stored.csv_path, "cosine_threshold": threshold, "compared": compared,
                   "dump_step": None if coverage is None else coverage.dump_step,
                   "dump_device": None if coverage is None else coverage.dump_device,
                   "first_divergence": None if divergence.first is None else divergence.first.to_dict(),
                   "failing": [{"index": _index_value(r.index), "tensor_id": r.tensor_id, "op_type": r.op_type,
                                "cosine": r.cosine, "reason": stored.shown_reason(k), "local_error": r.local_error,
                                "local_floor": r.local_floor} for k, r in failing_at],
                   "errors": [r.tensor_id for r in errors], "not_compared": not_compared,
                   "unusable_inputs": [list(item) for item in unusable],
                   "summary": stored.summary is not None, "source": stored.origin}
    return report


def _ratio(row) -> float:
    from precision_tool.replay.local_error import local_ratio

    return local_ratio(row.local_error or 0.0, row.local_floor or 0.0)


def _ratio_text(row) -> str:
    """``local / floor`` of a replayed output (``ac -c``), ``""`` for a row replay did not measure."""
    return "" if row.local_error is None or row.local_floor is None else f"{_ratio(row):.3g}"


def _index_value(index: int) -> Optional[int]:
    return index if index >= 0 else None


COMMAND = Command(
    name="vcs",
    summary="List the tensors of a compare result below a cosine threshold, first divergence first.",
    add_arguments=add_arguments,
    handler=handle,
    aliases=("vector_summary",),
    epilog=("Reads precision_tool's and msaccucmp's result CSVs. Exit code 1 when any tensor is listed; 2 when "
            "nothing was compared or the run could not read some input files (and nothing fails), or the result "
            "cannot be read."),
)
