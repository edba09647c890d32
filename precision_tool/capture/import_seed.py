"""Seeding at ``import precision_tool.tf_config``, as the original tool did, without importing TensorFlow.

:func:`seed_at_import` seeds Python's ``random`` and NumPy's global generator at once, and right after TensorFlow is
imported (a one-shot :class:`AfterImportHook` on :data:`sys.meta_path`; at once if it is imported already) seeds
TensorFlow (:func:`~precision_tool.capture.determinism.seed_tensorflow`) and Python and NumPy again.
``PRECISION_TOOL_SEED=<n>`` picks another seed, ``PRECISION_TOOL_SEED=off`` turns this off. What is seeded and the
line printed: docs/capture-tf1.md#seeding-at-import; why two steps: docs/internals/capture.md#import_seed.
"""
from __future__ import annotations

import importlib.abc
import random
import sys
from typing import Any, Callable, List, Mapping, MutableSequence, Optional

from precision_tool.capture.determinism import ENV_SEED, seed_setting, seed_tensorflow
from precision_tool.capture.settings import notify, warn_loudly
from precision_tool.lazy import lazy_import

np = lazy_import("numpy")

TENSORFLOW = "tensorflow"


class _CallbackLoader(importlib.abc.Loader):
    """Runs the real loader, then ``callback(module)``; the module only ever sees the real loader."""

    def __init__(self, loader, callback: Callable[[Any], object]):
        self._loader = loader
        self._callback = callback

    def create_module(self, spec):
        return self._loader.create_module(spec)

    def exec_module(self, module):
        module.__loader__ = self._loader
        if getattr(module, "__spec__", None) is not None:
            module.__spec__.loader = self._loader
        self._loader.exec_module(module)
        # TF 1.15 replaces its own sys.modules entry (a DeprecationWrapper): pass what `import` will return
        self._callback(sys.modules.get(module.__name__, module))

    def __getattr__(self, name):
        return getattr(self._loader, name)


class AfterImportHook(importlib.abc.MetaPathFinder):
    """A one-shot finder: when module ``name`` is imported, call ``callback(module)`` after it has run.

    It finds the module with the finders behind it, wraps the loader of the spec they return, and takes
    itself off ``meta_path`` at that moment (it fires once). A name no finder knows leaves it in place.
    """

    def __init__(self, name: str, callback: Callable[[Any], object], meta_path: Optional[MutableSequence] = None):
        self.name = name
        self.callback = callback
        self.meta_path = sys.meta_path if meta_path is None else meta_path

    def find_spec(self, fullname, path=None, target=None):
        if fullname != self.name:
            return None
        spec = self._find_elsewhere(fullname, path, target)
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return None
        self.remove()
        spec.loader = _CallbackLoader(spec.loader, self.callback)
        return spec

    def _find_elsewhere(self, fullname, path, target):
        for finder in list(self.meta_path):
            find_spec = getattr(finder, "find_spec", None)
            if finder is self or find_spec is None:
                continue
            spec = find_spec(fullname, path, target)
            if spec is not None:
                return spec
        return None

    def remove(self) -> None:
        while self in self.meta_path:
            self.meta_path.remove(self)


def install_after_import_hook(name: str, callback: Callable[[Any], object],
                              meta_path: Optional[MutableSequence] = None) -> AfterImportHook:
    """Put an :class:`AfterImportHook` first on ``meta_path`` (``sys.meta_path``), replacing one for the same
    name (a reloaded ``tf_config`` must not seed twice)."""
    meta_path = sys.meta_path if meta_path is None else meta_path
    for finder in list(meta_path):
        if isinstance(finder, AfterImportHook) and finder.name == name:
            finder.remove()
    hook = AfterImportHook(name, callback, meta_path)
    meta_path.insert(0, hook)
    return hook


def imported_tensorflow(modules: Optional[Mapping[str, Any]] = None):
    """The ``tensorflow`` module if it has finished importing, else ``None``.

    An entry without ``__version__`` is not a TensorFlow that finished importing (a stand-in put there by a
    test, or TensorFlow's own import still running); it is not seeded.
    """
    modules = sys.modules if modules is None else modules
    module = modules.get(TENSORFLOW)
    return module if getattr(module, "__version__", None) else None


def seed_imported_tensorflow(module, seed: int) -> Optional[str]:
    """Seed Python, NumPy and an imported TensorFlow, and print the one import-seed line; returns how TF was
    seeded, ``None`` (and a loud warning) if that failed. It never raises: it runs inside the user's
    ``import tensorflow``."""
    random.seed(seed)
    np.random.seed(seed)
    try:
        how = seed_tensorflow(module, seed)
    except Exception as error:  # noqa: BLE001 -- an unknown TensorFlow must not break the script's import
        warn_loudly(f"could not seed TensorFlow {getattr(module, '__version__', '?')} with {seed} at import "
                    f"({type(error).__name__}: {error}); call npu_tf_config.seed_everything() before building "
                    "the model", stacklevel=2)
        return None
    notify(f"import seed {seed} ({ENV_SEED}=<n>|off changes it): Python random, numpy and TensorFlow "
           f"{module.__version__} seeded right after TensorFlow's import ({how})")
    return how


def seed_at_import(environ: Optional[Mapping[str, str]] = None, modules: Optional[Mapping[str, Any]] = None,
                   meta_path: Optional[List] = None) -> Optional[int]:
    """Seed Python and NumPy now and TensorFlow once it is imported; returns the seed (``None``: off).

    See the module docstring. Raises :class:`~precision_tool.errors.CaptureError` when
    ``PRECISION_TOOL_SEED`` is neither a number nor ``off``.
    """
    seed = seed_setting(environ)
    if seed is None:
        return None
    random.seed(seed)
    np.random.seed(seed)  # and again, with TensorFlow, by seed_imported_tensorflow
    module = imported_tensorflow(modules)
    if module is not None:
        seed_imported_tensorflow(module, seed)
    else:
        install_after_import_hook(TENSORFLOW, lambda tf_module: seed_imported_tensorflow(tf_module, seed), meta_path)
    return seed
