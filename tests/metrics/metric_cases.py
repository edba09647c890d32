"""Tensor pairs shared by the metric tests and the msaccucmp peer test (``(name, npu, reference)``).

``shared_cases()`` are pairs msaccucmp handles correctly: every metric must agree with it to 1e-6.
``peer_wrong_cases()`` are pairs where it does not; ``PEER_WRONG`` names, per case, the metrics whose
msaccucmp value is wrong (or a non-answer) and the verdict we give instead.
"""
from __future__ import annotations

import numpy as np


def _rng(seed):
    return np.random.default_rng(seed)


def shared_cases():
    cases = []
    add = lambda name, npu, ref: cases.append((name, npu, ref))  # noqa: E731
    for size in (2, 7, 100, 4096, 262144):
        rng = _rng(size)
        ref = rng.standard_normal(size).astype(np.float32)
        npu = (ref + rng.standard_normal(size).astype(np.float32) * 1e-2).astype(np.float32)
        add(f"fp32_random_{size}", npu, ref)
    for size in (1000, 65536):
        rng = _rng(size + 1)
        ref = (rng.standard_normal(size) * 3).astype(np.float32)
        add(f"fp16_npu_vs_fp32_ref_{size}", ref.astype(np.float16), ref)
    rng = _rng(11)
    ref = rng.uniform(-1, 1, (16, 32)).astype(np.float32)
    add("small_perturbation", (ref * (1 + 1e-4 * rng.standard_normal(ref.shape))).astype(np.float32), ref)
    ref = rng.standard_normal((8, 125)).astype(np.float32)
    flips = np.where(rng.random(ref.shape) < 0.1, -1, 1).astype(np.float32)
    add("ten_percent_sign_flips", ref * flips, ref)
    add("negated", -ref, ref)
    add("constant_2_vs_7", np.full(5, 2.0, np.float32), np.full(5, 7.0, np.float32))
    add("constant_equal", np.full((3, 4), 3.0, np.float32), np.full((3, 4), 3.0, np.float32))
    ref = rng.standard_normal(500).astype(np.float32)
    ref[rng.random(500) < 0.2] = 0.0
    add("zeros_in_reference", (ref + rng.standard_normal(500).astype(np.float32) * 1e-3).astype(np.float32), ref)
    ref = (rng.standard_normal(300) * 1e-6).astype(np.float32)
    add("tiny_values_1e-6", (ref * (1 + 1e-3 * rng.standard_normal(300))).astype(np.float32), ref)
    ref = rng.uniform(30000, 65504, 256).astype(np.float32)
    add("near_fp16_max", ref.astype(np.float16), ref)
    ref = (rng.lognormal(0, 4, 1000) * np.where(rng.random(1000) < 0.5, -1, 1)).astype(np.float32)
    add("mixed_magnitudes", (ref * (1 + 1e-3 * rng.standard_normal(1000))).astype(np.float32), ref)
    ref = np.maximum(rng.standard_normal(2048), 0).astype(np.float32)
    add("relu_half_zeros", np.maximum(ref + rng.standard_normal(2048).astype(np.float32) * 1e-3, 0)
        .astype(np.float16), ref)
    ref = rng.standard_normal((2, 3, 4, 5)).astype(np.float32)
    add("four_dims", (ref + 0.05).astype(np.float32), ref)
    ref64 = rng.standard_normal(777)
    add("fp64_reference", (ref64 + 1e-4).astype(np.float32), ref64)
    add("int32_equal", np.arange(-50, 50, dtype=np.int32), np.arange(-50, 50, dtype=np.int32))
    add("int32_off_by_one", np.arange(-50, 50, dtype=np.int32) + 1, np.arange(-50, 50, dtype=np.int32))
    return cases


def peer_wrong_cases():
    rng = _rng(99)
    tiny = (rng.standard_normal(64) * 1e-17).astype(np.float32)
    nan_npu = np.array([1.0, np.nan, 3.0, 4.0], np.float32)
    inf_npu = np.array([1.0, np.inf, 3.0, 4.0], np.float32)
    both = np.array([np.nan, 2.0, np.inf, 4.0], np.float32)
    ref4 = np.array([1.0, 2.0, 3.0, 4.0], np.float32)
    base = rng.standard_normal((2, 3)).astype(np.float32)
    return [
        ("dims_all_one_opposite", np.array([[3.0]], np.float32), np.array([[-5.0]], np.float32)),
        ("dims_all_one_same_sign", np.array([[[2.0]]], np.float32), np.array([[[2.5]]], np.float32)),
        ("scalar_shape", np.array(1.0, np.float32), np.array(-1.0, np.float32)),
        ("both_zero", np.zeros(16, np.float32), np.zeros(16, np.float32)),
        ("npu_zero", np.zeros(4, np.float32), np.arange(1, 5, dtype=np.float32)),
        ("reference_zero", np.arange(1, 5, dtype=np.float32) * 1000, np.zeros(4, np.float32)),
        ("tiny_orthogonal", np.array([1e-17, 0.0], np.float32), np.array([0.0, 1e-17], np.float32)),
        ("tiny_scaled", tiny * 2, tiny),
        ("huge_identical", np.array([1e20, -2e20, 3e20], np.float32), np.array([1e20, -2e20, 3e20], np.float32)),
        ("nan_in_npu", nan_npu, ref4),
        ("inf_in_npu", inf_npu, ref4),
        ("nan_hides_inf", both, ref4),
        ("empty", np.zeros(0, np.float32), np.zeros(0, np.float32)),
        ("empty_2d", np.zeros((0, 2), np.float32), np.zeros((0, 2), np.float32)),
        ("transposed_shape", base.T.copy(), base),
    ]


_RELATIVE = ("AccumulatedRelativeError", "MaxRelativeError", "MeanRelativeError")

#: case -> (metrics msaccucmp gets wrong or cannot give, our status). "all" = every metric.
PEER_WRONG = {
    "dims_all_one_opposite": ({"CosineSimilarity"}, "FAIL"),
    "dims_all_one_same_sign": (set(), "FAIL"),  # its cosine 1.0 is right by luck; its verdict is not
    "scalar_shape": ({"CosineSimilarity"}, "FAIL"),
    # relative errors of two zero tensors: 0 for both (metrics.rounding.relative_error: no error over zero is 0)
    "both_zero": ({"CosineSimilarity"}, "BOTH_ZERO"),
    "npu_zero": (set(), "ONE_SIDE_ZERO"),  # its numbers are right; its NaN cosine is no verdict
    "reference_zero": ({"AccumulatedRelativeError", "RelativeEuclideanDistance",
                        "MaxRelativeError", "MeanRelativeError"}, "ONE_SIDE_ZERO"),
    "tiny_orthogonal": ({"CosineSimilarity", "RelativeEuclideanDistance", *_RELATIVE}, "FAIL"),
    "tiny_scaled": ({"RelativeEuclideanDistance", *_RELATIVE}, "PASS"),
    "huge_identical": ({"CosineSimilarity"}, "PASS"),
    "nan_in_npu": ({"all"}, "NAN_INF"),
    "inf_in_npu": ({"all"}, "NAN_INF"),
    "nan_hides_inf": ({"all"}, "NAN_INF"),
    # the other seven: msaccucmp fails inside numpy and writes NaN, as we write None
    "empty": ({"CosineSimilarity", "AccumulatedRelativeError", "RelativeEuclideanDistance"}, "EMPTY"),
    "empty_2d": ({"CosineSimilarity", "AccumulatedRelativeError", "RelativeEuclideanDistance"}, "EMPTY"),
    "transposed_shape": (set(), "SHAPE_MISMATCH"),
}
