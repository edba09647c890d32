"""TF2 / Keras captures for tests/capture: run in a subprocess, one TF import.

Usage: python eager_capture.py OUT_DIR. Workspace OUT_DIR/ws_keras holds two tfdbg v2 captures:
the first of a one-step model.fit, the second of a custom tf.function train step whose returned
values are saved to OUT_DIR/step_fetched.npz. OUT_DIR/result.json has the rest.
"""
import json
import os
import random
import sys

import precision_tool.tf_config as npu_tf_config  # first: sets TF_ENABLE_ONEDNN_OPTS=0

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import keras
import numpy as np
import tensorflow as tf
from tensorflow.python.framework import config as tf_framework_config

OUT = sys.argv[1]
os.environ["PRECISION_TOOL_DATA"] = os.path.join(OUT, "ws_keras")
RESULT = {"onednn_env": os.environ.get("TF_ENABLE_ONEDNN_OPTS")}

# seed_everything: the same draws after re-seeding, and deterministic ops on.
default = npu_tf_config.seed_everything(7)  # seeds only, as the original
summary = npu_tf_config.seed_everything(7, deterministic=True)
first = (random.random(), float(np.random.rand()), tf.random.uniform([3]).numpy().tolist())
npu_tf_config.seed_everything(7, deterministic=True)
second = (random.random(), float(np.random.rand()), tf.random.uniform([3]).numpy().tolist())
RESULT["seed"] = {"summary": summary, "default_deterministic": default["deterministic"], "same_draws": first == second,
                  "determinism": tf_framework_config.is_op_determinism_enabled(),
                  "pythonhashseed": os.environ.get("PYTHONHASHSEED"),
                  "graph_seed": tf.compat.v1.get_default_graph().seed}

# Loss-scale callback: an overflowing LossScaleOptimizer, then plain SGD (no loss scale on CPU float32).
x_small, y_small = np.ones((8, 3), "float32"), np.ones((8, 1), "float32")
lines = []
overflowing = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1)])
overflowing.compile(optimizer=keras.mixed_precision.LossScaleOptimizer(keras.optimizers.SGD(0.1)),
                    loss=lambda y, p: tf.reduce_mean(p) * float("inf"), jit_compile=False)
callback = npu_tf_config.loss_scale_callback(print_fn=lines.append)
overflowing.fit(x_small, y_small, batch_size=4, epochs=1, verbose=0, callbacks=[callback])
plain_lines = []
plain = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1)])
plain.compile(optimizer="sgd", loss="mse", jit_compile=False)
plain.fit(x_small, y_small, batch_size=4, epochs=1, verbose=0,
          callbacks=[npu_tf_config.loss_scale_callback(print_fn=plain_lines.append)])
RESULT["callback"] = {"overflow_lines": lines, "overflow_steps": callback.overflow_steps, "plain_lines": plain_lines}


def cnn():
    inputs = keras.Input((8, 8, 3))
    relu = keras.layers.Conv2D(4, 3, activation="relu", name="conv")(inputs)
    logits = keras.layers.Dense(3, name="fc")(keras.layers.Flatten()(relu))
    return keras.Model(inputs, [relu, logits], name="net")


x = np.random.default_rng(0).standard_normal((4, 8, 8, 3)).astype("float32")
y = np.array([0, 1, 2, 0], dtype="int32")

# Capture 1: model.fit, one step.
fit_root = npu_tf_config.enable_reference_dump()
fit_model = keras.Sequential([keras.Input((8, 8, 3)), keras.layers.Conv2D(4, 3, activation="relu", name="conv"),
                              keras.layers.Flatten(), keras.layers.Dense(3, name="fc")], name="seq")
fit_model.compile(optimizer="sgd", loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  jit_compile=False)
history = fit_model.fit(x, y, batch_size=4, epochs=1, verbose=0)
npu_tf_config.disable_reference_dump()

# Capture 2: a custom training step; it returns the values the reference must hold.
step_root = npu_tf_config.enable_reference_dump()
model = cnn()
optimizer = keras.optimizers.SGD(0.1)
loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)


@tf.function
def train_step(images, labels):
    with tf.GradientTape() as tape:
        relu, logits = model(images, training=True)
        loss = loss_fn(labels, logits)
    grads = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(zip(grads, model.trainable_variables))
    return loss, relu, logits


loss, relu, logits = train_step(tf.constant(x), tf.constant(y))
np.savez(os.path.join(OUT, "step_fetched.npz"), loss=loss.numpy(), relu=relu.numpy(), logits=logits.numpy())
graph = train_step.get_concrete_function(tf.constant(x), tf.constant(y)).graph
ops = {op.name: op.type for op in graph.get_operations()}
# The function returns Identity copies; the reference holds the ops that computed the values.
sources = [t.op.inputs[0] if t.op.type == "Identity" else t for t in graph.outputs]
outputs = {name: [sources[i].op.name, sources[i].value_index] for i, name in enumerate(("loss", "relu", "logits"))}
RESULT["keras"] = {"fit_root": fit_root, "step_root": step_root, "fit_loss": history.history["loss"][0],
                   "step_ops": ops, "step_outputs": outputs}
# No disable_reference_dump(): the files must be complete at exit too.

with open(os.path.join(OUT, "result.json"), "w") as handle:
    json.dump(RESULT, handle)
