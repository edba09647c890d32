"""A training step as one frozen graph: forward, loss, gradients and the variable updates of step N.

A MODEL_SCRIPT's ``train_graph(*inputs)`` (:class:`TrainStep`) builds a whole step in a ``tf.Graph`` and returns
``(loss, train_op)``; a TF2 step is a traced ``model()`` that writes variables (:func:`freeze_function_step`).
Steps 0 to N-1 run in float32 on the batch; step N is then frozen as a pure function of the batch: each variable a
``Const`` of its value at the start of step N (under the variable's name), each write the ops computing the new
value (an output of the model, as GE writes it back; the arithmetic in float32), each stateful random op a
``Const`` of what it draws in step N. Any other write is refused in one line. The writes modelled and their
arithmetic: docs/emulate.md#model_script ("Training steps"); more: docs/internals/emulator.md#train_step.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Mapping, Sequence, Tuple

import numpy as np

from precision_tool.capture.emulate.control_flow import has_functional_control_flow, unroll_control_flow
from precision_tool.capture.emulate.emulate_errors import EmulationError, ModelScriptError, cause_line
from precision_tool.capture.emulate.op_tables import KEEP_FP32_ATTR
from precision_tool.capture.emulate.graph_info import split_tensor_name, tensor_name, unique_name
from precision_tool.lazy import lazy_import

tf = lazy_import("tensorflow")

VARIABLE_TYPES = frozenset({"VarHandleOp", "VariableV2", "Variable"})
READ_TYPES = frozenset({"ReadVariableOp", "ResourceGather", "ResourceGatherNd"})
WRITE_TYPES = frozenset({
    "AssignVariableOp", "Assign", "AssignSubVariableOp", "AssignSub", "AssignAddVariableOp", "AssignAdd",
    "ResourceApplyGradientDescent", "ApplyGradientDescent", "ResourceApplyMomentum", "ApplyMomentum",
    "ResourceApplyKerasMomentum", "ResourceScatterAdd", "ScatterAdd", "ResourceScatterSub", "ScatterSub",
})
MAX_STEPS = 10000


@dataclass(frozen=True)
class TrainStep:
    """A MODEL_SCRIPT's ``train_graph``: TF1 graph code building a training step (see the module docstring)."""

    function: Callable
    label: str = "train_graph()"


def _flatten(value) -> list:
    if isinstance(value, (list, tuple)):
        return [item for element in value for item in _flatten(element)]
    return [value]


def _placeholder_names(function, count: int) -> List[str]:
    from precision_tool.capture.emulate.tf_freeze import _parameter_names

    found = _parameter_names(function, count)
    return [name or ("input" if count == 1 else f"input_{k}") for k, name in enumerate(found)]


def freeze_train_step(model: TrainStep, batch: Sequence[np.ndarray], steps: int = 0, seed: int = 0,
                      script: str = "MODEL_SCRIPT"):
    """Build ``model``'s training step, run ``steps`` steps in float32, and freeze step ``steps`` (see the
    module docstring). Returns a :class:`~.tf_freeze.FrozenModel` whose outputs are the tensors
    ``train_graph`` returned and the new value of every variable written.

    Raises
    ------
    ModelScriptError
        building the step raised (its cause in one line), it returned no training op or tensor, or a
        training step raised.
    EmulationError
        a write the emulator does not model; ``steps`` out of range.
    """
    _check_steps(steps)
    return freeze_graph_code(model.function, model.label, batch, steps, seed, script, training=True)


def _check_steps(steps: int) -> None:
    if not 0 <= steps <= MAX_STEPS:
        raise EmulationError(f"--step {steps}: must be between 0 and {MAX_STEPS}")


