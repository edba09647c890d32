"""``make bench``: our ``compare`` against msaccucmp's on the same files -- wall time, peak memory, agreement.

Builds the peer-style case (``make_case.py``: 300 ops, float16 outputs of 262,144 elements against float32
npy references, chain graph) in its ND and NC1HWC0 variants once into ``/tmp/precision_tool_bench`` (reused
when complete), then runs, each as a subprocess of a fresh measuring process::

    python -m precision_tool compare -m CASE/npu -g CASE/ref -f CASE/graph.json -out OUT
    bash ../shared/peers/msaccucmp/msaccucmp.sh compare -m CASE/npu -g CASE/ref -f CASE/graph.json -out OUT

Measured per run: wall time, from start to the child's exit (the memory sampling runs in a thread, so no run is
rounded up to a sampling tick); peak RSS of the largest process (``getrusage(RUSAGE_CHILDREN).ru_maxrss`` in the
measuring process, which covers our worker processes as well); and the peak of the whole process tree's summed
proportional set size (PSS: pages shared after fork counted once), sampled every 50 ms. For scale, the RSS of
``precision_tool help`` (interpreter, numpy, every command module) is measured too: what a run needs above it
is the comparison's own working set.
Ours runs ``--repeat`` times (best wall time shown, all listed), the peer ``--peer-repeat`` times. Then both
CSVs are read with our reader and every metric column compared: the largest absolute difference, and whether
each agrees within 1e-6 (relative above 1; AccumulatedRelativeError per element). The peer is skipped, with a
message, when its script or venv is missing.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import time
from typing import Dict, List, Optional

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, REPO)

DEFAULT_ROOT = "/tmp/precision_tool_bench"
PEER_SCRIPT = os.path.join(REPO, os.pardir, "shared", "peers", "msaccucmp", "msaccucmp.sh")
VARIANTS = ("nd", "nc1hwc0", "huge", "huge_nc1hwc0")
SAMPLE_SECONDS = 0.05


# --------------------------------------------------------------------------------------------- measuring
def _children(pid: int) -> List[int]:
    found = []
    try:
        for task in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/children") as handle:
                found += [int(child) for child in handle.read().split()]
    except OSError:
        pass
    return found


def _proportional_rss(pid: int) -> int:
    """Bytes of ``pid``'s proportional set size (shared pages divided among their sharers); RSS if the kernel
    has no ``smaps_rollup``."""
    try:
        with open(f"/proc/{pid}/smaps_rollup") as handle:
            for line in handle:
                if line.startswith("Pss:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    with open(f"/proc/{pid}/statm") as handle:
        return int(handle.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def _tree_pss(pid: int) -> int:
    """Summed proportional set size of ``pid`` and all its descendants (0 for processes already gone)."""
    total, stack = 0, [pid]
    while stack:
        current = stack.pop()
        try:
            total += _proportional_rss(current)
        except (OSError, IndexError, ValueError):
            continue
        stack += _children(current)
    return total


def _user_env() -> Dict[str, str]:
    """The environment of a user's shell: Python writes and reads its bytecode caches (a CI shell may set
    PYTHONDONTWRITEBYTECODE, which would make every run compile every module from source)."""
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def measure(command: List[str]) -> dict:
    """Run ``command``; ``{"wall_s", "max_rss_mib", "tree_pss_mib", "returncode"}``. Meant for a fresh process."""
    import tempfile

    import threading

    with tempfile.TemporaryFile() as log:  # a file, not a pipe: a chatty child never blocks on a full pipe
        started = time.perf_counter()
        child = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=log, env=_user_env())
        peak = [0]
        done = threading.Event()

        def sample() -> None:  # in a thread, so the wall time is taken when the child ends, not at a sampling tick
            while not done.is_set():
                peak[0] = max(peak[0], _tree_pss(child.pid))
                done.wait(SAMPLE_SECONDS)

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        child.wait()
        wall = time.perf_counter() - started
        done.set()
        sampler.join()
        peak_tree = peak[0]
        log.seek(0)
        stderr = log.read().decode(errors="replace")
    max_rss_kib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return {"wall_s": wall, "max_rss_mib": max_rss_kib / 1024, "tree_pss_mib": peak_tree / 2 ** 20,
            "returncode": child.returncode, "stderr_tail": stderr[-2000:]}


def measure_in_fresh_process(command: List[str]) -> dict:
    """:func:`measure` in a new interpreter, so RUSAGE_CHILDREN holds this run's processes only."""
    out = subprocess.run([sys.executable, os.path.abspath(__file__), "--measure", "--", *command],
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout.splitlines()[-1])


