"""TensorFlow side of the emulator: freeze a model into a GraphDef, describe it, make sessions.

:func:`freeze_model` traces a model once with ``tf.function`` on the batch's exact shapes (TF1 graph code,
:class:`GraphFunction`, is built once in a ``tf.Graph``; a ``graph_def()`` graph is only cut and shaped) and turns
its variables into constants: op names are the Python (Keras) names and every shape is static. Control flow is
unrolled along the batch's path (:mod:`~.control_flow`). :func:`describe_graph` gives the :class:`TfGraph`
records, refusing dynamic shapes (but a batch norm's reserve spaces), TF1 while loops and batch norms the NPU
cannot run. Sessions: :func:`precision_tool.tf_runtime.session_config`. See docs/internals/emulator.md#tf_freeze.
"""
from __future__ import annotations

import contextlib
import inspect
import re
import sys
from dataclasses import dataclass
from typing import Callable, Iterator, Optional, Sequence, Tuple

import numpy as np

from precision_tool.capture.emulate import op_tables as T
from precision_tool.capture.emulate.control_flow import (has_functional_control_flow, has_v1_conditionals,
                                                          resolve_v1_conditionals, unroll_control_flow)
from precision_tool.capture.emulate.emulate_errors import EmulationError, ModelScriptError, cause_line
from precision_tool.errors import PrecisionToolError
from precision_tool.capture.emulate.graph_info import (TfGraph, TfOp, TfTensor, consumers, tensor_aliases,
                                                       tensor_name, topological_order)
from precision_tool.tf_runtime import session_config
from precision_tool.lazy import lazy_import

tf = lazy_import("tensorflow")

_KEPT_ATTRS = ("transpose_a", "transpose_b", "adj_x", "adj_y", "data_format", "padding", "strides", "is_training",
               "epsilon", T.KEEP_FP32_ATTR)
KERAS_MODULES = ("keras", "tf_keras")  # Keras 3, and Keras 2 (tf.keras with TF_USE_LEGACY_KERAS=1)
LEGACY_KERAS = "TF_USE_LEGACY_KERAS"  # TensorFlow's switch: tf.keras and tf.compat.v1.layers from tf_keras
_OP_NAME = re.compile(r"[A-Za-z0-9.][A-Za-z0-9_.\-/>]*$")  # TensorFlow's rule for an op name


@dataclass(frozen=True)
class GraphFunction:
    """A TF1 graph-building function: ``function(*inputs)`` builds ops on one placeholder per input array
    (named after its parameters) and returns the output tensor(s). It runs once, in a ``tf.Graph``:
    ``tf.compat.v1.layers``, ``tf.compat.v1.get_variable`` and other graph code work there, and variables take
    their initialisers' values, seeded."""

    function: Callable
    label: str = "graph_model()"


@dataclass(frozen=True)
class FrozenModel:
    """A model as a frozen GraphDef (serialized), with the names of its input and output tensors;
    ``training_step``: the step frozen, for a training step (:mod:`~.train_step`)."""

    graph_def: bytes
    inputs: Tuple[str, ...]
    outputs: Tuple[str, ...]
    training_step: Optional[int] = None


def _is_keras(model) -> bool:
    """A Keras 3 or Keras 2 (``tf_keras``) model or layer. A model's Keras is imported already, so only
    imported modules are looked at."""
    for module_name in KERAS_MODULES:
        keras = sys.modules.get(module_name)
        layer = getattr(getattr(keras, "layers", None), "Layer", None)
        classes = tuple(c for c in (getattr(keras, "Model", None), layer) if isinstance(c, type))
        if classes and isinstance(model, classes):
            return True
    return False


# What TensorFlow and Keras say when TF1 graph code runs under tf.function (e.g. tf.compat.v1.layers).
_TF1_MARKS = ("eager execution", "not available with Keras 3")
TF1_HINT = ("model() is traced with tf.function; for TF1 graph code (tf.compat.v1.layers, get_variable) define "
            "graph_model(inputs) instead of model(): see MODEL_SCRIPT in docs/emulate.md")
