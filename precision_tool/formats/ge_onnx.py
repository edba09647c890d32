"""Read GE's ONNX-text graph dumps (``ge_onnx_*_Build.pbtxt``) into the graph model of
:mod:`precision_tool.formats.ge_graph`, without the CANN toolkit or the ``onnx`` package.

GE writes the graph of each ``ge_proto_*.txt`` beside it as an ONNX ``ModelProto`` in protobuf text. Its messages are
field tables here (:data:`ONNX_MESSAGES`), parsed as ge_proto text is (:mod:`precision_tool.formats.ge_text`). Nodes
become ops (``op_type: "ge:Conv2D"`` -> ``"Conv2D"``; ``op_type: "subgraph"`` -> one more graph) and the flattened
``{input,output}_desc_*:{i}`` attributes their descriptors. What the form lacks (strings below ``DUMP_GE_GRAPH=1``,
which op calls a subgraph, ...) is one note per kind (:func:`model_from_onnx`). The whole mapping and what is lost:
docs/internals/formats.md#ge_onnx.
"""
from __future__ import annotations

import functools
import re
from collections import Counter
from dataclasses import dataclass
from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence, Set, Tuple

from precision_tool.errors import GraphFormatError
from precision_tool.formats.bounds import loads_json, shown_name
from precision_tool.formats.dtypes import DTYPE_BY_ENUM_NAME
from precision_tool.formats.ge_graph import Graph, GraphModel, InputRef, OpNode, TensorDesc
from precision_tool.formats.ge_proto_codec import MessageReader, shortest_float32
from precision_tool.formats.ge_schema import ge_messages
from precision_tool.formats.ge_text import NotCanonicalText, parse_canonical_lines, parse_full_text

PACKAGE = "ge.onnx"  # GE's own package for its copy of onnx.proto, so parse errors name "ge.onnx.NodeProto"
ONNX_HINT = "not protobuf text of an ONNX ModelProto as GE writes it"
ATTRIBUTE_TYPES: Dict[int, str] = {
    0: "UNDEFINED", 1: "FLOAT", 2: "INT", 3: "STRING", 4: "TENSOR", 5: "GRAPH", 6: "FLOATS", 7: "INTS",
    8: "STRINGS", 9: "TENSORS", 10: "GRAPHS", 11: "SPARSE_TENSOR", 12: "SPARSE_TENSORS", 13: "TYPE_PROTO",
    14: "TYPE_PROTOS",
}
# Only the fields GE fills (onnx.proto numbers); anything else in a file is reported, not silently dropped.
ONNX_MESSAGES = {
    "ModelProto": [(1, "ir_version", "int64"), (2, "producer_name", "string"), (5, "model_version", "int64"),
                   (7, "graph", "GraphProto")],
    "GraphProto": [(1, "node", "repeated NodeProto"), (2, "name", "string"),
                   (11, "input", "repeated ValueInfoProto"), (12, "output", "repeated ValueInfoProto")],
    "NodeProto": [(1, "input", "repeated string"), (2, "output", "repeated string"), (3, "name", "string"),
                  (4, "op_type", "string"), (5, "attribute", "repeated AttributeProto")],
    "AttributeProto": [(1, "name", "string"), (2, "f", "float"), (3, "i", "int64"), (4, "s", "bytes"),
                       (6, "g", "GraphProto"), (7, "floats", "repeated float"), (8, "ints", "repeated int64"),
                       (9, "strings", "repeated bytes"), (20, "type", "AttributeType")],
    "ValueInfoProto": [(1, "name", "string"), (2, "type", "TypeProto")],
    "TypeProto": [(1, "tensor_type", "TypeProtoTensor")],  # onnx.proto's nested TypeProto.Tensor
    "TypeProtoTensor": [(1, "elem_type", "int32"), (2, "shape", "TensorShapeProto")],
    "TensorShapeProto": [(1, "dim", "repeated Dimension")],  # onnx.proto's nested TensorShapeProto.Dimension
    "Dimension": [(1, "dim_value", "int64"), (2, "dim_param", "string")],
}
SUBGRAPH_OP_TYPE = "subgraph"
GE_TYPE_PREFIX = "ge:"
_INT, _FLOAT, _STRING, _INTS, _FLOATS, _STRINGS = 2, 1, 3, 7, 6, 8
_STRING_TYPES = (_STRING, _STRINGS)
# ge.proto OpDef fields GE writes as attributes (AddCommonAttrIntoProto); id and stream_id have fields of their own.
_OP_LIST_FIELDS = frozenset({"input_name", "src_name", "src_index", "dst_name", "dst_index", "input_i", "output_i",
                             "workspace", "workspace_bytes", "is_input_const"})
