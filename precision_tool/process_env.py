"""What the command line sets in its own process and keeps out of the programs it starts for the user.

numpy loads OpenBLAS, which starts one thread per further CPU when it is loaded; each thread polls for work, on a
CPU, for about 2**28 cycles (0.1 s) before it sleeps -- whether or not anything calls BLAS. precision_tool's
analysis does not (its metrics are element-wise passes), so on a two-core machine that thread only takes 0.1 s of
CPU from the comparison's workers (measured: a 300-op ``compare`` used 0.1 s less CPU and ended 30 ms sooner
without it). :func:`one_blas_thread` asks OpenBLAS for a single thread, which starts none, before numpy is
loaded -- unless the user set the variable, or numpy is already loaded (then it is too late and nothing is
changed). The user's own programs (``run``, ``bisect``'s trial runs) get the environment as it was
(:func:`user_environment`). (The headless browser that renders reports is ours: it keeps the setting.)
"""
from __future__ import annotations

import os
import sys
from typing import Dict

VARIABLE = "OPENBLAS_NUM_THREADS"
_SET_HERE = False


def one_blas_thread() -> bool:
    """Set ``OPENBLAS_NUM_THREADS=1`` for this process if numpy is not loaded and the user did not set it; True
    when set. For the command line's own process only (not called when precision_tool is a library)."""
    global _SET_HERE
    if VARIABLE in os.environ or "numpy" in sys.modules:
        return False
    os.environ[VARIABLE] = "1"
    _SET_HERE = True
    return True


def user_environment(**extra: str) -> Dict[str, str]:
    """This process's environment without what :func:`one_blas_thread` set, plus ``extra``: for the programs
    started on the user's behalf."""
    env = dict(os.environ)
    if _SET_HERE and env.get(VARIABLE) == "1":
        del env[VARIABLE]
    env.update(extra)
    return env


__all__ = ["one_blas_thread", "user_environment"]
