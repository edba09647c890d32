"""Control-flow models, one per ``PRECISION_TOOL_CF_CASE`` (the emulator unrolls the path the batch takes):

* ``cond`` / ``cond_else``: ``tf.cond`` on the sign of the batch's sum (a positive batch takes ``then``, the
  negated batch ``else``), a MatMul in each branch;
* ``case``: ``tf.switch_case`` with three branches, the index computed from the batch (branch 2);
* ``while``: ``tf.while_loop`` in a plain function, 3 iterations;
* ``nested``: a while loop (4 iterations) whose body holds a ``tf.cond`` on the counter's parity;
* ``tensor_array``: a Python ``for`` over ``tf.range`` (autograph: a while loop) writing a ``tf.TensorArray``;
* ``lstm``: a Keras 2 (``tf_keras``) LSTM without ``unroll`` (a while loop over 5 time steps, TensorArrays);
* ``gru``: a Keras 3 GRU without ``unroll``;
* ``graph_cond``: TF1 graph code (``graph_model()``) with ``tf.compat.v1.cond``;
* ``graph_def``: ``graph_def()`` of the frozen graph in the file ``PRECISION_TOOL_CF_PB`` names (the cases
  script writes ``nested`` frozen with its control flow functional, and ``cond`` lowered to Switch/Merge);
* ``long_loop``: a while loop of 1,001 iterations (refused: the emulator unrolls at most 1,000);
* ``nested_big``: 300 x 300 nested iterations (refused: more than 50,000 unrolled ops in all);
* ``counter_only``: a loop whose only output is its counter (no NPU op at all);
* ``print_cond``: ``tf.print`` in a branch (no output: not an NPU op);
* ``dynamic_array``: a ``TensorArray(size=0, dynamic_size=True)`` written in a loop.
"""
import os

import numpy as np
import tensorflow as tf

CASE = os.environ.get("PRECISION_TOOL_CF_CASE", "cond")
RNG = np.random.default_rng(7)
W1 = RNG.uniform(-0.5, 0.5, (8, 6)).astype("float32")
W2 = RNG.uniform(-0.5, 0.5, (8, 6)).astype("float32")
W3 = RNG.uniform(-0.5, 0.5, (8, 8)).astype("float32")


def _cond(x):
    return tf.cond(tf.reduce_sum(x) > 0, lambda: tf.nn.relu(tf.matmul(x, W1, name="up"), name="relu"),
                   lambda: tf.nn.tanh(tf.matmul(x, W2, name="down"), name="tanh"), name="branch")


def _case(x):
    index = tf.cast(tf.reduce_sum(x) > 0, tf.int32) + 1
    return tf.switch_case(index, [lambda: tf.matmul(x, W1, name="first"),
                                  lambda: tf.nn.relu(tf.matmul(x, W2, name="second")),
                                  lambda: tf.nn.sigmoid(tf.matmul(x, W1, name="third"))], name="switch")


def _while(x):
    _, y = tf.while_loop(lambda i, v: i < 3, lambda i, v: (i + 1, tf.nn.relu(v * 0.5, name="step")),
                         (tf.constant(0), x), name="loop")
    return y


def _nested(x):
    def body(i, v):
        v = tf.matmul(v, W3, name="mix")
        v = tf.cond(tf.equal(i % 2, 0), lambda: tf.nn.relu(v, name="even"), lambda: tf.nn.tanh(v, name="odd"),
                    name="parity")
        return i + 1, v

    _, y = tf.while_loop(lambda i, v: i < 4, body, (tf.constant(0), x), name="outer")
    return y


def _tensor_array(x):
    rows = tf.TensorArray(tf.float32, size=x.shape[0], name="rows")
    for i in tf.range(x.shape[0]):
        rows = rows.write(i, tf.nn.relu(tf.matmul(x[i:i + 1], W3, name="row_matmul"))[0])
    return tf.identity(rows.stack(), name="stacked")


def _long_loop(x):
    _, y = tf.while_loop(lambda i, v: i < 1001, lambda i, v: (i + 1, v * 0.999), (tf.constant(0), x), name="long")
    return y


def _nested_big(x):
    def outer(i, v):
        _, w = tf.while_loop(lambda j, u: j < 300, lambda j, u: (j + 1, u * 0.999), (tf.constant(0), v), name="inner")
        return i + 1, w

    _, y = tf.while_loop(lambda i, v: i < 300, outer, (tf.constant(0), x), name="outer")
    return y


def _counter_only(x):
    count, _ = tf.while_loop(lambda i, v: tf.reduce_max(v) > 0.1, lambda i, v: (i + 1, v * 0.5),
                             (tf.constant(0), tf.abs(x)), name="halvings")
    return count


def _print_cond(x):
    def loud():
        tf.print("then taken", tf.reduce_sum(x))
        return tf.nn.relu(tf.matmul(x, W1, name="up"), name="relu")

    return tf.cond(tf.reduce_sum(x) > 0, loud, lambda: tf.matmul(x, W2, name="down"), name="branch")


def _dynamic_array(x):
    rows = tf.TensorArray(tf.float32, size=0, dynamic_size=True, name="rows")
    for i in tf.range(x.shape[0]):
        rows = rows.write(i, tf.nn.relu(tf.matmul(x[i:i + 1], W3, name="row_matmul"))[0])
    return tf.identity(rows.stack(), name="stacked")


FUNCTIONS = {"cond": _cond, "cond_else": _cond, "case": _case, "while": _while, "nested": _nested,
             "tensor_array": _tensor_array, "long_loop": _long_loop, "nested_big": _nested_big,
             "counter_only": _counter_only, "print_cond": _print_cond, "dynamic_array": _dynamic_array}

if CASE == "graph_cond":
    def graph_model(x):
        w = tf.compat.v1.get_variable("w", initializer=W1)
        return tf.compat.v1.cond(tf.reduce_mean(x) > 0, lambda: tf.nn.relu(tf.matmul(x, w)),
                                 lambda: tf.nn.elu(tf.matmul(x, w)), name="gate")
elif CASE == "graph_def":
    def graph_def():
        return os.environ["PRECISION_TOOL_CF_PB"], ["input"], [os.environ.get("PRECISION_TOOL_CF_FETCH", "Identity:0")]
else:
    def model():
        if CASE == "lstm":
            import tf_keras as keras

            seq = keras.Input((5, 4), name="seq")
            out = keras.layers.Dense(3, name="head")(keras.layers.LSTM(6, name="lstm")(seq))
            return keras.Model(seq, out, name="rnn")
        if CASE == "gru":
            import keras

            seq = keras.Input((4, 3), name="seq")
            out = keras.layers.Dense(2, name="head")(keras.layers.GRU(5, name="gru")(seq))
            return keras.Model(seq, out, name="gru_net")
        return FUNCTIONS[CASE]


def inputs():
    shape = {"lstm": (2, 5, 4), "gru": (2, 4, 3)}.get(CASE, (2, 8))
    batch = np.random.default_rng(1).uniform(-1.0, 1.0, shape).astype("float32")
    positive = CASE in ("cond", "case", "graph_cond", "print_cond")
    if positive and batch.sum() < 0 or CASE == "cond_else" and batch.sum() > 0:
        batch = -batch
    return batch
