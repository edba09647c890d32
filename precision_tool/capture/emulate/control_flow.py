"""Control flow unrolled for one batch: ``tf.cond``/``tf.case`` and while loops as straight-line ops.

A frozen TF2 graph keeps control flow functional (``If``, ``Case``, ``While`` and their stateless forms, with their
branches and bodies in its function library). :func:`unroll_control_flow` decides the path the float32 reference
takes with the batch and replaces each such op by the ops of that path (``C/then/R``, ``C/branch_K/R``,
``W/iteration_K/R``), and TensorArrays by tensor ops; :func:`resolve_v1_conditionals` resolves TF1's
``Switch``/``Merge`` the same way. The NPU side follows that path even where its own values would take another.
Names and limits: docs/emulate.md#model_script ("Control flow"); how: docs/internals/emulator.md#control_flow.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, List, Mapping, Optional, Sequence, Set, Union

import numpy as np

from precision_tool.capture.emulate.emulate_errors import EmulationError
from precision_tool.capture.emulate.graph_info import (TfOp, split_tensor_name, tensor_name, topological_order,
                                                       unique_name)
from precision_tool.lazy import lazy_import

tf = lazy_import("tensorflow")

IF_TYPES = frozenset({"If", "StatelessIf"})
CASE_TYPES = frozenset({"Case", "StatelessCase"})
WHILE_TYPES = frozenset({"While", "StatelessWhile"})
CALL_TYPES = frozenset({"PartitionedCall", "StatefulPartitionedCall"})
FUNCTIONAL_TYPES = IF_TYPES | CASE_TYPES | WHILE_TYPES | CALL_TYPES
MAX_ITERATIONS = 1000
MAX_UNROLLED_OPS = 50000  # over every loop and branch: nested loops multiply
LIST_PASS_THROUGH = frozenset({"Identity", "IdentityN", "StopGradient", "Snapshot"})


def has_functional_control_flow(graph_def) -> bool:
    return any(node.op in FUNCTIONAL_TYPES for node in graph_def.node)


def unroll_control_flow(graph_def, feeds: Mapping[str, np.ndarray], outputs: Sequence[str],
                        script: str = "MODEL_SCRIPT", variables: Optional[Mapping[str, np.ndarray]] = None):
    """``graph_def`` with every ``If``/``Case``/``While`` and function call replaced by the ops of the path the batch
    takes, TensorArrays turned into tensor ops, and the ops that no output needs left out.

    Parameters
    ----------
    graph_def : a frozen ``tf.compat.v1.GraphDef`` with its function library; not modified.
    feeds : placeholder tensor name -> its array (the batch).
    outputs : the model's output tensor (or op) names, remapped where they were outputs of a control-flow op.
    variables : for a training step (:mod:`~.train_step`), variable op name -> its value at the start of the step,
        set in the graph before the runs that decide the path.

    Returns
    -------
    (GraphDef, outputs)

    Raises
    ------
    EmulationError
        One line naming the op: a loop over :data:`MAX_ITERATIONS` iterations, a loop TensorFlow's ``while_v2`` did
        not write (no loop counter), a TensorArray used otherwise than docs/internals/emulator.md#control_flow says.
    """
    graph = tf.compat.v1.GraphDef()
    graph.CopyFrom(graph_def)
    library = {function.signature.name: function for function in graph.library.function}
    outputs = list(outputs)
    original: Dict[str, str] = {}  # an inlined op's name -> its name in its function
    added = [0]  # ops added so far, over every round
    functions = _library_graph(graph)
    while True:
        flow = [node for node in graph.node if node.op in FUNCTIONAL_TYPES]
        if not flow:
            break
        decisions = _decide(graph, flow, feeds, script, variables or {})
        for node in flow:
            with functions.as_default():  # where the functions a branch or body calls are looked up
                replacement = _Inliner(graph, library, original, added).replace(node, decisions.get(node.name), script)
            outputs = [_rewired(name, replacement) for name in outputs]
    _TensorLists(graph, feeds, script, variables or {}).rewrite()
    del graph.library.function[:]
    return prune(graph, outputs, feeds), outputs


def prune(graph_def, outputs: Sequence[str], feeds: Mapping[str, np.ndarray]):
    """``graph_def`` cut to what ``outputs`` (tensor or op names) need, its fed placeholders kept even when
    nothing reads them any more (a loop returning only its counter)."""
    keep = {split_tensor_name(t)[0] for t in outputs} | {split_tensor_name(t)[0] for t in feeds}
    with _quiet():  # extract_sub_graph logs its deprecation
        return tf.compat.v1.graph_util.extract_sub_graph(graph_def, sorted(keep))


def _library_graph(graph_def):
    """A ``tf.Graph`` holding ``graph_def``'s function library (and no op)."""
    library = tf.compat.v1.GraphDef()
    library.versions.CopyFrom(graph_def.versions)
    library.library.CopyFrom(graph_def.library)
    graph = tf.Graph()
    with graph.as_default():
        tf.compat.v1.import_graph_def(library, name="")
    return graph


