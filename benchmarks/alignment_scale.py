"""Alignment stays linear: resolve 2,000 and 8,000-op graphs and print the time per thousand ops.

Run by ``make bench``. A chain with a GE Cast every third op, every op also reading the network input, and
split ops here and there (tests/alignment/test_alignment_scale.py checks the same network functionally).
"""
from __future__ import annotations

import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tests", "alignment"))

from align_builders import graph  # noqa: E402
from test_alignment_scale import network, resolve_everything  # noqa: E402


def main() -> int:
    print("alignment: resolve every input/output target + first divergence")
    previous = None
    for n in (2000, 8000):
        model = graph(network(n))
        start = time.perf_counter()
        resolve_everything(model)
        elapsed = time.perf_counter() - start
        growth = "" if previous is None else f"  ({elapsed / previous:.1f}x the time for 4x the ops; linear = 4x)"
        print(f"  {n:5d} ops: {elapsed:.3f} s = {1000 * elapsed / n:.3f} s per 1000 ops{growth}")
        previous = elapsed
    return 0


if __name__ == "__main__":
    sys.exit(main())
