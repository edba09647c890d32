"""What statistics prove about a tensor's error (issue 42): the bound never exceeds the true largest element error
(computed here by numpy from the arrays themselves), reaches it where the hand derivation says it must, and the
counts are compared first."""
import math

import numpy as np
import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from precision_tool.formats.tensor_kind import OUTPUT
from precision_tool.metrics.stat_bounds import stat_bound, stats_of_array


def bound_of(npu, reference):
    return stat_bound(stats_of_array(npu), stats_of_array(reference))


finite = st.floats(-1e6, 1e6, allow_nan=False, width=32)


@given(hnp.arrays(np.float32, st.integers(1, 64), elements=finite), st.data())
@example(np.array([1.0, -1.0], np.float32), None)
def test_the_bound_never_exceeds_the_largest_element_error(reference, data):
    """Soundness: L <= max|y - x| for any two tensors of one shape (float64 arithmetic; 1e-9 relative slack for the
    sums' own rounding)."""
    if data is None:
        npu = reference[::-1].copy()
    else:
        npu = data.draw(hnp.arrays(np.float32, reference.shape, elements=finite))
    truth = float(np.max(np.abs(npu.astype(np.float64) - reference.astype(np.float64))))
    found = bound_of(npu, reference)
    assert found.bound <= truth * (1 + 1e-9) + 1e-9 * float(np.max(np.abs(reference)) + 1)
    assert found.mismatch == ""
    # R <= RED = ||y - x|| / ||x||, numpy's norms of the arrays themselves
    difference = float(np.linalg.norm(npu.astype(np.float64) - reference.astype(np.float64)))
    norm = float(np.linalg.norm(reference.astype(np.float64)))
    if norm > 0:
        assert found.red <= difference / norm * (1 + 1e-9) + 1e-9 * (float(np.max(np.abs(reference))) + 1) / norm
    elif found.bound:
        assert found.red is None  # a zero reference proved wrong: no relative size
    else:
        assert found.red == 0.0  # a zero reference and nothing proved


@given(hnp.arrays(np.float32, st.integers(2, 64), elements=finite), st.data())
@example(np.array([1.0] + [0.5] * 99, np.float32), None)
def test_non_finite_values_at_the_same_places_leave_the_bound_sound(reference, data):
    """The review's case: NaN/inf where both tensors hold them (an attention mask's -inf) are outside the
    statistics, so n is the finite count; R <= RED of the finite elements."""
    rng = np.random.default_rng(len(reference))
    holes = rng.random(reference.shape) < 0.5
    holes[0] = False
    npu = reference * np.float32(1.1) if data is None else \
        data.draw(hnp.arrays(np.float32, reference.shape, elements=finite))
    for array in (reference, npu):
        array[holes] = np.where(np.arange(holes.sum()) % 2, np.nan, -np.inf)
    found = bound_of(npu, reference)
    kept = ~holes
    difference = float(np.linalg.norm(npu[kept].astype(np.float64) - reference[kept].astype(np.float64)))
    norm = float(np.linalg.norm(reference[kept].astype(np.float64)))
    assert found.mismatch == ""
    if norm > 0:
        assert found.red <= difference / norm * (1 + 1e-9) + 1e-9 * (float(np.max(np.abs(reference[kept]))) + 1) / norm


def test_counts_that_differ_leave_the_judgment_to_the_counts():
    found = bound_of(np.array([1.0, np.nan]), np.array([1.0, 2.0]))
    assert found.mismatch == "NaN count 1, the reference 0" and found.red is None


def test_a_shifted_maximum_is_bounded_exactly():
    """Raising the largest element by d moves max by d, and no element by more: L == max|e| == d."""
    reference = np.array([0.5, 2.0, -1.0, 0.25], np.float32)
    npu = reference.copy()
    npu[1] += 0.5
    found = bound_of(npu, reference)
    assert (found.bound, found.by, found.scale, found.relative) == (0.5, "max", 2.0, 0.25)


