"""Docstring pieces every metric function repeats (Parameters, Raises, the non-finite note)."""
from __future__ import annotations

PIECES = {
    "params": """\
    x : (N,) array_like of real numbers
        NPU values, flattened. float16, float32, integers and booleans: sums are float64, widened a block at a
        time.
    y : (N,) array_like of real numbers
        Reference values, flattened, the same length as `x`.""",
    "raises": """\
    Raises
    ------
    MetricInputError
        If an input is not 1-D, does not hold real numbers, or the lengths differ.""",
    "nonfinite": """\
    NaN and inf are not masked: a NaN or an inf anywhere makes the result ``nan``.
    :func:`~precision_tool.metrics.tensor_verdict.compare_tensors` classifies non-finite positions and measures the
    pairs finite on both sides.""",
    "precision": """\
    Computed in float64 (msaccucmp computes in float32; see :mod:`precision_tool.metrics`).""",
}


def fill_doc(func):
    """Replace ``{params}``, ``{raises}``, ``{nonfinite}`` and ``{precision}`` in ``func.__doc__``."""
    if func.__doc__:
        doc = func.__doc__
        for key, text in PIECES.items():
            doc = doc.replace("{" + key + "}", text.strip())
        func.__doc__ = doc
    return func
