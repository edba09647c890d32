"""Emulate every model of control_flow.py, in one process (TensorFlow is imported once, and never in pytest's).

usage: control_flow_cases.py OUT_DIR  -> OUT_DIR/<case>/ (workspaces), OUT_DIR/<case>.expected.npy and
OUT_DIR/summary.json

* every case but ``lowered``: the workspace, ``check()``'s facts of ``ac -c`` (bn_cases.check), and the
  model's output computed by TensorFlow itself on the original model -- eagerly (Python runs the
  ``tf.cond``/``tf.while_loop``) or, for TF1 graph code, in a ``tf.compat.v1.Session`` running the graph
  with its control flow -- which the test compares with the reference capture of the unrolled graph;
* ``lstm_bias``: the LSTM with a bias planted in the MatMul of iteration 2 (``ac -c``'s culprit);
* ``functional_graph_def``: ``graph_def()`` of ``nested`` frozen with its control flow functional (emulated as
  ``nested``: same names);
* ``lowered``: ``graph_def()`` of ``cond`` frozen with its cond lowered to Switch/Merge, and ``tf1_cond``: a graph
  with TensorFlow 1's control flow (a cond nested in a cond), both resolved along the batch's path;
* ``tf1_while`` (a TF1 while loop: Enter/Exit/LoopCond) and ``long_loop``: refused in one line.
"""
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
sys.path.insert(0, REPO)
sys.path.insert(0, HERE)

import numpy as np  # noqa: E402
from bn_cases import check  # noqa: E402

from precision_tool.capture.determinism import DEFAULT_SEED, seed_everything  # noqa: E402
from precision_tool.capture.emulate import EmulationOptions, emulate  # noqa: E402
from precision_tool.capture.emulate.model_script import load_model_script  # noqa: E402
from precision_tool.errors import PrecisionToolError  # noqa: E402

SCRIPT = os.path.join(HERE, "control_flow.py")
CASES = ("cond", "cond_else", "case", "while", "nested", "tensor_array", "lstm", "gru", "graph_cond", "print_cond",
         "dynamic_array", "counter_only")
PLANTED = "rnn/lstm/PartitionedCall/while/iteration_2/MatMul"


def tensorflow_output(case: str) -> np.ndarray:
    """The model's output as TensorFlow computes it on the original model (no freezing, no unrolling)."""
    import tensorflow as tf

    os.environ["PRECISION_TOOL_CF_CASE"] = case
    script = load_model_script(SCRIPT)
    seed_everything(DEFAULT_SEED, deterministic=True)  # as emulate() does: the same initial weights
    model = None if case == "graph_cond" else script.build_model()
    (batch,) = script.batch()
    if case == "graph_cond":
        with tf.Graph().as_default() as graph:
            placeholder = tf.compat.v1.placeholder(tf.float32, batch.shape)
            output = script.graph_fn(placeholder)
            with tf.compat.v1.Session(graph=graph) as session:
                session.run(tf.compat.v1.global_variables_initializer())
                return session.run(output, {placeholder: batch})
    if callable(model) and not hasattr(model, "layers"):
        return model(tf.constant(batch)).numpy()
    return model(tf.constant(batch), training=False).numpy()


def frozen_graph(case: str, path: str, lower: bool) -> None:
    """Freeze control_flow.py's function ``case`` into ``path``, its control flow lowered to Switch/Merge (what a
    TF1 graph freezes to) or kept functional."""
    import tensorflow as tf
    from tensorflow.python.framework.convert_to_constants import convert_variables_to_constants_v2

    os.environ["PRECISION_TOOL_CF_CASE"] = case
    forward = load_model_script(SCRIPT).build_model()
    function = tf.function(forward).get_concrete_function(tf.TensorSpec((2, 8), tf.float32, name="input"))
    frozen = convert_variables_to_constants_v2(function, lower_control_flow=lower)
    with open(path, "wb") as handle:
        handle.write(frozen.graph.as_graph_def().SerializeToString())


