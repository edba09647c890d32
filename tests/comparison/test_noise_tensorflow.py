"""The noise rule against TensorFlow itself: a dense layer with a bias before a batch norm in training mode, its
gradients computed by TensorFlow in float64 (the truth), float32 (the reference) and float16 (a device computing in
half precision). The bias gradient is mathematically zero -- batch norm removes the batch mean of the gradient --
and TensorFlow's float64 result says so (|g| < 1e-15); float32 and float16 hold rounding noise, which the cosine
gate calls a failure and the noise rule does not."""
import numpy as np
import pytest

from judgment_builders import array_row, facts
from precision_tool.comparison.noise import noise_of
from precision_tool.comparison.result import ComparisonResult
from precision_tool.status import Status

pytestmark = [pytest.mark.tf, pytest.mark.compat]
GRAD = "dense/BiasAdd_grad/BiasAddGrad"
BATCH = 64


def gradients(dtype):
    """``(d loss / d pre-activation, d loss / d bias)`` of ``loss = sum(batch_norm(x W + b) * t)`` in ``dtype``,
    batch norm in training mode (batch statistics), from fixed inputs."""
    import tensorflow as tf

    rng = np.random.default_rng(37)
    x, w = rng.normal(size=(BATCH, 32)), rng.normal(size=(32, 16)) * 0.2
    bias, target = rng.normal(size=16) * 0.05, rng.normal(size=(BATCH, 16))
    graph = tf.Graph()
    with graph.as_default():
        cast = {name: tf.constant(value.astype(dtype)) for name, value in (("x", x), ("w", w), ("t", target))}
        b = tf.constant(bias.astype(dtype))
        z = tf.nn.bias_add(tf.matmul(cast["x"], cast["w"]), b)
        mean, variance = tf.nn.moments(z, axes=[0])
        y = (z - mean) * tf.math.rsqrt(variance + tf.constant(1e-3, dtype))
        loss = tf.reduce_sum(y * cast["t"])
        dz, db = tf.gradients(loss, [z, b])
        with tf.compat.v1.Session(graph=graph) as session:
            return session.run([dz, db])


def test_a_bias_gradient_before_a_training_batch_norm_is_noise_that_passes():
    truth_dz, truth_db = gradients(np.float64)
    ref_dz, ref_db = gradients(np.float32)
    npu_dz, npu_db = gradients(np.float16)
    assert np.max(np.abs(truth_db)) < 1e-15 * np.sqrt(np.sum(truth_dz ** 2))  # mathematically zero
    rows = (array_row(0, GRAD, "input", 0, "BiasAddGrad", npu_dz, ref_dz),
            array_row(0, GRAD, "output", 0, "BiasAddGrad", npu_db, ref_db))
    assert rows[0].status is Status.PASS and rows[1].status is Status.FAIL  # the cosine gate compares two noises
    noise = noise_of(rows[1], {0: rows[0]})
    assert noise.terms == BATCH and noise.below and noise.within  # the bias gradient sums over the batch
    result = ComparisonResult.judged(rows, facts([GRAD]), 0.99)
    assert result.results[1].status is Status.BELOW_NOISE and result.exit_code() == 0
    assert result.divergence.first is None and result.culprit is None


def test_a_real_error_on_that_gradient_still_fails():
    ref_dz, ref_db = gradients(np.float32)
    npu_dz = gradients(np.float16)[0]
    # 0.4 rms(dz) added to every channel; the budget is about 0.011 rms(dz): 4 float16 roundings of 8 rms(dz)
    # (sqrt(64) terms), plus the float16 gradient's own error summed over 64 terms
    wrong = (ref_db + 0.4 * np.sqrt(np.mean(ref_dz.astype(np.float64) ** 2))).astype(np.float16)
    rows = (array_row(0, GRAD, "input", 0, "BiasAddGrad", npu_dz, ref_dz),
            array_row(0, GRAD, "output", 0, "BiasAddGrad", wrong, ref_db))
    result = ComparisonResult.judged(rows, facts([GRAD]), 0.99)
    assert result.results[1].status is Status.FAIL and "exceeds the noise budget" in result.results[1].reason
    assert result.divergence.first.op_name == GRAD and result.exit_code() == 1
