"""The noise rule (comparison.noise): an output below the rounding noise of what its op summed is judged on absolute
error, and what is computed from it by ops adding nothing inherits that. Figures derived by hand in each test."""
import math
from dataclasses import replace

import pytest

from judgment_builders import facts, stats_row
from precision_tool.comparison.noise import inherit_noise, judge_noise, noise_of
from precision_tool.comparison.result import ComparisonResult
from precision_tool.comparison.attribution import attribute
from precision_tool.status import Status

pytestmark = pytest.mark.compat
U16 = 2.0 ** -11
GRAD = "gradients/conv/BiasAdd_grad/BiasAddGrad"


def bias_grad(out_rmse=8.3e-6, out_rms=2.1e-8, status="FAIL", in_rmse=9.6e-5):
    """A BiasAddGrad of a conv before a training batch norm, as the issue's TF1 step: input [4, 8, 8, 8] of the
    gradient (rms 0.003, float16 on the NPU), output [8] (its sum over 256 elements per channel)."""
    return [stats_row(3, GRAD, "input", 0, "BiasAddGrad", "PASS", (4, 8, 8, 8), ref_rms=0.003, rmse=in_rmse,
                      cosine=0.9995),
            stats_row(3, GRAD, "output", 0, "BiasAddGrad", status, (8,), ref_rms=out_rms, rmse=out_rmse, cosine=0.19)]


def test_a_bias_gradient_of_noise_passes_on_absolute_error():
    rows = bias_grad()
    noise = noise_of(rows[1], {0: rows[0]})
    # n = 2048 / 8 = 256 terms of rms 0.003: magnitude 16 * 0.003 = 0.048. The float32 reference is trusted to
    # 1e-5 of that, 4.8e-7: its 2.1e-8 is noise. On the NPU each term is rounded once in float16,
    # u / sqrt(3) = 2.819e-4 relative: rho = 1.353e-5, floor F = 4 rho = 5.413e-5
    assert noise.terms == 4 * 8 * 8 and noise.dtype == "float16"  # [4, 8, 8, 8] summed over all but channels
    assert noise.reference_floor == pytest.approx(1e-5 * 0.048, rel=1e-12)
    assert noise.floor == pytest.approx(4 * U16 / math.sqrt(3) * 16 * 0.003, rel=1e-12)
    assert noise.floor == pytest.approx(5.413e-5, rel=1e-3)
    # the inputs bring sqrt(256) * 9.6e-5 = 1.536e-3 on top: B = 1.590e-3
    assert noise.budget == pytest.approx(noise.floor + 16 * 9.6e-5, rel=1e-12)
    assert noise.below and noise.within
    judged = judge_noise(rows)
    assert judged[1].status is Status.BELOW_NOISE and judged[1].passed
    assert judged[1].reason == ("reference rms 2.1e-08 is rounding noise of its 256-term sums (below 4.8e-07): judged "
                                "on absolute error, rms 8.3e-06 within the noise budget 0.00159")
    assert judged[0] is rows[0]  # an input: not the output of this op's sum


def test_an_absolute_error_beyond_the_noise_budget_fails():
    judged = judge_noise(bias_grad(out_rmse=5e-3))  # above B = 1.59e-3: an error the sum cannot make
    assert judged[1].status is Status.FAIL and "rms 0.005 exceeds the noise budget 0.00159" in judged[1].reason


def test_a_reference_above_the_noise_keeps_its_cosine_verdict():
    rows = bias_grad(out_rms=0.01)  # 0.01 > 4.8e-7: a real gradient, judged as any tensor
    assert judge_noise(rows)[1] is rows[1]


