"""The users' oldest environment (Python 3.7, numpy 1.18, protobuf 3.20) gives the same answers as the main one.

``ac -c`` on the bundled CNN sample runs once with this interpreter and once with ``.venv-tf115`` (built by
``make test``); the CSV must be byte-identical, and every metric of the lossless result file, like every other
float of a row (replay's inherited and local errors), equal to within float64 summation-order differences
(numpy's pairwise/SIMD sums differ between versions in the last bits, and there the metric passes run in numpy,
here in the C extension).
"""
import glob
import json
import math
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SAMPLE = os.path.join(ROOT, "sample_dumps", "cnn_workspace")
OLD_PYTHON = os.path.join(ROOT, ".venv-tf115", "bin", "python")


def _autocheck(python, out_dir):
    env = dict(os.environ, PYTHONPATH=ROOT)
    result = subprocess.run([python, "-m", "precision_tool", "-d", SAMPLE, "ac", "-c", "-o", str(out_dir)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, env=env,
                            cwd=ROOT, timeout=300)
    (csv_path,) = glob.glob(os.path.join(str(out_dir), "result_*.csv"))
    (jsonl_path,) = glob.glob(os.path.join(str(out_dir), "result_*.jsonl"))
    with open(csv_path, "rb") as handle:
        csv_bytes = handle.read()
    with open(jsonl_path, encoding="utf-8") as handle:
        rows = [json.loads(line) for line in handle]
    return result, csv_bytes, rows


@pytest.mark.skipif(not os.path.exists(OLD_PYTHON), reason="no .venv-tf115 (make user-envs builds it)")
def test_python37_numpy118_gives_the_main_environments_results(tmp_path):
    old, old_csv, old_rows = _autocheck(OLD_PYTHON, tmp_path / "old")
    new, new_csv, new_rows = _autocheck(sys.executable, tmp_path / "new")
    assert old.returncode == new.returncode == 1, old.stderr[-2000:]  # the planted culprit is found by both
    assert old_csv == new_csv
    assert len(old_rows) == len(new_rows) > 10
    for old_row, new_row in zip(old_rows, new_rows):
        for key in set(old_row) - {"timing", "result_csv", "started", "finished", "inputs"}:
            if key != "metrics":  # floats outside the metrics (replay's inherited/local error) are sums too
                assert _close(old_row[key], new_row[key]), key
                continue
            for name, value in old_row["metrics"].items():
                # KL is a difference of two O(1) terms (pair_stats): right to about 1e-16 absolute, so a KL of
                # 1e-8 from the numpy passes (here) and from the C passes (main env) agree to 1e-8 relative only
                absolute = 1e-14 if name == "KullbackLeiblerDivergence" else 1e-300
                assert _close(value, new_row["metrics"][name], absolute), name


def _close(old, new, absolute=1e-300):
    """Equal, or floats within 1e-12 relative (or ``absolute``), item by item for lists (StandardDeviation's)."""
    if isinstance(old, list) and isinstance(new, list):
        return len(old) == len(new) and all(_close(a, b, absolute) for a, b in zip(old, new))
    if isinstance(old, float) and isinstance(new, float):
        return old == new or math.isclose(old, new, rel_tol=1e-12, abs_tol=absolute)
    return old == new
