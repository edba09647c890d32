"""Which op *adds* the error: one attribution, three methods, one set of constants.

Each op with a compared output is measured by the first method that can: 1. **replay**: its worst float output's
``local_error / local_floor`` stands out above 1 and at :data:`STANDOUT_FACTOR` times the other replayed ops'
median (the floor alone with fewer than :data:`MIN_PEERS`), or beyond Ascend's standard whatever they do;
2. **error jump**: its output's total error stands out at :data:`JUMP_FACTOR` times its float inputs' and above its
dtype's floor; 3. **not measured**. 4. **fusion excess** (:func:`fusion_excess`) compares a fused op with the
fusion-off run instead. ``BELOW_NOISE`` outputs are left out. The culprit is the earliest op standing out by replay,
else by error jump. Rules: docs/local-error.md#attribution; formulas: docs/internals/comparison.md#attribution.
"""
from __future__ import annotations

import bisect
import math
import statistics
from dataclasses import dataclass, replace
from typing import Any, Dict, List, Optional, Sequence, Tuple

from precision_tool.comparison.figures import element_count, red, reference_rms, rmse
from precision_tool.formats.tensor_kind import TensorKind
from precision_tool.metrics.rounding import FLOOR_FACTOR, MIN_FLOOR, is_float, ratio_to_floor, rounding_floor
from precision_tool.metrics.spec import (CUBE_ROUNDINGS, HF32_ROUNDINGS, SPEC_SOURCE, cube_error_limit, exceeds_spec,
                                         spec_threshold)
from precision_tool.status import Status

METHOD_REPLAY, METHOD_ERROR_JUMP, METHOD_NONE = "replay", "error jump", "not measured"
METHOD_FUSION = "fusion excess"
STANDOUT_FACTOR = 10.0
MIN_PEERS = 3
JUMP_FACTOR = 10.0
FUSION_FLOOR = 0.01
FUSION_GROWTH = 2.0
# NPU op types whose output element adds (or subtracts) one element of each input: their absolute errors add up.
SUM_TYPES = frozenset({"Add", "AddV2", "Sub", "BiasAdd", "AddN", "AccumulateNV2", "Neg"})
# NPU op types whose output element sums count(input 0) / count(output) elements of input 0.
REDUCTION_TYPES = frozenset({"BiasAddGrad", "Sum", "ReduceSum", "ReduceSumD", "UnsortedSegmentSum",
                             "BNTrainingReduce", "BNTrainingUpdateGrad", "Mean", "ReduceMean", "ReduceMeanD"})
# Reductions that divide their sum by the number of terms.
MEAN_TYPES = frozenset({"Mean", "ReduceMean", "ReduceMeanD"})
# NPU op types whose output jumps where a float input crosses a step (a mask, a routing, a rounding).
STEP_FUNCTION_TYPES = frozenset({
    "ReluGrad", "Relu6Grad", "LeakyReluGrad", "EluGrad", "SeluGrad", "MaxPoolGrad", "MaxPoolGradV2",
    "MaxPoolGradWithArgmax", "Floor", "Ceil", "Round", "Rint", "Sign",
})


