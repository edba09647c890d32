"""Local error figures against values worked out by hand (float16 facts from IEEE 754 binary16)."""
import math

import numpy as np
import pytest

from precision_tool.replay.local_error import FLOOR_FACTOR, MIN_FLOOR, measure_output, red, round_to

pytestmark = pytest.mark.compat


def test_red_is_the_norm_of_the_difference_over_the_norm_of_the_reference():
    assert red(np.array([6.0, 8.0]), np.array([3.0, 4.0])) == 1.0  # |(3,4)| / |(3,4)|
    assert red(np.zeros(3), np.zeros(3)) == 0.0
    assert red(np.array([1.0, 0.0]), np.zeros(2)) == math.inf
    # huge values do not overflow the squares: 1e300 * (1, 1) vs 1e300 * (1, 2)
    assert red(np.array([1e300, 1e300]), np.array([1e300, 2e300])) == pytest.approx(1 / math.sqrt(5))
    # nor do tiny ones underflow: |(0, 1e-200)| / |(1e-200, 1e-200)| = 1 / sqrt(2)
    assert red(np.array([1e-200, 2e-200]), np.array([1e-200, 1e-200])) == pytest.approx(1 / math.sqrt(2))
    # non-finite elements are left out: only the first pair counts
    assert red(np.array([2.0, np.inf]), np.array([1.0, np.inf])) == 1.0


def test_the_floor_is_four_times_storing_the_exact_answer_in_float16():
    replay = np.array([1.0 / 3.0])
    # binary16 has 10 fraction bits: 1/3 rounds to 1365/4096 = 0.333251953125, a relative error of 2^-12 / (1/3)
    assert round_to(replay, "float16")[0] == 1365 / 4096
    rounding = abs(1365 / 4096 - 1 / 3) / (1 / 3)
    npu = np.array([1365 / 4096], dtype=np.float16)
    measured = measure_output("op:output:0", npu, replay, "float16")
    assert measured.rounding == pytest.approx(rounding, rel=1e-12)
    assert measured.floor == pytest.approx(FLOOR_FACTOR * rounding, rel=1e-12)
    assert measured.local == pytest.approx(rounding, rel=1e-12) and measured.ratio == pytest.approx(0.25)


def test_representable_results_get_the_dtype_minimum_floor():
    replay = np.array([0.5, 0.25, 2.0])  # exact in float16 and bfloat16: nothing to round
    for dtype in ("float16", "bfloat16", "float32"):
        measured = measure_output("op:output:0", replay.astype(np.float32), replay, dtype)
        assert (measured.local, measured.rounding, measured.floor) == (0.0, 0.0, MIN_FLOOR[dtype])
    assert MIN_FLOOR["float16"] == 2.0 ** -15 and MIN_FLOOR["bfloat16"] == 2.0 ** -12


def test_bfloat16_rounds_to_eight_bits_of_precision():
    # 1 + 2^-8 lies halfway between 1 and 1 + 2^-7 (bfloat16 keeps 7 fraction bits): ties go to even, to 1
    assert round_to(np.array([1.0 + 2.0 ** -8, 1.0 + 3 * 2.0 ** -8]), "bfloat16").tolist() == [1.0, 1.0 + 2.0 ** -6]


def test_inherited_error_is_the_replay_against_the_reference():
    replay, reference = np.array([1.0, 2.0]), np.array([1.0, 1.0])
    measured = measure_output("op:output:0", replay, replay, "float32", reference)
    assert measured.local == 0.0 and measured.inherited == pytest.approx(1 / math.sqrt(2))


def test_an_inf_the_replay_does_not_have_was_made_inside_the_op():
    measured = measure_output("op:output:0", np.array([np.inf, 1.0], np.float16), np.array([70000.0, 1.0]),
                              "float16")
    assert measured.local == math.inf and measured.ratio == math.inf
    # 70000 > 65504, float16's largest finite value: the output dtype cannot hold the exact answer
    assert measured.note == ("1 inf/NaN where the replay is finite: produced inside the op (1 because the exact "
                             "result is beyond float16's range)")
    inside = measure_output("op:output:0", np.array([np.inf, 1.0], np.float16), np.array([60000.0, 1.0]), "float16")
    assert inside.note == "1 inf/NaN where the replay is finite: produced inside the op"  # 60000 fits float16


def test_shapes_must_hold_the_same_elements():
    assert measure_output("t", np.ones((1, 4)), np.ones(4), "float32").local == 0.0
    with pytest.raises(ValueError, match="the NPU output has 3 elements, the replay 4"):
        measure_output("t", np.ones(3), np.ones(4), "float32")


def test_integer_outputs_count_differing_elements():
    measured = measure_output("argmax:output:0", np.array([1, 2, 3, 4]), np.array([1, 2, 0, 4]), "int32")
    assert (measured.local, measured.floor) == (0.25, 0.0)


def test_the_total_error_is_the_npu_against_the_reference():
    measured = measure_output("t", np.array([2.0, 0.0]), np.array([1.0, 0.0]), "float32", np.array([1.0, 0.0]))
    assert (measured.local, measured.inherited, measured.total) == (1.0, 0.0, 1.0)


def test_float32_subnormals_flushed_to_zero_are_rounding_not_a_kernel_error():
    # a value shrinking geometrically: 2^-120 .. 2^-140; TensorFlow's CPU kernels (and so the emulated NPU) write
    # the ones below 2^-126 (float32's smallest normal) as 0
    replay = 2.0 ** -np.arange(120, 141, dtype=np.float64)
    npu = np.where(replay < 2.0 ** -126, 0.0, replay).astype(np.float32)
    error = measure_output("t", npu, replay, "float32")
    assert error.local > MIN_FLOOR["float32"]  # a 1.6% difference, all of it below 2^-126 ...
    assert error.local <= error.floor  # ... which is what storing the answer in float32 may do
    # float16 outputs keep their subnormals: no such allowance
    half = measure_output("h", np.zeros(3, np.float16), np.array([1e-6, 2e-6, 3e-6]), "float16")
    assert half.local > half.floor
