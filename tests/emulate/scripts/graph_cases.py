"""Emulate the TF1 graph-code model, try TF1 layers in model(), and fail an emulation half-way, in one
process (TensorFlow is imported once, and never in pytest's).

usage: graph_cases.py OUT_DIR  -> OUT_DIR/tf1_graph/ (workspace) and OUT_DIR/summary.json

summary.json: ``tf1_graph``: seconds, ``ac -c --no-replay``'s exit code (CLI) and ``run_autocheck``'s facts
(see bn_cases.check); ``refused``: per script case the one-line error, its type, whether a folder or a
staging folder was left; ``staging``: what a failure half-way through writing leaves, and what the next runs do.
"""
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
sys.path.insert(0, REPO)
sys.path.insert(0, HERE)

from bn_cases import check  # noqa: E402

from precision_tool.capture.emulate import EmulationOptions, emulate  # noqa: E402
from precision_tool.capture.emulate import run as emulate_run  # noqa: E402
from precision_tool.errors import PrecisionToolError  # noqa: E402

REFUSED = {"tf1_layers": "bn_unsupported.py"}


def leftovers(out: str, name: str) -> list:
    """Hidden staging folders of workspace ``name``."""
    return sorted(entry for entry in os.listdir(out) if entry.startswith(f".{name}."))


def attempt(script: str, target: str, **kwargs) -> dict:
    try:
        emulate(script, target, **kwargs)
        return {"error": "", "type": ""}
    except PrecisionToolError as error:
        return {"error": str(error), "type": type(error).__name__}


def staging_cases(out: str) -> dict:
    """A failure while the workspace is being written (after the reference capture), then a retry; then the
    same with --force over the finished emulation."""
    dense = os.path.join(HERE, "dense_function.py")
    target = os.path.join(out, "staged", "ws")  # "staged" does not exist yet: created, and removed on failure
    real = emulate_run.run_numerics

    def broken(*args, **kwargs):
        raise RuntimeError("kernel crashed")

    found = {}
    emulate_run.run_numerics = broken
    try:
        emulate(dense, target)
    except RuntimeError as error:
        found["first_error"] = str(error)
    found["first_left_parent"] = os.path.exists(os.path.dirname(target))
    emulate_run.run_numerics = real
    found["retry"] = attempt(dense, target)
    with open(os.path.join(target, "manifest.json"), encoding="utf-8") as handle:
        manifest = handle.read()
    found["retry_has_manifest"] = bool(manifest)
    emulate_run.run_numerics = broken
    try:
        emulate(dense, target, EmulationOptions(numerics="ideal", fusion="off"), force=True)
    except RuntimeError as error:
        found["forced_error"] = str(error)
    emulate_run.run_numerics = real
    with open(os.path.join(target, "manifest.json"), encoding="utf-8") as handle:
        found["forced_failure_kept_earlier"] = handle.read() == manifest
    found["forced_retry"] = attempt(dense, target, options=EmulationOptions(numerics="ideal", fusion="off"), force=True)
    with open(os.path.join(target, "manifest.json"), encoding="utf-8") as handle:
        found["forced_retry_fusion"] = json.load(handle)["fusion"]
    found["leftovers"] = leftovers(os.path.dirname(target), "ws")
    return found


def run(out: str) -> dict:
    os.chdir(REPO)
    summary = {"refused": {}}
    # first: tf.compat.v1.layers is resolved once per process, from Keras 2 only if TF_USE_LEGACY_KERAS=1 then
    legacy_before = os.environ.get("TF_USE_LEGACY_KERAS")
    start = time.time()
    emulate(os.path.join(HERE, "tf1_resnet_graph.py"), os.path.join(out, "tf1_graph"),
            EmulationOptions(numerics="ideal", fusion="both"))
    seconds = round(time.time() - start, 2)
    summary["tf1_graph"] = dict(check(os.path.join(out, "tf1_graph"), os.path.join(out, "tf1_graph_ac")),
                                seconds=seconds, legacy_keras_before=legacy_before,
                                legacy_keras=os.environ.get("TF_USE_LEGACY_KERAS"))
    for case, script in REFUSED.items():
        os.environ["PRECISION_TOOL_BN_CASE"] = case
        target = os.path.join(out, "refused_" + case)
        summary["refused"][case] = dict(attempt(os.path.join(HERE, script), target),
                                        left_folder=os.path.exists(target), leftovers=leftovers(out, "refused_" + case))
    summary["staging"] = staging_cases(out)
    return summary


if __name__ == "__main__":
    result = run(sys.argv[1])
    with open(os.path.join(sys.argv[1], "summary.json"), "w") as handle:
        json.dump(result, handle, indent=1)
