"""``make bench``: ``compare --cluster`` on a local Dask scheduler with 1 and 2 workers, beside the local run
(issue 43).

The case is ``run.py``'s nd variant (``make_case.py``: 300 ops, float16 outputs of 262,144 elements against float32
npy references, chain graph), and its one-op case, both reused from ``/tmp/precision_tool_bench``. A scheduler with
N worker processes of one thread each (``LocalCluster`` in a child process, started before and kept up across the
runs, as a user's cluster is) runs the comparison of ``compare --cluster``; the local run is ``compare --workers N``.
Each run is a fresh process measured by ``run.py``'s ``measure`` (wall time from start to exit); the
configurations take turns run by run, after one unmeasured warm-up each, and the best of ``--repeat`` is shown.

Printed per configuration: the wall time of 300 ops and of one op, and the cost of one more pair,
``(wall(300 ops) - wall(1 op)) / 299`` -- Python's start-up, our imports and connecting to the scheduler are in
both walls, so the difference is what each pair costs. On this 2-core machine the scheduler, the client and the
workers share the cores: the figure that matters is that cost, not a speed-up. Every cluster CSV is checked byte
for byte against the local run's. msaccucmp, which has no cluster mode, is ``run.py``'s row.
"""
from __future__ import annotations

import argparse
import filecmp
import os
import shutil
import subprocess
import sys
from typing import Dict, List

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, REPO)
sys.path.insert(0, HERE)

from run import DEFAULT_ROOT, _load_make_case, _only_csv, measure_in_fresh_process  # noqa: E402

SCHEDULER = """
import sys
from distributed import LocalCluster
if __name__ == "__main__":
    cluster = LocalCluster(n_workers=int(sys.argv[1]), threads_per_worker=1, processes=True, dashboard_address=None)
    print(cluster.scheduler_address, flush=True)
    sys.stdin.read()
    cluster.close()
"""


def start_scheduler(root: str, workers: int):
    """A child process holding a LocalCluster of ``workers`` processes; returns it and the scheduler's address."""
    script = os.path.join(root, "cluster_scheduler.py")
    with open(script, "w") as handle:
        handle.write(SCHEDULER)
    child = subprocess.Popen([sys.executable, script, str(workers)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             stderr=subprocess.DEVNULL, universal_newlines=True,
                             env={**os.environ, "PYTHONPATH": REPO})
    return child, child.stdout.readline().strip()


def stop(child) -> None:
    child.stdin.close()
    try:
        child.wait(timeout=30)
    except subprocess.TimeoutExpired:
        child.kill()


def compare_command(case: str, out: str, extra: List[str]) -> List[str]:
    return [sys.executable, "-m", "precision_tool", "compare", "-m", os.path.join(case, "npu"), "-g",
            os.path.join(case, "ref"), "-f", os.path.join(case, "graph.json"), "-out", out, *extra]


def measure_workers(root: str, workers: int, cases: Dict[int, str], repeat: int) -> Dict[str, Dict[int, dict]]:
    """``{configuration: {ops: best measurement}}`` for the local run and the cluster of ``workers`` workers."""
    child, address = start_scheduler(root, workers)
    try:
        configurations = {f"local, --workers {workers}": ["--workers", str(workers)],
                          f"cluster, {workers} worker{'s' * (workers > 1)}": ["--cluster", address]}
        best: Dict[str, Dict[int, dict]] = {name: {} for name in configurations}
        for ops, case in cases.items():
            for run in range(-1, repeat):  # run -1 warms the caches (and the workers' imports) and is not kept
                for name, extra in configurations.items():  # taking turns
                    out = os.path.join(root, "out", "cluster", f"{ops}_{name.split(',')[0]}_{workers}_{run}")
                    shutil.rmtree(out, ignore_errors=True)
                    os.makedirs(out)
                    measured = measure_in_fresh_process(compare_command(case, out, extra))
                    measured["csv"] = _only_csv(out)
                    if run >= 0 and measured["wall_s"] < best[name].get(ops, {"wall_s": float("inf")})["wall_s"]:
                        best[name][ops] = measured
    finally:
        stop(child)
    return best


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", default=DEFAULT_ROOT)
    parser.add_argument("--ops", type=int, default=300)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)
    try:
        import distributed  # noqa: F401
    except ImportError:
        print("cluster line skipped: Dask's distributed is not installed (pip install '.[cluster]')")
        return 0
    from tabulate import tabulate

    make_case = _load_make_case()
    cases = {ops: make_case.build_case(os.path.join(args.root, f"nd_{ops}"), variant="nd", ops=ops)
             for ops in (args.ops, 1)}
    rows, identical = [], True
    for workers in (1, 2):
        best = measure_workers(args.root, workers, cases, args.repeat)
        local = best[f"local, --workers {workers}"]
        for name, measured in best.items():
            full, one = measured[args.ops], measured[1]
            identical &= filecmp.cmp(full["csv"], local[args.ops]["csv"], shallow=False)
            per_pair = 1000 * (full["wall_s"] - one["wall_s"]) / max(1, args.ops - 1)
            local_pair = 1000 * (local[args.ops]["wall_s"] - local[1]["wall_s"]) / max(1, args.ops - 1)
            rows.append([name, f"{full['wall_s']:.2f}", f"{one['wall_s']:.2f}", f"{per_pair:.2f}",
                         f"{per_pair - local_pair:+.2f}", full["returncode"]])
    print(f"\ncompare on a local Dask cluster, {args.ops} ops of 262,144 elements (nd), best of {args.repeat}:")
    print(tabulate(rows, headers=["run", f"wall s, {args.ops} ops", "wall s, 1 op", "ms per pair",
                                  "ms per pair vs local", "exit"], disable_numparse=True))
    print(f"cluster CSVs byte-identical to the local run's: {'yes' if identical else 'NO'}")
    return 0 if identical else 1


if __name__ == "__main__":
    sys.exit(main())