def freeze_graph_code(function: Callable, label: str, batch: Sequence[np.ndarray], steps: int = 0, seed: int = 0,
                      script: str = "MODEL_SCRIPT", training: bool = False):
    """Build TF1 graph code ``function(*placeholders)`` in a ``tf.Graph`` seeded with ``seed``, initialise its
    variables in a session, run its training ops ``steps`` times, and freeze what it returned as a pure function
    of the batch (:func:`_pure_step`): variables are ``Const`` ops of their values (under the variable's name),
    writes the arithmetic of the new value. Needs no eager execution, so TensorFlow 1.15 builds it as TensorFlow 2
    does. ``training``: a training step (``train_graph()``), which must return a training op; graph code
    (``graph_model()``) returns tensors.

    Raises
    ------
    ModelScriptError
        building or running the code raised (its cause in one line; for ``tf.compat.v1.layers`` under Keras 3,
        with the hint to install ``tf_keras``), or it returned no tensor (no training op, for a step).
    EmulationError
        a write the emulator does not model.
    """
    from precision_tool.capture.emulate.tf_freeze import FrozenModel, LEGACY_KERAS, graph_code_hint
    from precision_tool.capture.emulate.tf_freeze import quiet_tensorflow_logger
    from precision_tool.tf_runtime import session_config

    os.environ.setdefault(LEGACY_KERAS, "1")  # tf.compat.v1.layers is Keras 2's (until tf.keras is loaded)
    names = _placeholder_names(function, len(batch))
    graph = tf.Graph()
    graph.seed = seed
    try:
        with graph.as_default(), quiet_tensorflow_logger():  # TF1 layers log deprecation warnings
            placeholders = [tf.compat.v1.placeholder(tf.as_dtype(a.dtype), a.shape, name=n)
                            for a, n in zip(batch, names)]
            returned = _flatten(function(*placeholders))
            initialise = tf.compat.v1.global_variables_initializer()
            variables = tf.compat.v1.global_variables()
            values = {_variable_node(v): v.value() for v in variables}
    except Exception as error:
        cause = cause_line(error)
        raise ModelScriptError(f"{script}: building {label} failed: {cause}", graph_code_hint(cause)) from error
    tensors = [t for t in returned if isinstance(t, tf.Tensor)]
    operations = [t for t in returned if isinstance(t, tf.Operation)]
    if training and not operations:
        raise ModelScriptError(f"{script}: {label} returned no training op (a tf.Operation)",
                               "return (loss, optimizer.minimize(loss)); for a variable's assign, return its .op")
    if not tensors and not operations:
        raise ModelScriptError(f"{script}: {label} returned no tensor")
    feed = dict(zip(placeholders, batch))
    try:
        with tf.compat.v1.Session(graph=graph, config=session_config()) as session:
            session.run(initialise)
            for _ in range(steps):
                session.run(operations, feed)
            start = dict(zip(values, session.run(list(values.values()))))
            draws = _random_draws(graph, session, feed)
    except Exception as error:
        raise ModelScriptError(f"{script}: running {label} failed: {cause_line(error)}") from error
    graph_def = _with_constants(graph.as_graph_def(), draws)
    returned_names = [t.name for t in tensors]
    if has_functional_control_flow(graph_def):  # e.g. a dynamic loss scale: the path step N takes, unrolled
        names = returned_names + [op.name for op in operations]
        graph_def, names = unroll_control_flow(graph_def, {p.name: a for p, a in feed.items()}, names, script,
                                               variables=start)
        returned_names, operation_names = names[:len(tensors)], names[len(tensors):]
    else:
        operation_names = [op.name for op in operations]
    keep = [split_tensor_name(t)[0] for t in returned_names] + operation_names
    with quiet_tensorflow_logger():
        frozen, written = _pure_step(graph_def, keep, start, script)
    outputs = tuple(returned_names) + tuple(tensor_name(name) for name in written)
    inputs = tuple(p.name for p in placeholders)
    return FrozenModel(frozen.SerializeToString(), inputs, outputs, training_step=steps if training else None)


def writes_variables(concrete) -> bool:
    """Whether a traced ``tf.function`` (a concrete function) writes a variable it captured: a TF2 training step
    (a batch norm in training mode updates its moving averages; an optimizer applies the gradients)."""
    resources = {internal.op.name for external, internal in concrete.graph.captures
                 if external.dtype == tf.resource}
    return any(op.type in WRITE_TYPES or (op.type not in READ_TYPES and any(_writes_variable(op.node_def, resources)))
               for op in concrete.graph.get_operations())


