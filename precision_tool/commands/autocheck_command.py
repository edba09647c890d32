"""``ac [-c] [-l N] [--cosine C] [-o OUT_DIR]``: overflow, fusion and (with ``-c``) the comparison, then a verdict.

The checks are :mod:`precision_tool.checks.autocheck`'s, the verdict :mod:`precision_tool.checks.run_verdict`'s: the
most likely culprit and the next commands, as typed in the shell, or as whole ``precision_tool -d WORKSPACE ...``
lines when run from a terminal. With ``-c`` the results go where ``compare`` writes them (or to ``-o``), and on a
dump tree of several steps the other steps are compared too (:func:`precision_tool.checks.autocheck.compare_steps`;
not with ``--step N``). Exit codes: with ``-c`` as ``compare`` (1 when a tensor fails in any step compared);
without, 1 when an overflow or a fusion culprit was found, else 0; 2 for a folder that is not a workspace, and for
``-o`` or ``--html`` inside one of its input folders (refused before anything runs). See docs/commands.md#ac.
"""
from __future__ import annotations

import dataclasses
import os
import shlex
import sys
import time
from typing import List

from precision_tool.commands.command_registry import Command, Context
from precision_tool.errors import UsageError


def add_arguments(parser):
    from precision_tool.checks.autocheck import DEFAULT_LIMIT
    from precision_tool.commands.options import (add_cluster_option, add_cosine_option, add_fusion_rule_options,
                                                 add_limit_option, add_output_dir_option, add_workers_option)
    from precision_tool.metrics import DEFAULT_COSINE_THRESHOLD

    parser.add_argument("-c", "--compare", action="store_true",
                        help="also compare npu/debug_0 with tf/dump and find the first divergence")
    add_limit_option(parser, DEFAULT_LIMIT, "detail the first N overflow records and list at most N rows per table")
    add_cosine_option(parser, None, default_text=f"{DEFAULT_COSINE_THRESHOLD:g}", short=False,
                      help_tail=" (used with -c; here -c is --compare)")
    parser.unrecognized_hint = _threshold_hint
    add_output_dir_option(parser, "with -c: result_{timestamp}.csv and summary.json",
                          "WORKSPACE/temp/vector_compare/{timestamp}")
    add_workers_option(parser, "with -c: ")
    add_cluster_option(parser, "with -c: ")
    parser.add_argument("--no-replay", dest="replay", action="store_false",
                        help="with -c: do not replay the compared ops on their own dumped inputs (replay needs "
                             "tf/graph and TensorFlow; without it each op is judged by its error jump)")
    parser.add_argument("--html", default=None, metavar="FILE",
                        help="with -c: also write the HTML report (verdict, plot, failing tensors, table) to FILE")
    add_fusion_rule_options(parser)
    parser.add_argument("--dump-budget", default=None, metavar="SIZE",
                        help="with -c on a statistics run (dump_data='stats'): the bytes the suggested dump_layer's "
                             "full dump may take, e.g. 512M or 2G (default 1G)")


# ac's options that only the comparison uses: (flag, argument name, its value when not given)
COMPARE_ONLY = (("--cosine", "cosine", None), ("-o", "out_dir", None), ("--workers", "workers", None),
                ("--no-replay", "replay", True), ("--html", "html", None), ("--dump-budget", "dump_budget", None),
                ("--cluster", "cluster", None))


def _threshold_hint(unrecognized) -> "str | None":
    """``ac -c 0.98`` (``vcs``'s ``-c``): say that ``ac`` spells the threshold ``--cosine``."""
    for token in unrecognized:
        try:
            value = float(token)
        except ValueError:
            continue
        if -1.0 <= value <= 1.0:
            return f"here -c is --compare; the cosine threshold is --cosine: 'ac -c --cosine {token}'"
    return None


def _refuse_compare_options_without_compare(args) -> None:
    given = [flag for flag, name, absent in COMPARE_ONLY if getattr(args, name) != absent]
    if given and not args.compare:
        raise UsageError(f"ac: {given[0]} applies to the comparison, which ac runs only with -c",
                         f"run 'ac -c {given[0]} ...', or leave {given[0]} out")


