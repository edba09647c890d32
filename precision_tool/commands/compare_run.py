"""What ``compare`` and ``vc`` share: align, compare, write CSV + summary (+ JUnit), and build the report.

Outputs, written atomically in this order so that the CSV -- what ``vcs`` looks for -- appears last, only
when everything else is in place:

1. ``summary.json`` (names the CSV it describes),
2. the JUnit XML, when asked for,
3. ``result_{YYYYmmddHHMMSS}.csv``.

A run killed at any point leaves no CSV, or a complete one. Output folders are checked against every input
first (:func:`~precision_tool.config.ensure_output_dir`): nothing is ever written into an input folder.

Exit codes: 0 every compared tensor passes; 1 at least one fails (threshold or an honest status such as
NaN/inf, or an aligned tensor that cannot be read); 2 nothing could be compared (nothing aligned), or a
missing folder / unreadable graph (raised as errors before anything is written). Tensors without a
reference and ops without a dump are listed in the coverage report; they do not fail the run.
"""
from __future__ import annotations

import os
import time
from dataclasses import dataclass
from typing import List, Optional

from precision_tool.config import Workspace, ensure_output_dir
from precision_tool.errors import EXIT_FAILED_CHECK, EXIT_OK, EXIT_UNUSABLE_INPUT, WorkspaceError
from precision_tool.reports.report import Report

RESULT_FOLDER = "vector_compare"
_REPORT_ROWS = 20

UNREADABLE_SHOWN = 10  # unreadable dump files named one per line in the report; all are in summary.json


@dataclass(frozen=True)
class CompareRequest:
    """The inputs of one comparison. ``graph``/``reference_graph``: a file, a folder or ``None``."""

    npu_dir: str
    reference: str
    graph: Optional[str] = None
    mode: str = "auto"
    reference_graph: Optional[str] = None


@dataclass(frozen=True)
class OutputPaths:
    folder: str
    csv: str
    summary: str
    junit: Optional[str] = None


def timestamp() -> str:
    return time.strftime("%Y%m%d%H%M%S")


def workspace_result_folder(ctx_data_dir: str) -> str:
    """``WORKSPACE/temp/vector_compare``, where ``vc``/``compare`` write by default and ``vcs`` looks."""
    return os.path.join(Workspace(ctx_data_dir).temp, RESULT_FOLDER)


def plan_outputs(out_dir: Optional[str], default_root: str, inputs: List[str], junit: Optional[str]) -> OutputPaths:
    """Where this run writes: ``OUT/result_{ts}.csv`` with ``-out``, else ``ROOT/{ts}/result_{ts}.csv``;
    a second run in the same second gets ``_1``, ``_2``... Checks no output lies inside an input."""
    from precision_tool.reports.summary import SUMMARY_NAME

    stamp = timestamp()
    if out_dir:
        folder = ensure_output_dir(out_dir, *inputs)
        name, n = f"result_{stamp}.csv", 0
        while os.path.exists(os.path.join(folder, name)):
            n += 1
            name = f"result_{stamp}_{n}.csv"
    else:
        ensure_output_dir(default_root, *inputs)
        folder_name, n = stamp, 0
        while os.path.exists(os.path.join(default_root, folder_name)):
            n += 1
            folder_name = f"{stamp}_{n}"
        folder = ensure_output_dir(os.path.join(default_root, folder_name), *inputs)
        name = f"result_{stamp}.csv"
    junit_path = None
    if junit:
        ensure_output_dir(os.path.dirname(os.path.abspath(junit)), *inputs)
        junit_path = os.path.abspath(junit)
    return OutputPaths(folder, os.path.join(folder, name), os.path.join(folder, SUMMARY_NAME), junit_path)