SWITCH_TYPES = frozenset({"Switch", "RefSwitch"})
MERGE_TYPES = frozenset({"Merge", "RefMerge"})
V1_LOOP_TYPES = frozenset({"Enter", "RefEnter", "Exit", "RefExit", "NextIteration", "RefNextIteration", "LoopCond"})


def has_v1_conditionals(graph_def) -> bool:
    """TF1 conditionals (``Switch``/``Merge``, what a frozen TF1 ``tf.cond`` holds) and no TF1 loop."""
    kinds = {node.op for node in graph_def.node}
    return bool(kinds & SWITCH_TYPES) and not kinds & V1_LOOP_TYPES


def resolve_v1_conditionals(graph_def, feeds: Mapping[str, np.ndarray], outputs: Sequence[str],
                            script: str = "MODEL_SCRIPT"):
    """``graph_def`` with its TF1 conditionals resolved along the batch's path: TensorFlow 1's ``tf.cond`` is a
    ``Switch`` per input (data to output 0 when the predicate is false, to output 1 when true) and a ``Merge``
    per output (passing on whichever input is alive). The predicate of each live ``Switch`` is computed by
    running the graph on the batch; the ops of the branch not taken are dead and left out; each ``Switch``
    and ``Merge`` becomes an ``Identity`` of what it passes on (keeping its name, with the predicate's op as a
    control input), so the ops of the branch taken keep their names. A ``Merge``'s second output (which input
    was alive) read by an op is refused. Returns ``(GraphDef, outputs)``.

    Raises
    ------
    EmulationError
    """
    graph = tf.compat.v1.GraphDef()
    graph.CopyFrom(graph_def)
    nodes = graph_order(graph)
    dead: Set[str] = set()  # dead tensors ("op:k"); a dead op has every output dead
    predicates: Dict[str, bool] = {}
    chosen: Dict[str, str] = {}  # a live Merge -> its live input
    outputs_of = {node.name: _output_count(node) for node in nodes}
    for node in nodes:
        data = [i for i in node.input if not i.startswith("^")]
        control = [i[1:] for i in node.input if i.startswith("^")]
        if node.op in MERGE_TYPES:
            alive = [i for i in data if _key(i) not in dead]
            if not alive:
                dead.update(tensor_name(node.name, k) for k in range(2))
            else:
                chosen[node.name] = alive[0]
            continue
        inputs_dead = (any(_key(i) in dead for i in data)
                       or any(c in outputs_of and _all_dead(c, outputs_of, dead) for c in control))
        if inputs_dead:
            dead.update(tensor_name(node.name, k) for k in range(outputs_of[node.name]))
            continue
        if node.op in SWITCH_TYPES:
            predicate = _key(data[1])
            if predicate not in predicates:
                (value,) = _decide_v1(graph_def, predicate, feeds, script)
                predicates[predicate] = _is_true(value)
            dead.add(tensor_name(node.name, 0 if predicates[predicate] else 1))
    merges_read = [i for node in nodes for i in node.input if not i.startswith("^")
                   and split_tensor_name(i)[0] in chosen and split_tensor_name(i)[1] == 1]
    if merges_read:
        raise EmulationError(f"{script}: op {split_tensor_name(merges_read[0])[0]} (Merge): its value_index output "
                             "is read, which the emulator does not resolve")
    switches = {node.name for node in nodes if node.op in SWITCH_TYPES}
    resolved = tf.compat.v1.GraphDef()
    resolved.versions.CopyFrom(graph.versions)
    resolved.library.CopyFrom(graph.library)
    for source_node in nodes:
        if _all_dead(source_node.name, outputs_of, dead):
            continue
        node = resolved.node.add()
        node.CopyFrom(source_node)
        if node.op in SWITCH_TYPES:
            _pass_through(node, node.input[0], [f"^{split_tensor_name(_key(node.input[1]))[0]}"])
        elif node.op in MERGE_TYPES:
            _pass_through(node, chosen[node.name], [])
        for k, source in enumerate(node.input):  # a live Switch's output 1 is now its Identity's output 0
            op_name, index = split_tensor_name(source)
            if not source.startswith("^") and index == 1 and op_name in switches:
                node.input[k] = op_name
    return prune(resolved, outputs, feeds), list(outputs)


