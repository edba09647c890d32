"""``bisect fusion|precision [-c C] [--judge all|outputs] [--resume] -- COMMAND...``: from the culprit to the fix.

Parses the options, runs :func:`~precision_tool.checks.bisect_run.bisect_workspace` and prints its findings: the
culprit passes or ops, the config file that fixes it, the accuracy before and after, and the line for the training
script. Exit 0 when a fix was found and proved, 1 when no candidate set restores accuracy, 2 for unusable input or a
run that failed. The whole story: docs/commands.md#bisect.
"""
from __future__ import annotations

import argparse
import os
from typing import Any, Dict, List, Sequence

from precision_tool.checks.bisect_run import (DEFAULT_MAX_CANDIDATES, KINDS, BisectFindings, BisectRequest,
                                              bisect_workspace)
from precision_tool.checks.bisect_search import Outcome
from precision_tool.commands.command_registry import Command, Context
from precision_tool.config import Workspace
from precision_tool.errors import EXIT_FAILED_CHECK, EXIT_OK, PrecisionToolError, UsageError
from precision_tool.reports.format import counted
from precision_tool.reports.report import Report


def add_arguments(parser) -> None:
    parser.add_argument("kind", choices=KINDS, help="fusion: switch fusion passes off; precision: keep ops in float32")
    _add_options(parser)
    parser.add_argument("command", nargs=argparse.REMAINDER,
                        help="-- then the NPU run, e.g. -- precision_tool emulate model.py --fusion switch "
                             "(everything after -- is the command's)")


def _add_options(parser) -> None:
    from precision_tool.commands.options import add_cosine_option, non_negative_int

    add_cosine_option(parser, 0.99)
    parser.add_argument("--judge", choices=("all", "outputs"), default="all",
                        help="the tensors a trial is judged on: every one (all, default) or those the graph's "
                             "NetOutput reads (outputs); a trial restores accuracy when the failing run's culprit is "
                             "back within its floor and the failures the candidates explain are gone")
    parser.add_argument("--max-candidates", type=non_negative_int, default=DEFAULT_MAX_CANDIDATES, metavar="N",
                        help=f"precision: the N failing ops ranked first (default {DEFAULT_MAX_CANDIDATES}; 0 = all)")
    parser.add_argument("--resume", action="store_true",
                        help="continue the latest bisection of this kind and command (its trials are not run again)")


def split_command(args) -> List[str]:
    """The NPU command after ``--``; options written between the kind and ``--`` (argparse's REMAINDER takes
    them along) are parsed into ``args`` first. :class:`UsageError` without a command."""
    from precision_tool.commands.command_registry import CommandParser

    rest = list(args.command)
    if "--" in rest:
        cut = rest.index("--")
        head, command = rest[:cut], rest[cut + 1:]
    elif rest and rest[0].startswith("-"):
        head, command = rest, []
    else:
        head, command = [], rest
    if head:
        parser = CommandParser(prog="bisect", add_help=False)
        _add_options(parser)
        parser.parse_args(head, namespace=args)
    if not command:
        raise UsageError("bisect needs the NPU run to repeat after --", "e.g. bisect fusion -- precision_tool "
                         "emulate model.py --fusion switch")
    return command


def _same_emulation(workspace: Workspace, command: Sequence[str]) -> bool:
    """True when ``command`` repeats the emulation that wrote the workspace (its ``manifest.json``; compared as
    :func:`~precision_tool.commands.emulate.emulation_of` reads both): then the workspace's run is the command's own
    and need not be reproduced."""
    from precision_tool.commands.emulate import emulation_of, recorded_emulation

    recorded = recorded_emulation(workspace.root)
    if recorded is None or "emulate" not in command:
        return False
    try:
        return emulation_of(recorded) == emulation_of(command[list(command).index("emulate") + 1:])
    except PrecisionToolError:
        return False


def handle(args, ctx: Context) -> Report:
    command = split_command(args)
    findings = bisect_workspace(BisectRequest(
        args.kind, ctx.data_dir, tuple(command), args.cosine, args.judge, args.max_candidates, args.resume,
        own_run=_same_emulation(Workspace(ctx.data_dir), command)))
    return bisect_report(findings, ctx.data_dir)


