"""What the emulation tests share: running a case script in a fresh Python, and the checks of a clean ``ac -c``."""
from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Sequence

import pytest

REPO = Path(__file__).resolve().parents[2]
COVERAGE_GAPS = ("npu_only_ops", "unaligned", "graph_ops_without_dump", "dumped_not_in_graph", "ambiguous",
                 "unreadable")


def run_cases_script(script, out, timeout: float = 900) -> None:
    """Run ``script OUT`` in a fresh Python -- TensorFlow stays out of pytest's process -- with the checkout on
    ``PYTHONPATH``, TensorFlow's logs quiet and oneDNN and the Keras choice at TensorFlow's defaults; an
    AssertionError with the output's tails when it fails."""
    env = dict(os.environ, PYTHONPATH=str(REPO), TF_CPP_MIN_LOG_LEVEL="2")
    for name in ("TF_ENABLE_ONEDNN_OPTS", "TF_USE_LEGACY_KERAS"):
        env.pop(name, None)
    result = subprocess.run([sys.executable, str(script), str(out)], cwd=REPO, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, universal_newlines=True, timeout=timeout)
    if result.returncode != 0:
        raise AssertionError(f"emulation failed ({result.returncode}):\n{result.stdout[-3000:]}\n"
                             f"{result.stderr[-5000:]}")


def assert_clean_autocheck(info: dict) -> None:
    """A case script's ``ac -c`` record of a clean emulation: exit 0 without replay (CLI) and with it, no
    culprit, every dumped NPU tensor aligned, no coverage gap, nothing failing, every cosine above 0.99."""
    assert info["cli_no_replay_exit"] == 0  # precision_tool -d WS ac -c --no-replay
    assert info["exit"] == 0 and info["culprit"] is None  # and with replay
    coverage = info["coverage"]
    assert coverage["aligned_count"] == coverage["npu_tensors"] > 0
    for key in COVERAGE_GAPS:
        assert coverage[key] == [], (key, coverage[key])
    assert info["counts"]["failed"] == 0 and info["min_cosine"] > 0.99


class CaseOutput:
    """What a case script wrote into its folder: ``summary.json`` (:attr:`summary`) and, by name, its workspaces
    and files (``cases["lstm"]``)."""

    def __init__(self, root: Path):
        self.root = root
        self.summary = json.loads((root / "summary.json").read_text())

    def __getitem__(self, name: str) -> Path:
        return self.root / name


def run_case_output(tmp_path_factory, script: Path, modules: Sequence[str] = ("tensorflow",)) -> Path:
    """Run a case script once into a fresh folder; skipped, saying which, when a module it needs is missing
    (looked for, not imported: TensorFlow stays out of pytest's process)."""
    for module in modules:
        if importlib.util.find_spec(module) is None:
            pytest.skip(f"{module} is not installed")
    out = tmp_path_factory.mktemp(script.stem)
    run_cases_script(script, out)
    return out
