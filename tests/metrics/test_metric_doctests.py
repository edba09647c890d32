"""The Examples in every metrics module run and give what they show."""
from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

import precision_tool.metrics

MODULES = sorted(info.name for info in pkgutil.iter_modules(precision_tool.metrics.__path__,
                                                             "precision_tool.metrics."))


def test_every_module_is_listed():
    assert {"precision_tool.metrics.registry", "precision_tool.metrics.verdict"} <= set(MODULES)


@pytest.mark.parametrize("name", MODULES)
def test_doctests(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.failed == 0


def test_each_metric_function_has_an_example():
    for info in precision_tool.metrics.METRICS:
        examples = doctest.DocTestFinder().find(info.func)
        assert examples and examples[0].examples, info.name
