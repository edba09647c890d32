"""``tf_dump [--run N] [-i DIR] [-o DIR] [--clean] [--list] [--alias T=A]``: a tfdbg run -> reference .npy folder.

Reads the captures under ``WORKSPACE/tf/tf_debug`` (``sess_dump`` / ``estimator_dump``: tfdbg v1 ``run_*`` folders;
``enable_reference_dump``: a tfdbg v2 folder) and writes the chosen run -- the newest by default, as the original
tool did -- as ``WORKSPACE/tf/dump/{op name'}.{output}.{timestamp}.npy``, one tensor at a time (TensorFlow is not
needed), keeping the executed graphs in ``WORKSPACE/tf/graph``. The conversion itself is
:func:`precision_tool.formats.tf_reference.convert_tfdbg_run`; this handler chooses the run, calls it and turns its
:class:`~precision_tool.formats.tf_reference.ReferenceConversion` into the report. Names, repeated outputs, aliases
and graphs: docs/internals/commands.md#tf_dump.
"""
from __future__ import annotations

import os
import time
from collections import Counter
from typing import Dict, List, Tuple

from precision_tool.commands.options import add_limit_option
from precision_tool.commands.command_registry import Command, Context
from precision_tool.config import Workspace, ensure_output_dir, new_folders_removed_on_failure
from precision_tool.errors import batch_exit_code, UsageError, WorkspaceError
from precision_tool.formats.tf_reference import ReferenceConversion, check_replaceable, convert_tfdbg_run
from precision_tool.formats.tf_reference import find_tfdbg_runs as find_runs
from precision_tool.formats.tfdbg import TfdbgRun
from precision_tool.reports.format import counted
from precision_tool.reports.report import Report

DEFAULT_SHOWN = 20  # written tensors listed by default: a 5-op Keras script writes ~180 (variable reads, ...)


def add_arguments(parser) -> None:
    parser.add_argument("--run", type=int, default=-1, metavar="N",
                        help="which run, oldest first from 0 (negative counts from the newest; default -1: newest)")
    parser.add_argument("-i", "--input", default=None, metavar="DIR",
                        help="tfdbg captures (default: WORKSPACE/tf/tf_debug), a capture folder or one run folder")
    parser.add_argument("-o", "--output", default=None, metavar="DIR",
                        help="reference folder to write (default: WORKSPACE/tf/dump)")
    parser.add_argument("--clean", action="store_true",
                        help="first delete every reference .npy file in the output folder, also those no earlier "
                             "tf_dump wrote (without it, the previous conversion's files are replaced and others "
                             "refused)")
    parser.add_argument("--list", action="store_true", help="only list the runs found, with their numbers")
    add_limit_option(parser, DEFAULT_SHOWN, "show at most N written tensors, in execution order (--json lists all)")
    parser.add_argument("--alias", action="append", default=[], metavar="TENSOR=ALIAS",
                        help="also write the written tensor TENSOR (name[:output], as in the table) under the name "
                             "ALIAS, e.g. --alias IteratorGetNext:0=image; repeatable")


def _run_time(run: TfdbgRun) -> str:
    if not run.timestamp_us:
        return "-"
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(run.timestamp_us / 1e6))


def _list_report(root: str, runs: List[TfdbgRun]) -> Report:
    rows = [[index, index - len(runs), f"v{run.version}", _run_time(run), run.path] for index, run in enumerate(runs)]
    report = Report(title=f"tfdbg runs in {root}").add_table(["run", "from newest", "tfdbg", "time", "folder"], rows)
    report.status = f"{len(runs)} run{'s' if len(runs) != 1 else ''}; tf_dump converts --run -1 (the newest) by default"
    report.data = {"root": root, "runs": [{"index": i, "version": r.version, "timestamp_us": r.timestamp_us,
                                           "path": r.path} for i, r in enumerate(runs)]}
    return report


def handle(args, ctx: Context) -> Report:
    workspace = Workspace(ctx.data_dir)
    root = args.input or workspace.tf_debug
    runs = find_runs(root)
    if args.list:
        return _list_report(root, runs)
    try:
        run = runs[args.run]
    except IndexError:
        raise WorkspaceError(f"{root}: run {args.run} does not exist "
                             f"({len(runs)} run(s); see 'tf_dump --list')") from None
    aliases = _parse_aliases(args.alias)
    out = args.output or workspace.tf_dump
    with new_folders_removed_on_failure(out, workspace.tf_graph):  # a failed conversion leaves no empty folder
        # The library only guards the run folder; the command also keeps the output out of the whole -i tree and
        # out of the workspace's other inputs.
        out_dir = ensure_output_dir(out, root, run.path, folders=_other_inputs(workspace))
        if not args.clean:
            check_replaceable(out_dir, run)  # before the graph folder is made: a refusal writes nothing
        graph_dir, graph_note = _graph_dir(workspace, run, root)
        conversion = convert_tfdbg_run(run, out_dir, clean=args.clean, aliases=aliases, graph_dir=graph_dir or None)
    return _conversion_report(conversion, _run_choice_note(runs, runs.index(run)), graph_dir, graph_note,
                              limit=args.limit)


