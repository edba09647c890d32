"""The original tool's NpuPrintLossScaleCallBack under model.fit (tests/capture/test_ref_callbacks.py).

Usage: python loss_scale_print.py tf.keras|tf_keras. Prints one JSON line ``{scenario: [lines printed]}`` and
the Keras the callback class was built on.

``tf.keras`` uses whatever ``tf.keras`` is (TF 1.15's own, Keras 2.6, Keras 3 on TF 2.21, or tf_keras with
``TF_USE_LEGACY_KERAS=1``); ``tf_keras`` imports ``tf_keras`` directly while ``tf.keras`` is Keras 3. Each
scenario trains two steps of batch 2:

* ``overflow``: Keras' ``LossScaleOptimizer`` and an infinite loss: every step overflows and halves the scale;
* ``npu_like``: an object with ``loss_scale`` and ``last_step_finite`` variables, as NPU's
  ``NPULossScaleOptimizer`` has them (the model trains with plain SGD);
* ``plain``: plain SGD, which has neither value.
"""
import contextlib
import io
import json
import os
import sys

import precision_tool.tf_config as npu_tf_config  # first, as in a user's script

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import numpy as np
import tensorflow as tf

FLAVOUR = sys.argv[1]
if FLAVOUR == "tf_keras":
    import tf_keras as keras
else:
    keras = tf.keras
TF1 = tf.__version__.startswith("1.")


def loss_scale_optimizer():
    sgd = keras.optimizers.SGD(0.1)
    mixed = keras.mixed_precision
    if TF1:  # TF 1.15: the experimental API, whose loss_scale is a LossScale object
        return mixed.experimental.LossScaleOptimizer(sgd, "dynamic")
    return mixed.LossScaleOptimizer(sgd)


def variable(value):
    return keras.backend.variable(value) if TF1 else tf.Variable(value)


class NpuLike:
    """What the original callback reads from NPU's NPULossScaleOptimizer."""

    def __init__(self):
        self.loss_scale = variable(1024.0)
        self.last_step_finite = variable(False)


def fit(optimizer, loss, callback_optimizer):
    model = keras.Sequential([keras.layers.Dense(1, input_shape=(3,))])
    model.compile(optimizer=optimizer, loss=loss)
    printed = io.StringIO()
    callback = npu_tf_config.NpuPrintLossScaleCallBack(callback_optimizer)
    with contextlib.redirect_stdout(printed):
        model.fit(np.ones((4, 3), "float32"), np.ones((4, 1), "float32"), batch_size=2, epochs=1, verbose=0,
                  callbacks=[callback])
    return printed.getvalue().splitlines(), callback


def infinite_loss(y_true, y_pred):
    return tf.reduce_mean(y_pred) * float("inf")


result = {"tf_version": tf.__version__}
mixed = loss_scale_optimizer()
result["overflow"], callback = fit(mixed, infinite_loss, mixed)
result["callback_base"] = [k.__module__ for k in type(callback).__mro__ if k.__name__ == "Callback"][0]
result["is_original_class"] = isinstance(callback, npu_tf_config.NpuPrintLossScaleCallBack)
if FLAVOUR != "tf_keras":  # NpuLike belongs to no Keras: its callback gets tf.keras's Callback (Keras 3 here)
    result["npu_like"], _ = fit(keras.optimizers.SGD(0.1), "mse", NpuLike())
sgd = keras.optimizers.SGD(0.1)
result["plain"], _ = fit(sgd, "mse", sgd)
print(json.dumps(result))
