"""Shared test options and fixtures.

``slow`` tests run only with ``--runslow``. ``peer`` tests drive CANN's own comparator (msaccucmp) through
``../shared/peers/msaccucmp/msaccucmp.sh``; they are skipped, with the reason, when the peer is not set up
(``make test`` and ``make check-peer`` set it up first).

Hypothesis runs under one of two profiles, for every ``@given`` test in the suite: ``ci`` when the
environment variable ``CI`` is set (``.ci/run`` runs with ``CI=true``), else ``dev``; ``HYPOTHESIS_PROFILE``
picks one by name. ``ci`` is derandomized -- the same examples on every run, so a red build is the code's
fault, never the draw's -- and prints the blob to reproduce a failure. ``dev`` draws fresh examples each run
(``--hypothesis-seed=N`` repeats one), which is how new failures are found: keep each one as an
``@example`` next to its test. Tests that set ``max_examples`` themselves keep their count.
"""
from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from hypothesis import settings

REPO = Path(__file__).resolve().parent.parent

settings.register_profile("ci", derandomize=True, database=None, print_blob=True, deadline=None, max_examples=100)
settings.register_profile("dev", print_blob=True, deadline=None, max_examples=100)
ON_CI = os.environ.get("CI", "").lower() not in ("", "0", "false")
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE") or ("ci" if ON_CI else "dev"))


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
    default = REPO.parent / "shared" / "peers" / "msaccucmp" / "msaccucmp.sh"
    script = Path(os.environ.get("PRECISION_TOOL_PEER", default))
    venv = Path(os.environ.get("PEER_VENV", "/tmp/peer-venv"))
    if not script.is_file():
        pytest.skip(f"msaccucmp peer not found at {script}")
    if not (venv / "bin" / "python").exists():
        pytest.skip(f"msaccucmp peer venv {venv} not set up (run make peer)")
    return Peer(script)


@pytest.fixture(params=["read", "mapped"])
def reads(request, monkeypatch) -> str:
    """Run a test twice: with files read (what every process does), and with them memory-mapped as in a comparison
    worker (:func:`precision_tool.fileio.map_bytes`) -- skipped where the guard is not built, since nothing maps
    then. The mapped run does not install the guard's SIGBUS handler: a test using it must not cut a mapped file
    short (``tests/test_mapped_reads.py`` does that, in a child Python)."""
    from precision_tool import fileio

    if request.param == "mapped":
        if fileio._mapguard is None:
            pytest.skip("the SIGBUS guard is not built (no C compiler at install): nothing is mapped")
        monkeypatch.setattr(fileio, "_mapping", True)
    return request.param
