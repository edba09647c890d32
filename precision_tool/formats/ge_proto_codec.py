"""Convert between the graph model (:mod:`precision_tool.formats.ge_graph`) and ``ge.proto`` messages.

Both file forms go through a ``ModelDef`` message built from :mod:`precision_tool.formats.ge_schema`: text
is parsed into one, JSON is checked into one (:mod:`precision_tool.formats.ge_json_codec`). This module is
the only place that knows how attribute values map to Python values; the table is in
docs/internals/formats.md#ge_graph.
"""
from __future__ import annotations

import numbers
import re
import struct
from typing import Any, Callable, Dict, Mapping, Optional, Sequence, Tuple

import numpy as np

from precision_tool.errors import GraphFormatError
from precision_tool.formats.dtypes import DTYPE_BY_ENUM_NAME, dtype_name
from precision_tool.formats.ge_graph import (DataTypeValue, Graph, GraphModel, InputRef, NamedAttrs, OpNode,
                                             TensorDesc, TensorValue)
from precision_tool.formats.ge_schema import ge_messages, is_repeated

# OpDef / TensorDescriptor fields with a place of their own in the model; the rest go to extra_fields.
_OP_MODEL_FIELDS = frozenset({"name", "type", "id", "stream_id", "input", "input_desc", "output_desc", "attr",
                              "subgraph_name"})
_DESC_MODEL_FIELDS = frozenset({"name", "dtype", "shape", "layout", "attr"})

# ListValue.val_type -> the repeated member it announces, and back.
_LIST_MEMBER_BY_TYPE = {1: "s", 2: "i", 3: "f", 4: "b", 5: "bt", 6: "td", 7: "t", 8: "g", 9: "na", 10: "dt"}
_LIST_TYPE_BY_MEMBER = {member: vt for vt, member in _LIST_MEMBER_BY_TYPE.items()}
_UNKNOWN_DTYPE = re.compile(r"DT_UNKNOWN\((-?[0-9]{1,19})\)\Z")


def shortest_float32(value: float) -> float:
    """The shortest decimal that rounds to the same float32 as ``value`` (protobuf text prints floats so).

    >>> shortest_float32(0.10000000149011612)
    0.1
    """
    target = struct.pack("<f", value)
    for digits in range(6, 10):
        candidate = float(f"{value:.{digits}g}")
        if struct.pack("<f", candidate) == target:
            return candidate
    return value


def dtype_number(name: str) -> int:
    """``"DT_FLOAT16"`` -> 2, ``"DT_UNKNOWN(99)"`` -> 99; ``ValueError`` for any other name."""
    if name in DTYPE_BY_ENUM_NAME:
        return DTYPE_BY_ENUM_NAME[name]
    match = _UNKNOWN_DTYPE.match(name)
    if match:
        return int(match.group(1))
    raise ValueError(f"unknown GE data type {name!r}")


def _shortened(text: str, limit: int = 60) -> str:
    """``text``, cut to ``limit`` characters (ending in ``...``) so that an error message stays readable."""
    return text if len(text) <= limit else text[:limit - 3] + "..."


# ----------------------------------------------------------------------------------------- message -> model
def model_from_message(message, source=None) -> GraphModel:
    """A :class:`GraphModel` from a ``ModelDef`` message.

    Raises :class:`GraphFormatError` (naming ``source``) when the model holds no graph or an op input is
    not ``producer:index``.
    """
    return MessageReader(source).model(message)


