"""Emulate hardware_models.py under each modelled NPU (usage: hardware_cases.py OUT_DIR).

OUT_DIR/<case>/ are workspaces; OUT_DIR/summary.json records each emulate's exit and manifest fields."""
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(HERE))))

from precision_tool.cli import main  # noqa: E402

MODEL = os.path.join(HERE, "hardware_models.py")
CASES = {
    # name: (HARDWARE_MODEL, emulate flags)
    "vector_910_fp16": ("vector", ["--numerics", "ascend910", "--precision-mode", "force_fp16"]),
    "vector_910b_fp16": ("vector", ["--numerics", "ascend910b", "--precision-mode", "force_fp16"]),
    "vector_ideal_fp16": ("vector", ["--numerics", "ideal", "--precision-mode", "force_fp16"]),
    "vector_910_default": ("vector", ["--numerics", "ascend910"]),
    "conv_910b": ("conv", ["--numerics", "ascend910b"]),
    "conv_910_mix": ("conv", ["--numerics", "ascend910", "--precision-mode", "allow_mix_precision"]),
    "conv_910_fp32out": ("conv", ["--numerics", "ascend910", "--precision-mode", "cube_fp16in_fp32out"]),
    "conv_910_exact": ("conv", ["--numerics", "ascend910", "--exact", "conv"]),
}


def run(out: str) -> dict:
    summary = {}
    for name, (case, flags) in CASES.items():
        os.environ["HARDWARE_MODEL"] = case
        workspace = os.path.join(out, name)
        code = main(["emulate", MODEL, "-o", workspace, "--fusion", "off", *flags])
        with open(os.path.join(workspace, "manifest.json"), encoding="utf-8") as handle:
            manifest = json.load(handle)
        summary[name] = {"exit": code, "numerics": manifest["numerics"],
                         "precision_mode": manifest["precision_mode"], "exact": manifest["exact"],
                         "overflow_ops": manifest["overflow"]["ops"]}
    return summary


if __name__ == "__main__":
    result = run(sys.argv[1])
    with open(os.path.join(sys.argv[1], "summary.json"), "w") as handle:
        json.dump(result, handle, indent=1)