def _output_count(node) -> int:
    if node.op in SWITCH_TYPES or node.op in MERGE_TYPES:
        return 2
    return 1


def _all_dead(name: str, outputs_of, dead) -> bool:
    return all(tensor_name(name, k) in dead for k in range(outputs_of[name]))


def _pass_through(node, source: str, control: Sequence[str]) -> None:
    """Turn ``node`` into an ``Identity`` of ``source`` (its dtype attribute ``T`` kept)."""
    dtype = node.attr["T"].type
    others = [i for i in node.input if i.startswith("^")]
    name = node.name
    node.Clear()
    node.name, node.op = name, "Identity"
    node.input.extend([source] + others + [c for c in control if c not in others])
    node.attr["T"].CopyFrom(tf.compat.v1.AttrValue(type=dtype))


def _decide_v1(graph_def, predicate: str, feeds, script: str) -> List[np.ndarray]:
    try:
        return _run(graph_def, [predicate], feeds, {})
    except Exception as error:  # TensorFlow's own: a failing kernel in the reference run
        first = (str(error).strip().splitlines() or [type(error).__name__])[0]
        raise EmulationError(f"{script}: running the model to decide its control flow failed: {first}") from error


def _quiet():
    from precision_tool.capture.emulate.tf_freeze import quiet_tensorflow_logger

    return quiet_tensorflow_logger()


def _rewired(name: str, replacement: Mapping[str, str]) -> str:
    op_name, index = split_tensor_name(name)
    return replacement.get(tensor_name(op_name, index), name)


def _run(graph_def, fetches: Sequence[str], feeds: Mapping[str, np.ndarray],
         variables: Mapping[str, np.ndarray]) -> List[np.ndarray]:
    """``fetches`` of ``graph_def`` run once on ``feeds``, its variables (op name -> value) set first."""
    from precision_tool.tf_runtime import session_config

    graph = tf.Graph()
    with graph.as_default():
        tf.compat.v1.import_graph_def(graph_def, name="")
        setting = []
        for name, value in variables.items():
            variable = graph.get_operation_by_name(name)
            if variable.type == "VarHandleOp":
                setting.append(tf.raw_ops.AssignVariableOp(resource=variable.outputs[0], value=value))
            else:  # a ref variable (VariableV2)
                setting.append(tf.compat.v1.assign(variable.outputs[0], value))
    with tf.compat.v1.Session(graph=graph, config=session_config()) as session:
        if setting:
            session.run(setting)
        return session.run(list(fetches), feed_dict=dict(feeds))


def _decide(graph_def, flow, feeds, script: str, variables: Mapping[str, np.ndarray]) -> Dict[str, np.ndarray]:
    """The value deciding each control-flow op's path: an ``If``'s predicate, a ``Case``'s branch index, a
    ``While``'s final loop counter (its output 0: the number of iterations run)."""
    fetches: Dict[str, str] = {}
    for node in flow:
        if node.op in IF_TYPES | CASE_TYPES:
            fetches[node.name] = _key(node.input[0])
        elif node.op in WHILE_TYPES:
            fetches[node.name] = tensor_name(node.name, 0)
            fetches[f"{node.name}//start"] = _key(node.input[0])
    if not fetches:
        return {}
    try:
        values = _run(graph_def, list(fetches.values()), feeds, variables)
    except Exception as error:  # TensorFlow's own: a failing kernel in the reference run
        first = (str(error).strip().splitlines() or [type(error).__name__])[0]
        raise EmulationError(f"{script}: running the model to decide its control flow failed: {first}") from error
    decided = dict(zip(fetches, (np.asarray(v) for v in values)))
    for node in flow:  # a loop: the number of iterations (final loop counter - initial)
        if node.op in WHILE_TYPES:
            decided[node.name] = decided[node.name] - decided.pop(f"{node.name}//start")
    return decided


