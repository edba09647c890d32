"""One model of a GE graph dump, whichever file it came from (protobuf text or atc/msaccucmp JSON).

A :class:`GraphModel` holds the graphs of one ``ge.proto`` ``ModelDef``, root graph first; for the "Build" stage dump
the root graph's name is the dump tree's ``model_name`` folder and its op names are the names in the dump files
(``../shared/docs/ascend-formats.md`` §6). Every record is a frozen dataclass; attribute values are plain Python
values chosen by the kind GE stored (``s`` -> ``str``, ``i`` -> ``int``, ``td`` -> :class:`TensorDesc`, nothing set ->
``None``; the table: docs/internals/formats.md#ge_graph). The attributes precision_tool relies on are properties
computed from ``attrs`` (:attr:`OpNode.original_op_names`, :attr:`TensorDesc.origin_shape`, ...): they cannot
disagree.
"""
from __future__ import annotations

import dataclasses
import heapq
import re
from dataclasses import dataclass, field
from typing import Any, Dict, Iterator, List, Mapping, Optional, Sequence, Tuple, Type, TypeVar, cast

ORIGINAL_OP_NAMES = "_datadump_original_op_names"
PASS_NAME = "pass_name"
PASS_NAME_UB = "pass_name_ub"
KERNEL_NAME_SUFFIX = "_kernelname"
KERNEL_LIB = "_ge_attr_op_kernel_lib_name"
L1_FUSION_GROUP = "_L1_fusion_sub_graph_no"
IS_MULTI_OP = "_datadump_is_multiop"
ORIGIN_NAME = "_datadump_origin_name"
ORIGIN_OUTPUT_INDEX = "_datadump_origin_output_index"
ORIGIN_FORMAT = "origin_format"
DATADUMP_ORIGIN_FORMAT = "_datadump_origin_format"
ORIGIN_SHAPE = "origin_shape"
_INPUT_INDEX = re.compile(r"-?[0-9]{1,19}\Z")  # ASCII digits only, at most int64's 19: never int()'s digit limit
_Record = TypeVar("_Record")


def _slotted(cls: Type[_Record]) -> Type[_Record]:
    """``cls`` (a frozen dataclass) rebuilt with ``__slots__``, as ``dataclass(slots=True)`` does on Python 3.10+.

    A graph holds one :class:`OpNode`, :class:`InputRef` and :class:`TensorDesc` per op, input and descriptor --
    millions in a large Build graph -- and an instance without a ``__dict__`` is about a third the size. Copying
    and pickling go through ``__getstate__`` / ``__setstate__`` (the default would call the frozen
    ``__setattr__``). Assigning any attribute raises :class:`dataclasses.FrozenInstanceError`.
    """
    names = tuple(item.name for item in dataclasses.fields(cls))  # type: ignore[arg-type]
    namespace = {key: value for key, value in vars(cls).items()
                 if key not in names and key not in ("__dict__", "__weakref__")}
    namespace["__slots__"] = names

    def __getstate__(self):
        return tuple(getattr(self, name) for name in names)

    def __setstate__(self, state):
        for name, value in zip(names, state):
            object.__setattr__(self, name, value)

    def __setattr__(self, name, value):
        raise dataclasses.FrozenInstanceError(f"cannot assign to field {name!r}")

    def __delattr__(self, name):
        raise dataclasses.FrozenInstanceError(f"cannot delete field {name!r}")

    namespace.update(__getstate__=__getstate__, __setstate__=__setstate__, __setattr__=__setattr__,
                     __delattr__=__delattr__)
    rebuilt = type(cls.__name__, cls.__bases__, namespace)
    rebuilt.__qualname__ = cls.__qualname__
    return cast(Type[_Record], rebuilt)


@_slotted
@dataclass(frozen=True)
class DataTypeValue:
    """An ``AttrDef.dt`` value (a ge.proto DataType stored as int64), by enum name: ``"DT_FLOAT"``."""

    name: str


@_slotted
@dataclass(frozen=True)
class NamedAttrs:
    """An ``AttrDef.func`` / ``list.na`` value: a name plus its own attributes."""

    name: str
    attrs: Mapping[str, Any] = field(default_factory=dict, hash=False)


@_slotted
@dataclass(frozen=True)
class TensorValue:
    """An ``AttrDef.t`` value (a constant): its descriptor and raw bytes."""

    desc: "TensorDesc"
    data: bytes = b""


