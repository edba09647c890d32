"""``ls [-n NAME] [-t TYPE] [-f PASS] [-k KERNEL]``: the ops of an NPU run's GE Build graph.

Each filter is a regular expression searched in its field, case-insensitively (so a plain substring works
too; a pattern that is not a valid regular expression is taken literally); filters combine with AND.
Without any filter the command counts ops per type instead. Without a graph it lists the dumped ops by
their file names, then the exception dumps found among them (``exception_info.{stream}.{task}.{timestamp}``: the
inputs of an op that raised an AI Core error), one row each, also by name alone; with a graph one line says how
many there are.
"""
from __future__ import annotations

import re
from collections import Counter
from typing import Callable, List, Optional

from precision_tool.commands.arg_hints import GRAPH_NAME, KERNEL_NAME, OP_NAME, OP_TYPE, PASS_NAME, completes
from precision_tool.commands.options import add_run_option
from precision_tool.commands.command_registry import Command, Context
from precision_tool.commands.lookups import lookup_for, with_graph_notes, without_graph
from precision_tool.formats.dump_names import sanitize_op_name
from precision_tool.reports.report import Report
from precision_tool.reports.format import counted


def add_arguments(parser):
    completes(parser.add_argument("-n", "--name", help="op name pattern (regex or substring)"), OP_NAME)
    completes(parser.add_argument("-t", "--type", dest="op_type", help="op type pattern, e.g. Conv2D or ^Cast$"),
              OP_TYPE)
    completes(parser.add_argument("-f", "--fusion-pass", dest="fusion_pass",
                                  help="fusion pass pattern (pass_name / pass_name_ub of the op)"), PASS_NAME)
    completes(parser.add_argument("-k", "--kernel", help="kernel name pattern"), KERNEL_NAME)
    completes(parser.add_argument("-g", "--graph", default=None,
                                  help="root graph name of the Build file to read (default: the newest; CANN 8: in the "
                                       "dump's device folder)"), GRAPH_NAME)
    add_run_option(parser)


def pattern_matcher(pattern: Optional[str]) -> Optional[Callable[[str], bool]]:
    """A case-insensitive regex search for ``pattern``, or a literal substring test when it does not compile;
    ``None`` for no pattern.

    >>> pattern_matcher("conv[12]")("small_cnn/Conv1/x"), pattern_matcher("a[")("xa[y")
    (True, True)
    """
    if not pattern:
        return None
    try:
        regex = re.compile(pattern, re.IGNORECASE)
    except re.error:
        folded = pattern.lower()
        return lambda text: folded in text.lower()
    return lambda text: regex.search(text) is not None


def handle(args, ctx: Context) -> Report:
    lookup = lookup_for(ctx, args.run)
    lookup.require_workspace()
    model = lookup.graph_model(args.graph, required=False)
    notes = lookup.graph_notes  # which per-process graph folder (CANN 8) when not clear-cut; skipped entries
    scan = lookup.dump_scan(required=False)
    dumped = {op.op_name for op in scan.ops + scan.stats} if scan is not None else set()  # tensors or statistics
    if model is None:
        return without_graph(_dumped_ops_report(args, scan, lookup), notes)
    report = _graph_report(args, model, f"graph {model.root.name} ({lookup.graph_file(args.graph)})", dumped)
    exceptions = scan.exception_dumps if scan is not None else ()
    if exceptions:
        report.add_text(f"{len(exceptions)} exception dump(s) of an AI Core error under {lookup.dump_dir} (not ops): "
                        f"ov {lookup.dump_dir} lists them")
    report.data["exception_dumps"] = [ref.path for ref in exceptions]
    return with_graph_notes(report, notes)


def _graph_report(args, model, source: str, dumped) -> Report:
    filters = [(pattern_matcher(args.name), lambda op: op.name),
               (pattern_matcher(args.op_type), lambda op: op.type),
               (pattern_matcher(args.fusion_pass), lambda op: " ".join(op.pass_names)),
               (pattern_matcher(args.kernel), lambda op: op.kernel_name)]
    active = [(match, field) for match, field in filters if match is not None]
    ops = [op for _, op in model.all_ops()]
    if not active:
        return _counts_report(ops, dumped, source)
    chosen = [op for op in ops if all(match(field(op)) for match, field in active)]
    rows = [[op.id, op.name, op.type, ", ".join(op.pass_names), op.kernel_name,
             "yes" if sanitize_op_name(op.name) in dumped else "-"] for op in chosen]
    report = Report(title=f"{len(chosen)} of {counted(len(ops), 'op')} of {source}")
    report.add_table(["id", "op", "type", "fusion passes", "kernel", "dumped"], rows)
    report.data = {"graph": model.root.name, "ops": [
        {"id": op.id, "name": op.name, "type": op.type, "passes": list(op.pass_names), "kernel": op.kernel_name,
         "dumped": sanitize_op_name(op.name) in dumped} for op in chosen]}
    return report


def _counts_report(ops, dumped, source: str) -> Report:
    counts = Counter(op.type for op in ops)
    dumped_counts = Counter(op.type for op in ops if sanitize_op_name(op.name) in dumped)
    fused_counts = Counter(op.type for op in ops if op.is_fused)
    rows = [[op_type, count, dumped_counts[op_type], fused_counts[op_type]]
            for op_type, count in sorted(counts.items(), key=lambda item: (-item[1], item[0]))]
    report = Report(title=f"{counted(len(ops), 'op')} of {source}, by type")
    report.add_table(["type", "ops", "dumped", "fused"], rows)
    report.status = "filter with -n NAME, -t TYPE, -f PASS or -k KERNEL to list the ops"
    report.data = {"counts": {op_type: count for op_type, count, _, _ in rows}}
    return report


def _dumped_ops_report(args, scan, lookup) -> Report:
    from precision_tool.checks.exception_dumps import describe_exception_dumps
    from precision_tool.reports.exception_report import add_exception_dumps

    if scan is None:
        lookup.graph_model(args.graph)  # raises the "no Build graph" error with its hint
    if args.fusion_pass or args.kernel:
        lookup.graph_model(args.graph)
    name_match, type_match = pattern_matcher(args.name), pattern_matcher(args.op_type)
    rows: List[list] = [[op.op_name, op.op_type, 1 + len(op.superseded)] for op in scan.ops + scan.stats
                        if (name_match is None or name_match(op.op_name))
                        and (type_match is None or type_match(op.op_type))]
    report = Report(title=f"{len(rows)} dumped ops under {lookup.dump_dir} (no GE graph: names as in the files)")
    report.add_table(["op (file name)", "type", "dump files"], rows)
    exceptions = describe_exception_dumps(scan.exception_dumps, read_headers=False)
    add_exception_dumps(report, exceptions)
    report.data = {"graph": None, "ops": [{"name": r[0], "type": r[1], "files": r[2]} for r in rows],
                   "exception_dumps": [info.to_dict() for info in exceptions]}
    return report


COMMAND = Command(
    name="ls",
    summary="List the ops of the NPU graph, filtered by name, type, fusion pass or kernel; no filter: counts.",
    add_arguments=add_arguments,
    handler=handle,
    aliases=("list_ops",),
    epilog="Patterns are case-insensitive regular expressions (a plain substring works). Example:\n"
           "  ls -t Conv2D -f ConvBiasadd",
)
