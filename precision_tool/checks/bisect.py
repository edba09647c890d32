"""The search ``bisect`` runs: the fewest candidates (fusion passes switched off, ops kept in float32) whose change
restores accuracy, each trial a fresh NPU run.

``trial(S)`` runs the user's NPU command with the candidates ``S`` changed and says whether accuracy came back.
Trials are memoised by the set tried (:class:`Trials`, kept in a state file so an interrupted bisection resumes
where it stopped). Changing more candidates is assumed never to make accuracy worse (each candidate is a fusion
switched off or an op widened to float32: both only remove error).

**What "accuracy came back" means** (:class:`Target`): each run is judged by the one judgment of a comparison
(:mod:`precision_tool.comparison.judgment`) and summed up as an :class:`Outcome` -- the ops with a failing tensor,
the ops that add error of their own, the culprit. The failing run names a culprit ``C`` (or only failures); the
run with *every* candidate changed shows what the candidates can explain: the failures and standouts it removes.
A trial restores accuracy when those explained failures and standouts are gone and ``C``'s local error is back
within its floor -- not when every tensor of the network passes: failures every trial keeps (an overflow a clamp
makes harmless) are **outside the search**, named once. When changing every candidate leaves ``C`` adding error
(or, without a culprit, removes no failure), no candidate set will.

:func:`bisect` -- one culprit, the common case, in at most ``ceil(log2(n)) + 2`` trials:

1. every candidate changed: if accuracy does not come back, no candidate set will (``None``);
2. halving: change the first half ``A`` of what is left; back -> keep ``A``, else keep the other half ``B``
   (not run: with one culprit, it is there) -- ``ceil(log2(n))`` trials;
3. the one left is tried alone unless step 2 already tried exactly it (the proof).

When the proof fails -- no single candidate explains the error -- :func:`minimal_set` finds a minimal set
(each half tried with the other changed too), recorded as more trials.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, FrozenSet, Iterable, List, Optional, Sequence

Trial = Callable[[Sequence[str]], bool]


@dataclass(frozen=True)
class Outcome:
    """One run against the reference as its judgment sees it: ``judged`` tensors, ``failing`` of them (lowest
    cosine ``min_cosine``), the ops with a failing tensor, the ops that stand out by their own error
    (``standouts``) and those above their floor (``above_floor``), and its ``culprit`` (``""``: none)."""

    judged: int
    failing: int
    min_cosine: Optional[float]
    failing_ops: FrozenSet[str] = frozenset()
    standouts: FrozenSet[str] = frozenset()
    above_floor: FrozenSet[str] = frozenset()
    culprit: str = ""

    @classmethod
    def of(cls, result, only_ops: Optional[Iterable[str]] = None) -> "Outcome":
        """The outcome of a judged comparison ``result``; ``only_ops``: judge only these ops' output tensors
        (``--judge outputs``), ``None`` every compared tensor."""
        judgment = result.verdict
        rows = [row for row in result.results if row.compared]
        if only_ops is not None:
            kept = set(only_ops)
            rows = [row for row in rows if row.op_name in kept and row.kind == "output"]
        failing = [row for row in rows if row.failed]
        cosines = [row.cosine for row in rows if row.cosine is not None]
        attribution = judgment.attribution
        return cls(len(rows), len(failing), min(cosines) if cosines else None,
                   frozenset(row.op_name for row in failing), frozenset(op.op_name for op in attribution.standouts),
                   frozenset(op.op_name for op in attribution.above_floor),
                   judgment.culprit.op_name if judgment.culprit is not None else "")

    @property
    def passes(self) -> bool:
        """Nothing to fix: no tensor fails and no culprit."""
        return self.judged > 0 and self.failing == 0 and not self.culprit

    def text(self, culprit: str = "") -> str:
        """``3 of 52 tensors fail, lowest cosine 0.917254[; conv2 within its floor]``."""
        cosine = f"{self.min_cosine:.6f}" if self.min_cosine is not None else "-"
        verb = "fails" if self.failing == 1 or self.judged == 1 else "fail"
        noun = "tensor" if self.judged == 1 else "tensors"
        line = f"{self.failing} of {self.judged} {noun} {verb}, lowest cosine {cosine}"
        if culprit:
            line += f"; {culprit} {'adds error of its own' if culprit in self.above_floor else 'within its floor'}"
        return line

    def to_dict(self) -> Dict[str, Any]:
        return {"judged": self.judged, "failing": self.failing, "min_cosine": self.min_cosine,
                "failing_ops": sorted(self.failing_ops), "standouts": sorted(self.standouts),
                "above_floor": sorted(self.above_floor), "culprit": self.culprit}

    @classmethod
    def from_dict(cls, data: Dict[str, Any]) -> "Outcome":
        """The outcome :meth:`to_dict` wrote (a state file's trial)."""
        return cls(int(data.get("judged", 0)), int(data.get("failing", 0)), data.get("min_cosine"),
                   frozenset(data.get("failing_ops") or ()), frozenset(data.get("standouts") or ()),
                   frozenset(data.get("above_floor") or ()), str(data.get("culprit") or ""))


@dataclass(frozen=True)
class Target:
    """What a trial must restore (see the module docstring): the failing run's ``culprit`` back within its floor,
    and the ``failures`` and ``standouts`` that changing every candidate removes gone; ``outside``: the ops that
    still fail or stand out with every candidate changed -- outside the search."""

    culprit: str
    failures: FrozenSet[str]
    standouts: FrozenSet[str]
    outside: FrozenSet[str]

    @classmethod
    def of(cls, failing_run: Outcome, every: Outcome) -> Optional["Target"]:
        """The target, from the failing run and the run with every candidate changed; ``None`` when that run does
        not bring the culprit back within its floor or, without a culprit, removes no failure: then no candidate
        set restores accuracy."""
        culprit = failing_run.culprit
        failures = failing_run.failing_ops - every.failing_ops
        standouts = failing_run.standouts - every.standouts
        if culprit and culprit in every.above_floor:
            return None
        if not culprit and not failures:
            return None
        outside = (failing_run.failing_ops & every.failing_ops) | (failing_run.standouts & every.standouts)
        return cls(culprit, failures, standouts, outside)

    def restores(self, outcome: Outcome) -> bool:
        return not (outcome.failing_ops & self.failures) and not (outcome.standouts & self.standouts) and not (
            self.culprit and self.culprit in outcome.above_floor)


def reproduces(failing_run: Outcome, outcome: Outcome) -> bool:
    """True when ``outcome`` (the NPU command with nothing changed) shows what the failing run showed: its culprit
    adding error, else one of its failing ops failing."""
    if failing_run.culprit:
        return failing_run.culprit in outcome.above_floor
    return bool(failing_run.failing_ops & outcome.failing_ops)


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
    """The fewest candidates whose change restores accuracy, in the candidates' order (see the module
    docstring); ``None`` when changing all of them does not.

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
