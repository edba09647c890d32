"""``bisect fusion|precision [-c C] [--judge all|outputs] [--resume] -- COMMAND...``: from the culprit to the fix.

The workspace (``-d``) holds the failing NPU run (``npu/debug_0``: dumps and Build graph) and the reference
(``tf/dump``). ``COMMAND`` is that NPU run again -- the training script with ``action='dump|fusion_switch'``, or
``precision_tool emulate MODEL.py --fusion switch`` without an NPU -- run once per trial in a fresh process (the
NPU reads these options once per process: ``../shared/docs/ascend-precision-config.md`` §0), with
``PRECISION_TOOL_DATA`` set to the trial's own workspace ``WORKSPACE/temp/bisect/{kind}_{time}/run_N``, where the
candidate configuration is written first; every trial is compared with the workspace's own reference, and a trial
that computes another model (other weights, other TF ops: an argument or environment variable left out) is an
error, not a verdict:

* ``fusion``: candidates are the fusion passes that fired in the failing run (its graph's ``pass_name`` /
  ``pass_name_ub`` attributes, then ``fusion/fusion_result.json``), those that made its culprit first; a trial
  switches some off in ``run_N/fusion/fusion_switch.cfg``, the file ``action='fusion_switch'`` points the NPU at;
* ``precision``: candidates are the ops of the failing run's judgment that compute in float16 -- its culprit
  first, then the other ops that stand out or exceed their floor, then the other ops with a failing tensor by
  local error over its floor, then in execution order (``--max-candidates``, 16); a trial keeps some in float32
  with ``run_N/precision/customize_dtypes.cfg`` lines (by op *name*; ``modify_mixlist`` works by type only).

The failing run and each trial's NPU run are compared with the reference and replayed as ``ac -c`` does
(:func:`~precision_tool.checks.autocheck.compare_workspace`: one pipeline, one judgment). A trial restores accuracy
when the culprit is gone -- no op implementing its TF ops fails or adds error, whatever fusion made of them -- and
it fails nowhere the run with every candidate changed does not (:class:`~precision_tool.checks.bisect_search.Target`;
``--judge outputs`` counts only the tensors the graph's NetOutput reads); failures every trial keeps are named once
as outside the search. The search is
:func:`~precision_tool.checks.bisect_search.bisect`: at most ``ceil(log2(candidates)) + 2`` runs for one culprit. Every
trial is recorded in ``state.json`` beside the runs; ``--resume`` continues the latest bisection of the same kind
and command. The report names the culprit passes or ops, the config file that fixes it, the accuracy before and
after (the run with only that config: the proof), and the line to put in the training script. Exit 0 when a fix was
found and proved, 1 when no candidate set restores accuracy, 2 for unusable input or a run that failed.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from typing import Any, Callable, Dict, FrozenSet, List, Optional, Sequence, Tuple

from precision_tool.checks.bisect_search import RENAMED_SHARE, Outcome, another_model, same_ops
from precision_tool.commands.command_registry import Command, Context
from precision_tool.config import ENV_DATA_DIR, Workspace
from precision_tool.errors import EXIT_FAILED_CHECK, EXIT_OK, PrecisionToolError, UsageError, WorkspaceError
from precision_tool.formats.customize_dtypes import is_half, widened
from precision_tool.process_env import user_environment
from precision_tool.reports.format import counted
from precision_tool.reports.report import Report
from precision_tool.metrics.tensor_verdict import threshold_text

KINDS = ("fusion", "precision")
DEFAULT_MAX_CANDIDATES = 16
STATE_NAME = "state.json"


class BisectError(PrecisionToolError):
    """A trial's run failed or gave nothing to compare."""


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


# --------------------------------------------------------------------------------------------- judging
@dataclass(frozen=True)
class ComparedRun:
    """One NPU run compared with the reference, and the ops of the Build graph the comparison read (``()``
    without a graph): the candidates and the honoured-config check come from the same parse."""

    result: Any
    ops: Tuple[Any, ...]


