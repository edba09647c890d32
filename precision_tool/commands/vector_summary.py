"""``vcs [-f CSV] [-c 0.99] [-l 10]``: the tensors of a result CSV below a cosine threshold, first divergence first.

Reads our CSVs and msaccucmp's. Without ``-f`` it reads the latest result under
``WORKSPACE/temp/vector_compare`` (``-f`` may also name a folder to search). Results are written atomically,
so every ``result_*.csv`` found is complete; the latest is the one with the latest timestamp in its name
(file time breaks ties).

Verdicts: a row with metrics fails below the threshold or with a ``NaN`` cosine; our explicit statuses in
CompareFailReason (``NAN_INF: ...``, ``SHAPE_MISMATCH: ...``) fail whatever the cosine. With ``summary.json``
beside the CSV (ours), the threshold defaults to the run's and the first divergence follows the graph's data
edges; without it (msaccucmp's CSV) the order is the ``Index`` column and only compared inputs are known.
"""
from __future__ import annotations

import os
import re
from typing import List, Optional, Tuple

from precision_tool.commands.registry import Command, Context
from precision_tool.errors import EXIT_FAILED_CHECK, EXIT_OK, WorkspaceError

_RESULT_NAME = re.compile(r"result_(\d{14})(?:_(\d+))?\.csv")
DEFAULT_LIMIT = 10


def add_arguments(parser):
    from precision_tool.commands.compare import cosine_value

    parser.add_argument("-f", "--file", dest="file", default=None, metavar="CSV",
                        help="a result CSV, or a folder searched for the latest result_*.csv "
                             "(default: the latest under WORKSPACE/temp/vector_compare)")
    parser.add_argument("-c", "--cosine", "--cosine-threshold", dest="cosine", type=cosine_value, default=None,
                        metavar="THRESHOLD",
                        help="list tensors below this cosine (default: the run's threshold from summary.json, "
                             "else 0.99)")
    parser.add_argument("-l", "--limit", dest="limit", type=int, default=DEFAULT_LIMIT, metavar="N",
                        help=f"show at most N tensors (default {DEFAULT_LIMIT}; 0 = all)")


def result_csvs(folder: str) -> List[str]:
    """Every ``result_{timestamp}[_n].csv`` under ``folder``, oldest first (temporary files never match)."""
    found: List[Tuple[tuple, str]] = []
    for root, _dirs, files in os.walk(folder):
        for name in files:
            match = _RESULT_NAME.fullmatch(name)
            if match:
                path = os.path.join(root, name)
                found.append(((match.group(1), int(match.group(2) or 0), os.stat(path).st_mtime_ns, path), path))
    return [path for _key, path in sorted(found)]


def latest_result_csv(folder: str) -> str:
    """The latest complete result CSV under ``folder``; :class:`WorkspaceError` when there is none."""
    if not os.path.isdir(folder):
        raise WorkspaceError(f"{folder}: no such folder", "run 'compare' or 'vc' first, or give -f CSV")
    found = result_csvs(folder)
    if not found:
        raise WorkspaceError(f"no result_*.csv under {folder}", "run 'compare' or 'vc' first, or give -f CSV")
    return found[-1]


def _verdicts(table, summary: Optional[dict], threshold: float):
    """``(verdicts, failing rows, errors, not compared)`` at ``threshold``.

    When the summary was made at this very threshold its list of failing tensors decides (the CSV's six
    decimals cannot tell 0.9899996 from 0.99); otherwise each row is judged from its cells.
    """
    from_summary = summary is not None and summary.get("cosine_threshold") == threshold
    failing_ids = {item.get("tensor_id") for item in summary.get("failing", [])} if from_summary else set()
    verdicts, failing, errors, not_compared = {}, [], [], 0
    for row in table.rows:
        verdict = row.judge(threshold)
        if from_summary and verdict in ("pass", "fail"):
            verdict = "fail" if row.tensor_id in failing_ids else "pass"
        if verdict == "not_compared":
            not_compared += 1
            continue
        if verdict == "error":
            errors.append(row)
            continue
        if row.key is not None:
            verdicts[row.key] = verdict == "pass"
        if verdict == "fail":
            failing.append(row)
    return verdicts, failing, errors, not_compared