def freeze_function_step(concrete, batch: Sequence[np.ndarray], steps: int = 0, script: str = "MODEL_SCRIPT",
                         label: str = "model()"):
    """Freeze a TF2 training step -- a traced ``tf.function`` that writes the variables it captured (see
    :func:`writes_variables`) -- as :func:`freeze_graph_code` freezes a TF1 one: ``steps`` steps are run eagerly
    first, then the step is a pure function of the batch, each captured variable a ``Const`` of its value now (named
    as the function's capture), each write the arithmetic of the new value, whose result is an output of the model.
    Other captured tensors become ``Const`` ops of their values. The function's own outputs come first.

    Raises
    ------
    ModelScriptError
        running a step raised (its cause in one line).
    EmulationError
        a write the emulator does not model.
    """
    from precision_tool.capture.emulate.tf_freeze import FrozenModel, quiet_tensorflow_logger

    _check_steps(steps)
    try:
        for _ in range(steps):
            concrete(*[tf.constant(array) for array in batch])
    except Exception as error:
        raise ModelScriptError(f"{script}: running {label} failed: {cause_line(error)}") from error
    graph = concrete.graph
    start: Dict[str, np.ndarray] = {}
    constants: Dict[str, np.ndarray] = {}
    for external, internal in graph.captures:
        if external.dtype == tf.resource:
            start[internal.op.name] = _variable_value(external, internal)
        elif hasattr(external, "numpy"):
            constants[internal.op.name] = external.numpy()
    graph_def = _with_constants(graph.as_graph_def(), constants)
    returned_names = [t.name for t in concrete.outputs]
    operation_names = [op.name for op in graph.control_outputs]
    inputs = tuple(t.name for t in concrete.inputs if t.op.name not in start and t.op.name not in constants)
    if has_functional_control_flow(graph_def):
        feeds = dict(zip(inputs, batch))
        names, count = returned_names + operation_names, len(returned_names)
        graph_def, names = unroll_control_flow(graph_def, feeds, names, script, variables=start)
        returned_names, operation_names = names[:count], names[count:]
    keep = [split_tensor_name(t)[0] for t in returned_names] + operation_names
    with quiet_tensorflow_logger():
        frozen, written = _pure_step(graph_def, keep, start, script)
    outputs = tuple(returned_names) + tuple(tensor_name(name) for name in written)
    return FrozenModel(frozen.SerializeToString(), inputs, outputs, training_step=steps)


def _variable_value(handle, placeholder) -> np.ndarray:
    """The value now of the variable a function captured as ``placeholder``, read through its ``handle``. Its dtype
    is the one the ops reading or writing it give (a slot variable an optimizer created while the function was
    traced -- Keras 2.6's momentum -- is captured without being among the function's ``variables``)."""
    for consumer in placeholder.consumers():
        for key in ("dtype", "T"):
            try:
                dtype = consumer.get_attr(key)
            except ValueError:
                continue
            if dtype != tf.resource:
                return tf.raw_ops.ReadVariableOp(resource=handle, dtype=dtype).numpy()
    raise EmulationError(f"captured resource {placeholder.op.name} is read by no op giving its dtype",
                         "give the step's variables as tf.Variable")


RANDOM_TYPES = frozenset({"RandomUniform", "RandomStandardNormal", "TruncatedNormal", "RandomUniformInt",
                          "RandomShuffle", "Multinomial", "RandomGamma", "RandomPoisson", "RandomPoissonV2"})


def _random_draws(graph, session, feed) -> Dict[str, np.ndarray]:
    """What each stateful random op of the graph (dropout's ``RandomUniform`` ...) draws in step N: run once now,
    after steps 0 to N-1, each advances its state as a step would."""
    randoms = [op for op in graph.get_operations() if op.type in RANDOM_TYPES]
    if not randoms:
        return {}
    drawn = session.run([op.outputs[0] for op in randoms], feed)
    return {op.name: np.asarray(value) for op, value in zip(randoms, drawn)}


