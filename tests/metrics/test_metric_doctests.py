"""Every registered metric function shows an example (tests/test_doctests.py runs them all)."""
from __future__ import annotations

import doctest

import precision_tool.metrics


def test_each_metric_function_has_an_example():
    for info in precision_tool.metrics.METRICS:
        examples = doctest.DocTestFinder().find(info.func)
        assert examples and examples[0].examples, info.name
