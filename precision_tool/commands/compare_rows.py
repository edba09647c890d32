"""The rows of the latest comparison result (``temp/vector_compare/<ts>/result_<ts>.csv``) for one op.

Finding the latest result is ``vcs``'s rule (:func:`precision_tool.commands.vector_summary.result_csvs`) and
reading it is :func:`precision_tool.reports.result_csv.read_result_csv` (ours and msaccucmp's CSVs): ``ni``
only picks the rows whose ``TensorIndex`` names the op (or whose ``NPUDump`` is the op, for rows without a
tensor) and the columns a reader of ``ni`` needs.
"""
from __future__ import annotations

import os
from typing import List, Optional, Tuple

COMPARE_HEADERS = ("tensor", "ground truth", "cosine", "max abs err", "max rel err", "mean rel err", "verdict",
                   "reason")
_METRICS = ("CosineSimilarity", "MaxAbsoluteError", "MaxRelativeError", "MeanRelativeError")
DEFAULT_THRESHOLD = 0.99


def latest_result_csv(temp_dir: str) -> Optional[str]:
    """The newest result CSV under ``temp_dir/vector_compare``, or ``None``."""
    from precision_tool.commands.vector_summary import result_csvs

    folder = os.path.join(temp_dir, "vector_compare")
    found = result_csvs(folder) if os.path.isdir(folder) else []
    return found[-1] if found else None


def _metric_text(value) -> str:
    return "NaN" if value is None else f"{value:.6f}"


def compare_rows_for_op(csv_path: str, op_name: str,
                        cosine_threshold: float = DEFAULT_THRESHOLD) -> Tuple[List[str], List[List[str]]]:
    """``(headers, rows)`` of ``csv_path`` that belong to ``op_name``; the verdict is judged at
    ``cosine_threshold`` (``pass``, ``fail``, ``error``, ``not_compared``).

    Raises :class:`~precision_tool.errors.ResultCsvError` when the file is not a readable result CSV.
    """
    from precision_tool.reports.result_csv import read_result_csv

    rows = []
    for row in read_result_csv(csv_path).rows:
        if row.op_name != op_name and not (not row.tensor_id and row.npu_dump == op_name):
            continue
        rows.append([row.tensor_id or "-", row.ground_truth,
                     *(_metric_text(row.metrics.get(name)) for name in _METRICS),
                     row.judge(cosine_threshold), row.reason])
    return list(COMPARE_HEADERS), rows
