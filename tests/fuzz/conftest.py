"""The fuzz tests: their folder on ``sys.path`` (the harness modules import each other by name, as when
``campaign.py`` runs as a script) and the ``fuzz`` marker.

``fuzz`` marks the campaign runs (``test_fuzz_campaign.py``): deselect them with ``-m "not fuzz"``. The marker
belongs in setup.cfg's ``[tool:pytest] markers`` too; it is registered here so that ``--strict-markers`` and a
run of this folder alone accept it.
"""
from __future__ import annotations

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)


def pytest_configure(config):
    config.addinivalue_line("markers", "fuzz: the fuzz campaign of issue 14 (deselect with -m 'not fuzz'; "
                                       "PRECISION_TOOL_FUZZ_FILES=2000 runs the long one)")