_STRING_FIELDS_EVERY_LEVEL = frozenset({"input_name", "src_name", "dst_name", "_input_name_key"})
_DESC_COUNTS = {"input_desc_nums": "input", "output_desc_nums": "output"}
# "{input|output}_desc_{field}:{i}" or "..._desc_attr_{name}:{i}_{row}"; "{input|output}_desc_{i}" is a JSON string.
_DESC_ENTRY = re.compile(r"(input|output)_desc_(.+):([0-9]{1,9})(?:_([0-9]{1,9}))?\Z")
_DESC_JSON = re.compile(r"(input|output)_desc_([0-9]{1,9})\Z")
_DESC_ATTR_PREFIX = "attr_"
_DESC_ORIGIN_ATTRS = {"origin_dtype": "origin_data_type", "origin_shape": "origin_shape",
                      "origin_layout": "origin_format"}
_DESC_EXTRA_INTS = frozenset({"size", "weight_size", "real_dim_cnt", "data_offset", "cmps_size", "cmps_tab_offset",
                              "reuse_input_index"})
_DESC_EXTRA_BOOLS = frozenset({"reuse_input", "output_tensor", "input_tensor"})
_DESC_EXTRA_STRINGS = frozenset({"device_type", "cmps_tab"})
# A tensor-valued attribute "a" is written as a_desc_dtype / _layout / _device_type strings at every level.
_TENSOR_ATTR_STRING_PARTS = ("_desc_dtype", "_desc_layout", "_desc_device_type")
_ATTR_GROUPS = "attr_groups"
_UNKNOWN_FIELD = re.compile(r'Message type "([^"]+)" has no field named "([^"]+)"')
_ONNX_HEAD = re.compile(r"\s*(?:ir_version|producer_name|producer_version|model_version|opset_import|domain|"
                        r"doc_string|node|op_type)\s*[:{]")
_SHOWN = 5  # names listed in a note before "..."
MAX_DESC_GAPS = 64
"""Descriptor indexes of one op may skip this many places (GE leaves out a null descriptor)."""
HEAD_LINES = 3
"""Non-blank lines :func:`looks_like_onnx_text` looks at: ``graph {``, its ``name``, its first ``node {``."""


@functools.lru_cache(maxsize=None)
def onnx_messages() -> Dict[str, type]:
    """The ONNX message classes GE's dumps need, by name (``"ModelProto"``, ``"NodeProto"``, ...), built on first
    use (this imports protobuf)."""
    from precision_tool.formats.protoschema import build_messages

    return build_messages(PACKAGE, ONNX_MESSAGES, {"AttributeType": ATTRIBUTE_TYPES})


def looks_like_onnx_text(head_lines: Sequence[str], file_name: str = "") -> bool:
    """Whether a graph text is GE's ONNX form rather than ge_proto, from its first :data:`HEAD_LINES` non-blank
    lines and its name.

    An ONNX ``ModelProto`` opens with ``ir_version`` (GE always sets it) and its graph with ``node {`` (a node
    with ``input``/``name``/``op_type``); a ge_proto ``ModelDef`` opens with ``name``, ``version`` or ``graph {``
    and its graph with ``name`` then ``op {``, none of which ONNX has at the top. When the lines do not tell (a
    hand-written ``graph {`` / ``name:`` file without ops), a ``.pbtxt`` name means ONNX.

    >>> looks_like_onnx_text(["ir_version: 6"]), looks_like_onnx_text(["graph {", '  name: "g"'], "a.txt")
    (True, False)
    """
    if any(_ONNX_HEAD.match(line) for line in head_lines[:HEAD_LINES]):
        return True
    return file_name.endswith(".pbtxt")


