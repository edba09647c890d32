"""Shared test options and fixtures.

``slow`` tests run only with ``--runslow``. ``peer`` tests drive CANN's own comparator (msaccucmp) through
``../shared/peers/msaccucmp/msaccucmp.sh``; they are skipped, with the reason, when the peer is not set up
(``make test`` and ``make check-peer`` set it up first).
"""
from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


def pytest_addoption(parser):
    parser.addoption("--runslow", action="store_true", default=False, help="run tests marked slow")


def pytest_collection_modifyitems(config, items):
    if config.getoption("--runslow"):
        return
    skip_slow = pytest.mark.skip(reason="slow: run with --runslow")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip_slow)


class Peer:
    """Runs ``msaccucmp.sh SUBCOMMAND ...`` and returns the completed process."""

    def __init__(self, script: Path):
        self.script = script

    def run(self, *args, check=True, timeout=600) -> subprocess.CompletedProcess:
        result = subprocess.run(["bash", str(self.script), *map(str, args)], capture_output=True, text=True,
                                timeout=timeout)
        if check and result.returncode not in (0,):
            raise AssertionError(f"peer {args[0]} failed ({result.returncode}):\n{result.stdout[-3000:]}\n"
                                 f"{result.stderr[-3000:]}")
        return result


@pytest.fixture(scope="session")
def peer() -> Peer:
    script = Path(os.environ.get("PRECISION_TOOL_PEER", REPO.parent / "shared" / "peers" / "msaccucmp" / "msaccucmp.sh"))
    venv = Path(os.environ.get("PEER_VENV", "/tmp/peer-venv"))
    if not script.is_file():
        pytest.skip(f"msaccucmp peer not found at {script}")
    if not (venv / "bin" / "python").exists():
        pytest.skip(f"msaccucmp peer venv {venv} not set up (run make peer)")
    return Peer(script)
