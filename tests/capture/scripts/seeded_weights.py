"""Random weights drawn by a script that never calls seed_everything (tests/capture/test_ref_seed.py).

Usage: python seeded_weights.py graph|eager auto|explicit. Prints one JSON line: Python's and numpy's next
draws, TensorFlow's random values and initial weights, and ``npu_tf_config.IMPORT_SEED``.

``auto`` relies on the seeding done by ``import precision_tool.tf_config``. ``explicit`` (run with
``PRECISION_TOOL_SEED=off``) seeds by hand with 2022 through Python's, numpy's and TensorFlow's own calls,
as a user would: the independent source the ``auto`` values are checked against. ``graph`` builds
``tf.compat.v1`` variables in the default graph (after ``disable_eager_execution()``, the TF1 way on TF 2);
``eager`` draws eagerly, builds a Keras Dense layer and shuffles a ``tf.data`` dataset with a random map,
counting tf.data's "Seed N from outer graph" warnings (TF 2; TF 1.x prints ``{"skipped": ...}``).
"""
import json
import os
import random
import sys
import warnings

import precision_tool.tf_config as npu_tf_config  # first, as in a user's script

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import numpy as np
import tensorflow as tf

SEED = 2022
mode, seeding = sys.argv[1], sys.argv[2]
explicit = seeding == "explicit"
if explicit:
    random.seed(SEED)
    np.random.seed(SEED)

outer_seed_warnings = None
if mode == "graph":
    tf.compat.v1.disable_eager_execution()
    if explicit:
        tf.compat.v1.set_random_seed(SEED)
    weights = tf.compat.v1.get_variable("w", [2, 3])  # glorot_uniform, op seed from the graph seed
    draws = tf.random.uniform([3], name="draws")
    with tf.compat.v1.Session() as sess:
        sess.run(tf.compat.v1.global_variables_initializer())
        tf_values = [np.asarray(v).ravel().tolist() for v in sess.run([weights, draws])]
elif tf.__version__.startswith("1."):  # TF 1.x runs graphs; its eager mode is not what TF1 scripts use
    print(json.dumps({"skipped": f"eager mode on TensorFlow {tf.__version__}"}))
    sys.exit(0)
else:
    if explicit:
        tf.random.set_seed(SEED)
    draws = tf.random.uniform([3]).numpy()
    layer = tf.keras.layers.Dense(3)
    layer.build((None, 2))
    with warnings.catch_warnings(record=True) as caught:  # the filters in force stay
        dataset = tf.data.Dataset.range(6).shuffle(6).map(lambda v: tf.cast(v, tf.float32) + tf.random.uniform([]))
        shuffled = [float(v) for v in dataset]
    tf_values = [np.asarray(layer.kernel).ravel().tolist(), draws.tolist(), shuffled]
    outer_seed_warnings = sum("from outer graph" in str(w.message) for w in caught)

print(json.dumps({"python": random.random(), "numpy": float(np.random.rand()), "tf": tf_values,
                  "import_seed": npu_tf_config.IMPORT_SEED, "tf_version": tf.__version__,
                  "outer_seed_warnings": outer_seed_warnings}))
