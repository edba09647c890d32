"""``ac``'s work as plain data: overflow, then fusion, then (optionally) the comparison with the reference.

:func:`run_autocheck` takes a workspace and :class:`AutocheckOptions` (the step and device to read among them) and
returns an :class:`AutocheckResult`: an :class:`OverflowSection`, a :class:`FusionSection`, a :class:`CompareSection`
(the one compare pipeline, replayed) and the :class:`~precision_tool.checks.run_verdict.Verdict`. A section whose
inputs are missing or unreadable carries a note and the others go on; only a folder holding neither
``npu/debug_0`` nor ``overflow`` raises :class:`WorkspaceError`. See docs/internals/checks.md#autocheck.
"""
from __future__ import annotations

import dataclasses
import os
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Optional, Tuple

from precision_tool.checks.casts import CastCheck, check_casts
from precision_tool.checks.exception_dumps import ExceptionDumpInfo, describe_exception_dumps, exception_refs
from precision_tool.checks.fusion_summary import FusionOverview, summarize_fusion
from precision_tool.checks.fusion_compare import (DEFAULT_FLOOR, DEFAULT_GROWTH, FusionComparison,
                                                  compare_fusion_runs)
from precision_tool.checks.nonfinite import DumpScanCheck, scan_dumps_for_overflow
from precision_tool.checks.overflow_records import OverflowCheck, check_overflow_records
from precision_tool.checks.run_verdict import Verdict
from precision_tool.checks.stats_check import (DEFAULT_BUDGET, StatisticsSection, check_statistics,
                                               statistics_verdict)
from precision_tool.comparison.judgment import exit_code
from precision_tool.comparison.result import ComparisonResult
from precision_tool.comparison.tree_runs import StepRun
from precision_tool.config import Workspace
from precision_tool.errors import batch_exit_code, EXIT_UNUSABLE_INPUT, PrecisionToolError, WorkspaceError
from precision_tool.formats.dump_names import scan_dump_folder
from precision_tool.formats.dump_tree import DEFAULT_SELECTION, DumpSelection, following
from precision_tool.replay.replay_run import ReplayReport

DEFAULT_LIMIT = 5


@dataclass(frozen=True)
class AutocheckOptions:
    """What to run. ``limit``: overflow records (and scan findings) given in detail; 0 = all. ``selection``: the
    step and device to read of dump trees holding several (its log gets every scan's choice)."""

    compare: bool = False
    limit: int = DEFAULT_LIMIT
    cosine: Optional[float] = 0.99
    workers: Optional[int] = None
    fusion_floor: float = DEFAULT_FLOOR
    fusion_growth: float = DEFAULT_GROWTH
    replay: bool = True
    npu_run: str = ""  # the NPU run as a command line, for the bisect suggestion ("": a placeholder is shown)
    selection: DumpSelection = DumpSelection()
    dump_budget: int = DEFAULT_BUDGET  # a statistics run's dump_layer: the bytes its ops' dumps may take
    cluster: str = ""  # a Dask scheduler to compare on ("": this machine)


@dataclass(frozen=True)
class OverflowSection:
    """``records`` from the overflow run; ``scan``/``casts`` over the normal run (``None`` without one);
    ``exception_dumps``: the exception dumps of both folders (AI Core errors, not overflows)."""

    records: OverflowCheck
    scan: Optional[DumpScanCheck] = None
    casts: Optional[CastCheck] = None
    scanned_folder: str = ""
    notes: Tuple[str, ...] = ()
    exception_dumps: Tuple[ExceptionDumpInfo, ...] = ()
    statistics_only: bool = False  # the normal run's dump holds statistics and no tensors (dump_data="stats")

    @property
    def found(self) -> bool:
        """True when a record reports an overflow or the scan found inf/NaN/saturation."""
        return self.records.overflowed or bool(self.scan and self.scan.ops)

    @property
    def unreadable(self) -> Tuple[str, ...]:
        """One line (file: cause) per Opdebug record that could not be decoded and per dump the scan could not
        read: an overflow in them stays hidden, so "no overflow" is then not a clean bill."""
        not_read = (f"the overflow run's records were not read: {self.records.not_read}",
                    ) if self.records.not_read else ()
        return not_read + self.records.failures + (self.scan.unreadable if self.scan is not None else ())

    def to_dict(self) -> dict:
        return {"records": self.records.to_dict(), "scan": None if self.scan is None else self.scan.to_dict(),
                "casts": None if self.casts is None else self.casts.to_dict(), "scanned_folder": self.scanned_folder,
                "notes": list(self.notes), "exception_dumps": [info.to_dict() for info in self.exception_dumps]}


