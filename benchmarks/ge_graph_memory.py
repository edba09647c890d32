"""``make bench``: peak memory of ``ge2json``, ``ls`` and ``ni`` on a 200,000-op GE Build graph (issue 14).

The goal: each command's peak resident set stays within 4x the graph file's size. The graph (about 130 MB of
protobuf text: a chain of small ops, each with an ``_datadump_original_op_names`` attribute and one output
descriptor carrying its origin attributes, as GE writes a Build graph) is written once with the project's own
writer into ``benchmarks/.cache/ge_graph_memory/`` (a workspace: ``npu/debug_0/graph/ge_proto_00000001_Build.txt``)
and reused while complete.

Each command runs as ``python -m precision_tool ...`` in a fresh measuring process, whose
``getrusage(RUSAGE_CHILDREN).ru_maxrss`` is that one command's peak RSS. Printed side by side: file size,
peak RSS, the ratio, and the 4x goal. Exit status 1 when any command misses the goal (or fails), 0 otherwise.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from typing import List, Tuple

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, REPO)

DEFAULT_OPS = 200_000
GOAL_RATIO = 4.0
CACHE = os.path.join(HERE, ".cache", "ge_graph_memory")
OP_TYPES = ("Conv2D", "Relu", "Add", "Cast", "TransData")
_MEASURE = ("import resource, subprocess, sys\n"
            "code = subprocess.call(sys.argv[1:], stdout=subprocess.DEVNULL)\n"
            "print(code, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n")


def op_name(index: int) -> str:
    """The name of op ``index`` of the chain: five ops per block, ``b0/op0`` ... ``b0/op4``, ``b1/op0`` ..."""
    return f"b{index // 5}/op{index % 5}"


def _op(index: int):
    from precision_tool.formats.ge_graph import InputRef, OpNode, tensor_desc

    name = op_name(index)
    desc = tensor_desc("DT_FLOAT16", "NHWC", (1, 4, 4, 3), origin_name=name, origin_output_index=0)
    inputs = (InputRef(op_name(index - 1), 0),) if index else ()
    return OpNode(name, OP_TYPES[index % len(OP_TYPES)], id=index, stream_id=1, inputs=inputs, output_descs=(desc,),
                  attrs={"_datadump_original_op_names": [name]})


def graph_file(ops: int) -> str:
    """The Build graph of ``ops`` ops in the cached workspace, written first when missing."""
    from precision_tool.formats.ge_graph import Graph, GraphModel
    from precision_tool.formats.ge_io import write_ge_graph_text

    workspace = os.path.join(CACHE, f"ops_{ops}")
    folder = os.path.join(workspace, "npu", "debug_0", "graph")
    path = os.path.join(folder, "ge_proto_00000001_Build.txt")
    if not os.path.exists(path):
        os.makedirs(folder, exist_ok=True)
        print(f"writing a {ops:,}-op graph to {path} (once) ...", flush=True)
        model = GraphModel((Graph("ge_default_bench", tuple(_op(k) for k in range(ops))),), name="ge_default_bench")
        write_ge_graph_text(model, path)
    return path


def peak_rss(command: List[str]) -> Tuple[int, int, float]:
    """``(exit code, peak RSS in bytes, seconds)`` of ``command`` run by a fresh measuring process."""
    started = time.perf_counter()
    result = subprocess.run([sys.executable, "-c", _MEASURE, *command], check=True, capture_output=True, text=True,
                            cwd=REPO)
    code, kilobytes = (int(word) for word in result.stdout.split())
    return code, kilobytes * 1024, time.perf_counter() - started


def commands(path: str, out_dir: str) -> List[Tuple[str, List[str]]]:
    """The measured runs: label and command line."""
    workspace = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(path))))
    tool = [sys.executable, "-m", "precision_tool"]
    return [("ge2json", tool + ["ge2json", path, "-o", os.path.join(out_dir, "graph.json")]),
            ("ls", tool + ["-d", workspace, "ls"]),
            ("ni", tool + ["-d", workspace, "ni", op_name(1)])]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--ops", type=int, default=DEFAULT_OPS, help="ops in the graph (default %(default)s)")
    args = parser.parse_args(argv)
    path = graph_file(args.ops)
    size = os.path.getsize(path)
    out_dir = os.path.join(CACHE, "out")
    os.makedirs(out_dir, exist_ok=True)
    print(f"GE graph: {args.ops:,} ops, {size / 2**20:.0f} MiB ({path})")
    print(f"{'command':<10}{'file MiB':>10}{'peak RSS MiB':>14}{'ratio':>8}{'goal':>7}{'seconds':>9}  verdict")
    missed = False
    for label, command in commands(path, out_dir):
        code, peak, seconds = peak_rss(command)
        ratio = peak / size
        ok = code == 0 and ratio <= GOAL_RATIO
        missed |= not ok
        verdict = "ok" if ok else (f"exit {code}" if code else "MISSED")
        print(f"{label:<10}{size / 2**20:>10.0f}{peak / 2**20:>14.0f}{ratio:>7.1f}x{GOAL_RATIO:>6.0f}x{seconds:>9.1f}"
              f"  {verdict}")
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