def _other_inputs(workspace: Workspace) -> List[str]:
    """The workspace's input folders but ``tf/dump`` and ``tf/graph``, which tf_dump itself writes."""
    return [folder for folder in workspace.input_folders if folder not in (workspace.tf_dump, workspace.tf_graph)]


def _graph_dir(workspace: Workspace, run: TfdbgRun, root: str) -> Tuple[str, str]:
    """Where the run's executed graph is kept (``WORKSPACE/tf/graph``), or ``""`` and why not."""
    if run.version != 1:
        return workspace.tf_graph, ""
    try:
        return ensure_output_dir(workspace.tf_graph, root, run.path, folders=_other_inputs(workspace)), ""
    except WorkspaceError as error:
        return "", f"{error}; the graph was not kept."


def _run_choice_note(runs: List[TfdbgRun], index: int) -> str:
    """One line when the chosen run's capture folder holds several tfdbg v1 runs (one per ``Session.run``):
    which one was converted, and how to pick another. ``""`` otherwise."""
    run = runs[index]
    folder = os.path.dirname(os.path.normpath(run.path))
    siblings = [i for i, other in enumerate(runs)
                if other.version == 1 and os.path.dirname(os.path.normpath(other.path)) == folder]
    if run.version != 1 or len(siblings) < 2:
        return ""
    position = siblings.index(index)
    which = ("the newest" if position == len(siblings) - 1 else "the oldest" if position == 0
             else f"number {position + 1}")
    numbers = (f"{siblings[0]} to {siblings[-1]}" if siblings[-1] - siblings[0] == len(siblings) - 1
               else ", ".join(str(i) for i in siblings))
    return (f"Converted {os.path.basename(run.path)} (--run {index}), {which} of the {len(siblings)} runs "
            f"(Session.run calls) in {folder}; the NPU dumps the step its dump_step selects (default 0): pick the "
            f"matching run with --run N (this folder: {numbers}; tf_dump --list shows them).")


def _parse_aliases(values: List[str]) -> Dict[str, str]:
    aliases: Dict[str, str] = {}
    for value in values:
        target, sep, alias = value.partition("=")
        if not sep or not target.strip() or not alias.strip():
            raise UsageError(f"--alias {value!r}: expected TENSOR=ALIAS, e.g. --alias IteratorGetNext:0=image")
        aliases[target.strip()] = alias.strip()
    return aliases