@dataclass(frozen=True)
class FusionSection:
    """What fusion did; ``comparison`` is ``None`` without a second run (``notes`` says why)."""

    overview: FusionOverview
    comparison: Optional[FusionComparison] = None
    graph_path: str = ""
    notes: Tuple[str, ...] = ()
    result_problem: str = ""
    """One line when fusion_result.json is there but could not be read, or only in part (damaged)."""

    def to_dict(self) -> dict:
        return {"overview": self.overview.to_dict(), "graph": self.graph_path or None,
                "comparison": None if self.comparison is None else self.comparison.to_dict(),
                "notes": list(self.notes), "result_problem": self.result_problem or None}


@dataclass(frozen=True)
class CompareSection:
    """The comparison with the reference: ``result`` or the ``error`` that stopped it.

    ``inputs`` names the folders compared; ``out_folder`` is where the caller wrote the result files when it
    chose the folder (``-o``), for the ``vcs -f`` hint; ``""`` for the default place ``vcs`` finds itself.
    ``replay`` is the replay of the compared ops (``None`` when not asked for; ``replay_note`` says why), its
    figures in the result's rows, whose judgment (:attr:`attribution`, the culprit) is the run's one judgment
    (:mod:`precision_tool.comparison.judgment`). ``steps``: every step of the device compared,
    one :class:`~precision_tool.comparison.tree_runs.StepRun` each, when the tree holds several and none was
    asked for (:func:`compare_steps`); ``()`` otherwise.
    """

    result: Optional[ComparisonResult] = None
    error: str = ""
    inputs: Dict[str, Optional[str]] = field(default_factory=dict)
    out_folder: str = ""
    replay: Optional[ReplayReport] = None
    steps: Tuple[StepRun, ...] = ()
    replay_note: str = ""
    graph: Any = field(default=None, compare=False, repr=False)
    asked_device: Optional[int] = None  # the device asked for (--device N), kept in the hints
    """The NPU Build graph the comparison read (``None`` without one)."""

    @property
    def attribution(self):
        """Which ops add error (the result's :attr:`~precision_tool.comparison.judgment.Judgment.attribution`);
        ``None`` without a result."""
        return self.result.attribution if self.result is not None else None


@dataclass(frozen=True)
class AutocheckResult:
    workspace: str
    overflow: OverflowSection
    fusion: FusionSection
    compare: Optional[CompareSection]
    verdict: Verdict
    timing: Dict[str, float] = field(default_factory=dict)
    statistics: Optional[StatisticsSection] = None
    """``ac -c`` on a statistics run (``dump_data="stats"``): its judgment, in place of ``compare``."""

    def exit_code(self) -> int:
        """With the comparison, the one exit rule (:func:`~precision_tool.comparison.judgment.exit_code`): 2 when
        the runs do not compute the same model; 1 when a tensor fails (in any step of the dump tree compared,
        :attr:`CompareSection.steps`) or the verdict names a culprit, by any method; 2 when nothing was compared,
        the comparison could not run or input files -- an Opdebug record, the reference graphs' index.json too --
        could not be read; else 0. Without it, 1 when an overflow or a fusion culprit was found, else 2 when an
        Opdebug record or a scanned dump could not be read (as ``ov``), else 0. On a statistics run: 1 when an op
        is a suspect or the verdict names an overflow or fusion lead; else 2 when no op could be measured, a
        statistics file or reference could not be read, or the comparison could not run; else 0."""
        if self.statistics is not None:  # as with a comparison: any finding, by any section, is one
            judgment = self.statistics.judgment
            found = self.verdict.culprit is not None or self.overflow.found
            not_read = judgment is None or not judgment.measured or bool(judgment.unread) or \
                bool(self.overflow.unreadable)
            return batch_exit_code(found, not_read)
        if self.compare is not None:
            outcome = self.compare.result
            if outcome is None:
                return EXIT_UNUSABLE_INPUT
            coverage = outcome.facts.coverage
            unusable = len(coverage.unusable_inputs) if coverage is not None else 0
            unusable += bool(self.overflow.unreadable and not self.overflow.found)
            replay = self.compare.replay
            unusable += bool(replay is not None and replay.index_problem)  # other runs' graphs may have been used
            failed = any(row.failed for row in outcome.results) or any(run.diverges for run in self.compare.steps)
            return exit_code(failed, self.verdict.culprit is not None, len(outcome.compared), unusable,
                             outcome.verdict.same_model)
        comparison = self.fusion.comparison
        found = self.overflow.found or (comparison is not None and bool(comparison.culprits))
        return batch_exit_code(found, bool(self.overflow.unreadable))


