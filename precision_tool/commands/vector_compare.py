"""``vc -lt LEFT -rt RIGHT [-g GRAPH] [-c 0.99]``: the original tool's vector compare, into the workspace.

``LEFT`` is an NPU dump folder; ``RIGHT`` a TF ``.npy`` folder or a second NPU run's dump folder (NPU vs NPU,
e.g. fusion on vs off: give its graph with ``-rg``). Results go to
``WORKSPACE/temp/vector_compare/{timestamp}/result_{timestamp}.csv`` with ``summary.json``, where ``vcs``
reads them. Same engine, verdicts and exit codes as ``compare``.
"""
from __future__ import annotations

from precision_tool.commands.compare import MODES, add_shared_options
from precision_tool.commands.command_registry import Command, Context
from precision_tool.config import Workspace


def add_arguments(parser):
    parser.add_argument("-lt", "--left", dest="left", required=True, metavar="LEFT",
                        help="NPU dump folder (searched recursively)")
    parser.add_argument("-rt", "--right", dest="right", required=True, metavar="RIGHT",
                        help="TF .npy folder, or another NPU run's dump folder")
    parser.add_argument("-g", "--graph", dest="graph", default=None, metavar="GRAPH",
                        help="the left run's GE Build graph: .txt, .json or its DUMP_GRAPH_PATH folder (flat, or "
                             "CANN 8's pid_*_deviceid_* folders: the one of LEFT's device is used)")
    parser.add_argument("-rg", "--right-graph", dest="right_graph", default=None, metavar="GRAPH",
                        help="NPU vs NPU: the right run's Build graph")
    parser.add_argument("--mode", choices=MODES, default="auto",
                        help="npu_vs_tf or npu_vs_npu (default: npu_vs_tf when RIGHT holds .npy files)")
    add_shared_options(parser)


def handle(args, ctx: Context):
    from precision_tool.commands.compare_run import CompareRequest, run_compare, workspace_result_folder
    from precision_tool.comparison.cluster import cluster_address

    request = CompareRequest(npu_dir=args.left, reference=args.right, graph=args.graph, mode=args.mode,
                             reference_graph=args.right_graph, cosine=args.cosine, workers=args.workers,
                             selection=ctx.selection, cluster=cluster_address(args.cluster))
    return run_compare(request, None, workspace_result_folder(ctx.data_dir), junit=args.junit, progress_label="vc",
                       folders=Workspace(ctx.data_dir).input_folders)


COMMAND = Command(
    name="vc",
    summary="Vector compare two dump folders into WORKSPACE/temp/vector_compare/{timestamp} (read it with vcs).",
    add_arguments=add_arguments,
    handler=handle,
    aliases=("vector_compare",),
    epilog="Exit codes: 0 every compared tensor passes, 1 at least one fails, 2 unusable input.",
)
