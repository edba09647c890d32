"""Imports between precision_tool's layers go one way: down (house style, "Layout follows the data flow").

Layers, low to high::

    foundation (errors, status, fileio, lazy, config, ... : top-level helpers)
      -> formats -> alignment -> metrics -> comparison -> replay -> checks -> reports -> commands -> cli / shell

``capture/`` (with ``tf_config.py``, its one-line front door for training scripts) sits off to the side: it
may use the foundation, formats, alignment, metrics and comparison; only capture itself, ``commands`` and
``cli`` may import it.

Every module is parsed with :mod:`ast` -- imports inside functions and ``TYPE_CHECKING`` blocks count,
and so does ``importlib.import_module("precision_tool.X")`` with a literal name. An import that breaks
the rule fails the test unless it is in :data:`ALLOWED`, with a reason. An entry that no longer matches
any import is reported (a warning), so the list only shrinks.
"""
from __future__ import annotations

import ast
import warnings
from pathlib import Path
from typing import Dict, Iterator, NamedTuple, Optional, Tuple

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "precision_tool"

FOUNDATION = "foundation"
CAPTURE = "capture"
ORDER = [FOUNDATION, "formats", "alignment", "metrics", "comparison", "replay", "checks", "reports", "commands", "top"]
RANK = {layer: rank for rank, layer in enumerate(ORDER)}
TOP_MODULES = {"cli": "top", "shell": "top", "__main__": "top", "tf_config": CAPTURE, "capture": CAPTURE,
               "data": FOUNDATION}  # data/: files shipped beside the code (templates, the report's CSS and script)
CAPTURE_MAY_USE = {FOUNDATION, "formats", "alignment", "metrics", "comparison", CAPTURE}
CAPTURE_USERS = {"commands", "top"}  # and capture itself; the shell is "top" too, see capture_user()

# (importing module, imported module): why it is allowed for now, in one line. Empty since a68db4c moved
# capture.emulate.reference off commands/ (it dispatched tf_dump; it now calls formats.tf_reference).
ALLOWED: Dict[Tuple[str, str], str] = {}


class Import(NamedTuple):
    importer: str  # precision_tool.formats.tfdbg
    imported: str  # precision_tool.errors
    line: int


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES = {module_name(path): path for path in sorted(PACKAGE.rglob("*.py"))}


def layer_of(module: str) -> str:
    """``precision_tool.formats.tfdbg`` -> ``formats``; top-level helpers are the foundation."""
    parts = module.split(".")
    if len(parts) == 1:
        return FOUNDATION  # the package itself (__version__)
    head = parts[1]
    if head in TOP_MODULES:
        return TOP_MODULES[head]
    if head in RANK:
        return head
    if f"precision_tool.{head}" in MODULES and MODULES[f"precision_tool.{head}"].name != "__init__.py":
        return FOUNDATION  # errors.py, status.py, fileio.py, lazy.py, config.py, ...
    raise AssertionError(f"{module}: a new top-level package? Give it a layer in tests/test_layers.py")


def resolve(importer: str, is_package: bool, node: ast.ImportFrom) -> Optional[str]:
    if node.level == 0:
        return node.module
    base = importer.split(".") if is_package else importer.split(".")[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def literal_module(node: ast.expr) -> Optional[str]:
    """The module named by ``"precision_tool.x"``, or the fixed part of ``f"precision_tool.x.{name}"``."""
    if isinstance(node, ast.Str):  # Python 3.7 (ast.Constant from 3.8 on)
        return node.s
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr) and node.values and isinstance(node.values[0], (ast.Constant, ast.Str)):
        first = node.values[0]
        return str(first.s if isinstance(first, ast.Str) else first.value).rsplit(".", 1)[0]
    return None


def imports_in(importer: str, source: str, is_package: bool = False, filename: str = "<source>") -> Iterator[Import]:
    for node in ast.walk(ast.parse(source, filename)):
        targets = []
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = resolve(importer, is_package, node)
            if base:
                # ``from precision_tool import formats`` imports the submodule, not the package
                targets = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in MODULES else base
                           for alias in node.names]
        elif (isinstance(node, ast.Call) and node.args
              and getattr(node.func, "attr", getattr(node.func, "id", None)) == "import_module"):
            targets = [name for name in [literal_module(node.args[0])] if name]
        for target in targets:
            if target == "precision_tool" or target.startswith("precision_tool."):
                yield Import(importer, target, node.lineno)


def imports_of(importer: str, path: Path) -> Iterator[Import]:
    return imports_in(importer, path.read_text(encoding="utf-8"), path.name == "__init__.py", str(path))