def _with_constants(graph_def, values: Mapping[str, np.ndarray]):
    """``graph_def`` with the ops named in ``values`` turned into ``Const`` ops of those values (same names)."""
    for node in graph_def.node:
        if node.name in values:
            proto = tf.make_tensor_proto(values[node.name])
            control = [i for i in node.input if i.startswith("^")]
            name = node.name
            node.Clear()
            node.name, node.op = name, "Const"
            node.input.extend(control)
            node.attr["dtype"].CopyFrom(tf.compat.v1.AttrValue(type=proto.dtype))
            node.attr["value"].CopyFrom(tf.compat.v1.AttrValue(tensor=proto))
    return graph_def


def _variable_node(variable) -> str:
    handle = getattr(variable, "handle", None)
    return (handle.op.name if handle is not None else variable.op.name)


def _needed(graph_def, keep: Sequence[str]) -> List:
    from precision_tool.capture.emulate.graph_def_model import cut_graph

    return cut_graph(graph_def, keep)


class _Rewriter:
    def __init__(self, graph_def, values: Dict[str, np.ndarray], script: str):
        self.source = graph_def
        self.values, self.script = values, script
        self.graph = tf.compat.v1.GraphDef()
        self.graph.versions.CopyFrom(graph_def.versions)
        self.graph.library.CopyFrom(graph_def.library)
        self.written: List[str] = []
        self.taken = {node.name for node in graph_def.node}  # a new op must not take a name the graph has

    def fresh(self, name: str) -> str:
        """``name``, or ``name_K`` when the graph has an op of that name already (a TF2 step's captured momentum
        slot can be named ``.../ResourceApplyKerasMomentum/accum``)."""
        return unique_name(name, self.taken)

    def add(self, op: str, name: str, inputs: Sequence[str], dtype, keep_fp32: bool = True, **attrs):
        name = self.fresh(name)
        node = self.graph.node.add(op=op, name=name)
        node.input.extend(inputs)
        node.attr["T"].CopyFrom(tf.compat.v1.AttrValue(type=dtype))
        for key, value in attrs.items():
            node.attr[key].CopyFrom(value)
        if keep_fp32:
            node.attr[KEEP_FP32_ATTR].CopyFrom(tf.compat.v1.AttrValue(b=True))
        return name

    def constant(self, node) -> None:
        value = self.values.get(node.name)
        if value is None:
            raise EmulationError(f"{self.script}: variable {node.name} ({node.op}) has no value (not a global "
                                 "variable?)")
        proto = tf.make_tensor_proto(np.asarray(value))
        const = self.graph.node.add(op="Const", name=node.name)
        const.attr["dtype"].CopyFrom(tf.compat.v1.AttrValue(type=proto.dtype))
        const.attr["value"].CopyFrom(tf.compat.v1.AttrValue(tensor=proto))

    def read(self, node, current: Mapping[str, str]) -> None:
        """A read of a variable: its value as of this op (:func:`_pure_step`) passed on, or gathered from."""
        data = [s for s in node.input if not s.startswith("^")]
        control = [s for s in node.input if s.startswith("^")]
        variable = current.get(split_tensor_name(data[0])[0], data[0])
        self.taken.discard(node.name)  # the value read takes the read's name
        if node.op == "ReadVariableOp":
            self.add("Identity", node.name, [variable] + control, node.attr["dtype"].type, keep_fp32=False)
            return
        attrs = {"Tparams": tf.compat.v1.AttrValue(type=node.attr["dtype"].type),
                 "Tindices": node.attr["Tindices"]}
        if node.op == "ResourceGather":  # an embedding lookup: GatherV2 on axis 0 (batch_dims kept)
            axis = self.graph.node.add(op="Const", name=self.fresh(f"{node.name}/axis"))
            axis.attr["dtype"].CopyFrom(tf.compat.v1.AttrValue(type=tf.int32.as_datatype_enum))
            axis.attr["value"].CopyFrom(tf.compat.v1.AttrValue(tensor=tf.make_tensor_proto(np.int32(0))))
            gather = self.graph.node.add(op="GatherV2", name=node.name)
            gather.input.extend([variable, data[1], axis.name] + control)
            attrs.update(Taxis=tf.compat.v1.AttrValue(type=tf.int32.as_datatype_enum),
                         batch_dims=tf.compat.v1.AttrValue(i=node.attr["batch_dims"].i))
        else:  # ResourceGatherNd
            gather = self.graph.node.add(op="GatherNd", name=node.name)
            gather.input.extend([variable, data[1]] + control)
        for key, value in attrs.items():
            gather.attr[key].CopyFrom(value)

    def write(self, node, current: Mapping[str, str]) -> Dict[str, str]:
        """The ops of a write's new value(s); returns ``{variable op: tensor of its new value}``. ``current``:
        variable op -> its value as of this op, when a write came before it (:func:`_pure_step`)."""
        data = [s for s in node.input if not s.startswith("^")]
        control = [s for s in node.input if s.startswith("^")]
        dtype = self._dtype(node, data)
        op, name = node.op, node.name
        self.taken.discard(name)  # the new value takes the write's name
        two = op in ("ResourceApplyMomentum", "ApplyMomentum", "ResourceApplyKerasMomentum")
        variables = [split_tensor_name(d)[0] for d in data[:2 if two else 1]]
        data = [current.get(v, d) for v, d in zip(variables, data)] + data[len(variables):]
        if op in ("AssignVariableOp", "Assign"):
            self.add("Identity", name, [data[1]] + control, dtype, keep_fp32=False)
        elif op in ("AssignSubVariableOp", "AssignSub"):
            self.add("Sub", name, [data[0], data[1]] + control, dtype)
        elif op in ("AssignAddVariableOp", "AssignAdd"):
            self.add("AddV2", name, [data[0], data[1]] + control, dtype)
        elif op in ("ResourceScatterAdd", "ScatterAdd", "ResourceScatterSub", "ScatterSub"):
            # a sparse update (an embedding's gradient step): rows `indices` of v plus / minus `updates`
            index_type = node.attr["Tindices"].type
            axis = self.graph.node.add(op="Const", name=self.fresh(f"{name}/last_axis"))
            axis.attr["dtype"].CopyFrom(tf.compat.v1.AttrValue(type=tf.int32.as_datatype_enum))
            axis.attr["value"].CopyFrom(tf.compat.v1.AttrValue(tensor=tf.make_tensor_proto(np.int32(-1))))
            rows = self.graph.node.add(op="ExpandDims", name=self.fresh(f"{name}/rows"))
            rows.input.extend([data[1], axis.name] + control)
            rows.attr["T"].CopyFrom(tf.compat.v1.AttrValue(type=index_type))
            rows.attr["Tdim"].CopyFrom(tf.compat.v1.AttrValue(type=tf.int32.as_datatype_enum))
            kind = "TensorScatterAdd" if op.endswith("Add") else "TensorScatterSub"
            self.add(kind, name, [data[0], rows.name, data[2]], dtype, Tindices=tf.compat.v1.AttrValue(type=index_type))
        elif op in ("ResourceApplyGradientDescent", "ApplyGradientDescent"):
            step = self.add("Mul", f"{name}/step", [data[1], data[2]] + control, dtype)
            self.add("Sub", name, [data[0], step], dtype)
        elif op in ("ResourceApplyMomentum", "ApplyMomentum"):
            var, accum, lr, grad, momentum = data[:5]
            decayed = self.add("Mul", f"{name}/accum_decay", [accum, momentum] + control, dtype)
            new_accum = self.add("AddV2", f"{name}/accum", [decayed, grad], dtype)
            if node.attr["use_nesterov"].b:
                plain = self.add("Mul", f"{name}/lr_grad", [lr, grad], dtype)
                ahead = self.add("Mul", f"{name}/lr_momentum", [lr, momentum], dtype)
                look = self.add("Mul", f"{name}/lr_momentum_accum", [ahead, new_accum], dtype)
                step = self.add("AddV2", f"{name}/step", [plain, look], dtype)
            else:
                step = self.add("Mul", f"{name}/step", [lr, new_accum], dtype)
            self.add("Sub", name, [var, step], dtype)
            self.written.append(new_accum)
        else:  # ResourceApplyKerasMomentum
            var, accum, lr, grad, momentum = data[:5]
            decayed = self.add("Mul", f"{name}/accum_decay", [accum, momentum] + control, dtype)
            scaled = self.add("Mul", f"{name}/lr_grad", [lr, grad], dtype)
            new_accum = self.add("Sub", f"{name}/accum", [decayed, scaled], dtype)
            if node.attr["use_nesterov"].b:
                ahead = self.add("Mul", f"{name}/momentum_accum", [momentum, new_accum], dtype)
                moved = self.add("AddV2", f"{name}/ahead", [var, ahead], dtype)
                self.add("Sub", name, [moved, scaled], dtype)
            else:
                self.add("AddV2", name, [var, new_accum], dtype)
            self.written.append(new_accum)
        self.written.append(name)
        return dict(zip(variables, [name, self.written[-2] if two else ""]))

    def _dtype(self, node, data: Sequence[str]) -> int:
        for key in ("dtype", "T"):
            if key in node.attr and node.attr[key].type:
                return node.attr[key].type
        variable = split_tensor_name(data[0])[0]
        return tf.as_dtype(np.asarray(self.values[variable]).dtype).as_datatype_enum


