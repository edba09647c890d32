"""The examples in the checks' docstrings run and hold."""
import doctest
import importlib

import pytest

MODULES = ["precision_tool.checks.casts",
           "precision_tool.checks.fusion_compare"]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 0 and result.failed == 0