def compare_run(run_root: str, reference: str, cosine: float, tf_graph: Optional[str] = None) -> ComparedRun:
    """The NPU run in ``run_root`` (``npu/debug_0``, its Build graph when there is one) compared with
    ``reference`` and replayed from ``tf_graph`` (default the run's own ``tf/graph``) as ``ac -c`` does."""
    from precision_tool.alignment.npu_side import graphs_of
    from precision_tool.checks.autocheck import compare_workspace

    run = Workspace(run_root)
    if not os.path.isdir(run.npu_dump(0)):
        raise BisectError(f"{run.npu_dump(0)}: the run wrote no NPU dump", "the command must dump into the "
                          f"workspace ${ENV_DATA_DIR} names (action='dump...', or precision_tool emulate)")
    section = compare_workspace(run, cosine, replay=True, reference=reference, tf_graph=tf_graph)
    if section.result is None:
        raise BisectError(f"{run_root}: {section.error}", "the run must dump ops the reference holds")
    return ComparedRun(section.result, tuple(op for g in graphs_of(section.graph) for op in g.ops))


def outcome_of(result, scope: str) -> Outcome:
    """:class:`~precision_tool.checks.bisect_search.Outcome` over every compared tensor of ``result`` (``all``) or
    those of the ops NetOutput reads (``outputs``)."""
    if scope == "outputs":
        return Outcome.of(result, _netoutput_producers(result.facts.data_inputs))
    return Outcome.of(result)


def _netoutput_producers(data_inputs) -> set:
    """The ops whose outputs the graph's NetOutput op reads (GE names it ``Node_Output`` / type NetOutput)."""
    return {producer for op, edges in data_inputs.items() if op.endswith("Node_Output") or op == "NetOutput"
            for producer, _ in edges}


# --------------------------------------------------------------------------------------------- candidates
def pass_families(workspace: Workspace, ops: Sequence[Any]) -> Dict[str, str]:
    """``{pass: "graph_fusion" | "ub_fusion"}`` of the failing run (``ops``: its Build graph's), in execution order,
    then any other pass ``fusion_result.json`` says took effect: ``pass_name`` attributes are graph fusion,
    ``pass_name_ub`` UB fusion, as are fusion_result.json's sections."""
    from precision_tool.formats.fusion_result import GRAPH_FUSION, UB_FUSION, read_fusion_result
    from precision_tool.formats.ge_graph import PASS_NAME_UB

    families: Dict[str, str] = {}
    for op in ops:
        ub = str(op.attrs.get(PASS_NAME_UB) or "")
        for name in op.pass_names:
            families.setdefault(name, UB_FUSION if name == ub else GRAPH_FUSION)
    if os.path.isfile(workspace.fusion_result):
        result = read_fusion_result(workspace.fusion_result)
        for family in (GRAPH_FUSION, UB_FUSION):
            for name in result.effective_passes(family):
                families.setdefault(name, family)
    return families


