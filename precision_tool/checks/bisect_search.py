"""The search ``bisect`` runs: the fewest candidates (fusion passes switched off, ops kept in float32) whose change
restores accuracy, each trial a fresh NPU run.

``trial(S)`` runs the user's NPU command with the candidates ``S`` changed and says whether accuracy came back
(:class:`Target`, judged on :class:`Outcome`); trials are memoised by the set tried (:class:`Trials`, kept in a
state file so an interrupted bisection resumes). Changing more candidates is assumed never to make accuracy worse.
:func:`bisect` finds one culprit in at most ``ceil(log2(n)) + 2`` trials; when no single candidate explains the
error, :func:`minimal_set` finds a minimal set. See docs/internals/checks.md#bisect_search.
"""
from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, FrozenSet, Iterable, List, Optional, Sequence, Tuple

Trial = Callable[[Sequence[str]], bool]


def _tf_ops(rows) -> Dict[str, FrozenSet[str]]:
    """``{NPU op: the TF ops it implements}`` (its rows' GroundTruth; its own name when unknown): what stays the same
    across runs that fuse differently."""
    found: Dict[str, FrozenSet[str]] = {}
    for row in rows:
        if row.op_name not in found and row.kind:
            names = [name for name in row.ground_truth.split(",") if name and name != "*"]
            found[row.op_name] = frozenset(names or [row.op_name])
    return found


@dataclass(frozen=True)
class Outcome:
    """One run against the reference as its judgment sees it, in terms that survive a change of fusion: ``judged``
    tensors, ``failing`` of them (lowest cosine ``min_cosine``); the reference tensors the failing ones are compared
    with (``failing_refs``: the same tensor whatever NPU op computes it); the TF ops of the ops with a failing output
    (``failing_ops``), of each op that stands out (``standouts``, one set per op), of the ops above their floor
    (``above_floor``); the culprit (``culprit``, an NPU op name, ``""`` for none) and its TF ops (``culprit_ops``)."""

    judged: int
    failing: int
    min_cosine: Optional[float]
    failing_refs: FrozenSet[str] = frozenset()
    failing_ops: FrozenSet[str] = frozenset()
    standouts: Tuple[FrozenSet[str], ...] = ()
    above_floor: FrozenSet[str] = frozenset()
    culprit: str = ""
    culprit_ops: FrozenSet[str] = frozenset()
    computed: FrozenSet[str] = frozenset()
    """The TF ops the run's compared NPU ops implement: the same in every run of one model, however fused (up to
    the numbers a framework gives auto-named layers and tensors: :func:`same_ops`)."""

    @classmethod
    def of(cls, result, only_ops: Optional[Iterable[str]] = None) -> "Outcome":
        """The outcome of a judged comparison ``result``; ``only_ops``: judge only these ops' output tensors
        (``--judge outputs``), ``None`` every compared tensor."""
        judgment = result.verdict
        tf_ops = _tf_ops(result.results)
        rows = [row for row in result.results if row.compared]
        if only_ops is not None:
            kept = set(only_ops)
            rows = [row for row in rows if row.op_name in kept and row.kind == "output"]
        failing = [row for row in rows if row.failed]
        cosines = [row.cosine for row in rows if row.cosine is not None and row.status.cosine_gated]
        attribution = judgment.attribution

        def union(names):
            return frozenset(op for name in names for op in tf_ops.get(name, frozenset([name])))

        culprit = judgment.culprit.op_name if judgment.culprit is not None else ""
        computed = union(row.op_name for row in result.results if row.compared and row.kind)
        return cls(len(rows), len(failing), min(cosines) if cosines else None,
                   frozenset(row.reference or row.tensor_id for row in failing),
                   union(row.op_name for row in failing if row.kind == "output"),
                   tuple(tf_ops.get(op.op_name, frozenset([op.op_name])) for op in attribution.standouts),
                   union(op.op_name for op in attribution.above_floor), culprit, union([culprit] if culprit else []),
                   computed)

    @property
    def passes(self) -> bool:
        """Nothing to fix: no tensor fails and no culprit."""
        return self.judged > 0 and self.failing == 0 and not self.culprit

    def still(self, ops: FrozenSet[str]) -> bool:
        """True when an op implementing one of the TF ops ``ops`` still fails, adds error of its own or is the
        culprit in this run: what a culprit named by any method (local error, first divergence) leaves behind."""
        return bool(ops & (self.failing_ops | self.above_floor | self.culprit_ops))

    def text(self, culprit_ops: FrozenSet[str] = frozenset(), culprit: str = "") -> str:
        """``3 of 52 tensors fail, lowest cosine 0.917254[; conv2 fails or adds error]`` (the lowest cosine of the
        tensors the cosine gate judges: a tensor that is rounding noise has any cosine)."""
        cosine = f"{self.min_cosine:.6f}" if self.min_cosine is not None else "-"
        verb = "fails" if self.failing == 1 or self.judged == 1 else "fail"
        noun = "tensor" if self.judged == 1 else "tensors"
        line = f"{self.failing} of {self.judged} {noun} {verb}, lowest cosine {cosine}"
        if culprit:
            state = "fails or adds error" if self.still(culprit_ops) else "neither fails nor adds error"
            line += f"; {culprit} {state}"
        return line

    def to_dict(self) -> Dict[str, Any]:
        return {"judged": self.judged, "failing": self.failing, "min_cosine": self.min_cosine,
                "failing_refs": sorted(self.failing_refs), "failing_ops": sorted(self.failing_ops),
                "standouts": [sorted(ops) for ops in self.standouts], "above_floor": sorted(self.above_floor),
                "culprit": self.culprit, "culprit_ops": sorted(self.culprit_ops), "computed": sorted(self.computed)}

    @classmethod
    def from_dict(cls, data: Dict[str, Any]) -> "Outcome":
        """The outcome :meth:`to_dict` wrote (a state file's trial)."""
        return cls(int(data.get("judged", 0)), int(data.get("failing", 0)), data.get("min_cosine"),
                   frozenset(data.get("failing_refs") or ()), frozenset(data.get("failing_ops") or ()),
                   tuple(frozenset(ops) for ops in data.get("standouts") or ()),
                   frozenset(data.get("above_floor") or ()), str(data.get("culprit") or ""),
                   frozenset(data.get("culprit_ops") or ()), frozenset(data.get("computed") or ()))


