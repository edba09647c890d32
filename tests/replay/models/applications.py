"""keras.applications networks with random weights and calibrated batch-norm statistics, for the slow
replay tests. ``PRECISION_TOOL_APP`` names the network (``ResNet50``, ``EfficientNetB0``, ``VGG16``, ...),
``PRECISION_TOOL_APP_SIZE`` the input size (64).

Fresh batch-norm statistics (mean 0, variance 1) let a random deep network's activations shrink or grow
block after block until float16 cannot hold them; one training-mode pass with momentum 0 on a random
batch sets them to that batch's statistics, as training would (see sample_dumps/models/mobilenet.py).
"""
import os

import numpy as np
import keras

SIZE = int(os.environ.get("PRECISION_TOOL_APP_SIZE", "64"))


def model():
    keras.backend.clear_session()  # auto-named layers (InceptionV3's conv2d_N) get the same names in every build
    build = getattr(keras.applications, os.environ.get("PRECISION_TOOL_APP", "ResNet50"))
    net = build(input_shape=(SIZE, SIZE, 3), weights=None, classes=10)
    batch_norms = [layer for layer in net.layers if isinstance(layer, keras.layers.BatchNormalization)]
    if batch_norms:
        for layer in batch_norms:
            layer.momentum = 0.0
        net(np.random.default_rng(11).uniform(0, 1, (8, SIZE, SIZE, 3)).astype("float32"), training=True)
    return net


def inputs():
    return np.random.default_rng(7).uniform(0, 1, (1, SIZE, SIZE, 3)).astype("float32")
