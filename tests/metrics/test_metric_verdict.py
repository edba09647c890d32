"""compare_tensors: the edge-case order, exact reason texts, tolerances, and our verdict wherever msaccucmp is wrong.

The msaccucmp side of each "where the peer is wrong" case is asserted in test_peer_metrics.py (needs the peer);
here is our verdict on the same arrays (metric_cases.peer_wrong_cases), always run.
"""
from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from metric_cases import PEER_WRONG, peer_wrong_cases, shared_cases
from precision_tool.errors import MetricInputError, UnknownMetricError
from precision_tool.metrics import ALL, NonFiniteClass, Status, Tolerance, compare_tensors

F32 = np.float32
FP32_GATES = "outside rtol 0.0001, atol 1e-05 (up to 0.01% allowed)"


def _cmp(npu, ref, **kwargs):
    return compare_tensors(np.asarray(npu, F32), np.asarray(ref, F32), **kwargs)


class TestStatuses:
    def test_pass(self):
        result = _cmp([1.0, 2.0, 3.0], [1.0, 2.0, 3.0])
        assert result.status is Status.PASS and result and result.passed
        assert result.reason == f"cosine 1.000000 >= 0.99; 0 of 3 elements (0%) {FP32_GATES}"
        assert result.notes == ()
        assert (result.allclose_ratio, result.mismatch_count, result.compared_count) == (1.0, 0, 3)

    def test_fail_on_cosine_names_only_the_failing_gate(self):
        result = _cmp([1.0, 0.0], [0.0, 1.0], atol=10.0)
        assert result.status is Status.FAIL and not result
        assert result.reason == "cosine 0.000000 < 0.99"

    def test_fail_on_allclose(self):
        result = _cmp(np.linspace(1, 2, 1000), np.linspace(1, 2, 1000) * 1.001)
        assert result.status is Status.FAIL
        assert result.reason == f"1000 of 1000 elements (100%) {FP32_GATES}"
        assert result.cosine > 0.999

    def test_fail_on_both(self):
        result = _cmp([1.0, 2.0], [-1.0, -2.0])
        assert result.reason == f"cosine -1.000000 < 0.99; 2 of 2 elements (100%) {FP32_GATES}"

    def test_count_mismatch_computes_nothing(self):
        result = _cmp(np.zeros((2, 3)), np.zeros(3))
        assert result.status is Status.COUNT_MISMATCH and not result
        assert result.reason == "element counts differ: NPU 6 (shape (2, 3)) vs reference 3 (shape (3,)); not compared"
        assert all(m.value is None and m.reason == "not computed: element counts differ" for m in result.metrics)
        assert result.allclose_ratio is None and result.worst is None and result.compared_count == 0

    def test_shape_mismatch_computes_but_fails(self):
        data = np.arange(1, 7, dtype=F32)
        result = _cmp(data.reshape(2, 3), data.reshape(3, 2))
        assert result.status is Status.SHAPE_MISMATCH and not result
        assert result.reason == ("shapes differ: NPU (2, 3) vs reference (3, 2) (6 elements each); metrics compare "
                                 "the flattened data and may pair unrelated elements")
        assert result.value("MaxAbsoluteError") == 0.0

    def test_shape_mismatch_keeps_the_other_finding_as_a_note(self):
        result = _cmp([[1.0, np.nan, 3.0], [1.0, 2.0, 3.0]], np.ones((3, 2)))
        assert result.status is Status.SHAPE_MISMATCH
        assert result.notes == ("also NAN_INF: NPU has 1 NaN, reference none; metrics over the 5 pairs finite on "
                                "both sides",)
        assert _cmp(np.zeros((2, 3)), np.zeros((3, 2))).notes[0].startswith("also BOTH_ZERO: ")

    def test_shapes_differing_only_in_size_one_dims_are_the_same_data(self):
        data = np.arange(1, 7, dtype=F32)
        result = _cmp(data.reshape(1, 6), data.reshape(6, 1, 1))
        assert result.status is Status.PASS
        assert result.notes == ("shapes differ only in size-1 dims (NPU (1, 6), reference (6, 1, 1)): same element "
                                "order",)

    def test_empty(self):
        result = _cmp(np.zeros((0, 3)), np.zeros((0, 3)))
        assert result.status is Status.EMPTY and result
        assert result.reason == "both tensors are empty (shape (0, 3)): nothing to compare"
        assert {m.reason for m in result.metrics} == {"not computed: the tensors are empty"}

    def test_empty_with_different_shapes_is_a_shape_mismatch(self):
        assert _cmp(np.zeros((0, 3)), np.zeros((3, 0))).status is Status.SHAPE_MISMATCH

    def test_both_zero(self):
        result = _cmp(np.zeros(5), np.zeros(5))
        assert result.status is Status.BOTH_ZERO and result
        assert result.reason == "both tensors are all zero (5 elements): identical; cosine is undefined"
        assert result.metric("cosine").reason == "undefined: both tensors are all zero"
        # the one rule for a zero reference (metrics.rounding.relative_error): no error, relative error 0
        assert result.value("MaxRelativeError") == 0.0 and result.value("RelativeEuclideanDistance") == 0.0
        assert result.value("MaxAbsoluteError") == 0.0
        assert result.metric("cosine").formatted == "NaN"

    def test_npu_zero(self):
        result = _cmp(np.zeros(4), [0.0, 1.0, -2.0, 3.0])
        assert result.status is Status.ONE_SIDE_ZERO and not result
        assert result.reason == "the NPU tensor is all zero but the reference is not (3 non-zero, max |reference| 3)"
        assert result.metric("cosine").reason == "undefined: the NPU tensor is all zero"
        assert result.value("MaxRelativeError") == 1.0

    def test_reference_zero(self):
        result = _cmp([0.5, 0.0], np.zeros(2))
        assert result.reason == "the reference is all zero but the NPU tensor is not (1 non-zero, max |NPU| 0.5)"
        assert result.metric("cosine").reason == "undefined: the reference is all zero"
        assert result.metric("RelativeEuclideanDistance").value == math.inf  # any error over a zero reference

    def test_one_side_zero_within_atol_says_so(self):
        result = compare_tensors(np.zeros(3, np.float16), F32([1e-5, 0.0, -2e-5]))
        assert result.reason == ("the NPU tensor is all zero but the reference is not (2 non-zero, max |reference| "
                                 "2e-05); all within atol 0.001")
        assert not result


