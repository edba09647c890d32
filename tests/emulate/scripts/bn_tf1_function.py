"""TF1-style batch norm in a plain function (no Keras, no variables): ``tf.compat.v1.nn.fused_batch_norm``
with ``is_training=False`` (FusedBatchNormV3) after a Conv2D, ``FusedBatchNormV2`` after a depthwise
convolution and ``FusedBatchNorm`` (V1) after a Conv2D with a bias add, each with its own epsilon."""
import numpy as np
import tensorflow as tf

_RNG = np.random.default_rng(9)
W1 = (_RNG.standard_normal((3, 3, 3, 16)) * 0.3).astype("float32")
DW = (_RNG.standard_normal((3, 3, 16, 1)) * 0.3).astype("float32")
W2 = (_RNG.standard_normal((1, 1, 16, 8)) * 0.3).astype("float32")
B2 = (_RNG.standard_normal(8) * 0.1).astype("float32")


def _params(channels):
    """scale, offset, mean, variance."""
    return (_RNG.uniform(0.5, 1.5, channels).astype("float32"), _RNG.normal(0.0, 0.2, channels).astype("float32"),
            _RNG.normal(0.0, 0.3, channels).astype("float32"), _RNG.uniform(0.5, 2.0, channels).astype("float32"))


BN1, BN2, BN3 = _params(16), _params(16), _params(8)
EPSILONS = {"bn1": 1e-3, "bn2": 1e-5, "bn3": 1e-4}


def model():
    def forward(image):
        x = tf.nn.conv2d(image, W1, strides=1, padding="SAME", name="conv1")
        x, _, _ = tf.compat.v1.nn.fused_batch_norm(x, *BN1, epsilon=EPSILONS["bn1"], is_training=False, name="bn1")
        x = tf.nn.relu(x, name="relu1")
        x = tf.nn.depthwise_conv2d(x, DW, strides=[1, 1, 1, 1], padding="SAME", name="dw")
        x = tf.raw_ops.FusedBatchNormV2(x=x, scale=BN2[0], offset=BN2[1], mean=BN2[2], variance=BN2[3],
                                        epsilon=EPSILONS["bn2"], is_training=False, name="bn2")[0]
        x = tf.nn.relu6(x, name="relu2")
        x = tf.nn.bias_add(tf.nn.conv2d(x, W2, strides=1, padding="SAME", name="conv3"), B2, name="conv3_bias")
        x = tf.raw_ops.FusedBatchNorm(x=x, scale=BN3[0], offset=BN3[1], mean=BN3[2], variance=BN3[3],
                                      epsilon=EPSILONS["bn3"], is_training=False, name="bn3")[0]
        return tf.nn.softmax(tf.reduce_mean(x, axis=[1, 2], name="gap"), name="prob")
    return forward


def inputs():
    return np.random.default_rng(1).uniform(-1.0, 1.0, (2, 8, 8, 3)).astype("float32")
