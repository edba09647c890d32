"""The bisection search on made-up culprits: which set it names and how many trials it takes (issue 20)."""
import math

from hypothesis import given, settings
from hypothesis import strategies as st

from precision_tool.checks.bisect import Trials, bisect, minimal_set, trial_budget


def restores_when(culprits):
    """A trial restores accuracy exactly when every culprit is changed (changing more never hurts)."""
    return lambda changed: set(culprits) <= set(changed)


@settings(derandomize=True, max_examples=200)
@given(st.integers(min_value=1, max_value=64).flatmap(lambda n: st.tuples(st.just(n), st.integers(0, n - 1))))
def test_one_culprit_is_named_within_ceil_log2_n_plus_2_trials(case):
    n, k = case
    names = [f"pass{i}" for i in range(n)]
    trials = Trials(restores_when([names[k]]))
    assert bisect(names, trials) == [names[k]]
    assert len(trials.known) <= math.ceil(math.log2(n)) + 2 == trial_budget(n)


@settings(derandomize=True, max_examples=100)
@given(st.integers(min_value=2, max_value=24).flatmap(
    lambda n: st.tuples(st.just(n), st.sets(st.integers(0, n - 1), min_size=2, max_size=3))))
def test_several_culprits_are_all_named_and_nothing_else(case):
    n, chosen = case
    names = [f"op{i}" for i in range(n)]
    culprits = [names[i] for i in sorted(chosen)]
    trials = Trials(restores_when(culprits))
    assert bisect(names, trials) == culprits  # the proof failed, so minimal_set ran: every culprit, no more


def test_nothing_restores_and_no_candidates_give_none_after_one_trial():
    trials = Trials(lambda changed: False)
    assert bisect(["a", "b", "c"], trials) is None and len(trials.known) == 1
    assert bisect([], Trials(lambda changed: True)) is None


def test_a_trial_already_known_is_not_run_again():
    runs = []
    trials = Trials(lambda changed: runs.append(list(changed)) or "b" in changed,
                    known={frozenset(["a", "b"]): True})
    assert bisect(["a", "b"], trials) == ["b"]
    assert runs == [["a"], ["b"]]  # the full set came from the state file; "b" alone is the proof
    assert minimal_set(["a", "b"], [], trials) == ["b"] and runs == [["a"], ["b"], []]  # only "nothing" is new
