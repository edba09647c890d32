"""The noise rule (comparison.noise): an output below the rounding noise of what its op summed is judged on absolute
error, and what is computed from it by ops adding nothing inherits that. Figures derived by hand in each test."""
import math

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
    # n = 2048 / 8 = 256 terms of rms 0.003: magnitude 16 * 0.003 = 0.048; one float16 rounding each,
    # u / sqrt(3) = 2.819e-4 relative: rho = 1.353e-5, floor F = 4 rho = 5.413e-5
    assert noise.terms == 256 and noise.dtype == "float16"
    assert noise.floor == pytest.approx(4 * U16 / math.sqrt(3) * 16 * 0.003, rel=1e-12)
    assert noise.floor == pytest.approx(5.413e-5, rel=1e-3)
    # the inputs bring sqrt(256) * 9.6e-5 = 1.536e-3 on top: B = 1.590e-3
    assert noise.budget == pytest.approx(noise.floor + 16 * 9.6e-5, rel=1e-12)
    assert noise.below and noise.within
    judged = judge_noise(rows)
    assert judged[1].status is Status.BELOW_NOISE and judged[1].passed
    assert judged[1].reason == ("reference rms 2.1e-08 is below the rounding noise 5.41e-05 of its 256-term sums in "
                                "float16: judged on absolute error, rms 8.3e-06 within the noise budget 0.00159")
    assert judged[0] is rows[0]  # an input: not the output of this op's sum


def test_an_absolute_error_beyond_the_noise_budget_fails():
    judged = judge_noise(bias_grad(out_rmse=5e-3))  # above B = 1.59e-3: an error the sum cannot make
    assert judged[1].status is Status.FAIL and "rms 0.005 exceeds the noise budget 0.00159" in judged[1].reason


def test_a_reference_above_the_noise_keeps_its_cosine_verdict():
    rows = bias_grad(out_rms=0.01)  # 0.01 > F = 5.4e-5: a real gradient, judged as any tensor
    assert judge_noise(rows)[1] is rows[1]


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
    assert result.results[3].reason.startswith(f"computed from {GRAD}:output:0 (below the rounding noise) by an op "
                                               "that adds no error of its own (0x its floor)")
    assert result.divergence.first is None and result.culprit is None and result.exit_code() == 0
    assert len(result.verdict.noise) == 5


def test_an_op_adding_error_of_its_own_does_not_inherit_noise():
    rows, run = _chain(cast_local=5e-5)  # the Cast adds 5x its floor: its output is its own error
    judged = inherit_noise(judge_noise(rows), attribute(judge_noise(rows)), run.data_inputs)
    assert judged[2].status is Status.BELOW_NOISE  # the Cast's input is the noise tensor itself
    assert judged[3].status is Status.FAIL and judged[6].status is Status.FAIL  # its output is not, nor what follows