def graph_order(graph_def) -> list:
    """The nodes of ``graph_def``, producers (data and control) first."""
    by_name = {node.name: node for node in graph_def.node}
    records = [TfOp(node.name, node.op, tuple(s.lstrip("^") for s in node.input)) for node in graph_def.node]
    return [by_name[op.name] for op in topological_order(records)]


def _last_segment(name: str) -> str:
    return name.rsplit("/", 1)[-1]


class _Inliner:
    """Replaces one functional op by the ops of one of its functions (docs/internals/emulator.md#control_flow)."""

    def __init__(self, graph_def, library, original: Dict[str, str], added: List[int]):
        self.graph = graph_def
        self.added = added
        self.library = library
        self.original = original
        self.script = "MODEL_SCRIPT"
        self.names: Set[str] = {node.name for node in graph_def.node}

    def replace(self, node, decision: Optional[np.ndarray], script: str) -> Dict[str, str]:
        """Inline ``node``'s path and remove it; returns ``{"node:k": tensor now carrying output k}``. ``script``
        names the model in messages (kept for this node's inlining)."""
        self.script = script
        data = [name for name in node.input if not name.startswith("^")]
        control = [name for name in node.input if name.startswith("^")]
        if node.op in IF_TYPES | CASE_TYPES:
            results = self._branch(node, data, control, decision)
        elif node.op in WHILE_TYPES:
            results = self._loop(node, data, control, decision, script)
        else:
            own = self.original.get(node.name, node.name)
            results = self.inline(node.attr["f"].func.name, data, node.name, own, control)
        replacement = {tensor_name(node.name, k): result for k, result in enumerate(results)}
        self._remove(node, replacement, data, control)
        return replacement

    def _branch(self, node, data, control, decision) -> List[str]:
        predicate = split_tensor_name(data[0])[0]
        control = control + [f"^{predicate}"]  # the predicate's ops run, as on the device
        if node.op in IF_TYPES:
            taken = _is_true(decision)
            function = node.attr["then_branch" if taken else "else_branch"].func.name
            scope = "then" if taken else "else"
        else:
            branches = node.attr["branches"].list.func
            index = int(np.asarray(decision).reshape(-1)[0])
            index = index if 0 <= index < len(branches) else len(branches) - 1
            function, scope = branches[index].name, f"branch_{index}"
        return self.inline(function, data[1:], f"{node.name}/{scope}", self.original.get(node.name, node.name), control)

    def _loop(self, node, data, control, decision, script: str) -> List[str]:
        body = self.library[node.attr["body"].func.name]
        arguments = body.signature.input_arg
        if "_grad" in node.name or "_grad" in body.signature.name:  # while_v2's gradient loop (TensorList stacks)
            raise EmulationError(f"{script}: op {node.name} ({node.op}) is the gradient of a while loop (training "
                                 "through a tf.while_loop or a Keras RNN), which the emulator does not unroll",
                                 "for a training step, unroll the loop in the model: LSTM(..., unroll=True), a "
                                 "Python for loop")
        if not arguments or not arguments[0].name.endswith("loop_counter"):
            raise EmulationError(f"{script}: op {node.name} ({node.op}) is a while loop without TensorFlow's loop "
                                 "counter, which the emulator cannot unroll",
                                 "build the loop with tf.while_loop in TensorFlow 2 (tf.function or graph_model())")
        iterations = int(np.asarray(decision).reshape(-1)[0])
        if iterations > MAX_ITERATIONS:
            raise EmulationError(f"{script}: op {node.name} ({node.op}) runs {iterations} iterations; the emulator "
                                 f"unrolls loops and takes at most {MAX_ITERATIONS}",
                                 "shorten it for the emulation, e.g. a shorter sequence")
        values = list(data)
        for k in range(iterations):
            values = self.inline(body.signature.name, values, f"{node.name}/iteration_{k}",
                                 self.original.get(node.name, node.name), control if k == 0 else [])
        return values

    def inline(self, function_name: str, arguments: Sequence[str], prefix: str, own: str,
               control: Sequence[str]) -> List[str]:
        """Add the ops of ``function_name`` applied to ``arguments`` (tensor names) under ``prefix``; returns
        the tensors of its outputs, in order. ``own`` is the calling op's name where it was written (its
        function's, for an op inlined earlier), which the function's op names start with (see
        :func:`_relative`). ``control`` inputs are added to every op with no data input from inside the
        function, so they run after them."""
        from tensorflow.python.framework.function_def_to_graph import function_def_to_graph_def

        function = self.library[function_name]
        body, flat = function_def_to_graph_def(function)
        parameters = {arg.name: argument for arg, argument in zip(function.signature.input_arg, arguments)}
        inner_ops = sum(1 for inner in body.node if inner.name not in parameters)
        self.added[0] += inner_ops
        if self.added[0] > MAX_UNROLLED_OPS:
            raise EmulationError(f"{self.script}: unrolling the control flow at {prefix} takes more than "
                                 f"{MAX_UNROLLED_OPS} ops (nested loops multiply); the emulator unrolls loops",
                                 "shorten the loops for the emulation")
        renamed: Dict[str, str] = {}
        for inner in body.node:
            if inner.name not in parameters:
                renamed[inner.name] = unique_name(f"{prefix}/{_relative(inner.name, own)}", self.names)
                self.original[renamed[inner.name]] = inner.name

        def outer(source: str) -> str:
            is_control = source.startswith("^")
            op_name, index = split_tensor_name(source.lstrip("^"))
            if op_name in parameters:  # an argument: one output
                target = parameters[op_name]
                return f"^{split_tensor_name(target)[0]}" if is_control else target
            if is_control:
                return f"^{renamed[op_name]}"
            return renamed[op_name] if index == 0 else f"{renamed[op_name]}:{index}"

        for inner in body.node:
            if inner.name in parameters:
                continue
            node = self.graph.node.add()
            node.CopyFrom(inner)
            node.name = renamed[inner.name]
            if "_class" in node.attr:  # colocation with ops of the function, by their names there: meaningless here
                del node.attr["_class"]
            sources = [outer(source) for source in inner.input]
            if not any(split_tensor_name(s.lstrip("^"))[0] in renamed for s in inner.input):
                sources += [c for c in control if c not in sources]
            del node.input[:]
            node.input.extend(sources)
        results = []
        for arg in function.signature.output_arg:
            nested = function.ret[arg.name]
            results.append(outer(flat.get(nested, nested)))
        return results

    def _remove(self, node, replacement: Mapping[str, str], data: Sequence[str], control: Sequence[str]) -> None:
        """Remove ``node``; its consumers read the replacement tensors (a control input on it becomes control
        inputs on what now carries its outputs, or on its own inputs)."""
        carriers = sorted({split_tensor_name(t.lstrip("^"))[0] for t in replacement.values()}
                          | {split_tensor_name(t.lstrip("^"))[0] for t in list(data) + list(control)})
        index = next(k for k, n in enumerate(self.graph.node) if n.name == node.name)
        del self.graph.node[index]
        for other in self.graph.node:
            if not any(split_tensor_name(s.lstrip("^"))[0] == node.name for s in other.input):
                continue
            sources = []
            for source in other.input:
                if source == f"^{node.name}":
                    sources += [f"^{c}" for c in carriers if f"^{c}" not in sources]
                elif split_tensor_name(source)[0] == node.name:
                    op_name, slot = split_tensor_name(source)
                    sources.append(replacement[tensor_name(op_name, slot)])
                else:
                    sources.append(source)
            del other.input[:]
            other.input.extend(sources)


