"""Run the emulations the tests read, in one process (TensorFlow is imported once, and never in pytest's).

usage: emulate_cases.py OUT_DIR  -> OUT_DIR/{cnn_cli,cnn_api,dense,dense_scaled,varied}/ and OUT_DIR/summary.json
Run from the repository root: the CNN is emulated with the same relative script path and options as
sample_dumps/cnn_workspace, so its bytes can be compared with the committed sample.
"""
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
sys.path.insert(0, REPO)
sys.path.insert(0, os.path.join(REPO, "sample_dumps"))

from precision_tool.capture.emulate import EmulationError, EmulationOptions, emulate  # noqa: E402
from precision_tool.cli import main  # noqa: E402
from generate import CNN_PERTURBED_OP, WORKSPACES  # noqa: E402


def timed(summary, name, function):
    start = time.time()
    result = function()
    summary["seconds"][name] = round(time.time() - start, 2)
    return result


def run(out: str) -> dict:
    os.chdir(REPO)
    summary = {"seconds": {}, "errors": {}}
    script, options = WORKSPACES["cnn_workspace"]
    argv = ["emulate", script, "-o", os.path.join(out, "cnn_cli"), "--fusion", options["fusion"],
            "--perturb", f"{CNN_PERTURBED_OP}={options['perturb'][CNN_PERTURBED_OP]}", "--seed", str(options["seed"])]
    summary["cli_exit"] = timed(summary, "cnn_cli", lambda: main(argv))
    timed(summary, "cnn_api", lambda: emulate(script, os.path.join(out, "cnn_api"), EmulationOptions(**options)))
    dense = os.path.join(HERE, "dense_function.py")
    timed(summary, "dense", lambda: emulate(dense, os.path.join(out, "dense"),
                                                   EmulationOptions(numerics="ideal", fusion="both")))
    timed(summary, "dense_scaled",
          lambda: emulate(dense, os.path.join(out, "dense_scaled"), EmulationOptions(numerics="ideal", scale=1e5)))
    varied = os.path.join(HERE, "varied_keras.py")
    timed(summary, "varied", lambda: emulate(varied, os.path.join(out, "varied"),
                                                     EmulationOptions(numerics="ideal", fusion="both")))
    try:
        emulate(dense, os.path.join(out, "bad_perturb"), EmulationOptions(numerics="ideal", perturb={"mlp/nope": 0.1}))
    except EmulationError as error:
        summary["errors"]["bad_perturb"] = str(error)
        summary["errors"]["bad_perturb_left_folder"] = os.path.exists(os.path.join(out, "bad_perturb"))
    try:
        emulate(dense, os.path.join(out, "const_perturb"),
                EmulationOptions(numerics="ideal", perturb={"mlp/fc1/b": 0.1}))
    except EmulationError as error:
        summary["errors"]["const_perturb"] = str(error)
    return summary


if __name__ == "__main__":
    result = run(sys.argv[1])
    with open(os.path.join(sys.argv[1], "summary.json"), "w") as handle:
        json.dump(result, handle, indent=1)
