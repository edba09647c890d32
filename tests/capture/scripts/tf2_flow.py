"""The TF2 user's reference capture, for tests/user_env/test_tf2_flow.py: a Keras CNN called in a tf.function.

Usage: python tf2_flow.py OUT_DIR (PRECISION_TOOL_DATA names the workspace). Writes OUT_DIR/result.json: the
capture folder, TensorFlow's version and the function graph's ops as TensorFlow lists them (name, type, data
inputs), debug ops included -- the independent record the kept graph is checked against.
"""
import json
import os
import sys

import precision_tool.tf_config as npu_tf_config  # first: sets TF_ENABLE_ONEDNN_OPTS=0

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import numpy as np
import tensorflow as tf

OUT = sys.argv[1]
keras = tf.keras
npu_tf_config.seed_everything(3)
inputs = keras.Input((8, 8, 3), name="image")
hidden = keras.layers.Conv2D(4, 3, activation="relu", name="conv")(inputs)
logits = keras.layers.Dense(3, name="fc")(keras.layers.Flatten()(hidden))
model = keras.Model(inputs, logits, name="net")

root = npu_tf_config.enable_reference_dump()


@tf.function
def forward(images):
    return model(images, training=False)


images = tf.math.multiply(np.random.default_rng(0).standard_normal((2, 8, 8, 3)).astype("float32"), 1.0)  # eager
forward(images)
npu_tf_config.disable_reference_dump()
graph = forward.get_concrete_function(images).graph
ops = [{"name": op.name, "type": op.type, "inputs": [t.name for t in op.inputs]} for op in graph.get_operations()]
with open(os.path.join(OUT, "result.json"), "w") as handle:
    json.dump({"root": root, "tf_version": tf.__version__, "ops": ops}, handle)
