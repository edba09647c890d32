"""The bisection ``bisect`` runs: from the failing run's culprit to the fusion passes or float16 ops whose change
restores accuracy, each trial a fresh NPU run of the user's command in its own workspace.

:func:`bisect_workspace` takes a :class:`BisectRequest` and returns :class:`BisectFindings`; the trials, their
comparison with the reference (the ``ac -c`` pipeline: :func:`~precision_tool.checks.autocheck.compare_workspace`) and
the search (:func:`~precision_tool.checks.bisect_search.bisect`: at most ``ceil(log2(candidates)) + 2`` runs for one
culprit) live here; the command only parses and prints. Candidates, trial folders, ``state.json`` and ``--resume``:
docs/commands.md#bisect.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, FrozenSet, List, Optional, Sequence, Tuple

from precision_tool.checks.bisect_search import (RENAMED_SHARE, Outcome, Target, Trials, another_model, bisect,
                                                 reproduces, same_ops, trial_budget)
from precision_tool.config import ENV_DATA_DIR, Workspace
from precision_tool.errors import PrecisionToolError, WorkspaceError
from precision_tool.formats.customize_dtypes import is_half, widened
from precision_tool.metrics.tensor_verdict import threshold_text
from precision_tool.process_env import user_environment

KINDS = ("fusion", "precision")
DEFAULT_MAX_CANDIDATES = 16
STATE_NAME = "state.json"


class BisectError(PrecisionToolError):
    """A trial's run failed or gave nothing to compare."""


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
    progress: Callable[[str], None] = field(default=lambda line: print(line, file=sys.stderr, flush=True))
    """Where each trial's line goes as it ends (the user waits minutes per run): stderr."""

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
        self.progress(f"bisect {self.kind}: run {number}: {what}: {shown or 'nothing'} -> {verdict} "
                      f"({outcome.text(self.culprit_ops, self.culprit)} at cosine {threshold_text(self.cosine)}); "
                      f"{seconds:.1f} s")
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
        self.progress(f"bisect {self.kind}: run {number}: {what}: taken for renamed ops (at most "
                      f"{RENAMED_SHARE:.0%} of {len(self.computed)})")

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


# --------------------------------------------------------------------------------------------- the bisection
@dataclass(frozen=True)
class BisectRequest:
    """What to bisect: ``kind`` (``fusion`` | ``precision``) in the workspace at ``data_dir`` (its failing run
    ``npu/debug_0`` and reference ``tf/dump``), repeating ``command``; trials judged at ``cosine`` on ``judge``
    (``all`` | ``outputs``) tensors; ``max_candidates`` float16 ops at most (0 = all); ``resume`` the latest
    bisection of the same kind and command; ``own_run``: the command is the emulation that wrote the workspace
    (its run need not be reproduced first)."""

    kind: str
    data_dir: str
    command: Tuple[str, ...]
    cosine: float
    judge: str = "all"
    max_candidates: int = DEFAULT_MAX_CANDIDATES
    resume: bool = False
    own_run: bool = False


@dataclass
class BisectFindings:
    """What a bisection found (``coverage``: the failing run's comparison coverage). ``ending`` says how it ended:

    * ``"passes"`` -- the failing run already passes; ``"no_candidates"`` -- nothing to change;
    * ``"not_reproduced"`` -- the command with nothing changed does not fail as the workspace's run (``nothing``);
    * ``"no_fix"`` -- changing every candidate (``every``) does not restore accuracy;
    * ``"unproved"`` -- the search found no minimal set (cannot happen with a monotone search);
    * ``"fixed"`` -- ``found`` restores accuracy, proved by the trial ``proof`` (``after``), config file ``config``.
    """

    kind: str
    candidates: List[str]
    before: Outcome
    coverage: Any
    ending: str
    bisection: Optional["Bisection"] = None
    reproduced: str = ""
    nothing: Optional[Outcome] = None
    every: Optional[Outcome] = None
    outside: List[str] = field(default_factory=list)
    found: List[str] = field(default_factory=list)
    proof: Dict[str, Any] = field(default_factory=dict)
    after: Optional[Outcome] = None
    config: str = ""
    target: Optional[Target] = None

    @property
    def budget(self) -> int:
        """The most runs the search needs for one culprit."""
        return trial_budget(len(self.candidates))

    def run_of(self, changed: Sequence[str]) -> str:
        """The number of the trial that changed exactly ``changed`` (``"?"`` when none did)."""
        trials = self.bisection.trials if self.bisection is not None else []
        return next((str(t["run"]) for t in trials if sorted(t["changed"]) == sorted(changed)), "?")