class MessageReader:
    """Converts ``ge.proto`` messages of one file (``source``) into the model, op by op if need be.

    A reader that streams a file hands over each root graph's ops as it meets them (:meth:`op`), then the
    graph without its ops (:meth:`graph` with ``ops``), then the model without its graphs (:meth:`model`
    with ``graphs``); the result equals :func:`model_from_message` on the whole message. Equal short
    strings (attribute keys, op types, layouts, op names and the inputs naming them, short ``s`` values)
    are stored once per file: protobuf makes a new ``str`` at every access, and a large Build graph
    repeats the same few hundred of them millions of times.
    """

    SHARED_LENGTH = 128  # longer strings are rarely repeated; kept as read

    def __init__(self, source=None):
        self.source = source
        self._strings: Dict[str, str] = {}

    def input_refs(self, texts, owner: str, shown) -> Tuple[InputRef, ...]:
        """The ``producer:index`` inputs ``texts`` of ``owner`` (``"op 'x'"``, as messages name it), producer
        names shared; :class:`GraphFormatError` for one that is not ``producer:index`` (``shown`` cuts it)."""
        inputs = []
        for text in texts:
            try:
                ref = InputRef.parse(text)
            except ValueError:
                raise GraphFormatError(self.source, f"{owner} has input {shown(text)}, which is not "
                                                    "'producer:index'") from None
            inputs.append(InputRef(self.shared(ref.producer), ref.index))
        return tuple(inputs)

    def shared(self, text: str) -> str:
        """``text``, or the equal string met before in this file (for strings up to :attr:`SHARED_LENGTH`)."""
        if len(text) > self.SHARED_LENGTH:
            return text
        return self._strings.setdefault(text, text)

    def model(self, message, graphs: Optional[Sequence[Graph]] = None) -> GraphModel:
        """The model of a ``ModelDef``; ``graphs`` are its graphs already converted (then ``message.graph``
        only says whether there was one)."""
        if not message.graph:
            raise GraphFormatError(self.source, "holds no graph",
                                   "a GE graph dump has one 'graph { ... }' block per graph")
        if graphs is None:
            graphs = [self.graph(graph) for graph in message.graph]
        return GraphModel(graphs=tuple(graphs), name=message.name, version=message.version,
                          custom_version=message.custom_version, attrs=self._attrs(message.attr))

    def graph(self, graph, ops: Optional[Sequence[OpNode]] = None) -> Graph:
        """The :class:`Graph` of a ``GraphDef``; ``ops`` are its ops already converted."""
        if ops is None:
            ops = [self.op(op) for op in graph.op]
        return Graph(name=graph.name, ops=tuple(ops), inputs=tuple(graph.input), outputs=tuple(graph.output),
                     attrs=self._attrs(graph.attr))

    def op(self, op) -> OpNode:
        """The :class:`OpNode` of an ``OpDef``; ``GraphFormatError`` for an input that is not ``producer:index``."""
        inputs = self.input_refs(op.input, f"op {_shortened(op.name)!r}", lambda text: repr(_shortened(text)))
        extras = {fd.name: (list(value) if is_repeated(fd) else value)
                  for fd, value in op.ListFields() if fd.name not in _OP_MODEL_FIELDS}
        return OpNode(name=self.shared(op.name), type=self.shared(op.type), id=op.id, stream_id=op.stream_id,
                      inputs=tuple(inputs), input_descs=tuple(self._desc(d) for d in op.input_desc),
                      output_descs=tuple(self._desc(d) for d in op.output_desc), attrs=self._attrs(op.attr),
                      subgraph_names=tuple(op.subgraph_name), extra_fields=extras)

    def _desc(self, desc) -> TensorDesc:
        extras = {fd.name: value for fd, value in desc.ListFields() if fd.name not in _DESC_MODEL_FIELDS}
        return TensorDesc(dtype=dtype_name(desc.dtype), layout=self.shared(desc.layout), shape=tuple(desc.shape.dim),
                          attrs=self._attrs(desc.attr), name=desc.name, extra_fields=extras)

    def _attrs(self, attr_map) -> Dict[str, Any]:
        return {self.shared(key): self._attr(attr_map[key]) for key in attr_map}

    def _text(self, value: bytes) -> str:
        return self.shared(value.decode("utf-8", "surrogateescape"))

    def _attr(self, attr) -> Any:
        kind = attr.WhichOneof("value")
        if kind is None:
            return None
        if kind == "s":
            return self._text(attr.s)
        if kind in ("i", "b", "bt"):
            return getattr(attr, kind)
        if kind == "f":
            return shortest_float32(attr.f)
        if kind == "dt":
            return DataTypeValue(dtype_name(attr.dt))
        if kind == "list":
            return self._list(attr.list)
        if kind == "list_list_int":
            return [list(inner.list_i) for inner in attr.list_list_int.list_list_i]
        if kind == "list_list_float":
            return [[shortest_float32(v) for v in inner.list_f] for inner in attr.list_list_float.list_list_f]
        return self._message_value(kind, getattr(attr, kind))

    def _message_value(self, kind: str, value) -> Any:
        if kind == "td":
            return self._desc(value)
        if kind == "t":
            return TensorValue(self._desc(value.desc), bytes(value.data))
        if kind == "g":
            return self.graph(value)
        return NamedAttrs(value.name, self._attrs(value.attr))  # func / list.na

    def _list(self, list_value) -> list:
        member = _LIST_MEMBER_BY_TYPE.get(list_value.val_type)
        if member is None or not len(getattr(list_value, member)):
            member = next((m for m in _LIST_TYPE_BY_MEMBER if len(getattr(list_value, m))), None)
            if member is None:
                return []
        items = getattr(list_value, member)
        if member == "s":
            return [self._text(item) for item in items]
        if member == "f":
            return [shortest_float32(v) for v in items]
        if member == "dt":
            return [DataTypeValue(dtype_name(v)) for v in items]
        if member in ("i", "b", "bt"):
            return list(items)
        kind = {"na": "func"}.get(member, member)
        return [self._message_value(kind, item) for item in items]


