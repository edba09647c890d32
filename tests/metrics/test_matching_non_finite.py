"""NaN/inf at identical positions, of identical kinds, on both sides: classified, judged on the finite elements.

Issue 16: TensorFlow computes some NaN itself (the constant NaN label guard of
``SparseSoftmaxCrossEntropyWithLogits``), so the NPU tensor and its reference both hold NaN at the same
positions. That is no divergence: the metrics cover the finite elements, the tensor passes or fails on them
like any tensor, and it is classified ``matched_non_finite``. Non-finite values that differ -- position or kind
(NaN against inf, +inf against -inf), or on one side only -- stay ``NAN_INF`` failures.

Every expected metric is computed here by hand with numpy, in float64, over the finite subset.
"""
from __future__ import annotations

import json
import math
import os
import subprocess
from pathlib import Path

import numpy as np
import pytest

from precision_tool.metrics import ALL, NonFiniteClass, Status, compare_tensors, compute_metrics, format_mean_std

NAN, INF = np.nan, np.inf
NOTE_PREFIX = "matching non-finite: "


def _compare(npu, ref, **kwargs):
    """compare's rule: the cosine gate, the allclose ratio reported but not gated."""
    return compare_tensors(npu, ref, min_allclose_ratio=0.0, **kwargs)


def _by_hand(x, y):
    """The metrics of two finite float64 vectors, written out with numpy (no reference is zero here)."""
    diff = x - y
    rel = np.abs(diff) / np.abs(y)
    return {
        "CosineSimilarity": float(np.dot(x, y) / (np.linalg.norm(x) * np.linalg.norm(y))),
        "MaxAbsoluteError": float(np.max(np.abs(diff))),
        "AccumulatedRelativeError": float(np.sum(rel)),
        "RelativeEuclideanDistance": float(np.linalg.norm(diff) / np.linalg.norm(y)),
        "MeanAbsoluteError": float(np.mean(np.abs(diff))),
        "RootMeanSquareError": float(np.sqrt(np.mean(diff ** 2))),
        "MaxRelativeError": float(np.max(rel)),
        "MeanRelativeError": float(np.mean(rel)),
    }


def _assert_metrics_over(result, x_finite, y_finite):
    x, y = np.asarray(x_finite, np.float64), np.asarray(y_finite, np.float64)
    for name, expected in _by_hand(x, y).items():
        assert result.value(name) == pytest.approx(expected, rel=1e-12, abs=1e-15), name
    std = result.value("StandardDeviation")
    assert (std.mean_x, std.std_x, std.mean_y, std.std_y) == pytest.approx(
        (x.mean(), x.std(), y.mean(), y.std()), rel=1e-12)
    # every metric, KL divergence included, is the one of the finite elements alone
    alone = compute_metrics(x, y)
    for name in ALL:
        if name == "StandardDeviation":
            assert format_mean_std(result.value(name)) == format_mean_std(alone[name])
        else:
            assert result.value(name) == pytest.approx(alone[name], rel=1e-12, abs=1e-15), name