@_slotted
@dataclass(frozen=True)
class TensorDesc:
    """One input or output descriptor of an op (ge.proto ``TensorDescriptor``).

    Parameters
    ----------
    dtype : str
        Enum name, ``"DT_FLOAT16"``; numbers GE added after this table read as ``"DT_UNKNOWN(n)"``.
    layout : str
        Device format, ``"NC1HWC0"``.
    shape : tuple of int
        Device shape; ``()`` for a scalar.
    attrs : dict
        Descriptor attributes (``origin_format``, ``origin_shape``, ``_datadump_origin_name`` ...).
    name : str
        The descriptor's own name field (mostly empty).
    extra_fields : dict
        Other ``TensorDescriptor`` fields that were set (``size``, ``real_dim_cnt``, ``data_offset`` ...),
        by field name, kept so a graph is written back as it was read.
    """

    dtype: str = "DT_UNDEFINED"
    layout: str = ""
    shape: Tuple[int, ...] = ()
    attrs: Mapping[str, Any] = field(default_factory=dict, hash=False)
    name: str = ""
    extra_fields: Mapping[str, Any] = field(default_factory=dict, hash=False)

    def __post_init__(self):
        object.__setattr__(self, "shape", tuple(int(d) for d in self.shape))

    @property
    def origin_format(self) -> str:
        """The layout to convert back to: ``_datadump_origin_format``, else ``origin_format``, else ``""``.

        The dump-specific attribute wins, as in msaccucmp; the two agree whenever both are set.
        """
        return str(self.attrs.get(DATADUMP_ORIGIN_FORMAT) or self.attrs.get(ORIGIN_FORMAT) or "")

    @property
    def origin_shape(self) -> Optional[Tuple[int, ...]]:
        """``origin_shape`` as a tuple (``()`` for a scalar), or ``None`` when the attribute is absent."""
        shape = self.attrs.get(ORIGIN_SHAPE)
        return None if shape is None else tuple(shape)

    @property
    def origin_name(self) -> str:
        """The TensorFlow op whose output this is (``_datadump_origin_name``), or ``""``."""
        return str(self.attrs.get(ORIGIN_NAME) or "")

    @property
    def origin_output_index(self) -> Optional[int]:
        """Which output of :attr:`origin_name` this is, or ``None`` when GE did not say."""
        index = self.attrs.get(ORIGIN_OUTPUT_INDEX)
        return None if index is None else int(index)

    @property
    def size(self) -> int:
        """Byte size GE allotted (``size`` field; 0 when not written)."""
        return int(self.extra_fields.get("size", 0))


@_slotted
@dataclass(frozen=True)
class InputRef:
    """One entry of an op's input list: ``"producer:index"``; index ``-1`` is a control edge.

    An empty entry (GE writes ``""`` for an optional input left out) has ``producer == ""``.
    """

    producer: str
    index: int = 0

    @property
    def is_control(self) -> bool:
        return self.index == -1

    @property
    def is_empty(self) -> bool:
        return self.producer == ""

    @classmethod
    def parse(cls, text: str) -> "InputRef":
        """``"conv:0"`` -> ``InputRef("conv", 0)``; ``"conv"`` -> index 0; ``""`` -> empty.

        Raises ``ValueError`` when the part after the last ``:`` is not an integer written in ASCII digits
        (``-`` allowed, at most 19 digits: no sign ``+``, spaces, ``_`` or other scripts' digits, which
        ``int()`` would take).
        """
        if text == "":
            return cls("", 0)
        producer, colon, index = text.rpartition(":")
        if not colon:
            return cls(text, 0)
        if not _INPUT_INDEX.match(index):
            raise ValueError(f"the output index of an input is not an integer: {index[:30]!r}")
        return cls(producer, int(index))

    def __str__(self) -> str:
        return "" if self.is_empty else f"{self.producer}:{self.index}"


