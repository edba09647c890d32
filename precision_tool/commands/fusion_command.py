"""``fusion [-f PASS] [-a] [--no-compare]``: what fusion did, and which fused ops it got wrong.

Lists the passes that fired and every fused op of ``npu/debug_0``'s Build graph with the TF ops it replaced and its
passes (:mod:`precision_tool.checks.fusion_summary`; ``-f PASS``: a case-insensitive regular expression). With a
fusion-off run in ``npu/debug_1``, names the fused ops whose output differs from their unfused TF ops
(:mod:`precision_tool.checks.fusion_compare` gives the rule); ``-a`` shows every compared op with its distances.
Exit code 1 when a fused op differs; else 2 when an input could not be read (the Build graph; an unreadable
``fusion_result.json`` ends the command with its one-line error) or there is nothing to examine (no workspace
folder, neither a Build graph folder nor ``fusion_result.json``); else 0. See docs/commands.md#fusion.
"""
from __future__ import annotations

import os

from precision_tool.commands.command_registry import Command, Context
from precision_tool.errors import batch_exit_code, WorkspaceError


def add_arguments(parser):
    from precision_tool.commands.options import add_fusion_rule_options

    parser.add_argument("-f", "--pass", dest="pass_pattern", default=None, metavar="PASS",
                        help="list only the fused ops made by passes matching PASS (regular expression)")
    parser.add_argument("-a", "--all", action="store_true",
                        help="show every op of the fusion-on vs fusion-off comparison, not only those that differ")
    parser.add_argument("--no-compare", action="store_true",
                        help="skip the comparison with the fusion-off run (npu/debug_1)")
    add_fusion_rule_options(parser)


def handle(args, ctx: Context):
    from precision_tool.checks.autocheck import check_fusion
    from precision_tool.config import Workspace
    from precision_tool.reports.fusion_report import add_fused_ops, add_fusion_comparison, add_passes
    from precision_tool.reports.report import Report

    workspace = Workspace(ctx.data_dir)
    _require_inputs(workspace)
    section = check_fusion(workspace, args.fusion_floor, args.fusion_growth, compare=not args.no_compare)
    overview = section.overview
    report = Report(title=f"Fusion in {workspace.npu_run(0)}")
    add_passes(report, overview)
    ops = overview.ops_made_by(args.pass_pattern) if args.pass_pattern else overview.fused_ops
    title = (f"{len(ops)} fused op(s) made by a pass matching {args.pass_pattern!r}:" if args.pass_pattern
             else "")
    add_fused_ops(report, ops, title)
    add_fusion_comparison(report, section.comparison, all_ops=args.all)
    if section.notes:
        report.add_text(*section.notes)
    culprits = section.comparison.culprits if section.comparison is not None else ()
    graph_unread = not section.graph_path and os.path.isdir(workspace.npu_graph(0))
    if culprits:
        report.status = "fusion culprit(s): " + "; ".join(f"{op.op_name} ({_passes(op)})" for op in culprits)
    elif graph_unread:
        report.status = (f"the Build graph of {workspace.npu_graph(0)} could not be read (see the notes): fused ops "
                         "unknown")
    elif section.result_problem:
        report.status = (f"{workspace.fusion_result} could be read only in part (see the note above): pass counts "
                         "may be low" if section.overview.records else
                         f"{workspace.fusion_result} could not be read (see the note above): pass counts unknown")
    elif section.comparison is not None:
        report.status = "every fused op computes what its unfused TF ops compute"
    else:
        report.status = "no fusion-off comparison"
    unusable = graph_unread or bool(section.result_problem)
    report.exit_code = batch_exit_code(bool(culprits), bool(unusable))
    report.data = section.to_dict()
    report.data["listed_ops"] = [op.name for op in ops]
    return report


def _require_inputs(workspace) -> None:
    """:class:`WorkspaceError` (one line naming the path) when the workspace is not a folder, when it has
    neither a Build graph folder nor ``fusion/fusion_result.json``, or when ``fusion_result.json`` exists but
    cannot be read (a folder, a FIFO, broken JSON: the reader's error)."""
    from precision_tool.formats.fusion_result import read_fusion_result

    root = workspace.root
    workspace.require_root()
    if os.path.lexists(workspace.fusion_result):
        read_fusion_result(workspace.fusion_result)  # checks/autocheck reads it again; it is small
    elif not os.path.isdir(workspace.npu_graph(0)):
        raise WorkspaceError(f"{root}: nothing to examine: no Build graph folder {workspace.npu_graph(0)} and no "
                             f"{workspace.fusion_result}", "capture a dump run with its graphs first")


def _passes(op) -> str:
    """The passes that made culprit ``op`` (a culprit is always a fused op)."""
    return op.fused.passes_text if op.fused is not None else ""


COMMAND = Command(
    name="fusion",
    summary="Fusion: passes that fired, fused ops and the TF ops they replaced; vs a fusion-off run, the culprits.",
    add_arguments=add_arguments,
    handler=handle,
    aliases=("fu",),
    epilog="Example: fusion -f ConvBiasadd    (the -f filter is the same as ls -f)",
)
