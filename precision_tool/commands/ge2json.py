"""``ge2json GE_GRAPH -o OUT.json``: a GE graph dump as the JSON msaccucmp's ``compare -f`` reads.

GE_GRAPH is a ``ge_proto_*_Build.txt`` (or a graph already in JSON form), or a ``DUMP_GRAPH_PATH`` folder, flat or
with CANN 8's per-process folders (:mod:`precision_tool.formats.ge_graph_folders`). It is read through
:func:`~precision_tool.formats.ge_io.read_ge_graph` -- whatever cannot be read ends in one line naming the file
(exit 2) -- and a large graph is read and written op by op. The output is written atomically, never over the input
nor under a name GE's Build graphs have. Which folder and graph are read, where the output may go, and the memory
measured: docs/internals/commands.md#ge2json.
"""
from __future__ import annotations

import os
from typing import Tuple

from precision_tool.commands.command_registry import Command, Context
from precision_tool.config import Workspace, check_output_file
from precision_tool.errors import WorkspaceError
from precision_tool.formats.ge_graph_folders import choose_build_graph
from precision_tool.formats.ge_io import BUILD_GRAPH_NAME, read_ge_graph, write_ge_graph_json
from precision_tool.reports.report import Report
from precision_tool.reports.format import counted

# msaccucmp refuses a graph JSON larger than this (FileUtils.load_json_file).
MSACCUCMP_JSON_LIMIT = 100 * 1024 * 1024


def add_arguments(parser) -> None:
    parser.add_argument("graph", metavar="GE_GRAPH",
                        help="ge_proto_*_Build.txt, a GE graph JSON, or a folder holding Build graphs (flat, or "
                             "CANN 8's pid_*_deviceid_* folders)")
    parser.add_argument("-o", "--output", required=True, metavar="OUT.json",
                        help="JSON file to write (an existing folder: {input name}.json inside it)")
    parser.add_argument("--graph-name", default=None, metavar="NAME",
                        help="with a folder: use the Build graph whose root graph is NAME "
                             "(the model_name folder of the dump tree)")
    parser.add_argument("--device", type=int, default=None, metavar="N",
                        help="with a folder holding CANN 8's pid_*_deviceid_* folders: use device N's "
                             "(the device_id folder of the dump tree)")


def _input_file(path: str, graph_name, device) -> Tuple[str, Tuple[str, ...]]:
    """The graph file to convert and the notes on how a folder's file was chosen."""
    if os.path.isdir(path):
        choice = choose_build_graph(path, graph_name, device)
        return str(choice.path), choice.notes
    if graph_name is not None or device is not None:
        raise WorkspaceError(f"--{'graph-name' if graph_name is not None else 'device'} only applies when "
                             "GE_GRAPH is a folder")
    return path, ()


def _output_file(output: str, input_path: str) -> str:
    """Where to write: ``output``, or ``{input name}.json`` in it when it is a folder; never the input itself nor a
    file named as GE names its Build graphs."""
    if os.path.isdir(output):
        stem = os.path.splitext(os.path.basename(input_path))[0]
        output = os.path.join(output, stem + ".json")
    if BUILD_GRAPH_NAME.match(os.path.basename(output)):
        raise WorkspaceError(f"{output}: refused, a file of that name is read as a GE Build graph",
                             "write the JSON to a .json file")
    if os.path.exists(output) and os.path.samefile(output, input_path):
        raise WorkspaceError(f"{output} is the input graph itself", "choose another output file")
    return output


def handle(args, ctx: Context) -> Report:
    input_path, notes = _input_file(args.graph, args.graph_name, args.device)
    output = _output_file(args.output, input_path)
    model = read_ge_graph(input_path)  # the input's own error first
    graph_folders = (args.graph,) if os.path.isdir(args.graph) else ()  # a folder of Build graphs is scanned
    output = check_output_file(output, input_path, folders=(*graph_folders, *Workspace(ctx.data_dir).input_folders))
    write_ge_graph_json(model, output)
    rows, graphs = [], []
    for graph in model.graphs:
        fused = sum(1 for op in graph.ops if op.is_fused)
        rows.append([graph.name, len(graph.ops), fused])
        graphs.append({"name": graph.name, "ops": len(graph.ops), "fused_ops": fused})
    report = Report(title=f"{input_path} -> {output}")
    report.add_table(["graph", "ops", "fused ops"], rows)
    size = os.path.getsize(output)
    if size > MSACCUCMP_JSON_LIMIT:
        report.add_text(f"Note: {output} is {size / 2**20:.0f} MiB; msaccucmp refuses graph JSON over 100 MiB.")
    if notes:
        report.add_text(*notes)
    total = sum(len(graph.ops) for graph in model.graphs)
    report.status = f"wrote {counted(len(graphs), 'graph')} ({counted(total, 'op')}) to {output}"
    report.data = {"input": input_path, "output": output, "bytes": size, "graphs": graphs, "notes": list(notes)}
    return report


COMMAND = Command(
    name="ge2json",
    summary="Convert a GE graph dump (ge_proto_*_Build.txt) to the JSON msaccucmp's compare -f reads.",
    add_arguments=add_arguments,
    handler=handle,
    epilog="'Fused ops' implement several TensorFlow ops or came from a fusion pass.",
)