def _require_workspace(workspace: Workspace) -> None:
    """Raise :class:`WorkspaceError` unless the workspace has an NPU side to check: ``npu/debug_0/dump`` or
    ``overflow/dump``, and at least one file that an NPU run wrote -- a dump, an overflow record, a GE graph (a
    model without an NPU op has a graph and no dump) -- so that a workspace holding only the CPU side, with the
    NPU folders of a run that had no NPU, is not passed as "0 ops, nothing found"."""
    workspace.require_root()
    folders = [f for f in (workspace.npu_dump(0), workspace.overflow_dump) if os.path.isdir(f)]
    if not folders:
        raise WorkspaceError(f"{workspace.root}: neither npu/debug_0/dump nor overflow/dump is here",
                             "point -d at a precision_data folder, or capture a dump run first")
    written = folders + [workspace.npu_graph(0)]
    if not any(_holds_a_file(folder) for folder in written if os.path.isdir(folder)):
        names = [os.path.relpath(folder, workspace.root) for folder in folders]
        said = f"{names[0]} holds no file" if len(names) == 1 else f"neither {names[0]} nor {names[1]} holds a file"
        raise WorkspaceError(f"{workspace.root}: {said}: the NPU side is empty, nothing to check",
                             "was the training run on an Ascend NPU? Without npu_bridge TensorFlow runs on CPU/GPU "
                             "and dumps nothing: capture on the NPU machine")


def _holds_a_file(folder: str) -> bool:
    """Whether ``folder`` or a folder under it holds a file (stops at the first)."""
    for _, _, files in os.walk(folder):
        if files:
            return True
    return False


def check_overflow(workspace: Workspace, limit: int = DEFAULT_LIMIT,
                   selection: DumpSelection = DEFAULT_SELECTION) -> OverflowSection:
    """The overflow section: records of ``overflow/dump``, then a scan of ``npu/debug_0/dump``; the exception
    dumps of both. The overflow run is another run: it follows the step and device asked for when it holds them,
    else takes its only one (:func:`~precision_tool.formats.dump_tree.following`); one it lacks, of several, is
    said (:attr:`OverflowCheck.not_read`: unreadable, so no clean pass), and the section goes on without them."""
    notes = []
    overflow_scan, not_read = None, ""
    if os.path.isdir(workspace.overflow_dump):
        try:
            overflow_scan = scan_dump_folder(workspace.overflow_dump, following(selection))
        except WorkspaceError as error:  # a step or device it lacks, of several: the other checks go on
            not_read = str(error)
    if not_read:  # no record known: not a clean bill (unreadable, so exit 2 when nothing else is found)
        records = OverflowCheck(workspace.overflow_dump, True, limit=limit, not_read=not_read)
    else:
        records = check_overflow_records(workspace.overflow_dump, limit, scan=overflow_scan)
    if not records.folder_exists:
        notes.append(f"no overflow run ({workspace.overflow_dump} is missing): scanned the dumps of "
                     f"{workspace.npu_dump(0)} instead; capture one with action='overflow' for Opdebug records")
    elif records.records == 0 and not records.not_read:
        notes.append(f"the overflow run ({workspace.overflow_dump}) holds no Opdebug records: nothing overflowed "
                     "there")
    folder = workspace.npu_dump(0)
    if not os.path.isdir(folder):
        notes.append(f"no normal dump run ({folder} is missing): no dump scan, no cast check")
        return OverflowSection(records, notes=tuple(notes),
                               exception_dumps=describe_exception_dumps(exception_refs(overflow_scan)))
    scan = scan_dump_folder(folder, selection)
    if scan.stats and not scan.ops:  # a statistics run: no tensor to scan, and "0 ops" would read as a clean scan
        notes = [f"no overflow run ({workspace.overflow_dump} is missing): capture one with action='overflow' for "
                 "Opdebug records" if note.startswith("no overflow run") else note for note in notes]
        notes.append(f"{folder} holds statistics (dump_data=\"stats\"), not tensors: no dump scan or cast check; "
                     "'ac -c' compares their NaN and inf counts with the reference's")
        return OverflowSection(records, None, None, "", tuple(notes),
                               describe_exception_dumps(exception_refs(overflow_scan, scan)), statistics_only=True)
    return OverflowSection(records, scan_dumps_for_overflow(folder, scan), check_casts(scan), folder, tuple(notes),
                           describe_exception_dumps(exception_refs(overflow_scan, scan)))