def precision_candidates(ops: Sequence[Any], baseline, limit: int) -> List[Tuple[str, Tuple[str, ...],
                                                                              Tuple[str, ...]]]:
    """``(op, input dtypes, output dtypes)`` to keep in float32, from the failing run's judgment (``baseline``, a
    judged comparison): ops that compute in float16 (a float16 input or output in the Build graph; not the
    Cast/TransData ops GE inserts) -- the culprit first, then the other ops that stand out, then those above their
    floor (largest first), then the other ops with a failing tensor (below-noise tensors pass) by local error over
    its floor, then in execution order; at most ``limit`` (0 = all). ``ops``: the failing run's Build graph's."""
    from precision_tool.comparison.attribution import ratio_of

    descs = {}
    for op in ops:
        dtypes = [d.dtype for d in op.input_descs] + [d.dtype for d in op.output_descs]
        if op.type in ("Cast", "TransData") or not any(is_half(d) for d in dtypes):
            continue
        descs[op.name] = (widened([d.dtype for d in op.input_descs]), widened([d.dtype for d in op.output_descs]))
    judgment = baseline.verdict
    attribution = judgment.attribution
    first = [judgment.culprit.op_name] if judgment.culprit is not None else []
    standouts = [op.op_name for op in attribution.standouts]
    above = [op.op_name for op in sorted(attribution.above_floor, key=lambda op: -(op.score or 0.0))]
    failing: Dict[str, float] = {}
    for row in baseline.results:
        if row.kind == "output" and row.failed:
            failing[row.op_name] = max(failing.get(row.op_name, -1.0), ratio_of(row) or -1.0)
    order = {name: k for k, name in enumerate(baseline.facts.order)}
    ranked = sorted(failing, key=lambda name: (-failing[name], order.get(name, 1 << 30)))
    chosen = [name for name in dict.fromkeys(first + standouts + above + ranked) if name in descs]
    return [(name, *descs[name]) for name in (chosen if limit <= 0 else chosen[:limit])]


