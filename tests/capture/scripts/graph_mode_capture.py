"""Graph-mode (tf.compat.v1) captures for tests/capture: run in a subprocess, one TF import.

Usage: python graph_mode_capture.py OUT_DIR. Writes OUT_DIR/result.json and the fetched values as
OUT_DIR/<scenario>_fetched.npz; each scenario uses its own workspace OUT_DIR/ws_<scenario>.
"""
import json
import os
import sys
import warnings

import precision_tool.tf_config as npu_tf_config  # first: sets TF_ENABLE_ONEDNN_OPTS=0

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import numpy as np
import tensorflow as tf
from tensorflow.python import debug as tf_debug

tf.compat.v1.disable_eager_execution()
OUT = sys.argv[1]
RESULT = {"onednn_env": os.environ.get("TF_ENABLE_ONEDNN_OPTS")}
FEED_X = np.random.default_rng(0).standard_normal((2, 8, 8, 3)).astype(np.float32)
FEED_Y = np.array([0, 2], dtype=np.int32)


def workspace(name):
    os.environ["PRECISION_TOOL_DATA"] = os.path.join(OUT, f"ws_{name}")


def small_cnn():
    """conv1/{conv,bias,relu} -> pool -> fc/{matmul,logits} -> loss, SGD step. Returns tensors."""
    x = tf.compat.v1.placeholder(tf.float32, [2, 8, 8, 3], name="x")
    y = tf.compat.v1.placeholder(tf.int32, [2], name="y")
    with tf.compat.v1.variable_scope("conv1"):
        w = tf.compat.v1.get_variable("w", [3, 3, 3, 4])
        b = tf.compat.v1.get_variable("b", [4], initializer=tf.compat.v1.constant_initializer(0.1))
        conv = tf.nn.conv2d(x, w, 1, "SAME", name="conv")
        bias = tf.nn.bias_add(conv, b, name="bias")
        relu = tf.nn.relu(bias, name="relu")
    pool = tf.nn.max_pool2d(relu, 2, 2, "VALID", name="pool")
    flat = tf.reshape(pool, [2, -1], name="flat")
    with tf.compat.v1.variable_scope("fc"):
        w2 = tf.compat.v1.get_variable("w", [64, 3])
        b2 = tf.compat.v1.get_variable("b", [3])
        logits = tf.nn.bias_add(tf.matmul(flat, w2, name="matmul"), b2, name="logits")
    loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits), name="loss")
    train = tf.compat.v1.train.GradientDescentOptimizer(0.1).minimize(loss, name="train")
    return dict(x=x, y=y, conv=conv, bias=bias, relu=relu, logits=logits, loss=loss, train=train)


def graph_ops(graph):
    return {op.name: op.type for op in graph.get_operations()}


def fetch_names(t):
    return {k: t[k].op.name for k in ("conv", "bias", "relu", "logits", "loss")}


def save(name, values):
    np.savez(os.path.join(OUT, f"{name}_fetched.npz"), **values)


# A. The documented pattern: `with Session(config=...) as sess: sess = sess_dump(sess)`; the user's session
#    stays open and stays the default session, so `.eval()` still works after the dumped runs.
workspace("session")
graph = tf.Graph()
with graph.as_default():
    tf.compat.v1.set_random_seed(0)
    t = small_cnn()
    init = tf.compat.v1.global_variables_initializer()
    feed = {t["x"]: FEED_X, t["y"]: FEED_Y}
    with tf.compat.v1.Session(config=npu_tf_config.reference_session_config()) as sess:
        original = sess
        sess = npu_tf_config.sess_dump(sess)
        sess.run(init)
        keys = ["loss", "conv", "bias", "relu", "logits"]
        fetched = sess.run([t[k] for k in keys] + [t["train"]], feed)
        save("session", dict(zip(keys, fetched[:-1])))
        evaluated = t["loss"].eval(feed)  # the default session: the user's, open and undumped
        rewrite = sess.session._config.graph_options.rewrite_options
        RESULT["session"] = {"ops": graph_ops(graph), "fetches": fetch_names(t),
                             "grappler_off": bool(rewrite.disable_meta_optimizer),
                             "same_session": sess.session is original, "default_is_original":
                             tf.compat.v1.get_default_session() is original,
                             "eval_after_step": float(evaluated), "loss_of_step": float(fetched[0])}

# B. MonitoredTrainingSession with the hook and the reference config.
workspace("monitored")
graph = tf.Graph()
with graph.as_default():
    tf.compat.v1.set_random_seed(1)
    t = small_cnn()
    with tf.compat.v1.train.MonitoredTrainingSession(
            hooks=[npu_tf_config.estimator_dump()], config=npu_tf_config.reference_session_config()) as mon:
        keys = ["loss", "relu"]
        fetched = mon.run([t[k] for k in keys] + [t["train"]], {t["x"]: FEED_X, t["y"]: FEED_Y})
        save("monitored", dict(zip(keys, fetched[:-1])))
    RESULT["monitored"] = {"ops": graph_ops(graph), "fetches": fetch_names(t)}

# C. The hook warns when MonitoredTrainingSession keeps Grappler on; D. sess_dump warns once when the session runs
#    Grappler, and still wraps that very session: its dump then holds the fused op under the Relu's name.
workspace("warnings")
graph = tf.Graph()
with graph.as_default():
    t = small_cnn()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with tf.compat.v1.train.MonitoredTrainingSession(hooks=[npu_tf_config.estimator_dump()]):
            pass
        sess = tf.compat.v1.Session()
        sess.run(tf.compat.v1.global_variables_initializer())
        wrapped = npu_tf_config.sess_dump(sess)
        relu_fused = wrapped.run(t["relu"], {t["x"]: FEED_X})
        again = npu_tf_config.sess_dump(tf.compat.v1.Session())  # a second Grappler-on session: no second warning
        RESULT["grappler_on"] = {"same_session": wrapped.session is sess, "still_open": not sess._closed,
                                 "relu": t["relu"].op.name, "capture": wrapped._session_root}
        np.savez(os.path.join(OUT, "grappler_on_fetched.npz"), relu=relu_fused)
        again.close()
        sess.close()
    RESULT["warnings"] = [f"{w.category.__name__}: {w.message}" for w in caught
                          if issubclass(w.category, npu_tf_config.CaptureWarning)]

# E. The NPU-side config runs on CPU, and its Grappler settings keep the op names.
workspace("npu")
graph = tf.Graph()
with graph.as_default():
    tf.compat.v1.set_random_seed(2)
    t = small_cnn()
    config = npu_tf_config.session_dump_config(tf.compat.v1.ConfigProto(), action="dump|fusion_off")
    with tf.compat.v1.Session(config=config) as sess:
        sess.run(tf.compat.v1.global_variables_initializer())
        root = os.path.join(OUT, "npu_cpu_tfdbg")
        loss, _ = tf_debug.DumpingDebugWrapperSession(sess, root).run([t["loss"], t["train"]],
                                                                       {t["x"]: FEED_X, t["y"]: FEED_Y})
    RESULT["npu"] = {"loss": float(loss), "fetches": fetch_names(t), "tfdbg_root": root,
                     "env": {k: os.environ.get(k) for k in ("DUMP_GE_GRAPH", "DUMP_GRAPH_LEVEL", "DUMP_GRAPH_PATH")}}

with open(os.path.join(OUT, "result.json"), "w") as handle:
    json.dump(RESULT, handle)
