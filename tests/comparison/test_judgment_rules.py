"""The judgment's other rules from hand-derived values: float16 underflow, the same-model check, the culprit rule and
the one exit rule (comparison.judgment, .underflow, .same_model)."""
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from judgment_builders import array_row, facts, stats_row
from precision_tool.comparison.judgment import CulpritChoice, decide_culprit, exit_code
from precision_tool.comparison.result import ComparisonResult
from precision_tool.comparison.same_model import CONSTANT, DATA, graph_sources, source_mismatches
from precision_tool.comparison.underflow import THRESHOLD_SHARE, underflows
from precision_tool.status import Status

pytestmark = pytest.mark.compat
TINY = 2.0 ** -14  # float16's smallest normal


# --------------------------------------------------------------------------------------------- underflow
def test_activations_below_float16s_normal_range_underflow():
    reference = np.random.default_rng(3).normal(scale=3e-8, size=4096).astype(np.float32)
    row = array_row(0, "dw", "output", 0, "DepthwiseConv2D", reference.astype(np.float16), reference)
    # float16 stores 3e-8 with a spacing of 2^-24 = 6e-8: most values flush to 0 or to +-6e-8
    assert row.status is Status.FAIL and underflows(row)


def test_a_float16_rounding_error_of_normal_values_is_no_underflow():
    reference = np.linspace(-1, 1, 4096, dtype=np.float32) * 1e-3  # rms 5.8e-4, above 2^-14 / sqrt(2)
    noisy = reference + np.random.default_rng(4).normal(scale=3e-4, size=4096).astype(np.float32)  # cosine 0.89
    row = array_row(0, "c", "output", 0, "Conv2D", noisy.astype(np.float16), reference)
    assert row.status is Status.FAIL and not underflows(row)


def test_a_float32_npu_tensor_does_not_underflow_at_float16s_range():
    reference = np.full(16, 1e-9, np.float32)
    row = array_row(0, "c", "output", 0, "Cast", np.zeros(16, np.float32), reference)
    assert row.status is Status.ONE_SIDE_ZERO and not underflows(row)


@settings(max_examples=200, derandomize=True, deadline=None)
@given(st.lists(st.floats(0, 1e-3, allow_subnormal=False), min_size=1, max_size=64))
def test_an_rms_at_most_the_threshold_puts_half_the_values_below_the_smallest_normal(values):
    """Markov: P(|y| >= t) <= rms^2 / t^2, so rms <= t / sqrt(2) leaves at most half at or above t."""
    values = np.asarray(values)
    if math.sqrt(np.mean(values ** 2)) <= THRESHOLD_SHARE * TINY:
        assert np.mean(values >= TINY) <= 0.5


# --------------------------------------------------------------------------------------------- same model
def test_sources_follow_ops_that_only_move_a_value_not_a_narrowing_cast():
    ops = [("w", "Const", []), ("x", "Data", []), ("trans_w", "TransData", ["w"]), ("flat", "Reshape", ["trans_w"]),
           ("cast_x", "Cast", ["x"]), ("conv", "Conv2D", ["cast_x", "flat"]), ("mix", "Identity", ["conv"])]
    # a Cast to float16 may overflow or flush the batch: the NPU's range, judged where it happens
    assert graph_sources(reversed(ops)) == {"w": CONSTANT, "x": DATA, "trans_w": CONSTANT, "flat": CONSTANT}


def _inputs(weight_npu, weight_ref, image_npu, image_ref):
    return [array_row(0, "conv", "input", 0, "Conv2D", image_npu, image_ref),
            array_row(0, "conv", "input", 1, "Conv2D", weight_npu, weight_ref)]


def test_weights_stored_in_float16_are_the_same_model_and_other_weights_are_not():
    rng = np.random.default_rng(0)
    weights, image = rng.normal(size=(3, 3, 4, 8)).astype(np.float32), rng.uniform(size=(2, 8, 8, 4))
    edges, sources = {"conv": [("x", 0), ("w", 0)]}, {"x": DATA, "w": CONSTANT}
    # float16 storage moves each weight by at most 2^-11 relative: RED <= 4.9e-4, under the 1.13e-3 floor
    same = _inputs(weights.astype(np.float16), weights, image.astype(np.float32), image.astype(np.float32))
    assert source_mismatches(same, edges, sources) == ()
    other = rng.normal(size=weights.shape).astype(np.float32)  # another seed: RED about sqrt(2)
    (mismatch,) = source_mismatches(_inputs(other.astype(np.float16), weights, image, image), edges, sources)
    assert (mismatch.kind, mismatch.count, mismatch.first, mismatch.severe) == (CONSTANT, 1, "conv:input:1", True)
    assert "against the float16 rounding floor 0.00113" in mismatch.figure
    result = ComparisonResult.judged(_inputs(other.astype(np.float16), weights, image, image),
                                     facts(["conv"], edges, sources), 0.99)
    assert result.culprit is None and result.exit_code() == 2 and not result.verdict.same_model


