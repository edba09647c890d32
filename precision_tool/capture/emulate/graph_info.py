"""The frozen TensorFlow graph as plain records, and which of its ops the NPU would execute.

Plain Python: :mod:`precision_tool.capture.emulate.tf_freeze` fills a :class:`TfGraph` from a real GraphDef, tests
build one by hand. GE does not execute everything TensorFlow does: constants and all-constant arithmetic are
folded into weights (:func:`constant_ops`), ``Identity`` and the like pass their input through and vanish
(:func:`tensor_aliases`), ``Placeholder`` becomes ``Data``. What remains are the compute ops (:func:`compute_ops`),
which the fusion and planning steps turn into NPU ops. See docs/internals/emulator.md#graph_info.
"""
from __future__ import annotations

import heapq
from dataclasses import dataclass, field
from typing import Dict, Iterable, List, Mapping, Optional, Sequence, Set, Tuple

PASS_THROUGH_TYPES = frozenset({"Identity", "NoOp", "StopGradient", "Snapshot", "PreventGradient"})
INPUT_TYPES = frozenset({"Placeholder", "PlaceholderWithDefault"})
SHAPE_ONLY_TYPES = frozenset({"Shape", "Size", "Rank", "ShapeN"})
FLOAT_DTYPES = frozenset({"float16", "float32", "float64", "bfloat16"})
NON_NUMERIC_DTYPES = frozenset({"object", "string", "variant", "resource"})  # names TfTensor.dtype may hold


def tensor_name(op_name: str, index: int = 0) -> str:
    """``("conv", 0)`` -> ``"conv:0"``."""
    return f"{op_name}:{index}"


def unique_name(name: str, taken: Set[str]) -> str:
    """``name``, or ``name_K`` with the smallest K >= 1 not in ``taken``; the name returned is added to ``taken``
    (the rule TensorFlow itself uses for op names)."""
    candidate, suffix = name, 0
    while candidate in taken:
        suffix += 1
        candidate = f"{name}_{suffix}"
    taken.add(candidate)
    return candidate


def split_tensor_name(name: str) -> Tuple[str, int]:
    """``"conv:1"`` -> ``("conv", 1)``; ``"conv"`` -> ``("conv", 0)``."""
    op_name, colon, index = name.rpartition(":")
    if colon and index.isdigit():
        return op_name, int(index)
    return name, 0


@dataclass(frozen=True)
class TfTensor:
    """dtype (numpy name: ``"float32"``, ``"int32"``) and static shape of one op output.

    ``dynamic`` marks the one output whose shape TensorFlow leaves to the kernel and the emulator lets
    through: a ``FusedBatchNormV3`` reserve space (``reserve_space_3``), which nothing reads in inference
    and the NPU's ``BNInfer`` does not produce. Its ``shape`` is then ``()`` and means nothing.
    """

    dtype: str
    shape: Tuple[int, ...]
    dynamic: bool = False

    @property
    def is_float(self) -> bool:
        return self.dtype in FLOAT_DTYPES


@dataclass(frozen=True)
class TfOp:
    """One node of the frozen graph.

    ``inputs`` are data inputs as ``"op:index"`` (control inputs dropped); ``outputs`` describe each
    output slot; ``attrs`` keep the few attribute values the planner reads (``transpose_a`` ...).
    """

    name: str
    type: str
    inputs: Tuple[str, ...] = ()
    outputs: Tuple[TfTensor, ...] = ()
    attrs: Optional[Mapping[str, object]] = None

    def attr(self, key: str, default=None):
        return (self.attrs or {}).get(key, default)


