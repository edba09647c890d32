"""The lines every report on a comparison prints about its one judgment (:mod:`precision_tool.comparison.judgment`):
the runs not computing the same model, the culprit, the tensors below the rounding noise and the float16 underflow.
"""
from __future__ import annotations

from typing import List

from precision_tool.reports.format import counted


def judgment_lines(result) -> List[str]:
    """One line per finding of ``result``'s judgment that is not a failing tensor (``compare`` prints them under its
    table; ``ac`` words them in its verdict)."""
    from precision_tool.comparison.same_model import mismatch_lines
    from precision_tool.comparison.underflow import underflow_text

    judgment = result.verdict
    if not judgment.same_model:
        return mismatch_lines(judgment.mismatches)
    lines = []
    culprit = judgment.culprit
    if culprit is not None:
        figures = f": {culprit.measured.summary}" if culprit.measured is not None and culprit.measured.measured else ""
        lines.append(f"Culprit: {culprit.op_name}, by {culprit.how}{figures} (docs/local-error.md; ac -c replays "
                     "each op to tell the error it adds)")
    if judgment.noise:
        first = judgment.noise[0]
        lines.append(f"{counted(len(judgment.noise), 'tensor')} below the rounding noise of the sums that make them "
                     f"pass on absolute error (BELOW_NOISE; first: {first.tensor_id}).")
    if judgment.underflow:
        first = judgment.underflow[0]
        lines.append(f"{counted(len(judgment.underflow), 'failing tensor')} are float16 underflow (first: "
                     f"{first.tensor_id}, {underflow_text(first)}): scale the loss, or keep their ops in float32.")
    return lines
