"""MobileNetV2 (Keras applications, random weights) at a small size, for ``precision_tool emulate``.

Real structure -- inverted residual blocks, depthwise convolutions, batch norm, ReLU6, residual adds,
global average pooling, a softmax classifier -- at 32x32 input and width 0.35, so an emulation takes
seconds and its dumps stay small. Nothing is planted: every op should agree with float32.

With random weights and fresh batch-norm statistics (mean 0, variance 1) the activations of a deep
network shrink block after block until float16 cannot hold them (subnormal values, cosine 0.4 at
block 11 -- a real finding, but not what a clean sample is for). A trained network does not do that:
its batch-norm statistics match its activations. So the statistics are calibrated once on a random
batch (one training-mode pass with momentum 0), which keeps every activation of order 1.
"""
import numpy as np
import keras


def model():
    net = keras.applications.MobileNetV2(input_shape=(32, 32, 3), alpha=0.35, weights=None, classes=10,
                                         name="mobilenet_v2")
    calibration = np.random.default_rng(11).uniform(-1.0, 1.0, (16, 32, 32, 3)).astype("float32")
    for layer in net.layers:
        if isinstance(layer, keras.layers.BatchNormalization):
            layer.momentum = 0.0
    net(calibration, training=True)  # moving mean/variance := this batch's statistics
    return net


def inputs():
    return np.random.default_rng(7).uniform(-1.0, 1.0, (1, 32, 32, 3)).astype("float32")
