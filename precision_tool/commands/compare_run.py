"""What ``compare``, ``vc`` and ``ac -c`` share: one comparison job from request to written outputs.

:func:`execute` aligns (:func:`~precision_tool.comparison.pipeline.align_request`), checks the output folders
only then (so an unreadable input leaves no empty folder) and before the comparison (so a bad ``-out`` is
refused at once), compares with a progress bar, then takes the run's unique result name and writes the
outputs (:mod:`~precision_tool.reports.result_outputs`). :func:`run_compare` adds ``compare``'s and ``vc``'s
report. Exit codes: :func:`~precision_tool.comparison.judgment.exit_code` (docs/compare.md#verdict-per-tensor);
a missing folder or an unreadable graph is raised as an error before anything is written.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Dict, Optional, Sequence, Tuple

from precision_tool.alignment.model import MODE_NPU_VS_TF
from precision_tool.comparison import ComparisonResult, CompareRequest
from precision_tool.reports.report import Report
from precision_tool.reports.result_outputs import OutputPaths, workspace_result_folder
from precision_tool.reports.format import counted, exit_line, inheriting_clause
from precision_tool.metrics.tensor_verdict import gate_text

__all__ = ["CompareRun", "execute", "run_compare", "workspace_result_folder", "CompareRequest"]

_REPORT_ROWS = 20
UNREADABLE_SHOWN = 10  # unreadable dump files named one per line in the report; all are in summary.json


@dataclass(frozen=True)
class CompareRun:
    """One job done: the result, where it was written, the summary written there, and the exit code.
    ``notes``: which Build graph a graph folder gave, when that was not clear-cut (one line each)."""

    result: ComparisonResult
    paths: OutputPaths
    summary: Dict[str, Any]
    notes: Tuple[str, ...] = ()

    @property
    def exit_code(self) -> int:
        return int(self.summary["exit_code"])


def execute(request: CompareRequest, out_dir: Optional[str], default_root: str, *, junit: Optional[str] = None,
            progress_label: str = "compare", started: Optional[float] = None,
            folders: Sequence[str] = ()) -> CompareRun:
    """Align, plan the outputs, compare and write (see the module docstring). ``started``: when the caller's
    command began (``perf_counter``), for the summary's total time; default now. ``folders``: input folders no
    output may go into (the workspace's), besides the request's inputs."""
    from precision_tool.comparison import terminal_progress
    from precision_tool.comparison.pipeline import align_request, compare_aligned
    from precision_tool.reports.result_outputs import check_outputs, plan_outputs, write_outputs

    started = time.perf_counter() if started is None else started
    aligned = align_request(request)
    check_outputs(out_dir, default_root, request.input_paths, junit, folders)  # after every input check
    progress = terminal_progress(progress_label)
    try:
        result = compare_aligned(aligned, progress)
    finally:
        if progress is not None:
            progress.close()
    paths = plan_outputs(out_dir, default_root, request.input_paths, junit, folders)  # the name is taken now
    summary = write_outputs(result, paths, total_s=time.perf_counter() - started)
    return CompareRun(result, paths, summary, aligned.notes)


def run_compare(request: CompareRequest, out_dir: Optional[str], default_root: str, *, junit: Optional[str] = None,
                progress_label: str = "compare", folders: Sequence[str] = ()) -> Report:
    """:func:`execute`, then the report ``compare`` and ``vc`` print."""
    run = execute(request, out_dir, default_root, junit=junit, progress_label=progress_label, folders=folders)
    return _report(run.result, run.summary, run.paths, run.exit_code, run.notes)


def _report(result: ComparisonResult, summary: Dict[str, Any], paths: OutputPaths, exit_code: int,
            graph_notes: Sequence[str] = ()) -> Report:
    from precision_tool.alignment import Coverage
    from precision_tool.reports.dump_choice import dump_choice_line
    from precision_tool.reports.judgment_lines import judgment_lines
    from precision_tool.reports.summary import SAME_MODEL_MEANING
    from precision_tool.reports.result_csv import number_text
    from precision_tool.reports.summary import unusable_inputs

    counts = summary["counts"]
    unusable = unusable_inputs(result.facts.coverage)
    report = Report(title=_title(result, counts, len(unusable)))
    failing = result.failing_in_order()
    if failing:
        rows = [[r.index, r.tensor_id or r.op_name, r.op_type, r.status.value, number_text(r.cosine),
                 number_text(r.metric("MaxAbsoluteError")), r.reason] for r in failing[:_REPORT_ROWS]]
        more = f" (first {_REPORT_ROWS} of {len(failing)})" if len(failing) > _REPORT_ROWS else ""
        report.add_table(["index", "tensor", "op type", "status", "cosine", "max abs err", "reason"], rows,
                         title=f"Failing tensors, first divergence first{more}:")
    first = result.divergence.first
    if first is not None:
        inherited = len(result.divergence.inherited)
        other_roots = len(result.divergence.roots) - 1
        line = f"First divergence: {first.op_name} (outputs {list(first.failed_outputs)} fail on good inputs)"
        if first.unknown_inputs:
            line += f"; inputs {list(first.unknown_inputs)} were not compared"
        standouts = {op.op_name for op in result.attribution.standouts}
        inherits = inheriting_clause(inherited, sum(op.op_name in standouts for op in result.divergence.inherited))
        roots = f"{counted(other_roots, 'other op')} {'fails' if other_roots == 1 else 'fail'} on good inputs too"
        report.add_text(line + f"; {inherits}; {roots if other_roots else 'no other op fails on good inputs'}.")
    judged = judgment_lines(result)
    if judged:
        report.add_text(*judged)
    matched = result.matching_non_finite_line()
    if matched:
        report.add_text(matched)
    coverage = result.facts.coverage or Coverage()
    if coverage.dump_choice:
        report.add_text(dump_choice_line(coverage.dump_choice))
    notes = [f"unreadable, not compared: {message}" for _, message in unusable[:UNREADABLE_SHOWN]]
    if len(unusable) > UNREADABLE_SHOWN:
        notes.append(f"... {len(unusable) - UNREADABLE_SHOWN} more unreadable input files (listed in the summary's "
                     f"coverage)")
    notes.extend(f"names: {line}" for line in coverage.ambiguous[:UNREADABLE_SHOWN])
    if len(coverage.ambiguous) > UNREADABLE_SHOWN:
        notes.append(f"... {len(coverage.ambiguous) - UNREADABLE_SHOWN} more names not guessed (listed in the "
                     f"summary's coverage: ambiguous)")
    if counts["not_compared"]:
        notes.append(f"{counts['not_compared']:,} NPU tensors have no reference (listed in the CSV and summary).")
    if coverage.ignored_references:
        notes.append(f"{counted(len(coverage.ignored_references), '.npy file')} in the reference folder not named "
                     f"NAME.OUTPUT.TIMESTAMP.npy, not read (first: {coverage.ignored_references[0]}; all in the "
                     f"summary's coverage: ignored_references).")
    if coverage.graph_ops_without_dump:
        notes.append(f"{counted(len(coverage.graph_ops_without_dump), 'graph op')} without a dump file.")
    if coverage.reference_only and coverage.npu_tensors:
        notes.append(f"{counted(len(coverage.reference_only), 'reference tensor')} matched no NPU tensor: mostly "
                     f"TF ops fused into another op, whose result is inside that op's output; look only if an op you "
                     f"expected is among them (summary.json: coverage.reference_only).")
    if result.facts.order_source != "graph":
        notes.append("No graph: tensors matched by name, inputs not compared, order by dump time.")
    if counts["reused_input_results"]:
        notes.append(f"{counts['reused_input_results']:,} inputs are byte-identical to their producer's output and "
                     f"share its result.")
    below = summary["allclose_below_default"]
    if below:
        notes.append(f"{counted(len(below), 'tensor')} {'has' if len(below) == 1 else 'have'} fewer elements within "
                     f"their dtype's rtol/atol than a single-op test asks (summary.json: allclose_below_default): "
                     f"usual for drift deep layers inherit, so reported, not failed; the cosine gate and the first "
                     f"divergence decide.")
    if notes:
        report.add_text("Coverage:", *("  " + note for note in notes))
    if graph_notes:
        report.add_text(*graph_notes)
    written = [f"Result: {paths.csv}", f"Summary: {paths.summary}"]
    if paths.junit:
        written.append(f"JUnit: {paths.junit}")
    if paths.cleaned:
        written.append(paths.cleaned_line())
    report.add_text(*written)
    timing = summary["timing"]
    meaning = f"{SAME_MODEL_MEANING} (see above)" if not result.verdict.same_model else ""
    report.status = exit_line(exit_code, timing.get("total_s", 0), f"align {timing['align_s']:.2f} s, compare "
                              f"{timing['compare_s']:.2f} s, {counted(timing['workers'], 'worker')}", meaning)
    report.exit_code = exit_code
    data = {key: value for key, value in summary.items() if key not in ("order", "data_inputs")}
    data.update(result_csv_path=paths.csv, results_path=paths.results, summary_path=paths.summary,
                junit_path=paths.junit, graph_notes=list(graph_notes))
    report.data = data
    return report


def _empty_input(result: ComparisonResult) -> str:
    """Why nothing was aligned when an input folder held nothing to align: no NPU tensor (and no unreadable dump
    file), or no reference tensor at all (none aligned, none left over, none unreadable) -- an NPU-vs-TF reference
    folder without ``.npy`` files, or, in NPU-vs-NPU mode (what an empty folder is taken for), one without dump files
    either; ``""`` otherwise."""
    coverage = result.facts.coverage
    if coverage is None:
        return ""
    if not coverage.npu_tensors and not coverage.unreadable:
        return f"no dump file in {result.inputs.get('npu') or 'the NPU folder'}"
    if coverage.aligned_count or coverage.reference_only or coverage.unreadable_references or coverage.unreadable:
        return ""
    folder = result.inputs.get("reference") or "the reference folder"
    if result.facts.mode == MODE_NPU_VS_TF:
        return f"no reference .npy file in {folder} (named {{op}}.{{output}}.{{timestamp}}.npy)"
    return f"neither reference .npy files ({{op}}.{{output}}.{{timestamp}}.npy) nor dump files in {folder}"


def _title(result: ComparisonResult, counts: Dict[str, Any], unusable: int) -> str:
    """``Compared N tensors (cosine >= T): P passed, F failed[, E unreadable][; U input files could not be
    read]``, or ``Nothing could be compared ...``."""
    from precision_tool.reports.summary import unusable_text

    gate = gate_text(result.cosine_threshold)
    if counts["compared"] == 0:
        npu_tensors = result.facts.coverage.npu_tensors if result.facts.coverage is not None else 0
        title = f"Nothing could be compared: {npu_tensors:,} NPU tensors, none aligned"
        empty = _empty_input(result)
        if empty:
            title += f": {empty}"
    else:
        title = (f"Compared {counted(counts['compared'], 'tensor')} ({gate}): {counts['passed']:,} passed, "
                 f"{counts['failed']:,} failed")
        if counts["errors"]:
            title += f", {counts['errors']:,} unreadable"
    if unusable:
        title += f"; {unusable_text(unusable)}"
    return title