KERAS2_HINT = ("tf.compat.v1.layers needs Keras 2: pip install tf_keras, and set TF_USE_LEGACY_KERAS=1 before "
               "anything uses tf.keras (first lines of the script)")



def _input_names(model, count: int) -> Tuple[str, ...]:
    """Placeholder names: a Keras model's input names, else ``input`` (``input_K`` for several)."""
    found: Sequence[Optional[str]] = [None] * count
    if _is_keras(model):
        keras_inputs = getattr(model, "inputs", None)
        if keras_inputs and len(keras_inputs) == count:
            found = [str(getattr(t, "name", "") or "").split(":")[0].replace("/", "_") or None for t in keras_inputs]
    return tuple(name or ("input" if count == 1 else f"input_{k}") for k, name in enumerate(found))


def _parameter_names(function, count: int) -> Sequence[Optional[str]]:
    try:
        parameters = list(inspect.signature(function).parameters.values())
    except (TypeError, ValueError):
        return [None] * count
    positional = [p.name for p in parameters if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    if len(positional) != count or len(set(positional)) != count:
        return [None] * count
    return [name if _OP_NAME.match(name) else None for name in positional]


@contextlib.contextmanager
def quiet_tensorflow_logger() -> Iterator[None]:
    """Freezing a wrapped TF1 function logs collection-serialisation warnings, and TF1 layers and graph utilities
    deprecation warnings, that mean nothing here."""
    logger = tf.get_logger()
    level = logger.level
    logger.setLevel("ERROR")
    try:
        yield
    finally:
        logger.setLevel(level)


def _trace(model, specs, keras_model: bool):
    """A concrete function of ``model`` on ``specs``."""
    def call(*tensors):
        if keras_model:
            return model(tensors[0] if len(tensors) == 1 else list(tensors), training=False)
        return model(*tensors)

    return tf.function(call).get_concrete_function(*specs)


@contextlib.contextmanager
def _functional_case() -> Iterator[None]:
    """Freezing with ``lower_control_flow=False`` keeps ``If`` and ``While`` functional, but TensorFlow's list of
    the ops it keeps (a private set of ``convert_to_constants``) leaves ``Case`` out, so Grappler would lower a
    ``tf.case`` to ``_SwitchN``/``Merge``: the list is extended while freezing. Without the set (another
    TensorFlow), a ``tf.case`` is lowered and refused as before."""
    from tensorflow.python.framework import convert_to_constants

    kept = getattr(convert_to_constants, "_CONTROL_FLOW_OPS", None)
    added = {"Case", "StatelessCase"} - kept if isinstance(kept, set) else set()
    if isinstance(kept, set):
        kept.update(added)
    try:
        yield
    finally:
        if isinstance(kept, set):
            kept.difference_update(added)


def graph_code_hint(cause: str) -> Optional[str]:
    """The hint for TF1 graph code that failed to build: Keras 2 for ``tf.compat.v1.layers`` under Keras 3."""
    return KERAS2_HINT if "not available with Keras 3" in cause else None


def _trace_hint(cause: str) -> Optional[str]:
    return TF1_HINT if any(mark in cause for mark in _TF1_MARKS) else None


def freeze_model(model, batch: Sequence[np.ndarray], script: str = "MODEL_SCRIPT", step: int = 0,
                 seed: int = 0) -> FrozenModel:
    """Trace ``model`` on ``batch`` and freeze it.

    ``model`` is a Keras model (or layer; Keras 3 or Keras 2's ``tf_keras``), called with ``training=False``
    on one tensor, or on a list when ``batch`` holds several arrays; a plain function of TF ops taking
    one tensor per array; a :class:`GraphFunction` (TF1 graph code, built and frozen by
    :func:`~.train_step.freeze_graph_code`, with ``TF_USE_LEGACY_KERAS=1`` set unless it is set already); or a
    :class:`~.graph_def_model.GraphDefModel` (a frozen GraphDef, not traced: see
    :func:`~.graph_def_model.freeze_graph_def`, which raises its own one-line errors); or a
    :class:`~.train_step.TrainStep` (a TF1 training step, frozen at step ``step`` by
    :func:`~.train_step.freeze_train_step`, its variables seeded with ``seed``). An
    exception while tracing is a :class:`ModelScriptError` giving its cause in one line (for
    TensorFlow's multi-line ``in user code:`` errors, their last line).
    """
    from tensorflow.python.framework.convert_to_constants import convert_variables_to_constants_v2

    from precision_tool.capture.emulate.graph_def_model import GraphDefModel, freeze_graph_def

    from precision_tool.capture.emulate.train_step import (TrainStep, freeze_function_step, freeze_graph_code,
                                                          freeze_train_step, writes_variables)

    if isinstance(model, GraphDefModel):  # frozen already: cut, and shaped to the batch
        return _unrolled(freeze_graph_def(model, batch, script), batch, script)
    if isinstance(model, TrainStep):  # a training step: steps 0 .. step-1 run, step `step` frozen
        return _unrolled(freeze_train_step(model, batch, step, seed, script), batch, script)
    if isinstance(model, GraphFunction):  # TF1 graph code: built in a tf.Graph and frozen as a step is
        _refuse_step(step, script)
        return _unrolled(freeze_graph_code(model.function, model.label, batch, seed=seed, script=script), batch,
                         script)
    keras_model = _is_keras(model)
    label = "model()"
    names = _input_names(model, len(batch))
    specs = [tf.TensorSpec(array.shape, tf.as_dtype(array.dtype), name=name) for array, name in zip(batch, names)]
    try:
        with quiet_tensorflow_logger():
            concrete = _trace(model, specs, keras_model)
            if writes_variables(concrete):  # a TF2 training step: its writes modelled as train_graph()'s are
                return _unrolled(freeze_function_step(concrete, batch, step, script), batch, script)
            with _functional_case():
                frozen = convert_variables_to_constants_v2(concrete, lower_control_flow=False)
    except PrecisionToolError:
        raise
    except Exception as error:  # the user's model code raised while being traced
        cause = cause_line(error)
        raise ModelScriptError(f"{script}: tracing {label} on inputs of shape "
                               f"{', '.join(str(a.shape) for a in batch)} failed: {cause}",
                               _trace_hint(cause)) from error
    _refuse_step(step, script)
    graph_def = frozen.graph.as_graph_def()
    inputs = tuple(t.name for t in frozen.inputs)
    outputs = tuple(t.name for t in frozen.outputs)
    if not outputs:
        raise ModelScriptError(f"{script}: {label} returned no tensor")
    return _unrolled(FrozenModel(graph_def.SerializeToString(), inputs, outputs), batch, script)


def _refuse_step(step: int, script: str) -> None:
    """``--step N`` (N > 0) for a model that writes no variable: refused, saying what takes it."""
    if step:
        raise EmulationError(f"--step {step}: {script} is not a training step; --step needs train_graph(), or a "
                             "model() step that writes variables (a TF2 training step)")


def _unrolled(frozen: FrozenModel, batch: Sequence[np.ndarray], script: str) -> FrozenModel:
    """``frozen`` with its functional control flow (tf.cond, tf.case, while loops) unrolled along the batch's
    path (:func:`~.control_flow.unroll_control_flow`); unchanged when it has none."""
    graph_def = tf.compat.v1.GraphDef.FromString(frozen.graph_def)
    feeds = dict(zip(frozen.inputs, batch))
    if has_v1_conditionals(graph_def):  # a frozen TF1 tf.cond: Switch/Merge resolved along the batch's path
        graph_def, _ = resolve_v1_conditionals(graph_def, feeds, frozen.outputs, script)
        frozen = FrozenModel(graph_def.SerializeToString(), frozen.inputs, frozen.outputs, frozen.training_step)
    if has_functional_control_flow(graph_def):
        graph_def, outputs = unroll_control_flow(graph_def, feeds, frozen.outputs, script)
        frozen = FrozenModel(graph_def.SerializeToString(), frozen.inputs, tuple(outputs), frozen.training_step)
    return _folded_shape_arithmetic(frozen)


def _folded_shape_arithmetic(frozen: FrozenModel) -> FrozenModel:
    """``frozen`` with the integer ops whose inputs are all constants and whose output shape TensorFlow's shape
    inference leaves open replaced by ``Const`` ops of their values, until none is left. Such ops are shape
    arithmetic of a gradient (``BroadcastGradientArgs`` of two constant shapes: TensorFlow 2.6's tf.function keeps
    them, later ones fold them while tracing), which GE folds on the host too. Output 0 keeps the op's name,
    output K is ``NAME/output_K``. Unchanged (the same object) when there is none."""
    graph_def = tf.compat.v1.GraphDef.FromString(frozen.graph_def)
    changed, renamed = False, {}
    while True:
        graph = import_graph(frozen, graph_def)
        foldable = [op for op in graph.get_operations()
                    if op.inputs and not op.control_inputs and all(t.op.type == "Const" for t in op.inputs)
                    and op.outputs and all(t.dtype.is_integer for t in op.outputs)
                    and any(not t.shape.is_fully_defined() for t in op.outputs)]
        if not foldable:
            break
        with tf.compat.v1.Session(graph=graph, config=session_config()) as session:
            values = session.run([list(op.outputs) for op in foldable])
        for op in foldable:
            for k in range(len(op.outputs)):
                renamed[tensor_name(op.name, k)] = op.name if k == 0 else f"{op.name}/output_{k}"
        folded = {op.name for op in foldable}
        kept = [node for node in graph_def.node if node.name not in folded]
        del graph_def.node[:]
        graph_def.node.extend(kept)
        for op, arrays in zip(foldable, values):
            for k, value in enumerate(arrays):
                proto = tf.make_tensor_proto(np.asarray(value))
                const = graph_def.node.add(op="Const", name=renamed[tensor_name(op.name, k)])
                const.attr["dtype"].CopyFrom(tf.compat.v1.AttrValue(type=proto.dtype))
                const.attr["value"].CopyFrom(tf.compat.v1.AttrValue(tensor=proto))
        for node in graph_def.node:
            for i, source in enumerate(node.input):
                full = source if ":" in source or source.startswith("^") else tensor_name(source)
                if full in renamed:
                    node.input[i] = renamed[full]
        changed = True
    if not changed:
        return frozen
    outputs = tuple(tensor_name(renamed[name]) if name in renamed else name for name in frozen.outputs)
    return FrozenModel(graph_def.SerializeToString(), frozen.inputs, outputs, frozen.training_step)


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
    """The frozen graph as :class:`TfGraph` records (dtypes and static shapes from TensorFlow), its batch
    norms checked (:func:`check_batchnorms`).

    Raises :class:`EmulationError` for control flow (:func:`check_control_flow`, checked first: a loop's
    tensors have dynamic shapes), a tensor of dynamic shape (but a batch norm's reserve space:
    docs/internals/emulator.md#tf_freeze) and a batch norm the emulator does not take.
    """
    graph = import_graph(frozen)
    check_control_flow([(op.name, op.type) for op in graph.get_operations()], script)
    ops = []
    for op in graph.get_operations():
        outputs = []
        for k, tensor in enumerate(op.outputs):
            dtype = _dtype_name(tensor.dtype)
            if not tensor.shape.is_fully_defined():
                if op.type in T.BATCHNORM_TYPES | T.BATCHNORM_GRAD_TYPES and k > 0:  # reserve spaces: the kernel's
                    outputs.append(TfTensor(dtype, (), dynamic=True))
                    continue
                raise EmulationError(f"{script}: tensor {tensor.name} has a dynamic shape {tensor.shape}",
                                     "the emulator needs static shapes; give inputs() a fixed batch")
            outputs.append(TfTensor(dtype, tuple(int(d) for d in tensor.shape)))
        attrs = {key: _attr_value(op.node_def.attr[key]) for key in _KEPT_ATTRS if key in op.node_def.attr}
        ops.append(TfOp(op.name, op.type, tuple(t.name for t in op.inputs), tuple(outputs), attrs))
    described = TfGraph(tuple(topological_order(ops)), frozen.inputs, frozen.outputs)
    check_batchnorms(described, script)
    return described


def check_control_flow(ops: Sequence[Tuple[str, str]], script: str = "MODEL_SCRIPT") -> None:
    """Refuse, in one line naming the construct and an op of it, the control flow left after unrolling.

    Functional ``If``/``Case``/``While`` are unrolled before, and TF1 conditionals (``Switch``/``Merge``) resolved
    when the graph has no TF1 loop (:mod:`~.control_flow`). What reaches here is a TF1 while loop, in a frozen
    GraphDef (``graph_def()``): ``Enter``/``Exit``/``NextIteration``/``LoopCond`` (and the ``Switch``/``Merge``
    of the loop and of any conditional beside it). ``ops`` are ``(name, type)`` in graph order. A loop is named
    by its ``While`` or ``LoopCond`` op; failing a loop, a conditional by its ``If``/``Case`` or first
    ``Switch``. A lowered loop holds ``Switch``/``Merge`` ops too, so loops are looked for first.

    Raises
    ------
    EmulationError
    """
    flow = [(name, kind) for name, kind in ops if kind in T.CONTROL_FLOW_TYPES]
    if not flow:
        return
    loop = any(kind in T.LOOP_TYPES for _, kind in flow)
    anchors = T.LOOP_ANCHORS if loop else T.BRANCH_ANCHORS
    name, kind = next(((n, k) for n, k in flow if k in anchors), flow[0])
    if loop:
        raise EmulationError(f"{script}: op {name} ({kind}) belongs to a TF1 while loop (Enter/Exit/NextIteration/"
                             "LoopCond), which the emulator does not run",
                             "it unrolls TensorFlow 2's functional While: give the model as model() or "
                             "graph_model(), or freeze it in TensorFlow 2 with lower_control_flow=False")
    raise EmulationError(f"{script}: op {name} ({kind}, from tf.cond / tf.case) is TF1 control flow the emulator "
                         "could not resolve", "give the model as model() or graph_model()")


def check_batchnorms(graph: TfGraph, script: str = "MODEL_SCRIPT") -> None:
    """Refuse, in one line naming the op, a ``FusedBatchNorm``/``V2``/``V3`` the emulator cannot run.

    * a ``data_format`` other than NHWC: the emulator lays 4-D activations out from NHWC only;
    * in inference (``is_training`` false, or no attribute: built by hand), any read of an output other
      than ``y`` (batch mean and variance, reserve spaces 1-3), by an op (through pass-through ops) or as a
      model output: ``BNInfer`` has no such output. In inference TensorFlow's CPU kernel only copies mean
      and variance there and writes zeros. In training (``BNTrainingUpdate``) the statistics are outputs,
      read by the moving-average updates and the gradient.

    Raises
    ------
    EmulationError
    """
    aliases = tensor_aliases(graph)
    readers = consumers(graph, aliases)
    returned = {aliases.get(t, t) for t in graph.outputs}
    for op in graph.ops:
        if op.type not in T.BATCHNORM_TYPES | T.BATCHNORM_GRAD_TYPES:
            continue
        data_format = op.attr("data_format", "NHWC")
        if data_format != "NHWC":
            raise EmulationError(f"{script}: {op.name} ({op.type}) has data_format {data_format}, which is not "
                                 "emulated", "use channels-last (NHWC) batch norm")
        if op.type in T.BATCHNORM_GRAD_TYPES or op.attr("is_training") is True:
            continue
        for k in range(1, len(op.outputs)):
            tensor = tensor_name(op.name, k)
            reader = next((name for name, _ in readers.get(tensor, [])), None)
            if tensor in returned or reader is not None:
                who = "model() returns" if tensor in returned else f"{reader} reads"
                raise EmulationError(f"{script}: {who} {tensor} ({_batchnorm_output(k)}) of inference batch norm "
                                     f"{op.name} ({op.type}), which the NPU's BNInfer does not produce",
                                     "use only its output y")


def _batchnorm_output(index: int) -> str:
    names = T.BATCHNORM_OUTPUT_NAMES
    return names[index] if index < len(names) else f"output {index}"


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
