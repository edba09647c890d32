"""A training step of a Conv/BN/ReLU network (TF1 graph code, ``train_graph()``): two convolutions with batch norm
in training mode, a dense head, sparse softmax cross-entropy, and Momentum with the batch norms' moving-average
updates as control dependencies. ``PRECISION_TOOL_TRAIN_OPTIMIZER`` picks ``momentum`` (default), ``sgd``,
``nesterov``, ``keras_sgd`` (Keras 2's SGD with momentum, ``ResourceApplyKerasMomentum``) or ``loss_scale``
(Momentum with a static loss scale of 1024, as NPULossScaleOptimizer with FixedLossScaleManager does: the loss
scaled before the gradients, the gradients divided by the scale before the update), ``dynamic_loss_scale`` (TensorFlow's
MixedPrecisionLossScaleOptimizer, "dynamic": tf.conds on the gradients' finiteness); ``adam`` is refused."""
import os

import numpy as np
import tensorflow as tf

OPTIMIZER = os.environ.get("PRECISION_TOOL_TRAIN_OPTIMIZER", "momentum")
CONV_BIAS = os.environ.get("PRECISION_TOOL_TRAIN_CONV_BIAS") == "1"
LOSS_SCALE = 1024.0


def _block(x, filters, name):
    x = tf.compat.v1.layers.conv2d(x, filters, 3, padding="same", use_bias=CONV_BIAS, name=f"{name}_conv")
    x = tf.compat.v1.layers.batch_normalization(x, training=True, name=f"{name}_bn")
    return tf.nn.relu(x, name=f"{name}_relu")


def _minimize(loss):
    if OPTIMIZER == "adam":  # not modelled by the emulator: refused
        return tf.compat.v1.train.AdamOptimizer(1e-3).minimize(loss)
    if OPTIMIZER == "dynamic_loss_scale":  # applies the gradients and updates its scale in tf.conds
        momentum = tf.compat.v1.train.MomentumOptimizer(0.05, 0.9)
        return tf.compat.v1.mixed_precision.MixedPrecisionLossScaleOptimizer(momentum, "dynamic").minimize(loss)
    if OPTIMIZER == "sgd":
        return tf.compat.v1.train.GradientDescentOptimizer(0.05).minimize(loss)
    if OPTIMIZER == "keras_sgd":
        import tf_keras as keras

        optimizer = keras.optimizers.legacy.SGD(0.05, momentum=0.9)
        variables = tf.compat.v1.trainable_variables()
        return optimizer.apply_gradients(zip(tf.gradients(loss, variables), variables))
    if OPTIMIZER == "loss_scale":
        optimizer = tf.compat.v1.train.MomentumOptimizer(0.05, 0.9)
        scaled = optimizer.compute_gradients(tf.multiply(loss, LOSS_SCALE, name="scaled_loss"))
        return optimizer.apply_gradients([(tf.math.divide(g, LOSS_SCALE, name="unscale"), v) for g, v in scaled])
    return tf.compat.v1.train.MomentumOptimizer(0.05, 0.9, use_nesterov=OPTIMIZER == "nesterov").minimize(loss)


def train_graph(image, label):
    x = _block(image, 8, "block1")
    x = _block(x, 16, "block2")
    logits = tf.compat.v1.layers.dense(tf.reduce_mean(x, axis=[1, 2]), 10, name="logits")
    loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=label, logits=logits), name="loss")
    with tf.control_dependencies(tf.compat.v1.get_collection(tf.compat.v1.GraphKeys.UPDATE_OPS)):
        train_op = _minimize(loss)
    return loss, train_op


def inputs():
    rng = np.random.default_rng(3)
    return rng.uniform(-1, 1, (4, 8, 8, 3)).astype("float32"), rng.integers(0, 10, (4,)).astype("int32")
