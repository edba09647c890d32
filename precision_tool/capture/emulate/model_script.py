"""Load a MODEL_SCRIPT: a Python file defining ``inputs()`` and one of ``model()``, ``graph_model()``,
``graph_def()`` or ``train_graph()``.

``model()`` returns a Keras model or a function of TF ops; ``graph_model(*inputs)`` is TF1 graph code
(:class:`~precision_tool.capture.emulate.tf_freeze.GraphFunction`); ``graph_def()`` gives a frozen graph with its
feeds and fetches (:mod:`~precision_tool.capture.emulate.graph_def_model`); ``train_graph(*inputs)`` builds a TF1
training step (:class:`~precision_tool.capture.emulate.train_step.TrainStep`). ``inputs()`` returns the batch,
whose shapes fix every shape. Every problem is a :class:`ModelScriptError` naming the script. The forms in full:
docs/emulate.md#model_script; more: docs/internals/emulator.md#model_script.
"""
from __future__ import annotations

import importlib.util
import os
import sys
from dataclasses import dataclass
from typing import Any, Callable, Optional, Tuple

import numpy as np

from precision_tool.capture.emulate.emulate_errors import ModelScriptError, cause_line
from precision_tool.capture.emulate.graph_def_model import load_graph_def
from precision_tool.capture.emulate.tf_freeze import GraphFunction
from precision_tool.capture.emulate.train_step import TrainStep

MODEL_FUNCTIONS = ("model", "graph_model", "graph_def", "train_graph")
MODEL_KINDS = ("model() for Keras or tf.function code, graph_model() for TF1 graph code, graph_def() for a frozen "
               "GraphDef or meta graph, train_graph() for a TF1 training step")


@dataclass(frozen=True)
class ModelScript:
    path: str
    model_fn: Optional[Callable[[], Any]]
    inputs_fn: Callable[[], Any]
    graph_fn: Optional[Callable[..., Any]] = None
    graph_def_fn: Optional[Callable[[], Any]] = None
    train_fn: Optional[Callable[..., Any]] = None

    @property
    def label(self) -> str:
        return os.path.basename(self.path)

    def build_model(self):
        """``model()``'s model, the script's ``graph_model`` as a :class:`GraphFunction` (called later,
        while the graph is built), or what ``graph_def()`` gives as a
        :class:`~precision_tool.capture.emulate.graph_def_model.GraphDefModel`."""
        if self.graph_def_fn is not None:
            return load_graph_def(_call(self, self.graph_def_fn, "graph_def()"), self.path)
        if self.train_fn is not None:
            return TrainStep(self.train_fn)
        if self.graph_fn is not None:
            return GraphFunction(self.graph_fn)
        assert self.model_fn is not None
        return _call(self, self.model_fn, "model()")

    def batch(self) -> Tuple[np.ndarray, ...]:
        """``inputs()`` as a tuple of arrays."""
        value = _call(self, self.inputs_fn, "inputs()")
        arrays = value if isinstance(value, (tuple, list)) else (value,)
        checked = []
        for k, item in enumerate(arrays):
            if hasattr(item, "numpy") and not isinstance(item, np.ndarray):
                item = item.numpy()
            array = np.asarray(item)
            if array.dtype.kind not in "fiub" or array.dtype == object:
                raise ModelScriptError(f"{self.path}: inputs() item {k} is {type(item).__name__} of dtype "
                                       f"{array.dtype}; expected numeric numpy arrays")
            checked.append(np.ascontiguousarray(array))
        if not checked:
            raise ModelScriptError(f"{self.path}: inputs() returned no array")
        return tuple(checked)


def _call(script: ModelScript, function, label: str):
    try:
        return function()
    except ModelScriptError:
        raise
    except Exception as error:  # anything the user's code raises is a user error, shown in one line
        raise ModelScriptError(f"{script.path}: {label} raised {cause_line(error)}") from error


def _refuse_missing(path: str, defined, has_inputs: bool) -> None:
    missing = (["model"] if not defined else []) + ([] if has_inputs else ["inputs"])
    if missing:
        raise ModelScriptError(f"{path}: defines no {' and no '.join(f'{m}()' for m in missing)} function",
                               "a model script defines model() (a Keras model or a TF function), "
                               "graph_model(inputs) (TF1 graph code), graph_def() (a frozen GraphDef) or "
                               "train_graph(inputs) (a TF1 training step), and inputs()")


def _refuse_before_running(path: str) -> None:
    """Refuse a script that cannot define ``model()``/``inputs()`` *before* running it: a training script given by
    mistake would otherwise train to its end (and write its own outputs) before being told so.

    The names the script's top level binds are read with ``ast`` -- ``def``, assignments, imports, in ``if``/
    ``try``/``with`` blocks too. A script that cannot be parsed, or that binds names in ways this cannot follow
    (``from m import *``, ``globals()``, ``exec``), is left to the import, which decides as before."""
    import ast

    try:
        with open(path, "rb") as handle:
            tree = ast.parse(handle.read(), filename=path)
    except (SyntaxError, ValueError, OSError):
        return  # the import reports it, in the usual words
    bound = set()
    opaque = False
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.add(node.name)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            bound.add(node.id)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                opaque = opaque or alias.name == "*"
                bound.add((alias.asname or alias.name).split(".")[0])
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in (
                "globals", "exec", "setattr", "vars", "locals"):
            opaque = True
    if not opaque:
        _refuse_missing(path, [name for name in MODEL_FUNCTIONS if name in bound], "inputs" in bound)


def load_model_script(path: str) -> ModelScript:
    """Import the script at ``path`` (as a fresh module) and find ``model`` and ``inputs``."""
    path = os.fspath(path)
    if not os.path.isfile(path):
        raise ModelScriptError(f"{path}: no such model script",
                               "give a Python file defining model() and inputs()")
    _refuse_before_running(path)
    module_name = f"_precision_tool_model_{abs(hash(os.path.realpath(path)))}"
    spec = importlib.util.spec_from_file_location(module_name, path)
    if spec is None or spec.loader is None:
        raise ModelScriptError(f"{path}: cannot be imported as Python", "give a .py file")
    module = importlib.util.module_from_spec(spec)
    script_dir = os.path.dirname(os.path.abspath(path))
    added = script_dir not in sys.path
    if added:
        sys.path.insert(0, script_dir)
    try:
        spec.loader.exec_module(module)
    except Exception as error:
        raise ModelScriptError(f"{path}: importing it raised {cause_line(error)}") from error
    except SystemExit as error:
        raise ModelScriptError(f"{path}: importing it called sys.exit({error.code})") from None
    finally:
        if added:
            sys.path.remove(script_dir)
    defined = [name for name in MODEL_FUNCTIONS if callable(getattr(module, name, None))]
    _refuse_missing(path, defined, callable(getattr(module, "inputs", None)))
    if len(defined) > 1:
        names = [f"{name}()" for name in defined]
        listed = f"both {names[0]} and {names[1]}" if len(names) == 2 else f"{', '.join(names[:-1])} and {names[-1]}"
        raise ModelScriptError(f"{path}: defines {listed}", f"keep one: {MODEL_KINDS}")
    found = {name: getattr(module, name) for name in defined}
    return ModelScript(path, found.get("model"), module.inputs, found.get("graph_model"), found.get("graph_def"),
                       found.get("train_graph"))