# --------------------------------------------------------------------------------------------- comparing CSVs
def _agrees(ours: float, theirs: float, name: str, n: int) -> bool:
    if name == "AccumulatedRelativeError" and n > 1:
        ours, theirs = ours / n, theirs / n
    return abs(ours - theirs) <= 1e-6 * max(1.0, abs(theirs)) + 1e-6


def csv_agreement(ours_csv: str, peer_csv: str, elements: int) -> dict:
    """Per metric: the largest |ours - peer| over tensors both computed, and how many cells disagree."""
    from precision_tool.metrics import ALL
    from precision_tool.reports.result_csv import read_result_csv

    ours = {row.tensor_id: row for row in read_result_csv(ours_csv).rows if row.tensor_id}
    theirs = {row.tensor_id: row for row in read_result_csv(peer_csv).rows if row.tensor_id}
    common = sorted(set(ours) & set(theirs))
    report = {"tensors_both": len(common), "only_ours": len(set(ours) - set(theirs)),
              "only_peer": len(set(theirs) - set(ours)), "metrics": {}}
    for name in ALL:
        worst, disagree = 0.0, 0
        for tensor_id in common:
            a, b = ours[tensor_id].metric(name), theirs[tensor_id].metric(name)
            if name == "StandardDeviation":
                disagree += a != b
                continue
            if a is None or b is None:
                disagree += (a is None) != (b is None)
                continue
            worst = max(worst, abs(a - b))
            disagree += not _agrees(a, b, name, elements)
        report["metrics"][name] = {"max_abs_diff": worst, "disagreeing": disagree}
    return report