def _load_build_graph(folder: str, dump_folder: str, notes: list, device: Optional[int] = None):
    """The Build graph under ``folder`` (``DUMP_GRAPH_PATH``, flat or CANN 8's per-process folders: the one of
    ``dump_folder``'s device, ``device`` when asked) and its path; ``(None, "")`` with a note when there is none."""
    from precision_tool.formats.ge_graph_folders import choose_build_graph, dump_device_id
    from precision_tool.formats.ge_io import read_ge_graph

    if not os.path.isdir(folder):
        notes.append(f"no Build graph folder {folder}: fused ops unknown")
        return None, ""
    try:
        choice = choose_build_graph(folder, device_id=dump_device_id(dump_folder, device))
        notes.extend(choice.notes)
        model = read_ge_graph(choice.path)
        notes.extend(model.notes)
        return model, os.fspath(choice.path)
    except PrecisionToolError as error:
        notes.append(f"Build graph not read: {error}")
        return None, ""


def check_fusion(workspace: Workspace, floor: float = DEFAULT_FLOOR, growth: float = DEFAULT_GROWTH,
                 compare: bool = True, selection: DumpSelection = DEFAULT_SELECTION) -> FusionSection:
    """The fusion section: fusion_result.json + Build graph of ``npu/debug_0``; with ``compare``, vs
    ``npu/debug_1`` when that run is there."""
    from precision_tool.formats.fusion_result import read_fusion_result

    notes: list = []
    model, graph_path = _load_build_graph(workspace.npu_graph(0), workspace.npu_dump(0), notes, selection.device)
    result = None
    result_problem = ""
    if os.path.lexists(workspace.fusion_result):
        try:
            result = read_fusion_result(workspace.fusion_result)
        except PrecisionToolError as error:
            result_problem = f"fusion result not read: {error}"
        else:
            if result.damage:
                result_problem = f"{workspace.fusion_result}: {result.damage}"
        if result_problem:
            notes.append(result_problem)
    else:
        notes.append(f"no {workspace.fusion_result}: pass counts unknown")
    overview = summarize_fusion(model, result)
    comparison = None
    fused_dump, unfused_dump = workspace.npu_dump(0), workspace.npu_dump(1)
    if not compare:
        pass
    elif not os.path.isdir(unfused_dump):
        notes.append(f"no fusion-off run ({unfused_dump} is missing): fused ops not checked against their TF ops; "
                     "capture one with action='fusion_off' into npu/debug_1")
    elif os.path.isdir(fused_dump):
        unfused_notes: list = []
        unfused_model, _ = _load_build_graph(workspace.npu_graph(1), workspace.npu_dump(1), unfused_notes,
                                             selection.device)
        if unfused_model is None:  # the last note says why
            unfused_notes[-1] += "; its ops are matched by name only"
        notes.extend(f"npu/debug_1: {note}" for note in unfused_notes)
        if unfused_model is not None and summarize_fusion(unfused_model, None).fused_ops:
            notes.append("npu/debug_1 has fused ops too: it is not a fusion-off run, so differences may have "
                         "other causes")
        try:
            comparison = compare_fusion_runs(fused_dump, unfused_dump, model, unfused_model, floor=floor,
                                             growth=growth, selection=selection)
        except PrecisionToolError as error:
            notes.append(f"fusion-on vs fusion-off comparison failed: {error}")
    return FusionSection(overview, comparison, graph_path, tuple(notes), result_problem)