# --------------------------------------------------------------------------------------------- trials
@dataclass
class Bisection:
    """One bisection's folder, command and candidates, and the trial runner."""

    kind: str
    folder: str
    command: List[str]
    candidates: List[str]
    families: Dict[str, str]
    dtypes: Dict[str, Tuple[Tuple[str, ...], Tuple[str, ...]]]
    reference: str
    tf_graph: str
    cosine: float
    scope: str
    trials: List[Dict[str, Any]]
    culprit: str = ""
    culprit_ops: FrozenSet[str] = frozenset()
    computed: FrozenSet[str] = frozenset()
    judge_trial: Optional[Callable[[Outcome], bool]] = None
    """Whether an outcome restores accuracy, once the target is known (None before: the run is only measured)."""

    def outcomes(self) -> Dict[FrozenSet[str], Outcome]:
        """Every recorded trial's outcome by the set it changed (trials of an older state file, without the
        judgment's figures, are left out: they run again)."""
        return {frozenset(trial["changed"]): Outcome.from_dict(trial) for trial in self.trials
                if "failing_ops" in trial}

    def outcome(self, changed: Sequence[str]) -> Outcome:
        """The outcome of the run with ``changed`` changed: recorded, else run now."""
        known = self.outcomes().get(frozenset(changed))
        return known if known is not None else self.run(sorted(changed))

    def mark(self, restored: Callable[[Outcome], bool]) -> None:
        """Record, for every trial, whether it restored accuracy (``restored``), and keep judging new ones so."""
        self.judge_trial = restored
        for trial in self.trials:
            if "failing_ops" in trial:
                trial["restored"] = bool(restored(Outcome.from_dict(trial)))
        self.save()

    def write_config(self, root: str, changed: Sequence[str]) -> str:
        """The candidate configuration in the trial workspace ``root``; returns the file written."""
        from precision_tool.formats.customize_dtypes import write_customize_dtypes
        from precision_tool.formats.fusion_result import GRAPH_FUSION, FusionSwitches, write_fusion_switches

        workspace = Workspace(root)
        if self.kind == "fusion":
            graph = {name: False for name in changed if self.families.get(name, GRAPH_FUSION) == GRAPH_FUSION}
            ub = {name: False for name in changed if name not in graph}
            os.makedirs(os.path.dirname(workspace.fusion_switch), exist_ok=True)
            write_fusion_switches(FusionSwitches(graph, ub), workspace.fusion_switch)
            return workspace.fusion_switch
        return write_customize_dtypes(workspace.customize_dtypes, [(name, *self.dtypes[name]) for name in changed])

    def next_number(self) -> int:
        """One more than any run folder here (a run interrupted before it was recorded keeps its folder)."""
        numbers = [int(name[4:]) for name in os.listdir(self.folder)
                   if name.startswith("run_") and name[4:].isdigit()]
        return max(numbers + [len(self.trials)]) + 1

    def run(self, changed: Sequence[str]) -> Outcome:
        number = self.next_number()
        root = os.path.abspath(os.path.join(self.folder, f"run_{number}"))
        os.makedirs(root)
        self.write_config(root, changed)
        log = root + ".log"
        started = time.perf_counter()
        env = user_environment(**{ENV_DATA_DIR: root})
        with open(log, "wb") as handle:
            try:
                code = subprocess.run(self.command, env=env, stdin=subprocess.DEVNULL, stdout=handle,
                                      stderr=subprocess.STDOUT).returncode
            except OSError as error:
                raise BisectError(f"run {number}: cannot start {self.command[0]!r} ({error.strerror or error})",
                                  self.resume_hint()) from None
        if code != 0:
            raise BisectError(f"run {number}: the command exited {code}: {_last_line(log)} (its output: {log})",
                              self.resume_hint())
        compared = compare_run(root, self.reference, self.cosine, self.tf_graph)  # the failing run's reference
        self.check_honoured(number, compared.ops, changed)
        outcome = outcome_of(compared.result, self.scope)
        self.check_same_run(number, compared.result, outcome)
        seconds = time.perf_counter() - started
        restored = None if self.judge_trial is None else bool(self.judge_trial(outcome))
        self.trials.append({"run": number, "changed": list(changed), "folder": root, "seconds": round(seconds, 2),
                            **outcome.to_dict(), "restored": restored})
        self.save()
        what = "off" if self.kind == "fusion" else "in float32"
        shown = ", ".join(changed[:3]) + (f" (+{len(changed) - 3} more)" if len(changed) > 3 else "")
        verdict = "measured" if restored is None else "restored" if restored else "still failing"
        print(f"bisect {self.kind}: run {number}: {what}: {shown or 'nothing'} -> {verdict} "
              f"({outcome.text(self.culprit_ops, self.culprit)} at cosine {threshold_text(self.cosine)}); "
              f"{seconds:.1f} s",
              file=sys.stderr, flush=True)
        return outcome

    def check_same_run(self, number: int, result, outcome: Outcome) -> None:
        """:class:`BisectError` when the run computes another model than the failing run: its inputs are another
        model's (:mod:`precision_tool.comparison.same_model`), or its NPU ops implement other TF ops (an argument
        or an environment variable of the script left out) -- instead of a verdict on another model."""
        from precision_tool.comparison.same_model import mismatch_lines

        if not result.verdict.same_model:
            raise BisectError(f"run {number}: {mismatch_lines(result.verdict.mismatches)[0]}", self.same_run_hint())
        missing, extra = same_ops(self.computed, outcome.computed) if self.computed else ([], [])
        if not (missing or extra):
            return
        what = "; ".join(part for part in (
            f"{len(missing)} TF op(s) of the failing run missing (first: {missing[0]})" if missing else "",
            f"{len(extra)} other TF op(s) (first: {extra[0]})" if extra else "") if part)
        if another_model(self.computed, outcome.computed):
            raise BisectError(f"run {number}: the command does not compute the failing run's model: {what}",
                              self.same_run_hint())
        print(f"bisect {self.kind}: run {number}: {what}: taken for renamed ops (at most "
              f"{RENAMED_SHARE:.0%} of {len(self.computed)})", file=sys.stderr, flush=True)

    def same_run_hint(self) -> str:
        return ("the command must repeat the failing run: the same script, arguments and environment variables "
                "(emulate's manifest.json records no environment)")

    def check_honoured(self, number: int, ops: Sequence[Any], changed: Sequence[str]) -> None:
        """:class:`BisectError` when the run (``ops``: its Build graph's) ignored its configuration -- a pass switched
        off still fired, an op kept in float32 still has a float16 output -- instead of a wrong "not the cause"."""
        if not ops:
            return  # no Build graph to check against
        if self.kind == "fusion":
            fired = sorted({name for op in ops for name in op.pass_names} & set(changed))
            if fired:
                raise BisectError(f"run {number}: the NPU run did not read the switch file: {', '.join(fired)} still "
                                  f"fired", "the run must take WORKSPACE/fusion/fusion_switch.cfg: "
                                  "action='dump|fusion_switch' in the training script, --fusion switch for emulate")
            return
        kept = set(changed)
        half = sorted(op.name for op in ops if op.name in kept
                      and any(is_half(d.dtype) for d in op.output_descs))
        if half:
            raise BisectError(f"run {number}: the NPU run did not read customize_dtypes: {', '.join(half[:3])} still "
                              f"output float16", "the run must take WORKSPACE/precision/customize_dtypes.cfg (any "
                              "capture action passes it; emulate reads it) and a precision_mode other than "
                              "must_keep_origin_dtype")

    def resume_hint(self) -> str:
        return f"every finished run is in {os.path.join(self.folder, STATE_NAME)}; --resume continues from there"

    def save(self) -> None:
        from precision_tool.fileio import atomic_write

        with atomic_write(os.path.join(self.folder, STATE_NAME), "w") as handle:
            json.dump({"kind": self.kind, "command": self.command, "candidates": self.candidates,
                       "cosine": self.cosine, "judge": self.scope, "trials": self.trials}, handle, indent=1)