class TestNonFinite:
    @pytest.mark.parametrize("npu, ref, nan_class, inf_class, reason", [
        ([1, np.nan, 3, 4], [1, 2, 3, 4], "npu_only", "none",
         "NPU has 1 NaN, reference none; metrics over the 3 pairs finite on both sides"),
        ([1, 2, 3, 4], [np.nan, 2, 3, np.nan], "reference_only", "none",
         "reference has 2 NaN, NPU none; metrics over the 2 pairs finite on both sides"),
        ([np.nan, 2, 3], [1, np.nan, 3], "both_different_positions", "none",
         "NaN positions differ (NPU 1, reference 1); metrics over the 1 pair finite on both sides"),
        ([1, np.inf, -np.inf], [1, 2, 3], "none", "npu_only",
         "NPU has 1 +inf and 1 -inf, reference none; metrics over the 1 pair finite on both sides"),
        ([1, np.inf, 3], [1, -np.inf, 3], "none", "both_different_positions",
         "inf positions or signs differ (NPU 1 +inf, reference 1 -inf); metrics over the 2 pairs finite on both sides"),
        ([np.nan, np.inf, 3, 4], [1, 2, 3, 4], "npu_only", "npu_only",
         "NPU has 1 NaN, reference none; NPU has 1 +inf, reference none; "
         "metrics over the 2 pairs finite on both sides"),
        ([np.nan, 2, np.inf], [np.nan, 2, 3], "both_same_positions", "npu_only",
         "both have 1 NaN at the same positions; NPU has 1 +inf, reference none; "
         "metrics over the 1 pair finite on both sides"),
        ([np.nan, 2, 3], [np.inf, 2, 3], "npu_only", "reference_only",
         "NPU has 1 NaN, reference none; reference has 1 +inf, NPU none; "
         "metrics over the 2 pairs finite on both sides"),
    ])
    def test_differing_non_finite_is_classified_and_never_a_pass(self, npu, ref, nan_class, inf_class, reason):
        """Matching NaN/inf (same positions, same kinds) are test_matching_non_finite.py's."""
        result = _cmp(npu, ref)
        assert result.status is Status.NAN_INF and not result
        assert (result.non_finite.nan_class.value, result.non_finite.inf_class.value) == (nan_class, inf_class)
        assert result.reason == reason

    def test_counts_per_side(self):
        result = _cmp([np.nan, np.inf, -np.inf, -np.inf, 1.0], [np.nan, np.nan, 1.0, np.inf, 1.0])
        summary = result.non_finite
        assert (summary.npu_nan, summary.npu_posinf, summary.npu_neginf, summary.npu_inf) == (1, 1, 2, 3)
        assert (summary.ref_nan, summary.ref_posinf, summary.ref_neginf, summary.ref_inf) == (2, 1, 0, 1)
        assert summary.nan_class is NonFiniteClass.BOTH_DIFFERENT_POSITIONS

    def test_metrics_are_over_the_finite_pairs(self):
        result = _cmp([1.0, np.nan, 3.0, 4.0], [1.0, 2.0, 3.0, 4.5])
        assert result.compared_count == 3
        assert result.value("MaxAbsoluteError") == 0.5
        assert result.worst.flat_index == 3 and result.worst.index == (3,)

    def test_no_finite_pair_leaves_metrics_unset_with_a_reason(self):
        result = _cmp([np.nan, np.inf], [1.0, 2.0])
        assert {m.reason for m in result.metrics} == {"not computed: no pair is finite on both sides"}
        assert result.worst is None and result.cosine is None

    def test_allclose_counts_matching_non_finite_as_close(self):
        result = _cmp([np.nan, np.inf, 1.0, 2.0], [np.nan, np.inf, 1.0, np.nan])
        assert (result.allclose_ratio, result.mismatch_count) == (0.75, 1)


