"""A TF2 custom training step, as TF2 training loops write it: ``model()`` returns a function that runs a Keras
CNN with ``training=True`` under ``tf.GradientTape`` and returns the loss and the gradients. The batch norms run in
training mode, so the step also writes their moving averages (``AssignVariableOp``/``AssignSubVariableOp``).
``PRECISION_TOOL_KERAS`` picks ``keras`` (Keras 3, default) or ``tf_keras`` (Keras 2); ``PRECISION_TOOL_APPLY=1``
also applies the gradients with SGD (momentum 0.9) inside the step."""
import importlib
import os

import numpy as np
import tensorflow as tf

keras = importlib.import_module(os.environ.get("PRECISION_TOOL_KERAS", "keras"))
APPLY = os.environ.get("PRECISION_TOOL_APPLY") == "1"


def _network():
    image = keras.Input((8, 8, 3), name="image")
    x = keras.layers.Conv2D(8, 3, padding="same", use_bias=False, name="conv1")(image)
    x = keras.layers.BatchNormalization(name="bn1")(x)
    x = keras.layers.ReLU(name="relu1")(x)
    x = keras.layers.Conv2D(16, 3, padding="same", use_bias=False, name="conv2")(x)
    x = keras.layers.BatchNormalization(name="bn2")(x)
    x = keras.layers.ReLU(name="relu2")(x)
    x = keras.layers.GlobalAveragePooling2D(name="gap")(x)
    return keras.Model(image, keras.layers.Dense(10, name="logits")(x), name="tf2_step")


def model():
    net = _network()
    loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    sgd = getattr(keras.optimizers, "SGD", None) or tf.keras.optimizers.SGD  # Keras 2.6's package: tf.keras has it
    optimizer = sgd(0.05, momentum=0.9) if APPLY else None

    def train_step(image, label):
        with tf.GradientTape() as tape:
            logits = net(image, training=True)
            loss = loss_fn(label, logits)
        gradients = tape.gradient(loss, net.trainable_variables)
        if optimizer is not None:
            optimizer.apply_gradients(zip(gradients, net.trainable_variables))
        return [loss] + list(gradients)

    return train_step


def inputs():
    rng = np.random.default_rng(5)
    return rng.uniform(-1, 1, (4, 8, 8, 3)).astype("float32"), rng.integers(0, 10, (4,)).astype("int32")
