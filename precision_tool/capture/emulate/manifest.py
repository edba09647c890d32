"""``manifest.json``: what an emulated workspace holds and what was planted in it (:func:`build_manifest`).

``perturbations`` has one entry per planted TF op, sorted by name: a noise entry keeps its original form
``{"tf_op", "rel", "npu_op"}``, so that workspaces written before read the same; every other kind is
``{"tf_op", "kind", "spec", "params", "npu_op", "effect"}`` (:func:`~.faults.fault_effect`). Paths use ``/``.
The keys: docs/internals/emulator.md#manifest; the entries: docs/emulate.md#files-written ("Planted kernels").
"""
from __future__ import annotations

import json
import os
from typing import List, Optional

from precision_tool.fileio import atomic_write
from precision_tool.formats.fusion_result import fusion_switches_to_json


def _rel(root: str, path: Optional[str]) -> Optional[str]:
    return None if path is None else _rel_path(root, path)


def _rel_path(root: str, path: str) -> str:
    return os.path.relpath(path, root).replace(os.sep, "/")


def _all_files(root: str) -> List[str]:
    found = []
    for folder, _, files in os.walk(root):
        for name in files:
            found.append(_rel_path(root, os.path.join(folder, name)))
    return sorted(found)


def _perturbations(options, runs) -> list:
    planted = []
    for tf_op, fault in sorted(options.faults.items()):
        npu_ops = {}
        for run in runs:
            op = run["plan"].op_for_tf(tf_op)
            npu_ops[run["name"]] = op.name if op is not None else None
        only = {"fp16_only": True} if fault.fp16_only else {}
        if fault.kind == "noise" and not fault.fp16_only:
            planted.append({"tf_op": tf_op, "rel": fault.value, "npu_op": npu_ops})
            continue
        planted.append({"tf_op": tf_op, "kind": fault.kind, "spec": fault.spec, "params": fault.parameters(),
                        "npu_op": npu_ops, **only,
                        "effect": {run["name"]: run.get("faults", {}).get(tf_op) for run in runs}})
    return planted


def _pass_faults(options, runs) -> list:
    """Each ``--perturb-pass`` fault and the NPU ops of each run it landed on (none where the pass was off)."""
    planted = []
    for pass_name, fault in sorted(options.pass_faults.items()):
        landed = {run["name"]: sorted(group.name for group in run["plan"].groups
                                      if pass_name in group.graph_passes or pass_name == group.ub_pass)
                  for run in runs}
        planted.append({"pass": pass_name, "spec": fault.spec, "npu_ops": landed})
    return planted


def _overflow(root: str, runs, overflow) -> dict:
    if not overflow or not overflow["events"]:
        return {"dir": None, "first_op": None, "origin_ops": [], "ops": [], "records": []}
    plan = runs[0]["plan"]
    events = overflow["events"]
    origins = [e.op_name for e in events if e.origin]
    return {
        "dir": _rel(root, overflow["dump_dir"]),
        "first_op": events[0].op_name,
        "origin_ops": origins,
        "origin_tf_ops": [list(plan.op(name).tf_ops) for name in origins],
        "ops": [{"npu_op": e.op_name, "status": f"0x{e.status:x}", "origin": e.origin} for e in events],
        "records": sorted(_rel(root, p) for p in overflow["files"] if os.path.basename(p).startswith("Opdebug.")),
    }


def build_manifest(root: str, script: str, model_name: str, options, batch, frozen, reference, runs,
                   overflow) -> dict:
    first = runs[0]["plan"]
    groups = [{"npu_op": op.name, "type": op.type, "tf_ops": list(op.tf_ops), "passes": list(op.group.graph_passes),
               "ub_pass": op.group.ub_pass}
              for op in first.ops if op.kind == "compute" and op.group.is_fused]
    training = {} if frozen.training_step is None else {"training_step": frozen.training_step}
    return {
        **training,
        "generator": "precision_tool emulate",
        "model_script": script.replace(os.sep, "/"),
        "model_name": model_name,
        "seed": options.seed,
        "scale": options.scale,
        "fusion": options.fusion,
        "inputs": [{"name": name.split(":")[0], "dtype": str(a.dtype), "shape": list(a.shape)}
                   for name, a in zip(frozen.inputs, batch)],
        "outputs": list(frozen.outputs),
        "reference": {"dir": _rel(root, reference.dump_dir), "files": len(reference.files)},
        "runs": [{"dir": f"npu/{run['name']}", "fusion": run["fusion"], "dump_dir": _rel(root, run["dump_dir"]),
                  "graph": _rel(root, run["graph"]), "executed_ops": len(run["plan"].tasks),
                  "files": len(run["dumps"])} for run in runs],
        "fusion_groups": groups,
        "perturbations": _perturbations(options, runs),
        "pass_faults": _pass_faults(options, runs),
        "fusion_switches": (fusion_switches_to_json(options.switches)["Switch"] if options.switches is not None
                            else None),
        "keep_fp32": sorted(options.keep_fp32),
        **options.hardware.to_dict(),
        "exact": sorted(options.exact),
        "overflow": _overflow(root, runs, overflow),
        **({"dump_data": options.dump_data} if options.dump_data != "tensor" else {}),
        **({"dump_layer": sorted(options.dump_layer)} if options.dump_layer else {}),
        "files": _all_files(root),
    }


def write_manifest(manifest: dict, path: str) -> str:
    with atomic_write(path, "w") as handle:
        handle.write(json.dumps(manifest, indent=2, sort_keys=False) + "\n")
    return path

