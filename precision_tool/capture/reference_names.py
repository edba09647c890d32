"""``record_reference_names(model)``: leave the Keras names a tfdbg v2 dump lacks beside it.

tfdbg v2 names a model input after the ``tf.function`` argument (``images``, ``args_0``, ``data``) and a weight
after the op that read it; an NPU graph may use the Keras ``Input`` name and the variable's name instead.
``tf_dump`` writes those second names from the names file (:mod:`precision_tool.formats.capture_names`). Call it
once the model's variables exist (and after the optimizer's first step if its slots should be named too), in the
process that called ``enable_reference_dump``. See docs/capture-keras-tf2.md#inputs-and-weights-aliases.
"""
from __future__ import annotations

from typing import List, Optional

from precision_tool.capture.settings import notify
from precision_tool.errors import CaptureError
from precision_tool.formats.capture_names import ModelInput, ModelNames, VariableName, write_capture_names

_current_root: Optional[str] = None


def remember_capture_root(root: Optional[str]) -> None:
    """Where :func:`record_reference_names` writes by default (set by ``enable_reference_dump``)."""
    global _current_root
    _current_root = root


def _tf_variable(variable):
    """The ``tf.Variable`` behind a Keras 3 variable (``.value``), or the variable itself (Keras 2)."""
    inner = getattr(variable, "value", None)
    return inner if hasattr(inner, "handle") else variable


def _variable_names(variables) -> List[VariableName]:
    named = []
    for variable in variables:
        tf_variable = _tf_variable(variable)
        handle = getattr(tf_variable, "handle", None)
        handle_id = getattr(handle, "_id", None)
        if handle_id is None:  # graph-mode (TF1) or a non-resource variable: tfdbg v2 never sees it
            continue
        named.append(VariableName(str(tf_variable.name).split(":")[0], int(handle_id)))
    return named


def _model_inputs(model) -> tuple:
    """Per Keras ``Input`` layer, in order: its name and the layers that consume it."""
    found = []
    for layer in getattr(model, "layers", ()):
        if type(layer).__name__ != "InputLayer":
            continue
        consumers = []
        for node in getattr(layer, "_outbound_nodes", ()):
            target = getattr(node, "operation", None) or getattr(node, "outbound_layer", None)
            if target is not None:
                consumers.append(str(target.name))
        found.append(ModelInput(str(layer.name), tuple(consumers)))
    return tuple(found)


def record_reference_names(model, optimizer=None, dump_root: Optional[str] = None) -> str:
    """Write ``model``'s input and variable names (and ``optimizer``'s variables) into the capture folder.

    Parameters
    ----------
    model : a Keras model (Keras 2 or 3).
    optimizer : optional; its variables (slots, iterations) get their names too.
    dump_root : the tfdbg v2 folder; default: the one the last
        :func:`~precision_tool.capture.reference_dump.enable_reference_dump` returned.

    Returns the names file's path. Raises :class:`CaptureError` when there is no capture folder or
    ``model`` has no variables.
    """
    root = dump_root or _current_root
    if root is None:
        raise CaptureError("record_reference_names: no reference capture is running",
                           "call npu_tf_config.enable_reference_dump() first, or pass dump_root=")
    variables = getattr(model, "variables", None)
    if variables is None:
        raise CaptureError(f"record_reference_names expects a Keras model, got {type(model).__name__}")
    extra = getattr(optimizer, "variables", ()) if optimizer is not None else ()
    extra = extra() if callable(extra) else extra  # a method in Keras 2, a property in Keras 3
    named = _variable_names(list(variables) + list(extra))
    path = write_capture_names(root, [ModelNames(str(model.name), _model_inputs(model))], named)
    notify(f"names of model '{model.name}' ({len(named)} variables) -> {path}")
    return path