def _is_true(value) -> bool:
    """TensorFlow's rule for an ``If`` predicate: a scalar is true when non-zero, a tensor when not empty."""
    array = np.asarray(value)
    if array.ndim == 0:
        return bool(array)
    return array.size > 0


def _relative(name: str, own: str) -> str:
    """``name`` (an op of a function called by op ``own``) without the scope TensorFlow gave it: ``own/``
    (``outer/parity/even`` of ``outer/parity``: ``even``) or else ``own``'s last name (``while/MatMul`` of
    ``rnn/lstm/PartitionedCall/while``: ``MatMul``); unchanged otherwise."""
    if name.startswith(own + "/") and len(name) > len(own) + 1:
        return name[len(own) + 1:]
    first, slash, rest = name.partition("/")
    return rest if slash and first == _last_segment(own) and rest else name


@dataclass
class _Slices:
    """A list made from a tensor: element ``i`` is ``source[i]``."""

    source: str
    length: int


@dataclass
class _Items:
    """A list of written elements (``None``: not written)."""

    items: List[Optional[str]]


class _TensorLists:
    """TensorList ops turned into tensor ops once every index is known (docs/internals/emulator.md#control_flow)."""

    READS_INDEX = {"TensorListGetItem": 1, "TensorListSetItem": 1, "TensorListReserve": 1}

    def __init__(self, graph_def, feeds, script: str, variables: Mapping[str, np.ndarray]):
        self.graph, self.feeds, self.script, self.variables = graph_def, feeds, script, variables

    def rewrite(self) -> None:
        lists = [node for node in self.graph.node if node.op.startswith("TensorList") or node.op == "EmptyTensorList"]
        if not lists:
            return
        known = self._indices(lists)
        values: Dict[str, Union[_Slices, _Items]] = {}
        removed: Set[str] = set()
        for node in graph_order(self.graph):
            listed = [s for s in node.input if not s.startswith("^") and _key(s) in values]
            if node.op == "TensorListFromTensor":
                values[_key(node.name)] = _Slices(node.input[0], self._length(node.input[0]))
                removed.add(node.name)
            elif node.op in ("TensorListReserve", "EmptyTensorList"):
                count = int(known[_key(node.input[1])]) if node.op == "TensorListReserve" else 0
                values[_key(node.name)] = _Items([None] * max(count, 0))
                removed.add(node.name)
            elif node.op == "TensorListSetItem":
                base = self._items(node, values[_key(node.input[0])])
                items = list(base.items)
                if "resize_if_index_out_of_bounds" in node.attr and node.attr["resize_if_index_out_of_bounds"].b:
                    wanted = int(np.asarray(known[_key(node.input[1])]).reshape(-1)[0])  # dynamic_size=True
                    items += [None] * max(0, wanted + 1 - len(items))
                items[self._index(node, known, len(items))] = node.input[2]
                values[_key(node.name)] = _Items(items)
                removed.add(node.name)
            elif node.op == "TensorListGetItem":
                self._get_item(node, values[_key(node.input[0])], known)
            elif node.op == "TensorListStack":
                self._stack(node, values[_key(node.input[0])])
            elif node.op == "TensorListLength":
                value = values[_key(node.input[0])]
                length = value.length if isinstance(value, _Slices) else len(value.items)
                self._make_const(node, np.int32(length))
            elif listed and node.op in LIST_PASS_THROUGH:
                data = [s for s in node.input if not s.startswith("^")]
                for k, source in enumerate(data):
                    if _key(source) in values:
                        values[_key(tensor_name(node.name, k))] = values[_key(source)]
                if len(listed) == len(data):
                    removed.add(node.name)
            elif listed or node.op.startswith("TensorList"):
                raise EmulationError(f"{self.script}: op {node.name} ({node.op}) uses a TensorArray in a way the "
                                     "emulator cannot turn into tensor ops",
                                     "read TensorArrays with read()/stack() at indices known once loops are "
                                     "unrolled")
        kept = [node for node in self.graph.node if node.name not in removed]
        del self.graph.node[:]
        self.graph.node.extend(kept)
        for node in self.graph.node:  # control inputs on removed list ops
            sources = [s for s in node.input if not (s.startswith("^") and s[1:] in removed)]
            del node.input[:]
            node.input.extend(sources)

    def _indices(self, lists) -> Dict[str, np.ndarray]:
        fetches = sorted({_key(node.input[self.READS_INDEX[node.op]]) for node in lists if node.op in self.READS_INDEX})
        if not fetches:
            return {}
        return dict(zip(fetches, (np.asarray(v) for v in _run(self.graph, fetches, self.feeds, self.variables))))

    def _length(self, source: str) -> int:
        return int(self._shape(source)[0])

    def _shape(self, tensor: str):
        graph = tf.Graph()
        with graph.as_default():
            tf.compat.v1.import_graph_def(self.graph, name="")
        return graph.get_tensor_by_name(tensor if ":" in tensor else f"{tensor}:0").shape.as_list()

    def _items(self, node, value) -> _Items:
        if isinstance(value, _Items):
            return value
        raise EmulationError(f"{self.script}: op {node.name} ({node.op}) writes into a TensorArray made from a "
                             "tensor, which the emulator does not take", "write into a new TensorArray")

    def _index(self, node, known, length: int) -> int:
        index = int(np.asarray(known[_key(node.input[1])]).reshape(-1)[0])
        if not 0 <= index < length:
            raise EmulationError(f"{self.script}: op {node.name} ({node.op}) uses index {index} of a TensorArray of "
                                 f"{length} elements")
        return index

    def _get_item(self, node, value, known) -> None:
        dtype = node.attr["element_dtype"].type
        if isinstance(value, _Items):
            item = value.items[self._index(node, known, len(value.items))]
            if item is None:
                raise EmulationError(f"{self.script}: op {node.name} ({node.op}) reads a TensorArray element never "
                                     "written")
            self._make(node, "Identity", [item], T=tf.compat.v1.AttrValue(type=dtype))
            return
        index = self._index(node, known, value.length)
        begin = self._add_const(f"{node.name}/begin", np.array([index], np.int32))
        end = self._add_const(f"{node.name}/end", np.array([index + 1], np.int32))
        strides = self._add_const(f"{node.name}/strides", np.array([1], np.int32))
        zero = tf.compat.v1.AttrValue(i=0)
        self._make(node, "StridedSlice", [value.source, begin, end, strides], T=tf.compat.v1.AttrValue(type=dtype),
                   Index=tf.compat.v1.AttrValue(type=tf.int32.as_datatype_enum), begin_mask=zero, end_mask=zero,
                   ellipsis_mask=zero, new_axis_mask=zero, shrink_axis_mask=tf.compat.v1.AttrValue(i=1))

    def _stack(self, node, value) -> None:
        dtype = node.attr["element_dtype"].type
        if isinstance(value, _Slices):
            self._make(node, "Identity", [value.source], T=tf.compat.v1.AttrValue(type=dtype))
            return
        missing = [k for k, item in enumerate(value.items) if item is None]
        if missing:
            raise EmulationError(f"{self.script}: op {node.name} ({node.op}) stacks a TensorArray whose element "
                                 f"{missing[0]} was never written")
        self._make(node, "Pack", list(value.items), T=tf.compat.v1.AttrValue(type=dtype),
                   N=tf.compat.v1.AttrValue(i=len(value.items)), axis=tf.compat.v1.AttrValue(i=0))

    def _make_const(self, node, array) -> None:
        proto = tf.make_tensor_proto(np.asarray(array))
        self._make(node, "Const", [], dtype=tf.compat.v1.AttrValue(type=proto.dtype),
                   value=tf.compat.v1.AttrValue(tensor=proto))

    def _add_const(self, name: str, array: np.ndarray) -> str:
        node = self.graph.node.add(name=name, op="Const")
        proto = tf.make_tensor_proto(array)
        node.attr["dtype"].CopyFrom(tf.compat.v1.AttrValue(type=proto.dtype))
        node.attr["value"].CopyFrom(tf.compat.v1.AttrValue(tensor=proto))
        return name

    @staticmethod
    def _make(node, op: str, inputs: Sequence[str], **attrs) -> None:
        """Turn ``node`` (same name, same control inputs) into ``op`` on ``inputs``."""
        control = [s for s in node.input if s.startswith("^")]
        name, device = node.name, node.device
        node.Clear()
        node.name, node.op, node.device = name, op, device
        node.input.extend(list(inputs) + control)
        for key, value in attrs.items():
            node.attr[key].CopyFrom(value)


def _key(name: str) -> str:
    op_name, index = split_tensor_name(name)
    return tensor_name(op_name, index)