def test_a_uniform_offset_moves_the_mean_by_all_of_it():
    reference = np.linspace(-1, 1, 101, dtype=np.float64)
    found = bound_of(reference + 0.125, reference)
    assert found.bound == pytest.approx(0.125) and found.by in ("max", "min", "mean")
    # a uniform offset c: ||e|| = sqrt(n) c, all of it seen through the mean, so R == RED exactly
    red = np.linalg.norm(np.full(101, 0.125)) / np.linalg.norm(reference)
    assert found.red == pytest.approx(red, rel=1e-12)


def test_zero_mean_noise_moves_neither_mean_nor_norm_beyond_its_square():
    """What statistics cannot show (docs/internals/metrics.md#statistics-bounds): noise x (1 + s z) of relative rms s
    has RED = s, yet moves the mean by about s rms(x) / sqrt(n) and the norm by about s^2 / 2 of it; R stays near
    s^2 / 2 + s / sqrt(n), a tenth of RED at s = 2% and n = 4096 (numpy's arrays, seeded)."""
    rng = np.random.default_rng(42)
    reference = rng.standard_normal(4096)
    npu = reference * (1 + 0.02 * rng.standard_normal(4096))
    found = bound_of(npu, reference)
    red = np.linalg.norm(npu - reference) / np.linalg.norm(reference)
    assert 0.018 < red < 0.022
    assert found.red < red / 10


def test_errors_that_cancel_are_invisible_to_statistics():
    """What statistics cannot show: two elements swapped keep every statistic, though each is wrong by 3."""
    reference = np.array([1.0, 4.0, 2.0], np.float32)
    npu = np.array([4.0, 1.0, 2.0], np.float32)
    assert bound_of(npu, reference).bound == 0.0 and np.max(np.abs(npu - reference)) == 3.0


def test_only_the_l2_norm_sees_a_sign_flip_inside_the_range():
    """x = [1, -1, 1, -1, 0.5], y flips the 0.5: max, min and mean move by 0.2 at most; the norm does not
    move at all (|0.5| == |-0.5|). The bound is mean's |Δ| = 1/5."""
    reference = np.array([1.0, -1.0, 1.0, -1.0, 0.5])
    npu = reference.copy()
    npu[4] = -0.5
    found = bound_of(npu, reference)
    assert found.by == "mean" and found.bound == pytest.approx(0.2) and found.bound <= 1.0


@pytest.mark.parametrize("npu, expected", [
    (np.array([1.0, np.nan, 3.0]), "NaN count 1, the reference 0"),
    (np.array([1.0, np.inf, 3.0]), "+inf count 1, the reference 0"),
    (np.array([1.0, 2.0]), "element count 2, the reference 3"),
])
def test_counts_are_compared_first(npu, expected):
    assert stat_bound(stats_of_array(npu), stats_of_array(np.array([1.0, 2.0, 3.0]))).mismatch == expected


def test_unknown_statistics_and_a_zero_reference():
    zero = stats_of_array(np.zeros(4))
    assert stat_bound(stats_of_array(np.array([0.0, 0.0, 0.0, 1e-3])), zero).relative == math.inf
    assert stat_bound(zero, zero).relative == 0.0
    empty = stats_of_array(np.array([np.nan, np.nan]))
    assert empty.max is None and stat_bound(empty, empty).bound is None


def test_stats_of_array_agree_with_numpy_on_a_large_array():
    """Streamed a million elements at a time: the same figures numpy gives on the whole array at once."""
    values = np.random.default_rng(7).standard_normal(2_500_001).astype(np.float32)
    values[[5, 1_500_000]] = [np.nan, -np.inf]
    s = stats_of_array(values)
    good = values[np.isfinite(values)].astype(np.float64)
    assert (s.max, s.min, s.count, s.nan, s.neg_inf) == (good.max(), good.min(), values.size, 1, 1)
    assert s.mean == pytest.approx(good.mean(), rel=1e-9) and s.l2norm == pytest.approx(np.linalg.norm(good), rel=1e-9)
    assert s.kind == OUTPUT
