"""The one judgment of a comparison: which tensors fail, which ops add error, and which op is the culprit.

Every :class:`~precision_tool.comparison.result.ComparisonResult` is made through :func:`judge`, so ``compare``,
``vcs``, ``ni``, ``report``, ``bisect`` and ``ac`` read one decision from the same rows, fresh or read back. In this
order: 1. the per-tensor statuses; 2. noise (:mod:`.noise`); 3. attribution (:mod:`.attribution`); 4. inherited
noise, and attribution again; 5. the first divergence; 6. underflow (:mod:`.underflow`); 7. same model
(:mod:`.same_model`); 8. the culprit (:func:`culprit_of`; :func:`decide_culprit` adds what only ``ac`` has);
9. systemic faults (:mod:`.systemic`). :func:`exit_code` is the one exit rule. Each step:
docs/local-error.md#one-judgment.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Mapping, Optional, Sequence, Tuple

from precision_tool.alignment import Divergence, find_first_divergence
from precision_tool.comparison.attribution import (METHOD_ERROR_JUMP, METHOD_FUSION, METHOD_NONE, METHOD_REPLAY,
                                                   Attribution, OpAttribution, attribute)
from precision_tool.comparison.noise import inherit_noise, judge_noise
from precision_tool.comparison.same_model import Mismatch, source_mismatches
from precision_tool.comparison.systemic import SystemicFault, systemic_faults
from precision_tool.comparison.underflow import underflowing
from precision_tool.errors import batch_exit_code, EXIT_UNUSABLE_INPUT
from precision_tool.formats.tensor_kind import TensorKind
from precision_tool.status import Status

METHOD_DIVERGENCE = "first divergence"
METHOD_OVERFLOW = "overflow"


@dataclass(frozen=True)
class CulpritChoice:
    """The op a judgment names first and the method that named it: ``replay`` or ``error jump`` (``measured``
    holds its figures), ``first divergence`` (``divergence``), ``fusion excess`` or ``overflow`` (``evidence``:
    what ``ac`` found: the fusion-off run's op difference, the overflow finding)."""

    op_name: str
    method: str
    measured: Optional[OpAttribution] = None
    divergence: Any = None
    evidence: Any = None

    @property
    def how(self) -> str:
        """``local error (replay)``, ``local error (error jump)``, ``first divergence``, ``fusion excess``,
        ``overflow``: the evidence, as every report names it."""
        return f"local error ({self.method})" if self.method in (METHOD_REPLAY, METHOD_ERROR_JUMP) else self.method

    def to_dict(self) -> dict:
        return {"op_name": self.op_name, "method": self.method, "evidence": self.how,
                "measured": None if self.measured is None else self.measured.to_dict()}


@dataclass(frozen=True)
class Judgment:
    """What :func:`judge` decided over one run's rows (see the module docstring)."""

    rows: Tuple[Any, ...]
    attribution: Attribution
    divergence: Divergence
    underflow: Tuple[Any, ...] = ()
    mismatches: Tuple[Mismatch, ...] = ()
    culprit: Optional[CulpritChoice] = None
    systemic: Tuple[SystemicFault, ...] = ()

    def underflows(self, row) -> bool:
        """True when ``row`` (a row of this run, by its key) is one of the :attr:`underflow` tensors."""
        return row.key in {item.key for item in self.underflow}

    @property
    def noise(self) -> Tuple[Any, ...]:
        """The ``BELOW_NOISE`` rows."""
        return tuple(row for row in self.rows if row.status is Status.BELOW_NOISE)

    @property
    def same_model(self) -> bool:
        """False when a source input is another model's (:attr:`~.same_model.Mismatch.severe`); inputs beyond rounding
        but alike (training drift) keep the verdict."""
        return not any(m.severe for m in self.mismatches)

    def to_dict(self) -> dict:
        """The decision in short, for ``summary.json`` and ``--json`` (every op's figures stay in the rows)."""
        attribution = self.attribution
        return {"culprit": None if self.culprit is None else self.culprit.to_dict(),
                "standouts": [op.to_dict() for op in attribution.standouts],
                "above_floor": [op.op_name for op in attribution.above_floor],
                "methods": attribution.methods_text, "median_ratio": attribution.median_ratio,
                "below_noise": [row.tensor_id for row in self.noise],
                "underflow": [row.tensor_id for row in self.underflow],
                "model_mismatch": [m.to_dict() for m in self.mismatches],
                "systemic": [fault.to_dict() for fault in self.systemic]}


def judge(rows: Sequence, facts) -> Judgment:
    """The judgment of ``rows`` (in execution order) with the run's ``facts`` (order, graph edges, sources)."""
    edges: Mapping = facts.data_inputs
    rows = judge_noise(rows)
    attribution = attribute(rows)
    if any(row.status is Status.BELOW_NOISE for row in rows):  # else nothing to inherit
        inherited = inherit_noise(rows, attribution, edges)
        if any(new is not old for new, old in zip(inherited, rows)):
            rows, attribution = inherited, attribute(inherited)
    verdicts = {row.key: row.passed for row in rows if row.compared and row.kind}
    divergence = find_first_divergence(verdicts, facts.order, edges, facts.order_source)
    mismatches = source_mismatches(rows, edges, getattr(facts, "sources", {}) or {})
    underflow = underflowing(rows)
    judgment = Judgment(tuple(rows), attribution, divergence, underflow, mismatches)
    if not judgment.same_model:
        return judgment
    return replace(judgment, culprit=culprit_of(judgment),
                   systemic=systemic_faults(attribution, getattr(facts, "passes", {}) or {}))


def _outputs(judgment: Judgment, op_name: str):
    return [row for row in judgment.rows if row.op_name == op_name and row.kind == TensorKind.OUTPUT
            and row.compared]


def judged_by_local_error(judgment: Judgment, op_name: str) -> bool:
    """True when the op's own error was measured (replay or error jump) -- unless an output of it fails for
    NaN/inf the reference does not hold (``NAN_INF``): local error is measured over the finite elements and never
    sees them, so the first divergence speaks for such an op."""
    measured = judgment.attribution.op(op_name)
    return measured is not None and measured.method != METHOD_NONE and not any(
        row.status is Status.NAN_INF for row in _outputs(judgment, op_name))


def _position(judgment: Judgment, op_name: str) -> int:
    return min((row.index for row in judgment.rows if row.op_name == op_name), default=0)


def underflows_only(judgment: Judgment, op_name: str) -> bool:
    """True when every failing output of the op underflows: its failure is float16's range, not its kernel."""
    failing = [row for row in _outputs(judgment, op_name) if row.failed]
    return bool(failing) and all(judgment.underflows(row) for row in failing)


def culprit_of(judgment: Judgment) -> Optional[CulpritChoice]:
    """The culprit the comparison alone names (rule 8 of the module docstring; docs/local-error.md#one-judgment),
    ``None`` when none."""
    if not judgment.same_model:
        return None
    first = judgment.divergence.first
    local = judgment.attribution.culprit
    if first is not None and not judged_by_local_error(judgment, first.op_name) \
            and not underflows_only(judgment, first.op_name) \
            and (local is None or _position(judgment, first.op_name) < local.position):
        return CulpritChoice(first.op_name, METHOD_DIVERGENCE, judgment.attribution.op(first.op_name), first)
    if local is not None:
        return CulpritChoice(local.op_name, local.method, local)
    return None


def decide_culprit(judgment: Optional[Judgment], fusion_culprits: Sequence = (),
                   overflow: Optional[Tuple[str, Any]] = None) -> Optional[CulpritChoice]:
    """The culprit with all of ``ac``'s evidence, in the one order: the comparison's (:func:`culprit_of`), else the
    first fusion culprit of the fusion-off run (``fusion_culprits``: its op differences, each with ``op_name``),
    else ``overflow`` (``(op name, finding)``). None when the runs do not compute the same model."""
    if judgment is not None:
        if not judgment.same_model:
            return None
        if judgment.culprit is not None:
            return judgment.culprit
    if fusion_culprits:
        first = fusion_culprits[0]
        return CulpritChoice(first.op_name, METHOD_FUSION, evidence=first)
    if overflow is not None:
        return CulpritChoice(overflow[0], METHOD_OVERFLOW, evidence=overflow[1])
    return None


def exit_code(any_failed: bool, culprit: bool, compared: int, unusable: int, same_model: bool = True) -> int:
    """The one exit rule (for ``compare``, ``vc``, ``ac``, ``vcs``, ``report`` alike).

    ======  ==================================================================================================
    ``2``   the runs do not compute the same model (:mod:`.same_model`): no tensor is judged
    ``1``   a tensor fails (below the cosine gate, an honest status, noise beyond its budget, aligned but
            unreadable) or a culprit is found by any method -- it wins over unusable input: the finding is real
    ``2``   nothing failed, but nothing could be compared or input files could not be read (a culprit may hide
            among them)
    ``0``   every compared tensor passes, no op stands out, every input file was read
    ======  ==================================================================================================
    """
    if not same_model:
        return EXIT_UNUSABLE_INPUT
    return batch_exit_code(any_failed or culprit, compared == 0 or bool(unusable))


__all__ = ["Judgment", "CulpritChoice", "judge", "culprit_of", "decide_culprit", "exit_code",
           "judged_by_local_error", "underflows_only", "METHOD_DIVERGENCE", "METHOD_OVERFLOW", "METHOD_REPLAY",
           "METHOD_ERROR_JUMP", "METHOD_FUSION", "METHOD_NONE"]