class TestTolerances:
    def test_default_dtype_is_the_less_precise_side(self):
        result = compare_tensors(np.float16([1.0, 2.0]), F32([1.0, 2.0]))
        assert result.dtype == "float16" and result.tolerance == Tolerance(1e-3, 1e-3, 0.999)

    @pytest.mark.parametrize("dtype, expected", [
        ("bf16", Tolerance(1e-2, 1e-2, 0.99)), ("DT_BF16", Tolerance(1e-2, 1e-2, 0.99)),
        ("DT_FLOAT", Tolerance(1e-4, 1e-5, 0.9999)), ("half", Tolerance(1e-3, 1e-3, 0.999)),
        (np.float64, Tolerance(1e-7, 1e-9, 0.9999)), ("DT_INT32", Tolerance(0.0, 0.0, 1.0)),
        ("bool", Tolerance(0.0, 0.0, 1.0)),
    ])
    def test_named_dtype(self, dtype, expected):
        assert _cmp([1.0], [1.0], dtype=dtype).tolerance == expected

    def test_integers_are_exact(self):
        result = compare_tensors(np.arange(10), np.arange(10) + np.eye(10, dtype=int)[0])
        assert result.dtype == "integer" and result.status is Status.FAIL and result.mismatch_count == 1

    def test_overrides(self):
        result = _cmp([1.0, 2.0, 3.0], [1.0, 2.0, 3.5], rtol=0.5, atol=0.0, min_allclose_ratio=0.9)
        assert result.tolerance == Tolerance(0.5, 0.0, 0.9) and result.status is Status.PASS

    def test_min_ratio_boundary_is_inclusive(self):
        ref = np.ones(1000, F32)
        npu = ref.copy()
        npu[0] = 2.0
        assert compare_tensors(npu, ref, dtype="float16").status is Status.PASS  # 1 of 1000 = 0.1% allowed
        npu[1] = 2.0
        assert compare_tensors(npu, ref, dtype="float16").status is Status.FAIL

    def test_cosine_gate_can_be_turned_off(self):
        result = _cmp([1.0, 0.0], [0.0, 1.0], atol=10.0, cosine_threshold=None)
        assert result.status is Status.PASS and result.cosine == 0.0
        assert result.reason == "0 of 2 elements (0%) outside rtol 0.0001, atol 10 (up to 0.01% allowed)"

    @pytest.mark.parametrize("kwargs", [{"rtol": -1.0}, {"min_allclose_ratio": 1.5}])
    def test_bad_tolerances(self, kwargs):
        with pytest.raises(MetricInputError, match="Bad tolerance"):
            _cmp([1.0], [1.0], **kwargs)

    def test_unknown_dtype_name(self):
        with pytest.raises(MetricInputError) as info:
            _cmp([1.0], [1.0], dtype="float7")
        assert str(info.value) == ("Unknown dtype 'float7' for comparison tolerances. (use float16, bfloat16, "
                                   "float32, float64, an integer type or bool)")

    def test_complex_is_refused(self):
        with pytest.raises(MetricInputError, match="Cannot compare a NPU tensor of dtype complex64"):
            compare_tensors(np.ones(2, np.complex64), np.ones(2, F32))