def handle(args, ctx: Context):
    from precision_tool.checks.autocheck import AutocheckOptions, run_autocheck
    from precision_tool.config import Workspace
    from precision_tool.comparison import terminal_progress
    from precision_tool.reports.autocheck_report import autocheck_report
    from precision_tool.reports.result_outputs import (OutputPaths, plan_outputs, workspace_result_folder,
                                                       write_outputs)

    from precision_tool.checks.stats_check import DEFAULT_BUDGET, parse_size
    from precision_tool.comparison.cluster import cluster_address
    from precision_tool.metrics import DEFAULT_COSINE_THRESHOLD

    _refuse_compare_options_without_compare(args)
    budget = DEFAULT_BUDGET if args.dump_budget is None else parse_size(args.dump_budget)
    if args.cosine is None:
        args.cosine = DEFAULT_COSINE_THRESHOLD
    _check_outputs(args, ctx)
    started = time.perf_counter()
    options = AutocheckOptions(compare=args.compare, limit=args.limit, cosine=args.cosine, workers=args.workers,
                               fusion_floor=args.fusion_floor, fusion_growth=args.fusion_growth, replay=args.replay,
                               npu_run=_emulated_run(ctx.data_dir), selection=ctx.selection, dump_budget=budget,
                               cluster=cluster_address(args.cluster) if args.compare else "")
    planned: List[OutputPaths] = []  # the one set of result names, taken once the comparison is made

    def plan(result) -> str:
        """Take the result's output names where ``compare`` would (written once the verdict is decided, which
        the summary keeps); name the folder when it was ``-o``'s."""
        if not planned:
            planned.append(plan_outputs(args.out_dir, workspace_result_folder(ctx.data_dir),
                                        [path for path in result.inputs.values() if path],
                                        folders=Workspace(ctx.data_dir).input_folders))
        return planned[0].folder if args.out_dir else ""

    def write_before_replay(result) -> None:
        """The comparison, written before the replay starts (then again with the replay and the verdict): an
        interrupted replay loses nothing compared."""
        plan(result)
        write_outputs(result, planned[0])
        if progress is not None:  # a terminal: progress is shown there, this line too (not in a pipe's output)
            progress.close()  # the comparison's bar is full: the line below goes under it
            print(f"ac: comparison written to {planned[0].csv}; replaying the compared ops (Ctrl-C keeps it)",
                  file=sys.stderr, flush=True)

    progress = terminal_progress("ac: compare") if args.compare else None
    try:
        result = run_autocheck(ctx.data_dir, options, progress, on_compared=plan, before_replay=write_before_replay)
    except KeyboardInterrupt:
        if planned:
            print(f"ac: interrupted during the replay; the comparison without it is in {planned[0].csv}",
                  file=sys.stderr, flush=True)
        raise
    finally:
        if progress is not None:
            progress.close()
    exit_code = result.exit_code()
    result = dataclasses.replace(result, verdict=with_selection_flags(result.verdict, ctx.selection))
    if planned and result.compare is not None and result.compare.result is not None:
        write_outputs(result.compare.result, planned[0], total_s=time.perf_counter() - started,
                      verdict=result.verdict.to_dict(), exit_code=exit_code)
    paths = planned[0] if planned else None
    html = None
    if args.html and paths is not None:
        from precision_tool.reports.html import findings_from_autocheck, write_run_report

        html = write_run_report(paths.csv, args.html, findings=findings_from_autocheck(result, args.limit),
                                selection=ctx.selection)
    prefix = "" if ctx.interactive else f"precision_tool -d {shlex.quote(ctx.data_dir)}"
    second_run = _layer_run(ctx.data_dir, result.statistics)
    stored = _store_statistics(args, ctx, result, exit_code, second_run)
    report = autocheck_report(result, limit=args.limit, paths=paths, exit_code=exit_code,
                              elapsed_s=time.perf_counter() - started, command_prefix=prefix, second_run=second_run,
                              stored_statistics=stored)
    if args.html and result.statistics is not None:
        report.add_text(f"--html: no HTML report of a statistics run ({args.html} not written): it holds no tensor "
                        "to plot or replay; 'ac -c --html' on the full dump of the suspects writes one")
    if second_run:
        report.data["statistics"]["dump_layer"]["emulate"] = second_run
    if html:
        report.add_text(f"HTML report: {html}")
        report.data["html"] = os.path.abspath(html)
    return report