@dataclass(frozen=True)
class OpAttribution:
    """One op's measurement. ``local``/``floor``/``inherited``: its worst output's (replay), ``total`` its
    worst output's RED against the reference, ``inputs_total`` the largest RED of its compared inputs (error
    jump), ``score``: the ratio (replay) or the jump (error jump); ``why_not``: why replay did not decide."""

    op_name: str
    op_type: str
    position: int
    method: str
    tensor_id: str = ""
    dtype: str = ""
    score: Optional[float] = None
    local: Optional[float] = None
    floor: Optional[float] = None
    inherited: Optional[float] = None
    total: Optional[float] = None
    inputs_total: Optional[float] = None
    precision: str = ""
    standout: bool = False
    why_not: str = ""
    uncompared_inputs: Tuple[int, ...] = ()
    spec_error: Optional[float] = None

    @property
    def spec(self) -> Optional[float]:
        """The standard's threshold for the op's dtype (:func:`~precision_tool.metrics.spec.spec_threshold`)."""
        return spec_threshold(self.dtype)

    @property
    def cube_limit(self) -> Optional[float]:
        """The most local error a correct Cube op of its type and dtype adds (:func:`cube_limit`); ``None`` for
        other ops and when not replayed."""
        return cube_limit(self.op_type, self.dtype, self.floor) if self.method == METHOD_REPLAY else None

    @property
    def beyond_spec(self) -> bool:
        """Replayed and beyond what a correct Ascend kernel of its type and dtype adds (:func:`beyond_standard`)."""
        return self.method == METHOD_REPLAY and beyond_standard(self.op_type, self.dtype, self.local, self.floor,
                                                                  self.spec_error)

    @property
    def spec_text(self) -> str:
        """What the op was held to (:func:`standard_text`); ``""`` without a figure."""
        return standard_text(self.op_type, self.dtype, self.floor, self.spec_error) \
            if self.method == METHOD_REPLAY else ""

    @property
    def measured(self) -> bool:
        """True when replay or the error jump measured the op."""
        return self.method in (METHOD_REPLAY, METHOD_ERROR_JUMP) and self.score is not None

    @property
    def within_floor(self) -> bool:
        """Measured, and it adds no error of its own: a replay ratio of at most 1, or an error jump that does not
        stand out (docs/internals/comparison.md#attribution)."""
        if not self.measured:
            return False
        if self.method == METHOD_REPLAY:
            return not exceeds_floor(self.score or 0.0)
        return not _jumps(self.total, self.floor, self.score)

    @property
    def summary(self) -> str:
        """One line of figures, saying how they were measured."""
        if self.method == METHOD_REPLAY:
            inherited = f", inherited {percent(self.inherited)}" if self.inherited is not None else ""
            total = f", total {percent(self.total)}" if self.total is not None else ""
            spec = f"; {self.spec_text}" if self.spec_text else ""
            return (f"local error {percent(self.local)} ({self.dtype} floor {percent(self.floor)}{spec}){inherited}"
                    f"{total}: "
                    f"{self.tensor_id} replayed ({self.precision}) on the op's own dumped inputs")
        if self.method == METHOD_ERROR_JUMP:
            why = "" if self.why_not == NO_REPLAY else f": {self.why_not}"
            return (f"error jump {self.score:.3g}x: {self.tensor_id} is {percent(self.total)} from the reference, its "
                    f"float inputs at most {percent(self.inputs_total)} (not replayed{why})")
        return f"not measured ({self.why_not})"

    @property
    def ratio_text(self) -> str:
        """``5.3x its floor`` (replay), ``error jump 12x`` (error jump), ``not measured``."""
        if self.method == METHOD_REPLAY:
            return f"{self.score:.3g}x its floor"
        if self.method == METHOD_ERROR_JUMP:
            return f"error jump {self.score:.3g}x"
        return "not measured"

    def to_dict(self) -> dict:
        def number(value):
            return value if value is None or math.isfinite(value) else str(value)
        return {"op_name": self.op_name, "op_type": self.op_type, "position": self.position, "method": self.method,
                "tensor_id": self.tensor_id, "dtype": self.dtype, "score": number(self.score),
                "local": number(self.local), "floor": number(self.floor), "inherited": number(self.inherited),
                "total": number(self.total), "inputs_total": number(self.inputs_total), "precision": self.precision,
                "standout": self.standout, "within_floor": self.within_floor, "why_not": self.why_not,
                "uncompared_inputs": list(self.uncompared_inputs), "summary": self.summary,
                "spec_error": number(self.spec_error), "spec": self.spec, "beyond_spec": self.beyond_spec}


@dataclass(frozen=True)
class Attribution:
    """Every measured op in order, the culprit (first standout) and the median replay ratio it was judged by."""

    ops: Tuple[OpAttribution, ...] = ()
    median_ratio: Optional[float] = None

    @property
    def standouts(self) -> Tuple[OpAttribution, ...]:
        return tuple(op for op in self.ops if op.standout)

    @property
    def culprit(self) -> Optional[OpAttribution]:
        """The first op standing out by replay; else the first by error jump (weaker evidence: it also flags
        ops that merely amplify their inputs' error)."""
        replayed = [op for op in self.standouts if op.method == METHOD_REPLAY]
        ranked = replayed or list(self.standouts)
        return ranked[0] if ranked else None

    @property
    def above_floor(self) -> Tuple[OpAttribution, ...]:
        """Measured ops that add error of their own (not :attr:`OpAttribution.within_floor`), standouts or not."""
        return tuple(op for op in self.ops if op.measured and not op.within_floor)

    def op(self, name: str) -> Optional[OpAttribution]:
        return next((op for op in self.ops if op.op_name == name), None)

    def count(self, method: str) -> int:
        return sum(1 for op in self.ops if op.method == method)

    @property
    def methods_text(self) -> str:
        """``"17 ops replayed, 2 by error jump, 1 not measured"``."""
        parts = [f"{self.count(METHOD_REPLAY)} op(s) replayed"]
        if self.count(METHOD_ERROR_JUMP):
            parts.append(f"{self.count(METHOD_ERROR_JUMP)} by error jump")
        if self.count(METHOD_NONE):
            parts.append(f"{self.count(METHOD_NONE)} not measured")
        return ", ".join(parts)

    def to_dict(self) -> dict:
        culprit = self.culprit
        return {"culprit": None if culprit is None else culprit.op_name, "median_ratio": self.median_ratio,
                "methods": self.methods_text, "ops": [op.to_dict() for op in self.ops]}


