"""Keras 2 (``tf_keras``) MobileNetV2 at 32x32, width 0.35, random weights: 52 FusedBatchNormV3 ops, after
Conv2D (fused by ConvBatchnormFusionPass) and after DepthwiseConv2D (BNInfer on its own).

As in sample_dumps/models/mobilenet.py, the batch-norm statistics are calibrated by one training-mode
pass with momentum 0 on a random batch; fresh statistics (mean 0, variance 1) let a random network's
activations shrink into float16's subnormals block after block."""
import numpy as np
import tf_keras as keras


def model():
    net = keras.applications.MobileNetV2(input_shape=(32, 32, 3), alpha=0.35, weights=None, classes=10)
    batch_norms = [layer for layer in net.layers if isinstance(layer, keras.layers.BatchNormalization)]
    for layer in batch_norms:
        layer.momentum = 0.0
    net(np.random.default_rng(11).uniform(-1.0, 1.0, (16, 32, 32, 3)).astype("float32"), training=True)
    return net


def inputs():
    return np.random.default_rng(7).uniform(-1.0, 1.0, (1, 32, 32, 3)).astype("float32")
