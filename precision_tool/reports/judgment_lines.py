"""The lines every report on a comparison prints about its one judgment (:mod:`precision_tool.comparison.judgment`):
the runs not computing the same model, the culprit, the tensors below the rounding noise and the float16 underflow.
"""
from __future__ import annotations

from typing import List


def judgment_lines(result) -> List[str]:
    """One line per finding of ``result``'s judgment that is not a failing tensor (``compare`` prints them under its
    table; ``ac`` words them in its verdict)."""
    from precision_tool.comparison.noise import noise_line
    from precision_tool.comparison.same_model import drift_lines, mismatch_lines
    from precision_tool.comparison.systemic import systemic_line
    from precision_tool.comparison.underflow import underflow_line

    judgment = result.verdict
    if not judgment.same_model:
        return mismatch_lines(judgment.mismatches)
    lines = drift_lines(judgment.mismatches)
    culprit = judgment.culprit
    if culprit is not None:
        figures = f": {culprit.measured.summary}" if culprit.measured is not None and culprit.measured.measured else ""
        hint = "" if result.npu_vs_npu else "; ac -c replays each op to tell the error it adds"
        lines.append(f"Culprit: {culprit.op_name}, by {culprit.how}{figures} (docs/local-error.md{hint})")
    if judgment.systemic:
        lines.append(systemic_line(judgment.systemic) + ".")
    if judgment.noise:
        lines.append(noise_line(judgment) + ".")
    if judgment.underflow:
        lines.append(underflow_line(judgment.underflow) + ".")
    return lines