# ----------------------------------------------------------------------------------------- model -> message
def model_to_message(model: GraphModel):
    """A ``ModelDef`` message holding ``model``.

    Raises ``TypeError`` / ``ValueError`` for an attribute value the table cannot store (a bug in the code
    that built the model, not a user error).
    """
    message = ge_messages()["ModelDef"](name=model.name, version=model.version,
                                        custom_version=model.custom_version)
    for graph in model.graphs:
        fill_graph(message.graph.add(), graph)
    _fill_attrs(message.attr, model.attrs)
    return message


def fill_graph(message, graph: Graph) -> None:
    """Fill the empty ``GraphDef`` ``message`` from ``graph``."""
    message.name = graph.name
    message.input.extend(graph.inputs)
    message.output.extend(graph.outputs)
    for op in graph.ops:
        fill_op(message.op.add(), op)
    _fill_attrs(message.attr, graph.attrs)


def fill_op(message, op: OpNode) -> None:
    """Fill the empty ``OpDef`` ``message`` from ``op``."""
    message.name, message.type, message.id, message.stream_id = op.name, op.type, op.id, op.stream_id
    message.input.extend(str(ref) for ref in op.inputs)
    _fill_attrs(message.attr, op.attrs)
    for desc in op.input_descs:
        _fill_desc(message.input_desc.add(), desc)
    for desc in op.output_descs:
        _fill_desc(message.output_desc.add(), desc)
    message.subgraph_name.extend(op.subgraph_names)
    _fill_extras(message, op.extra_fields)


def _fill_desc(message, desc: TensorDesc) -> None:
    message.name, message.layout = desc.name, desc.layout
    message.dtype = dtype_number(desc.dtype)
    message.shape.SetInParent()
    message.shape.dim.extend(desc.shape)
    _fill_attrs(message.attr, desc.attrs)
    _fill_extras(message, desc.extra_fields)


def _fill_extras(message, extras: Mapping[str, Any]) -> None:
    for name, value in extras.items():
        if isinstance(value, (list, tuple)):
            getattr(message, name).extend(value)
        else:
            setattr(message, name, value)


def _fill_attrs(attr_map, attrs: Mapping[str, Any]) -> None:
    for key, value in attrs.items():
        _fill_attr(attr_map[key], value)


