"""TensorFlow ``GraphDef`` files read without TensorFlow, and the tfdbg v1 executed graphs kept in the workspace.

:func:`read_tf_graph` reads a serialized ``GraphDef`` (``.pb``) into a :class:`TfGraph` of :class:`TfNode` values:
name, op type, inputs, device, and attrs as Python values (``s`` -> ``str``, ``type`` -> ``"DT_FLOAT"``, ``shape``
-> tuple, ``tensor`` -> :class:`TensorAttr` without values, unset -> ``None``, ...), through :data:`MESSAGES`, a
table with TensorFlow's field numbers. :func:`keep_tfdbg_v1_graphs` copies a tfdbg v1 run's executed graphs into a
folder as ``graph_<run>_<device>.pb`` (bytes unchanged, once they parse) and records them in ``index.json``;
:func:`keep_tfdbg_v2_graphs` keeps a tfdbg v2 capture's function graphs. See docs/internals/formats.md#tf_graph.
"""
from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from typing import Any, Dict, List, Mapping, Optional, Tuple

from google.protobuf.message import DecodeError

from precision_tool.errors import ReferenceFormatError
from precision_tool.fileio import atomic_write, read_input_bytes, read_input_text
from precision_tool.formats import tf_schema
from precision_tool.formats.bounds import loads_json
from precision_tool.formats.protoschema import build_messages
from precision_tool.formats.tf_schema import WIRE_LEN, WIRE_VARINT, iter_wire_fields, tf_dtype_name
from precision_tool.formats.tfdbg import DEVICE_DIR_PREFIX, device_name_from_folder

PACKAGE = "precision_tool.tensorflow.graph"
INDEX_FILE = "index.json"
GRAPH_FILE_PREFIX = "_tfdbg_graph_"
V2_GRAPHS_DIR = "precision_tool_graphs"
"""The folder a tfdbg v2 capture (``enable_reference_dump``) leaves its function graphs in, inside the dump
folder: ``<n>_<function>.pb``, one serialized ``GraphDef`` per graph TensorFlow built while dumping, ``n``
in the order they were built (tfdbg v2's own files name the ops but keep no attrs, so no graph)."""
V2_DEBUG_OPS = frozenset({"DebugIdentityV2", "DebugIdentityV3", "DebugNumericSummaryV2"})

MESSAGES = {
    "TensorShapeDim": [(1, "size", "int64"), (2, "name", "string")],
    "TensorShapeProto": [(2, "dim", "repeated TensorShapeDim"), (3, "unknown_rank", "bool")],
    # Only dtype and shape are read; the values (fields 4..) stay unknown fields, never decoded.
    "TensorProto": [(1, "dtype", "int32"), (2, "tensor_shape", "TensorShapeProto")],
    "NameAttrList": [(1, "name", "string"), (2, "attr", "map<string,AttrValue>")],
    "ListValue": [
        (2, "s", "repeated bytes"),
        (3, "i", "repeated int64"),
        (4, "f", "repeated float"),
        (5, "b", "repeated bool"),
        (6, "type", "repeated int32"),  # tensorflow.DataType
        (7, "shape", "repeated TensorShapeProto"),
        (8, "tensor", "repeated TensorProto"),
        (9, "func", "repeated NameAttrList"),
    ],
    "AttrValue": [
        (1, "list", "ListValue"),
        (2, "s", "bytes"),
        (3, "i", "int64"),
        (4, "f", "float"),
        (5, "b", "bool"),
        (6, "type", "int32"),  # tensorflow.DataType
        (7, "shape", "TensorShapeProto"),
        (8, "tensor", "TensorProto"),
        (9, "placeholder", "string"),
        (10, "func", "NameAttrList"),
    ],
    "NodeDef": [
        (1, "name", "string"),
        (2, "op", "string"),
        (3, "input", "repeated string"),
        (4, "device", "string"),
        (5, "attr", "map<string,AttrValue>"),
    ],
    "GraphDef": [
        (1, "node", "repeated NodeDef"),
        (2, "library", "bytes"),  # FunctionDefLibrary, opaque
        (3, "version", "int32"),  # deprecated
        (4, "versions", "bytes"),  # VersionDef, opaque
        (5, "debug_info", "bytes"),  # GraphDebugInfo, opaque
    ],
}
ONEOFS = {"AttrValue": {"value": ["list", "s", "i", "f", "b", "type", "shape", "tensor", "placeholder", "func"]}}

