"""Fixtures for the shell tests: the inspection workspace of ``tests/commands/inspect_builders.py``."""
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "commands"))  # inspect_builders

from inspect_builders import write_inspect_workspace


@pytest.fixture(scope="module")
def inspect_workspace(tmp_path_factory) -> str:
    return write_inspect_workspace(tmp_path_factory.mktemp("ws"))
