"""Emulate the batch-norm models the tests read, check each with ``ac -c``, in one process (TensorFlow is
imported once, and never in pytest's).

usage: bn_cases.py OUT_DIR  -> OUT_DIR/<case>/ workspaces, OUT_DIR/weights.npz, OUT_DIR/summary.json

summary.json: per workspace the seconds it took, ``ac -c --no-replay``'s exit code (CLI), and from
``run_autocheck`` with replay: exit code, culprit, alignment coverage, counts and how each op was measured;
per refused script the one-line error and whether a folder was left behind; ``model_layers``: what Keras
itself says the MobileNetV2 is made of (its batch-norm layers by the kind of layer feeding each, its depthwise
convolutions), for the tests to count the emulation's ops against. weights.npz: the batch-norm parameters as the
models hold them (Keras 2 layer weights, the TF1 function's constants), for the tests' hand computations.
"""
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
sys.path.insert(0, REPO)

import numpy as np  # noqa: E402

from precision_tool.capture.emulate import EmulationOptions, emulate  # noqa: E402
from precision_tool.capture.emulate.model_script import load_model_script  # noqa: E402
from precision_tool.checks.autocheck import AutocheckOptions, run_autocheck  # noqa: E402
from precision_tool.cli import main  # noqa: E402
from precision_tool.errors import PrecisionToolError  # noqa: E402

CASES = {  # workspace -> (script, fusion)
    "keras2_cnn": ("bn_keras2_cnn.py", "both"),
    "keras2_cnn_off": ("bn_keras2_cnn.py", "off"),
    "tf1_function": ("bn_tf1_function.py", "both"),
    "mobilenet_keras2": ("bn_mobilenet_keras2.py", "on"),
}
REFUSED = ("statistics", "tf1_layers")  # bn_unsupported.py's cases


def check(workspace: str, out: str) -> dict:
    cli_exit = main(["-d", workspace, "ac", "-c", "--no-replay", "-o", out])
    result = run_autocheck(workspace, AutocheckOptions(compare=True, workers=1))
    compared = result.compare.result
    attribution = result.compare.attribution
    return {"cli_no_replay_exit": cli_exit, "exit": result.exit_code(),
            "culprit": None if result.verdict.culprit is None else result.verdict.culprit.op_name,
            "also": list(result.verdict.also),
            "coverage": compared.facts.coverage.to_dict(), "counts": compared.counts(),
            "min_cosine": min((r.cosine for r in compared.compared if r.cosine is not None), default=None),
            "methods": {op.op_name: op.method for op in attribution.ops},
            "scores": {op.op_name: op.score for op in attribution.ops}}


def keras2_weights(path: str) -> dict:
    import tf_keras as keras

    net = load_model_script(path).build_model()
    found = {}
    for layer in net.layers:
        if isinstance(layer, keras.layers.BatchNormalization):
            for name, value in zip(("scale", "offset", "mean", "variance"), layer.get_weights()):
                found[f"keras2/{layer.name}/{name}"] = value
            found[f"keras2/{layer.name}/epsilon"] = np.float32(layer.epsilon)
    return found


def keras2_layers(path: str) -> dict:
    """``{"batch_norms_after": {layer class: count}, "depthwise": count}`` from the Keras model's own layer graph."""
    import tf_keras as keras

    net = load_model_script(path).build_model()
    after = {}
    for layer in net.layers:
        if isinstance(layer, keras.layers.BatchNormalization):
            (node,) = layer.inbound_nodes
            inbound = node.inbound_layers
            (source,) = inbound if isinstance(inbound, list) else [inbound]
            after[type(source).__name__] = after.get(type(source).__name__, 0) + 1
    return {"batch_norms_after": after,
            "depthwise": sum(isinstance(layer, keras.layers.DepthwiseConv2D) for layer in net.layers)}


def tf1_weights(path: str) -> dict:
    names = load_model_script(path).model_fn.__globals__  # the script module's constants
    found = {}
    for layer in ("bn1", "bn2", "bn3"):
        for name, value in zip(("scale", "offset", "mean", "variance"), names[layer.upper()]):
            found[f"tf1/{layer}/{name}"] = value
        found[f"tf1/{layer}/epsilon"] = np.float32(names["EPSILONS"][layer])
    return found


def run(out: str) -> dict:
    os.chdir(REPO)
    summary = {"workspaces": {}, "refused": {}}
    for case, (script, fusion) in CASES.items():
        start = time.time()
        emulate(os.path.join(HERE, script), os.path.join(out, case), EmulationOptions(numerics="ideal", fusion=fusion))
        seconds = round(time.time() - start, 2)
        start = time.time()
        summary["workspaces"][case] = dict(check(os.path.join(out, case), os.path.join(out, case + "_ac")),
                                           seconds=seconds, ac_seconds=round(time.time() - start, 2))
    for case in REFUSED:
        os.environ["PRECISION_TOOL_BN_CASE"] = case
        target = os.path.join(out, "refused_" + case)
        try:
            emulate(os.path.join(HERE, "bn_unsupported.py"), target)
            message, kind = "", ""
        except PrecisionToolError as error:
            message, kind = str(error), type(error).__name__
        summary["refused"][case] = {"error": message, "type": kind, "left_folder": os.path.exists(target)}
    summary["model_layers"] = {"mobilenet_keras2": keras2_layers(os.path.join(HERE, CASES["mobilenet_keras2"][0]))}
    weights = keras2_weights(os.path.join(HERE, "bn_keras2_cnn.py"))
    weights.update(tf1_weights(os.path.join(HERE, "bn_tf1_function.py")))
    np.savez(os.path.join(out, "weights.npz"), **weights)
    return summary


if __name__ == "__main__":
    result = run(sys.argv[1])
    with open(os.path.join(sys.argv[1], "summary.json"), "w") as handle:
        json.dump(result, handle, indent=1)