def _early_tensorflow_import(tf_graph: str):
    """A :class:`~precision_tool.tf_runtime.BackgroundImport` for replay, to start while the comparison's
    workers run (importing TensorFlow takes seconds); ``None`` when replay will not need it (no reference
    graph ``tf_graph``, TensorFlow not installed -- replay says why)."""
    import importlib.util

    if not os.path.isdir(tf_graph) or importlib.util.find_spec("tensorflow") is None:
        return None
    from precision_tool.tf_runtime import BackgroundImport

    return BackgroundImport()


def compare_workspace(workspace: Workspace, cosine: Optional[float], workers: Optional[int] = None,
                      progress: Optional[Callable[[int, int], None]] = None, replay: bool = False, *,
                      reference: Optional[str] = None, tf_graph: Optional[str] = None,
                      before_replay: Optional[Callable[[ComparisonResult], None]] = None,
                      selection: DumpSelection = DEFAULT_SELECTION, cluster: str = "") -> CompareSection:
    """``npu/debug_0`` (with its graph) against ``tf/dump`` through the one compare pipeline
    (:func:`~precision_tool.comparison.pipeline.align_request`, then
    :func:`~precision_tool.comparison.pipeline.compare_aligned`); errors are kept in the section. With
    ``replay``, every compared op is replayed from ``tf/graph`` (:mod:`precision_tool.replay`) and its figures
    go into the result's rows, judged with them. ``reference``/``tf_graph``: another workspace's (``bisect``'s
    trials reuse the failing run's reference when the NPU run wrote none). ``before_replay`` is called with the
    comparison once it is made, before a replay starts (``ac -c`` writes it then, so that an interrupted replay
    loses nothing compared). ``selection``: the step and device to read; ``cluster``: a Dask scheduler to compare
    on (the replay stays here)."""
    from precision_tool.comparison.pipeline import CompareRequest, align_request, compare_aligned

    npu, reference = workspace.npu_dump(0), reference or workspace.tf_dump
    tf_graph = tf_graph or workspace.tf_graph
    graph_folder = workspace.npu_graph(0) if os.path.isdir(workspace.npu_graph(0)) else None
    inputs = {"npu": npu, "reference": reference, "graph": graph_folder}
    for label, path, hint in (("NPU dump", npu, "capture a dump run (action='dump')"),
                              ("reference", reference, "run precision_tool tf_dump after the CPU/GPU run")):
        if not os.path.isdir(path):
            return CompareSection(error=f"no {label} folder {path}: {hint}", inputs=inputs)
    request = CompareRequest(npu, reference, graph_folder, cosine=cosine, workers=workers, selection=selection,
                             cluster=cluster)
    tensorflow = _early_tensorflow_import(tf_graph) if replay else None
    try:
        aligned = align_request(request)
        result = compare_aligned(aligned, progress, tensorflow.start if tensorflow else None)
        report, note = None, "replay not asked for (--no-replay)"
        if replay and result.npu_vs_npu:
            note = "replay compares NPU with TF only"
        elif replay and not result.verdict.same_model:
            note = "not replayed: the two runs do not compute the same model"
        elif replay:
            from precision_tool.replay.replay_run import replay_alignment

            if before_replay is not None:
                before_replay(result)
            report = replay_alignment(aligned.alignment, aligned.graph, reference, tf_graph, tensorflow=tensorflow)
    except PrecisionToolError as error:
        return CompareSection(error=str(error), inputs=inputs)
    finally:
        if tensorflow is not None:
            tensorflow.wait()  # no thread outlives the section (a later fork would be unsafe)
    if report is not None:
        result = report.applied_to(result)
        note = report.notes[0] if not report.ran and report.notes else ""
    return CompareSection(result, "", inputs, replay=report, steps=compare_steps(request, result), replay_note=note,
                          graph=aligned.graph, asked_device=selection.device)


