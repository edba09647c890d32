"""Fixtures for the capture tests.

TensorFlow costs ~7 s per process, so the graph-mode and TF2 captures each run once, in two
subprocesses started together at the beginning of the session (only when a selected test needs them),
and every test reads their results. Graph-mode code must not run in the pytest process: disabling
eager execution there would change every later test.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPTS = Path(__file__).resolve().parent / "scripts"
REPO = Path(__file__).resolve().parents[2]
CAPTURE_SCRIPTS = {"graph": "graph_mode_capture.py", "eager": "eager_capture.py"}
GE_VARIABLES = ("DUMP_GE_GRAPH", "DUMP_GRAPH_LEVEL", "DUMP_GRAPH_PATH")
CAPTURE_VARIABLES = ("PRECISION_TOOL_ACTION", "PRECISION_TOOL_DUMP", "PRECISION_TOOL_OVERFLOW",
                     "PRECISION_TOOL_DUMP_STEP", "PRECISION_TOOL_OP_DEBUG_LEVEL", "PRECISION_TOOL_NPU_RUN")


class _Capture:
    def __init__(self, name: str, out: Path):
        self.name, self.out = name, out
        env = dict(os.environ, PYTHONPATH=str(REPO), TF_CPP_MIN_LOG_LEVEL="2")
        for variable in (*GE_VARIABLES, *CAPTURE_VARIABLES, "TF_ENABLE_ONEDNN_OPTS"):
            env.pop(variable, None)
        self.process = subprocess.Popen([sys.executable, str(SCRIPTS / CAPTURE_SCRIPTS[name]), str(out)],
                                        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
        self._result = None

    def result(self) -> dict:
        if self._result is None:
            output, _ = self.process.communicate(timeout=300)
            if self.process.returncode != 0:
                raise AssertionError(f"{self.name} capture failed ({self.process.returncode}):\n{output[-4000:]}")
            self._result = json.loads((self.out / "result.json").read_text())
            self._result["_output"] = output
        return self._result


@pytest.fixture(scope="session")
def _capture_processes(tmp_path_factory):
    captures = {name: _Capture(name, tmp_path_factory.mktemp(f"capture_{name}")) for name in CAPTURE_SCRIPTS}
    yield captures
    for capture in captures.values():
        if capture.process.poll() is None:
            capture.process.kill()
            capture.process.communicate()


@pytest.fixture(autouse=True, scope="session")
def _start_captures_early(request):
    """Start both capture subprocesses before the first test if any selected test will use them."""
    if any("tf_captures" in getattr(item, "fixturenames", ()) for item in request.session.items):
        request.getfixturevalue("_capture_processes")


@pytest.fixture(scope="session")
def tf_captures(_capture_processes):
    """``{"graph": _Capture, "eager": _Capture}``; ``.result()`` waits and returns result.json."""
    return _capture_processes


@pytest.fixture
def workspace(tmp_path, monkeypatch):
    """An empty workspace in PRECISION_TOOL_DATA, with the capture and GE variables unset."""
    root = tmp_path / "precision_data"
    monkeypatch.setenv("PRECISION_TOOL_DATA", str(root))
    for variable in (*GE_VARIABLES, *CAPTURE_VARIABLES):
        monkeypatch.setenv(variable, "")  # recorded, so helpers' own settings are undone afterwards
        monkeypatch.delenv(variable)
    return root


@pytest.fixture
def npu_machine(monkeypatch):
    """Pretend Huawei's TF adapter is installed, as on an Ascend machine: prepare_workspace then creates the NPU
    folders and says where the capture goes (without it, it says that nothing will be dumped)."""
    from precision_tool.capture import environment

    monkeypatch.setattr(environment, "npu_adapter_installed", lambda: True)