_CLASSES = build_messages(PACKAGE, MESSAGES, oneofs=ONEOFS)
GraphDef = _CLASSES["GraphDef"]
NodeDef = _CLASSES["NodeDef"]
AttrValue = _CLASSES["AttrValue"]
ListValue = _CLASSES["ListValue"]
TensorShapeProto = _CLASSES["TensorShapeProto"]
TensorProto = _CLASSES["TensorProto"]
NameAttrList = _CLASSES["NameAttrList"]

# GraphDef's top-level fields and their wire types: a file whose known fields carry other wire types is
# not a GraphDef (an Event read as one, for instance, starts with field 1 as a double).
_COPY_PREFIX, _DEBUG_PREFIX = "__copy_", "__dbg_"
_GRAPH_WIRE_TYPES = {1: WIRE_LEN, 2: WIRE_LEN, 3: WIRE_VARINT, 4: WIRE_LEN, 5: WIRE_LEN}


@dataclass(frozen=True)
class TensorAttr:
    """A ``tensor`` attr (a Const's value): its dtype name and shape, without the values."""

    dtype: str
    shape: Optional[Tuple[int, ...]]


@dataclass(frozen=True)
class FunctionAttr:
    """A ``func`` attr: the name of the function it calls."""

    name: str


@dataclass(frozen=True)
class TfNode:
    """One ``NodeDef``: ``inputs`` as written (``"a:1"``, ``"^ctrl"``), ``attrs`` as Python values."""

    name: str
    op: str
    inputs: Tuple[str, ...]
    device: str
    attrs: Mapping[str, Any]

    @property
    def data_inputs(self) -> Tuple[str, ...]:
        """The inputs without control dependencies (``^name``)."""
        return tuple(name for name in self.inputs if not name.startswith("^"))


@dataclass(frozen=True)
class TfGraph:
    """A ``GraphDef``'s nodes, in file order; ``path`` is the file read (``None`` for bytes)."""

    nodes: Tuple[TfNode, ...]
    path: Optional[str] = None

    def node(self, name: str) -> TfNode:
        """The node called ``name`` (``KeyError`` if absent)."""
        for node in self.nodes:
            if node.name == name:
                return node
        raise KeyError(name)

    @property
    def op_types(self) -> Dict[str, str]:
        return {node.name: node.op for node in self.nodes}

    def without_debug_ops(self) -> "TfGraph":
        """The graph without the nodes tfdbg inserted: v1's ``__copy_*`` copies and ``__dbg_*`` debug ops,
        v2's ``DebugIdentityV2`` (and the other :data:`V2_DEBUG_OPS`) nodes.

        A tfdbg v1 executed graph feeds each watched tensor through ``__copy_<op>_<slot>`` into a
        ``__dbg_...`` op and makes the consumers wait on it (``^__dbg_...``). Inputs that read a copy are
        given the copied tensor back and control inputs on debug ops are dropped, so the nodes have the
        inputs of the graph that was run (as tfdbg's own ``DebugGraph`` does). tfdbg v2 hangs a debug op on
        each output and chains them by control inputs; consumers read the op itself.
        """
        copies = {node.name: node.data_inputs[0] for node in self.nodes
                  if node.name.startswith(_COPY_PREFIX) and node.data_inputs}
        debug = {node.name for node in self.nodes if node.op in V2_DEBUG_OPS}
        nodes = []
        for node in self.nodes:
            if node.name.startswith((_COPY_PREFIX, _DEBUG_PREFIX)) or node.name in debug:
                continue
            inputs = tuple(copies.get(_output_zero(name), name) for name in node.inputs
                           if (not name.lstrip("^").startswith((_COPY_PREFIX, _DEBUG_PREFIX))
                               or _output_zero(name) in copies) and name.lstrip("^").split(":")[0] not in debug)
            nodes.append(TfNode(node.name, node.op, inputs, node.device, node.attrs))
        return TfGraph(tuple(nodes), self.path)