class TestMatching:
    def test_identical_nan_positions(self):
        npu = np.float32([[1.0, NAN, 3.0], [4.0, NAN, -2.0]])
        ref = np.float32([[1.1, NAN, 2.9], [4.0, NAN, -2.0]])
        result = _compare(npu, ref)
        finite = [0, 2, 3, 5]
        assert result.status is Status.PASS and result  # cosine 0.9994 over the finite elements
        assert result.matched_non_finite == 2 and result.compared_count == 4
        assert (result.non_finite.nan_class, result.non_finite.inf_class) == (NonFiniteClass.BOTH_SAME_POSITIONS,
                                                                              NonFiniteClass.NONE)
        assert result.notes == ("matching non-finite: 2 NaN/inf at identical positions on both sides (2 NaN); "
                                "metrics over the 4 finite elements",)
        _assert_metrics_over(result, npu.reshape(-1)[finite], ref.reshape(-1)[finite])
        # the allclose ratio covers the finite elements too: 1.1 and 2.9 are outside fp32's tolerance
        assert (result.allclose_ratio, result.mismatch_count) == (0.5, 2)
        assert result.worst.index == (0, 0) and result.worst.flat_index == 0

    def test_identical_plus_and_minus_inf(self):
        npu = np.float32([INF, 1.0, -INF, 2.0, 3.0])
        ref = np.float32([INF, 1.5, -INF, 2.0, 3.0])
        result = _compare(npu, ref)
        assert result.status is Status.PASS and result.matched_non_finite == 2
        assert result.non_finite.inf_class is NonFiniteClass.BOTH_SAME_POSITIONS
        assert result.notes[0] == ("matching non-finite: 2 NaN/inf at identical positions on both sides (1 +inf, "
                                   "1 -inf); metrics over the 3 finite elements")
        _assert_metrics_over(result, [1.0, 2.0, 3.0], [1.5, 2.0, 3.0])

    def test_nan_and_inf_together(self):
        npu = np.float32([NAN, INF, 1.0, 2.0])
        result = _compare(npu, npu.copy())
        assert result.status is Status.PASS and result.matched_non_finite == 2
        assert result.cosine == pytest.approx(1.0) and result.value("MaxAbsoluteError") == 0.0

    def test_the_finite_part_decides_a_failure(self):
        result = _compare(np.float32([NAN, 1.0, 0.0]), np.float32([NAN, 0.0, 1.0]))
        assert result.status is Status.FAIL and not result
        assert result.matched_non_finite == 1 and result.cosine == 0.0
        assert result.reason == "cosine 0.000000 < 0.99"

    def test_finite_part_all_zero_on_both_sides(self):
        result = _compare(np.float32([NAN, 0.0, 0.0]), np.float32([NAN, 0.0, 0.0]))
        assert result.status is Status.BOTH_ZERO and result and result.matched_non_finite == 1
        assert result.reason == "both tensors are all zero where finite (2 elements): identical; cosine is undefined"

    def test_all_nan_on_both_sides_passes_with_nothing_to_measure(self):
        nans = np.full((2, 2), NAN, np.float32)
        result = _compare(nans, nans.copy())
        assert result.status is Status.EMPTY and result
        assert result.matched_non_finite == 4 and result.compared_count == 0
        assert result.reason == ("matching non-finite: 4 NaN/inf at identical positions on both sides (4 NaN); "
                                 "no finite element: nothing to measure")
        assert result.notes == (result.reason,)
        assert {m.reason for m in result.metrics} == {"not computed: every element is NaN/inf, as in the reference"}
        assert result.cosine is None and result.worst is None
        assert (result.allclose_ratio, result.mismatch_count) == (None, None)

    def test_fp16_npu_against_fp32_reference_with_identical_nans(self):
        ref = np.linspace(-3.0, 3.0, 64, dtype=np.float32)
        ref[[5, 17, 40]] = NAN
        npu = ref.astype(np.float16)
        result = compare_tensors(npu, ref)  # the fp16 allclose gate on too: rounding stays within it
        finite = np.isfinite(ref)
        assert result.dtype == "float16" and result.status is Status.PASS and result
        assert result.matched_non_finite == 3 and result.compared_count == int(finite.sum())
        _assert_metrics_over(result, npu[finite].astype(np.float64), ref[finite].astype(np.float64))
        assert result.allclose_ratio == 1.0 and result.mismatch_count == 0

    def test_same_as_comparing_the_finite_elements_alone(self):
        rng = np.random.default_rng(16)
        ref = rng.standard_normal(1000).astype(np.float32)
        npu = (ref + rng.standard_normal(1000).astype(np.float32) * 0.2).astype(np.float32)
        where = rng.choice(1000, 50, replace=False)
        ref[where[:30]], npu[where[:30]] = NAN, NAN
        ref[where[30:]], npu[where[30:]] = -INF, -INF
        both, alone = _compare(npu, ref), _compare(npu[np.isfinite(ref)], ref[np.isfinite(ref)])
        assert both.matched_non_finite == len(where) and both.status is alone.status is Status.FAIL
        # the same sums, added in another order (a block holding NaN/inf is summed pair by pair): equal to rounding
        assert [m.value for m in both.metrics if m.name != "StandardDeviation"] == \
            pytest.approx([m.value for m in alone.metrics if m.name != "StandardDeviation"], rel=1e-12)
        assert (both.allclose_ratio, both.mismatch_count) == (alone.allclose_ratio, alone.mismatch_count)
        assert both.cosine == pytest.approx(alone.cosine, rel=1e-12)

    def test_a_shape_mismatch_still_fails(self):
        data = np.float32([NAN, 1, 2, 3, 4, 5])
        result = _compare(data.reshape(2, 3), data.reshape(3, 2))
        assert result.status is Status.SHAPE_MISMATCH and not result and result.matched_non_finite == 1