def run_compare(request: CompareRequest, out_dir: Optional[str], default_root: str, *, cosine: float,
                workers: Optional[int], junit: Optional[str] = None, progress_label: str = "compare") -> Report:
    """Align, compare, write the outputs and return the report (see the module docstring)."""
    from precision_tool.alignment import align, load_graph
    from precision_tool.comparison import compare_alignment, terminal_progress
    from precision_tool.reports.junit import write_junit
    from precision_tool.reports.result_csv import write_result_csv
    from precision_tool.reports.summary import build_summary, write_summary

    started = time.perf_counter()
    for label, path in (("NPU dump", request.npu_dir), ("reference", request.reference)):
        if not os.path.isdir(path):
            raise WorkspaceError(f"{path}: no such folder", f"give the {label} folder")
    graph = load_graph(request.graph)
    reference_graph = load_graph(request.reference_graph)
    alignment = align(request.npu_dir, request.reference, graph, mode=request.mode,
                      reference_graph=reference_graph)
    align_s = time.perf_counter() - started
    inputs = [p for p in (request.npu_dir, request.reference, request.graph, request.reference_graph) if p]
    paths = plan_outputs(out_dir, default_root, inputs, junit)  # after every input check: no empty folders
    progress = terminal_progress(progress_label)
    try:
        result = compare_alignment(alignment, graph=graph, cosine_threshold=cosine, workers=workers,
                                   progress=progress)
    finally:
        if progress is not None:
            progress.close()
    result = _with_align_time(result, align_s)
    counts = result.counts()
    if counts["compared"] == 0:
        exit_code = EXIT_UNUSABLE_INPUT
    elif result.failing:
        exit_code = EXIT_FAILED_CHECK
    else:
        exit_code = EXIT_OK
    summary = build_summary(result, result_csv=paths.csv, exit_code=exit_code, total_s=time.perf_counter() - started,
                            inputs={"npu": os.path.abspath(request.npu_dir),
                                    "reference": os.path.abspath(request.reference),
                                    "graph": os.path.abspath(request.graph) if request.graph else None,
                                    "reference_graph": (os.path.abspath(request.reference_graph)
                                                        if request.reference_graph else None),
                                    "mode": alignment.mode})
    try:
        write_summary(paths.summary, summary)
        if paths.junit:
            write_junit(paths.junit, result)
        write_result_csv(paths.csv, result.results, npu_vs_npu=alignment.mode == "npu_vs_npu")
    except OSError as error:
        raise WorkspaceError(f"{paths.folder}: cannot write results ({error.strerror or error})") from None
    return _report(result, summary, paths, exit_code)


def _with_align_time(result, align_s: float):
    import dataclasses

    return dataclasses.replace(result, timing=dataclasses.replace(result.timing, align_s=align_s))


def _number(value) -> str:
    return "NaN" if value is None else f"{value:.6f}"


def _report(result, summary: dict, paths: OutputPaths, exit_code: int) -> Report:
    from precision_tool.comparison import iter_failing

    counts = summary["counts"]
    threshold = result.cosine_threshold
    gate = f"cosine >= {threshold:g}" if threshold is not None else "cosine gate off"
    if counts["compared"] == 0:
        title = f"Nothing could be compared: {result.alignment.coverage.npu_tensors} NPU tensors, none aligned"
    else:
        title = (f"Compared {counts['compared']} tensors ({gate}): {counts['passed']} passed, "
                 f"{counts['failed']} failed")
        if counts["errors"]:
            title += f", {counts['errors']} unreadable"
    report = Report(title=title)
    failing = list(iter_failing(result))
    if failing:
        rows = [[r.index, r.tensor_id or r.op_name, r.op_type, r.status, _number(r.cosine),
                 _number(r.metric("MaxAbsoluteError")), r.reason] for r in failing[:_REPORT_ROWS]]
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
        report.add_text(line + f"; {inherited} later ops only inherit errors, {other_roots} other roots.")
    coverage = result.alignment.coverage
    notes = [f"unreadable, not compared: {message}" for _, message in coverage.unreadable[:UNREADABLE_SHOWN]]
    if len(coverage.unreadable) > UNREADABLE_SHOWN:
        notes.append(f"... {len(coverage.unreadable) - UNREADABLE_SHOWN} more unreadable dump files "
                     f"(listed in the summary)")
    if counts["not_compared"]:
        notes.append(f"{counts['not_compared']} NPU tensors have no reference (listed in the CSV and summary).")
    if coverage.graph_ops_without_dump:
        notes.append(f"{len(coverage.graph_ops_without_dump)} graph ops have no dump file.")
    if coverage.reference_only:
        notes.append(f"{len(coverage.reference_only)} reference tensors were not compared with anything.")
    if result.alignment.order_source != "graph":
        notes.append("No graph: tensors matched by name, inputs not compared, order by dump time.")
    if counts["reused_input_results"]:
        notes.append(f"{counts['reused_input_results']} inputs are byte-identical to their producer's output and "
                     f"share its result.")
    below = summary["allclose_below_default"]
    if below:
        notes.append(f"{len(below)} tensors are below their dtype's allclose default (reported, not failed).")
    if notes:
        report.add_text("Coverage:", *("  " + note for note in notes))
    written = [f"Result: {paths.csv}", f"Summary: {paths.summary}"]
    if paths.junit:
        written.append(f"JUnit: {paths.junit}")
    report.add_text(*written)
    timing = summary["timing"]
    report.status = (f"exit {exit_code}; {timing.get('total_s', 0):.2f} s "
                     f"(align {timing['align_s']:.2f} s, compare {timing['compare_s']:.2f} s, "
                     f"{timing['workers']} worker{'s' if timing['workers'] != 1 else ''})")
    report.exit_code = exit_code
    data = {key: value for key, value in summary.items() if key not in ("order", "data_inputs")}
    data.update(result_csv_path=paths.csv, summary_path=paths.summary, junit_path=paths.junit)
    report.data = data
    return report
