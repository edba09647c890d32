"""A TF1 ResNet-style block written as graph code: ``graph_model()`` (not ``model()``), built by the
emulator in a TF1 graph. ``tf.compat.v1.layers.conv2d`` with and without a bias,
``tf.compat.v1.layers.batch_normalization(training=False)`` (FusedBatchNormV3) with non-trivial
parameters and moving statistics, ReLU, a residual add, global average pooling and a
``tf.compat.v1.get_variable`` dense head. Variables take their initialisers' values, seeded by the
emulator."""
import numpy as np
import tensorflow as tf

v1 = tf.compat.v1
EPSILON = 1e-3


def _batch_norm(x, name):
    return v1.layers.batch_normalization(
        x, training=False, epsilon=EPSILON, name=name,
        gamma_initializer=v1.random_uniform_initializer(0.5, 1.5),
        beta_initializer=v1.random_normal_initializer(0.0, 0.2),
        moving_mean_initializer=v1.random_normal_initializer(0.0, 0.3),
        moving_variance_initializer=v1.random_uniform_initializer(0.5, 2.0))


def graph_model(image):
    with v1.variable_scope("block"):
        x = v1.layers.conv2d(image, 16, 3, padding="same", use_bias=False, name="stem")
        x = tf.nn.relu(_batch_norm(x, "stem_bn"), name="stem_relu")
        y = v1.layers.conv2d(x, 16, 3, padding="same", name="conv1")
        y = tf.nn.relu(_batch_norm(y, "bn1"), name="relu1")
        y = v1.layers.conv2d(y, 16, 3, padding="same", use_bias=False, name="conv2")
        y = _batch_norm(y, "bn2")
        x = tf.nn.relu(tf.add(x, y, name="residual"), name="out_relu")
    with v1.variable_scope("head"):
        pooled = tf.reduce_mean(x, axis=[1, 2], name="gap")
        weights = v1.get_variable("weights", [16, 10], initializer=v1.glorot_uniform_initializer())
        bias = v1.get_variable("bias", [10], initializer=v1.random_normal_initializer(0.0, 0.1))
        return tf.nn.softmax(tf.nn.bias_add(tf.matmul(pooled, weights, name="logits"), bias, name="logits_bias"),
                             name="prob")


def inputs():
    return np.random.default_rng(3).uniform(-1.0, 1.0, (2, 16, 16, 3)).astype("float32")