def _fill_attr(message, value: Any) -> None:
    if value is None:
        return
    scalar = _scalar_member(value)
    if scalar is not None:
        setattr(message, scalar, _PYTHON_SCALAR[scalar](value))
    elif isinstance(value, str):
        message.s = value.encode("utf-8", "surrogateescape")
    elif isinstance(value, (bytes, bytearray)):
        message.bt = bytes(value)
    elif isinstance(value, DataTypeValue):
        message.dt = dtype_number(value.name)
    elif isinstance(value, (list, tuple)):
        if value and all(isinstance(item, (list, tuple)) for item in value):
            _fill_list_list(message, value)
        else:
            _fill_list(message.list, value)
    else:
        _fill_message_value(message, value)


def _fill_tensor(message, value: TensorValue) -> None:
    _fill_desc(message.desc, value.desc)
    message.data = value.data


def _fill_named(message, value: NamedAttrs) -> None:
    message.name = value.name
    _fill_attrs(message.attr, value.attrs)


# Python type -> (AttrDef member, ListValue member, filler) for values stored as sub-messages.
_MESSAGE_KINDS: Dict[type, Tuple[str, str, Callable[[Any, Any], None]]] = {
    TensorDesc: ("td", "td", _fill_desc), TensorValue: ("t", "t", _fill_tensor),
    Graph: ("g", "g", fill_graph), NamedAttrs: ("func", "na", _fill_named)}


def _fill_message_value(message, value: Any) -> None:
    try:
        member, _, fill = _MESSAGE_KINDS[type(value)]
    except KeyError:
        raise TypeError(f"cannot store a {type(value).__name__} as a GE attribute value") from None
    target = getattr(message, member)
    target.SetInParent()
    fill(target, value)


def _fill_list_list(message, rows) -> None:
    if any(_scalar_member(v) == "f" for row in rows for v in row):
        target = message.list_list_float
        for row in rows:
            target.list_list_f.add().list_f.extend(float(v) for v in row)
    else:
        target = message.list_list_int
        for row in rows:
            target.list_list_i.add().list_i.extend(int(v) for v in row)
    target.SetInParent()


def _fill_list(message, items) -> None:
    message.SetInParent()
    if not items:
        return
    member = _list_member_for(items)
    target = getattr(message, member)
    if member == "s":
        target.extend(item.encode("utf-8", "surrogateescape") for item in items)
    elif member == "dt":
        target.extend(dtype_number(item.name) for item in items)
    elif member in _PYTHON_SCALAR:
        target.extend(_PYTHON_SCALAR[member](item) for item in items)
    elif member == "bt":
        target.extend(bytes(item) for item in items)
    else:
        fill = _MESSAGE_KINDS[type(items[0])][2]
        for item in items:
            fill(target.add(), item)
    message.val_type = _LIST_TYPE_BY_MEMBER[member]


_PYTHON_SCALAR = {"b": bool, "i": int, "f": float}


def _scalar_member(value) -> Optional[str]:
    """``"b"``, ``"i"`` or ``"f"`` for a bool, an integer or a real number (numpy's too), else ``None``."""
    if isinstance(value, (bool, np.bool_)):
        return "b"
    if isinstance(value, numbers.Integral):
        return "i"
    if isinstance(value, numbers.Real):
        return "f"
    return None


def _list_member_for(items) -> str:
    numeric = {_scalar_member(item) for item in items}
    if numeric == {"b"}:
        return "b"
    if numeric == {"i"}:
        return "i"
    if numeric <= {"i", "f"}:
        return "f"
    kinds = {type(item) for item in items}
    by_type = {str: "s", bytes: "bt", DataTypeValue: "dt", **{t: kind[1] for t, kind in _MESSAGE_KINDS.items()}}
    if len(kinds) == 1 and next(iter(kinds)) in by_type:
        return by_type[next(iter(kinds))]
    raise TypeError(f"cannot store a list of {sorted(k.__name__ for k in kinds)} as one GE attribute")
