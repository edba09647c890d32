"""TF1-style graph code: raw ``tf.nn`` ops on constant weights, no Keras layers."""
import numpy as np
import tensorflow as tf

_RNG = np.random.default_rng(9)
_W1 = (_RNG.standard_normal((3, 3, 3, 16)) * 0.3).astype("float32")
_DW = (_RNG.standard_normal((3, 3, 16, 1)) * 0.3).astype("float32")
_W2 = (_RNG.standard_normal((16, 10)) * 0.3).astype("float32")


def model():
    def forward(image):
        x = tf.nn.relu(tf.nn.conv2d(image, _W1, strides=1, padding="SAME", name="conv"), name="relu")
        x = tf.nn.relu6(tf.nn.depthwise_conv2d(x, _DW, strides=[1, 1, 1, 1], padding="SAME", name="dw"), name="relu6")
        x = tf.reduce_mean(x, axis=[1, 2], name="gap")
        return tf.nn.softmax(tf.matmul(x, _W2, name="logits"), name="prob")
    return forward


def inputs():
    return np.random.default_rng(1).uniform(-1, 1, (2, 16, 16, 3)).astype("float32")
