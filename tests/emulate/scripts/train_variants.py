"""Training steps beyond the plain optimizer, one per ``PRECISION_TOOL_TRAIN_VARIANT`` (a small dense net, SGD):

* ``ema``: an exponential moving average of the weights applied after the optimizer step (control dependency):
  its update reads the *new* weights;
* ``clip``: the weight clipped after the optimizer step (a second write of the same variable);
* ``embedding``: a trainable embedding (``ResourceGather`` read, ``ResourceScatterAdd`` sparse update);
* ``dropout``: dropout (a stateful ``RandomUniform``), dumped at ``--step 2``;
* ``rnn``: training through a Keras 2 LSTM without ``unroll`` (the gradient of a while loop): refused;
* ``assign``: returns a variable's ``assign`` tensor instead of an op: refused, the message says to return ``.op``.
"""
import os

import numpy as np
import tensorflow as tf

VARIANT = os.environ.get("PRECISION_TOOL_TRAIN_VARIANT", "ema")


def _loss(logits, label):
    return tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=label, logits=logits), name="loss")


def train_graph(x, label):
    if VARIANT == "embedding":
        table = np.random.default_rng(2).uniform(-0.5, 0.5, (10, 8)).astype("float32")
        emb = tf.compat.v1.get_variable("emb", initializer=table)
        h = tf.reduce_mean(tf.nn.embedding_lookup(emb, x), axis=1)
    elif VARIANT == "rnn":
        import tf_keras as keras

        h = keras.layers.LSTM(6, name="lstm")(x)
    else:
        h = tf.compat.v1.layers.dense(x, 16, activation=tf.nn.relu, name="fc1")
        if VARIANT == "dropout":
            h = tf.nn.dropout(h, rate=0.5, name="drop")
    loss = _loss(tf.compat.v1.layers.dense(h, 3, name="fc2"), label)
    step = tf.compat.v1.train.GradientDescentOptimizer(0.1).minimize(loss)
    if VARIANT == "ema":
        with tf.control_dependencies([step]):
            step = tf.compat.v1.train.ExponentialMovingAverage(0.9).apply(tf.compat.v1.trainable_variables())
    elif VARIANT == "clip":
        kernel = [v for v in tf.compat.v1.trainable_variables() if v.op.name == "fc1/kernel"][0]
        with tf.control_dependencies([step]):
            step = tf.group(kernel.assign(tf.clip_by_value(kernel.read_value(), -0.3, 0.3), name="clip").op)
    elif VARIANT == "assign":
        kernel = tf.compat.v1.trainable_variables()[0]
        return loss, kernel.assign(kernel * 0.5)
    return loss, step


def inputs():
    rng = np.random.default_rng(0)
    label = rng.integers(0, 3, (4,)).astype("int32")
    if VARIANT == "embedding":
        return rng.integers(0, 10, (4, 5)).astype("int32"), label
    if VARIANT == "rnn":
        return rng.uniform(-1, 1, (4, 5, 3)).astype("float32"), label
    return rng.uniform(-1, 1, (4, 8)).astype("float32"), label