def bisect_workspace(request: BisectRequest) -> BisectFindings:
    """Bisect as ``request`` asks; every trial is recorded in the bisection folder's ``state.json``.

    Raises
    ------
    WorkspaceError
        the workspace lacks the failing run or the reference.
    BisectError
        a run that failed, dumped nothing, or computes another model than the failing run.
    """
    kind, cosine, judge = request.kind, request.cosine, request.judge
    command = list(request.command)
    workspace = Workspace(request.data_dir)
    workspace.require_root()
    for needed in (workspace.npu_dump(0), workspace.tf_dump):
        if not os.path.isdir(needed):
            raise WorkspaceError(f"{needed}: no such folder", "bisect starts from a workspace holding the failing "
                                 "NPU run (npu/debug_0) and the reference (tf/dump)")
    failing_run = compare_run(request.data_dir, workspace.tf_dump, cosine, workspace.tf_graph)  # judged, ranked
    baseline = failing_run.result
    before = outcome_of(baseline, judge)
    if before.judged == 0:
        raise BisectError(f"{workspace.npu_dump(0)}: no tensor to judge ({judge})",
                          "--judge outputs needs the Build graph's NetOutput; try --judge all")
    if not baseline.verdict.same_model:
        from precision_tool.comparison.same_model import mismatch_lines

        raise BisectError(f"{request.data_dir}: {mismatch_lines(baseline.verdict.mismatches)[0]}",
                          "bisect compares runs of the same model: fix the reference first")
    culprit, culprit_ops = before.culprit, before.culprit_ops
    families: Dict[str, str] = {}
    dtypes: Dict[str, Tuple[Tuple[str, ...], Tuple[str, ...]]] = {}
    if kind == "fusion":
        families = pass_families(workspace, failing_run.ops)
        made_culprit = [name for op in failing_run.ops if op.name == culprit for name in op.pass_names]
        candidates = list(dict.fromkeys(made_culprit + list(families)))  # the passes that made the culprit first
    else:
        chosen = precision_candidates(failing_run.ops, baseline, request.max_candidates)
        candidates = [name for name, _, _ in chosen]
        dtypes = {name: (inputs, outputs) for name, inputs, outputs in chosen}
    findings = BisectFindings(kind, candidates, before, baseline.facts.coverage, "")
    if before.passes or not candidates:
        findings.ending = "passes" if before.passes else "no_candidates"
        return findings
    base = os.path.join(workspace.temp, "bisect")
    resumed = _resumed(base, kind, command, candidates, cosine, judge) if request.resume else None
    if resumed is not None:
        folder, trials = resumed
    else:
        os.makedirs(base, exist_ok=True)
        folder = tempfile.mkdtemp(prefix=f"{kind}_{time.strftime('%Y%m%d%H%M%S')}_", dir=base)
        trials = []
    bisection = Bisection(kind, folder, command, candidates, families, dtypes, workspace.tf_dump,
                          workspace.tf_graph, cosine, judge, trials, culprit, culprit_ops, before.computed)
    bisection.save()
    findings.bisection = bisection
    findings.reproduced = "this command's own, by its manifest.json"
    if not request.own_run:
        nothing = bisection.outcome([])  # the command, nothing changed: it must fail as the workspace's run did
        if not reproduces(before, nothing):
            bisection.mark(lambda outcome: not reproduces(before, outcome))
            findings.ending, findings.nothing = "not_reproduced", nothing
            return findings
        findings.reproduced = f"reproduced by run {findings.run_of([])}"
    every = bisection.outcome(candidates)
    findings.every = every
    target = Target.of(before, every)
    if target is None:
        bisection.mark(lambda outcome: False)
        findings.ending = "no_fix"
        return findings
    findings.target = target
    bisection.mark(target.restores)
    memo = Trials(lambda changed: target.restores(bisection.outcome(changed)),
                  {key: target.restores(outcome) for key, outcome in bisection.outcomes().items()})
    found = bisect(candidates, memo)
    findings.outside = sorted(target.outside)
    if found is None:  # the proof of a minimal set failed: cannot happen with a monotone search, said all the same
        findings.ending = "unproved"
        return findings
    findings.found = list(found)
    findings.proof = next(t for t in reversed(bisection.trials) if sorted(t["changed"]) == sorted(found))
    findings.after = Outcome.from_dict(findings.proof)
    findings.config = bisection.write_config(folder, found)
    findings.ending = "fixed"
    return findings


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