@_slotted
@dataclass(frozen=True)
class OpNode:
    """One op of a graph (ge.proto ``OpDef``).

    ``inputs`` is GE's input list as written, control edges and empty entries included; input ``k`` of a
    dump file is ``data_inputs[k]``. ``extra_fields`` keeps the other ``OpDef`` fields that were set
    (``input_i``, ``output_i``, ``workspace``, ``is_input_const`` ...) by field name. Sequences passed in
    are stored as tuples and ``"producer:index"`` strings as :class:`InputRef`, so a model built by hand
    equals the same model read back.
    """

    name: str
    type: str = ""
    id: int = 0
    stream_id: int = 0
    inputs: Tuple[InputRef, ...] = ()
    input_descs: Tuple[TensorDesc, ...] = ()
    output_descs: Tuple[TensorDesc, ...] = ()
    attrs: Mapping[str, Any] = field(default_factory=dict, hash=False)
    subgraph_names: Tuple[str, ...] = ()
    extra_fields: Mapping[str, Any] = field(default_factory=dict, hash=False)

    def __post_init__(self):
        for name in ("input_descs", "output_descs", "subgraph_names"):
            object.__setattr__(self, name, tuple(getattr(self, name)))
        object.__setattr__(self, "inputs", tuple(InputRef.parse(ref) if isinstance(ref, str) else ref
                                                 for ref in self.inputs))

    @property
    def data_inputs(self) -> Tuple[InputRef, ...]:
        """The inputs dumped with the op: control edges and empty entries dropped, as msaccucmp does."""
        return tuple(ref for ref in self.inputs if not ref.is_control and not ref.is_empty)

    @property
    def original_op_names(self) -> Tuple[str, ...]:
        """The TensorFlow ops this op implements (``_datadump_original_op_names``); ``()`` if not set."""
        names = self.attrs.get(ORIGINAL_OP_NAMES)
        if names is None:
            return ()
        return (names,) if isinstance(names, str) else tuple(str(n) for n in names)

    @property
    def pass_names(self) -> Tuple[str, ...]:
        """Fusion passes that made this op: ``pass_name`` (graph fusion) then ``pass_name_ub`` (UB fusion)."""
        graph_passes = self.attrs.get(PASS_NAME) or ()
        names = [graph_passes] if isinstance(graph_passes, str) else [str(p) for p in graph_passes]
        ub_pass = self.attrs.get(PASS_NAME_UB)
        if ub_pass:
            names.append(str(ub_pass))
        return tuple(names)

    @property
    def kernel_name(self) -> str:
        """The kernel GE compiled for this op (attr ``{op name}_kernelname``), or ``""``."""
        return str(self.attrs.get(self.name + KERNEL_NAME_SUFFIX) or "")

    @property
    def kernel_lib(self) -> str:
        """The engine's kernel library (``_ge_attr_op_kernel_lib_name``, e.g. ``"AIcoreEngine"``), or ``""``."""
        return str(self.attrs.get(KERNEL_LIB) or "")

    @property
    def l1_fusion_group(self) -> str:
        """``_L1_fusion_sub_graph_no``: ops of one L1 fusion group share it; ``""`` when not fused so."""
        return str(self.attrs.get(L1_FUSION_GROUP) or "")

    @property
    def is_fused(self) -> bool:
        """True when the op implements several TF ops or a fusion pass produced it."""
        return len(self.original_op_names) > 1 or bool(self.pass_names)


@dataclass(frozen=True)
class Consumer:
    """An op reading a given output, and at which position of its input list."""

    op: OpNode
    input_position: int


@dataclass(frozen=True)
class TopologicalOrder:
    """Result of :meth:`Graph.topological_order`.

    ``ops`` holds every op once: producers before consumers where possible, file order among equals.
    ``missing_producers`` lists ``(consumer, producer)`` pairs whose producer is not in the graph (graph
    inputs from a parent graph, or a broken file). ``cycle`` names the ops left on a cycle; they come
    last in ``ops``, in file order.
    """

    ops: Tuple[OpNode, ...]
    missing_producers: Tuple[Tuple[str, str], ...] = ()
    cycle: Tuple[str, ...] = ()

    @property
    def is_complete(self) -> bool:
        return not self.missing_producers and not self.cycle


@dataclass(frozen=True)
class Graph:
    """One graph (ge.proto ``GraphDef``): ops in file order, which is GE's execution order."""

    name: str
    ops: Tuple[OpNode, ...] = ()
    inputs: Tuple[str, ...] = ()
    outputs: Tuple[str, ...] = ()
    attrs: Mapping[str, Any] = field(default_factory=dict, hash=False)
    _by_name: Dict[str, OpNode] = field(init=False, repr=False, compare=False, hash=False)

    def __post_init__(self):
        for name in ("ops", "inputs", "outputs"):
            object.__setattr__(self, name, tuple(getattr(self, name)))
        by_name: Dict[str, OpNode] = {}
        for op in self.ops:
            by_name.setdefault(op.name, op)  # a repeated name (a broken file) finds the first
        object.__setattr__(self, "_by_name", by_name)

    def __contains__(self, op_name: str) -> bool:
        return op_name in self._by_name

    def __len__(self) -> int:
        return len(self.ops)

    def op(self, name: str) -> OpNode:
        """The op called ``name``; ``KeyError`` if there is none (see :meth:`find_op`)."""
        try:
            return self._by_name[name]
        except KeyError:
            raise KeyError(f"graph {self.name!r} has no op {name!r}") from None

    def find_op(self, name: str) -> Optional[OpNode]:
        return self._by_name.get(name)

    def ops_of_type(self, op_type: str) -> Tuple[OpNode, ...]:
        return tuple(op for op in self.ops if op.type == op_type)

    def consumers(self, op_name: str, output_index: Optional[int] = None) -> Tuple[Consumer, ...]:
        """Ops reading ``op_name``'s output ``output_index`` (any output, control edges too, if ``None``)."""
        found = []
        for op in self.ops:
            for position, ref in enumerate(op.inputs):
                if ref.producer == op_name and not ref.is_empty and output_index in (None, ref.index):
                    found.append(Consumer(op, position))
        return tuple(found)

    def topological_order(self) -> TopologicalOrder:
        """Order ops so every producer precedes its consumers (data and control edges).

        Kahn's algorithm with ties broken by file order, so a file already in execution order comes back
        unchanged. Never raises: producers missing from the graph and ops on a cycle are reported in the
        result instead.
        """
        position = {op.name: k for k, op in enumerate(self.ops)}
        pending = [0] * len(self.ops)
        successors: List[List[int]] = [[] for _ in self.ops]
        missing = []
        for k, op in enumerate(self.ops):
            for producer in dict.fromkeys(ref.producer for ref in op.inputs if not ref.is_empty):
                if producer not in position:
                    missing.append((op.name, producer))
                else:
                    successors[position[producer]].append(k)
                    pending[k] += 1
        ready = [k for k in range(len(self.ops)) if pending[k] == 0]
        heapq.heapify(ready)
        order = []
        while ready:
            k = heapq.heappop(ready)
            order.append(k)
            for nxt in successors[k]:
                pending[nxt] -= 1
                if pending[nxt] == 0:
                    heapq.heappush(ready, nxt)
        placed = set(order)
        stuck = [k for k in range(len(self.ops)) if k not in placed]
        return TopologicalOrder(
            ops=tuple(self.ops[k] for k in order + stuck),
            missing_producers=tuple(missing),
            cycle=tuple(self.ops[k].name for k in stuck),
        )