# --------------------------------------------------------------------------------------------- running
def _load_make_case():
    import importlib.util

    spec = importlib.util.spec_from_file_location("make_case", os.path.join(HERE, "make_case.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def peer_available() -> Optional[str]:
    """``None`` when the peer can run, else why not."""
    if not os.path.isfile(PEER_SCRIPT):
        return f"no peer script at {os.path.normpath(PEER_SCRIPT)}"
    venv = os.environ.get("PEER_VENV", "/tmp/peer-venv")
    if not os.path.exists(os.path.join(venv, "bin", "python")):
        return f"peer venv {venv} not set up (make peer)"
    return None


def _only_csv(folder: str) -> str:
    found = [name for name in os.listdir(folder) if name.startswith("result_") and name.endswith(".csv")]
    if len(found) != 1:
        raise RuntimeError(f"{folder}: expected one result CSV, found {found}")
    return os.path.join(folder, found[0])


def _computed_rows(csv_path: str) -> int:
    from precision_tool.reports.result_csv import read_result_csv

    return sum(1 for row in read_result_csv(csv_path).rows if row.cosine is not None)


PLAIN_READ = ("import os, sys\n"
              "buffer = bytearray(1 << 24)\n"
              "for folder in sys.argv[1:]:\n"
              "    for name in sorted(os.listdir(folder)):\n"
              "        with open(os.path.join(folder, name), 'rb', buffering=0) as f:\n"
              "            while f.readinto(buffer):\n"
              "                pass\n")


def run_variant(root: str, variant: str, ops: int, repeat: int, peer_repeat: int, workers: Optional[int]) -> Dict:
    """Ours, a plain read of the same files (one Python process reading every file once: the I/O floor) and the
    peer (not for the huge pair: it holds every tensor in float32 copies), each after one unmeasured warm-up run
    (page cache and bytecode caches filled, as for a user's second run). The tools take turns run by run: on a
    shared machine whose speed drifts over minutes (measured here: the plain read of one case went from 0.12 s to
    0.16 s within an hour), runs made back to back are what can be compared."""
    huge = variant.startswith("huge")
    ops = 1 if huge else ops
    case = _load_make_case().build_case(os.path.join(root, f"{variant}_{ops}"), variant=variant, ops=ops)
    args = ["compare", "-m", os.path.join(case, "npu"), "-g", os.path.join(case, "ref"),
            "-f", os.path.join(case, "graph.json")]
    results: Dict[str, Dict] = {}
    runs = {"ours": ([sys.executable, "-m", "precision_tool"] + args + (["--workers", str(workers)] if workers else []),
                     repeat),
            "plain read": ([sys.executable, "-c", PLAIN_READ, os.path.join(case, "npu"), os.path.join(case, "ref")],
                           repeat)}
    skip = "not run on the huge pair (it holds every tensor in float32 copies)" if huge else peer_available()
    if skip is None:
        runs["msaccucmp"] = (["bash", os.path.normpath(PEER_SCRIPT)] + args, peer_repeat)
    kept: Dict[str, List[dict]] = {tool: [] for tool in runs}
    for i in range(-1, max(times for _, times in runs.values())):  # run -1 warms the caches and is not kept
        for tool, (command, times) in runs.items():  # the tools take turns: a drifting machine slows each alike
            if i >= times:
                continue
            out = os.path.join(root, "out", f"{variant}_{ops}", f"{tool}_{i}")
            shutil.rmtree(out, ignore_errors=True)
            os.makedirs(out)
            measured = measure_in_fresh_process(command + ([] if tool == "plain read" else ["-out", out]))
            if tool != "plain read":
                measured["csv"] = _only_csv(out)
            if i >= 0:
                kept[tool].append(measured)
    for tool, measurements in kept.items():
        results[tool] = {"runs": measurements, "best": min(measurements, key=lambda m: m["wall_s"]),
                         "tensors": _computed_rows(measurements[0]["csv"]) if tool != "plain read" else ""}
    if not huge:
        results["per pair"] = _per_pair(root, variant, ops, repeat, results, workers)
    if skip is not None:
        results["skipped"] = skip
    else:
        results["agreement"] = csv_agreement(results["ours"]["runs"][0]["csv"], results["msaccucmp"]["runs"][0]["csv"],
                                             262144)
    return results


def _per_pair(root: str, variant: str, ops: int, repeat: int, results: Dict, workers: Optional[int]) -> Dict:
    """What one more pair costs, start-up left out: ours and the plain read again on a one-op case of the
    variant, and ``(wall(ops) - wall(1 op)) / (ops - 1)`` for each. Python's start-up, our imports and the
    pool's start are in both runs of ours, the interpreter's in both plain reads."""
    case = _load_make_case().build_case(os.path.join(root, f"{variant}_1"), variant=variant, ops=1)
    out = os.path.join(root, "out", f"{variant}_1")
    commands = {"ours": [sys.executable, "-m", "precision_tool", "compare", "-m", os.path.join(case, "npu"), "-g",
                         os.path.join(case, "ref"), "-f", os.path.join(case, "graph.json"), "-out", out]
                        + (["--workers", str(workers)] if workers else []),
                "plain read": [sys.executable, "-c", PLAIN_READ, os.path.join(case, "npu"), os.path.join(case, "ref")]}
    walls: Dict[str, List[float]] = {tool: [] for tool in commands}
    for i in range(-1, repeat):
        for tool, command in commands.items():  # taking turns, as in run_variant
            shutil.rmtree(out, ignore_errors=True)
            os.makedirs(out)
            measured = measure_in_fresh_process(command)
            if i >= 0:
                walls[tool].append(measured["wall_s"])
    return {tool: {"one_op_s": min(walls[tool]),
                   "per_pair_ms": 1000 * (results[tool]["best"]["wall_s"] - min(walls[tool])) / max(1, ops - 1)}
            for tool in commands}


def print_results(all_results: Dict[str, Dict]) -> None:
    from tabulate import tabulate

    rows = []
    for variant, results in all_results.items():
        peer_best = results.get("msaccucmp", {}).get("best")
        floor = results["plain read"]["best"]["wall_s"]
        for tool in ("ours", "plain read", "msaccucmp"):
            if tool not in results:
                continue
            best = results[tool]["best"]
            walls = ", ".join(f"{m['wall_s']:.2f}" for m in results[tool]["runs"])
            speedup = f"{peer_best['wall_s'] / best['wall_s']:.1f}x" if peer_best and tool == "ours" else ""
            rows.append([variant, tool, f"{best['wall_s']:.2f}", walls, f"{best['wall_s'] / floor:.1f}x",
                         f"{best['max_rss_mib']:.0f}", f"{best['tree_pss_mib']:.0f}", results[tool]["tensors"],
                         best["returncode"], speedup])
    print(tabulate(rows, headers=["variant", "tool", "wall s (best)", "wall s (all runs)", "vs plain read",
                                  "peak RSS MiB", "tree PSS MiB", "tensors compared", "exit", "speed-up vs peer"],
                   disable_numparse=True))
    marginal_rows = []
    for variant, results in all_results.items():
        if "per pair" in results:
            ours, plain = results["per pair"]["ours"], results["per pair"]["plain read"]
            marginal_rows.append([variant, f"{ours['one_op_s']:.2f}", f"{plain['one_op_s']:.2f}",
                                  f"{ours['per_pair_ms']:.2f}", f"{plain['per_pair_ms']:.2f}",
                                  f"{ours['per_pair_ms'] / max(plain['per_pair_ms'], 1e-9):.1f}x"])
    if marginal_rows:
        print("\nStart-up and the cost of one more pair (wall of the full case minus wall of a one-op case):")
        print(tabulate(marginal_rows, headers=["variant", "ours, 1 op s", "plain read, 1 op s", "ours ms/pair",
                                               "plain read ms/pair", "ours / plain per pair"],
                       disable_numparse=True))
    from precision_tool.metrics.pair_stats import KERNEL
    print(f"\nour metric passes: {KERNEL} (precision_tool.metrics.pair_stats.KERNEL)")
    for variant, results in all_results.items():
        if "skipped" in results:
            print(f"\n{variant}: msaccucmp {results['skipped']}")
            continue
        agreement = results["agreement"]
        print(f"\n{variant}: {agreement['tensors_both']} tensors in both CSVs "
              f"(only ours {agreement['only_ours']}, only msaccucmp {agreement['only_peer']})")
        print(tabulate([[name, f"{item['max_abs_diff']:.3g}", item["disagreeing"]]
                        for name, item in agreement["metrics"].items()],
                       headers=["metric", "max |ours - msaccucmp|", "cells beyond 1e-6"], disable_numparse=True))
    print("\nPairs: nd/nc1hwc0 262,144 float16 + float32 elements (1.5 MiB as stored); huge and huge_nc1hwc0 64M "
          "elements (128 MiB float16 + 256 MiB float32, 1 GiB in float64; ND, and NHWC stored NC1HWC0).")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", default=DEFAULT_ROOT, help=f"where cases and outputs go (default {DEFAULT_ROOT})")
    parser.add_argument("--ops", type=int, default=300)
    parser.add_argument("--variant", choices=VARIANTS, action="append", help="default: both")
    parser.add_argument("--repeat", type=int, default=3, help="runs of ours per variant (best shown)")
    parser.add_argument("--peer-repeat", type=int, default=1, help="runs of msaccucmp per variant")
    parser.add_argument("--workers", type=int, default=None, help="pass --workers N to ours")
    parser.add_argument("--json", default=None, metavar="FILE", help="also write every measurement as JSON")
    parser.add_argument("--measure", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("command", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.measure:
        command = args.command[1:] if args.command[:1] == ["--"] else args.command
        print(json.dumps(measure(command)))
        return 0
    baseline = measure_in_fresh_process([sys.executable, "-m", "precision_tool", "help"])
    print(f"baseline: 'precision_tool help' peaks at {baseline['max_rss_mib']:.0f} MiB RSS", flush=True)
    all_results = {}
    for variant in args.variant or VARIANTS:
        all_results[variant] = run_variant(args.root, variant, args.ops, args.repeat, args.peer_repeat, args.workers)
    print_results(all_results)
    if args.json:
        with open(args.json, "w") as handle:
            json.dump(all_results, handle, indent=1)
    failed = [f"{variant} {tool}" for variant, results in all_results.items() for tool in ("ours",)
              if results[tool]["best"]["returncode"] != 0]
    if failed:
        print("\nour compare did not exit 0: " + ", ".join(failed), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
