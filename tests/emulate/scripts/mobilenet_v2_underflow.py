"""Keras 2 (``tf_keras``) MobileNetV2 at 96x96 with random weights and fresh batch-norm statistics (mean 0, variance
1): block after block its activations shrink, until from block 7 on they lie below float16's smallest normal
(6.1e-5) -- float16 underflow, which no op's kernel causes (issue 37, case 5)."""
import numpy as np
import tf_keras as keras


def model():
    return keras.applications.MobileNetV2(input_shape=(96, 96, 3), weights=None, classes=10)


def inputs():
    return np.random.default_rng(7).uniform(-1.0, 1.0, (1, 96, 96, 3)).astype("float32")
