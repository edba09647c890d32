"""Emulate the sample CNN clean and with each ``--perturb`` fault kind, then run ``ac -c`` on every faulty
workspace -- all in one process (TensorFlow is imported once, and never in pytest's).

usage: fault_cases.py OUT_DIR  -> OUT_DIR/{clean,bias,saturate,positions,fp16acc,fp16acc1}/ and
OUT_DIR/summary.json: per case the spec, the CLI exit codes and ``ac -c``'s JSON report (the clean
workspace's too).

The faults go on ``res_conv`` (a 3x3x16 -> 16 Conv2D fused with its BiasAdd, mid-network): bias, saturate
and positions on the BiasAdd (the fused op's output, so its dump shows the fault as planted), fp16acc on
the Conv2D. The saturation limit is half the clean output's largest magnitude (a float16 number).
"""
import contextlib
import io
import json
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
sys.path.insert(0, REPO)

from precision_tool.capture.emulate import EmulationOptions, emulate  # noqa: E402
from precision_tool.cli import main  # noqa: E402

CNN = os.path.join("sample_dumps", "models", "cnn.py")
CONV = "small_cnn_1/res_conv_1/convolution"
OUTPUT = "small_cnn_1/res_conv_1/BiasAdd"


def _clean_max(workspace: str) -> float:
    from precision_tool.formats.dump_file import read_dump_header
    from precision_tool.formats.dump_names import scan_dump_folder
    from precision_tool.formats.origin_tensor import read_origin_tensor

    with open(os.path.join(workspace, "manifest.json")) as handle:
        manifest = json.load(handle)
    scan = scan_dump_folder(os.path.join(workspace, manifest["runs"][0]["dump_dir"]))
    dump = read_dump_header(scan.find(CONV).latest.path)
    return float(np.abs(read_origin_tensor(dump, dump.outputs[0]).array.astype(np.float64)).max())


def _cli(argv):
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(argv)
    return code, out.getvalue()


def run(out: str) -> dict:
    os.chdir(REPO)
    summary = {"cases": {}}
    emulate(CNN, os.path.join(out, "clean"), EmulationOptions(numerics="ideal"))
    code, text = _cli(["-d", os.path.join(out, "clean"), "--json", "ac", "-c", "--workers", "1"])
    summary["clean"] = {"ac_exit": code, "ac": json.loads(text)}
    limit = float(np.float16(_clean_max(os.path.join(out, "clean")) / 2))
    cases = {"bias": (OUTPUT, "bias:0.05"), "saturate": (OUTPUT, f"saturate:{limit}"),
             "positions": (OUTPUT, "positions:3"), "fp16acc": (CONV, "fp16acc"), "fp16acc1": (CONV, "fp16acc:1")}
    for name, (op, spec) in cases.items():
        workspace = os.path.join(out, name)
        code, text = _cli(["emulate", CNN, "-o", workspace, "--numerics", "ideal", "--perturb", f"{op}={spec}"])
        case = {"tf_op": op, "spec": spec, "emulate_exit": code, "emulate_text": text}
        if code == 0:
            code, text = _cli(["-d", workspace, "--json", "ac", "-c", "--workers", "1"])
            case.update(ac_exit=code, ac=json.loads(text))
        summary["cases"][name] = case
    return summary


if __name__ == "__main__":
    result = run(sys.argv[1])
    with open(os.path.join(sys.argv[1], "summary.json"), "w") as handle:
        json.dump(result, handle, indent=1)