def percent(value: Optional[float]) -> str:
    """``0.0203`` -> ``"2.03%"``; ``"n/a"`` for ``None``; ``"inf"``/``"nan"`` as such."""
    if value is None:
        return "n/a"
    if not math.isfinite(value):
        return str(value)
    return f"{value * 100:.3g}%"


def fusion_excess(output_distance: float, input_distance: float, growth: float = FUSION_GROWTH) -> float:
    """``d_out - growth * d_in``: what a fused op adds to the difference between the fusion-on and the fusion-off
    run beyond what it received (method 4 of the module docstring). An infinite ``d_out`` (an honest failure) on
    finite inputs is ``inf``, on inputs that are infinite too ``0`` (the failure came in).

    >>> round(fusion_excess(0.31, 0.0003), 4), round(fusion_excess(0.14, 0.097), 4), fusion_excess(math.inf, math.inf)
    (0.3094, -0.054, 0.0)
    """
    if math.isinf(output_distance):
        return 0.0 if math.isinf(input_distance) else math.inf
    return output_distance - growth * input_distance


def fusion_differs(output_distance: float, input_distance: float, floor: float = FUSION_FLOOR,
                   growth: float = FUSION_GROWTH) -> Tuple[float, bool]:
    """``(excess, differs)``: :func:`fusion_excess` and whether it is above ``floor`` -- a fused op that adds error
    the fusion-off run's ops do not."""
    excess = fusion_excess(output_distance, input_distance, growth)
    return excess, excess > floor


def cube_limit(op_type: str, dtype: str, floor: Optional[float]) -> Optional[float]:
    """The most local error a correct Cube op adds (:func:`~precision_tool.metrics.spec.cube_error_limit`, the
    rounding taken from the replay's ``floor``: ``floor / FLOOR_FACTOR`` unless the floor is the dtype's minimum);
    ``None`` for other ops."""
    if floor is None:
        return None
    rounding = floor / FLOOR_FACTOR if floor > MIN_FLOOR.get(dtype, 0.0) else 0.0
    return cube_error_limit(op_type, dtype, rounding)


def beyond_standard(op_type: str, dtype: str, local: Optional[float], floor: Optional[float],
                    spec_error: Optional[float]) -> bool:
    """A replayed output beyond what a correct Ascend kernel adds: a Cube op beyond :func:`cube_limit`; any other op
    beyond its floor with a mean relative error at or above the operator standard's
    (docs/internals/comparison.md#attribution)."""
    if local is None or floor is None:
        return False
    limit = cube_limit(op_type, dtype, floor)
    if limit is not None:
        return local > limit
    return exceeds_floor(ratio_to_floor(local, floor)) and exceeds_spec(spec_error, dtype)


def standard_text(op_type: str, dtype: str, floor: Optional[float], spec_error: Optional[float]) -> str:
    """What an output is held to: ``Cube op, at most its floor (...)``, ``Cube op, at most 0.0282% (2 HF32
    roundings)`` or ``mean relative 1.6% (CANN operator standard float16 < 0.0977%)``; ``""`` without a figure."""
    limit = cube_limit(op_type, dtype, floor)
    if limit is not None and dtype == "float32":
        return f"Cube op, at most {percent(limit)} ({HF32_ROUNDINGS} HF32 roundings)"
    if limit is not None:
        return f"Cube op, at most its floor ({CUBE_ROUNDINGS} {dtype} roundings, float32 accumulation)"
    threshold = spec_threshold(dtype)
    if spec_error is None or threshold is None:
        return ""
    return f"mean relative {percent(spec_error)} ({SPEC_SOURCE} {dtype} < {percent(threshold)})"