def _output_zero(name: str) -> str:
    """``"a:0"`` -> ``"a"`` (the same tensor); other names unchanged."""
    return name[:-2] if name.endswith(":0") else name


@dataclass(frozen=True)
class KeptGraph:
    """One executed graph written by :func:`keep_tfdbg_v1_graphs`."""

    file: str
    path: str
    run: str
    device: str
    source: str
    nodes: int

    def to_dict(self) -> dict:
        return {"file": self.file, "run": self.run, "device": self.device, "source": self.source,
                "nodes": self.nodes}


def _shape(proto) -> Optional[Tuple[int, ...]]:
    if proto.unknown_rank:
        return None
    return tuple(int(dim.size) for dim in proto.dim)


def _text(value: bytes):
    try:
        return value.decode("utf-8")
    except UnicodeDecodeError:
        return bytes(value)


def _tensor(proto) -> TensorAttr:
    return TensorAttr(tf_dtype_name(proto.dtype), _shape(proto.tensor_shape))


def attr_value(proto) -> Any:
    """One ``AttrValue`` message as a Python value (the table: docs/internals/formats.md#tf_graph)."""
    kind = proto.WhichOneof("value")
    if kind is None or kind == "placeholder":
        return None
    if kind == "s":
        return _text(proto.s)
    if kind in ("i", "f", "b"):
        return getattr(proto, kind)
    if kind == "type":
        return tf_dtype_name(proto.type)
    if kind == "shape":
        return _shape(proto.shape)
    if kind == "tensor":
        return _tensor(proto.tensor)
    if kind == "func":
        return FunctionAttr(proto.func.name)
    values = proto.list
    for name, convert in (("s", _text), ("i", int), ("f", float), ("b", bool), ("type", tf_dtype_name),
                          ("shape", _shape), ("tensor", _tensor), ("func", lambda f: FunctionAttr(f.name))):
        items = getattr(values, name)
        if len(items):
            return [convert(item) for item in items]
    return []


def parse_graph_def(data: bytes, path=None) -> TfGraph:
    """A serialized ``GraphDef`` as a :class:`TfGraph`.

    Raises
    ------
    ReferenceFormatError
        Truncated or not a ``GraphDef`` (wrong wire types, a node without name or op, no node at all).
    """
    source = os.fspath(path) if path is not None else None
    for wire_field in iter_wire_fields(data, 0, len(data), source, "GraphDef"):
        expected = _GRAPH_WIRE_TYPES.get(wire_field.number)
        if expected is not None and wire_field.wire_type != expected:
            raise ReferenceFormatError(source, f"not a GraphDef (field {wire_field.number} has wire type "
                                               f"{wire_field.wire_type})")
    try:
        graph = GraphDef.FromString(bytes(data))
    except (DecodeError, RuntimeError) as error:
        raise ReferenceFormatError(source, f"not a GraphDef ({error})") from None
    if not graph.node:
        raise ReferenceFormatError(source, "not a GraphDef with nodes (no node found)")
    nodes = []
    for index, node in enumerate(graph.node):
        if not node.name or not node.op:
            raise ReferenceFormatError(source, f"not a GraphDef: node {index} has no name or no op type")
        attrs = {key: attr_value(node.attr[key]) for key in sorted(node.attr)}
        nodes.append(TfNode(node.name, node.op, tuple(node.input), node.device, attrs))
    return TfGraph(tuple(nodes), source)