def tf1_graph(kind: str, path: str) -> None:
    """A frozen graph with TensorFlow 1's control flow (as TF 1.15 writes it: Switch/Merge for a cond, Enter/Exit/
    NextIteration/LoopCond for a loop), built with control flow v2 switched off: ``cond`` (a cond nested in the
    taken branch of another) or ``while``."""
    import tensorflow as tf

    w1, w2 = (np.random.default_rng(k).uniform(-0.5, 0.5, (8, 8)).astype("float32") for k in (1, 2))
    tf.compat.v1.disable_control_flow_v2()
    try:
        with tf.Graph().as_default() as graph:
            x = tf.compat.v1.placeholder(tf.float32, (2, 8), name="input")
            if kind == "cond":
                def inner():
                    h = tf.matmul(x, w1, name="up")
                    return tf.compat.v1.cond(tf.reduce_max(h) > 100.0, lambda: tf.nn.relu(h, name="big"),
                                             lambda: tf.nn.tanh(h, name="small"), name="inner")
                y = tf.compat.v1.cond(tf.reduce_sum(x) > 0, inner, lambda: tf.matmul(x, w2, name="down"),
                                      name="outer")
            else:
                _, y = tf.compat.v1.while_loop(lambda i, v: i < 3, lambda i, v: (i + 1, tf.nn.relu(v * 0.5)),
                                               (tf.constant(0), x), name="loop")
            tf.identity(y, name="output")
        with open(path, "wb") as handle:
            handle.write(graph.as_graph_def().SerializeToString())
    finally:
        tf.compat.v1.enable_control_flow_v2()


def refusal(case: str, out: str) -> dict:
    os.environ["PRECISION_TOOL_CF_CASE"] = case
    try:
        emulate(SCRIPT, os.path.join(out, "refused"))
        return {"error": "", "type": ""}
    except PrecisionToolError as error:
        return {"error": str(error), "type": type(error).__name__,
                "left_folder": os.path.exists(os.path.join(out, "refused"))}


def run(out: str) -> dict:
    os.chdir(REPO)
    summary = {}
    for case in CASES:
        os.environ["PRECISION_TOOL_CF_CASE"] = case
        workspace = os.path.join(out, case)
        emulate(SCRIPT, workspace)
        summary[case] = check(workspace, os.path.join(out, case + "_ac"))
        np.save(os.path.join(out, case + ".expected.npy"), tensorflow_output(case))
    os.environ["PRECISION_TOOL_CF_CASE"] = "lstm"
    emulate(SCRIPT, os.path.join(out, "lstm_bias"), EmulationOptions(numerics="ideal", perturb={PLANTED: "bias:0.3"}))
    summary["lstm_bias"] = check(os.path.join(out, "lstm_bias"), os.path.join(out, "lstm_bias_ac"))
    os.environ["PRECISION_TOOL_CF_PB"] = os.path.join(out, "functional.pb")
    frozen_graph("nested", os.environ["PRECISION_TOOL_CF_PB"], lower=False)
    os.environ["PRECISION_TOOL_CF_CASE"] = "graph_def"
    emulate(SCRIPT, os.path.join(out, "functional_graph_def"))
    summary["functional_graph_def"] = check(os.path.join(out, "functional_graph_def"),
                                            os.path.join(out, "functional_graph_def_ac"))
    os.environ["PRECISION_TOOL_CF_PB"] = os.path.join(out, "lowered.pb")
    frozen_graph("cond", os.environ["PRECISION_TOOL_CF_PB"], lower=True)
    os.environ["PRECISION_TOOL_CF_CASE"] = "graph_def"
    emulate(SCRIPT, os.path.join(out, "lowered"))
    summary["lowered"] = check(os.path.join(out, "lowered"), os.path.join(out, "lowered_ac"))
    os.environ["PRECISION_TOOL_CF_PB"] = os.path.join(out, "tf1_cond.pb")
    os.environ["PRECISION_TOOL_CF_FETCH"] = "output:0"
    tf1_graph("cond", os.environ["PRECISION_TOOL_CF_PB"])
    emulate(SCRIPT, os.path.join(out, "tf1_cond"))
    summary["tf1_cond"] = check(os.path.join(out, "tf1_cond"), os.path.join(out, "tf1_cond_ac"))
    os.environ["PRECISION_TOOL_CF_PB"] = os.path.join(out, "tf1_while.pb")
    tf1_graph("while", os.environ["PRECISION_TOOL_CF_PB"])
    summary["tf1_while"] = refusal("graph_def", out)
    del os.environ["PRECISION_TOOL_CF_FETCH"]
    summary["long_loop"] = refusal("long_loop", out)
    summary["nested_big"] = refusal("nested_big", out)
    return summary


if __name__ == "__main__":
    result = run(sys.argv[1])
    with open(os.path.join(sys.argv[1], "summary.json"), "w") as handle:
        json.dump(result, handle, indent=1)
