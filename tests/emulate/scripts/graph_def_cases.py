"""Build a TF1 graph, freeze it to a GraphDef, emulate it through a ``graph_def()`` MODEL_SCRIPT and try the
refused variants, in one process (TensorFlow is imported once, and never in pytest's).

usage: graph_def_cases.py OUT_DIR  -> OUT_DIR/models/ (model.pb, model.pbtxt, unfrozen.pb, ckpt/,
frozen_graph_model.py),
OUT_DIR/pb/ (workspace) and OUT_DIR/summary.json

summary.json: ``nodes``: ``[name, op, inputs]`` of each node of model.pb and unfrozen.pb, as the GraphDefs hold
them; ``pb``: seconds, ``ac -c --no-replay``'s exit code (CLI) and ``run_autocheck``'s facts (bn_cases.check);
``meta``: the meta graph + checkpoint frozen by the emulator against model.pb (same nodes, same outputs),
and whether the GraphDef given as an object froze to the same FrozenModel as its file;
``called``: the GraphDefModel used as a function of TF ops against the session's output; ``refused``: per
case the one-line error, its type, whether a folder or a staging folder was left.
"""
import json
import os
import shutil
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
sys.path.insert(0, REPO)
sys.path.insert(0, HERE)

import numpy as np  # noqa: E402

from bn_cases import check  # noqa: E402
from graph_cases import attempt, leftovers  # noqa: E402

from precision_tool.capture.emulate import EmulationOptions, emulate  # noqa: E402
from precision_tool.capture.emulate.graph_def_model import freeze_graph_def  # noqa: E402
from precision_tool.capture.emulate.model_script import load_model_script  # noqa: E402
from precision_tool.capture.emulate.tf_freeze import run_graph  # noqa: E402

SCRIPT = "frozen_graph_model.py"
REFUSED = ("unfrozen", "wrong_feed", "unfed", "shape", "dtype", "text", "two")
CASE = "PRECISION_TOOL_GD_CASE"


def build(folder: str) -> dict:
    """The TF1 graph, initialised (seeded) in a session: frozen to model.pb (``convert_variables_to_constants``,
    keeping ``head/prob`` and ``aux/out``), as it is to unfrozen.pb, and saved as ckpt/model(.meta)."""
    import tensorflow as tf

    v1 = tf.compat.v1
    graph = tf.Graph()
    with graph.as_default():
        v1.set_random_seed(11)
        image = v1.placeholder(tf.float32, (None, 16, 16, 3), name="image")
        with v1.variable_scope("block"):
            kernel = v1.get_variable("conv/kernel", [3, 3, 3, 8], use_resource=False,  # VariableV2
                                     initializer=v1.glorot_uniform_initializer())
            x = tf.nn.conv2d(image, kernel, strides=1, padding="SAME", name="conv")
            scale, offset, mean, variance = (
                v1.get_variable(f"bn/{name}", [8], initializer=v1.random_uniform_initializer(low, high))
                for name, low, high in (("scale", 0.5, 1.5), ("offset", -0.2, 0.2), ("mean", -0.3, 0.3),
                                        ("variance", 0.5, 2.0)))
            y, _, _ = v1.nn.fused_batch_norm(x, scale, offset, mean, variance, epsilon=1e-3, is_training=False,
                                             name="bn")
            x = tf.nn.relu(y, name="relu")
        with v1.variable_scope("head"):
            pooled = tf.reduce_mean(x, axis=[1, 2], name="gap")
            weights = v1.get_variable("weights", [8, 10], initializer=v1.glorot_uniform_initializer())
            bias = v1.get_variable("bias", [10], initializer=v1.random_normal_initializer(0.0, 0.1))
            tf.nn.softmax(tf.nn.bias_add(tf.matmul(pooled, weights, name="logits"), bias, name="logits_bias"),
                          name="prob")
        aux = v1.placeholder(tf.float32, (None, 4), name="aux/input")
        tf.multiply(aux, 2.0, name="aux/out")
        saver = v1.train.Saver()
        with v1.Session(graph=graph) as session:
            session.run(v1.global_variables_initializer())
            saver.save(session, os.path.join(folder, "ckpt", "model"))
            unfrozen = graph.as_graph_def()
            frozen = v1.graph_util.convert_variables_to_constants(session, unfrozen, ["head/prob", "aux/out"])
    tf.io.write_graph(frozen, folder, "model.pb", as_text=False)
    tf.io.write_graph(unfrozen, folder, "unfrozen.pb", as_text=False)
    tf.io.write_graph(frozen, folder, "model.pbtxt", as_text=True)
    return {name: [[n.name, n.op, list(n.input)] for n in graph_def.node]
            for name, graph_def in (("model.pb", frozen), ("unfrozen.pb", unfrozen))}


def loaded(script: str, case: str):
    os.environ[CASE] = case
    found = load_model_script(script)
    return found.build_model(), found.batch()


def meta_against_pb(script: str) -> dict:
    """The meta graph + checkpoint, frozen by the emulator, and the GraphDef given as an object, against
    model.pb; and model.pb called as a function."""
    import tensorflow as tf

    pb, batch = loaded(script, "pb")
    models = {"pb": pb, "meta": loaded(script, "meta")[0], "object": loaded(script, "object")[0]}
    frozen = {name: freeze_graph_def(model, batch, script) for name, model in models.items()}
    nodes = {name: sorted((n.name, n.op) for n in tf.compat.v1.GraphDef.FromString(f.graph_def).node)
             for name, f in frozen.items()}
    outputs = {name: run_graph(f, f.outputs, batch)[0] for name, f in frozen.items()}
    called = tf.function(pb)(tf.constant(batch[0])).numpy()
    return {"meta": {"source": models["meta"].source, "object_same": frozen["object"] == frozen["pb"],
                     "same_nodes": nodes["pb"] == nodes["meta"], "nodes": nodes["meta"],
                     "inputs": list(frozen["meta"].inputs), "outputs": list(frozen["meta"].outputs),
                     "max_difference": float(np.abs(outputs["pb"] - outputs["meta"]).max())},
            "called": {"shape": list(called.shape),
                       "max_difference": float(np.abs(called - outputs["pb"]).max())}}


def run(out: str) -> dict:
    os.chdir(REPO)
    models = os.path.join(out, "models")
    os.makedirs(models)
    summary = {"nodes": build(models), "refused": {}}
    script = shutil.copy(os.path.join(HERE, SCRIPT), os.path.join(models, SCRIPT))
    os.environ[CASE] = "pb"
    start = time.time()
    emulate(script, os.path.join(out, "pb"), EmulationOptions(numerics="ideal", fusion="both"))
    seconds = round(time.time() - start, 2)
    summary["pb"] = dict(check(os.path.join(out, "pb"), os.path.join(out, "pb_ac")), seconds=seconds)
    summary.update(meta_against_pb(script))
    for case in REFUSED:
        os.environ[CASE] = case
        target = os.path.join(out, "refused_" + case)
        summary["refused"][case] = dict(attempt(script, target), left_folder=os.path.exists(target),
                                        leftovers=leftovers(out, "refused_" + case))
    summary["script"] = script
    return summary


if __name__ == "__main__":
    result = run(sys.argv[1])
    with open(os.path.join(sys.argv[1], "summary.json"), "w") as handle:
        json.dump(result, handle, indent=1)
