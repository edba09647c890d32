"""The replay test bed: emulated models, each clean and with a 2% error planted mid-network
(scripts/plant_cases.py, one subprocess so TensorFlow's global state stays out of pytest's process)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SCRIPT = Path(__file__).resolve().parent / "scripts" / "plant_cases.py"


def _emulate(out: Path, *flags: str) -> dict:
    env = dict(os.environ, PYTHONPATH=str(REPO), TF_CPP_MIN_LOG_LEVEL="2")
    env.pop("TF_ENABLE_ONEDNN_OPTS", None)
    result = subprocess.run([sys.executable, str(SCRIPT), str(out), *flags], cwd=REPO, env=env,
                            capture_output=True, text=True, timeout=1800)
    if result.returncode != 0:
        raise AssertionError(f"emulation failed ({result.returncode}):\n{result.stdout[-3000:]}\n"
                             f"{result.stderr[-5000:]}")
    return json.loads((out / "summary.json").read_text())


@pytest.fixture(scope="session")
def planted(tmp_path_factory) -> dict:
    pytest.importorskip("tensorflow")
    return _emulate(tmp_path_factory.mktemp("planted"))


@pytest.fixture(scope="session")
def planted_big(tmp_path_factory) -> dict:
    pytest.importorskip("tensorflow")
    return _emulate(tmp_path_factory.mktemp("planted_big"), "--big")