class TestResultObject:
    def test_frozen(self):
        result = _cmp([1.0], [1.0])
        with pytest.raises(dataclasses.FrozenInstanceError):
            result.status = Status.FAIL

    def test_metric_subset_in_the_order_asked(self):
        result = _cmp([1.0, 2.0], [1.0, 4.0], metrics=["rmse", "MaxAE", "rmse"])
        assert [m.name for m in result.metrics] == ["RootMeanSquareError", "MaxAbsoluteError"]
        assert result.cosine == pytest.approx(0.9762, abs=1e-4)  # the gate still reads it
        with pytest.raises(KeyError, match="CosineSimilarity was not among the metrics computed"):
            result.metric("cosine")

    def test_unknown_metric(self):
        with pytest.raises(UnknownMetricError):
            _cmp([1.0], [1.0], metrics=["cosinus"])

    def test_all_ten_by_default_in_csv_order(self):
        assert tuple(m.name for m in _cmp([1.0], [1.0]).metrics) == ALL

    def test_formatted_cells(self):
        result = _cmp([1.0, 3.0], [2.0, 2.0])
        assert result.metric("MaxAbsoluteError").formatted == "1.000000"
        assert result.metric("StandardDeviation").formatted == "(2.000;1.000),(2.000;0.000)"

    def test_worst_element(self):
        ref = np.arange(24, dtype=F32).reshape(2, 3, 4)
        npu = ref.copy()
        npu[1, 2, 0] += 0.5
        npu[0, 0, 0] = 0.25  # reference 0 there
        worst = _cmp(npu, ref).worst
        assert (worst.flat_index, worst.index, worst.npu, worst.reference) == (20, (1, 2, 0), 20.5, 20.0)
        assert (worst.abs_error, worst.rel_error) == (0.5, 0.025)
        assert _cmp([0.5], [0.0]).worst.rel_error == math.inf  # any error over a zero reference

    def test_worst_element_index_is_numpys_unravel_index(self):
        rng = np.random.default_rng(5)
        for _ in range(200):
            shape = tuple(int(d) for d in rng.integers(1, 6, size=rng.integers(0, 5)))
            ref = np.zeros(shape, F32)
            flat = int(rng.integers(0, ref.size))
            npu = ref.copy().reshape(-1)
            npu[flat] = 1.0
            worst = _cmp(npu.reshape(shape), ref).worst
            assert worst.flat_index == flat
            assert worst.index == tuple(int(i) for i in np.unravel_index(flat, shape))

    def test_zero_reference_note(self):
        result = _cmp([1.0, 2.0, 0.1], [1.0, 2.0, 0.0])
        assert result.zero_reference_count == 1
        assert result.notes == ("1 of 3 reference elements are zero (|y| <= 2.2e-16): left out of relative errors",)

    def test_inputs_are_not_modified(self):
        npu, ref = F32([[1.0, np.nan]]), F32([[1.5, 2.0]])
        compare_tensors(npu, ref)
        np.testing.assert_array_equal(npu, F32([[1.0, np.nan]]))
        np.testing.assert_array_equal(ref, F32([[1.5, 2.0]]))