# ----------------------------------------------------------------------------------------- text -> message
def parse_onnx_lines(lines: Iterable[str], lines_again: Callable[[], Iterable[str]], source=None):
    """Parse GE's ONNX text into a ``ModelProto`` message; returns ``(message, notes)``.

    ``lines`` are read once by the line parser for GE's one-field-per-line layout; on any other layout
    ``lines_again()`` gives them again to protobuf's own parser, which first runs strict and, when the only
    problem is a field outside :data:`ONNX_MESSAGES`, once more skipping such fields. Skipped fields are named
    in a note. Raises :class:`GraphFormatError` naming ``source`` and the line and column of a syntax error.
    """
    message = onnx_messages()["ModelProto"]()
    unknown: List[str] = []
    try:
        parse_canonical_lines(lines, message, on_unknown_field=unknown.append)
        return message, _unknown_field_notes(unknown)
    except NotCanonicalText:
        message.Clear()
    try:
        parse_full_text(lines_again(), message, source, lines_again, allow_unknown_field=False, hint=ONNX_HINT)
        return message, ()
    except GraphFormatError as error:
        unknown_field = _UNKNOWN_FIELD.search(error.cause)
        if unknown_field is None:
            raise
        where = error.cause.split(":")[0]
    message.Clear()
    parse_full_text(lines_again(), message, source, lines_again, allow_unknown_field=True, hint=ONNX_HINT)
    first = f"{unknown_field.group(1)}.{unknown_field.group(2)}"
    return message, (f"fields outside what GE writes were skipped, the first {first} at {where}",)


def _unknown_field_notes(unknown: Sequence[str]) -> Tuple[str, ...]:
    if not unknown:
        return ()
    counts = Counter(unknown)
    return (f"fields outside what GE writes were skipped: {_listed(counts)}",)


def _listed(counts: "Counter[str]") -> str:
    """``"a (3), b"``: the most common names of ``counts`` (then by name), ``...`` after :data:`_SHOWN` of them."""
    ranked = sorted(counts.items(), key=lambda item: (-item[1], item[0]))[:_SHOWN]
    shown = [name if count == 1 else f"{name} ({count})" for name, count in ranked]
    return ", ".join(shown) + (", ..." if len(counts) > _SHOWN else "")


# ----------------------------------------------------------------------------------------- message -> model
@dataclass(frozen=True)
class OnnxModel:
    """What :func:`model_from_onnx` read: the model and one note per thing it could not map (no file name)."""

    model: GraphModel
    notes: Tuple[str, ...] = ()


def model_from_onnx(message, source=None) -> OnnxModel:
    """The :class:`GraphModel` of a GE ``ModelProto`` message, and notes on what could not be mapped.

    The root graph comes first, then one graph per ``subgraph`` node in file order (also when GE nests them).
    Raises :class:`GraphFormatError` naming ``source`` when there is no graph or an input is not
    ``producer:index``. A model without ops is returned as it is; the caller decides (``read_ge_graph`` refuses it).
    """
    if not message.HasField("graph"):
        raise GraphFormatError(source, "holds no graph", "an ONNX graph dump has one 'graph { ... }' block")
    converter = _Converter(source)
    graphs = converter.graphs(message.graph)
    version = message.model_version if 0 <= message.model_version < 2 ** 32 else 0
    return OnnxModel(GraphModel(graphs=tuple(graphs), version=version), converter.notes())


