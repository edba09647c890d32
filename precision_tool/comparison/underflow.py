r"""Float16 underflow: failing tensors whose reference lies mostly below the NPU dtype's smallest normal.

A failing tensor stored in float16 (or bfloat16) on the NPU **underflows** when the rms of its reference is at most
:math:`t / \sqrt{2}`, :math:`t` the smallest normal: by Markov's inequality at least half its reference lies below
:math:`t`. Its NPU side must be that small too (rms at most :math:`t`): flushed or coarsened, never enlarged. The
rms come from the StandardDeviation metric every row keeps (:math:`\mathrm{rms}^2 = \mu^2 + \sigma^2`), so stored
results are judged alike, but not a CSV read alone. The remedy is not a kernel: scale the loss, or keep the ops in
float32. See docs/local-error.md#underflow.
"""
from __future__ import annotations

import math
from typing import Any, Sequence, Tuple

from precision_tool.comparison.figures import npu_rms, reference_rms
from precision_tool.metrics.rounding import SMALLEST_NORMAL
from precision_tool.status import Status

#: NPU dtypes narrower than the float32 reference, whose smallest normal a float32 value may lie below.
NARROW_DTYPES = ("float16", "bfloat16")
#: ``rms(reference) <= THRESHOLD_SHARE * smallest normal`` puts at least half the reference below it.
THRESHOLD_SHARE = 1 / math.sqrt(2)


def underflows(row) -> bool:
    """True for a compared, failing row stored in a narrow dtype on the NPU whose reference rms is at most the
    smallest normal over sqrt(2) (see the module docstring).

    >>> from precision_tool.comparison.result import TensorResult
    >>> from precision_tool.metrics import ALL, MeanStd
    >>> metrics = [None] * len(ALL); metrics[ALL.index("StandardDeviation")] = MeanStd(0.0, 5e-8, 0.0, 4.7e-8)
    >>> row = TensorResult(3, "dw:output:0", "dw", "output", 0, "DepthwiseConv2D", Status.FAIL, npu_dtype="float16",
    ...                    metrics=tuple(metrics))
    >>> underflows(row)
    True
    """
    if not (row.compared and row.failed) or row.npu_dtype not in NARROW_DTYPES:
        return False
    if row.status not in (Status.FAIL, Status.ONE_SIDE_ZERO):
        return False
    rms, npu = reference_rms(row), npu_rms(row)
    tiny = SMALLEST_NORMAL[row.npu_dtype]
    return rms is not None and npu is not None and rms <= THRESHOLD_SHARE * tiny and npu <= tiny


def underflowing(rows: Sequence) -> Tuple[Any, ...]:
    """The rows of ``rows`` that :func:`underflows`, in order."""
    return tuple(row for row in rows if underflows(row))


def underflow_text(row) -> str:
    """``reference rms 4.7e-08, below float16's smallest normal 6.1e-05``."""
    return (f"reference rms {reference_rms(row):.2g}, below {row.npu_dtype}'s smallest normal "
            f"{SMALLEST_NORMAL[row.npu_dtype]:.2g}")


def underflow_remedy(rows) -> str:
    """Keep the producing ops in float32 -- and, for gradients, scale the loss."""
    gradients = any("grad" in row.op_name.lower() or row.op_type.endswith("Grad") for row in rows)
    keep = "keep the ops that produce them in float32 (customize_dtypes; bisect precision proves which)"
    return f"scale the loss, or {keep}" if gradients else keep


def underflow_line(rows: Sequence) -> str:
    """``float16 underflow: N failing tensor(s) of M op(s) ...; REMEDY``: how every report names them."""
    first = rows[0]
    ops = len({row.op_name for row in rows})
    return (f"float16 underflow: {len(rows)} failing tensor(s) of {ops} op(s) hold values mostly below "
            f"float16's smallest normal (first: {first.tensor_id}, {underflow_text(first)}), flushed to 0 or "
            f"stored coarsely by the NPU; {underflow_remedy(rows)}")
