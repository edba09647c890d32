"""Tiny models for the hardware-model tests (tests/emulate/test_emulate_hardware.py): each op of interest reads
a model input directly, so its NPU input dump is the input and its output dump is the kernel's work alone.
``HARDWARE_MODEL`` (environment) picks one."""
import os

import numpy as np
import tensorflow as tf

CASE = os.environ.get("HARDWARE_MODEL", "vector")


def model():
    if CASE == "conv":
        weights = tf.constant(np.random.default_rng(5).standard_normal((3, 3, 8, 16)).astype("float32") * 0.3)

        def conv(x):
            return tf.nn.relu(tf.nn.conv2d(x, weights, 1, "SAME", name="conv"), name="conv_relu")
        return conv

    def vector(x):
        wide = tf.multiply(x, 0.3, name="wide")  # logits over [-4.8, 3.6]: x - max changes binade, so it rounds
        return (tf.math.sigmoid(x, name="sig"), tf.math.exp(x * 0.25, name="exp"), tf.math.erf(x, name="erf"),
                tf.nn.softmax(wide, name="soft"), tf.multiply(x, 7000.0, name="big"), tf.math.sqrt(x, name="root"))
    return vector


def inputs():
    rng = np.random.default_rng(11)
    if CASE == "conv":
        return rng.standard_normal((1, 6, 6, 8)).astype("float32")
    x = rng.uniform(-16.0, 12.0, (4, 64)).astype("float32")
    x[0, :4] = [-15.0, -12.0, -11.5, -11.089]  # below Sigmoid's float16 clamp
    x[1, :2] = [10.0, 11.0]                     # 7000 x: beyond float16's range
    return x