class TestWhereMsaccucmpIsWrong:
    """Our verdict on each case of metric_cases.PEER_WRONG (msaccucmp's answers: test_peer_metrics.py)."""

    CASES = {name: (npu, ref) for name, npu, ref in peer_wrong_cases()}

    @pytest.mark.parametrize("case", sorted(PEER_WRONG))
    def test_status(self, case):
        npu, ref = self.CASES[case]
        assert compare_tensors(npu, ref).status.value == PEER_WRONG[case][1]

    def test_dims_all_one_get_a_real_comparison(self):
        opposite = compare_tensors(*self.CASES["dims_all_one_opposite"])
        assert opposite.value("cosine") == -1.0
        same_sign = compare_tensors(*self.CASES["dims_all_one_same_sign"])  # 2 against 2.5
        assert same_sign.value("cosine") == 1.0 and not same_sign
        assert same_sign.reason == f"1 of 1 elements (100%) {FP32_GATES}"
        assert same_sign.notes == ("one element: cosine only compares signs; the allclose gate decides",)
        assert same_sign.value("MaxRelativeError") == pytest.approx(0.2)

    def test_tiny_tensors_get_their_true_cosine_and_distance(self):
        orthogonal = compare_tensors(*self.CASES["tiny_orthogonal"])
        assert orthogonal.value("cosine") == 0.0
        assert orthogonal.value("RelativeEuclideanDistance") == pytest.approx(math.sqrt(2))
        scaled = compare_tensors(*self.CASES["tiny_scaled"])  # x = 2y, y ~ 1e-17
        assert scaled.value("RelativeEuclideanDistance") == pytest.approx(1.0, rel=1e-12)
        # msaccucmp's relative columns leave |y| <= 2.2e-16 out: none left, and x differs from y
        assert scaled.value("MaxRelativeError") == math.inf

    def test_huge_identical_tensors_are_identical(self):
        result = compare_tensors(*self.CASES["huge_identical"])
        assert result.value("cosine") == 1.0 and result

    def test_an_error_over_a_zero_reference_is_infinitely_relative(self):
        result = compare_tensors(*self.CASES["reference_zero"])
        for name in ("AccumulatedRelativeError", "RelativeEuclideanDistance", "MaxRelativeError",
                     "MeanRelativeError"):
            assert result.value(name) == math.inf  # any error over a zero reference (the one rule)

    def test_nan_in_npu_still_measures_the_rest(self):
        result = compare_tensors(*self.CASES["nan_in_npu"])
        assert result.value("MaxAbsoluteError") == 0.0 and result.non_finite.npu_nan == 1 and not result

    def test_empty_gets_no_cosine(self):
        for case in ("empty", "empty_2d"):
            assert compare_tensors(*self.CASES[case]).value("cosine") is None


def test_shared_cases_get_every_metric():
    """Every case msaccucmp handles gets all ten metrics from us too, and a finite verdict."""
    for case, npu, ref in shared_cases():
        result = compare_tensors(npu, ref)
        assert all(m.value is not None for m in result.metrics), case
        assert result.status in (Status.PASS, Status.FAIL), (case, result.reason)
