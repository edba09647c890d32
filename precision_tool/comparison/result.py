"""Records of a comparison run: one frozen :class:`TensorResult` per NPU tensor (or uncompared op), and the
:class:`ComparisonResult` of the whole run.

A ``TensorResult`` holds no array: only names, dtypes, the shape, the ten metric values and the verdict, so
workers send it back cheaply and reports are built from it alone.

Statuses
--------
The metric statuses (:class:`~precision_tool.metrics.Status`: ``PASS``, ``FAIL``, ``SHAPE_MISMATCH``,
``COUNT_MISMATCH``, ``NAN_INF``, ``BOTH_ZERO``, ``ONE_SIDE_ZERO``, ``EMPTY``) are those of compared tensors.
Three more say why something was not compared:

=================  =======================================================================================
``NOT_COMPARED``   the NPU tensor has no reference tensor (the alignment's reason); coverage, not a failure
``NO_DUMP``        an op of the graph that runs as a task has no dump file; coverage, not a failure
``ERROR``          the tensor was aligned but could not be read or decoded (payload, layout); it counts as
                   failed -- nothing shows it is right -- but stays out of the first-divergence verdicts
=================  =======================================================================================
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Dict, Optional, Tuple

from precision_tool.metrics import ALL, Status

NOT_COMPARED = "NOT_COMPARED"
NO_DUMP = "NO_DUMP"
ERROR = "ERROR"
#: Statuses of tensors the metrics ran on.
COMPARED_STATUSES = tuple(status.value for status in Status)
#: Statuses that count as passing.
PASSING_STATUSES = tuple(status.value for status in Status if status.passed)
#: Every status, compared ones first.
ALL_STATUSES = COMPARED_STATUSES + (ERROR, NOT_COMPARED, NO_DUMP)


@dataclass(frozen=True)
class TensorResult:
    """One row of the result: an NPU tensor compared (or not) with its reference tensor.

    Attributes
    ----------
    index : the op's position in execution order (producers first); msaccucmp's ``Index`` column.
    tensor_id : ``op:input|output:k`` (msaccucmp's ``TensorIndex``); ``""`` for an op-level row (``NO_DUMP``).
    op_name, kind, tensor_index : the parts of ``tensor_id``.
    op_type : the NPU op type.
    npu_dump : the dump file (``""`` when there is none).
    npu_dtype : as stored (``"float16"``); ``""`` when unknown.
    address : the device address from the dump header, as decimal text; ``""`` when unknown.
    ground_truth : the TF op names the NPU op implements, comma separated (msaccucmp's ``GroundTruth``);
        ``"*"`` when none is known.
    reference : the reference tensor compared with (``tf_op:output:0``, or ``op:kind:k`` of the other NPU
        run); ``""`` when not compared.
    ref_dtype : the reference's dtype (``"float32"``); ``""`` when not compared.
    ref_address : NPU vs NPU: the other run's device address, as decimal text; else ``""``.
    shape : the NPU tensor's shape in its origin layout (``None`` when unknown).
    metrics : the ten metric values in :data:`~precision_tool.metrics.ALL` order; ``None`` = not computed.
        StandardDeviation is a :class:`~precision_tool.metrics.MeanStd`.
    status : see the module docstring.
    reason : one line; what the verdict rests on, or why nothing was compared.
    rule : the alignment rule that found the reference (``""`` when not compared).
    allclose_ratio : share of elements within the dtype's default rtol/atol (reported, not gated by default).
    allclose_min_ratio : the dtype's default minimum ratio, for the summary's "below the allclose default" list.
    tolerance_dtype : the dtype class the tolerances were taken from (``"float16"``).
    reused_from : the output tensor whose result this input shares (same stored bytes, same reference), or
        ``""``; see :mod:`precision_tool.comparison.engine`.
    notes : further one-line remarks from the metrics (zero references left out, ...).
    """

    index: int
    tensor_id: str
    op_name: str
    kind: str
    tensor_index: int
    op_type: str
    status: str
    reason: str = ""
    npu_dump: str = ""
    npu_dtype: str = ""
    address: str = ""
    ground_truth: str = "*"
    reference: str = ""
    ref_dtype: str = ""
    ref_address: str = ""
    shape: Optional[Tuple[int, ...]] = None
    metrics: Tuple[Any, ...] = field(default=(None,) * len(ALL))
    rule: str = ""
    allclose_ratio: Optional[float] = None
    allclose_min_ratio: Optional[float] = None
    tolerance_dtype: str = ""
    reused_from: str = ""
    notes: Tuple[str, ...] = ()

    @property
    def key(self) -> Tuple[str, str, int]:
        """``(op_name, kind, index)``, the key of the first-divergence verdicts."""
        return (self.op_name, self.kind, self.tensor_index)

    @property
    def compared(self) -> bool:
        """True when the metrics ran on this tensor (any metric status)."""
        return self.status in COMPARED_STATUSES

    @property
    def passed(self) -> bool:
        """True for ``PASS``, ``BOTH_ZERO`` and ``EMPTY``."""
        return self.status in PASSING_STATUSES

    @property
    def failed(self) -> bool:
        """Compared and not passed, or ``ERROR``."""
        return (self.compared and not self.passed) or self.status == ERROR

    @property
    def cosine(self) -> Optional[float]:
        return self.metrics[0]

    def metric(self, name: str) -> Any:
        """The value of one metric by its CSV name (``"MaxAbsoluteError"``)."""
        return self.metrics[ALL.index(name)]

    def below_allclose_default(self) -> bool:
        """True when the allclose ratio is below the dtype's default minimum (reported, not gated)."""
        return (self.allclose_ratio is not None and self.allclose_min_ratio is not None
                and self.allclose_ratio < self.allclose_min_ratio - 1e-12)

    def sharing_outcome_of(self, other: "TensorResult") -> "TensorResult":
        """This row with ``other``'s verdict and metric values (for an input that is byte for byte the output
        ``other`` compared against the same reference)."""
        return replace(self, status=other.status, reason=other.reason, shape=other.shape, metrics=other.metrics,
                       ref_dtype=other.ref_dtype, ref_address=other.ref_address,
                       allclose_ratio=other.allclose_ratio, allclose_min_ratio=other.allclose_min_ratio,
                       tolerance_dtype=other.tolerance_dtype, notes=other.notes, reused_from=other.tensor_id)

    def to_dict(self) -> Dict[str, Any]:
        metrics = {}
        for name, value in zip(ALL, self.metrics):
            metrics[name] = list(value) if isinstance(value, tuple) else value
        return {"index": self.index, "tensor_id": self.tensor_id, "op_name": self.op_name, "op_type": self.op_type,
                "status": self.status, "reason": self.reason, "npu_dump": self.npu_dump,
                "npu_dtype": self.npu_dtype, "address": self.address, "ground_truth": self.ground_truth,
                "reference": self.reference, "ref_dtype": self.ref_dtype, "ref_address": self.ref_address,
                "shape": None if self.shape is None else list(self.shape), "metrics": metrics, "rule": self.rule,
                "allclose_ratio": self.allclose_ratio, "allclose_min_ratio": self.allclose_min_ratio,
                "reused_from": self.reused_from, "notes": list(self.notes)}


@dataclass(frozen=True)
class Timing:
    """Seconds spent: aligning, comparing (all workers), and the whole run as the caller measured it."""

    align_s: float = 0.0
    compare_s: float = 0.0
    workers: int = 1

    def to_dict(self) -> dict:
        return {"align_s": round(self.align_s, 4), "compare_s": round(self.compare_s, 4), "workers": self.workers}


@dataclass(frozen=True)
class ComparisonResult:
    """Every row of a run, in execution order, plus what the run was judged with.

    ``results`` holds compared tensors, uncompared tensors and op-level ``NO_DUMP`` rows; ``divergence`` is
    :meth:`Alignment.first_divergence` over the compared tensors' verdicts; ``alignment`` is kept for the
    coverage report and the graph order.
    """

    results: Tuple[TensorResult, ...]
    alignment: Any
    divergence: Any
    cosine_threshold: float
    timing: Timing = Timing()

    @property
    def compared(self) -> Tuple[TensorResult, ...]:
        return tuple(r for r in self.results if r.compared)

    @property
    def failing(self) -> Tuple[TensorResult, ...]:
        """Compared tensors that fail, and aligned tensors that could not be read (``ERROR``)."""
        return tuple(r for r in self.results if r.failed)

    def counts(self) -> Dict[str, Any]:
        """Counts by status plus totals: compared, passed, failed, errors, not compared, reused."""
        by_status: Dict[str, int] = {}
        for result in self.results:
            by_status[result.status] = by_status.get(result.status, 0) + 1
        compared = self.compared
        return {"compared": len(compared), "passed": sum(r.passed for r in compared),
                "failed": sum(1 for r in compared if not r.passed), "errors": by_status.get(ERROR, 0),
                "not_compared": by_status.get(NOT_COMPARED, 0), "ops_without_dump": by_status.get(NO_DUMP, 0),
                "reused_input_results": sum(1 for r in compared if r.reused_from),
                "by_status": {status: by_status[status] for status in ALL_STATUSES if status in by_status}}

    def verdicts(self) -> Dict[Tuple[str, str, int], bool]:
        """``{(op, kind, k): passed}`` over the compared tensors (what first divergence reads)."""
        return {r.key: r.passed for r in self.results if r.compared}
