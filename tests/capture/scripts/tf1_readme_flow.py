"""A TF 1.15 reference script written the way the original precision_tool's README showed (tests/user_env).

Usage: python tf1_readme_flow.py OUT_DIR, with PRECISION_TOOL_DATA set to the workspace. The only
precision_tool lines are the README's; the rest is a plain TF1 graph-mode CNN (tf.layers / tf.nn). Writes
OUT_DIR/fetched.npz (what ``sess.run`` returned, by op name) and OUT_DIR/result.json (the graph's ops with their
types and inputs in creation order, which is topological, and what the user's session did afterwards).
"""
import json
import os
import sys

import precision_tool.tf_config as npu_tf_config  # the original README: first line of the script

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import numpy as np
import tensorflow as tf

OUT = sys.argv[1]
if not tf.__version__.startswith("1."):
    print(json.dumps({"skipped": f"TensorFlow {tf.__version__} is not 1.x"}))
    sys.exit(0)

config = tf.ConfigProto()
config = npu_tf_config.session_dump_config(config, action="dump")  # the NPU line; CPU TF ignores NpuOptimizer
npu_tf_config.seed_everything()

images = tf.placeholder(tf.float32, [2, 8, 8, 3], name="input")
conv = tf.layers.conv2d(images, 4, 3, padding="same", name="conv1")  # conv1/Conv2D -> conv1/BiasAdd
relu = tf.nn.relu(conv, name="relu1")
pool = tf.layers.max_pooling2d(relu, 2, 2, name="pool1")  # pool1/MaxPool
flat = tf.reshape(pool, [2, 4 * 4 * 4], name="flat")
logits = tf.layers.dense(flat, 3, name="fc")  # fc/MatMul -> fc/BiasAdd
y = tf.nn.softmax(logits, name="prob")
init = tf.global_variables_initializer()
feed = {images: np.random.RandomState(0).standard_normal((2, 8, 8, 3)).astype(np.float32)}
fetches = {t.op.name: t for t in (conv.op.inputs[0], conv, relu, pool, flat, logits.op.inputs[0], logits, y)}

with tf.Session(config=npu_tf_config.reference_session_config(config)) as sess:
    user_session = sess
    sess = npu_tf_config.sess_dump(sess)
    sess.run(init)
    out = sess.run(fetches, feed_dict=feed)
    again = y.eval(feed_dict=feed)  # the default session: the user's own, still open

np.savez(os.path.join(OUT, "fetched.npz"), **{name.replace("/", "__"): value for name, value in out.items()})
ops = [{"name": op.name, "type": op.type, "inputs": [t.name for t in op.inputs],
        "shapes": [t.shape.as_list() for t in op.outputs], "dtypes": [t.dtype.name for t in op.outputs]}
       for op in tf.get_default_graph().get_operations()]
result = {"tf_version": tf.__version__, "ops": ops, "eval_equals_run": bool(np.array_equal(again, out["prob"])),
          "wrapped_user_session": sess.session is user_session, "user_session_closed": user_session._closed,
          "import_seed": npu_tf_config.IMPORT_SEED}
with open(os.path.join(OUT, "result.json"), "w") as handle:
    json.dump(result, handle)
print(json.dumps({"ok": True}))
