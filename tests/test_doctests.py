"""The Examples in the docstrings of every precision_tool module run and give what they show.

Modules are found by walking the package's folders (no hand-kept list to forget a new module in), and each
is one test, so a failure names its module. Walking does not import anything; each test imports its one
module. Only ``precision_tool.capture`` may need TensorFlow, and only lazily: a capture module whose import
fails for want of TensorFlow is skipped, with the reason, when TensorFlow is not installed -- and fails when
it is (then the import error is a bug).
"""
from __future__ import annotations

import doctest
import importlib
import importlib.util
import io
import os
import pkgutil
import types

import pytest

import precision_tool
from precision_tool.lazy import MissingDependencyError

OPTIONS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE
NOT_IMPORTABLE = {"precision_tool.__main__": "runs the CLI when imported"}


def package_modules(path=precision_tool.__path__, prefix="precision_tool.") -> list:
    """Every module and package under ``path``, by name, without importing any of them."""
    names = []
    for info in pkgutil.iter_modules(path, prefix):
        names.append(info.name)
        if info.ispkg:
            names += package_modules([os.path.join(info.module_finder.path, info.name.rsplit(".", 1)[-1])],
                                     info.name + ".")
    return names


MODULES = ["precision_tool"] + sorted(package_modules())


def tensorflow_installed() -> bool:
    return importlib.util.find_spec("tensorflow") is not None


def import_module(name: str):
    try:
        return importlib.import_module(name)
    except (ImportError, MissingDependencyError) as error:
        cause = error if isinstance(error, ImportError) else error.__cause__  # lazy.py wraps the ImportError
        missing = (getattr(cause, "name", None) or "").split(".")[0]
        if name.startswith("precision_tool.capture.") and missing == "tensorflow" and not tensorflow_installed():
            pytest.skip(f"{name} needs TensorFlow at import, and TensorFlow is not installed")
        raise


def without_submodules(module: types.ModuleType) -> types.ModuleType:
    """A copy of ``module`` without the modules it holds as attributes.

    doctest's finder unwraps every attribute (``hasattr(value, "__wrapped__")``); on a
    :func:`precision_tool.lazy.lazy_import` proxy that imports TensorFlow (or fails without it). Modules
    never hold this module's examples, so leaving them out changes nothing else.
    """
    view = types.ModuleType(module.__name__, module.__doc__)
    view.__dict__.update({key: value for key, value in vars(module).items()
                          if not isinstance(value, types.ModuleType)})
    return view


def test_the_walk_finds_modules_in_subpackages():
    assert {"precision_tool.cli", "precision_tool.metrics.tensor_verdict", "precision_tool.reports.html.plot",
            "precision_tool.capture.emulate.npu_plan"} <= set(MODULES)


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name, tmp_path, monkeypatch):
    if name in NOT_IMPORTABLE:
        pytest.skip(f"{name} {NOT_IMPORTABLE[name]}")
    module = import_module(name)
    monkeypatch.chdir(tmp_path)  # an example that writes a file writes it here
    finder = doctest.DocTestFinder(exclude_empty=True)
    tests = finder.find(without_submodules(module), name, module=module, globs=vars(module))
    report = io.StringIO()
    runner = doctest.DocTestRunner(optionflags=OPTIONS)
    for test in sorted(tests, key=lambda test: test.name):
        runner.run(test, out=report.write)
    assert runner.failures == 0, f"{runner.failures} failing example(s) in {name}:\n{report.getvalue()}"
