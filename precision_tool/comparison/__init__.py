"""Comparison: the ten metrics over every aligned pair, streamed over worker processes, with verdicts.

Between :mod:`precision_tool.metrics` (one pair of arrays) and :mod:`precision_tool.reports` (CSV, summary,
JUnit). :func:`compare_alignment` takes an :class:`~precision_tool.alignment.Alignment` and returns a
:class:`ComparisonResult`: one frozen :class:`TensorResult` per row, in execution order, and the first
divergence. Modules: :mod:`.engine` (planning, workers, shared input results), :mod:`.worker` (one pair),
:mod:`.result` (records), :mod:`.progress` (terminal progress bar).
"""
from precision_tool.comparison.engine import compare_alignment, default_workers, iter_failing
from precision_tool.comparison.progress import ProgressBar, terminal_progress
from precision_tool.comparison.result import (ALL_STATUSES, COMPARED_STATUSES, ERROR, NO_DUMP, NOT_COMPARED,
                                              PASSING_STATUSES, ComparisonResult, TensorResult, Timing)

__all__ = ["compare_alignment", "default_workers", "iter_failing", "ComparisonResult", "TensorResult", "Timing",
           "ProgressBar", "terminal_progress", "ERROR", "NO_DUMP", "NOT_COMPARED", "ALL_STATUSES",
           "COMPARED_STATUSES", "PASSING_STATUSES"]
