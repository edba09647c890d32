r"""Tensors whose reference is rounding noise: judged on absolute error (``BELOW_NOISE``).

A sum whose terms cancel (the bias gradient of a conv before a training batch norm) keeps only their rounding: its
cosine and relative errors compare two noises. An output of a reduction or a sum (the attribution's
``REDUCTION_TYPES``, ``SUM_TYPES``) on inputs none of which fails is noise when ``rms(reference) <=
rounding_floor(reference dtype) * m``, ``m`` the magnitude it summed. It is then judged on absolute error: its own
error (replayed) within ``F = FLOOR_FACTOR * u / sqrt(3) * m``, else its whole error within ``F`` plus the error its
inputs bring. What is computed from it inherits the status when it carries that noise (:func:`inherit_noise`). The
rule, derived: docs/local-error.md#noise-a-reference-below-the-rounding-noise.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any, Dict, List, Mapping, Optional, Sequence, Set, Tuple

from precision_tool.comparison.attribution import (JUMP_FACTOR, METHOD_REPLAY, REDUCTION_TYPES, SUM_TYPES,
                                                   reduction_scale, terms_per_output)
from precision_tool.comparison.figures import red, reference_rms, rmse
from precision_tool.formats.tensor_kind import TensorKind
from precision_tool.metrics.rounding import FLOOR_FACTOR, UNIT_ROUNDOFF, rms_rounding, rounding_floor
from precision_tool.status import Status

#: Statuses the noise rule may replace: a cosine verdict, or one side all zero (the other side's noise).
JUDGED_AGAIN = frozenset({Status.PASS, Status.FAIL, Status.ONE_SIDE_ZERO})


@dataclass(frozen=True)
class Noise:
    """What the rule found for one output: the reference's noise level (``reference_floor``), the NPU's floor ``F``
    (``floor``) and budget ``B``, the reference's rms, the error judged (``error``: the op's own with replay, else
    the output's RMSE; ``own`` says which), the op's ``terms`` per output element and ``dtype`` (of ``u``)."""

    reference_floor: float
    floor: float
    budget: float
    reference_rms: float
    error: float
    terms: float
    dtype: str
    own: bool = False

    @property
    def below(self) -> bool:
        """The reference is noise: ``rms <= rounding_floor(reference dtype) * m`` (0 over an exact zero)."""
        return self.reference_rms <= self.reference_floor

    @property
    def within(self) -> bool:
        return self.error <= self.budget

    @property
    def reason(self) -> str:
        head = (f"reference rms {self.reference_rms:.3g} is rounding noise of its {_terms_text(self.terms)} "
                f"(below {self.reference_floor:.3g}): judged on absolute error")
        relation = "within" if self.within else "exceeds"
        what = "the op's own error (replay)" if self.own else "rms"
        bound = f"the {self.dtype} noise {self.budget:.3g}" if self.own else f"the noise budget {self.budget:.3g}"
        return f"{head}, {what} {self.error:.3g} {relation} {bound}"


def _terms_text(terms: float) -> str:
    return "sums" if terms == 1 else f"{terms:.4g}-term sums"


def _narrowest(rows: Sequence) -> Optional[str]:
    """The float dtype with the largest unit roundoff among the rows' NPU dtypes."""
    floats = [row.npu_dtype for row in rows if row.npu_dtype in UNIT_ROUNDOFF]
    return max(floats, key=lambda dtype: UNIT_ROUNDOFF[dtype]) if floats else None


def _magnitude(output, inputs: Mapping[int, Any]) -> Optional[Tuple[float, float, float]]:
    """``(m, e, terms)``: the magnitude summed per output element, the error the inputs bring, the terms summed."""
    if output.op_type in REDUCTION_TYPES:
        first = inputs.get(0)
        if first is None:
            return None
        rms, error, terms = reference_rms(first), rmse(first), terms_per_output(output, first)
        if rms is None or error is None or terms is None:
            return None
        scale = reduction_scale(output.op_type, terms)
        return scale * rms, scale * error, terms
    if output.op_type in SUM_TYPES and inputs:
        magnitudes = [reference_rms(row) for row in inputs.values()]
        errors = [rmse(row) for row in inputs.values()]
        known_magnitudes = [rms for rms in magnitudes if rms is not None]
        known_errors = [error for error in errors if error is not None]
        if len(known_magnitudes) < len(magnitudes) or len(known_errors) < len(errors):
            return None
        return math.sqrt(sum(rms * rms for rms in known_magnitudes)), sum(known_errors), 1.0
    return None


def noise_of(output, inputs: Mapping[int, Any]) -> Optional[Noise]:
    """The rule's figures for ``output`` (a compared row of a ``REDUCTION_TYPES`` or ``SUM_TYPES`` op) from its op's
    ``inputs`` (``{input index: row}``, compared rows); ``None`` when the op type has no model or a figure is
    missing."""
    out_rms, out_error = reference_rms(output), rmse(output)
    dtype = _narrowest([output, *inputs.values()])
    figures = _magnitude(output, inputs)
    if out_rms is None or out_error is None or dtype is None or figures is None:
        return None
    magnitude, brought, terms = figures
    reference_floor = rounding_floor(output.ref_dtype or "float32") * magnitude
    floor = FLOOR_FACTOR * rms_rounding(dtype) * magnitude
    if output.local_error is not None and output.inherited_error is not None and math.isfinite(output.local_error):
        own = output.local_error * out_rms * (1.0 + output.inherited_error)  # ||npu - replay|| per element, at most
        return Noise(reference_floor, floor, floor, out_rms, own, terms, dtype, own=True)
    return Noise(reference_floor, floor, floor + brought, out_rms, out_error, terms, dtype)