def test_weights_drifted_by_training_steps_are_said_and_keep_the_verdict():
    """float32 weights 2e-5 apart (a few steps that ran differently): beyond float32's floor, far within the cosine
    gate -- the same model at another step, not another model (review of issue 37)."""
    weights = np.random.default_rng(2).normal(size=(64, 64)).astype(np.float32)
    drifted = weights * (1 + 2e-5 * np.random.default_rng(3).normal(size=weights.shape)).astype(np.float32)
    rows = [array_row(0, "fc", "input", 1, "MatMul", drifted, weights)]
    (mismatch,) = source_mismatches(rows, {"fc": [("x", 0), ("w", 0)]}, {"w": CONSTANT})
    assert not mismatch.severe and "beyond rounding though alike" in mismatch.line
    result = ComparisonResult.judged(rows, facts(["fc"], {"fc": [("x", 0), ("w", 0)]}, {"w": CONSTANT}), 0.99)
    assert result.verdict.same_model and result.exit_code() == 0


def test_range_effects_of_float16_on_a_source_are_no_other_model():
    """An epsilon of 1e-9 flushed to 0, a constant of 1e6 overflowing: float16's range, not another model."""
    rows = [array_row(0, "add", "input", 1, "Add", np.zeros(4, np.float16), np.full(4, 1e-9, np.float32)),
            array_row(0, "mul", "input", 1, "Mul", np.full(4, np.inf, np.float16), np.full(4, 1e6, np.float32))]
    assert rows[0].status is Status.ONE_SIDE_ZERO and rows[1].status is Status.NAN_INF
    assert source_mismatches(rows, {"add": [("x", 0), ("eps", 0)], "mul": [("x", 0), ("big", 0)]},
                             {"eps": CONSTANT, "big": CONSTANT}) == ()


def test_a_different_batch_is_a_data_mismatch():
    image = np.random.default_rng(1).uniform(size=(2, 8)).astype(np.float32)
    rows = [array_row(0, "fc", "input", 0, "MatMul", image[::-1].copy(), image)]
    (mismatch,) = source_mismatches(rows, {"fc": [("x", 0)]}, {"x": DATA})
    assert mismatch.kind == DATA and "float32 rounding floor 1e-05" in mismatch.figure


# --------------------------------------------------------------------------------------------- culprit, exit
def _replayed(index, op, ratio, status="PASS"):
    return stats_row(index, op, "output", 0, "Conv2D", status, (8,), ref_rms=1.0, rmse=ratio * 1e-3,
                     local=ratio * 1e-3, floor=1e-3, cosine=0.999)


def test_the_culprit_is_the_first_standout_even_when_its_output_passes():
    rows = [_replayed(0, "a", 0.25), _replayed(1, "b", 0.3), _replayed(2, "c", 64.8), _replayed(3, "d", 0.25)]
    result = ComparisonResult.judged(rows, facts("abcd"), 0.99)
    assert not result.failing and result.culprit.op_name == "c" and result.culprit.how == "local error (replay)"
    assert result.exit_code() == 1  # a culprit by any method exits 1, every tensor passing or not


def test_an_earlier_unmeasured_divergence_comes_before_a_later_standout():
    rows = [stats_row(0, "a", "output", 0, "Gather", "FAIL", (8,), ref_rms=1.0, rmse=0.5),
            _replayed(1, "b", 64.8)]
    result = ComparisonResult.judged(rows, facts("ab"), 0.99)
    assert result.culprit.op_name == "a" and result.culprit.how == "first divergence"


def test_decide_culprit_orders_the_comparison_then_fusion_then_overflow():
    class Diff:
        op_name = "fused"

    rows = [_replayed(0, "a", 0.3), _replayed(1, "b", 0.25), _replayed(2, "c", 0.3), _replayed(3, "d", 0.2)]
    clean = ComparisonResult.judged(rows, facts("abcd"), 0.99).verdict
    assert decide_culprit(clean, [Diff()], ("ov", "finding")).op_name == "fused"
    assert decide_culprit(clean, [], ("ov", "finding")).method == "overflow"
    assert decide_culprit(clean) is None and decide_culprit(None, [Diff()]).how == "fusion excess"
    blamed = ComparisonResult.judged(rows[:2] + [_replayed(2, "c", 50.0)], facts("abc"), 0.99).verdict
    chosen = decide_culprit(blamed, [Diff()])
    assert isinstance(chosen, CulpritChoice) and chosen.op_name == "c"


@pytest.mark.parametrize("failed, culprit, compared, unusable, same, expected", [
    (False, False, 5, 0, True, 0), (True, False, 5, 0, True, 1), (False, True, 5, 0, True, 1),
    (True, True, 5, 3, True, 1), (False, False, 0, 0, True, 2), (False, False, 5, 1, True, 2),
    (True, True, 5, 0, False, 2)])
def test_the_one_exit_rule(failed, culprit, compared, unusable, same, expected):
    assert exit_code(failed, culprit, compared, unusable, same) == expected
