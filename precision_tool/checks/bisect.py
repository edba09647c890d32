"""The search ``bisect`` runs: the fewest candidates (fusion passes switched off, ops kept in float32) whose change
restores accuracy, each trial a fresh NPU run.

``trial(S)`` runs the user's NPU command with the candidates ``S`` changed and says whether accuracy came back.
Trials are memoised by the set tried (:class:`Trials`, kept in a state file so an interrupted bisection resumes
where it stopped). Changing more candidates is assumed never to make accuracy worse (each candidate is a fusion
switched off or an op widened to float32: both only remove error).

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
from typing import Callable, Dict, FrozenSet, List, Optional, Sequence

Trial = Callable[[Sequence[str]], bool]


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