@dataclass(frozen=True)
class Target:
    """What a trial must restore (docs/internals/checks.md#bisect_search), from the failing run and the run with every
    candidate changed (``every``): the failing run's culprit (its TF ops ``culprit_ops``) gone -- no op implementing
    them fails or adds error -- and nothing failing or standing out that ``every`` does not show; ``outside``: the
    reference tensors and TF ops that fail or stand out in both runs -- outside the search."""

    culprit_ops: FrozenSet[str]
    every: Outcome
    outside: FrozenSet[str]

    @classmethod
    def of(cls, failing_run: Outcome, every: Outcome) -> Optional["Target"]:
        """The target; ``None`` when changing every candidate leaves the culprit, or, without a culprit, fixes no
        failure: then no candidate set restores accuracy."""
        if failing_run.culprit_ops and every.still(failing_run.culprit_ops):
            return None
        if not failing_run.culprit_ops and not failing_run.failing_refs - every.failing_refs:
            return None
        kept = [ops for ops in failing_run.standouts if any(ops & others for others in every.standouts)]
        outside = (failing_run.failing_refs & every.failing_refs) | frozenset(op for ops in kept for op in ops)
        return cls(failing_run.culprit_ops, every, outside)

    def restores(self, outcome: Outcome) -> bool:
        """The culprit is gone, every failing reference tensor also fails with every candidate changed, and every op
        that stands out overlaps one that stands out there."""
        every = self.every
        return (not outcome.still(self.culprit_ops) and outcome.failing_refs <= every.failing_refs
                and all(any(ops & others for others in every.standouts) for ops in outcome.standouts))


_AUTO_NUMBER = re.compile(r"_\d+(?=/|$)")


def _shape_of(ops: Iterable[str]) -> Counter:
    """The TF op names with the numbers of auto-named layers and tensors left out (``conv2d_3/BiasAdd`` ->
    ``conv2d/BiasAdd``, ``keras_tensor_156`` -> ``keras_tensor``), counted: Keras numbers them per process, so two
    processes building one model may number them differently."""
    return Counter(_AUTO_NUMBER.sub("", op) for op in ops)


#: Names that differ in at most this share of the failing run's TF ops are renamings, not another model: Keras 3
#: numbers auto-named layers and tensors per process and may name an op after its tensor (a model built third in
#: a process named its pooling ``keras_tensor_312``, the same script alone ``global_average_pooling2d/Mean``).
RENAMED_SHARE = 0.05


