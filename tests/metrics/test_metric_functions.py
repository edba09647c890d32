"""Every docstring formula on hand-computed tiny cases, and the documented edge cases of each metric."""
from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from numpy.testing import assert_allclose

from precision_tool.errors import MetricInputError, PrecisionToolError
from precision_tool.metrics import (MeanStd, accumulated_relative_error, allclose_ratio, cosine_similarity,
                                    format_mean_std, kullback_leibler_divergence, max_absolute_error,
                                    max_relative_error, mean_absolute_error, mean_relative_error,
                                    relative_euclidean_distance, root_mean_square_error, standard_deviation)

# x = NPU, y = reference; the last reference element is zero.
X = [2.0, 1.0, 3.0, 5.0]
Y = [1.0, 2.0, 4.0, 0.0]
# |x - y| = [1, 1, 1, 5];  r = [1/1, 1/2, 1/4, (zero reference) 0]

ALL_FUNCS = [cosine_similarity, max_absolute_error, accumulated_relative_error, relative_euclidean_distance,
             kullback_leibler_divergence, mean_absolute_error, root_mean_square_error, max_relative_error,
             mean_relative_error]


@pytest.fixture(autouse=True)
def _no_warnings():
    """Metrics never warn: not on zero references, zero vectors or empty inputs."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        yield


class TestFormulas:
    def test_max_absolute_error(self):
        assert max_absolute_error(X, Y) == 5.0

    def test_mean_absolute_error(self):
        assert mean_absolute_error(X, Y) == 8.0 / 4

    def test_root_mean_square_error(self):
        assert_allclose(root_mean_square_error(X, Y), math.sqrt((1 + 1 + 1 + 25) / 4), rtol=1e-15)

    def test_accumulated_relative_error_skips_the_zero_reference(self):
        assert accumulated_relative_error(X, Y) == 1.0 + 0.5 + 0.25

    def test_max_relative_error(self):
        assert max_relative_error(X, Y) == 1.0

    def test_mean_relative_error_counts_the_zero_reference_in_n(self):
        assert mean_relative_error(X, Y) == 1.75 / 4

    def test_relative_euclidean_distance(self):
        assert_allclose(relative_euclidean_distance(X, Y), math.sqrt(28 / 21), rtol=1e-15)

    def test_cosine_similarity(self):
        assert_allclose(cosine_similarity(X, Y), 16 / math.sqrt(39 * 21), rtol=1e-15)

    def test_standard_deviation(self):
        result = standard_deviation(X, Y)
        assert isinstance(result, MeanStd)
        assert_allclose(result, [2.75, math.sqrt(2.1875), 1.75, math.sqrt(2.1875)], rtol=1e-15)

    def test_kullback_leibler_divergence(self):
        eps = 2.0 ** -23

        def profile(values):
            low, high = min(values), max(values)
            scaled = [max((v - low) / (high - low), eps) for v in values]
            return [v / sum(scaled) for v in scaled]

        p, q = profile(X), profile(Y)  # [.25, eps, .5, 1] and [.25, .5, 1, eps], normalised
        expected = sum(pi * math.log(pi / qi) for pi, qi in zip(p, q))
        assert_allclose(kullback_leibler_divergence(X, Y), expected, rtol=1e-13)

    def test_allclose_ratio(self):
        # bounds atol + rtol*|y| = [.2, .3, .5, .1]; errors [1, 1, 1, 5] -> none close; loosen -> 3 of 4
        assert allclose_ratio(X, Y, rtol=0.1, atol=0.1) == 0.0
        assert allclose_ratio(X, Y, rtol=0.0, atol=1.0) == 0.75


class TestEmptyInputs:
    @pytest.mark.parametrize("func", ALL_FUNCS, ids=lambda f: f.__name__)
    def test_nan(self, func):
        assert math.isnan(func([], []))

    def test_standard_deviation(self):
        assert all(math.isnan(v) for v in standard_deviation([], []))

    def test_allclose_ratio(self):
        assert math.isnan(allclose_ratio([], [], rtol=0, atol=0))


class TestZeroReferences:
    @pytest.mark.parametrize("func", [accumulated_relative_error, max_relative_error, mean_relative_error,
                                      relative_euclidean_distance], ids=lambda f: f.__name__)
    def test_an_all_zero_reference_makes_any_relative_error_infinite_and_none_zero(self, func):
        # the one rule for a zero reference (metrics.rounding.relative_error)
        assert func([1.0, -2.0], [0.0, 0.0]) == math.inf
        assert func([0.0, 0.0], [0.0, 0.0]) == 0.0

    def test_references_at_or_below_float64_eps_count_as_zero(self):
        eps = np.finfo(np.float64).eps
        assert max_relative_error([1.0], [eps]) == math.inf  # msaccucmp's columns leave |y| <= eps out: none left
        assert max_relative_error([1.0], [2 * eps]) == pytest.approx(1 / (2 * eps) - 1)

    def test_relative_euclidean_distance_of_tiny_nonzero_reference_is_real(self):
        y = np.full(8, 1e-17)
        assert relative_euclidean_distance(2 * y, y) == pytest.approx(1.0, rel=1e-12)

    def test_absolute_errors_do_not_care(self):
        assert max_absolute_error([1.0, 2.0], [0.0, 0.0]) == 2.0

    def test_quotient_overflow_is_inf(self):
        assert max_relative_error([1e300], [1e-10]) == math.inf


class TestCosineEdges:
    def test_zero_vectors_are_undefined(self):
        assert math.isnan(cosine_similarity([0.0, 0.0], [1.0, 2.0]))
        assert math.isnan(cosine_similarity([1.0, 2.0], [0.0, 0.0]))
        assert math.isnan(cosine_similarity([0.0, 0.0], [0.0, 0.0]))

    @pytest.mark.parametrize("x, y, expected", [(3.0, 5.0, 1.0), (3.0, -5.0, -1.0), (-1e-30, -7.0, 1.0)])
    def test_one_element_compares_signs(self, x, y, expected):
        assert cosine_similarity([x], [y]) == expected

    @pytest.mark.parametrize("scale", [1e-200, 1e-170, 1e-20, 1.0, 1e20, 1e170, 1e300])
    def test_scaled_values_get_the_true_cosine(self, scale):
        x, y = np.array([1.0, 0.0, 1.0]) * scale, np.array([1.0, 1.0, 0.0]) * scale
        assert cosine_similarity(x, y) == pytest.approx(0.5, rel=1e-14)
        assert relative_euclidean_distance(x, y) == pytest.approx(1.0, rel=1e-14)
        assert root_mean_square_error(x, y) == pytest.approx(math.sqrt(2 / 3) * scale, rel=1e-14)

    def test_identical_float32_tensors_of_1e20_are_identical(self):
        values = np.float32([1e20, -2e20, 3e20])
        assert cosine_similarity(values, values) == 1.0

    def test_clamped_to_one(self):
        values = np.random.default_rng(3).standard_normal(1001)
        assert cosine_similarity(values, values) <= 1.0
        assert cosine_similarity(values, -values) >= -1.0


class TestKullbackLeibler:
    def test_affine_images_have_divergence_zero(self):
        y = np.random.default_rng(0).standard_normal(50)
        assert kullback_leibler_divergence(3 * y + 7, y) == 0.0

    @pytest.mark.parametrize("x, y", [(5.0, 7.0), (0.0, 0.0), (-3.0, 2.0)])
    def test_constant_tensors_are_uniform_profiles(self, x, y):
        assert kullback_leibler_divergence(np.full(6, x), np.full(6, y)) == 0.0

    def test_not_symmetric(self):
        x, y = [0.0, 1.0, 1.0], [0.0, 0.0, 1.0]
        assert kullback_leibler_divergence(x, y) != pytest.approx(kullback_leibler_divergence(y, x))

    def test_huge_float64_range_does_not_overflow(self):
        assert kullback_leibler_divergence([-1e308, 1e308], [-1e308, 1e308]) == 0.0


class TestNonFinitePropagates:
    """The functions do not mask: compare_tensors does, and says so."""

    @pytest.mark.parametrize("func", ALL_FUNCS, ids=lambda f: f.__name__)
    def test_nan_gives_nan(self, func):
        assert math.isnan(func([1.0, np.nan, 3.0], [1.0, 2.0, 3.0]))

    def test_inf_gives_nan_too(self):  # compare_tensors is the place that tells NaN from inf (and matching ones)
        assert math.isnan(max_absolute_error([np.inf, 1.0], [1.0, 1.0]))


class TestInputs:
    def test_float16_is_widened_exactly(self):
        x = np.float16([0.1, 1000.5])
        assert max_absolute_error(x, np.float32([0.0, 0.0])) == float(np.float16(1000.5))
        assert mean_absolute_error(x, x.astype(np.float64)) == 0.0

    def test_integers_and_bools(self):
        assert max_absolute_error(np.int32([1, 5]), np.int64([2, 2])) == 3.0
        assert mean_absolute_error(np.array([True, False]), np.array([True, True])) == 0.5

    @pytest.mark.parametrize("x, y, message", [
        ([[1.0, 2.0]], [1.0, 2.0], "Input NPU (x) should be 1-D, got shape (1, 2). "
                                   "(flatten the tensors first (compare_tensors does))"),
        ([1.0, 2.0], 3.0, "Input reference (y) should be 1-D, got shape (). "
                          "(flatten the tensors first (compare_tensors does))"),
        ([1.0, 2.0], [1.0], "Input arrays differ in length: x has 2 elements, y has 1. "
                            "(a metric compares element by element; compare_tensors reports this case)"),
        ([1j], [1.0], "Input NPU (x) should hold real numbers, not complex128."),
        (["a"], [1.0], "Input NPU (x) should hold real numbers, not <U1."),
    ])
    def test_validator_messages(self, x, y, message):
        with pytest.raises(MetricInputError) as info:
            max_absolute_error(x, y)
        assert str(info.value) == message
        assert isinstance(info.value, ValueError) and isinstance(info.value, PrecisionToolError)

    def test_inputs_are_not_modified(self):
        x, y = np.float64([1.0, 2.0, 3.0]), np.float64([1.5, 0.0, 2.0])
        before = x.copy(), y.copy()
        for func in ALL_FUNCS + [standard_deviation]:
            func(x, y)
        np.testing.assert_array_equal(x, before[0])
        np.testing.assert_array_equal(y, before[1])


class TestFormatMeanStd:
    def test_like_msaccucmp(self):
        assert format_mean_std(MeanStd(1.23456, 0.0004, -0.0004, 12345.6789)) == "(1.235;0.000),(0.000;12345.679)"

    def test_nan_and_inf(self):
        assert format_mean_std(MeanStd(math.nan, math.nan, math.inf, 1.0)) == "(nan;nan),(inf;1.000)"
