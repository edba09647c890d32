"""The arrays an NPU run would dump, per NPU op, and which ops would report an overflow.

:class:`NpuValues`: a compute op's outputs are the emulated values (:mod:`~precision_tool.capture.emulate.numerics`),
a ``Cast`` converts its input with numpy as the device does, a ``TransData`` passes values on, a ``Const`` is the
folded constant. :func:`find_overflows`: an executed op overflows when an output, or a value it rounds internally, is
not finite (on a saturating target, was beyond float16's range before it saturated); it is the *origin* when all its
inputs are finite. Status ``0x100`` (float32 to float16 conversion) marks a ``Cast`` or Cube op that starts an
overflow, ``0x20`` any other op. See docs/emulate.md#files-written ("Overflow") and
docs/internals/emulator.md#npu_values.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, List

import numpy as np

from precision_tool.capture.emulate import op_tables as T
from precision_tool.capture.emulate.hardware import FLOAT16_MAX
from precision_tool.capture.emulate.numerics import NumericsResult
from precision_tool.capture.emulate.npu_plan import NpuOp, NpuPlan, Ref

STATUS_FP_OVERFLOW = 0x20
STATUS_FP16_CONVERSION = 0x100


class NpuValues:
    """Arrays (origin layout, device dtype) of every NPU op output, computed on demand and cached."""

    def __init__(self, plan: NpuPlan, numerics: NumericsResult):
        self.plan = plan
        self.numerics = numerics
        self._cache: Dict[Ref, np.ndarray] = {}

    def tensor(self, ref: Ref) -> np.ndarray:
        if ref not in self._cache:
            self._cache[ref] = self._compute(ref)
        return self._cache[ref]

    def _compute(self, ref: Ref) -> np.ndarray:
        op = self.plan.op(ref[0])
        out = op.outputs[ref[1]]
        if op.kind == "cast":
            source = self.tensor(op.inputs[0])
            if self.plan.hardware.saturates and out.dtype == "float16":  # 910: inf -> +-65504, NaN -> 0
                source = np.nan_to_num(np.clip(source, -FLOAT16_MAX, FLOAT16_MAX), nan=0.0)
            with np.errstate(over="ignore", invalid="ignore"):
                return source.astype(out.dtype)
        if op.kind == "transdata":
            return self.tensor(op.inputs[0])
        if op.kind == "const":
            source = self.numerics.constants[out.tf_tensor]
        else:
            source = self.numerics.values[out.tf_tensor]
        with np.errstate(over="ignore", invalid="ignore"):
            return np.asarray(source).astype(out.dtype, copy=False)

    def inputs(self, op: NpuOp) -> List[np.ndarray]:
        return [self.tensor(ref) for ref in op.inputs]

    def outputs(self, op: NpuOp) -> List[np.ndarray]:
        return [self.tensor((op.name, k)) for k in range(len(op.outputs))]


def _all_finite(arrays, saturating: bool = False) -> bool:
    """No array holds inf/NaN -- nor, on a saturating target, a float16 +-65504 (what an overflow became)."""
    def clean(a) -> bool:
        if not np.issubdtype(a.dtype, np.floating) or not bool(np.isfinite(a).all()):
            return not np.issubdtype(a.dtype, np.floating)
        return not (saturating and a.dtype == np.float16 and bool((np.abs(a) >= FLOAT16_MAX).any()))
    return all(clean(np.asarray(a)) for a in arrays)


def _does_arithmetic(plan: NpuPlan, op: NpuOp) -> bool:
    """TransData only moves data and a widening Cast is exact: neither can raise an overflow."""
    if op.kind == "transdata":
        return False
    if op.kind == "cast":
        source = plan.tensor(op.inputs[0]).dtype
        return np.dtype(op.outputs[0].dtype).itemsize < np.dtype(source).itemsize
    return True


def _saturating_cast(plan: NpuPlan, values: NpuValues, op: NpuOp) -> bool:
    """On a saturating target, a narrowing Cast to float16 whose input is beyond its range or NaN (it stores
    +-65504 or 0: the overflow its output no longer shows)."""
    if not plan.hardware.saturates or op.kind != "cast" or op.outputs[0].dtype != "float16":
        return False
    source = np.asarray(values.tensor(op.inputs[0]))
    with np.errstate(invalid="ignore"):
        return bool((~(np.abs(source) <= FLOAT16_MAX)).any())


@dataclass(frozen=True)
class OverflowEvent:
    """An executed op that would write an Opdebug record. ``origin``: its inputs were all finite."""

    op_name: str
    status: int
    origin: bool


def find_overflows(plan: NpuPlan, values: NpuValues) -> List[OverflowEvent]:
    """Every executed op whose outputs (or internally rounded values) are not all finite, in
    execution order; see the module docstring for origins and status words."""
    events = []
    for op in plan.tasks:
        if not _does_arithmetic(plan, op):
            continue
        saturating = plan.hardware.saturates
        produced = values.outputs(op) + [np.asarray(a) for a in values.numerics.rounding.get(op.name, [])]
        if op.name not in values.numerics.saturated and not _saturating_cast(plan, values, op) \
                and _all_finite(produced):
            continue
        origin = _all_finite(values.inputs(op), saturating)
        lead_type = plan.graph.op(op.group.lead).type if op.group is not None else ""
        converts = op.kind == "cast" or lead_type in T.CUBE_TYPES
        status = STATUS_FP16_CONVERSION if origin and converts else STATUS_FP_OVERFLOW
        events.append(OverflowEvent(op.name, status, origin))
    return events
