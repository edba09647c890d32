r"""Tensors below the rounding noise of the computation that made them: judged on absolute error (``BELOW_NOISE``).

A sum whose terms cancel keeps only the rounding of its terms. The bias gradient of a conv followed by a batch
norm in training mode is such a sum: batch norm's backward pass removes the batch mean from the gradient, so the
bias gradient (its sum over batch and space) is mathematically zero, and both runs hold noise (about 1e-8 in
float32 against terms of 0.1). Its cosine and relative errors compare two noises; only its absolute error means
something, against the noise its terms could make. The rule, derived in docs/local-error.md:

* **magnitude summed** ``m``, per output element, from the reference's inputs (the op types are the attribution's,
  :mod:`.attribution`):

  - a reduction (``REDUCTION_TYPES``: ``BiasAddGrad``, ``ReduceSum`` ...) sums ``n = count(input 0) /
    count(output)`` terms of input 0: ``m = sqrt(n) * rms(input 0)`` (a mean divides by ``n``:
    ``m = rms(input 0) / sqrt(n)``);
  - a sum or difference (``SUM_TYPES``: ``Add``, ``Sub``, ``BiasAdd`` ...) adds one element of each input:
    ``m = sqrt(sum_j rms(input j)^2)``;

* **rounding noise** ``rho = u / sqrt(3) * m``: each term rounded once in the op's narrowest float dtype
  (unit roundoff ``u``: the NPU op's float16 inputs or outputs make it 2^-11), the roundings independent; its
  floor ``F = FLOOR_FACTOR * rho``, four roundings as every floor of the tool
  (:mod:`precision_tool.metrics.rounding`);
* the reference is **below the noise** when ``rms(reference output) <= F``: rounding alone could change it by
  100% or more, so cosine and relative errors say nothing about it;
* such a tensor is judged on its **absolute** error against a budget ``B = F + e``, ``e`` the error its inputs
  bring: a reduction's ``sqrt(n) * RMSE(input 0)`` (its terms' errors add up like independent roundings; a mean
  divides by ``n``), a sum's ``sum_j RMSE(input j)`` (few terms: added in full). ``RMSE(output) <= B`` is
  ``BELOW_NOISE`` (passes); above it, the tensor fails (``FAIL``, the reason giving both figures).

A tensor computed from a ``BELOW_NOISE`` tensor (a Cast of that bias gradient, the optimizer's update of the
bias) inherits the status when its op adds no error of its own (:attr:`OpAttribution.within_floor
<precision_tool.comparison.attribution.OpAttribution.within_floor>`: replay, else the error jump) and none of
its inputs fails: :func:`inherit_noise`. Ops of other types keep their cosine verdict: the model covers the sums
where training graphs cancel, not every op.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any, Dict, List, Mapping, Optional, Sequence, Set, Tuple

from precision_tool.comparison.attribution import REDUCTION_TYPES, SUM_TYPES, reduction_scale, terms_per_output
from precision_tool.comparison.figures import reference_rms, rmse
from precision_tool.formats.tensor_kind import TensorKind
from precision_tool.metrics.rounding import FLOOR_FACTOR, UNIT_ROUNDOFF, rms_rounding
from precision_tool.status import Status

#: Statuses the noise rule may replace: a cosine verdict, or one side all zero (the other side's noise).
JUDGED_AGAIN = frozenset({Status.PASS, Status.FAIL, Status.ONE_SIDE_ZERO})



@dataclass(frozen=True)
class Noise:
    """What the rule found for one output: ``floor`` (``F``), ``budget`` (``B``), the reference's rms and the
    output's RMSE, and the op's ``terms`` per output element and ``dtype`` (of ``u``)."""

    floor: float
    budget: float
    reference_rms: float
    error: float
    terms: float
    dtype: str

    @property
    def below(self) -> bool:
        """The reference is below the rounding noise (``rms <= F``)."""
        return self.reference_rms <= self.floor

    @property
    def within(self) -> bool:
        return self.error <= self.budget

    @property
    def reason(self) -> str:
        head = (f"reference rms {self.reference_rms:.3g} is below the rounding noise {self.floor:.3g} of its "
                f"{_terms_text(self.terms)} in {self.dtype}: judged on absolute error")
        relation = "within" if self.within else "exceeds"
        return f"{head}, rms {self.error:.3g} {relation} the noise budget {self.budget:.3g}"


def _terms_text(terms: float) -> str:
    return "sums" if terms == 1 else f"{terms:.4g}-term sums"


def _narrowest(rows: Sequence) -> Optional[str]:
    """The float dtype with the largest unit roundoff among the rows' NPU dtypes."""
    floats = [row.npu_dtype for row in rows if row.npu_dtype in UNIT_ROUNDOFF]
    return max(floats, key=lambda dtype: UNIT_ROUNDOFF[dtype]) if floats else None