@dataclass(frozen=True)
class TfGraph:
    """A frozen graph: ops in topological order, the fed inputs and the fetched outputs (tensor names)."""

    ops: Tuple[TfOp, ...]
    inputs: Tuple[str, ...]
    outputs: Tuple[str, ...]
    _by_name: Dict[str, TfOp] = field(init=False, repr=False, compare=False)

    def __post_init__(self):
        object.__setattr__(self, "_by_name", {op.name: op for op in self.ops})

    def op(self, name: str) -> TfOp:
        return self._by_name[name]

    def __contains__(self, name: str) -> bool:
        return name in self._by_name

    def tensor(self, name: str) -> TfTensor:
        op_name, index = split_tensor_name(name)
        return self._by_name[op_name].outputs[index]


def topological_order(ops: Sequence[TfOp]) -> List[TfOp]:
    """``ops`` with every producer before its consumers (Kahn's algorithm, ties in the given order).

    Producers that are not in ``ops`` are ignored. Raises ``ValueError`` on a cycle (a frozen
    inference graph has none).
    """
    position = {op.name: k for k, op in enumerate(ops)}
    pending = [0] * len(ops)
    successors: List[List[int]] = [[] for _ in ops]
    for k, op in enumerate(ops):
        for producer in {split_tensor_name(t)[0] for t in op.inputs}:
            if producer in position:
                successors[position[producer]].append(k)
                pending[k] += 1
    ready = [k for k in range(len(ops)) if pending[k] == 0]
    heapq.heapify(ready)
    order: List[TfOp] = []
    while ready:
        k = heapq.heappop(ready)
        order.append(ops[k])
        for nxt in successors[k]:
            pending[nxt] -= 1
            if pending[nxt] == 0:
                heapq.heappush(ready, nxt)
    if len(order) != len(ops):
        stuck = next(op.name for k, op in enumerate(ops) if pending[k])
        raise ValueError(f"the graph has a cycle through {stuck!r}")
    return order


def tensor_aliases(graph: TfGraph) -> Dict[str, str]:
    """Pass-through outputs (``Identity:0``) mapped to the tensor they pass on, chains resolved."""
    aliases: Dict[str, str] = {}
    for op in graph.ops:
        if op.type in PASS_THROUGH_TYPES and op.inputs:
            source = op.inputs[0]
            aliases[tensor_name(op.name)] = aliases.get(source, source)
    return aliases


def constant_ops(graph: TfGraph) -> Set[str]:
    """Names of ops GE folds into constants: ``Const``, ops whose data inputs are all constant, and
    ``Shape``-like ops of a fully static input."""
    constant: Set[str] = set()
    for op in graph.ops:
        if op.type in INPUT_TYPES:
            continue
        if op.type == "Const":
            constant.add(op.name)
        elif op.type in SHAPE_ONLY_TYPES and op.inputs:
            constant.add(op.name)
        elif op.inputs and all(split_tensor_name(t)[0] in constant for t in op.inputs):
            constant.add(op.name)
    return constant


def compute_ops(graph: TfGraph, constants: Optional[Iterable[str]] = None) -> List[TfOp]:
    """The ops the NPU executes, in topological order: neither input, constant, nor pass-through, and with a
    numeric output (``PrintV2`` and ``Assert`` write nothing, ``StringFormat`` a string: the host's business,
    nothing to dump or compare)."""
    constants = constant_ops(graph) if constants is None else set(constants)
    return [op for op in graph.ops if op.type not in INPUT_TYPES and op.type not in PASS_THROUGH_TYPES
            and op.name not in constants and any(t.dtype not in NON_NUMERIC_DTYPES for t in op.outputs)]


def consumers(graph: TfGraph, aliases: Mapping[str, str]) -> Dict[str, List[Tuple[str, int]]]:
    """tensor name -> ``[(consumer op, input position)]`` with pass-through ops looked through;
    pass-through ops themselves are not consumers."""
    found: Dict[str, List[Tuple[str, int]]] = {}
    for op in graph.ops:
        if op.type in PASS_THROUGH_TYPES:
            continue
        for position, source in enumerate(op.inputs):
            found.setdefault(aliases.get(source, source), []).append((op.name, position))
    return found