def capture_user(module: str) -> bool:
    layer = layer_of(module)
    return layer == CAPTURE or (layer in CAPTURE_USERS and module.split(".")[1] != "shell")


def broken_rule(imp: Import) -> Optional[str]:
    """Why ``imp`` goes against the layering, or ``None``."""
    source, target = layer_of(imp.importer), layer_of(imp.imported)
    if target == CAPTURE and not capture_user(imp.importer):
        return f"{source} may not import capture (only capture, commands and cli may)"
    if source == CAPTURE:
        return None if target in CAPTURE_MAY_USE else f"capture may not import {target}"
    if target == CAPTURE:
        return None
    if RANK[target] > RANK[source]:
        return f"upward: {source} -> {target}"
    return None


ALL_IMPORTS = [imp for name, path in MODULES.items() for imp in imports_of(name, path)]


def test_the_scan_sees_the_package():
    assert {"precision_tool.cli", "precision_tool.formats.tfdbg_v2", "precision_tool.capture.emulate.run",
            "precision_tool.reports.html.plot"} <= set(MODULES)
    pairs = {(imp.importer, imp.imported) for imp in ALL_IMPORTS}
    assert ("precision_tool.formats.tfdbg_v2", "precision_tool.errors") in pairs
    assert ("precision_tool.commands", "precision_tool.commands.command_registry") in pairs


def test_the_scan_sees_imports_in_functions_relative_imports_and_import_module():
    source = """
import numpy
from . import dtypes
from ..metrics import tensor_verdict
def later(name):
    import precision_tool.reports.format
    importlib.import_module(f"precision_tool.commands.{name}")
    return importlib.import_module("precision_tool.cli")
"""
    found = [(imp.imported, imp.line) for imp in imports_in("precision_tool.formats.tfdbg", source)]
    assert found == [("precision_tool.formats.dtypes", 3), ("precision_tool.metrics.tensor_verdict", 4),
                     ("precision_tool.reports.format", 6), ("precision_tool.commands", 7), ("precision_tool.cli", 8)]
    assert {layer_of(name) for name in MODULES} == set(ORDER) | {CAPTURE}


@pytest.mark.parametrize("importer, imported, expected", [
    ("precision_tool.formats.tfdbg", "precision_tool.errors", None),
    ("precision_tool.metrics.tensor_verdict", "precision_tool.formats.dtypes", None),
    ("precision_tool.formats.tfdbg", "precision_tool.metrics", "upward: formats -> metrics"),
    ("precision_tool.errors", "precision_tool.cli", "upward: foundation -> top"),
    ("precision_tool.shell.app", "precision_tool.commands.command_registry", None),
    ("precision_tool.cli", "precision_tool.shell.app", None),
    ("precision_tool.capture.reference_dump", "precision_tool.comparison.engine", None),
    ("precision_tool.capture.reference_dump", "precision_tool.checks.overflow_records",
     "capture may not import checks"),
    ("precision_tool.commands.emulate", "precision_tool.capture.emulate.run", None),
    ("precision_tool.tf_config", "precision_tool.capture.actions", None),
    ("precision_tool.reports.report", "precision_tool.capture",
     "reports may not import capture (only capture, commands and cli may)"),
    ("precision_tool.shell.app", "precision_tool.tf_config",
     "top may not import capture (only capture, commands and cli may)"),
])
def test_the_rule(importer, imported, expected):
    assert broken_rule(Import(importer, imported, 1)) == expected


def test_imports_go_down_the_layers():
    broken = [f"{MODULES[imp.importer].relative_to(ROOT)}:{imp.line}: {imp.imported} ({broken_rule(imp)})"
              for imp in ALL_IMPORTS if broken_rule(imp) and (imp.importer, imp.imported) not in ALLOWED]
    assert not broken, ("imports against the layering (move the code down, or pass it in as a callback; "
                        "tests/test_layers.py says why the layers are as they are):\n" + "\n".join(broken))


def test_allowances_no_longer_needed_are_reported():
    """A warning, not a failure: the refactorings that remove these imports are made by people who do not
    own this file. Delete the entries it names."""
    found = {(imp.importer, imp.imported) for imp in ALL_IMPORTS if broken_rule(imp)}
    stale = sorted(set(ALLOWED) - found)
    if stale:
        warnings.warn("tests/test_layers.py: ALLOWED entries no longer needed, delete them: "
                      + "; ".join(f"{importer} -> {imported}" for importer, imported in stale), stacklevel=1)


def test_every_allowance_has_a_one_line_reason():
    assert all(reason.strip() and "\n" not in reason for reason in ALLOWED.values())