class _Converter:
    """Converts the messages of one file, gathering what it could not map for :meth:`notes`."""

    def __init__(self, source):
        self.source = source
        self._reader = MessageReader(source)  # shares equal strings; converts ge.proto AttrDef text (JSON descs)
        self.ops_with_attributes = 0
        self.level1_strings = 0
        self.subgraphs = 0
        self.graph_outputs = 0
        self.no_ge_prefix: "Counter[str]" = Counter()
        self.unread: "Counter[str]" = Counter()
        self.bad_dtypes: "Counter[str]" = Counter()

    def graphs(self, root) -> List[Graph]:
        """The root graph and every subgraph, breadth first (a subgraph node's graph may hold more)."""
        found: List[Graph] = []
        pending = [(root, root.name)]
        while pending:
            graph_message, name = pending.pop(0)
            ops: List[OpNode] = []
            for node in graph_message.node:
                if node.op_type == SUBGRAPH_OP_TYPE:
                    pending.extend(self._subgraph(node))
                else:
                    ops.append(self.op(node))
            self.graph_outputs += len(graph_message.output)
            inputs = tuple(f"{self._reader.shared(info.name)}:0" for info in graph_message.input)
            found.append(Graph(name=name, ops=tuple(ops), inputs=inputs))
        return found

    def _subgraph(self, node) -> List[Tuple[Any, str]]:
        graphs = [attr.g for attr in node.attribute if attr.name == "graph" and attr.HasField("g")]
        self.subgraphs += len(graphs)
        if not graphs:
            self.unread[f"subgraph node without a graph ({shown_name(node.name, 60)})"] += 1
        for attr in node.attribute:
            if not (attr.name == "graph" and attr.HasField("g")):
                self.unread[f"subgraph node attribute {attr.name}"] += 1
        return [(graph, graph.name or node.name) for graph in graphs]

    # ------------------------------------------------------------------ one node
    def op(self, node) -> OpNode:
        """The :class:`OpNode` of a ``NodeProto`` (not a subgraph node)."""
        op_type = node.op_type
        if op_type.startswith(GE_TYPE_PREFIX):
            op_type = op_type[len(GE_TYPE_PREFIX):]
        else:
            self.no_ge_prefix[op_type] += 1
        if len(node.attribute):
            self.ops_with_attributes += 1
        fields = _OpFields()
        descs: Dict[str, Dict[int, _DescFields]] = {"input": {}, "output": {}}
        for attr in node.attribute:
            self._route(attr, fields, descs)
        return OpNode(name=self._reader.shared(node.name), type=self._reader.shared(op_type), id=fields.id,
                      stream_id=fields.stream_id, inputs=self._inputs(node),
                      input_descs=self._descs(node, "input", descs["input"], fields.counts.get("input", 0)),
                      output_descs=self._descs(node, "output", descs["output"], fields.counts.get("output", 0)),
                      attrs=fields.attrs, extra_fields=fields.extras)

    def _inputs(self, node) -> Tuple[InputRef, ...]:
        return self._reader.input_refs(node.input, f"node {shown_name(node.name, 60)}",
                                       lambda text: shown_name(text, 60))

    def _route(self, attr, fields: "_OpFields", descs: Dict[str, Dict[int, "_DescFields"]]) -> None:
        """Put one attribute where the model keeps it (the table: docs/internals/formats.md#ge_onnx)."""
        name = attr.name
        if name in ("id", "stream_id") and attr.type == _INT and name not in fields.seen:
            fields.seen.add(name)
            setattr(fields, name, attr.i)
            return
        if name in _DESC_COUNTS and attr.type == _INT:
            fields.counts[_DESC_COUNTS[name]] = attr.i
            return
        if name == _ATTR_GROUPS:
            self.unread["attr_groups"] += 1
            return
        entry = _DESC_ENTRY.match(name)
        if entry is not None and self._desc_entry(entry, attr, descs):
            return
        json_desc = _DESC_JSON.match(name)
        if json_desc is not None and attr.type == _STRING:
            self._json_desc(json_desc, attr, descs)
            return
        value = self._value(attr)
        if value is _UNREAD:
            return
        if name in _OP_LIST_FIELDS and name not in fields.seen and isinstance(value, list):
            fields.seen.add(name)
            if value:
                fields.extras[name] = [bool(v) for v in value] if name == "is_input_const" else value
            return
        if attr.type in _STRING_TYPES and name not in _STRING_FIELDS_EVERY_LEVEL \
                and not name.endswith(_TENSOR_ATTR_STRING_PARTS):
            self.level1_strings += 1
        fields.attrs[self._reader.shared(name)] = value

    def _value(self, attr) -> Any:
        """The Python value of an attribute of a type GE writes, else :data:`_UNREAD` (counted for the note)."""
        kind = attr.type
        if kind == _INT:
            return attr.i
        if kind == _FLOAT:
            return shortest_float32(attr.f)
        if kind == _STRING:
            return self._text(attr.s)
        if kind == _INTS:
            return list(attr.ints)
        if kind == _FLOATS:
            return [shortest_float32(v) for v in attr.floats]
        if kind == _STRINGS:
            return [self._text(v) for v in attr.strings]
        self.unread[f"attributes of type {ATTRIBUTE_TYPES.get(kind, str(kind))}"] += 1
        return _UNREAD

    def _text(self, value: bytes) -> str:
        return self._reader.shared(value.decode("utf-8", "surrogateescape"))

    # ------------------------------------------------------------------ descriptors
    def _desc_entry(self, entry, attr, descs) -> bool:
        """File ``{input|output}_desc_{field}:{i}[_{row}]`` under descriptor ``i``; False when ``field`` is not
        one GE writes or its value is of the wrong kind (the attribute then stays an op attribute)."""
        direction, field_name, index, row = entry.group(1), entry.group(2), int(entry.group(3)), entry.group(4)
        if field_name.startswith(_DESC_ATTR_PREFIX):
            attr_name = field_name[len(_DESC_ATTR_PREFIX):]
            if attr_name == "groups":
                self.unread["attr_groups"] += 1
                return True
            value = self._value(attr)
            if value is not _UNREAD:
                if attr.type in _STRING_TYPES and not attr_name.endswith(_TENSOR_ATTR_STRING_PARTS):
                    self.level1_strings += 1
                desc = descs[direction].setdefault(index, _DescFields())
                desc.set_attr(self._reader.shared(attr_name), value, None if row is None else int(row))
            return True
        if row is not None or field_name not in _DESC_FIELD_NAMES:
            return False
        desc = descs[direction].setdefault(index, _DescFields())
        value = self._value(attr)
        if value is not _UNREAD and not desc.set_field(field_name, value, self):
            self.unread[f"descriptor fields of the wrong type ({field_name})"] += 1
        return True

    def _json_desc(self, match, attr, descs) -> None:
        """Descriptor ``i`` written as one JSON object (ops with 20 or more inputs or outputs, current GE)."""
        direction, index = match.group(1), int(match.group(2))
        try:
            obj = loads_json(attr.s.decode("utf-8"))
        except (ValueError, RecursionError):
            obj = None
        if not isinstance(obj, dict):
            self.unread["descriptors in JSON that is not an object"] += 1
            return
        desc = descs[direction].setdefault(index, _DescFields())
        for key, value in obj.items():
            if key in _DESC_FIELD_NAMES:
                if not desc.set_field(key, value, self):
                    self.unread[f"descriptor fields of the wrong type ({key})"] += 1
            elif key == _ATTR_GROUPS:
                self.unread["attr_groups"] += 1
            elif isinstance(value, str):
                converted = self._ge_attr_text(key, value)
                if converted is not _UNREAD:
                    desc.set_attr(self._reader.shared(key), converted, None)
            else:
                self.unread["descriptor JSON entries that are not ge.proto AttrDef text"] += 1

    def _ge_attr_text(self, key: str, text: str) -> Any:
        """A descriptor attribute given as ge.proto ``AttrDef`` text (``i: 1``), as the ge_proto reader reads it."""
        from google.protobuf import text_format

        op = ge_messages()["OpDef"]()
        try:
            text_format.Parse(text, op.attr[key], allow_unknown_field=True)
            return self._reader.op(op).attrs[key]
        except (text_format.ParseError, RecursionError):
            self.unread["descriptor JSON entries that are not ge.proto AttrDef text"] += 1
            return _UNREAD

    def _descs(self, node, direction: str, found: Dict[int, "_DescFields"], count: int) -> Tuple[TensorDesc, ...]:
        """The descriptors in index order; an index GE skipped (a null descriptor) reads as an empty one.

        Indexes may skip at most :data:`MAX_DESC_GAPS` places, so a file cannot make the reader build millions of
        empty descriptors; past that it is a :class:`GraphFormatError` naming the node. A ``*_desc_nums`` that
        differs from the descriptors written is noted.
        """
        total = max(found) + 1 if found else 0
        if total > len(found) + MAX_DESC_GAPS:
            raise GraphFormatError(self.source, f"node {shown_name(node.name, 60)}: {direction} descriptor {total - 1} "
                                                f"given, but only {len(found)} of them")
        if count != total:
            self.unread["descriptor counts (*_desc_nums) that differ from the descriptors written"] += 1
        return tuple(found[index].desc() if index in found else TensorDesc() for index in range(total))

    def dtype_name(self, text: Any) -> str:
        """A GE data type name for :class:`TensorDesc`; a name GE's enum lacks reads as ``DT_UNDEFINED``."""
        if isinstance(text, str) and text in DTYPE_BY_ENUM_NAME:
            return text
        self.bad_dtypes[str(text)] += 1
        return "DT_UNDEFINED"

    # ------------------------------------------------------------------ notes
    def notes(self) -> Tuple[str, ...]:
        notes = []
        if not self.ops_with_attributes:
            notes.append("no node has attributes (DUMP_GE_GRAPH=3 writes names, types and links only): op ids, "
                         "stream ids, tensor descriptors and attributes such as _datadump_original_op_names are "
                         "unknown; the ge_proto_*.txt of the same dump has them")
        elif not self.level1_strings:
            notes.append("no string attributes (GE writes them to the ONNX form only at DUMP_GE_GRAPH=1): "
                         "_datadump_original_op_names, _datadump_origin_name, pass names and kernel names are "
                         "missing; the ge_proto_*.txt of the same dump keeps them")
        if self.subgraphs:
            notes.append(f"{self.subgraphs} subgraph(s): the ONNX form does not say which op calls each, so ops "
                         "have no subgraph_names; the ge_proto_*.txt of the same dump does")
        if self.graph_outputs:
            notes.append(f"{self.graph_outputs} graph output(s) not read: the ONNX form names their ops without "
                         "the output index")
        if self.unread:
            notes.append(f"not read: {_listed(self.unread)}")
        if self.bad_dtypes:
            notes.append(f"data types GE's enum lacks read as DT_UNDEFINED: {_listed(self.bad_dtypes)}")
        if self.no_ge_prefix:
            notes.append(f"op_type without GE's 'ge:' prefix, kept as written: {_listed(self.no_ge_prefix)}")
        return tuple(notes)