class TestDiffering:
    """Non-finite values that differ stay NAN_INF, exactly as before: the NPU overflowing is what we look for."""

    @pytest.mark.parametrize("npu, ref, reason", [
        ([NAN, 1.0, 2.0], [INF, 1.0, 2.0],
         "NPU has 1 NaN, reference none; reference has 1 +inf, NPU none; metrics over the 2 pairs finite on both "
         "sides"),
        ([NAN, 1.0, 2.0], [0.5, 1.0, 2.0],
         "NPU has 1 NaN, reference none; metrics over the 2 pairs finite on both sides"),
        ([INF, 1.0, 2.0], [-INF, 1.0, 2.0],
         "inf positions or signs differ (NPU 1 +inf, reference 1 -inf); metrics over the 2 pairs finite on both sides"),
        ([NAN, 1.0, NAN], [NAN, 1.0, 2.0],
         "NaN positions differ (NPU 2, reference 1); metrics over the 1 pair finite on both sides"),
        ([NAN, INF, 2.0], [NAN, 1.0, 2.0],
         "both have 1 NaN at the same positions; NPU has 1 +inf, reference none; metrics over the 1 pair finite on "
         "both sides"),
        ([1.0, 1.0, 2.0], [NAN, 1.0, 2.0], "reference has 1 NaN, NPU none; metrics over the 2 pairs finite on both "
                                            "sides"),
    ])
    def test_fails_as_nan_inf(self, npu, ref, reason):
        result = _compare(np.float32(npu), np.float32(ref))
        assert result.status is Status.NAN_INF and not result
        assert result.matched_non_finite == 0 and result.reason == reason
        assert not any(note.startswith(NOTE_PREFIX) for note in result.notes)

    def test_fp16_overflow_against_a_finite_reference(self):
        ref = np.float32([70000.0, 1.0, NAN])
        with np.errstate(over="ignore"):
            npu = ref.astype(np.float16)  # 70000 overflows fp16 to inf; the NaN matches
        result = _compare(npu, ref)
        assert result.status is Status.NAN_INF and result.matched_non_finite == 0
        assert result.reason.startswith("both have 1 NaN at the same positions; NPU has 1 +inf, reference none")


# ------------------------------------------------------------------------------------------------ the peer
HARNESS = Path(__file__).with_name("peer_harness.py")


@pytest.mark.peer
def test_finite_part_agrees_with_msaccucmp_on_the_finite_elements(peer, tmp_path):
    """msaccucmp has no rule for matching NaN: it computes over every element (float32), so its cosine of the
    pair is ``nan``. On the finite elements alone its ten metrics are ours for the whole pair."""
    rng = np.random.default_rng(7)
    ref = rng.standard_normal(256).astype(np.float32)
    ref[[3, 50, 200]] = NAN
    ref[[9]] = INF
    npu = (ref + rng.standard_normal(256).astype(np.float32) * 0.05).astype(np.float16)
    finite = np.isfinite(ref)
    np.savez(tmp_path / "cases.npz", m0=npu, g0=ref, m1=npu[finite], g1=ref[finite])
    python = Path(os.environ.get("PEER_VENV", "/tmp/peer-venv")) / "bin" / "python"
    subprocess.run([str(python), str(HARNESS), str(tmp_path / "cases.npz"), str(tmp_path / "out.json")], check=True,
                   capture_output=True, text=True, timeout=600)
    whole, subset = json.loads((tmp_path / "out.json").read_text())["cases"]
    assert whole["formatted"][0] == "nan"  # its cosine of the pair: no verdict at all
    ours = _compare(npu, ref)
    assert ours.status is Status.PASS and ours.matched_non_finite == 4
    for name, theirs in zip(ALL, subset["full"]):
        value = ours.value(name)
        if name == "StandardDeviation":
            assert format_mean_std(value) == subset["formatted"][ALL.index(name)]
            continue
        n = 1 if name != "AccumulatedRelativeError" else ours.compared_count  # a float32 sum of N parts
        assert math.isfinite(float(theirs)) and abs(value - float(theirs)) / n <= 1e-6 * max(1.0, abs(value)), name
