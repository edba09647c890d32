"""The HTML report: one self-contained file a user attaches to a bug or a CI run.

The result read back (:mod:`precision_tool.reports.result_store`), ``ac``'s findings (:mod:`.findings`) and the
failing tensors loaded again (:mod:`.details`) become plain page data (:mod:`.data`), drawn as SVG (:mod:`.plot`,
:mod:`.histogram`) and laid out as one page with its CSS and JavaScript inline (:mod:`.page`); :mod:`.export` writes
``--plots DIR``. :func:`build_report` and :func:`write_report` are what the commands call. Nothing here imports
TensorFlow or a plotting library; Chromium is only run for PNG files and the browser test. The data flow:
docs/internals/reports.md#html.
"""
from __future__ import annotations

import os
import re
from typing import Optional

from precision_tool.formats.dump_tree import DumpSelection

from precision_tool.reports.html.data import ReportData, build_report_data
from precision_tool.reports.html.details import DEFAULT_DETAILS, DEFAULT_WORST, failing_details
from precision_tool.reports.html.findings import (CheckFindings, findings_from_autocheck, findings_from_workspace,
                                                  workspace_of_result)
from precision_tool.reports.html.page import render_page
from precision_tool.reports.result_store import StoredResult, load_result

RUN_FIRST = "run 'precision_tool -d WORKSPACE ac -c' or 'compare' first, or give -f RESULT_DIR_OR_CSV"

__all__ = ["build_report", "write_report", "write_run_report", "ensure_report_folder", "default_report_path",
           "ReportData", "CheckFindings", "StoredResult", "load_result", "findings_from_autocheck",
           "findings_from_workspace", "render_page", "DEFAULT_DETAILS", "DEFAULT_WORST"]


def build_report(target: str, *, threshold: Optional[float] = None, data_dir: str = "", findings=None,
                 run_checks: bool = True, details: int = DEFAULT_DETAILS, worst: int = DEFAULT_WORST,
                 limit: int = 5, graph_only: bool = False, selection: Optional[DumpSelection] = None) -> ReportData:
    """The page's data for the result at ``target`` (a CSV, or a folder searched for the latest one).

    ``findings`` are ``ac``'s when the caller has them; otherwise, with ``run_checks``, the overflow and fusion
    checks run on the workspace (``data_dir``, else the one the result's NPU dump lies in). ``details``
    failing tensors get element errors (0 = all), each with its ``worst`` largest errors; ``limit`` caps the
    rows of ``ac``'s tables, as ``ac -l`` does. ``graph_only``: for the graph view alone, which shows no element
    details -- none are read (a second alignment and every failing tensor's values). ``selection``: the dump
    step and device the result is of (a folder's latest result of it), read again for the checks and details.
    """
    selection = DumpSelection() if selection is None else selection
    source = load_result(target, threshold, hint=RUN_FIRST, selection=selection)
    if findings is None and run_checks:
        workspace = workspace_of_result(data_dir, source.inputs)
        if workspace is not None:
            findings = findings_from_workspace(workspace, source, limit, selection)
    return build_report_data(source, findings, None if graph_only else failing_details(source, details, worst,
                                                                                       selection),
                             selection=selection)


def default_report_path(csv_path: str) -> str:
    """``report_{timestamp}.html`` beside ``result_{timestamp}.csv`` (``NAME.html`` for other CSV names)."""
    folder, name = os.path.split(os.path.abspath(csv_path))
    stem = re.sub(r"\.csv$", "", name, flags=re.IGNORECASE)
    return os.path.join(folder, (stem.replace("result_", "report_", 1) if stem.startswith("result_") else stem)
                        + ".html")


def write_report(data: ReportData, path: str, graph_only: bool = False) -> str:
    """Write the page (``graph_only``: the graph view alone) atomically; returns the path. ``OSError`` propagates
    (callers name the file)."""
    from precision_tool.fileio import atomic_write

    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    with atomic_write(path, "w") as handle:
        handle.write(render_page(data, graph_only=graph_only))
    return os.fspath(path)


def ensure_report_folder(path: str, inputs) -> str:
    """Create the folder ``path`` will go in and return ``path``, refusing one inside the run's inputs with
    :class:`~precision_tool.errors.WorkspaceError` naming ``path``: the result's ``inputs`` (NPU dump,
    reference, graphs) and, when the NPU dump lies in a workspace, every input folder of that workspace
    (:attr:`~precision_tool.config.Workspace.input_folders`: ``tf/tf_debug``, ``fusion`` ... too)."""
    from precision_tool.config import Workspace, ensure_output_file

    paths = [inputs.get(key) for key in ("npu", "reference", "graph", "reference_graph")]
    workspace = workspace_of_result("", inputs)
    ensure_output_file(path, *[p for p in paths if p and os.path.exists(p)],
                       folders=Workspace(workspace).input_folders if workspace else ())
    return path


def write_run_report(csv_path: str, html_path: str, findings=None, details: int = DEFAULT_DETAILS,
                     worst: int = DEFAULT_WORST, selection: Optional[DumpSelection] = None) -> str:
    """The page of a run that was just written (``ac -c --html``, ``compare --html``): ``findings`` are ``ac``'s
    (:func:`findings_from_autocheck`) or ``None`` (no overflow/fusion checks); ``selection``: the dump step and
    device it compared. Returns ``html_path``.

    Raises :class:`~precision_tool.errors.WorkspaceError` when the page cannot be written there.
    """
    from precision_tool.errors import WorkspaceError

    data = build_report(csv_path, findings=findings, run_checks=False, details=details, worst=worst,
                        selection=selection)
    ensure_report_folder(html_path, data.inputs)
    try:
        return write_report(data, html_path)
    except OSError as error:
        raise WorkspaceError(f"{html_path}: cannot write the report ({error.strerror or error})") from None