_UNREAD = object()


class _OpFields:
    """What the attributes of one node say about its op, gathered while they are read."""

    def __init__(self):
        self.id = 0
        self.stream_id = 0
        self.counts: Dict[str, int] = {}
        self.attrs: Dict[str, Any] = {}
        self.extras: Dict[str, Any] = {}
        self.seen: Set[str] = set()


_DESC_FIELD_NAMES = frozenset({"dtype", "shape", "layout", *_DESC_ORIGIN_ATTRS, *_DESC_EXTRA_INTS, *_DESC_EXTRA_BOOLS,
                               *_DESC_EXTRA_STRINGS})


class _DescFields:
    """One tensor descriptor gathered from its flattened attributes."""

    def __init__(self):
        self.dtype = "DT_UNDEFINED"
        self.layout = ""
        self.shape: Tuple[int, ...] = ()
        self.attrs: Dict[str, Any] = {}
        self.rows: Dict[str, Dict[int, Any]] = {}
        self.extras: Dict[str, Any] = {}

    def set_field(self, name: str, value: Any, converter: _Converter) -> bool:
        """Set a descriptor field from its value (an ``int``, ``str`` or list of ``int``); False for a field
        name GE does not write or a value of the wrong kind."""
        if name == "dtype" and isinstance(value, str):
            self.dtype = converter.dtype_name(value)
        elif name == "layout" and isinstance(value, str):
            self.layout = value
        elif name == "shape" and _is_int_list(value):
            self.shape = tuple(value)
        elif name in _DESC_ORIGIN_ATTRS and (isinstance(value, str) or _is_int_list(value)):
            self.attrs[_DESC_ORIGIN_ATTRS[name]] = list(value) if isinstance(value, list) else value
        elif name in _DESC_EXTRA_INTS and _is_int(value):
            if value:
                self.extras[name] = value
        elif name in _DESC_EXTRA_BOOLS and _is_int(value):
            if value:
                self.extras[name] = bool(value)
        elif name in _DESC_EXTRA_STRINGS and isinstance(value, str):
            if value:
                self.extras[name] = value
        else:
            return False
        return True

    def set_attr(self, name: str, value: Any, row: Optional[int]) -> None:
        if row is None:
            self.attrs[name] = value
        else:
            self.rows.setdefault(name, {})[row] = value

    def desc(self) -> TensorDesc:
        """The descriptor. Left out as ge_proto leaves them out: ``origin_data_type`` ``DT_UNDEFINED``, and an empty
        ``origin_shape`` beside a non-empty shape (GE writes an origin shape never set as ``[]``, which would
        otherwise read as a scalar)."""
        attrs = dict(self.attrs)
        if attrs.get("origin_data_type") == "DT_UNDEFINED":
            del attrs["origin_data_type"]
        if attrs.get("origin_shape") == [] and self.shape:
            del attrs["origin_shape"]
        for name, rows in self.rows.items():
            attrs[name] = [rows[row] for row in sorted(rows)]
        return TensorDesc(dtype=self.dtype, layout=self.layout, shape=self.shape, attrs=attrs,
                          extra_fields=self.extras)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_int_list(value: Any) -> bool:
    return isinstance(value, list) and all(_is_int(v) for v in value)