def another_model(expected: FrozenSet[str], found: FrozenSet[str]) -> bool:
    """True when ``found`` differs from ``expected`` (:func:`same_ops`) in more than :data:`RENAMED_SHARE` of its TF
    ops: a run without a layer's ops (a bias an environment variable switches on), not a renaming."""
    missing, extra = same_ops(expected, found)
    return max(len(missing), len(extra)) > RENAMED_SHARE * max(len(expected), 1)


def same_ops(expected: FrozenSet[str], found: FrozenSet[str]) -> Tuple[List[str], List[str]]:
    """``(missing, extra)``: the TF op names (auto-numbers left out) ``found`` lacks or has beyond ``expected``; both
    empty when they implement the same ops.

    >>> same_ops(frozenset({"keras_tensor_156", "conv2d_1/BiasAdd"}), frozenset({"keras_tensor_312", "conv2d/BiasAdd"}))
    ([], [])
    >>> same_ops(frozenset({"c/Conv2D", "c/BiasAdd"}), frozenset({"c/Conv2D"}))
    (['c/BiasAdd'], [])
    """
    want, got = _shape_of(expected), _shape_of(found)
    return sorted((want - got).elements()), sorted((got - want).elements())


def reproduces(failing_run: Outcome, outcome: Outcome) -> bool:
    """True when ``outcome`` (the NPU command with nothing changed) shows what the failing run showed: its culprit
    still failing or adding error, else one of its failing tensors failing."""
    if failing_run.culprit_ops:
        return outcome.still(failing_run.culprit_ops)
    return bool(failing_run.failing_refs & outcome.failing_refs)


@dataclass
class Trials:
    """Every trial run so far: the set changed -> accuracy restored (``known``, which may start from a state file).
    Calling it runs a set not yet known and records it; a known set is not run again."""

    run_trial: Trial
    known: Dict[FrozenSet[str], bool] = field(default_factory=dict)

    def __call__(self, changed: Sequence[str]) -> bool:
        key = frozenset(changed)
        if key not in self.known:
            self.known[key] = bool(self.run_trial(sorted(key)))
        return self.known[key]


def trial_budget(candidates: int) -> int:
    """The trials :func:`bisect` needs at most for one culprit among ``candidates``: ``ceil(log2(n)) + 2``.

    >>> [trial_budget(n) for n in (1, 2, 5, 8, 9)]
    [2, 3, 5, 5, 6]
    """
    return math.ceil(math.log2(max(candidates, 1))) + 2


def bisect(candidates: Sequence[str], trial: Trial) -> Optional[List[str]]:
    """The fewest candidates whose change restores accuracy, in the candidates' order
    (docs/internals/checks.md#bisect_search); ``None`` when changing all of them does not.

    >>> culprit = lambda changed: "c" in changed
    >>> bisect(["a", "b", "c", "d", "e"], culprit)
    ['c']
    >>> bisect(["a", "b"], lambda changed: False) is None
    True
    """
    every = list(candidates)
    if not every or not trial(every):
        return None
    left, proven = every, False
    while len(left) > 1:
        first, second = left[:len(left) // 2], left[len(left) // 2:]
        if trial(first):
            left, proven = first, len(first) == 1
        else:
            left, proven = second, False
    if proven or trial(left):
        return left
    return minimal_set(every, [], trial)


def minimal_set(candidates: Sequence[str], fixed: Sequence[str], trial: Trial) -> List[str]:
    """A minimal subset ``M`` of ``candidates`` such that changing ``M`` and ``fixed`` restores accuracy, given
    that changing all of ``candidates`` and ``fixed`` does. No candidate of ``M`` can be left out.

    >>> needs_both = lambda changed: "b" in changed and "e" in changed
    >>> minimal_set(["a", "b", "c", "d", "e"], [], needs_both)
    ['b', 'e']
    """
    items = list(candidates)
    if len(items) == 1:
        return [] if trial(list(fixed)) else items
    first, second = items[:len(items) // 2], items[len(items) // 2:]
    if trial(list(fixed) + first):
        return minimal_set(first, fixed, trial)
    if trial(list(fixed) + second):
        return minimal_set(second, fixed, trial)
    needed_first = minimal_set(first, list(fixed) + second, trial)
    needed_second = minimal_set(second, list(fixed) + needed_first, trial)
    return needed_first + needed_second
