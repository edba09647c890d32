"""``make bench-diagnosis``: is ``ac -c``'s culprit the op that adds the error -- measured by intervention?

For each architecture, under ``--numerics ascend910`` and ``ideal``:

* **clean** run: ``ac -c``'s culprit, if any, is re-emulated with ``--exact CULPRIT`` (it computes as the
  reference does); a culprit whose exactness changes the network outputs' error by less than half is a **false
  culprit** -- blamed for error it does not cause;
* **plants**: a fault on one op (noise 1% and 2% at three depths, cycling through the op kinds the network has;
  2% on one op of every other kind; bias and saturation mid-network; fp16acc on the longest Cube reduction), on
  every op of one fusion pass, or on every op of the Cube type with most ops (noise 2%: a wrong kernel). A plant
  is *named first* when ``ac -c``'s culprit is the NPU op it was planted on; a pass (type) fault is named when the
  verdict's systemic faults name the pass (type), or every op it planted on is among the standouts. The truth is
  measured, not assumed: the planted op's ``--exact`` run gives how much of the outputs' error it causes
  (``cost``: 1 - error(exact) / error(faulty)).

The outputs' error is RED (||npu - ref|| / ||ref||) over the model's outputs as dumped, against the reference.

usage: diagnosis.py [--out DIR] [--quick] [--arch NAME ...] [--numerics ascend910|ideal ...]

One process: TensorFlow is imported once. Prints one table, and writes DIR/diagnosis.json with every case.
"""
from __future__ import annotations

import argparse
import contextlib
import io
import json
import math
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

MODELS = REPO / "tests" / "replay" / "models"
APPS = MODELS / "applications.py"
# architecture: (script, environment)
ARCHITECTURES = {
    "ResNet50": (APPS, {"PRECISION_TOOL_APP": "ResNet50", "PRECISION_TOOL_APP_SIZE": "32"}),
    "MobileNetV2": (APPS, {"PRECISION_TOOL_APP": "MobileNetV2", "PRECISION_TOOL_APP_SIZE": "32"}),
    "InceptionV3": (APPS, {"PRECISION_TOOL_APP": "InceptionV3", "PRECISION_TOOL_APP_SIZE": "75"}),
    "EfficientNetB0": (APPS, {"PRECISION_TOOL_APP": "EfficientNetB0", "PRECISION_TOOL_APP_SIZE": "32"}),
    "DenseNet121": (APPS, {"PRECISION_TOOL_APP": "DenseNet121", "PRECISION_TOOL_APP_SIZE": "32"}),
    "VGG16": (APPS, {"PRECISION_TOOL_APP": "VGG16", "PRECISION_TOOL_APP_SIZE": "32"}),
    "Transformer": (MODELS / "transformer.py", {}),
    "LSTM": (MODELS / "lstm.py", {}),
    "TF1 graph": (MODELS / "tf1_graph.py", {}),
    "TF1 ResNet block": (REPO / "tests" / "emulate" / "scripts" / "tf1_resnet_graph.py", {}),
    "training step": (REPO / "tests" / "emulate" / "scripts" / "train_conv_bn.py", {}),
}
QUICK = ("MobileNetV2", "Transformer", "TF1 ResNet block")
# op kinds to plant on, by TF op type; a plant cycles through the kinds the network has
KINDS = [("conv", {"Conv2D"}), ("depthwise", {"DepthwiseConv2dNative"}), ("matmul", {"MatMul", "BatchMatMulV2"}),
         ("batch norm", {"FusedBatchNormV3", "FusedBatchNorm"}), ("add", {"AddV2", "Add"}),
         ("softmax", {"Softmax"}), ("sigmoid", {"Sigmoid"}), ("gelu", {"Erf"}), ("layer norm", {"Rsqrt"})]
#: The issue's bar: float16 accumulation over this many terms or more must be named.
LONG_REDUCTION = 1000


def _quiet(function, *args, **kwargs):
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        return function(*args, **kwargs)


def _ac(workspace: Path) -> dict:
    from precision_tool.cli import main

    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        code = main(["-d", str(workspace), "--json", "ac", "-c", "--workers", "1"])
    data = json.loads(out.getvalue())["data"]
    verdict = data["verdict"]
    judgment = (data.get("compare") or {}).get("judgment") or {}
    culprit = (verdict.get("culprit") or {}).get("op_name")
    standouts = [op["op_name"] for op in judgment.get("standouts", [])]
    return {"exit": code, "culprit": culprit, "systemic": judgment.get("systemic", []), "standouts": standouts}