def test_a_small_sum_the_reference_holds_is_no_noise_though_float16_cannot_hold_it():
    """1000.03 - 1000: float32 holds the difference (0.028 against a float32 floor of 1e-5 x 1414 = 0.014), float16
    does not (its floor there is 1.6); the NPU's zeros are a real loss, not noise (review of issue 37)."""
    rows = [stats_row(0, "d", "input", 0, "Sub", "PASS", (16,), ref_rms=1000.0, rmse=0.24, cosine=1.0),
            stats_row(0, "d", "input", 1, "Sub", "PASS", (16,), ref_rms=1000.0, rmse=0.0, cosine=1.0),
            stats_row(0, "d", "output", 0, "Sub", "ONE_SIDE_ZERO", (16,), ref_rms=0.028, rmse=0.028, cosine=None)]
    noise = noise_of(rows[2], {0: rows[0], 1: rows[1]})
    assert noise.reference_floor == pytest.approx(1e-5 * 1000 * math.sqrt(2)) and not noise.below
    assert judge_noise(rows)[2] is rows[2]


def test_an_output_whose_input_fails_keeps_its_verdict():
    rows = bias_grad()
    rows[0] = stats_row(3, GRAD, "input", 0, "BiasAddGrad", "FAIL", (4, 8, 8, 8), ref_rms=0.003, rmse=0.003,
                        cosine=0.5)
    assert judge_noise(rows)[1] is rows[1]  # the error came in: judged where it entered


def test_with_replay_the_ops_own_error_is_judged_against_the_float16_noise():
    # local 0.5 of a replay that is 355x the reference (noise): ||npu - replay|| <= 0.5 * 2.1e-8 * 356 = 3.7e-6,
    # within F = 5.4e-5; a local error of 100 (the replay's 100-fold) is 7.5e-4, beyond it
    good, bad = bias_grad(), bias_grad()
    good[1] = replace(good[1], local_error=0.5, local_floor=3e-5, inherited_error=355.0)
    bad[1] = replace(bad[1], local_error=100.0, local_floor=3e-5, inherited_error=355.0)
    assert judge_noise(good)[1].status is Status.BELOW_NOISE
    failed = judge_noise(bad)[1]
    assert failed.status is Status.FAIL and "the op's own error (replay) 0.000748 exceeds the float16 noise" in \
        failed.reason


def test_a_difference_of_equal_values_in_float32():
    # a - b with rms 1 each and an exact result of 1e-8: magnitude sqrt(2), F = 4 * 2^-24 / sqrt(3) * sqrt(2)
    rows = [stats_row(0, "d", "input", 0, "Sub", "PASS", (16,), ref_rms=1.0, rmse=0.0, dtype="float32"),
            stats_row(0, "d", "input", 1, "Sub", "PASS", (16,), ref_rms=1.0, rmse=0.0, dtype="float32"),
            stats_row(0, "d", "output", 0, "Sub", "ONE_SIDE_ZERO", (16,), ref_rms=1e-8, rmse=1e-7, dtype="float32")]
    noise = noise_of(rows[2], {0: rows[0], 1: rows[1]})
    assert noise.floor == pytest.approx(4 * 2.0 ** -24 / math.sqrt(3) * math.sqrt(2), rel=1e-12)
    assert noise.budget == noise.floor  # the inputs are exact
    assert noise.below and noise.within  # 1e-7 <= 1.95e-7
    assert judge_noise(rows)[2].status is Status.BELOW_NOISE


def test_a_mean_divides_the_magnitude_by_its_terms():
    rows = [stats_row(0, "m", "input", 0, "ReduceMeanD", "PASS", (100, 4), ref_rms=1.0, rmse=1e-3),
            stats_row(0, "m", "output", 0, "ReduceMeanD", "FAIL", (4,), ref_rms=1e-6, rmse=1e-5)]
    noise = noise_of(rows[1], {0: rows[0]})
    # 100 terms: the sum's magnitude 10, the mean's 10 / 100 = 0.1; the inputs' errors 10 * 1e-3 / 100 = 1e-4
    assert noise.floor == pytest.approx(4 * U16 / math.sqrt(3) * 0.1, rel=1e-12)
    assert noise.budget == pytest.approx(noise.floor + 1e-4, rel=1e-12)


