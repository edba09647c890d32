"""``compare -m NPU_DIR -g REF_DIR [-f GRAPH] [-out OUT_DIR] [-c 0.99] [--junit FILE]``: msaccucmp's compare.

The flags msaccucmp users know (``-m``, ``-g``, ``-f``, ``-out``) plus long forms. ``-f`` takes the GE Build graph
as protobuf text or JSON, or its ``DUMP_GRAPH_PATH`` folder: flat (CANN 7 and older) or with CANN 8's
``pid_*_deviceid_*`` / ``{pid}_{device}`` folders, of which the one of the dump's device is read
(:mod:`precision_tool.formats.ge_graph_folders`). Without flags the workspace is compared: ``npu/debug_0/dump``
with its graph against ``tf/dump``, into ``temp/vector_compare/{timestamp}/result_{timestamp}.csv``. Outputs,
verdicts and exit codes: :mod:`.compare_run`; unique result names: :mod:`precision_tool.reports.result_outputs`;
``--steps all`` / ``--device all``: :mod:`.compare_each`. See docs/commands.md#compare.
"""
from __future__ import annotations

import os

from precision_tool.commands.command_registry import Command, Context
from precision_tool.config import Workspace
from precision_tool.errors import WorkspaceError
from precision_tool.metrics import DEFAULT_COSINE_THRESHOLD

MODES = ("auto", "npu_vs_tf", "npu_vs_npu")


def add_shared_options(parser) -> None:
    """``-c``, ``--junit``, ``--workers`` and ``--cluster``, shared with ``vc`` (defined once in :mod:`.options`)."""
    from precision_tool.commands.options import (add_cluster_option, add_cosine_option, add_junit_option,
                                                 add_workers_option)

    add_cosine_option(parser, DEFAULT_COSINE_THRESHOLD,
                      help_tail="; NaN/inf, shape or count mismatch and one-side-zero tensors fail whatever it is")
    add_junit_option(parser)
    add_workers_option(parser)
    add_cluster_option(parser)


def add_arguments(parser):
    from precision_tool.commands.options import add_output_dir_option

    parser.add_argument("-m", "--npu", "--my-dump-path", dest="npu", default=None, metavar="NPU_DIR",
                        help="NPU dump folder (searched recursively; default WORKSPACE/npu/debug_0/dump)")
    parser.add_argument("-g", "--golden", "--reference", dest="reference", default=None, metavar="REF_DIR",
                        help="reference folder: TF .npy files, or another NPU run's dump (default "
                             "WORKSPACE/tf/dump)")
    parser.add_argument("-f", "--graph", dest="graph", default=None, metavar="GRAPH",
                        help="GE Build graph of the NPU run: .txt or .json, or its DUMP_GRAPH_PATH folder, flat or "
                             "with CANN 8's pid_*_deviceid_* folders (default: WORKSPACE/npu/debug_0/graph when -m is "
                             "not given; else none: names only)")
    add_output_dir_option(parser, "result_{timestamp}.csv and summary.json",
                          "WORKSPACE/temp/vector_compare/{timestamp}")
    add_shared_options(parser)
    parser.add_argument("--mode", choices=MODES, default="auto",
                        help="npu_vs_tf or npu_vs_npu (default: npu_vs_tf when REF_DIR holds .npy files)")
    parser.add_argument("--reference-graph", "-rg", dest="reference_graph", default=None, metavar="GRAPH",
                        help="npu_vs_npu: the other run's Build graph")
    parser.add_argument("--html", default=None, metavar="FILE",
                        help="also write the HTML report of this result (plot, failing tensors, table) to FILE")


def handle(args, ctx: Context):
    from precision_tool.commands.compare_each import run_compare_each, wants_each
    from precision_tool.commands.compare_run import CompareRequest, run_compare, workspace_result_folder
    from precision_tool.comparison.cluster import cluster_address

    workspace = Workspace(ctx.data_dir)
    if (args.npu is None or args.reference is None) and not os.path.isdir(workspace.root):  # a folder from it
        cause = "not a folder" if os.path.lexists(workspace.root) else "no such workspace folder"
        raise WorkspaceError(f"{workspace.root}: {cause}", "give the workspace with -d DIR or $PRECISION_TOOL_DATA, or "
                                                           "the folders with -m NPU_DUMP_DIR -g REFERENCE_DIR")
    if args.npu is None or args.reference is None:
        workspace.require_root()  # -d one level too deep: says which folder is the workspace
    if args.html:  # refuse a bad destination before the comparison, not after it
        html_folder = os.path.dirname(os.path.abspath(args.html))
        if not os.path.isdir(html_folder):
            raise WorkspaceError(f"{args.html}: folder {html_folder} does not exist", "create it or choose another")
    graph = args.graph
    if graph is None and args.npu is None and os.path.isdir(workspace.npu_graph(0)):
        graph = workspace.npu_graph(0)
    request = CompareRequest(npu_dir=args.npu or workspace.npu_dump(0), reference=args.reference or workspace.tf_dump,
                             graph=graph, mode=args.mode, reference_graph=args.reference_graph, cosine=args.cosine,
                             workers=args.workers, selection=ctx.selection, cluster=cluster_address(args.cluster))
    if wants_each(args):
        return run_compare_each(request, args, workspace_result_folder(ctx.data_dir), workspace.input_folders)
    report = run_compare(request, args.out_dir, workspace_result_folder(ctx.data_dir), junit=args.junit,
                         folders=workspace.input_folders)
    if args.html:
        from precision_tool.reports.html import write_run_report

        html = write_run_report(report.data["result_csv_path"], args.html, selection=ctx.selection)
        report.add_text(f"HTML report: {html}")
        report.data["html"] = os.path.abspath(html)
    return report


COMMAND = Command(
    name="compare",
    summary="Compare NPU dump tensors with reference tensors (msaccucmp's compare, faster and honest).",
    add_arguments=add_arguments,
    handler=handle,
    epilog=("Writes result_{timestamp}.csv (msaccucmp's columns; result_{timestamp}_N.csv when another run took "
            "the name) and summary.json; --junit adds JUnit XML.\n"
            "Steps and devices: of an NPU dump tree holding several ({time}/{device}/{model}/{model_id}/{step}), "
            "one step of one device is compared: the newest step of the lowest device, or --step N --device N "
            "(also before the command). --steps all compares every step of the device, --device all every "
            "device (its newest step), each into OUT/step_N or OUT/device_N, with a table and the first diverging "
            "step or the replicas that differ.\n"
            "Exit codes: 0 every compared tensor passes, 1 at least one fails -- or is aligned but cannot be "
            "read (an ERROR row: its dump or reference cut, changed while compared, of a type not compared) --, "
            "2 unusable input (missing folder, unreadable graph, nothing aligned, or dump/reference files whose "
            "headers could not be read, so nothing was aligned to them, while nothing fails).\n"
            "Tensors without a reference and ops without a dump are reported as coverage and do not fail the run."),
)
