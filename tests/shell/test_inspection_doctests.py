"""The examples in the docstrings of the shell and the inspection commands run and hold."""
import doctest
import importlib

import pytest

MODULES = ["precision_tool.shell.command_line", "precision_tool.shell.completer", "precision_tool.commands.arg_hints",
           "precision_tool.commands.tensor_spec", "precision_tool.commands.terminal_text",
           "precision_tool.commands.subgraph_dot", "precision_tool.commands.list_ops"]


@pytest.mark.parametrize("name", MODULES)
def test_doctests(name):
    result = doctest.testmod(importlib.import_module(name))
    assert result.attempted > 0 and result.failed == 0
