"""``make bench``: ``ac -c`` on a statistics run of 20,000 ops and 4 steps, beside ``ac -c`` on a tensor dump of the
same model (issue 42).

The model is a chain of ``--ops`` Add ops (default 20,000), each with one float16 input and one float16 output of
``--elements`` elements (default 4,096, ND), the outputs' float32 references in ``tf/dump`` (``{name}.0.{ts}.npy``),
and its Build graph. Two workspaces share the references:

* ``stats``: a dump tree of 4 steps (``{time}/0/{model}/1/{step}/``) holding GE's per-op statistics CSV of every op
  (``{dump file name}.csv``, default header, one Input and one Output row: the facts' form), each step the
  statistics of the tensors the reference was taken of (a CPU reference is one step; a step of other data would
  differ everywhere, which is not what is measured here);
* ``tensor``: the same model's tensor dump of one step (4 steps would take 4 times the disk; the time and memory
  of a step are what is compared).

Each run is a fresh process (``run.py``'s ``measure``: wall time, peak RSS of the largest process, peak summed PSS
of the process tree): ``ac -c --step S`` on the statistics tree for each step, and ``ac -c --no-replay`` on the
tensor dump (replay would need TensorFlow; the comparison is what is compared). Built once into
``/tmp/precision_tool_bench/statistics_{ops}`` and reused. Printed: the disk each tree takes, then per run the
figures side by side.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, REPO)
sys.path.insert(0, HERE)

from precision_tool.formats.dump_names import build_dump_name  # noqa: E402
from precision_tool.formats.dump_writer import TensorSpec, write_dump  # noqa: E402
from precision_tool.formats.ge_graph import Graph, GraphModel, InputRef, OpNode, tensor_desc  # noqa: E402
from precision_tool.formats.ge_io import write_ge_graph_text  # noqa: E402
from precision_tool.formats.npy_dir import write_reference_npy  # noqa: E402
from precision_tool.formats.stats_csv import TensorStats, stats_csv_text  # noqa: E402
from precision_tool.formats.tensor_kind import INPUT, OUTPUT  # noqa: E402

TS = 1732000000000000
STEPS = 4
MODEL = "ge_default_bench"


def _tree(workspace: str, step: int) -> str:
    return os.path.join(workspace, "npu", "debug_0", "dump", "20241119070640", "0", MODEL, "1", str(step))


def _row(kind, array: np.ndarray) -> TensorStats:
    values = array.astype(np.float64)
    return TensorStats(kind, 0, "DT_FLOAT16", "ND", array.shape, values.size, float(values.max()),
                       float(values.min()), float(values.mean()), nan=0, neg_inf=0, pos_inf=0,
                       data_size=array.nbytes)


def build(root: str, ops: int, elements: int) -> str:
    """Both workspaces under ``root`` (created; reused when complete)."""
    done = os.path.join(root, ".complete")
    if os.path.exists(done):
        return root
    stats, tensor, reference = (os.path.join(root, name) for name in ("stats", "tensor", "reference"))
    for folder in [reference, _tree(tensor, 0)] + [_tree(stats, step) for step in range(STEPS)]:
        os.makedirs(folder, exist_ok=True)
    for workspace in (stats, tensor):
        os.makedirs(os.path.join(workspace, "tf"), exist_ok=True)
        if not os.path.lexists(os.path.join(workspace, "tf", "dump")):
            os.symlink(reference, os.path.join(workspace, "tf", "dump"))
    rng = np.random.default_rng(0)
    shape = (elements,)
    desc = tensor_desc("DT_FLOAT16", "ND", list(shape), origin_format="ND", origin_shape=list(shape))
    previous = rng.standard_normal(shape).astype(np.float16)
    write_reference_npy(reference, "input", 0, previous.astype(np.float32), timestamp_us=TS)
    nodes = [OpNode("input", "Data", id=0, output_descs=(desc,))]
    started = time.perf_counter()
    for i in range(ops):
        name = f"block{i}/op"
        file_name = build_dump_name("Add", name, i + 1, 0, TS + i).file_name
        output = (previous.astype(np.float32) * 0.9
                  + rng.standard_normal(shape).astype(np.float32) * 0.1).astype(np.float16)
        text = stats_csv_text([_row(INPUT, previous), _row(OUTPUT, output)])
        for step in range(STEPS):
            with open(os.path.join(_tree(stats, step), file_name + ".csv"), "w") as handle:
                handle.write(text)
        write_dump(os.path.join(_tree(tensor, 0), file_name), name, dump_time=TS + i,
                   inputs=[TensorSpec(previous, format="ND", original_shape=shape)],
                   outputs=[TensorSpec(output, format="ND", original_shape=shape, original_op=(name, 0))])
        noisy = output.astype(np.float32) + rng.standard_normal(shape).astype(np.float32) * 1e-3
        write_reference_npy(reference, name, 0, noisy, timestamp_us=TS + i)
        previous = output
        producer = "input" if i == 0 else f"block{i - 1}/op"
        nodes.append(OpNode(name, "Add", id=i + 1, inputs=(InputRef(producer, 0),), input_descs=(desc,),
                            output_descs=(desc,), attrs={"_datadump_original_op_names": [name]}))
        if (i + 1) % 5000 == 0:
            print(f"  built {i + 1:,} of {ops:,} ops ({time.perf_counter() - started:.0f} s)", flush=True)
    model = GraphModel((Graph(MODEL, tuple(nodes)),), name=MODEL)
    for workspace in (stats, tensor):
        graph = os.path.join(workspace, "npu", "debug_0", "graph")
        os.makedirs(graph, exist_ok=True)
        write_ge_graph_text(model, os.path.join(graph, "ge_proto_00000001_Build.txt"))
    open(done, "w").close()
    return root


def _disk(folder: str) -> int:
    total = 0
    for parent, _, files in os.walk(folder):
        total += sum(os.path.getsize(os.path.join(parent, name)) for name in files)
    return total


def _measure(command):
    import json

    done = subprocess.run([sys.executable, os.path.join(HERE, "run.py"), "--measure", "--", *command],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, check=True)
    return json.loads(done.stdout.splitlines()[-1])


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ops", type=int, default=20000)
    parser.add_argument("--elements", type=int, default=4096)
    parser.add_argument("--root", default=None, help="where to build the case (default /tmp/precision_tool_bench/"
                                                     "statistics_OPS)")
    args = parser.parse_args(argv)
    root = args.root or f"/tmp/precision_tool_bench/statistics_{args.ops}"
    print(f"statistics vs tensors: a chain of {args.ops:,} Add ops, {args.elements:,} float16 elements per tensor")
    build(root, args.ops, args.elements)
    stats, tensor = os.path.join(root, "stats"), os.path.join(root, "tensor")
    stats_disk = _disk(os.path.join(stats, "npu", "debug_0", "dump"))
    tensor_disk = _disk(os.path.join(tensor, "npu", "debug_0", "dump"))
    print(f"  NPU dump on disk: statistics {stats_disk / 2 ** 20:,.1f} MiB for {STEPS} steps "
          f"({stats_disk / STEPS / 2 ** 20:,.1f} MiB a step); tensors {tensor_disk / 2 ** 20:,.1f} MiB for one step")
    tool = [sys.executable, "-m", "precision_tool"]
    rows = []
    for step in range(STEPS):
        out = os.path.join(root, "out", f"stats_{step}")
        rows.append((f"statistics, step {step}", _measure(tool + ["-d", stats, "ac", "-c", "--step", str(step),
                                                                  "-o", out])))
    rows.append(("tensors, step 0", _measure(tool + ["-d", tensor, "ac", "-c", "--no-replay", "-o",
                                                     os.path.join(root, "out", "tensor")])))
    print(f"  {'ac -c on':<22} {'wall s':>8} {'peak RSS MiB':>13} {'tree PSS MiB':>13} {'exit':>5}")
    for label, figures in rows:
        print(f"  {label:<22} {figures['wall_s']:8.1f} {figures['max_rss_mib']:13.0f} {figures['tree_pss_mib']:13.0f} "
              f"{figures['returncode']:5d}")
        if figures["returncode"] not in (0, 1):
            print("    " + figures["stderr_tail"].strip().splitlines()[-1])
    return 0


if __name__ == "__main__":
    sys.exit(main())
