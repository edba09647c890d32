"""Comparison: the ten metrics over every aligned pair, streamed over worker processes, with verdicts.

Between :mod:`precision_tool.metrics` (one pair of arrays) and :mod:`precision_tool.reports` (CSV, result file,
summary, JUnit). :func:`compare_alignment` takes an :class:`~precision_tool.alignment.Alignment` and returns a
:class:`ComparisonResult`: one frozen :class:`TensorResult` per row, in execution order, and the first
divergence; :func:`run_comparison` is the whole job from folders (:class:`CompareRequest`). Modules:
:mod:`.pipeline` (request -> result), :mod:`.engine` (planning, workers, shared input results), :mod:`.worker`
(one pair), :mod:`.result` (the records), :mod:`.progress_bar` (terminal progress bar).
"""
from precision_tool.comparison.engine import compare_alignment, default_workers
from precision_tool.comparison.pipeline import CompareRequest, run_comparison
from precision_tool.comparison.progress_bar import ProgressBar, terminal_progress
from precision_tool.comparison.result import ComparisonResult, RunFacts, TensorResult, Timing

__all__ = ["compare_alignment", "default_workers", "run_comparison", "CompareRequest", "ComparisonResult",
           "RunFacts", "TensorResult", "Timing", "ProgressBar", "terminal_progress"]