def exceeds_floor(ratio: float) -> bool:
    """A replayed float output whose local error is ``ratio`` floors adds error of its own (more than 1 floor)."""
    return ratio > 1.0


def ratio_of(row) -> Optional[float]:
    """An output row's replay figure as floors (``local_error / local_floor``), ``None`` when it was not
    replayed."""
    if row.local_error is None or row.local_floor is None:
        return None
    return ratio_to_floor(row.local_error, row.local_floor)


def _jumps(total: Optional[float], floor: Optional[float], jump: Optional[float]) -> bool:
    """The error-jump rule: the output is beyond its dtype's floor and its error jumps ``JUMP_FACTOR`` times
    above its inputs'."""
    return total is not None and floor is not None and jump is not None and total > floor and jump >= JUMP_FACTOR


def terms_per_output(output, first_input) -> Optional[float]:
    """``count(input 0) / count(output)``: the terms a reduction sums per output element (``None`` when a shape is
    unknown)."""
    count, out_count = element_count(first_input), element_count(output)
    return count / out_count if count and out_count else None


def reduction_scale(op_type: str, terms: float) -> float:
    """How a reduction of ``terms`` terms scales its terms' independent errors (and rms): ``sqrt(terms)`` for a sum,
    ``sqrt(terms) / terms`` for a mean."""
    return math.sqrt(terms) / terms if op_type in MEAN_TYPES else math.sqrt(terms)


def _absolute_jump(output, op_type: str, total: float, floor: float, inputs: Sequence) -> Optional[float]:
    """``RMSE(output) / max(E, floor * rms(reference output))``, ``E`` the error the inputs bring through a sum
    (the sum of their RMSEs) or a reduction (``sqrt(n) RMSE(input 0)``, a mean's divided by ``n``); ``None`` when a
    figure is missing or the output's RED is 0 or infinite (no reference scale)."""
    out = rmse(output)
    scale_rms = reference_rms(output)
    if out is None or not total or math.isinf(total):
        return None
    if scale_rms is None:
        scale_rms = out / total
    if op_type in REDUCTION_TYPES:
        first = next((row for row in inputs if row.tensor_index == 0), None)
        terms = terms_per_output(output, first) if first is not None else None
        error = rmse(first) if first is not None else None
        if terms is None or error is None:
            return None
        brought = reduction_scale(op_type, terms) * error
    else:
        errors = [rmse(row) for row in inputs]
        known = [e for e in errors if e is not None]
        if len(known) < len(errors):
            return None
        brought = sum(known)
    scale = max(brought, floor * scale_rms)
    return out / scale if scale > 0 else None  # no figure to scale by (a printed 0, say): no absolute jump


def _why_not(rows) -> str:
    for row in rows:
        for note in row.notes:
            if note.startswith(NOT_REPLAYED):
                return note[len(NOT_REPLAYED):]
    return NO_REPLAY


#: Why an op was not replayed when no row says (compare, ac -c --no-replay).
NO_REPLAY = "no replay"
#: How a row's note says why its op was not replayed (written by the replay, read by the error jump).
NOT_REPLAYED = "not replayed: "


def _replayed(name: str, op_type: str, position: int, outputs: Sequence) -> Optional[OpAttribution]:
    figures: List[Tuple[Any, float]] = []
    for row in outputs:
        ratio = ratio_of(row)
        if ratio is not None and is_float(row.npu_dtype):
            figures.append((row, ratio))
    if not figures:
        return None
    worst, ratio = max(figures, key=lambda item: item[1])
    return OpAttribution(name, op_type, position, METHOD_REPLAY, worst.tensor_id, worst.npu_dtype, ratio,
                         worst.local_error, worst.local_floor, worst.inherited_error, red(worst),
                         precision=worst.local_method.replace("replay ", "", 1),
                         spec_error=getattr(worst, "local_spec_error", None))