def noise_of(output, inputs: Mapping[int, Any]) -> Optional[Noise]:
    """The rule's figures for ``output`` (a compared row of a :data:`REDUCTION_TYPES` or :data:`SUM_TYPES` op)
    from its op's ``inputs`` (``{input index: row}``, compared rows); ``None`` when the op type has no model or
    a figure is missing."""
    op_type = output.op_type
    out_rms, out_error = reference_rms(output), rmse(output)
    dtype = _narrowest([output, *inputs.values()])
    if out_rms is None or out_error is None or dtype is None:
        return None
    if op_type in REDUCTION_TYPES:
        first = inputs.get(0)
        if first is None:
            return None
        rms, error, terms = reference_rms(first), rmse(first), terms_per_output(output, first)
        if rms is None or error is None or terms is None:
            return None
        scale = reduction_scale(op_type, terms)
        magnitude, brought = scale * rms, scale * error
    elif op_type in SUM_TYPES:
        if not inputs:
            return None
        magnitudes = [reference_rms(row) for row in inputs.values()]
        errors = [rmse(row) for row in inputs.values()]
        known_magnitudes = [rms for rms in magnitudes if rms is not None]
        known_errors = [error for error in errors if error is not None]
        if len(known_magnitudes) < len(magnitudes) or len(known_errors) < len(errors):
            return None
        terms = 1.0
        magnitude = math.sqrt(sum(rms * rms for rms in known_magnitudes))
        brought = sum(known_errors)
    else:
        return None
    floor = FLOOR_FACTOR * rms_rounding(dtype) * magnitude
    return Noise(floor, floor + brought, out_rms, out_error, terms, dtype)


def _input_rows(rows: Sequence) -> Dict[str, Dict[int, Any]]:
    """``{op: {input index: compared row}}``."""
    found: Dict[str, Dict[int, Any]] = {}
    for row in rows:
        if row.kind == TensorKind.INPUT and row.compared:
            found.setdefault(row.op_name, {})[row.tensor_index] = row
    return found


def judge_noise(rows: Sequence) -> Tuple[Any, ...]:
    """``rows`` with the rule applied to every output of a modelled op whose reference is below the noise:
    ``BELOW_NOISE`` within the budget, ``FAIL`` beyond it (the reason says both)."""
    inputs = _input_rows(rows)
    judged: List[Any] = []
    for row in rows:
        if row.kind == TensorKind.OUTPUT and row.status in JUDGED_AGAIN and (
                row.op_type in REDUCTION_TYPES or row.op_type in SUM_TYPES):
            noise = noise_of(row, inputs.get(row.op_name, {}))
            if noise is not None and noise.below:
                status = Status.BELOW_NOISE if noise.within else Status.FAIL
                row = replace(row, status=status, reason=noise.reason)
        judged.append(row)
    return tuple(judged)


def inherit_noise(rows: Sequence, attribution, data_inputs: Mapping[str, Sequence[Tuple[str, int]]]
                  ) -> Tuple[Any, ...]:
    """``rows`` (in execution order) where a tensor read from a ``BELOW_NOISE`` output is ``BELOW_NOISE`` too, and
    so are the failing outputs of an op that reads one, fails on no input and adds no error of its own
    (``attribution``'s :attr:`~precision_tool.comparison.attribution.OpAttribution.within_floor`)."""
    out = list(rows)
    noise_outputs: Set[Tuple[str, int]] = set()
    by_op: Dict[str, List[int]] = {}
    for position, row in enumerate(out):
        if row.kind:
            by_op.setdefault(row.op_name, []).append(position)
    for op_name in sorted(by_op, key=lambda name: min(out[k].index for k in by_op[name])):
        positions = by_op[op_name]
        edges = data_inputs.get(op_name, ())
        noisy_inputs = []
        for k in positions:
            row = out[k]
            if row.kind != TensorKind.INPUT:
                continue
            source = edges[row.tensor_index] if row.tensor_index < len(edges) else None
            tensor = f"{source[0]}:output:{source[1]}" if source is not None else ""
            if row.status is not Status.BELOW_NOISE and source is not None and tuple(source) in noise_outputs \
                    and row.status in JUDGED_AGAIN:
                out[k] = row = replace(row, status=Status.BELOW_NOISE,
                                       reason=f"the output {tensor}, below the rounding noise (BELOW_NOISE there)")
            if row.status is Status.BELOW_NOISE:
                noisy_inputs.append(tensor or row.tensor_id)
        failing_input = any(out[k].kind == TensorKind.INPUT and out[k].failed for k in positions)
        measured = attribution.op(op_name)
        adds_nothing = measured is not None and measured.within_floor
        for k in positions:
            row = out[k]
            if row.kind != TensorKind.OUTPUT:
                continue
            if noisy_inputs and not failing_input and adds_nothing and row.failed and row.status in JUDGED_AGAIN:
                out[k] = row = replace(row, status=Status.BELOW_NOISE,
                                       reason=f"computed from {noisy_inputs[0]} (below the rounding noise) by an op "
                                              f"that adds no error of its own ({measured.ratio_text})")
            if row.status is Status.BELOW_NOISE:
                noise_outputs.add((op_name, row.tensor_index))
    return tuple(out)
