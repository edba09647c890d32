"""Batch norms the emulator refuses, one per ``PRECISION_TOOL_BN_CASE``:

* ``statistics``: inference, but the model returns the batch mean too (BNInfer has no such output);
* ``tf1_layers``: ``tf.compat.v1.layers.batch_normalization`` -- TF1 graph code, which model() cannot trace.
"""
import os

import numpy as np
import tensorflow as tf

CASE = os.environ.get("PRECISION_TOOL_BN_CASE", "statistics")
_RNG = np.random.default_rng(2)
W = (_RNG.standard_normal((3, 3, 3, 4)) * 0.3).astype("float32")
SCALE, OFFSET = np.ones(4, "float32"), np.zeros(4, "float32")
MEAN, VARIANCE = np.zeros(4, "float32"), np.ones(4, "float32")


def model():
    def forward(image):
        x = tf.nn.conv2d(image, W, strides=1, padding="SAME", name="conv")
        if CASE == "statistics":
            y, mean, _ = tf.compat.v1.nn.fused_batch_norm(x, SCALE, OFFSET, MEAN, VARIANCE, is_training=False,
                                                          name="bn")
            return tf.nn.relu(y, name="relu"), mean
        return tf.nn.relu(tf.compat.v1.layers.batch_normalization(x, training=False, name="bn"), name="relu")
    return forward


def inputs():
    return np.random.default_rng(1).uniform(-1.0, 1.0, (2, 8, 8, 3)).astype("float32")
