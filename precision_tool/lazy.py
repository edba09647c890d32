"""Lazy imports for heavy, optional modules (TensorFlow): nothing is imported until first use.

Only ``precision_tool.capture`` (and the emulator) may touch TensorFlow, and only through
:func:`lazy_import`, so that starting the shell or running any analysis never pays TensorFlow's
6-7 s import, and works where TensorFlow is not installed. A test enforces this.
Unlike Polygraphy's ``mod.lazy_import`` this never installs anything.
"""
from __future__ import annotations

import importlib
import types
from typing import Optional

from precision_tool.errors import PrecisionToolError
from precision_tool.install_hint import tensorflow_install_hint


class MissingDependencyError(PrecisionToolError):
    """An optional dependency (e.g. TensorFlow for capture) is not installed."""


class _LazyModule(types.ModuleType):
    def __init__(self, name: str, install_hint: Optional[str]):
        super().__init__(name)
        self._lazy_name = name
        self._lazy_hint = install_hint
        self._lazy_module: Optional[types.ModuleType] = None

    def _load(self) -> types.ModuleType:
        if self._lazy_module is None:
            try:
                self._lazy_module = importlib.import_module(self._lazy_name)
            except ImportError as exc:
                raise MissingDependencyError(
                    f"this needs the Python module '{self._lazy_name}', which cannot be imported ({exc})",
                    self._lazy_hint or tensorflow_install_hint(),
                ) from exc
        return self._lazy_module

    def __getattr__(self, attr):
        if attr.startswith("_lazy_"):
            raise AttributeError(attr)
        return getattr(self._load(), attr)

    def __repr__(self):
        state = "loaded" if self._lazy_module is not None else "not loaded"
        return f"<lazy module '{self._lazy_name}' ({state})>"


def lazy_import(name: str, install_hint: Optional[str] = None) -> types.ModuleType:
    """Return a proxy that imports ``name`` on first attribute access.

    A missing module raises :class:`MissingDependencyError` (one line, with ``install_hint``; default: what fits
    this environment for TensorFlow, :func:`~precision_tool.install_hint.tensorflow_install_hint`) at that first
    access, not at import time of the caller.
    """
    return _LazyModule(name, install_hint)