def _conversion_report(conversion: ReferenceConversion, run_note: str = "", graph_dir: str = "",
                       graph_note: str = "", limit: int = 0) -> Report:
    run, out_dir = conversion.run, conversion.out_dir
    non_numeric = [skip.describe() for skip in conversion.non_numeric]
    failures = [skip.message for skip in conversion.failures]
    repeated = dict(conversion.repeated)
    fused = Counter(dict(conversion.fused_op_types))
    collisions = dict(conversion.name_collisions)
    written = [tensor.to_dict() for tensor in conversion.tensors]
    rows = [[t.op_name, t.output_slot, t.op_type or "-", t.dtype, str(list(t.shape)), t.file]
            for t in conversion.tensors]

    report = Report(title=f"Reference tensors: {run.path} (tfdbg v{run.version}) -> {out_dir}")
    shown = rows if limit <= 0 else rows[:limit]
    more = f" (first {len(shown)} of {len(rows)}; -l 0 lists all)" if len(shown) < len(rows) else ""
    report.add_table(["tf op", "output", "op type", "dtype", "shape", "file"], shown, title=f"Written{more}:")
    notes = [run_note] if run_note else []
    if conversion.removed:
        source = f"the previous conversion's, of {conversion.replaced_run}" if conversion.replaced_run else "--clean"
        notes.append(f"Deleted the {counted(conversion.removed, 'reference file')} {out_dir} held first ({source}): "
                     "it holds this run only.")
    if repeated:
        examples = ", ".join(f"{name} x{count}" for name, count in list(repeated.items())[:5])
        if conversion.keeps_every_execution:
            notes.append(f"{len(repeated)} op outputs were executed more than once in this run (several function "
                         f"calls, or a loop); kept every execution, the first under the op's name and the others "
                         f"as name@1, name@2, ...: {examples}.")
        else:
            notes.append(f"{len(repeated)} op outputs were dumped more than once in this run (loop, or several "
                         f"function calls); kept the last of each: {examples}.")
    if conversion.aliases:
        listed = ", ".join(f"{alias.tensor_name} = {alias.target}" for alias in conversion.aliases[:8])
        notes.append(f"Also written under {len(conversion.aliases)} other names (aliases, same values): {listed}"
                     f"{' ...' if len(conversion.aliases) > 8 else ''}.")
    notes.extend(conversion.notes)
    if graph_note:
        notes.append(graph_note)
    if fused:
        kinds = ", ".join(f"{count} {op_type}" for op_type, count in fused.most_common())
        notes.append(f"Fused ops in the reference ({kinds}): their inner TF ops have no reference. Capture with "
                     "Grappler off -- tf.Session(config=npu_tf_config.reference_session_config(config)) -- with "
                     "TF_ENABLE_ONEDNN_OPTS=0 and no XLA.")
    if collisions:
        example = next(iter(collisions.items()))
        notes.append(f"{len(collisions)} file names stand for several TF ops once '/' and '.' become '_' "
                     f"(e.g. {example[0]}: {', '.join(example[1])}).")
    if non_numeric:
        notes.append(f"Skipped {len(non_numeric)} non-numeric tensors: {', '.join(non_numeric[:5])}"
                     f"{' ...' if len(non_numeric) > 5 else ''}.")
    if notes:
        report.add_text("Notes:", *notes)
    graphs = [graph.to_dict() for graph in conversion.graphs]
    if graphs:
        report.add_text(f"Executed graph kept in {graph_dir} (GraphDef; tf/graph/index.json says whose):",
                        *(f"{g['file']}: {g['nodes']} nodes" + (f", device {g['device']}" if g["device"] else "")
                          for g in graphs))
    if failures:
        report.add_text(f"Failed ({len(failures)}):", *failures)
    resources = len(conversion.resources)
    kept = "kept all" if conversion.keeps_every_execution else "kept the last"
    report.status = (f"wrote {counted(len(written), 'tensor')} ({conversion.nbytes / 2**20:.1f} MiB); "
                     f"skipped {resources} "
                     f"resource handles and {len(non_numeric)} non-numeric tensors; {len(repeated)} op outputs "
                     f"repeated ({kept})" + (f"; {len(conversion.aliases)} aliases" if conversion.aliases else "")
                     + (f"; kept {len(graphs)} graph{'s' if len(graphs) != 1 else ''}" if graphs else "")
                     + (f"; {len(failures)} failed" if failures else ""))
    report.exit_code = batch_exit_code(False, bool(failures))  # a conversion finds nothing: failures are exit 2
    report.data = {"run": run.path, "tfdbg_version": run.version, "out_dir": out_dir, "written": len(written),
                   "bytes": conversion.nbytes, "skipped_resources": resources, "skipped_non_numeric": non_numeric,
                   "repeated": repeated, "fused_op_types": dict(fused), "name_collisions": collisions,
                   "removed": conversion.removed, "replaced_run": conversion.replaced_run or None,
                   "failures": failures, "tensors": written,
                   "aliases": [alias.to_dict() for alias in conversion.aliases], "notes": list(conversion.notes),
                   "keeps_every_execution": conversion.keeps_every_execution, "run_choice": run_note,
                   "graph_dir": graph_dir or None, "graphs": graphs}
    return report


COMMAND = Command(
    name="tf_dump",
    summary="Turn a captured TensorFlow run (tfdbg v1 or v2) into the reference .npy folder.",
    add_arguments=add_arguments,
    handler=handle,
    epilog="Output names: {op name with / and . as _}.{output}.{timestamp}.npy, as msaccucmp reads them.\n"
           "tfdbg v2 keeps every execution: op (first), op@1, op@2, ... (later calls or loop iterations in the\n"
           "same function); an op name another function ran first gets the function path: outer/inner/op.\n"
           "Aliases: weights also under the variable's name, the model input under the Keras Input name (when\n"
           "the capture wrote precision_tool_names.json), and --alias TENSOR=ALIAS. docs/capture-keras-tf2.md.\n"
           "Capture first: npu_tf_config.sess_dump(sess), estimator_dump() or enable_reference_dump().",
)