def compare_steps(request, result: ComparisonResult) -> Tuple[StepRun, ...]:
    """Every step of the device ``result`` compared, when the NPU dump tree holds several and no step was
    asked for: ``result`` is the newest's (the default), the others are compared now through the same pipeline
    (no files written, no replay; a step that cannot be compared says why). ``()`` otherwise."""
    from precision_tool.comparison.pipeline import run_comparison
    from precision_tool.comparison.tree_runs import compare_each, tree_of
    from precision_tool.formats.dump_tree import each_selection

    wanted = request.selection or DumpSelection()
    tree = tree_of(request.npu_dir)
    if wanted.step is not None or not tree.held:
        return ()
    selections = each_selection(request.npu_dir, tree, every_step=True, every_device=False, wanted=wanted)
    if len(selections) < 2:
        return ()
    newest = selections[-1]
    return tuple(compare_each(selections, lambda selection: StepRun.of(
        selection, result if selection == newest else run_comparison(dataclasses.replace(request,
                                                                                           selection=selection)))))


#: Called with the comparison's result once it is made; returns the folder its results go to when that
#: folder was the user's choice (for the ``vcs -f`` hint), else ``""``.
OnCompared = Callable[[ComparisonResult], str]


def run_autocheck(root: str, options: AutocheckOptions = AutocheckOptions(),
                  progress: Optional[Callable[[int, int], None]] = None,
                  on_compared: Optional[OnCompared] = None,
                  before_replay: Optional[Callable[[ComparisonResult], None]] = None) -> AutocheckResult:
    """Run every section on the workspace at ``root`` and decide the verdict, once (see the module docstring).

    ``on_compared`` lets the caller take the comparison's output names before the verdict names them (it writes
    them after, with the verdict). ``before_replay``: see :func:`compare_workspace`.
    """
    from precision_tool.checks.run_verdict import decide_verdict

    workspace = Workspace(root)
    _require_workspace(workspace)
    timing = {}
    started = time.perf_counter()
    overflow = check_overflow(workspace, options.limit, options.selection)
    timing["overflow_s"] = time.perf_counter() - started
    started = time.perf_counter()
    fusion = check_fusion(workspace, options.fusion_floor, options.fusion_growth, selection=options.selection)
    timing["fusion_s"] = time.perf_counter() - started
    compare = statistics = None
    if options.compare and overflow.statistics_only:  # its scan of the normal run saw it: not scanned again
        started = time.perf_counter()
        graph_folder = workspace.npu_graph(0) if os.path.isdir(workspace.npu_graph(0)) else None
        statistics = check_statistics(workspace.npu_dump(0), workspace.tf_dump, graph_folder, options.selection,
                                      options.dump_budget)
        timing["statistics_s"] = time.perf_counter() - started
        verdict = statistics_verdict(statistics, decide_verdict(overflow, fusion, None, npu_run=options.npu_run))
        return AutocheckResult(root, overflow, fusion, None, verdict, timing, statistics)
    if options.compare:
        started = time.perf_counter()
        compare = compare_workspace(workspace, options.cosine, options.workers, progress, options.replay,
                                    before_replay=before_replay, selection=options.selection,
                                    cluster=options.cluster)
        timing["compare_s"] = time.perf_counter() - started
        if compare.replay is not None:  # reported apart: compare_s is the comparison alone
            timing["replay_s"] = compare.replay.seconds
            timing["compare_s"] -= compare.replay.seconds
        if compare.result is not None and on_compared is not None:
            compare = dataclasses.replace(compare, out_folder=on_compared(compare.result))
    verdict = decide_verdict(overflow, fusion, compare, npu_run=options.npu_run)
    return AutocheckResult(root, overflow, fusion, compare, verdict, timing)