def _pure_step(graph_def, keep: Sequence[str], values: Dict[str, np.ndarray], script: str) -> Tuple[Any, List[str]]:
    """The nodes ``keep`` needs, variables as constants and writes as the arithmetic of the new value."""
    rewriter = _Rewriter(graph_def, values, script)
    ordered = _graph_order_of(_needed(graph_def, keep))
    position = {node.name: k for k, node in enumerate(ordered)}
    # per op: variable -> (position of the latest write ordered before it, tensor of the value written)
    written_before: Dict[str, Dict[str, Tuple[int, str]]] = {}
    for node in ordered:
        seen: Dict[str, Tuple[int, str]] = {}
        for source in node.input:
            for variable, write in written_before.get(split_tensor_name(source.lstrip("^"))[0], {}).items():
                if variable not in seen or write[0] > seen[variable][0]:
                    seen[variable] = write
        current = {variable: value for variable, (_, value) in seen.items()}
        written_before[node.name] = seen
        if node.op in VARIABLE_TYPES or (node.op == "Placeholder" and node.name in values):  # a TF2 capture
            rewriter.constant(node)
        elif node.op in READ_TYPES:
            rewriter.read(node, current)
        elif node.op in WRITE_TYPES:
            new_values = rewriter.write(node, current)
            written_before[node.name] = dict(seen, **{v: (position[node.name], t) for v, t in new_values.items()})
        elif any(_writes_variable(node, values)):
            raise EmulationError(f"{script}: op {node.name} ({node.op}) writes a variable in a way the emulator does "
                                 "not model", "modelled: assignments, scatter add/sub, GradientDescent, Momentum "
                                 "(tf.compat.v1.train) and Keras 2's SGD")
        else:
            rewriter.graph.node.add().CopyFrom(node)
    written = list(rewriter.written)
    outputs = list(keep) + written
    pure = tf.compat.v1.graph_util.extract_sub_graph(rewriter.graph, outputs)
    return pure, written


def _graph_order_of(nodes) -> list:
    from precision_tool.capture.emulate.control_flow import graph_order

    graph = tf.compat.v1.GraphDef()
    graph.node.extend(nodes)
    by_name = {node.name: node for node in nodes}
    return [by_name[node.name] for node in graph_order(graph)]


def _writes_variable(node, values) -> List[bool]:
    """Whether a ``Resource*``/``Apply*``/``Scatter*`` op takes a variable as its first input."""
    if not node.input or not (node.op.startswith(("Resource", "Apply", "Scatter"))):
        return []
    return [split_tensor_name(node.input[0])[0] in values]
