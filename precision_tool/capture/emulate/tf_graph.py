"""TensorFlow side of the emulator: freeze a model into a GraphDef, describe it, make sessions.

A model is traced once with ``tf.function`` on inputs of the batch's exact shapes and its variables
are turned into constants, so op names are the Python (Keras) names and every shape is static. The
frozen graph runs in ``tf.compat.v1`` sessions configured so that TensorFlow executes exactly the ops
of the graph: Grappler off, graph-level constant folding and CSE off, one thread (bit-identical
results from run to run), and oneDNN off (``TF_ENABLE_ONEDNN_OPTS=0``, set before TensorFlow is
imported by :mod:`precision_tool.capture.emulate`).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence, Tuple

import numpy as np

from precision_tool.capture.emulate.errors import EmulationError, ModelScriptError
from precision_tool.capture.emulate.graph_info import TfGraph, TfOp, TfTensor, topological_order
from precision_tool.tf_runtime import session_config
from precision_tool.lazy import lazy_import

tf = lazy_import("tensorflow")

_KEPT_ATTRS = ("transpose_a", "transpose_b", "adj_x", "adj_y", "data_format", "padding", "strides")


@dataclass(frozen=True)
class FrozenModel:
    """A model as a frozen GraphDef (serialized), with the names of its input and output tensors."""

    graph_def: bytes
    inputs: Tuple[str, ...]
    outputs: Tuple[str, ...]


def _is_keras(model) -> bool:
    try:
        keras = __import__("keras")
    except ImportError:
        return False
    return isinstance(model, (keras.Model, keras.layers.Layer))


def _input_names(model, count: int) -> Tuple[str, ...]:
    names = []
    keras_inputs = getattr(model, "inputs", None) if _is_keras(model) else None
    for k in range(count):
        name = None
        if keras_inputs and len(keras_inputs) == count:
            name = str(getattr(keras_inputs[k], "name", "") or "").split(":")[0].replace("/", "_") or None
        names.append(name or ("input" if count == 1 else f"input_{k}"))
    return tuple(names)


def freeze_model(model, batch: Sequence[np.ndarray], script: str = "MODEL_SCRIPT") -> FrozenModel:
    """Trace ``model`` on ``batch`` and freeze it.

    ``model`` is a Keras model (or layer), called with ``training=False`` on one tensor, or on a list
    when ``batch`` holds several arrays; or a plain function of TF ops taking one tensor per array.
    """
    from tensorflow.python.framework.convert_to_constants import convert_variables_to_constants_v2

    keras_model = _is_keras(model)
    names = _input_names(model, len(batch))
    specs = [tf.TensorSpec(array.shape, tf.as_dtype(array.dtype), name=name) for array, name in zip(batch, names)]

    def call(*tensors):
        if keras_model:
            return model(tensors[0] if len(tensors) == 1 else list(tensors), training=False)
        return model(*tensors)

    try:
        concrete = tf.function(call).get_concrete_function(*specs)
        frozen = convert_variables_to_constants_v2(concrete)
    except Exception as error:  # the user's model code raised while being traced
        raise ModelScriptError(f"{script}: tracing model() on inputs of shape "
                               f"{', '.join(str(a.shape) for a in batch)} failed: "
                               f"{type(error).__name__}: {str(error).splitlines()[0] if str(error) else ''}") from error
    graph_def = frozen.graph.as_graph_def()
    inputs = tuple(t.name for t in frozen.inputs)
    outputs = tuple(t.name for t in frozen.outputs)
    if not outputs:
        raise ModelScriptError(f"{script}: model() returned no tensor")
    return FrozenModel(graph_def.SerializeToString(), inputs, outputs)


def _attr_value(value):
    kind = value.WhichOneof("value")
    if kind in ("b", "i", "f"):
        return getattr(value, kind)
    if kind == "s":
        return value.s.decode("utf-8", "replace")
    if kind == "list":
        return list(value.list.i) or [s.decode("utf-8", "replace") for s in value.list.s]
    return None


def _dtype_name(dtype) -> str:
    """numpy's name for a TF dtype (``"float32"``); TF's own name when numpy has none."""
    try:
        return np.dtype(dtype.as_numpy_dtype).name
    except TypeError:
        return dtype.name


def describe_graph(frozen: FrozenModel, script: str = "MODEL_SCRIPT") -> TfGraph:
    """The frozen graph as :class:`TfGraph` records (dtypes and static shapes from TensorFlow)."""
    graph = import_graph(frozen)
    ops = []
    for op in graph.get_operations():
        outputs = []
        for tensor in op.outputs:
            if not tensor.shape.is_fully_defined():
                raise EmulationError(f"{script}: tensor {tensor.name} has a dynamic shape {tensor.shape}",
                                     "the emulator needs static shapes; give inputs() a fixed batch")
            outputs.append(TfTensor(_dtype_name(tensor.dtype), tuple(int(d) for d in tensor.shape)))
        attrs = {key: _attr_value(op.node_def.attr[key]) for key in _KEPT_ATTRS if key in op.node_def.attr}
        ops.append(TfOp(op.name, op.type, tuple(t.name for t in op.inputs), tuple(outputs), attrs))
    return TfGraph(tuple(topological_order(ops)), frozen.inputs, frozen.outputs)


def import_graph(frozen: FrozenModel, graph_def=None):
    """A new ``tf.Graph`` holding ``graph_def`` (default: the frozen model's), names unchanged."""
    if graph_def is None:
        graph_def = tf.compat.v1.GraphDef.FromString(frozen.graph_def)
    graph = tf.Graph()
    with graph.as_default():
        tf.compat.v1.import_graph_def(graph_def, name="")
    return graph


def feed_dict(frozen: FrozenModel, batch: Sequence[np.ndarray]) -> dict:
    return {name: array for name, array in zip(frozen.inputs, batch)}


def run_graph(frozen: FrozenModel, fetches: Sequence[str], batch: Sequence[np.ndarray], graph_def=None):
    """Run ``fetches`` (tensor names) once in a fresh session; returns the arrays in order."""
    graph = import_graph(frozen, graph_def)
    with tf.compat.v1.Session(graph=graph, config=session_config()) as session:
        return session.run(list(fetches), feed_dict=feed_dict(frozen, batch))
