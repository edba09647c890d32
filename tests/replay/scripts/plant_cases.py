"""Emulate every replay test case into OUT (one process: TensorFlow is imported once), then write
OUT/summary.json: per case the workspace, the TF op planted and the NPU op that implements it.

usage: plant_cases.py OUT [--big] [MODEL ...]   (MODEL: only these; default all of the set)

Each model is emulated clean first (``<model>_clean``); the plant sites are then chosen from its plan --
the middle op of a kind, so the error enters mid-network and must be told from the drift around it -- and
each plant (2% relative noise, ``--perturb``) is a second emulation (``<model>_<site>``).
"""
import json
import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[2]))

from precision_tool.capture.emulate import EmulationOptions, emulate  # noqa: E402

REL = 0.02
SMALL = {
    "mobilenet": (HERE.parents[2] / "sample_dumps" / "models" / "mobilenet.py", {
        "depthwise": ("type", "DepthwiseConv2dNative"),
        "bn_add": ("fused_member", "batchnorm/add_1"),
    }),
    "transformer": (HERE.parent / "models" / "transformer.py", {
        "softmax": ("type", "Softmax"),
        "matmul": ("type", "MatMul", "BatchMatMulV2", "Einsum"),
    }),
    "lstm": (HERE.parent / "models" / "lstm.py", {"matmul": ("type", "MatMul")}),
    "tf1": (HERE.parent / "models" / "tf1_graph.py", {"conv": ("type", "Conv2D")}),
}
_CONV, _BN_ADD = ("type", "Conv2D"), ("fused_member", "batchnorm/add_1")
_APPS = HERE.parent / "models" / "applications.py"
_DEPTHWISE = ("type", "DepthwiseConv2dNative")
BIG = {
    "ResNet50": (_APPS, {"conv": _CONV, "bn_add": _BN_ADD}),
    "MobileNetV2": (_APPS, {"depthwise": _DEPTHWISE, "bn_add": _BN_ADD}),
    "InceptionV3": (_APPS, {"conv": _CONV, "bn_add": _BN_ADD}),
    "EfficientNetB0": (_APPS, {"depthwise": _DEPTHWISE, "bn_add": _BN_ADD}),
    "DenseNet121": (_APPS, {"conv": _CONV, "bn_add": _BN_ADD}),
    "VGG16": (_APPS, {"conv": _CONV, "matmul": ("type", "MatMul")}),
}
SIZES = {"InceptionV3": "75"}  # its smallest input; the others run at applications.py's 64


def choose(plan, rule):
    """The middle TF op matching ``rule``: ``("type", T...)`` or ``("fused_member", suffix)`` (a non-lead
    member of a fused group)."""
    if rule[0] == "type":
        names = [op.name for op in plan.graph.ops if op.type in rule[1:] and plan.op_for_tf(op.name) is not None]
    else:
        names = [m for g in plan.groups for m in g.members[1:] if m.endswith(rule[1])]
    if not names:
        raise SystemExit(f"no op for {rule}")
    return names[(len(names) - 1) // 2]


def main(out, big, only=None):
    cases = {}
    for model, (script, sites) in (BIG if big else SMALL).items():
        if only and model not in only:
            continue
        if big:
            os.environ["PRECISION_TOOL_APP"] = model
            os.environ["PRECISION_TOOL_APP_SIZE"] = SIZES.get(model, "64")
        clean = emulate(str(script), str(out / f"{model}_clean"))
        cases[f"{model}_clean"] = {"workspace": clean.workspace, "planted": None, "npu_op": None}
        plan = clean.plans["debug_0"]
        for site, rule in sites.items():
            tf_op = choose(plan, rule)
            result = emulate(str(script), str(out / f"{model}_{site}"),
                             EmulationOptions(numerics="ideal", perturb={tf_op: REL}))
            (planted,) = result.manifest["perturbations"]
            cases[f"{model}_{site}"] = {"workspace": result.workspace, "planted": tf_op,
                                        "npu_op": planted["npu_op"]["debug_0"]}
    (out / "summary.json").write_text(json.dumps(cases, indent=1))


if __name__ == "__main__":
    main(Path(sys.argv[1]), "--big" in sys.argv[2:], [a for a in sys.argv[2:] if not a.startswith("--")])
