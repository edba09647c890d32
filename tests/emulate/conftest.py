"""One subprocess runs every emulation the tests read (TensorFlow costs ~7 s per process, and its
global state -- seeds, op determinism -- stays out of pytest's process)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from emulate_helpers import run_cases_script

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
    run_cases_script(SCRIPT, out, timeout=600)
    return Emulated(out)