def _chain(cast_local=0.0):
    """The bias gradient, then a Cast of it to float32, then the momentum accumulator's Add (0 + grad)."""
    grad = bias_grad()
    cast = [stats_row(4, "cast", "input", 0, "Cast", "FAIL", (8,), ref_rms=2.1e-8, rmse=8.3e-6, cosine=0.19),
            stats_row(4, "cast", "output", 0, "Cast", "FAIL", (8,), ref_rms=2.1e-8, rmse=8.3e-6, dtype="float32",
                      cosine=0.19, local=cast_local, floor=1e-5)]
    accum = [stats_row(5, "accum", "input", 0, "Add", "BOTH_ZERO", (8,), ref_rms=0.0, rmse=0.0, dtype="float32",
                       cosine=None),
             stats_row(5, "accum", "input", 1, "Add", "FAIL", (8,), ref_rms=2.1e-8, rmse=8.3e-6, dtype="float32",
                       cosine=0.19),
             stats_row(5, "accum", "output", 0, "Add", "FAIL", (8,), ref_rms=2.1e-8, rmse=8.3e-6, dtype="float32",
                       cosine=0.19, local=0.0, floor=1e-5)]
    edges = {"cast": [(GRAD, 0)], "accum": [("zeros", 0), ("cast", 0)]}
    return grad + cast + accum, facts([GRAD, "cast", "accum"], edges)


def test_what_is_computed_from_noise_by_ops_adding_nothing_inherits_it():
    rows, run = _chain()
    result = ComparisonResult.judged(rows, run, 0.99)
    noise = Status.BELOW_NOISE
    assert [row.status for row in result.results] == [Status.PASS, noise, noise, noise, Status.BOTH_ZERO, noise, noise]
    assert result.results[3].reason == ("computed from cast:input:0 (rounding noise): its value is that noise and the "
                                        "op adds no error of its own (0x its floor)")
    assert result.divergence.first is None and result.culprit is None and result.exit_code() == 0
    assert len(result.verdict.noise) == 5


def test_an_op_adding_error_of_its_own_does_not_inherit_noise():
    rows, run = _chain(cast_local=5e-5)  # the Cast adds 5x its floor: its output is its own error
    judged = inherit_noise(judge_noise(rows), attribute(judge_noise(rows)), run.data_inputs)
    assert judged[2].status is Status.BELOW_NOISE  # the Cast's input is the noise tensor itself
    assert judged[3].status is Status.FAIL and judged[6].status is Status.FAIL  # its output is not, nor what follows


def test_a_broken_update_of_a_real_weight_after_a_noise_gradient_is_not_noise():
    """ApplyMomentum reading the noisy bias gradient and a weight of rms 0.5, writing it 50% off: the output does not
    carry the gradient's noise (RED 0.5 against its 250), so it fails and its error jump -- noise inputs left out --
    names it (review of issue 37)."""
    rows = bias_grad(out_rmse=5e-6, out_rms=2e-8, in_rmse=1e-6)
    rows += [stats_row(4, "apply", "input", 0, "ApplyMomentum", "PASS", (8,), ref_rms=0.5, rmse=0.0, dtype="float32",
                       cosine=1.0),
             stats_row(4, "apply", "input", 1, "ApplyMomentum", "FAIL", (8,), ref_rms=2e-8, rmse=5e-6, cosine=-0.5),
             stats_row(4, "apply", "output", 0, "ApplyMomentum", "FAIL", (8,), ref_rms=0.5, rmse=0.25, dtype="float32",
                       cosine=0.8)]
    result = ComparisonResult.judged(rows, facts([GRAD, "apply"], {"apply": [("var", 0), (GRAD, 0)]}), 0.99)
    assert [row.status for row in result.results][1:4] == [Status.BELOW_NOISE, Status.PASS, Status.BELOW_NOISE]
    assert result.results[4].status is Status.FAIL
    assert result.culprit.op_name == "apply" and result.culprit.how == "local error (error jump)"
