"""Where a compare run's outputs go, and writing them: the same files for ``compare``, ``vc`` and ``ac -c``.

Outputs, written atomically in this order so that the CSV -- what ``vcs`` looks for -- appears last, only
when everything else is in place:

1. ``summary.json`` (names the CSV it describes; :mod:`.summary`),
2. the JUnit XML, when asked for (:mod:`.junit`),
3. ``result_{YYYYmmddHHMMSS}.jsonl``, the lossless record (:mod:`.result_store`),
4. ``result_{YYYYmmddHHMMSS}.csv``, msaccucmp's columns (:mod:`.result_csv`).

A run killed at any point leaves no CSV, or a complete one with everything beside it. Output folders are
checked against every input first (:func:`~precision_tool.config.ensure_output_dir`): nothing is ever
written into an input folder.
"""
from __future__ import annotations

import os
import time
from dataclasses import dataclass
from typing import Any, Dict, Optional, Sequence

from precision_tool.comparison import ComparisonResult
from precision_tool.config import Workspace, ensure_output_dir
from precision_tool.errors import WorkspaceError

RESULT_FOLDER = "vector_compare"


@dataclass(frozen=True)
class OutputPaths:
    """The files one run writes; ``junit`` is ``None`` unless asked for."""

    folder: str
    csv: str
    results: str
    summary: str
    junit: Optional[str] = None


def timestamp() -> str:
    return time.strftime("%Y%m%d%H%M%S")


def workspace_result_folder(data_dir: str) -> str:
    """``WORKSPACE/temp/vector_compare``, where ``compare``/``vc``/``ac -c`` write by default and ``vcs`` looks."""
    return os.path.join(Workspace(data_dir).temp, RESULT_FOLDER)


def plan_outputs(out_dir: Optional[str], default_root: str, inputs: Sequence[str],
                 junit: Optional[str] = None) -> OutputPaths:
    """Where this run writes: ``OUT/result_{ts}.csv`` with ``-out``, else ``ROOT/{ts}/result_{ts}.csv``;
    a second run in the same second gets ``_1``, ``_2``... Checks no output lies inside an input."""
    from precision_tool.reports.result_store import results_path_for
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
    csv_path = os.path.join(folder, name)
    return OutputPaths(folder, csv_path, results_path_for(csv_path), os.path.join(folder, SUMMARY_NAME), junit_path)


def write_outputs(result: ComparisonResult, paths: OutputPaths, *, total_s: Optional[float] = None
                  ) -> Dict[str, Any]:
    """Write every output of ``result`` in the order of the module docstring; returns the summary written.

    Raises :class:`WorkspaceError` when a file cannot be written (a full disk, a read-only folder).
    """
    from precision_tool.reports.junit import write_junit
    from precision_tool.reports.result_csv import write_result_csv
    from precision_tool.reports.result_store import write_results_file
    from precision_tool.reports.summary import build_summary, write_summary

    summary = build_summary(result, result_csv=paths.csv, exit_code=result.exit_code(), total_s=total_s)
    try:
        write_summary(paths.summary, summary)
        if paths.junit:
            write_junit(paths.junit, result)
        write_results_file(paths.results, result, paths.csv)
        write_result_csv(paths.csv, result.results, npu_vs_npu=result.npu_vs_npu)
    except OSError as error:
        raise WorkspaceError(f"{paths.folder}: cannot write results ({error.strerror or error})") from None
    return summary
