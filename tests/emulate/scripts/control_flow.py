"""Control flow the emulator refuses, one per ``PRECISION_TOOL_CF_CASE``:

* ``cond``: ``tf.cond`` on a value of the input (lowered to Switch/Merge when frozen);
* ``lstm``: a Keras 2 (``tf_keras``) LSTM without ``unroll`` (a while loop);
* ``while``: ``tf.while_loop`` in a plain function.
"""
import os

import numpy as np
import tensorflow as tf

CASE = os.environ.get("PRECISION_TOOL_CF_CASE", "cond")


def model():
    if CASE == "lstm":
        import tf_keras as keras

        seq = keras.Input((5, 4), name="seq")
        out = keras.layers.Dense(3, name="head")(keras.layers.LSTM(6, name="lstm")(seq))
        return keras.Model(seq, out, name="rnn")

    def forward(x):
        if CASE == "while":
            _, y = tf.while_loop(lambda i, v: i < 3, lambda i, v: (i + 1, tf.nn.relu(v * 0.5, name="step")),
                                 (tf.constant(0), x), name="loop")
            return y
        return tf.cond(tf.reduce_sum(x) > 0, lambda: tf.nn.relu(x), lambda: tf.nn.tanh(x), name="branch")
    return forward


def inputs():
    shape = (2, 5, 4) if CASE == "lstm" else (2, 8)
    return np.random.default_rng(1).uniform(-1.0, 1.0, shape).astype("float32")