def bisect_report(findings: BisectFindings, data_dir: str) -> Report:
    """The report of a bisection: what it found, how it was proved, and what to put in the training script."""
    from precision_tool.reports.summary import unusable_inputs, unusable_note

    kind, candidates, before = findings.kind, findings.candidates, findings.before
    culprit, culprit_ops = before.culprit, before.culprit_ops
    report = Report(title=f"bisect {kind} in {data_dir}: {counted(len(candidates), 'candidate')}, "
                          f"failing run: {before.text(culprit_ops, culprit)}")
    data: Dict[str, Any] = {"kind": kind, "candidates": candidates, "culprit": culprit or None,
                            "before": _state(before, False), "culprit_passes": [], "culprit_ops": [],
                            "config_file": None, "runs": [], "outside": []}
    unusable = unusable_inputs(findings.coverage)
    if unusable:  # the failing run is judged without them (dump or reference files): say so, naming the first
        report.add_text(f"In the failing run, {unusable_note(unusable)}")
        data["unreadable"] = [message for _, message in unusable]
    if findings.ending in ("passes", "no_candidates"):
        why = ("the workspace's run already passes (no tensor fails, no op adds error of its own): nothing to bisect"
               if before.passes else "no fusion pass fired in the failing run" if kind == "fusion" else
               "no op of the failing run's judgment computes in float16")
        report.add_text(why[0].upper() + why[1:] + ".")
        data["before"] = _state(before, before.passes)
        report.exit_code, report.status, report.data = EXIT_OK if before.passes else EXIT_FAILED_CHECK, why, data
        return report
    bisection = findings.bisection
    assert bisection is not None
    folder = bisection.folder
    data.update(folder=folder, run_budget=findings.budget)
    if findings.ending == "not_reproduced":
        nothing = findings.nothing
        assert nothing is not None
        report.add_text("The command, run with nothing changed, does not show what the workspace's failing run "
                        f"shows ({before.text(culprit_ops, culprit)}; now: {nothing.text(culprit_ops, culprit)}), "
                        f"so nothing can be bisected. Runs: {folder}")
        report.exit_code, report.status = EXIT_FAILED_CHECK, "the command does not reproduce the failure"
        data.update(runs=bisection.trials)
        report.data = data
        return report
    reproduced = findings.reproduced
    what = "passes switched off" if kind == "fusion" else "ops kept in float32"
    if findings.ending == "no_fix":
        every = findings.every
        assert every is not None
        left = every.text(culprit_ops, culprit) if culprit else f"no failing tensor is fixed: {every.text()}"
        report.add_text(f"Changing every candidate ({what}: all {len(candidates)}) does not restore accuracy "
                        f"({left}); {'fusion' if kind == 'fusion' else 'float16 precision of these ops'} is not "
                        f"the cause. Runs: {folder}")
        report.exit_code = EXIT_FAILED_CHECK
        report.status = f"no fix found in {counted(len(bisection.trials), 'run')}"
        data.update(runs=bisection.trials, failure=reproduced)
        report.data = data
        return report
    outside = findings.outside
    data.update(runs=bisection.trials, failure=reproduced, outside=outside)
    if outside:
        report.add_text(f"Outside the search: {len(outside)} tensor(s) or op(s) still fail or stand out with "
                        f"every candidate changed (first: {outside[0]}), so no candidate explains them; a trial "
                        "restores accuracy when the rest is back" + (f" and {culprit} neither fails nor adds error"
                                                                     if culprit else ""))
    if findings.ending == "unproved":
        report.add_text(f"No set of candidates restores accuracy. Runs: {folder}")
        report.exit_code, report.status, report.data = EXIT_FAILED_CHECK, "no fix found", data
        return report
    found, proof, after, config, target = findings.found, findings.proof, findings.after, findings.config, \
        findings.target
    assert after is not None and target is not None
    option = "fusion_switch_file" if kind == "fusion" else "customize_dtypes"
    lines = _script_lines(option, config)
    data.update({"culprit_passes" if kind == "fusion" else "culprit_ops": found, "config_file": config,
                 "after": _state(after, True), "script_line": lines[0], "script_lines": lines})
    noun = ("pass" if len(found) == 1 else "passes") if kind == "fusion" else ("op" if len(found) == 1 else "ops")
    change = "switching it off" if kind == "fusion" else "keeping it in float32"
    how = change if len(found) == 1 else change.replace(" it ", " them ")
    report.add_text(f"Culprit {noun}: {', '.join(found)} ({how} restores accuracy, proved by run {proof['run']}).",
                    f"Before: {before.text(culprit_ops, culprit)} (the workspace's run; {reproduced}).",
                    f"After:  {after.text(culprit_ops, culprit)}"
                    + (" (only tensors outside the search fail)." if after.failing_refs and
                       after.failing_refs <= target.outside else "."),
                    f"Config file: {config} (copy it out of temp/ to keep it)",
                    "In the training script, one of:", *("  " + line for line in lines),
                    f"{counted(len(bisection.trials), 'run')} (the search needs at most "
                    f"{findings.budget} for one culprit); every run's workspace and log: {folder}")
    if kind == "precision":
        report.add_text("customize_dtypes needs a precision_mode other than must_keep_origin_dtype "
                        "(precision_mode_v2: other than origin).")
    report.exit_code = EXIT_OK
    remaining = len(after.failing_refs & target.outside)
    report.status = f"fixed by {', '.join(found)}" + (
        f" ({counted(remaining, 'failing tensor')} outside the search remain)" if remaining else "")
    report.data = data
    return report


def _state(outcome: Outcome, restored: bool) -> Dict[str, Any]:
    return {**outcome.to_dict(), "restored": restored}


def _script_lines(option: str, config: str) -> List[str]:
    """The line giving the NPU this config: a TF1 session (``custom_op``: its NpuOptimizer), an estimator's
    NPURunConfig, TF2's npu_device options (before ``npu.open()``)."""
    path = os.path.abspath(config)
    return [f'custom_op.parameter_map["{option}"].s = tf.compat.as_bytes("{path}")',
            f'NPURunConfig(..., {option}="{path}")',
            f'npu.global_options().{option} = "{path}"']


COMMAND = Command(
    name="bisect",
    summary="Find the fusion pass or the ops in fp16 that cost accuracy by re-running the NPU run; write the fix.",
    add_arguments=add_arguments,
    handler=handle,
    epilog="Example: precision_tool -d ws bisect fusion -- precision_tool emulate model.py --fusion switch",
)
