"""A small CNN for ``precision_tool emulate`` (and ``sample_dumps/cnn_workspace``).

raw pixels (0..255) -> conv blocks -> max pool -> a residual block -> a 1x1 conv whose pre-activation exceeds
float16 in one channel (clamped by ReLU6, so only an overflow check sees it) -> global average pool -> dense ->
softmax. The residual branch is small next to the skip path, so noise planted in ``res_conv`` stays
local: the ops after it still agree with float32.

A MODEL_SCRIPT defines ``model()`` (here a Keras model) and ``inputs()`` (the batch).
"""
import numpy as np
import keras


def model():
    image = keras.Input((16, 16, 3), batch_size=2, name="image")
    x = keras.layers.Conv2D(16, 3, padding="same", activation="relu", name="conv1",
                            bias_initializer=keras.initializers.RandomNormal(stddev=0.05))(image)
    x = keras.layers.Conv2D(16, 3, padding="same", activation="relu", name="conv2",
                            bias_initializer=keras.initializers.RandomNormal(stddev=0.05))(x)
    x = keras.layers.MaxPooling2D(name="pool1")(x)
    branch = keras.layers.Conv2D(16, 3, padding="same", name="res_conv",
                                 kernel_initializer=keras.initializers.VarianceScaling(0.01),
                                 bias_initializer=keras.initializers.RandomNormal(stddev=0.01))(x)
    x = keras.layers.Add(name="res_add")([x, branch])
    x = keras.layers.ReLU(name="res_relu")(x)
    hot = keras.layers.Conv2D(24, 1, activation="relu6", name="conv3",
                              kernel_initializer=_one_hot_channel_kernel(24, channel=5, gain=2500))(x)
    x = keras.layers.GlobalAveragePooling2D(name="gap")(hot)
    x = keras.layers.Dense(32, activation="relu", name="fc1")(x)
    x = keras.layers.Dense(10, name="fc2")(x)
    probabilities = keras.layers.Softmax(name="prob")(x)
    return keras.Model(image, probabilities, name="small_cnn")


def _one_hot_channel_kernel(filters, channel, gain):
    """Glorot-like 1x1 kernel whose output ``channel`` is scaled by ``gain`` (un-normalised features)."""
    def initializer(shape, dtype=None):
        base = keras.initializers.GlorotUniform(seed=11)(shape, dtype="float32")
        scale = np.ones(shape[-1], dtype="float32")
        scale[channel] = gain
        return base * scale
    return initializer


def inputs():
    return np.random.default_rng(2024).uniform(0.0, 255.0, (2, 16, 16, 3)).astype("float32")
