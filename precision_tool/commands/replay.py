"""``replay OP [-r RUN]``: one NPU op re-run on the CPU on its own dumped inputs, in detail.

What ``ac -c`` does for every op (docs/local-error.md), shown for one: the TF ops cut out of the reference
graph (``WORKSPACE/tf/graph``), where each input's value came from (the op's dump, the reference, a graph
constant), the precision it ran in, and per output the local error (NPU vs replay) against its floor, the
inherited error (replay vs reference) and the total (NPU vs reference). Needs TensorFlow (imported here only).

Exit codes: 0 replayed and at its floor; 1 an output's local error is above its floor; 2 not replayable
(the reason is printed).
"""
from __future__ import annotations

import math
from typing import Optional

from precision_tool.commands.arg_hints import OP_NAME, completes
from precision_tool.commands.options import add_run_option
from precision_tool.commands.command_registry import Command, Context
from precision_tool.commands.lookups import lookup_for
from precision_tool.errors import EXIT_FAILED_CHECK, EXIT_OK, EXIT_UNUSABLE_INPUT, UsageError, WorkspaceError
from precision_tool.reports.report import Report


def add_arguments(parser):
    completes(parser.add_argument("name", nargs="?", help="NPU op name as in the graph (or as in a dump file name)"),
              OP_NAME)
    add_run_option(parser)


def _op_name(given: str, order) -> Optional[str]:
    """The op called ``given``, or whose sanitised name (as in a dump file name) it is."""
    from precision_tool.formats.dump_names import sanitize_op_name

    if given in order:
        return given
    return next((name for name in order if sanitize_op_name(name) == given), None)


def handle(args, ctx: Context) -> Report:
    from precision_tool.comparison.attribution import beyond_standard, exceeds_floor, percent, standard_text
    from precision_tool.metrics.rounding import is_float
    from precision_tool.comparison.pipeline import CompareRequest, align_request
    from precision_tool.replay.replay_run import replay_alignment

    if not args.name:
        raise UsageError("which op? replay OP", "ls lists the ops; ac -c replays them all")
    lookup = lookup_for(ctx, args.run)
    lookup.require_workspace()
    workspace = lookup.workspace
    graph = lookup.graph_dir if lookup.graph_model(required=False) is not None else None
    aligned = align_request(CompareRequest(lookup.dump_dir, workspace.tf_dump, graph, selection=ctx.selection))
    name = _op_name(args.name, aligned.alignment.order)
    if name is None:
        raise WorkspaceError(f"{args.name}: no such op in {lookup.dump_dir}", "ls lists the ops")
    report_data = replay_alignment(aligned.alignment, aligned.graph, workspace.tf_dump, workspace.tf_graph,
                                   only=[name])
    report = Report(title=f"replay {name}  ({lookup.run_label})")
    op = report_data.op(name)
    why = report_data.skipped.get(name) or (op.error if op is not None else "") or (
        report_data.notes[0] if not report_data.ran and report_data.notes else "")
    if op is None or op.error or not report_data.ran:
        why = (why or "it has no compared output to replay").replace("replay not run: ", "", 1)
        report.add_text(f"Not replayed: {why}")
        report.data = {"op_name": name, "replayed": False, "why": why}
        report.exit_code = EXIT_UNUSABLE_INPUT
        return report
    members = ", ".join(op.members) if op.members else "(a GE-inserted conversion)"
    report.add_text(f"TF ops: {members}", f"Run in: {op.precision}", "Inputs:", *(f"  {line}" for line in op.feeds))
    rows, above, beyond, standards = [], False, False, []
    for output in op.outputs:
        above = above or (is_float(output.npu_dtype) and exceeds_floor(output.ratio))
        beyond = beyond or (is_float(output.npu_dtype) and beyond_standard(
            op.op_type, output.npu_dtype, output.local, output.floor, output.spec_error))
        standard = standard_text(op.op_type, output.npu_dtype, output.floor, output.spec_error)
        standards.append(standard)
        ratio = "inf" if math.isinf(output.ratio) else f"{output.ratio:.3g}"
        rows.append([output.tensor_id, output.npu_dtype, percent(output.local), percent(output.floor), ratio,
                     percent(output.inherited), percent(output.total), standard or "-", output.note])
    report.add_table(["tensor", "NPU dtype", "local", "floor", "local/floor", "inherited", "total",
                      "Ascend standard", "note"], rows,
                     title="Outputs (local = NPU vs replay; inherited = replay vs reference; total = NPU vs reference)")
    report.add_text("Its local error is above the floor: it adds error of its own." if above else
                    "Its local error is within the floor: it adds no more than its dtype's rounding.")
    if any(standards):
        report.add_text("Against Ascend's operator standard (docs/local-error.md): "
                        + ("beyond it -- no correct Ascend kernel of its type and dtype adds this much." if beyond
                           else "within it."))
    report.data = {"op_name": name, "replayed": True, **op.to_dict(), "beyond_standard": beyond}
    report.exit_code = EXIT_FAILED_CHECK if above else EXIT_OK
    if report_data.index_problem:  # the graphs of other runs may have been read too: not a clean bill
        report.add_text(report_data.index_problem)
        report.data["index_problem"] = report_data.index_problem
        if not above:
            report.exit_code = EXIT_UNUSABLE_INPUT
    return report


COMMAND = Command(
    name="replay",
    summary="Re-run one NPU op on the CPU on its own dumped inputs: its local error vs inherited and total.",
    add_arguments=add_arguments,
    handler=handle,
    epilog="Exit codes: 0 within its floor, 1 above it, 2 not replayable. Needs tf/graph and TensorFlow.",
)
