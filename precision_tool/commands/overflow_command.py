"""``ov [FOLDER] [-l N] [--scan]``: the overflow records of a run, decoded and located, and the dump scan.

FOLDER (default ``WORKSPACE/overflow/dump``) is searched for Opdebug records, each decoded, ordered by timestamp and
matched to its op's dump, the first ``-l N`` with every tensor's statistics
(:mod:`precision_tool.checks.overflow_records`). Without records -- or with ``--scan``, or when no readable record
shows an overflow -- the dumps are scanned for inf/NaN and fp16 saturation and the Casts checked (FOLDER's dumps,
else ``WORKSPACE/npu/debug_0/dump``). Exception dumps are listed apart and leave the exit code alone
(:mod:`precision_tool.checks.exception_dumps`). Exit code 1 when something overflowed; else 2 when a record or a
dump could not be read, or there is nothing to check; else 0 (docs/internals/commands.md#ov).
"""
from __future__ import annotations

import os

from precision_tool.commands.command_registry import Command, Context
from precision_tool.errors import batch_exit_code, WorkspaceError


def add_arguments(parser):
    from precision_tool.checks.autocheck import DEFAULT_LIMIT
    from precision_tool.commands.options import add_limit_option

    parser.add_argument("folder", nargs="?", default=None,
                        help="folder holding Opdebug records beside the op dumps (default WORKSPACE/overflow/dump); "
                             "exception dumps in it (extra-info/data-dump/N) are listed too")
    add_limit_option(parser, DEFAULT_LIMIT, "detail the first N records and list at most N rows per table")
    parser.add_argument("--scan", action="store_true",
                        help="also scan the dumps for inf/NaN, fp16 saturation and lossy casts")


def handle(args, ctx: Context):
    from precision_tool.checks.exception_dumps import describe_exception_dumps, exception_refs
    from precision_tool.checks.overflow_records import check_overflow_records
    from precision_tool.config import Workspace
    from precision_tool.formats.dump_names import scan_dump_folder
    from precision_tool.formats.dump_tree import following
    from precision_tool.reports.exception_report import add_exception_dumps, exception_status
    from precision_tool.reports.overflow_report import add_overflow_records
    from precision_tool.reports.report import Report

    workspace = Workspace(ctx.data_dir)
    if args.folder is None:
        workspace.require_root()  # "WS: no such workspace folder", not "WS/overflow/dump: nothing to scan"
    folder = args.folder or workspace.overflow_dump
    if args.folder is not None and not os.path.isdir(folder):
        cause = "not a folder" if os.path.lexists(folder) else "no such folder"
        raise WorkspaceError(f"{folder}: {cause}", "give the folder holding the Opdebug records")
    # the workspace's overflow run is another run than the dump run --step/--device name: it follows them when it
    # holds them, else takes its only step and device (a folder given is read as asked)
    selection = following(ctx.selection) if args.folder is None else ctx.selection
    scan = scan_dump_folder(folder, selection) if os.path.isdir(folder) else None
    records = check_overflow_records(folder, args.limit, scan=scan)
    report = Report(title=f"Overflow check of {folder}")
    add_overflow_records(report, records)
    scanned = target_scan = None
    nothing = ""
    if args.scan or records.records == 0 or (records.failures and not records.overflowed):
        target = folder if scan is not None and scan.ops else workspace.npu_dump(0)
        scanned, target_scan = _scan(report, records, target, scan if target == folder else None, args,
                                     ctx.selection)
        if records.records == 0 and (scanned is None or scanned.ops_scanned == 0):
            nothing = f"{folder}: nothing to scan: no Opdebug records there and no dump files in {target}"
    exceptions = describe_exception_dumps(exception_refs(scan, target_scan))
    if nothing and not exceptions:
        raise WorkspaceError(nothing, "give the folder of an overflow run (action='overflow'), or -d a workspace "
                                      "with a dump run")
    add_exception_dumps(report, exceptions, args.limit)
    found = records.overflowed or bool(scanned and scanned.ops)
    unreadable = [*records.failures, *(scanned.unreadable if scanned is not None else ())]
    report.status = nothing or _status(records, scanned, unreadable)
    if exceptions:
        report.status += f"; {exception_status(exceptions)}"
    report.exit_code = batch_exit_code(found, bool(unreadable or nothing))
    report.data = {"records": records.to_dict(), "scan": None if scanned is None else scanned.to_dict(),
                   "exception_dumps": [info.to_dict() for info in exceptions]}
    return report


def _scan(report, records, target: str, target_scan, args, selection):
    """Scan ``target``'s dumps (``target_scan``: its folder scan when already made) into ``report``; the
    :class:`~precision_tool.checks.nonfinite.DumpScanCheck` and the folder's
    :class:`~precision_tool.formats.dump_names.DumpScan`, or ``(None, None)`` when ``target`` is not a folder."""
    from precision_tool.checks.casts import check_casts
    from precision_tool.checks.nonfinite import scan_dumps_for_overflow
    from precision_tool.formats.dump_names import scan_dump_folder
    from precision_tool.reports.overflow_report import add_casts, add_dump_scan

    if not records.folder_exists:
        report.add_text(f"No overflow run ({records.folder} is missing): scanning {target} instead.")
    elif records.records == 0 and not args.scan:
        report.add_text(f"No Opdebug records: scanning {target} instead.")
    elif not args.scan and records.failures:
        report.add_text(f"No readable Opdebug record shows an overflow: scanning {target} for the verdict.")
    if not os.path.isdir(target):
        report.add_text(f"{target}: no such folder either: nothing to scan.")
        return None, None
    target_scan = target_scan if target_scan is not None else scan_dump_folder(target, selection)
    scanned = scan_dumps_for_overflow(target, target_scan)
    add_dump_scan(report, scanned, args.limit)
    add_casts(report, check_casts(target_scan), args.limit)
    return scanned, target_scan


def _status(records, scanned, unreadable) -> str:
    """The first overflow (record, else dump scan), else "no overflow found" and, when some input could not be
    read, the first such input with its cause (the exit code is then 2, not 0)."""
    first = records.first
    if first is not None:
        return (f"first overflow: {first.op_name or f'task {first.task_id} stream {first.stream_id}'} "
                f"({'; '.join(first.status_lines)})")
    if scanned is not None and scanned.first_introduced is not None:  # there is one whenever ops were found
        return f"inf/NaN or saturation first appears at {scanned.first_introduced.op_name}"
    if unreadable:
        return f"no overflow found, but {len(unreadable)} input(s) could not be read, e.g. {unreadable[0]}"
    return "no overflow found"


COMMAND = Command(
    name="ov",
    summary="Overflow: decode the Opdebug records, locate each overflowing op, show its tensors; or scan dumps.",
    add_arguments=add_arguments,
    handler=handle,
    aliases=("overflow",),
    epilog="Exit codes: 0 no overflow, 1 an overflow was found, 2 unusable input (an unreadable record or dump, "
           "nothing to scan). Exception dumps (AI Core errors) are listed apart and do not change them.",
)
