"""One subprocess runs every emulation the tests read (TensorFlow costs ~7 s per process, and its
global state -- seeds, op determinism -- stays out of pytest's process)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SCRIPT = Path(__file__).resolve().parent / "scripts" / "emulate_cases.py"


class Emulated:
    """The emulated workspaces (``cnn_cli``, ``cnn_api``, ``dense``, ``dense_scaled``, ``varied``) and the summary."""

    def __init__(self, root: Path):
        self.root = root
        self.summary = json.loads((root / "summary.json").read_text())

    def __getitem__(self, name: str) -> Path:
        return self.root / name


@pytest.fixture(scope="session")
def emulated(tmp_path_factory) -> Emulated:
    pytest.importorskip("tensorflow")
    out = tmp_path_factory.mktemp("emulated")
    env = dict(os.environ, PYTHONPATH=str(REPO), TF_CPP_MIN_LOG_LEVEL="2")
    env.pop("TF_ENABLE_ONEDNN_OPTS", None)
    result = subprocess.run([sys.executable, str(SCRIPT), str(out)], cwd=REPO, env=env, capture_output=True,
                            text=True, timeout=600)
    if result.returncode != 0:
        raise AssertionError(f"emulation failed ({result.returncode}):\n{result.stdout[-3000:]}\n"
                             f"{result.stderr[-5000:]}")
    return Emulated(out)
