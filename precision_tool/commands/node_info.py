"""``ni [-n] NAME [-g GRAPH] [-a] [-s DEPTH]``: everything known about one op of the NPU graph.

Type and id; inputs (producer, dtype, layout, shape, origin layout/shape) and outputs (the TF tensor each
stands for, consumers); the TF ops it implements, the fusion passes that made it, its kernel; its dump files
with min/max/mean and inf/NaN counts per tensor; the reference tensors the alignment pairs with them; the
rows of the latest comparison result; with ``-a`` every attribute; with ``-s DEPTH`` the neighbourhood as
Graphviz DOT text written to ``WORKSPACE/temp/node_info/``.
"""
from __future__ import annotations

import os
import shlex
from typing import List

from precision_tool.commands import node_sections
from precision_tool.commands.arg_hints import GRAPH_NAME, OP_NAME, completes
from precision_tool.commands.options import add_result_file_option
from precision_tool.commands.command_registry import Command, Context
from precision_tool.commands.lookups import lookup_for, with_graph_notes, without_graph
from precision_tool.errors import UsageError, WorkspaceError
from precision_tool.formats.dump_names import sanitize_op_name
from precision_tool.reports.report import Report
from precision_tool.reports.format import counted

DOT_PRINT_LINES = 40  # DOT text this short is printed as well as written


def add_arguments(parser):
    from precision_tool.commands.options import add_run_option

    completes(parser.add_argument("name", nargs="?", help="op name as in the graph (or as in a dump file name)"),
              OP_NAME)
    completes(parser.add_argument("-n", "--name", dest="name_flag", metavar="NAME",
                                  help="the op name, as a flag (the original tool's form)"), OP_NAME)
    completes(parser.add_argument("-g", "--graph", default=None,
                                  help="root graph name of the Build file to read (default: the newest; CANN 8: in the "
                                       "dump's device folder)"), GRAPH_NAME)
    parser.add_argument("-a", "--attrs", action="store_true", help="also list every attribute of the op")
    parser.add_argument("-s", "--subgraph", type=int, default=None, metavar="DEPTH",
                        help="write the ops within DEPTH edges as Graphviz DOT text to WORKSPACE/temp/node_info/")
    add_run_option(parser)
    add_result_file_option(parser)


def op_name_argument(args) -> str:
    """The op name from ``NAME`` or ``-n NAME`` (one of them, or both the same)."""
    if args.name and args.name_flag and args.name != args.name_flag:
        raise UsageError(f"two op names given: {args.name!r} and -n {args.name_flag!r}")
    name = args.name or args.name_flag
    if not name:
        raise UsageError("which op? give its name: ni NAME", "list ops with 'ls -n PATTERN'")
    return name


def handle(args, ctx: Context) -> Report:
    name = op_name_argument(args)
    if args.subgraph is not None and args.subgraph < 0:
        raise UsageError(f"-s DEPTH must be >= 0, not {args.subgraph}")
    lookup = lookup_for(ctx, args.run)
    lookup.require_workspace()
    model = lookup.graph_model(args.graph, required=False)
    notes = lookup.graph_notes  # which per-process graph folder (CANN 8) when not clear-cut; skipped entries
    if model is None:
        return without_graph(_dump_only_report(name, args, lookup, f"no GE graph in {lookup.graph_dir}"), notes)
    try:
        op = lookup.find_op(name, args.graph)
    except WorkspaceError:
        if args.attrs or args.subgraph is not None or lookup.dumped_op(name) is None:
            raise
        return with_graph_notes(_dump_only_report(name, args, lookup, f"not in graph {model.root.name}"), notes)
    graph = next(g for g in model.graphs if op.name in g)
    report = Report(title=f"{op.name}  (type {op.type}, id {op.id}, graph {graph.name}, {lookup.run_label})")
    data = {"name": op.name, "type": op.type, "id": op.id, "graph": graph.name}
    node_sections.add_graph_sections(report, data, op, graph)
    scan = lookup.dump_scan(required=False)
    dumped = lookup.dumped_op(op.name, scan)
    from precision_tool.commands.stats_views import add_op_statistics

    # a statistics run: ac -c's judgment of the op, in place of the dump, reference and comparison sections
    if dumped is not None or not add_op_statistics(report, data, op.name, args.file, ctx.data_dir, ctx.selection):
        node_sections.add_dump_section(report, data, dumped, op, lookup.dump_dir)
        node_sections.add_reference_section(report, data, op.name, lookup)
        result = node_sections.result_for(lookup, args.file)
        node_sections.add_compare_section(report, data, op.name, lookup, result)
        node_sections.add_local_error_section(report, data, op.name, result)
    if args.attrs:
        node_sections.add_attribute_section(report, data, op)
    if args.subgraph is not None:
        _add_subgraph(report, data, graph, op, args.subgraph, lookup)
    report.data = data
    return with_graph_notes(report, notes)


def _add_subgraph(report: Report, data: dict, graph, op, depth: int, lookup) -> None:
    from precision_tool.commands.subgraph_dot import neighbourhood, to_dot
    from precision_tool.config import ensure_output_dir, output_file_name
    from precision_tool.formats.ge_io import atomic_write_text

    nodes, edges = neighbourhood(graph, op.name, depth)
    dot = to_dot(nodes, edges, op.name)
    folder = ensure_output_dir(os.path.join(lookup.workspace.temp, "node_info"))
    path = os.path.join(folder, output_file_name(sanitize_op_name(op.name), f".depth{depth}.dot"))
    try:
        atomic_write_text(path, dot + "\n")
    except OSError as error:
        raise WorkspaceError(f"{path}: cannot write ({error.strerror or error})") from None
    lines: List[str] = [f"Subgraph within {depth} edges: {counted(len(nodes), 'op')}, {counted(len(edges), 'edge')}, "
                        f"written to {path}",
                        f"(render: dot -Tsvg {shlex.quote(path)} -o subgraph.svg)"]
    if dot.count("\n") < DOT_PRINT_LINES:
        lines.append(dot)
    report.add_text(*lines)
    data["subgraph"] = {"path": path, "ops": [n.name for n in nodes], "edges": len(edges)}


def _dump_only_report(name: str, args, lookup, why: str) -> Report:
    """An op the graph cannot describe (no graph, or a dumped op the graph lacks): its dump files, references
    and results only; without a dump either, the "no graph" error."""
    if args.attrs or args.subgraph is not None or args.graph:
        lookup.graph_model(args.graph)  # raises the "no Build graph" error with its hint
    dumped = lookup.dumped_op(name)
    if dumped is None:
        lookup.graph_model(args.graph)
        raise WorkspaceError(f"no dump of op {name!r} under {lookup.dump_dir}")
    report = Report(title=f"{name}  (type {dumped.op_type}; {why}: dump files only)")
    data = {"name": name, "type": dumped.op_type, "graph": None}
    node_sections.add_dump_section(report, data, dumped, None)
    raw_name = data["dump"].get("op_name") or name  # the header's name: a/b where the file says a_b
    node_sections.add_reference_section(report, data, raw_name, lookup)
    node_sections.add_compare_section(report, data, raw_name, lookup, node_sections.result_for(lookup, args.file))
    report.data = data
    return report


COMMAND = Command(
    name="ni",
    summary="Node info: one op's type, inputs/outputs, TF origins, fusion, kernel, dumps, references, results.",
    add_arguments=add_arguments,
    handler=handle,
    aliases=("node_info",),
    epilog="Examples:\n  ni conv1/Conv2D\n  ni -n conv1/Conv2D -a -s 2",
)