def _resumed(base: str, kind: str, command: List[str], candidates: List[str], cosine: float,
             scope: str) -> Optional[Tuple[str, list]]:
    """The latest bisection folder under ``base`` of this kind, command, candidates, threshold and judge, with its
    trials."""
    if not os.path.isdir(base):
        return None
    names = [name for name in os.listdir(base) if name.startswith(kind + "_")]
    for name in sorted(names, key=lambda n: os.path.getmtime(os.path.join(base, n)), reverse=True):
        path = os.path.join(base, name, STATE_NAME)
        try:
            with open(path, encoding="utf-8") as handle:
                state = json.load(handle)
        except (OSError, ValueError):
            continue
        if (state.get("command"), state.get("candidates"), state.get("cosine"), state.get("judge")) == (
                command, candidates, cosine, scope):
            return os.path.join(base, name), list(state.get("trials", []))
    return None


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


# --------------------------------------------------------------------------------------------- command
def handle(args, ctx: Context) -> Report:
    from precision_tool.checks.bisect_search import Target, Trials, bisect, reproduces, trial_budget
    from precision_tool.reports.summary import unusable_inputs, unusable_note

    command = split_command(args)
    workspace = Workspace(ctx.data_dir)
    workspace.require_root()
    for needed in (workspace.npu_dump(0), workspace.tf_dump):
        if not os.path.isdir(needed):
            raise WorkspaceError(f"{needed}: no such folder", "bisect starts from a workspace holding the failing "
                                 "NPU run (npu/debug_0) and the reference (tf/dump)")
    failing_run = compare_run(ctx.data_dir, workspace.tf_dump, args.cosine, workspace.tf_graph)  # judged, ranked
    baseline = failing_run.result
    before = outcome_of(baseline, args.judge)
    if before.judged == 0:
        raise BisectError(f"{workspace.npu_dump(0)}: no tensor to judge ({args.judge})",
                          "--judge outputs needs the Build graph's NetOutput; try --judge all")
    if not baseline.verdict.same_model:
        from precision_tool.comparison.same_model import mismatch_lines

        raise BisectError(f"{ctx.data_dir}: {mismatch_lines(baseline.verdict.mismatches)[0]}",
                          "bisect compares runs of the same model: fix the reference first")
    culprit, culprit_ops = before.culprit, before.culprit_ops
    families: Dict[str, str] = {}
    dtypes: Dict[str, Tuple[Tuple[str, ...], Tuple[str, ...]]] = {}
    if args.kind == "fusion":
        families = pass_families(workspace, failing_run.ops)
        made_culprit = [name for op in failing_run.ops if op.name == culprit for name in op.pass_names]
        candidates = list(dict.fromkeys(made_culprit + list(families)))  # the passes that made the culprit first
    else:
        chosen = precision_candidates(failing_run.ops, baseline, args.max_candidates)
        candidates = [name for name, _, _ in chosen]
        dtypes = {name: (inputs, outputs) for name, inputs, outputs in chosen}
    report = Report(title=f"bisect {args.kind} in {ctx.data_dir}: {counted(len(candidates), 'candidate')}, "
                          f"failing run: {before.text(culprit_ops, culprit)}")
    data: Dict[str, Any] = {"kind": args.kind, "candidates": candidates, "culprit": culprit or None,
                            "before": _state(before, False), "culprit_passes": [], "culprit_ops": [],
                            "config_file": None, "runs": [], "outside": []}
    unusable = unusable_inputs(baseline.facts.coverage)
    if unusable:  # the failing run is judged without them (dump or reference files): say so, naming the first
        report.add_text(f"In the failing run, {unusable_note(unusable)}")
        data["unreadable"] = [message for _, message in unusable]
    if before.passes or not candidates:
        why = ("the workspace's run already passes (no tensor fails, no op adds error of its own): nothing to bisect"
               if before.passes else "no fusion pass fired in the failing run" if args.kind == "fusion" else
               "no op of the failing run's judgment computes in float16")
        report.add_text(why[0].upper() + why[1:] + ".")
        data["before"] = _state(before, before.passes)
        report.exit_code, report.status, report.data = EXIT_OK if before.passes else EXIT_FAILED_CHECK, why, data
        return report
    base = os.path.join(workspace.temp, "bisect")
    resumed = _resumed(base, args.kind, command, candidates, args.cosine, args.judge) if args.resume else None
    if resumed is not None:
        folder, trials = resumed
    else:
        os.makedirs(base, exist_ok=True)
        folder = tempfile.mkdtemp(prefix=f"{args.kind}_{time.strftime('%Y%m%d%H%M%S')}_", dir=base)
        trials = []
    bisection = Bisection(args.kind, folder, command, candidates, families, dtypes, workspace.tf_dump,
                          workspace.tf_graph, args.cosine, args.judge, trials, culprit, culprit_ops,
                          before.computed)
    bisection.save()
    data.update(folder=folder, run_budget=trial_budget(len(candidates)))
    reproduced = "this command's own, by its manifest.json"
    if not _same_emulation(workspace, command):
        nothing = bisection.outcome([])  # the command, nothing changed: it must fail as the workspace's run did
        if not reproduces(before, nothing):
            bisection.mark(lambda outcome: not reproduces(before, outcome))
            report.add_text("The command, run with nothing changed, does not show what the workspace's failing run "
                            f"shows ({before.text(culprit_ops, culprit)}; now: {nothing.text(culprit_ops, culprit)}), "
                            f"so nothing can be bisected. Runs: {folder}")
            report.exit_code, report.status = EXIT_FAILED_CHECK, "the command does not reproduce the failure"
            data.update(runs=bisection.trials)
            report.data = data
            return report
        reproduced = f"reproduced by run {_run_of(bisection, [])}"
    every = bisection.outcome(candidates)
    target = Target.of(before, every)
    what = "passes switched off" if args.kind == "fusion" else "ops kept in float32"
    if target is None:
        bisection.mark(lambda outcome: False)
        left = every.text(culprit_ops, culprit) if culprit else f"no failing tensor is fixed: {every.text()}"
        report.add_text(f"Changing every candidate ({what}: all {len(candidates)}) does not restore accuracy "
                        f"({left}); {'fusion' if args.kind == 'fusion' else 'float16 precision of these ops'} is not "
                        f"the cause. Runs: {folder}")
        report.exit_code = EXIT_FAILED_CHECK
        report.status = f"no fix found in {counted(len(bisection.trials), 'run')}"
        data.update(runs=bisection.trials, failure=reproduced)
        report.data = data
        return report
    bisection.mark(target.restores)
    memo = Trials(lambda changed: target.restores(bisection.outcome(changed)),
                  {key: target.restores(outcome) for key, outcome in bisection.outcomes().items()})
    found = bisect(candidates, memo)
    outside = sorted(target.outside)
    data.update(runs=bisection.trials, failure=reproduced, outside=outside)
    if outside:
        report.add_text(f"Outside the search: {len(outside)} tensor(s) or op(s) still fail or stand out with "
                        f"every candidate changed (first: {outside[0]}), so no candidate explains them; a trial "
                        "restores accuracy when the rest is back" + (f" and {culprit} neither fails nor adds error"
                                                                     if culprit else ""))
    if found is None:  # the proof of a minimal set failed: cannot happen with a monotone search, said all the same
        report.add_text(f"No set of candidates restores accuracy. Runs: {folder}")
        report.exit_code, report.status, report.data = EXIT_FAILED_CHECK, "no fix found", data
        return report
    proof = next(t for t in reversed(bisection.trials) if sorted(t["changed"]) == sorted(found))
    after = Outcome.from_dict(proof)
    config = bisection.write_config(folder, found)
    option = "fusion_switch_file" if args.kind == "fusion" else "customize_dtypes"
    lines = _script_lines(option, config)
    data.update({"culprit_passes" if args.kind == "fusion" else "culprit_ops": found, "config_file": config,
                 "after": _state(after, True), "script_line": lines[0], "script_lines": lines})
    noun = ("pass" if len(found) == 1 else "passes") if args.kind == "fusion" else ("op" if len(found) == 1 else "ops")
    change = "switching it off" if args.kind == "fusion" else "keeping it in float32"
    how = change if len(found) == 1 else change.replace(" it ", " them ")
    report.add_text(f"Culprit {noun}: {', '.join(found)} ({how} restores accuracy, proved by run {proof['run']}).",
                    f"Before: {before.text(culprit_ops, culprit)} (the workspace's run; {reproduced}).",
                    f"After:  {after.text(culprit_ops, culprit)}"
                    + (" (only tensors outside the search fail)." if after.failing_refs and
                       after.failing_refs <= target.outside else "."),
                    f"Config file: {config} (copy it out of temp/ to keep it)",
                    "In the training script, one of:", *("  " + line for line in lines),
                    f"{counted(len(bisection.trials), 'run')} (the search needs at most "
                    f"{trial_budget(len(candidates))} for one culprit); every run's workspace and log: {folder}")
    if args.kind == "precision":
        report.add_text("customize_dtypes needs a precision_mode other than must_keep_origin_dtype "
                        "(precision_mode_v2: other than origin).")
    report.exit_code = EXIT_OK
    remaining = len(after.failing_refs & target.outside)
    report.status = f"fixed by {', '.join(found)}" + (
        f" ({counted(remaining, 'failing tensor')} outside the search remain)" if remaining else "")
    report.data = data
    return report


def _last_line(log: str) -> str:
    """The last line the command wrote (its error, as a rule), shortened; ``"no output"`` when none."""
    try:
        with open(log, "rb") as handle:
            handle.seek(0, os.SEEK_END)
            handle.seek(max(0, handle.tell() - 4096))
            lines = [line.strip() for line in handle.read().decode("utf-8", "replace").splitlines() if line.strip()]
    except OSError:
        return "no output"
    return lines[-1][:300] if lines else "no output"


def _state(outcome: Outcome, restored: bool) -> Dict[str, Any]:
    return {**outcome.to_dict(), "restored": restored}


def _run_of(bisection: Bisection, changed: Sequence[str]) -> str:
    return next((str(t["run"]) for t in bisection.trials if sorted(t["changed"]) == sorted(changed)), "?")


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