def _input_rows(rows: Sequence) -> Dict[str, Dict[int, Any]]:
    """``{op: {input index: compared row}}``."""
    found: Dict[str, Dict[int, Any]] = {}
    for row in rows:
        if row.kind == TensorKind.INPUT and row.compared:
            found.setdefault(row.op_name, {})[row.tensor_index] = row
    return found


def judge_noise(rows: Sequence) -> Tuple[Any, ...]:
    """``rows`` with the rule applied to every output of a modelled op, on inputs none of which fails, whose
    reference is noise: ``BELOW_NOISE`` within the NPU's noise, ``FAIL`` beyond it (the reason says both)."""
    inputs = _input_rows(rows)
    judged: List[Any] = []
    for row in rows:
        if row.kind == TensorKind.OUTPUT and row.status in JUDGED_AGAIN and (
                row.op_type in REDUCTION_TYPES or row.op_type in SUM_TYPES):
            own_inputs = inputs.get(row.op_name, {})
            noise = None if any(item.failed for item in own_inputs.values()) else noise_of(row, own_inputs)
            if noise is not None and noise.below:
                status = Status.BELOW_NOISE if noise.within else Status.FAIL
                row = replace(row, status=status, reason=noise.reason)
        judged.append(row)
    return tuple(judged)


def _carries(output, noisy: Sequence) -> bool:
    """True when ``output``'s relative error is at least the largest noise input's over ``JUMP_FACTOR``: its value
    is that noise, not diluted by inputs of real size."""
    out = red(output)
    noise = [value for value in (red(row) for row in noisy) if value is not None]
    return out is not None and bool(noise) and out * JUMP_FACTOR >= max(noise)


def inherit_noise(rows: Sequence, attribution, data_inputs: Mapping[str, Sequence[Tuple[str, int]]]
                  ) -> Tuple[Any, ...]:
    """``rows`` (in execution order) where a tensor read from a ``BELOW_NOISE`` output is ``BELOW_NOISE`` too, and so
    are the failing outputs of an op that reads one, carries its noise (:func:`_carries`), fails on no input and,
    replayed, adds no error of its own (``attribution``'s
    :attr:`~precision_tool.comparison.attribution.OpAttribution.within_floor`)."""
    out = list(rows)
    noise_outputs: Set[Tuple[str, int]] = set()
    by_op: Dict[str, List[int]] = {}
    for position, row in enumerate(out):
        if row.kind:
            by_op.setdefault(row.op_name, []).append(position)
    for op_name in sorted(by_op, key=lambda name: min(out[k].index for k in by_op[name])):
        positions = by_op[op_name]
        edges = data_inputs.get(op_name, ())
        noisy = []
        for k in positions:
            row = out[k]
            if row.kind != TensorKind.INPUT:
                continue
            source = edges[row.tensor_index] if row.tensor_index < len(edges) else None
            if row.status is not Status.BELOW_NOISE and source is not None and tuple(source) in noise_outputs \
                    and row.status in JUDGED_AGAIN:
                out[k] = row = replace(row, status=Status.BELOW_NOISE,
                                       reason=f"the output {source[0]}:output:{source[1]}, rounding noise "
                                              "(BELOW_NOISE there)")
            if row.status is Status.BELOW_NOISE:
                noisy.append(row)
        failing_input = any(out[k].kind == TensorKind.INPUT and out[k].failed for k in positions)
        measured = attribution.op(op_name)
        replayed = measured is not None and measured.method == METHOD_REPLAY
        adds_nothing = measured.within_floor if replayed else True
        for k in positions:
            row = out[k]
            if row.kind != TensorKind.OUTPUT:
                continue
            if noisy and not failing_input and adds_nothing and row.failed and row.status in JUDGED_AGAIN \
                    and _carries(row, noisy):
                how = f"adds no error of its own ({measured.ratio_text})" if replayed else "carries it"
                out[k] = row = replace(row, status=Status.BELOW_NOISE,
                                       reason=f"computed from {noisy[0].tensor_id} (rounding noise): its value is that "
                                              f"noise and the op {how}")
            if row.status is Status.BELOW_NOISE:
                noise_outputs.add((op_name, row.tensor_index))
    return tuple(out)


def noise_line(judgment) -> str:
    """``N tensors are rounding noise and pass on absolute error (BELOW_NOISE): S sums that cancel (first: ...), the
    others computed from them``."""
    rows = judgment.noise
    sources = [row for row in rows if row.reason.startswith("reference rms")]
    first = (sources or list(rows))[0]
    rest = len(rows) - len(sources)
    made = f", {rest} computed from them" if sources and rest else ""
    return (f"{_counted(len(rows), 'tensor')} are rounding noise and pass on absolute error (BELOW_NOISE): "
            f"{_counted(len(sources), 'sum')} that cancel{made} (first: {first.tensor_id})")


def _counted(count: int, noun: str) -> str:
    return f"{count} {noun}{'' if count == 1 else 's'}"
