"""tfdbg v1 reference captures that run on TF 1.15, 2.6 and 2.21 alike (tests/capture/test_ref_session.py).

Usage: python v1_reference_capture.py OUT_DIR. Each scenario uses its own workspace OUT_DIR/ws_<name> and
writes what TensorFlow returned to OUT_DIR/result.json:

* ``grappler_on``: the original README's pattern, ``with tf.Session() as sess: sess = sess_dump(sess)``, on a
  default (Grappler on) session; then ``relu.eval()`` on the default session. A second Grappler-on session
  is wrapped too (the warning must not repeat).
* ``reference``: the same with ``config=reference_session_config()``.
* ``monitored`` and ``estimator``: one SGD step of a linear model with constant initial weights (its values
  are derived by hand in the test) under ``MonitoredTrainingSession`` / ``tf.estimator.Estimator`` with
  ``hooks=[estimator_dump()]``; the estimator part records ``skipped`` where ``tf.estimator`` is gone. A second
  estimator keeps its default (Grappler on) session config, which the hook must warn about.
"""
import json
import os
import sys
import warnings

import precision_tool.tf_config as npu_tf_config  # first: TF_ENABLE_ONEDNN_OPTS=0, import seed

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import numpy as np
import tensorflow as tf

tf.compat.v1.disable_eager_execution()
v1 = tf.compat.v1
OUT = sys.argv[1]
RESULT = {"tf_version": tf.__version__}
IMAGE = np.arange(2 * 6 * 6 * 3, dtype=np.float32).reshape(2, 6, 6, 3) / 100.0 - 0.5
X = np.array([[1.0, 2.0], [3.0, 4.0]], np.float32)
Y = np.array([[1.0], [0.0]], np.float32)
W0, B0, LEARNING_RATE = [[0.5], [-1.0]], 0.25, 0.1


def workspace(name):
    os.environ["PRECISION_TOOL_DATA"] = os.path.join(OUT, f"ws_{name}")


def conv_block():
    x = v1.placeholder(tf.float32, IMAGE.shape, name="x")
    w = v1.get_variable("w", [3, 3, 3, 4])
    b = v1.get_variable("b", [4], initializer=v1.constant_initializer(0.1))
    conv = tf.nn.conv2d(x, w, [1, 1, 1, 1], "SAME", name="conv")
    relu = tf.nn.relu(tf.nn.bias_add(conv, b, name="bias"), name="relu")
    return x, relu


def linear_step(features, labels):
    """pred = x @ w + b, loss = mean((pred - y)^2), one SGD step; names: pred, loss, train."""
    w = v1.get_variable("w", [2, 1], initializer=v1.constant_initializer(W0))
    b = v1.get_variable("b", [1], initializer=v1.constant_initializer(B0))
    pred = tf.add(tf.matmul(features, w, name="matmul"), b, name="pred")
    loss = tf.reduce_mean(tf.square(pred - labels), name="loss")
    train = v1.train.GradientDescentOptimizer(LEARNING_RATE).minimize(
        loss, global_step=v1.train.get_or_create_global_step(), name="train")
    return pred, loss, train


caught = []
warnings.showwarning = lambda message, category, *args, **kwargs: caught.append(f"{category.__name__}: {message}")
warnings.simplefilter("always")

# grappler_on
workspace("grappler_on")
with tf.Graph().as_default():
    x, relu = conv_block()
    init = v1.global_variables_initializer()
    with v1.Session() as sess:
        original = sess
        sess = npu_tf_config.sess_dump(sess)
        sess.run(init)
        fetched = sess.run(relu, {x: IMAGE})
        evaluated = relu.eval({x: IMAGE})  # the default session is the user's own, still open
        second = npu_tf_config.sess_dump(v1.Session())
        RESULT["grappler_on"] = {"same_session": sess.session is original,
                                 "default_is_original": v1.get_default_session() is original,
                                 "eval_equal": bool(np.array_equal(evaluated, fetched)), "relu": relu.op.name,
                                 "capture": sess._session_root}
        np.save(os.path.join(OUT, "grappler_on_relu.npy"), fetched)
        second.close()
    RESULT["grappler_on"]["closed_after_with"] = original._closed

# reference
workspace("reference")
with tf.Graph().as_default():
    x, relu = conv_block()
    init = v1.global_variables_initializer()
    with v1.Session(config=npu_tf_config.reference_session_config()) as sess:
        sess = npu_tf_config.sess_dump(sess)
        sess.run(init)
        np.save(os.path.join(OUT, "reference_relu.npy"), sess.run(relu, {x: IMAGE}))

# monitored
workspace("monitored")
with tf.Graph().as_default():
    pred, loss, train = linear_step(tf.constant(X, name="features"), tf.constant(Y, name="labels"))
    with v1.train.MonitoredTrainingSession(hooks=[npu_tf_config.estimator_dump()],
                                           config=npu_tf_config.reference_session_config()) as mon:
        values = mon.run({"pred": pred, "loss": loss, "train": train})
    RESULT["monitored"] = {"pred": values["pred"].tolist(), "loss": float(values["loss"])}

# estimator
workspace("estimator")
estimator_module = getattr(tf, "estimator", None)
if estimator_module is None or not hasattr(estimator_module, "Estimator"):
    RESULT["estimator"] = {"skipped": f"tf.estimator does not exist in TensorFlow {tf.__version__}"}
else:
    def model_fn(features, labels, mode):
        _, loss, train = linear_step(features, labels)
        return estimator_module.EstimatorSpec(mode, loss=loss, train_op=train)

    def input_fn():
        return tf.constant(X, name="features"), tf.constant(Y, name="labels")

    run_config = estimator_module.RunConfig(model_dir=os.path.join(OUT, "model"),
                                            session_config=npu_tf_config.reference_session_config())
    estimator = estimator_module.Estimator(model_fn, config=run_config)
    estimator.train(input_fn, steps=1, hooks=[npu_tf_config.estimator_dump()])
    RESULT["estimator"] = {"w": estimator.get_variable_value("w").tolist(),
                           "b": estimator.get_variable_value("b").tolist()}
    # the estimator's default session config runs Grappler: the hook says so (once)
    workspace("estimator_grappler")
    plain = estimator_module.Estimator(model_fn, config=estimator_module.RunConfig(
        model_dir=os.path.join(OUT, "model_grappler")))
    plain.train(input_fn, steps=1, hooks=[npu_tf_config.estimator_dump()])
RESULT["warnings"] = list(caught)

with open(os.path.join(OUT, "result.json"), "w") as handle:
    json.dump(RESULT, handle)
