"""The rows of the latest comparison result (``temp/vector_compare/<ts>/result_<ts>.csv``) for one op.

Finding and reading the result is :func:`precision_tool.reports.result_store.load_result` (the lossless
result file when there is one, else the CSV, ours or msaccucmp's), judged at the run's own threshold as
``vcs`` judges it: ``ni`` only picks the op's rows and the columns a reader of ``ni`` needs.
"""
from __future__ import annotations

import os
from typing import List, Optional, Tuple

COMPARE_HEADERS = ("tensor", "ground truth", "cosine", "max abs err", "max rel err", "mean rel err", "verdict",
                   "reason")
_METRICS = ("CosineSimilarity", "MaxAbsoluteError", "MaxRelativeError", "MeanRelativeError")


def latest_result_csv(temp_dir: str, selection=None) -> Optional[str]:
    """The newest result CSV under ``temp_dir/vector_compare`` (of ``selection``'s step and device, when given:
    :func:`~precision_tool.reports.result_store.find_result_csv`), or ``None``."""
    from precision_tool.errors import WorkspaceError
    from precision_tool.reports.result_outputs import RESULT_FOLDER
    from precision_tool.reports.result_store import find_result_csv

    folder = os.path.join(temp_dir, RESULT_FOLDER)
    if not os.path.isdir(folder):
        return None
    try:
        return find_result_csv(folder, selection=selection)
    except WorkspaceError:  # none there, or none of that step and device
        return None


def compare_rows_for_op(csv_path: str, op_name: str) -> Tuple[List[str], List[List[str]]]:
    """``(headers, rows)`` of the result at ``csv_path`` that belong to ``op_name``; the verdict is the row's
    status word (``pass``, ``fail``, ``error``, ``not_compared``) at the run's threshold.

    Raises a :class:`~precision_tool.errors.PrecisionToolError` when the result cannot be read.
    """
    from precision_tool.reports.result_csv import number_text
    from precision_tool.reports.result_store import load_result

    stored = load_result(csv_path)
    rows = []
    for position, row in stored.rows_of_op(op_name):
        rows.append([row.tensor_id or "-", row.ground_truth,
                     *(number_text(row.metric(name)) for name in _METRICS),
                     row.status.verdict, stored.shown_reason(position)])
    return list(COMPARE_HEADERS), rows
