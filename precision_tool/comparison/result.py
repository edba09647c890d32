"""The one result model: a frozen :class:`TensorResult` per NPU tensor (or uncompared op), and the
:class:`ComparisonResult` of a whole run.

Every consumer reads these records (the CSV, the lossless result file, ``vcs``, ``ni``, ``ac``, JUnit, the HTML
page); a ``TensorResult`` holds no array, so workers send it back cheaply. A result is always made through
:meth:`ComparisonResult.judged` (:func:`~precision_tool.comparison.judgment.judge`, the one judgment), and judged
again at another threshold by :meth:`ComparisonResult.judged_at`: with the allclose gate off, ``PASS``/``FAIL`` are
the cosine gate alone and every other status holds at any threshold, so ``vcs -c 0.999`` on a stored result gives
the verdicts a fresh ``compare -c 0.999`` would (docs/compare.md#the-lossless-result-file).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple

from precision_tool.alignment import Alignment, Coverage, Divergence
from precision_tool.comparison.judgment import Judgment, exit_code, judge
from precision_tool.formats.tensor_kind import TensorKind
from precision_tool.metrics import ALL, MeanStd
from precision_tool.metrics.tensor_verdict import cosine_gate_reason
from precision_tool.status import Status

Key = Tuple[str, str, int]
_KIND_ORDER = {"": 0, TensorKind.INPUT: 1, TensorKind.OUTPUT: 2}
_STD = ALL.index("StandardDeviation")


@dataclass(frozen=True)
class TensorResult:
    """One row of the result: an NPU tensor compared (or not) with its reference tensor.

    Attributes
    ----------
    index : the op's position in execution order (producers first); msaccucmp's ``Index`` column.
    tensor_id : ``op:input|output:k`` (msaccucmp's ``TensorIndex``); ``""`` for an op-level row (``NO_DUMP``).
    op_name, kind, tensor_index : the parts of ``tensor_id`` (``kind`` a :class:`TensorKind`, ``""`` for an
        op-level row).
    op_type : the NPU op type.
    status : the :class:`~precision_tool.status.Status`; ``reason`` says in one line what it rests on.
    npu_dump : the dump file (``""`` when there is none).
    npu_dtype : as stored (``"float16"``); ``""`` when unknown.
    address : the device address from the dump header, as decimal text; ``""`` when unknown.
    ground_truth : the TF op names the NPU op implements, comma separated (msaccucmp's ``GroundTruth``);
        ``"*"`` when none is known.
    reference : the reference tensor compared with (``tf_op:output:0``, or ``op:kind:k`` of the other NPU
        run); ``""`` when not compared or not known (a CSV read back).
    ref_dtype : the reference's dtype (``"float32"``); ``""`` when not compared.
    ref_address : NPU vs NPU: the other run's device address, as decimal text; else ``""``.
    shape : the NPU tensor's shape in its origin layout (``None`` when unknown).
    metrics : the ten metric values in :data:`~precision_tool.metrics.ALL` order; ``None`` = not computed.
        StandardDeviation is a :class:`~precision_tool.metrics.MeanStd`.
    rule : the alignment rule that found the reference (``""`` when not compared or not known).
    allclose_ratio : share of elements within the dtype's default rtol/atol (reported, not gated).
    allclose_min_ratio : the dtype's default minimum ratio, for the summary's "below the allclose default" list.
    tolerance_dtype : the dtype class the tolerances were taken from (``"float16"``).
    reused_from : the output tensor whose result this input shares (same stored bytes, same reference), or
        ``""``; see :mod:`precision_tool.comparison.engine`.
    notes : further one-line remarks from the metrics (zero references left out, ...).
    local_error, local_floor, inherited_error : an output's replay measurements
        (:mod:`precision_tool.replay.local_error`): RED(NPU, replay), the floor its dtype explains,
        RED(replay, reference); ``None`` when the op was not replayed.
    local_spec_error : the replayed output's mean relative error against its replay, the metric of Ascend's operator
        standard (:mod:`precision_tool.metrics.spec`); ``None`` when not replayed or not applicable.
    local_method : how they were measured (``"replay float64"``, ``"replay float32"``, ``"replay numpy
        conversion"``); ``""`` when not replayed.
    matched_non_finite : "matching non-finite": how many elements are NaN/+inf/-inf at identical positions with
        identical kinds on both sides, left out of every metric (the row is judged on its finite elements:
        docs/internals/metrics.md#verdict-per-tensor), with a line in ``notes``. ``0`` when there are none, or when
        they differ from the reference's (``NAN_INF``: a failure).
    """

    index: int
    tensor_id: str
    op_name: str
    kind: str
    tensor_index: int
    op_type: str
    status: Status
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
    local_error: Optional[float] = None
    local_floor: Optional[float] = None
    inherited_error: Optional[float] = None
    local_method: str = ""
    matched_non_finite: int = 0
    local_spec_error: Optional[float] = None

    @property
    def key(self) -> Key:
        """``(op_name, kind, index)``, the key of the first-divergence verdicts."""
        return (self.op_name, self.kind, self.tensor_index)

    @property
    def compared(self) -> bool:
        """True when the metrics ran on this tensor (any compared status)."""
        return self.status.compared

    @property
    def passed(self) -> bool:
        """True for ``PASS``, ``BOTH_ZERO`` and ``EMPTY``."""
        return self.status.passed

    @property
    def failed(self) -> bool:
        """Compared and not passed, or ``ERROR``."""
        return self.status.failed

    @property
    def cosine(self) -> Optional[float]:
        value = self.metrics[0]
        return value if isinstance(value, float) else None

    @property
    def order_key(self) -> Tuple[int, int, int, str]:
        """Execution order: the op's position, inputs before outputs, then the tensor index."""
        return (self.index, _KIND_ORDER.get(self.kind, 3), self.tensor_index, self.tensor_id)

    def metric(self, name: str) -> Any:
        """The value of one metric by its CSV name (``"MaxAbsoluteError"``)."""
        return self.metrics[ALL.index(name)]

    def below_allclose_default(self) -> bool:
        """True when the allclose ratio is below the dtype's default minimum (reported, not gated)."""
        return (self.allclose_ratio is not None and self.allclose_min_ratio is not None
                and self.allclose_ratio < self.allclose_min_ratio - 1e-12)

    def judged_at(self, threshold: Optional[float]) -> "TensorResult":
        """This row as the cosine gate ``threshold`` judges it (see the module docstring); ``None`` = gate off.

        Only ``PASS``/``FAIL`` rows can change (a cosine that could not be computed fails); their reason becomes the
        gate's words.

        >>> row = TensorResult(0, "a:output:0", "a", "output", 0, "Add", Status.PASS,
        ...                    metrics=(0.995,) + (None,) * 9)
        >>> row.judged_at(0.999).status, row.judged_at(0.999).reason
        (<Status.FAIL: 'FAIL'>, 'cosine 0.995000 < 0.999')
        >>> row.judged_at(None).status
        <Status.PASS: 'PASS'>
        """
        if not self.status.cosine_gated:
            return self
        if threshold is None:
            return replace(self, status=Status.PASS, reason="cosine gate off")
        cosine = self.cosine
        passed = cosine is not None and cosine >= threshold
        status = Status.PASS if passed else Status.FAIL
        return replace(self, status=status, reason=cosine_gate_reason(cosine, threshold))

    def sharing_outcome_of(self, other: "TensorResult") -> "TensorResult":
        """This row with ``other``'s verdict and metric values (for an input that is byte for byte the output
        ``other`` compared against the same reference)."""
        return replace(self, status=other.status, reason=other.reason, shape=other.shape, metrics=other.metrics,
                       ref_dtype=other.ref_dtype, ref_address=other.ref_address,
                       allclose_ratio=other.allclose_ratio, allclose_min_ratio=other.allclose_min_ratio,
                       tolerance_dtype=other.tolerance_dtype, notes=other.notes, reused_from=other.tensor_id,
                       matched_non_finite=other.matched_non_finite)

    # ------------------------------------------------------------------ lossless round trip
    def to_dict(self) -> Dict[str, Any]:
        """Every field, JSON-ready and lossless: floats at full precision (non-finite as ``"nan"``,
        ``"inf"``, ``"-inf"``), metrics by name; :meth:`from_dict` gives back an equal row."""
        metrics = {name: _json_value(value) for name, value in zip(ALL, self.metrics)}
        return {"index": self.index, "tensor_id": self.tensor_id, "op_name": self.op_name, "kind": str(self.kind),
                "tensor_index": self.tensor_index, "op_type": self.op_type, "status": self.status.value,
                "reason": self.reason, "npu_dump": self.npu_dump, "npu_dtype": self.npu_dtype,
                "address": self.address, "ground_truth": self.ground_truth, "reference": self.reference,
                "ref_dtype": self.ref_dtype, "ref_address": self.ref_address,
                "shape": None if self.shape is None else list(self.shape), "metrics": metrics, "rule": self.rule,
                "allclose_ratio": _json_value(self.allclose_ratio),
                "allclose_min_ratio": _json_value(self.allclose_min_ratio),
                "tolerance_dtype": self.tolerance_dtype, "reused_from": self.reused_from, "notes": list(self.notes),
                "local_error": _json_value(self.local_error), "local_floor": _json_value(self.local_floor),
                "inherited_error": _json_value(self.inherited_error), "local_method": self.local_method,
                "matched_non_finite": self.matched_non_finite,
                "local_spec_error": _json_value(self.local_spec_error)}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "TensorResult":
        """The row :meth:`to_dict` wrote. ``KeyError``/``TypeError``/``ValueError`` on a malformed record
        (the reader turns them into a one-line error naming the file and line)."""
        metrics = data["metrics"]
        if not isinstance(metrics, dict):
            raise TypeError("metrics must be an object")
        values: List[Any] = []
        for name in ALL:
            value = metrics.get(name)
            if name == "StandardDeviation" and value is not None:
                if not isinstance(value, list) or len(value) != 4:
                    raise ValueError("StandardDeviation must be a list of four numbers")
                values.append(MeanStd(*(_number(v) for v in value)))
            else:
                values.append(_float_value(value))
        kind = _text(data, "kind")
        shape = data["shape"]
        if shape is not None and not (isinstance(shape, list) and all(_is_int(d) and d >= 0 for d in shape)):
            raise ValueError("shape must be a list of non-negative integers")
        notes = data["notes"]
        if not (isinstance(notes, list) and all(isinstance(note, str) for note in notes)):
            raise TypeError("notes must be a list of strings")
        return cls(index=_integer(data, "index"), tensor_id=_text(data, "tensor_id"), op_name=_text(data, "op_name"),
                   kind=TensorKind(kind) if kind else "", tensor_index=_integer(data, "tensor_index"),
                   op_type=_text(data, "op_type"), status=Status(_text(data, "status")), reason=_text(data, "reason"),
                   npu_dump=_text(data, "npu_dump"), npu_dtype=_text(data, "npu_dtype"),
                   address=_text(data, "address"), ground_truth=_text(data, "ground_truth"),
                   reference=_text(data, "reference"), ref_dtype=_text(data, "ref_dtype"),
                   ref_address=_text(data, "ref_address"), shape=None if shape is None else tuple(shape),
                   metrics=tuple(values), rule=_text(data, "rule"), allclose_ratio=_float_value(data["allclose_ratio"]),
                   allclose_min_ratio=_float_value(data["allclose_min_ratio"]),
                   tolerance_dtype=_text(data, "tolerance_dtype"), reused_from=_text(data, "reused_from"),
                   notes=tuple(notes), local_error=_float_value(data.get("local_error")),
                   local_floor=_float_value(data.get("local_floor")),
                   inherited_error=_float_value(data.get("inherited_error")),
                   local_method=_text(data, "local_method") if "local_method" in data else "",
                   matched_non_finite=_count(data, "matched_non_finite"),
                   local_spec_error=_float_value(data.get("local_spec_error")))


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _integer(data: Mapping[str, Any], key: str) -> int:
    value = data[key]
    if not _is_int(value):
        raise TypeError(f"{key} must be an integer, not {type(value).__name__}")
    return int(value)


def _count(data: Mapping[str, Any], key: str) -> int:
    """A count that older result files do not hold (0 then)."""
    if key not in data:
        return 0
    value = _integer(data, key)
    if value < 0:
        raise ValueError(f"{key} must not be negative")
    return value


def _text(data: Mapping[str, Any], key: str) -> str:
    value = data[key]
    if not isinstance(value, str):
        raise TypeError(f"{key} must be a string, not {type(value).__name__}")
    return value


def _json_value(value: Any) -> Any:
    """A metric value for JSON: floats kept exactly (``repr`` round-trips), non-finite ones as text."""
    if isinstance(value, tuple):
        return [_json_value(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")
    return value


def _number(value: Any) -> float:
    number = _float_value(value)
    if number is None:
        raise ValueError("expected a number, got null")
    return number


def _float_value(value: Any) -> Optional[float]:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise TypeError(f"expected a number, got {type(value).__name__}")
    if isinstance(value, str) and value not in ("nan", "inf", "-inf"):
        raise ValueError(f"expected a number, got {value[:20]!r}")
    return float(value)


@dataclass(frozen=True)
class Timing:
    """Seconds spent: aligning, comparing (all workers), and the whole run as the caller measured it."""

    align_s: float = 0.0
    compare_s: float = 0.0
    workers: int = 1

    def to_dict(self) -> dict:
        return {"align_s": round(self.align_s, 4), "compare_s": round(self.compare_s, 4), "workers": self.workers}


@dataclass(frozen=True)
class RunFacts:
    """What a result needs from its alignment, kept with it (and in the result file) so that it can be
    judged again, ordered and reported without aligning again.

    mode : ``"npu_vs_tf"`` or ``"npu_vs_npu"``.
    order, order_source : op names producers first, and where that order came from (``"graph"`` or
        ``"dump_time"``; a CSV read without its run's facts is ordered by its ``Index`` column).
    data_inputs : ``{op: ((producer, output index), ...)}`` from the graph; empty without one.
    coverage : what was not compared and why (:class:`~precision_tool.alignment.Coverage`); ``None`` when
        unknown (a CSV written by msaccucmp).
    sources : ``{op: "constant" | "data"}``: the graph's source ops and the ops that only pass a source on
        (:func:`~precision_tool.comparison.same_model.graph_sources`); empty without a graph.
    passes : ``{op: (fusion pass, ...)}``: the passes that made each fused op (the graph's ``pass_name``,
        ``pass_name_ub``), for the systemic faults (:mod:`~precision_tool.comparison.systemic`); empty without a graph.
    """

    mode: str
    order: Tuple[str, ...]
    order_source: str
    data_inputs: Mapping[str, Tuple[Tuple[str, int], ...]] = field(default_factory=dict, hash=False)
    coverage: Optional[Coverage] = None
    sources: Mapping[str, str] = field(default_factory=dict, hash=False)
    passes: Mapping[str, Tuple[str, ...]] = field(default_factory=dict, hash=False)

    @classmethod
    def of(cls, alignment: Alignment, graph=None) -> "RunFacts":
        """The facts of ``alignment``; ``graph`` (the NPU graph it was aligned with, or ``None``) gives the sources."""
        from precision_tool.alignment.npu_side import graphs_of
        from precision_tool.comparison.same_model import graph_sources

        edges = {op: tuple((str(p), int(k)) for p, k in pairs) for op, pairs in alignment.data_inputs.items()
                 if pairs}
        ops = ((op.name, op.type, [ref.producer for ref in op.data_inputs]) for g in graphs_of(graph) for op in g.ops)
        passes = {op.name: tuple(op.pass_names) for g in graphs_of(graph) for op in g.ops if op.pass_names}
        return cls(alignment.mode, tuple(alignment.order), alignment.order_source, edges, alignment.coverage,
                   graph_sources(ops) if graph is not None else {}, passes)

    def to_dict(self) -> Dict[str, Any]:
        return {"mode": self.mode, "order_source": self.order_source, "order": list(self.order),
                "data_inputs": {op: [list(edge) for edge in edges] for op, edges in self.data_inputs.items()
                                if edges},
                "coverage": None if self.coverage is None else self.coverage.to_dict(),
                "sources": dict(self.sources), "passes": {op: list(names) for op, names in self.passes.items()}}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "RunFacts":
        """The facts :meth:`to_dict` wrote (also reads ``summary.json``, which holds the same keys)."""
        coverage = data.get("coverage")
        edges = {str(op): tuple((str(p), int(k)) for p, k in pairs)
                 for op, pairs in (data.get("data_inputs") or {}).items()}
        sources = data.get("sources") or {}
        passes = data.get("passes") or {}
        return cls(str(data.get("mode") or "npu_vs_tf"), tuple(str(op) for op in data["order"]),
                   str(data.get("order_source") or "graph"), edges,
                   None if coverage is None else _coverage_from_dict(coverage),
                   {str(op): str(kind) for op, kind in sources.items()} if isinstance(sources, dict) else {},
                   {str(op): tuple(str(n) for n in names) for op, names in passes.items()
                    if isinstance(names, list)} if isinstance(passes, dict) else {})


def _coverage_from_dict(data: Mapping[str, Any]) -> Coverage:
    def names(key: str) -> Tuple[str, ...]:
        return tuple(str(item) for item in data.get(key) or ())

    def pairs(key: str) -> Tuple[Tuple[str, str], ...]:
        return tuple((str(a), str(b)) for a, b in data.get(key) or ())

    return Coverage(aligned_count=int(data.get("aligned_count", 0)), npu_tensors=int(data.get("npu_tensors", 0)),
                    npu_only_ops=names("npu_only_ops"), reference_only=names("reference_only"),
                    dumped_not_in_graph=names("dumped_not_in_graph"),
                    graph_ops_without_dump=names("graph_ops_without_dump"), ambiguous=names("ambiguous"),
                    unaligned=pairs("unaligned"), unreadable=pairs("unreadable"),
                    unreadable_references=pairs("unreadable_references"),
                    ignored_references=names("ignored_references"),
                    dump_choice=str(data.get("dump_choice") or ""), dump_step=_optional_count(data, "dump_step"),
                    dump_device=_optional_count(data, "dump_device"))


def _optional_count(data: Mapping[str, Any], key: str) -> Optional[int]:
    value = data.get(key)
    return None if value is None else int(value)


def order_by_index(results: Sequence[TensorResult]) -> Tuple[str, ...]:
    """Op names in the order of their ``Index`` (file order breaks ties): the order of a CSV without facts."""
    ranked = sorted(enumerate(results), key=lambda item: (item[1].index if item[1].index >= 0 else 1 << 62,
                                                          item[0]))
    return tuple(dict.fromkeys(row.op_name for _, row in ranked))


@dataclass(frozen=True)
class ComparisonResult:
    """Every row of a run, in execution order, and what the run was judged with.

    ``results`` holds compared tensors, uncompared tensors and op-level ``NO_DUMP`` rows, with the statuses the
    :attr:`judgment` gave them; ``divergence`` is its first divergence. Both are decided when the result is made
    (:meth:`judged`) and again by :meth:`judged_at`. ``inputs`` names the folders compared (``npu``,
    ``reference``, ``graph``, ``reference_graph``; absolute paths, ``None`` when not given).
    """

    results: Tuple[TensorResult, ...]
    facts: RunFacts
    divergence: Divergence
    cosine_threshold: Optional[float]
    timing: Timing = Timing()
    inputs: Mapping[str, Optional[str]] = field(default_factory=dict, hash=False)
    judgment: Optional[Judgment] = field(default=None, hash=False, compare=False, repr=False)

    @classmethod
    def judged(cls, results: Iterable[TensorResult], facts: RunFacts, cosine_threshold: Optional[float],
               timing: Timing = Timing(), inputs: Optional[Mapping[str, Optional[str]]] = None
               ) -> "ComparisonResult":
        """A result judged from ``results``' own statuses and figures (:func:`~.judgment.judge`)."""
        judgment = judge(tuple(results), facts)
        return cls(judgment.rows, facts, judgment.divergence, cosine_threshold, timing, dict(inputs or {}), judgment)

    def with_rows(self, results: Iterable[TensorResult]) -> "ComparisonResult":
        """This run with other rows (replay figures added, say), judged again."""
        return ComparisonResult.judged(results, self.facts, self.cosine_threshold, self.timing, self.inputs)

    @property
    def verdict(self) -> Judgment:
        """The :attr:`judgment` (made now for a result built without :meth:`judged`)."""
        return self.judgment if self.judgment is not None else judge(self.results, self.facts)

    @property
    def attribution(self):
        """Which ops add error (:attr:`Judgment.attribution <.judgment.Judgment.attribution>`)."""
        return self.verdict.attribution

    @property
    def culprit(self):
        """The culprit the comparison names (:attr:`Judgment.culprit <.judgment.Judgment.culprit>`), or ``None``."""
        return self.verdict.culprit

    def judged_at(self, threshold: Optional[float]) -> "ComparisonResult":
        """Every row judged at ``threshold`` (:meth:`TensorResult.judged_at`) and the divergence found again."""
        if threshold == self.cosine_threshold:
            return self
        return ComparisonResult.judged((row.judged_at(threshold) for row in self.results), self.facts, threshold,
                                       self.timing, self.inputs)

    @property
    def compared(self) -> Tuple[TensorResult, ...]:
        return tuple(r for r in self.results if r.compared)

    @property
    def failing(self) -> Tuple[TensorResult, ...]:
        """Compared tensors that fail, and aligned tensors that could not be read (``ERROR``)."""
        return tuple(r for r in self.results if r.failed)

    @property
    def npu_vs_npu(self) -> bool:
        return self.facts.mode == "npu_vs_npu"

    def failing_in_order(self) -> List[TensorResult]:
        """Failing rows, the first divergence's first, then in execution order."""
        first = self.divergence.first.op_name if self.divergence.first is not None else None
        return sorted(self.failing, key=lambda r: (r.op_name != first, r.order_key))

    def exit_code(self) -> int:
        """:func:`~.judgment.exit_code` of this result (its coverage's unusable inputs; none known without facts)."""
        coverage = self.facts.coverage if self.facts is not None else None
        unusable = len(coverage.unusable_inputs) if coverage is not None else 0
        verdict = self.verdict
        return exit_code(any(r.failed for r in self.results), verdict.culprit is not None, len(self.compared),
                         unusable, verdict.same_model)

    def matching_non_finite_line(self) -> str:
        """One line on the compared tensors whose NaN/inf all match the reference's
        (:attr:`TensorResult.matched_non_finite`), naming the first; ``""`` when there are none. ``compare``
        prints it and ``ac``'s verdict lists it.

        >>> row = TensorResult(3, "loss:output:0", "loss", "output", 0, "Select", Status.PASS, matched_non_finite=4)
        >>> facts = RunFacts("npu_vs_tf", ("loss",), "graph")
        >>> line = ComparisonResult.judged([row], facts, 0.99).matching_non_finite_line()
        >>> print(line.replace("; ", ";\\n").replace(": the", ":\\nthe").replace(": judged", ":\\njudged"))
        1 tensor(s) hold NaN/inf exactly where the reference does (same positions and kinds;
        first: loss:output:0, 4 elements):
        the reference computes them too, so they are no divergence:
        judged on their finite elements
        """
        rows = [row for row in self.compared if row.matched_non_finite]
        if not rows:
            return ""
        first = rows[0]
        count = f"{first.matched_non_finite} element{'' if first.matched_non_finite == 1 else 's'}"
        return (f"{len(rows)} tensor(s) hold NaN/inf exactly where the reference does (same positions and kinds; "
                f"first: {first.tensor_id or first.op_name}, {count}): the reference "
                f"computes them too, so they are no divergence: judged on their finite elements")

    def verdicts(self) -> Dict[Key, bool]:
        """``{(op, kind, k): passed}`` over the compared tensors: what the first divergence is found from."""
        return _verdicts(self.results)

    def counts(self) -> Dict[str, Any]:
        """Counts by status plus totals: compared, passed, failed, errors, not compared, reused, and
        ``matching_non_finite``: compared tensors whose NaN/inf all match the reference's
        (:attr:`TensorResult.matched_non_finite`), judged on their finite elements. ``not_compared`` counts the NPU
        tensors without a reference; the row of a dump file that could not be read names no tensor and is not
        among them (the coverage's unusable inputs list it)."""
        by_status: Dict[Status, int] = {}
        for result in self.results:
            by_status[result.status] = by_status.get(result.status, 0) + 1
        compared = self.compared
        return {"compared": len(compared), "passed": sum(r.passed for r in compared),
                "failed": sum(1 for r in compared if not r.passed), "errors": by_status.get(Status.ERROR, 0),
                "not_compared": sum(1 for r in self.results if r.status is Status.NOT_COMPARED and r.tensor_id),
                "ops_without_dump": by_status.get(Status.NO_DUMP, 0),
                "reused_input_results": sum(1 for r in compared if r.reused_from),
                "matching_non_finite": sum(1 for r in compared if r.matched_non_finite),
                "by_status": {status.value: by_status[status] for status in Status if status in by_status}}


def _verdicts(rows: Iterable[TensorResult]) -> Dict[Key, bool]:
    return {r.key: r.passed for r in rows if r.compared and r.kind}