def _read_regular_file(path: str) -> bytes:
    """The bytes of a regular file (:func:`~precision_tool.fileio.read_input_bytes`); anything else (a FIFO, a
    device, a folder, a dangling symlink or loop, an unreadable file, one over 1 GiB) is a one-line error."""
    return read_input_bytes(path, ReferenceFormatError)


def read_tf_graph(path) -> TfGraph:
    """Read a serialized ``GraphDef`` file (``.pb``) without TensorFlow.

    Raises
    ------
    ReferenceFormatError
        The file cannot be read, is not a regular file, or is not a ``GraphDef`` (the message names it).
    """
    path = os.fspath(path)
    return parse_graph_def(_read_regular_file(path), path)


def tfdbg_v1_graph_bytes(path) -> Tuple[bytes, TfGraph]:
    """The ``GraphDef`` bytes held by a tfdbg v1 ``_tfdbg_graph_...`` file (an ``Event``), and the graph."""
    path = os.fspath(path)
    data = _read_regular_file(path)
    for _ in iter_wire_fields(data, 0, len(data), path, "tfdbg v1 graph Event"):
        pass  # raises for a truncated file, which protobuf may partly accept
    try:
        event = tf_schema.Event.FromString(data)
    except (DecodeError, RuntimeError) as error:
        raise ReferenceFormatError(path, f"not a tfdbg graph file ({error})") from None
    if not event.graph_def:
        raise ReferenceFormatError(path, "not a tfdbg graph file (the Event holds no graph_def)")
    return event.graph_def, parse_graph_def(event.graph_def, path)


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "_", text).strip("_") or "graph"


def keep_tfdbg_v1_graphs(run_path, graph_dir) -> Tuple[List[KeptGraph], List[str]]:
    """Copy the executed graphs of the tfdbg v1 run folder ``run_path`` into ``graph_dir``.

    Each ``_tfdbg_graph_*`` file of each device folder becomes ``graph_<run>_<device>.pb`` (``_1``, ``_2``,
    ... when a device holds several), the ``GraphDef`` bytes unchanged; ``graph_dir/index.json`` maps each
    file name to its run, device and source file (entries of other runs are kept). ``graph_dir`` is created.

    Returns the graphs written and one note per graph that was not kept (the one-line reason naming the
    file). Never raises for a bad graph file: the tensors of the run are still worth converting.
    """
    run_path = os.fspath(run_path)
    sources: List[Tuple[str, str]] = []
    for folder in sorted(os.listdir(run_path)):
        device_dir = os.path.join(run_path, folder)
        if folder.startswith(DEVICE_DIR_PREFIX) and os.path.isdir(device_dir):
            sources.extend((device_name_from_folder(folder), os.path.join(device_dir, name))
                           for name in sorted(os.listdir(device_dir)) if name.startswith(GRAPH_FILE_PREFIX))
    if not sources:
        return [], [f"{run_path}: no executed graph (_tfdbg_graph_* file) in the run; the graph was not kept."]
    return _keep(run_path, graph_dir, sources, tfdbg_v1_graph_bytes)


def keep_tfdbg_v2_graphs(run_path, graph_dir) -> Tuple[List[KeptGraph], List[str]]:
    """Copy the function graphs a tfdbg v2 capture left in ``run_path/precision_tool_graphs`` (see
    :data:`V2_GRAPHS_DIR`) into ``graph_dir`` as ``graph_<run>_<n>_<function>.pb``, oldest first, with
    ``index.json`` entries like :func:`keep_tfdbg_v1_graphs` (the device is ``""``: a function graph is not
    placed). Same returns and notes; a capture made without precision_tool's ``enable_reference_dump``
    has no graphs (one note)."""
    run_path = os.fspath(run_path)
    folder = os.path.join(run_path, V2_GRAPHS_DIR)
    try:
        names = [name for name in os.listdir(folder) if name.endswith(".pb")]
    except OSError:
        names = []
    if not names:
        return [], [f"{run_path}: no function graph ({V2_GRAPHS_DIR}/ is written by "
                    "npu_tf_config.enable_reference_dump); the graph was not kept."]
    ordered = sorted(names, key=natural_key)
    return _keep(run_path, graph_dir, [(name[:-3], os.path.join(folder, name)) for name in ordered],
                 _graph_def_bytes)


