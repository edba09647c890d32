"""Keras reference captures under real tfdbg v2, for tests/capture/test_keras_names.py.

Usage: python keras_names_capture.py OUT_DIR FLAVOUR, FLAVOUR one of ``keras`` (the ``keras`` package:
Keras 3 on TF 2.21), ``tf_keras`` (Keras 2 on TF 2.21) or ``tf.keras`` (Keras 2 inside TF 2.6).

One functional model ``net``: Input ``image`` (2x4x4x2) -> Conv2D ``conv`` (3 filters, 3x3) -> Flatten
-> Dense ``fc`` (2). Each capture gets its own tfdbg v2 folder under OUT_DIR with a names file written
as a capture helper would (:func:`record_names`):

* ``predict``: ``model.predict`` on one batch;
* ``forward``: ``@tf.function forward(images)`` called twice, on batches from a ``tf.data`` dataset;
* ``tape``: one GradientTape train step ``step(images, labels)`` on a ``tf.data`` batch;
* ``fit``: ``model.fit``, one step;
* ``fit_predict``: ``model.fit`` one step on ``x``, then ``model.predict`` on another batch ``x2``, in one
  capture (the model input must be fit's batch: fit's ops keep the bare names);
* ``nested``: ``outer(t)`` calling ``inner`` twice, ``outer`` called twice.

OUT_DIR/result.json holds what TF itself computed (weights before each capture, inputs, outputs,
the variables' handle ids) for the test to compare with the converted reference.
"""
import json
import os
import sys

import precision_tool.tf_config as npu_tf_config  # first: sets TF_ENABLE_ONEDNN_OPTS=0

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import numpy as np
import tensorflow as tf

OUT, FLAVOUR = sys.argv[1], sys.argv[2]
if FLAVOUR == "keras":
    import keras
elif FLAVOUR == "tf_keras":
    import tf_keras as keras
else:
    keras = tf.keras


def tf_variable(variable):
    """The tf.Variable behind a Keras 3 variable (``.value``), or the variable itself (Keras 2)."""
    inner = getattr(variable, "value", None)
    return inner if hasattr(inner, "handle") else variable


def record_names(root, model, optimizer=None):
    """The public helper writes the names file; returns {variable name: handle id} as TF itself says."""
    npu_tf_config.record_reference_names(model, optimizer)  # into the running capture (root)
    extra = getattr(optimizer, "variables", ())
    variables = list(model.variables) + list(extra() if callable(extra) else extra)  # Keras 2: a method
    return {tf_variable(v).name.split(":")[0]: tf_variable(v).handle._id for v in variables}


def build():
    image = keras.Input((4, 4, 2), name="image")
    hidden = keras.layers.Conv2D(3, 3, name="conv")(image)
    return keras.Model(image, keras.layers.Dense(2, name="fc")(keras.layers.Flatten(name="flat")(hidden)), name="net")


def weights(model):
    return {tf_variable(v).name.split(":")[0]: np.asarray(v).tolist() for v in model.weights}


def capture(name):
    root = os.path.join(OUT, name)
    npu_tf_config.enable_reference_dump(root)
    return root


keras.utils.set_random_seed(3) if hasattr(keras.utils, "set_random_seed") else tf.random.set_seed(3)
x = (np.arange(2 * 4 * 4 * 2, dtype="float32").reshape(2, 4, 4, 2) - 16.0) / 8.0
x2 = x[::-1] * 0.5
y = np.array([[1.0, -1.0], [0.5, 2.0]], "float32")
result = {"tf_version": tf.__version__, "flavour": FLAVOUR, "x": x.tolist(), "x2": x2.tolist()}

# predict
root = capture("predict")
model = build()
result["predict"] = {"root": root, "handles": record_names(root, model), "weights": weights(model),
                     "output": model.predict(x, batch_size=2, verbose=0).tolist()}
npu_tf_config.disable_reference_dump()

# forward twice, fed from tf.data (TF 2.21 records the eager IteratorGetNext that made each argument)
root = capture("forward")
model = build()


@tf.function
def forward(images):
    return model(images, training=False)


outputs = [forward(images).numpy().tolist() for images in tf.data.Dataset.from_tensor_slices(np.stack([x, x2])).batch(1)
           .map(lambda batch: batch[0])]
result["forward"] = {"root": root, "handles": record_names(root, model), "weights": weights(model), "outputs": outputs}
npu_tf_config.disable_reference_dump()

# one GradientTape step
root = capture("tape")
model = build()
optimizer = keras.optimizers.SGD(0.1)
optimizer.build(model.trainable_variables) if hasattr(optimizer, "build") and FLAVOUR == "keras" else None
before = weights(model)


@tf.function
def step(images, labels):
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(tf.square(model(images, training=True) - labels))
    optimizer.apply_gradients(zip(tape.gradient(loss, model.trainable_variables), model.trainable_variables))
    return loss


for images, labels in tf.data.Dataset.from_tensor_slices((x, y)).batch(2):
    loss = float(step(images, labels))
result["tape"] = {"root": root, "handles": record_names(root, model, optimizer), "weights": before,
                  "after": weights(model), "loss": loss}
npu_tf_config.disable_reference_dump()

# model.fit, one step
root = capture("fit")
model = build()
model.compile(optimizer=keras.optimizers.SGD(0.1), loss="mse", **({"jit_compile": False} if FLAVOUR == "keras" else {}))
before = weights(model)
history = model.fit(x, y, batch_size=2, epochs=1, shuffle=False, verbose=0)
result["fit"] = {"root": root, "handles": record_names(root, model), "weights": before,
                 "loss": history.history["loss"][0]}
npu_tf_config.disable_reference_dump()

# model.fit one step, then model.predict on another batch, in one capture
root = capture("fit_predict")
model = build()
model.compile(optimizer=keras.optimizers.SGD(0.1), loss="mse", **({"jit_compile": False} if FLAVOUR == "keras" else {}))
handles = record_names(root, model)
model.fit(x, y, batch_size=2, epochs=1, shuffle=False, verbose=0)
result["fit_predict"] = {"root": root, "handles": handles,
                         "output": model.predict(x2, batch_size=2, verbose=0).tolist()}
npu_tf_config.disable_reference_dump()

# nested and repeated functions
root = capture("nested")


@tf.function
def inner(t):
    return tf.nn.relu(t, name="relu") * 2.0


@tf.function
def outer(t):
    first = inner(t)
    return first + inner(first - 3.0)


nested_outputs = [outer(tf.constant(v)).numpy().tolist() for v in ([-1.0, 2.0], [3.0, -4.0])]
result["nested"] = {"root": root, "outputs": nested_outputs}
npu_tf_config.disable_reference_dump()

with open(os.path.join(OUT, "result.json"), "w") as handle:
    json.dump(result, handle)