def _measure_op(name: str, rows: Sequence, position: int) -> Optional[OpAttribution]:
    outputs = [r for r in rows if r.kind == TensorKind.OUTPUT and r.compared and r.status is not Status.BELOW_NOISE]
    if not outputs:
        return None
    op_type = rows[0].op_type
    replayed = _replayed(name, op_type, position, outputs)
    if replayed is not None:
        return replayed
    why = _why_not(outputs)
    totals = [(row, red(row)) for row in outputs]
    worst, total = max(totals, key=lambda item: -1.0 if item[1] is None else item[1])
    all_float = [r for r in rows if r.kind == TensorKind.INPUT and is_float(r.npu_dtype)]
    float_inputs = [r for r in all_float if r.status is not Status.BELOW_NOISE]  # noise over noise: no scale
    errors = [(r, red(r)) for r in float_inputs]
    uncompared = tuple(sorted(r.tensor_index for r, error in errors if not r.compared or error is None))
    inputs = [error for r, error in errors if r.compared and error is not None]
    reason = ""
    if total is None:
        reason = "no error figure for its output"
    elif uncompared:
        reason = f"float input(s) {list(uncompared)} not compared: a jump cannot be told from inherited error"
    elif not inputs:
        reason = ("its float inputs are rounding noise (BELOW_NOISE): no jump to measure" if all_float else
                  "no compared float input to measure a jump from")
    elif op_type in STEP_FUNCTION_TYPES:
        reason = (f"a {op_type} output jumps where an input crosses a step, so its error jump is no evidence; "
                  "replay measures it")
    if reason or total is None:
        return OpAttribution(name, op_type, position, METHOD_NONE, worst.tensor_id, worst.npu_dtype,
                             total=total, why_not=f"{why}; {reason}", uncompared_inputs=uncompared)
    floor = rounding_floor(worst.npu_dtype) or rounding_floor("float32")
    jump = total / max(max(inputs), floor)
    absolute = _absolute_jump(worst, op_type, total, floor, float_inputs) \
        if op_type in SUM_TYPES or op_type in REDUCTION_TYPES else None
    if absolute is not None:
        jump = absolute
    return OpAttribution(name, op_type, position, METHOD_ERROR_JUMP, worst.tensor_id, worst.npu_dtype, jump,
                         floor=floor, total=total, inputs_total=max(inputs), standout=_jumps(total, floor, jump),
                         why_not=why)


def attribute(rows: Sequence) -> Attribution:
    """Measure every op of the result rows ``rows`` (with their replay figures, if any) and mark the standouts
    (docs/internals/comparison.md#attribution)."""
    by_op: Dict[str, List] = {}
    for row in rows:
        if row.kind:
            by_op.setdefault(row.op_name, []).append(row)
    ops: List[OpAttribution] = []
    for name, op_rows in by_op.items():
        measured = _measure_op(name, op_rows, min(r.index for r in op_rows))
        if measured is not None:
            ops.append(measured)
    ops.sort(key=lambda op: (op.position, op.op_name))
    scores = {op.op_name: op.score for op in ops if op.method == METHOD_REPLAY and op.score is not None}
    ratios = sorted(score for score in scores.values() if 0 < score < math.inf)
    median = statistics.median(ratios) if ratios else None
    judged = []
    for op in ops:
        if op.method == METHOD_REPLAY and op.score is not None:
            peer_median = _median_without(ratios, op.score if 0 < op.score < math.inf else None)
            relative = op.score > 1 and (peer_median is None or op.score >= STANDOUT_FACTOR * peer_median)
            out = op.beyond_spec or (relative and op.cube_limit is None)  # a Cube op is held to its arithmetic
            op = replace(op, standout=bool(out))
        judged.append(op)
    return Attribution(tuple(judged), median)


def _median_without(ordered: Sequence[float], own: Optional[float]) -> Optional[float]:
    """The median of the sorted ``ordered`` with one occurrence of ``own`` left out (``None``: nothing left out);
    ``None`` with fewer than ``MIN_PEERS`` values left. O(log n), so that every op's peers cost n log n in all.

    >>> _median_without([1.0, 2.0, 3.0, 10.0], 10.0), _median_without([1.0, 2.0, 3.0, 10.0], 2.0)
    (2.0, 3.0)
    """
    skip = bisect.bisect_left(ordered, own) if own is not None else len(ordered)
    count = len(ordered) - (own is not None)
    if count < MIN_PEERS:
        return None

    def at(k: int) -> float:  # the k-th value of the list without position ``skip``
        return ordered[k if k < skip else k + 1]

    middle = count // 2
    return at(middle) if count % 2 else (at(middle - 1) + at(middle)) / 2
