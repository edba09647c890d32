"""Emulate training steps of train_conv_bn.py, in one process (TensorFlow is imported once, and never in pytest's).

usage: train_cases.py OUT_DIR  -> OUT_DIR/<case>/ (workspaces), OUT_DIR/<case>.expected.npz, OUT_DIR/summary.json

Cases: ``momentum`` (step 0, fusion on and off), ``momentum_step3`` (``--step 3``), ``sgd``, ``nesterov``,
``keras_sgd``, ``loss_scale`` (a static loss scale of 1024: the loss scaled before the gradients, the gradients
unscaled before the update), ``dynamic_loss_scale`` (its writes inside tf.conds), and ``backward_bias``
(``momentum`` with a bias planted in the input gradient of the second convolution). Each: ``check()``'s facts of
``ac -c`` (bn_cases.check). Refused, in one line each: ``adam`` (an optimizer the emulator does not model) and
``--step 2`` for a model that is no training step.

``<case>.expected.npz`` is what TensorFlow itself computes running the original training graph -- real
variables, real optimizer kernels -- for the same step: ``loss`` at that step, and for every op writing a
variable, the variable's value after the step (key: the write op's name; ``<name>/accum`` for the momentum
accumulator an apply op updates), and every variable's value after the step (key: ``variables/<name>``).
"""
import inspect
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

SCRIPT = os.path.join(HERE, "train_conv_bn.py")
PLANTED = "gradients/block2_conv/Conv2D_grad/Conv2DBackpropInput"
# case -> (optimizer, step, emulation options)
CASES = {
    "momentum": ("momentum", 0, {"fusion": "both"}),
    "momentum_step3": ("momentum", 3, {}),
    "sgd": ("sgd", 0, {}),
    "nesterov": ("nesterov", 0, {}),
    "keras_sgd": ("keras_sgd", 0, {}),
    "loss_scale": ("loss_scale", 0, {}),
    "dynamic_loss_scale": ("dynamic_loss_scale", 0, {}),
    "backward_bias": ("momentum", 0, {"perturb": {PLANTED: "bias:0.3"}}),
}
WRITES = ("ResourceApply", "Apply", "Assign", "ResourceScatter")  # op types writing a variable (not the emulator's)
VARIANT_SCRIPT = os.path.join(HERE, "train_variants.py")
VARIANTS = {"ema": 0, "clip": 0, "embedding": 0, "dropout": 2}  # train_variants.py's emulated variants -> step


def tensorflow_step(step: int, path: str = SCRIPT) -> dict:
    """Run the original graph: initialise (emulate's default seed, 2022, as the emulator), ``step`` steps, then one
    more."""
    import tensorflow as tf

    script = load_model_script(path)
    seed_everything(DEFAULT_SEED, deterministic=True)
    batch = script.batch()
    graph = tf.Graph()
    graph.seed = DEFAULT_SEED
    with graph.as_default():
        names = list(inspect.signature(script.train_fn).parameters)
        placeholders = [tf.compat.v1.placeholder(tf.as_dtype(a.dtype), a.shape, name=n) for a, n in zip(batch, names)]
        loss, train_op = script.train_fn(*placeholders)
        initialise = tf.compat.v1.global_variables_initializer()
        variables = {v.handle.op.name: v for v in tf.compat.v1.global_variables()}
        step_ops = needed_by([loss.op, train_op])  # not the initialisers
        writes = [op for op in step_ops if op.type.startswith(WRITES)]
    feed = dict(zip(placeholders, batch))
    found = {}
    with tf.compat.v1.Session(graph=graph) as session:
        session.run(initialise)
        for _ in range(step):
            session.run(train_op, feed)
        found["loss"], _ = session.run([loss, train_op], feed)
        for op in writes:
            found[op.name] = session.run(variables[op.inputs[0].op.name])
            if op.type.endswith("Momentum"):
                found[op.name + "/accum"] = session.run(variables[op.inputs[1].op.name])
        for name, variable in variables.items():
            found[f"variables/{name}"] = session.run(variable)
    return found


def needed_by(ops) -> list:
    """The ops ``ops`` need, through data and control inputs, in graph order."""
    seen, stack = set(), list(ops)
    while stack:
        op = stack.pop()
        if op.name in seen:
            continue
        seen.add(op.name)
        stack.extend([t.op for t in op.inputs] + list(op.control_inputs))
    return [op for op in ops[0].graph.get_operations() if op.name in seen]


def run(out: str) -> dict:
    os.chdir(REPO)
    summary = {}
    for case, (optimizer, step, options) in CASES.items():
        os.environ["PRECISION_TOOL_TRAIN_OPTIMIZER"] = optimizer
        workspace = os.path.join(out, case)
        emulate(SCRIPT, workspace, EmulationOptions(numerics="ideal", step=step, **options))
        summary[case] = check(workspace, os.path.join(out, case + "_ac"))
        if case != "backward_bias":
            np.savez(os.path.join(out, case + ".expected.npz"), **tensorflow_step(step))
    for variant, step in VARIANTS.items():
        os.environ["PRECISION_TOOL_TRAIN_VARIANT"] = variant
        workspace = os.path.join(out, f"variant_{variant}")
        emulate(VARIANT_SCRIPT, workspace, EmulationOptions(numerics="ideal", step=step))
        summary[f"variant_{variant}"] = check(workspace, os.path.join(out, f"variant_{variant}_ac"))
        np.savez(os.path.join(out, f"variant_{variant}.expected.npz"), **tensorflow_step(step, VARIANT_SCRIPT))
    for variant in ("rnn", "assign"):
        os.environ["PRECISION_TOOL_TRAIN_VARIANT"] = variant
        summary[f"variant_{variant}"] = refusal(VARIANT_SCRIPT, os.path.join(out, f"variant_{variant}"))
    os.environ["PRECISION_TOOL_TRAIN_OPTIMIZER"] = "adam"
    summary["adam"] = refusal(SCRIPT, os.path.join(out, "adam"))
    summary["step_without_training"] = refusal(os.path.join(HERE, "dense_function.py"), os.path.join(out, "dense"),
                                               step=2)
    return summary


def refusal(script: str, target: str, **options) -> dict:
    try:
        emulate(script, target, EmulationOptions(numerics="ideal", **options))
        return {"error": "", "type": "", "left_folder": True}
    except PrecisionToolError as error:
        return {"error": str(error), "type": type(error).__name__, "left_folder": os.path.exists(target)}


if __name__ == "__main__":
    result = run(sys.argv[1])
    with open(os.path.join(sys.argv[1], "summary.json"), "w") as handle:
        json.dump(result, handle, indent=1)