def _output_error(workspace: Path, result) -> float:
    """RED over the model's outputs: the NPU dump of each output's producing op against the reference's."""
    from precision_tool.formats.dump_file import read_dump_header
    from precision_tool.formats.dump_names import scan_dump_folder
    from precision_tool.formats.npy_dir import reference_op_name
    from precision_tool.formats.origin_tensor import read_origin_tensor

    plan = result.plans["debug_0"]
    folder = next((workspace / "npu" / "debug_0" / "dump").glob("*/0/*/1/0"))
    scan = scan_dump_folder(folder)
    diff = norm = 0.0
    for tensor in result.manifest["outputs"]:
        tf_op, _, index = tensor.partition(":")
        tf_op = plan.aliases.get(f"{tf_op}:{index or 0}", tensor).split(":")[0]
        npu_op = plan.op_for_tf(tf_op)
        if npu_op is None:
            continue
        outputs = [k for k, out in enumerate(npu_op.outputs) if out.tf_tensor.split(":")[0] == tf_op]
        dump = read_dump_header(scan.find(npu_op.name).latest.path)
        npu = read_origin_tensor(dump, dump.outputs[outputs[0] if outputs else 0]).array.astype(np.float64)
        (path,) = (workspace / "tf" / "dump").glob(f"{reference_op_name(tf_op)}.{index or 0}.*.npy")
        ref = np.load(path).astype(np.float64).reshape(npu.shape)
        keep = np.isfinite(npu) & np.isfinite(ref)
        diff += float(np.sum((npu[keep] - ref[keep]) ** 2))
        norm += float(np.sum(ref[keep] ** 2))
    return math.sqrt(diff / norm) if norm else 0.0


class Bench:
    def __init__(self, out: Path, numerics: str):
        self.out, self.numerics = out, numerics

    def emulate(self, script: Path, name: str, **options):
        from precision_tool.capture.emulate import EmulationOptions, emulate

        workspace = self.out / name
        if workspace.exists():
            shutil.rmtree(workspace)
        result = _quiet(emulate, str(script), str(workspace), EmulationOptions(numerics=self.numerics, **options))
        return workspace, result

    def exact_cost(self, script: Path, name: str, error: float, exact_ops, **options) -> float:
        """1 - error(with exact_ops exact) / error: the share of the outputs' error those ops cause."""
        workspace, result = self.emulate(script, name + "_exact", exact=frozenset(exact_ops), **options)
        exact_error = _output_error(workspace, result)
        shutil.rmtree(workspace)
        return 1.0 - exact_error / error if error > 0 else 0.0


def _sites(plan):
    """``[(kind, tf op)]``: per kind present, the TF ops (single-op NPU ops' leads or fused members) at a quarter,
    half and three quarters of the network, and the Cube op with the longest reduction."""
    by_kind = {}
    order = {op.name: k for k, op in enumerate(plan.graph.ops)}
    for kind, types in KINDS:
        names = [op.name for op in plan.graph.ops if op.type in types and plan.op_for_tf(op.name) is not None
                 and op.outputs and op.outputs[0].is_float]
        if names:
            by_kind[kind] = sorted(names, key=order.get)
    return by_kind


def _longest_reduction(plan):
    best, terms = None, 0
    for op in plan.graph.ops:
        if op.type in ("Conv2D", "MatMul") and plan.op_for_tf(op.name) is not None and len(op.inputs) > 1:
            shape = plan.graph.tensor(op.inputs[1]).shape
            k = int(np.prod(shape[:-1])) if op.type == "Conv2D" else int(shape[0])
            if k > terms:
                best, terms = op.name, k
    return best, terms


def _pass_with_most_ops(plan):
    counts = {}
    for group in plan.groups:
        for name in set(group.graph_passes) | ({group.ub_pass} if group.ub_pass else set()):
            counts[name] = counts.get(name, 0) + 1
    return max(counts.items(), key=lambda item: (item[1], item[0])) if counts else (None, 0)