def _first_divergence(table, summary: Optional[dict], verdicts):
    from precision_tool.alignment import find_first_divergence

    if summary is not None and summary.get("order"):
        edges = {op: [tuple(edge) for edge in pairs] for op, pairs in (summary.get("data_inputs") or {}).items()}
        return find_first_divergence(verdicts, summary["order"], edges, summary.get("order_source", "graph"))
    rows = sorted(table.rows, key=lambda r: (r.index if r.index is not None else 1 << 62, r.line))
    order = list(dict.fromkeys(row.op_name for row in rows))
    return find_first_divergence(verdicts, order, {}, "dump_time")


def _cell(value) -> str:
    return "NaN" if value is None else f"{value:.6f}"


def handle(args, ctx: Context):
    from precision_tool.commands.compare_run import workspace_result_folder
    from precision_tool.reports.report import Report
    from precision_tool.reports.result_csv import read_result_csv
    from precision_tool.reports.summary import summary_for_csv

    target = args.file or workspace_result_folder(ctx.data_dir)
    if args.file and not os.path.exists(args.file):
        raise WorkspaceError(f"{args.file}: no such file or folder")
    csv_path = target if os.path.isfile(target) else latest_result_csv(target)
    table = read_result_csv(csv_path)
    summary = summary_for_csv(csv_path)
    threshold = args.cosine
    if threshold is None:
        threshold = summary["cosine_threshold"] if summary and summary.get("cosine_threshold") is not None else 0.99
    verdicts, failing, errors, not_compared = _verdicts(table, summary, threshold)
    divergence = _first_divergence(table, summary, verdicts)
    first = divergence.first.op_name if divergence.first is not None else None
    failing.sort(key=lambda r: (r.op_name != first, r.index if r.index is not None else 1 << 62, r.line))
    shown = failing if args.limit <= 0 else failing[:args.limit]

    report = Report(title=f"{csv_path}: {len(verdicts)} tensors compared, {len(failing)} below cosine "
                          f"{threshold:g} or failing")
    if shown:
        rows = [[r.index, r.tensor_id, r.op_type, _cell(r.cosine), _cell(r.metrics.get("MaxAbsoluteError")),
                 _cell(r.metrics.get("MeanRelativeError")), r.reason] for r in shown]
        report.add_table(["index", "tensor", "op type", "cosine", "max abs err", "mean rel err", "reason"], rows)
        if len(shown) < len(failing):
            report.add_text(f"... {len(failing) - len(shown)} more (-l 0 shows all)")
    lines = []
    if first is not None:
        lines.append(f"First divergence: {first} (listed first); {len(divergence.inherited)} later ops only "
                     f"inherit errors")
    if errors:
        lines.append(f"{len(errors)} aligned tensors could not be read: " + ", ".join(r.tensor_id for r in errors[:5]))
    if not_compared:
        lines.append(f"{not_compared} rows were not compared (no reference or no dump)")
    if summary is None:
        lines.append("No summary.json for this CSV: order from the Index column, no graph edges")
    if lines:
        report.add_text(*lines)
    report.exit_code = EXIT_FAILED_CHECK if failing or errors else EXIT_OK
    report.status = "all compared tensors pass" if report.exit_code == EXIT_OK else \
        f"{len(failing)} failing, {len(errors)} unreadable"
    report.data = {"csv": csv_path, "cosine_threshold": threshold, "compared": len(verdicts),
                   "first_divergence": None if divergence.first is None else divergence.first.to_dict(),
                   "failing": [{"index": r.index, "tensor_id": r.tensor_id, "op_type": r.op_type, "cosine": r.cosine,
                                "reason": r.reason} for r in failing],
                   "errors": [r.tensor_id for r in errors], "not_compared": not_compared,
                   "summary": summary is not None}
    return report


COMMAND = Command(
    name="vcs",
    summary="List the tensors of a compare result below a cosine threshold, first divergence first.",
    add_arguments=add_arguments,
    handler=handle,
    aliases=("vector_summary",),
    epilog="Reads precision_tool's and msaccucmp's result CSVs. Exit code 1 when any tensor is listed.",
)