@dataclass(frozen=True)
class GraphModel:
    """Every graph of one GE graph dump (ge.proto ``ModelDef``), root graph first."""

    graphs: Tuple[Graph, ...]
    name: str = ""
    version: int = 0
    custom_version: str = ""
    attrs: Mapping[str, Any] = field(default_factory=dict, hash=False)
    notes: Tuple[str, ...] = field(default=(), compare=False)
    """What the file it was read from could not carry into the model (the ONNX form's gaps), one line each
    naming the file; not part of the model's value."""

    def __post_init__(self):
        object.__setattr__(self, "graphs", tuple(self.graphs))

    @property
    def root(self) -> Graph:
        """The root graph; for a Build dump its name is the ``model_name`` folder of the dump tree."""
        if not self.graphs:
            raise ValueError("this GraphModel holds no graph")
        return self.graphs[0]

    def graph(self, name: str) -> Graph:
        """The graph called ``name``; ``KeyError`` if there is none."""
        for graph in self.graphs:
            if graph.name == name:
                return graph
        raise KeyError(f"no graph {name!r}; graphs: {', '.join(g.name for g in self.graphs) or 'none'}")

    def all_ops(self) -> Iterator[Tuple[Graph, OpNode]]:
        """Every op of every graph with its graph, root graph first, file order within a graph."""
        for graph in self.graphs:
            for op in graph.ops:
                yield graph, op

    def find_op(self, name: str) -> Optional[OpNode]:
        """The op called ``name`` in the root graph, else in the first subgraph holding one."""
        for graph in self.graphs:
            op = graph.find_op(name)
            if op is not None:
                return op
        return None


def tensor_desc(dtype: str, layout: str, shape: Sequence[int], *, origin_format: str = "",
                origin_shape: Optional[Sequence[int]] = None, origin_name: str = "",
                origin_output_index: Optional[int] = None, **attrs: Any) -> TensorDesc:
    """Build a :class:`TensorDesc` with the origin attributes GE writes for dumps.

    Examples
    --------
    >>> desc = tensor_desc("DT_FLOAT16", "NC1HWC0", [1, 1, 4, 4, 16], origin_format="NHWC",
    ...                    origin_shape=[1, 4, 4, 3], origin_name="conv1", origin_output_index=0)
    >>> desc.origin_shape, desc.attrs["_datadump_origin_format"]
    ((1, 4, 4, 3), 'NHWC')
    """
    all_attrs: Dict[str, Any] = dict(attrs)
    if origin_format:
        all_attrs[ORIGIN_FORMAT] = origin_format
        all_attrs[DATADUMP_ORIGIN_FORMAT] = origin_format
    if origin_shape is not None:
        all_attrs[ORIGIN_SHAPE] = [int(d) for d in origin_shape]
    if origin_name:
        all_attrs[ORIGIN_NAME] = origin_name
    if origin_output_index is not None:
        all_attrs[ORIGIN_OUTPUT_INDEX] = int(origin_output_index)
    return TensorDesc(dtype=dtype, layout=layout, shape=tuple(shape), attrs=all_attrs)