def with_selection_flags(verdict, asked):
    """``verdict`` whose next commands that read dumps or results carry the ``--step``/``--device`` this ``ac`` was
    given (a user walk found ``ac -c --device 1`` suggesting ``ni OP``, which shows device 0's dumps); ``bisect``
    runs the training again and takes none (``asked``: the selection this ``ac`` read)."""
    from precision_tool.commands import DUMP_READERS

    flags = "".join(f" --{name} {value}" for name, value in (("step", asked.step), ("device", asked.device))
                    if value is not None)
    if not flags:
        return verdict
    commands = tuple(command + flags if command.split(" ", 1)[0] in DUMP_READERS else command
                     for command in verdict.next_commands)
    return dataclasses.replace(verdict, next_commands=commands)


def _store_statistics(args, ctx: Context, result, exit_code: int, second_run: str) -> str:
    """Write a statistics run's judgment where ``compare`` would write its result, for ``vcs``, ``ni`` and
    ``report`` -- a judgment that could not be made too, so that they never show an older one; its path, or ``""``
    for a run that is not a statistics run."""
    if result.statistics is None:
        return ""
    from precision_tool.reports.result_outputs import timestamp, workspace_result_folder
    from precision_tool.reports.stats_store import write_statistics

    stamp = timestamp()
    folder = args.out_dir or os.path.join(workspace_result_folder(ctx.data_dir), stamp)
    return write_statistics(folder, stamp, result.statistics, result.verdict, exit_code, second_run)


def _layer_run(data_dir: str, statistics) -> str:
    """For an emulated statistics run with a ``dump_layer`` plan, the ``emulate`` line of its second pass."""
    if statistics is None or statistics.plan is None or not statistics.plan.ops:
        return ""
    from precision_tool.commands.emulate import layer_run_command

    return layer_run_command(data_dir, statistics.plan.value)


def _emulated_run(data_dir: str) -> str:
    """For a workspace ``emulate`` wrote (its ``manifest.json``), the command that repeats it for ``bisect``;
    ``""`` otherwise (the suggestion then names the user's own NPU run)."""
    from precision_tool.commands.emulate import emulate_command_line, recorded_emulation

    arguments = recorded_emulation(data_dir)
    return emulate_command_line(arguments) if arguments is not None else ""


def _check_outputs(args, ctx: Context) -> None:
    """Refuse ``-o`` and ``--html`` inside the workspace's input folders before anything runs (the result's own
    inputs are checked again when it is written)."""
    from precision_tool.config import Workspace, check_output_dir, check_output_file

    inputs = Workspace(ctx.data_dir).input_folders
    if args.out_dir:
        check_output_dir(args.out_dir, folders=inputs)
    if args.html:
        check_output_file(args.html, folders=inputs)


COMMAND = Command(
    name="ac",
    summary="Auto-check: overflow, fusion and (-c) the comparison with the reference, then the likely culprit.",
    add_arguments=add_arguments,
    handler=handle,
    aliases=("auto_check",),
    epilog=("Exit codes: with -c as compare (0 all tensors pass, 1 one fails, 2 nothing compared); without -c, 1 "
            "when an overflow or a fusion culprit is found, else 0.\n"
            "Steps and devices: of an NPU dump tree holding several, one step of one device is read (the newest "
            "step of the lowest device, or --step N --device N). With -c and several steps of the device, the "
            "other steps are compared too (no files, no replay; not with --step) and the first diverging step is "
            "named; it fails the check like a failing tensor.\n"
            "Example: precision_tool -d precision_data ac -c -l 10"),
)