def run_architecture(bench: Bench, arch: str, script: Path, env: dict) -> list:
    os.environ.update(env)
    slug = arch.replace(" ", "_")
    rows = []
    workspace, result = bench.emulate(script, f"{slug}_clean")
    plan = result.plans["debug_0"]
    clean_error = _output_error(workspace, result)
    verdict = _ac(workspace)
    row = {"arch": arch, "case": "clean", "planted": None, "truth": None, **verdict, "output_error": clean_error}
    if verdict["culprit"]:
        tf_ops = plan.op(verdict["culprit"]).tf_ops
        row["culprit_cost"] = bench.exact_cost(script, f"{slug}_clean", clean_error, tf_ops[:1])
    rows.append(row)
    sites = _sites(plan)
    kinds = list(sites)
    middle_kind = kinds[1 % len(kinds)]
    middle_op = sites[middle_kind][len(sites[middle_kind]) // 2]
    limit = _clean_max(workspace, plan, middle_op) / 2  # saturate at half the clean output's largest magnitude
    shutil.rmtree(workspace)
    plants = []
    for depth, fraction in enumerate((0.25, 0.5, 0.75)):
        kind = kinds[depth % len(kinds)]
        names = sites[kind]
        op = names[min(len(names) - 1, int(fraction * len(names)))]
        plants += [(f"noise 1% {kind} @{fraction:g}", op, "noise:0.01"),
                   (f"noise 2% {kind} @{fraction:g}", op, "noise:0.02")]
    plants.append((f"bias 5% {middle_kind}", middle_op, "bias:0.05"))
    if limit > 0:
        plants.append((f"saturate {middle_kind}", middle_op, f"saturate:{float(np.float16(limit))}"))
    planted_kinds = {kinds[depth % len(kinds)] for depth in range(3)}
    plants += [(f"other kind 2% {kind}", sites[kind][len(sites[kind]) // 2], "noise:0.02")
               for kind in kinds if kind not in planted_kinds]
    reduction, terms = _longest_reduction(plan)
    if reduction is not None:
        plants.append((f"fp16acc {terms} terms" if terms >= LONG_REDUCTION else f"short fp16acc {terms} terms",
                       reduction, "fp16acc"))
    for label, op, spec in plants:
        name = f"{slug}_{len(rows)}"
        workspace, result = bench.emulate(script, name, perturb={op: spec})
        error = _output_error(workspace, result)
        verdict = _ac(workspace)
        npu_op = result.plans["debug_0"].op_for_tf(op).name
        row = {"arch": arch, "case": label, "planted": npu_op, "tf_op": op, **verdict, "output_error": error,
               "named_first": verdict["culprit"] == npu_op}
        row["truth"] = None if label.startswith("other kind") else \
            bench.exact_cost(script, name, error, [op], perturb={op: spec})
        shutil.rmtree(workspace)
        rows.append(row)
    pass_name, count = _pass_with_most_ops(plan)
    if pass_name and count >= 2:
        from precision_tool.capture.emulate.faults import parse_fault

        name = f"{slug}_pass"
        workspace, result = bench.emulate(script, name, pass_faults={pass_name: parse_fault(pass_name, "0.02")})
        verdict = _ac(workspace)
        planted = [g.name for g in result.plans["debug_0"].groups
                   if pass_name in set(g.graph_passes) | {g.ub_pass}]
        named = any(f["name"] == pass_name for f in verdict["systemic"]) or set(planted) <= set(verdict["standouts"])
        rows.append({"arch": arch, "case": f"pass {pass_name} ({len(planted)} ops)", "planted": pass_name,
                     **verdict, "output_error": _output_error(workspace, result), "named_first": named,
                     "truth": None})
        shutil.rmtree(workspace)
    rows += _type_fault(bench, arch, slug, script, plan)
    return rows


def _clean_max(workspace: Path, plan, tf_op: str) -> float:
    """The largest magnitude of ``tf_op``'s NPU output in the clean run."""
    from precision_tool.formats.dump_file import read_dump_header
    from precision_tool.formats.dump_names import scan_dump_folder
    from precision_tool.formats.origin_tensor import read_origin_tensor

    folder = next((workspace / "npu" / "debug_0" / "dump").glob("*/0/*/1/0"))
    dump = read_dump_header(scan_dump_folder(folder).find(plan.op_for_tf(tf_op).name).latest.path)
    values = read_origin_tensor(dump, dump.outputs[0]).array.astype(np.float64)
    finite = values[np.isfinite(values)]
    return float(np.abs(finite).max()) if finite.size else 0.0


def _type_fault(bench: Bench, arch: str, slug: str, script: Path, plan) -> list:
    """2% noise on every op of the Cube type with the most ops: a wrong kernel. Named when the verdict's systemic
    faults name its NPU type (or a group of exactly its ops)."""
    counts = {}
    for group in plan.groups:
        lead = plan.graph.op(group.lead)
        if lead.type in ("Conv2D", "DepthwiseConv2dNative", "MatMul", "BatchMatMulV2"):
            counts.setdefault(lead.type, []).append(group.lead)
    if not counts:
        return []
    tf_type, ops = max(counts.items(), key=lambda item: (len(item[1]), item[0]))
    if len(ops) < 2:
        return []
    workspace, result = bench.emulate(script, f"{slug}_type", perturb={op: "noise:0.02" for op in ops})
    verdict = _ac(workspace)
    npu_ops = {result.plans["debug_0"].op_for_tf(op).name for op in ops}
    npu_type = result.plans["debug_0"].op_for_tf(ops[0]).type
    named = any(f["name"] == npu_type for f in verdict["systemic"]) or npu_ops <= set(verdict["standouts"])
    row = {"arch": arch, "case": f"type {npu_type} ({len(ops)} ops)", "planted": npu_type, **verdict,
           "output_error": _output_error(workspace, result), "named_first": named, "truth": None}
    shutil.rmtree(workspace)
    return [row]


def _table(rows: list, numerics: str) -> list:
    lines = [f"numerics {numerics}",
             f"{'architecture':<18} {'1% first':>9} {'2% first':>9} {'other 2%':>9} {'bias':>5} {'satur.':>6} "
             f"{'fp16acc':>8} {'pass':>5} {'type':>5} {'false culprit':>14}  misses / clean culprits"]
    for arch in dict.fromkeys(row["arch"] for row in rows):
        mine = [row for row in rows if row["arch"] == arch]

        def score(prefix, mine=mine):
            cases = [row for row in mine if row["case"].startswith(prefix)]
            return f"{sum(row['named_first'] for row in cases)}/{len(cases)}" if cases else "-"
        clean = next(row for row in mine if row["case"] == "clean")
        short = [row for row in mine if row["case"].startswith("short fp16acc")]
        false = "-" if not clean["culprit"] else ("yes" if clean.get("culprit_cost", 0) < 0.5 else "no")
        cost = clean.get("culprit_cost", 0)
        notes = [f"clean culprit {clean['culprit']} (cost {cost:.0%})"] if clean["culprit"] else []
        notes += [f"{row['case']}: {row['culprit'] or 'none'}" for row in mine
                  if row["case"] != "clean" and not row["named_first"] and row not in short]
        notes += [f"{row['case']} (below {LONG_REDUCTION}): {'named' if row['named_first'] else 'not named'}"
                  for row in short]
        lines.append(f"{arch:<18} {score('noise 1%'):>9} {score('noise 2%'):>9} {score('other kind'):>9} "
                     f"{score('bias'):>5} {score('saturate'):>6} {score('fp16acc'):>8} {score('pass'):>5} "
                     f"{score('type'):>5} {false:>14}  {'; '.join(notes)[:160]}")
    planted = [row for row in rows if row["case"] != "clean" and not row["case"].startswith("short")]
    one = [row for row in planted if row["case"].startswith("noise 1%")]
    two = [row for row in planted if row["case"].startswith("noise 2%")]
    two += [row for row in planted if row["case"].startswith("other kind")]
    lines.append(f"all: noise 1% named first {sum(r['named_first'] for r in one)}/{len(one)}, noise 2% "
                 f"{sum(r['named_first'] for r in two)}/{len(two)}")
    truths = [row["truth"] for row in planted if row.get("truth") is not None]
    if truths:
        lines.append(f"truth by --exact: the planted op causes {np.median(truths):.0%} of the outputs' error "
                     f"(median over {len(truths)} plants; min {min(truths):.0%})")
    return lines


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=None)
    parser.add_argument("--quick", action="store_true", help=f"only {', '.join(QUICK)}")
    parser.add_argument("--arch", action="append", default=[])
    parser.add_argument("--numerics", action="append", default=[])
    args = parser.parse_args(argv)
    out = Path(args.out or tempfile.mkdtemp(prefix="bench-diagnosis-"))
    out.mkdir(parents=True, exist_ok=True)
    archs = args.arch or (list(QUICK) if args.quick else list(ARCHITECTURES))
    report = {}
    start = time.time()
    for numerics in args.numerics or ["ascend910", "ideal"]:
        bench = Bench(out, numerics)
        rows = []
        for arch in archs:
            script, env = ARCHITECTURES[arch]
            began = time.time()
            try:
                rows += run_architecture(bench, arch, script, env)
            except Exception as error:  # noqa: BLE001 -- one architecture failing is reported, the others go on
                rows.append({"arch": arch, "case": "clean", "culprit": None, "error": f"{type(error).__name__}: "
                             f"{error}"[:300], "named_first": False})
            print(f"[{numerics}] {arch}: {time.time() - began:.0f} s", file=sys.stderr, flush=True)
        report[numerics] = rows
        print("\n".join(_table([r for r in rows if "error" not in r], numerics)))
        for row in rows:
            if "error" in row:
                print(f"{row['arch']}: not run: {row['error']}")
        print()
    print(f"{time.time() - start:.0f} s in all; cases in {out / 'diagnosis.json'}")
    (out / "diagnosis.json").write_text(json.dumps(report, indent=1, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