def natural_key(name: str) -> list:
    """Sort key reading digit runs as numbers: ``graph_r_cpu_2.pb`` before ``graph_r_cpu_10.pb``. A digit run
    is compared as ``(its length without leading zeros, those digits)`` -- the order of the numbers, without
    ``int()``, so a 5,000-digit run in a damaged name is just a large number."""
    return [(len(part.lstrip("0")), part.lstrip("0")) if _DIGIT_RUN.fullmatch(part) else part
            for part in _DIGIT_RUN.split(name)]


_DIGIT_RUN = re.compile(r"([0-9]+)")  # ASCII only: int() of '²' fails; a file name has < 4,300 digits


def _graph_def_bytes(path: str) -> Tuple[bytes, TfGraph]:
    data = _read_regular_file(path)
    return data, parse_graph_def(data, path)


def _keep(run_path: str, graph_dir, sources: List[Tuple[str, str]], read) -> Tuple[List[KeptGraph], List[str]]:
    """Write each ``(label, source)`` graph (``read(source)`` gives its ``GraphDef`` bytes and graph) to
    ``graph_dir`` as ``graph_<run>_<label>.pb`` and index them."""
    run = os.path.basename(os.path.normpath(run_path))
    kept: List[KeptGraph] = []
    notes: List[str] = []
    counts: Dict[str, int] = {}
    for label, source in sources:
        try:
            data, graph = read(source)
        except ReferenceFormatError as error:
            notes.append(f"{error}; the graph was not kept.")
            continue
        stem = f"graph_{_slug(run)}_{_slug(label)}"
        number = counts.get(stem, 0)
        counts[stem] = number + 1
        file_name = f"{stem}.pb" if number == 0 else f"{stem}_{number}.pb"
        path = os.path.join(os.fspath(graph_dir), file_name)
        try:
            os.makedirs(graph_dir, exist_ok=True)
            with atomic_write(path) as handle:
                handle.write(data)
        except OSError as error:
            notes.append(f"{path}: cannot write ({error.strerror or error}); the graph was not kept.")
            continue
        device = label if read is tfdbg_v1_graph_bytes else ""
        kept.append(KeptGraph(file_name, path, run_path, device, source, len(graph.nodes)))
    if kept:
        notes.extend(_update_index(os.fspath(graph_dir), kept))
    return kept, notes


def _update_index(graph_dir: str, kept: List[KeptGraph]) -> List[str]:
    path = os.path.join(graph_dir, INDEX_FILE)
    entries: Dict[str, dict] = {}
    if os.path.lexists(path):
        try:
            old = loads_json(read_input_text(path, ReferenceFormatError))
            entries = {entry["file"]: entry for entry in old.get("graphs", []) if isinstance(entry, dict)
                       and isinstance(entry.get("file"), str)}
        except (ReferenceFormatError, ValueError, AttributeError, TypeError, RecursionError):
            entries = {}  # a damaged index is rewritten from the graphs kept now
    for graph in kept:
        entries[graph.file] = graph.to_dict()
    try:
        with atomic_write(path, "w") as handle:
            json.dump({"graphs": [entries[name] for name in sorted(entries)]}, handle, indent=1)
            handle.write("\n")
    except OSError as error:
        return [f"{path}: cannot write the graph index ({error.strerror or error})."]
    return []
