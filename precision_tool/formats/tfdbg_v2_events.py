"""The structure of a tfdbg v2 dump, read without TensorFlow: graphs, op creations and eager executions.

Besides the traced tensors (:mod:`precision_tool.formats.tfdbg_v2`), a tfdbg v2 folder records ``*.graphs`` (one
``DebuggedGraph`` per graph that ran an instrumented op, one ``GraphOpCreation`` per op created in a graph) and
``*.execution`` (one ``Execution`` per eager op and per call of a ``tf.function`` from eager code).
:func:`read_v2_structure` reads both into a :class:`V2Structure`; :func:`eager_output_record` turns a recorded eager
output into a :class:`~precision_tool.formats.tfdbg.TfdbgTensor` (for function arguments, which TF 2.21 does not
trace); :func:`write_tfdbg_v2_events` writes such folders for tests. What each record holds:
docs/internals/formats.md#tfdbg_v2_events; facts and TF versions: ``docs/capture-keras-tf2.md``.
"""
from __future__ import annotations

import functools
import os
import struct
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np

from precision_tool.errors import ReferenceFormatError
from precision_tool.formats import tf_schema
from precision_tool.formats.protoschema import build_messages
from precision_tool.formats.tf_schema import WIRE_I64, WIRE_LEN, WIRE_VARINT, iter_wire_fields, signed64, wire_string
from precision_tool.formats.tf_tensor import TensorLocation, load_located_tensor, scan_tensor_proto
from precision_tool.formats.tfdbg import DEFAULT_DEVICE, V2_TRACES_SUFFIX, TfdbgTensor, as_tensor_proto, v2_files
from precision_tool.formats.tfdbg_v2 import graph_events, wall_time_us
from precision_tool.formats.tfrecord import RecordSpan, TFRecordFile, encode_record, read_span

GRAPHS_SUFFIX = ".graphs"
EXECUTION_SUFFIX = ".execution"
EAGER_SOURCE = "tfdbg_v2_eager"
"""``TfdbgTensor.source_format`` of a value taken from an eager ``Execution`` record (not a graph trace)."""

# debug_event.proto's Execution and the DebugEvent field holding it, which tf_schema leaves out.
_MESSAGES = dict(tf_schema.MESSAGES)
_MESSAGES["Execution"] = [
    (1, "op_type", "string"),
    (2, "num_outputs", "int32"),
    (3, "graph_id", "string"),
    (4, "input_tensor_ids", "repeated int64"),
    (5, "output_tensor_ids", "repeated int64"),
    (6, "tensor_debug_mode", "int32"),
    (7, "tensor_protos", "repeated TensorProto"),
]
_MESSAGES["DebugEvent"] = [*tf_schema.MESSAGES["DebugEvent"], (9, "execution", "Execution")]
_CLASSES = build_messages("precision_tool.tensorflow.tfdbg_v2", _MESSAGES)
DebugEvent = _CLASSES["DebugEvent"]
_EXECUTION_FIELD = 9
_EXECUTION_NUMBERS = {name: number for number, name, _ in _MESSAGES["Execution"]}


@dataclass(frozen=True)
class V2Graph:
    """A ``DebuggedGraph``: ``outer_id`` is ``""`` for the eager context, else the enclosing graph's id."""

    graph_id: str
    name: str
    outer_id: str
    order: int


@dataclass(frozen=True)
class V2Op:
    """A ``GraphOpCreation``; ``order`` is its position among all records of the ``.graphs`` files."""

    graph_id: str
    op_name: str
    op_type: str
    input_names: Tuple[str, ...]
    num_outputs: int
    order: int


@dataclass(frozen=True)
class V2Execution:
    """An ``Execution`` record: an eager op, or a call of the function whose graph is ``graph_id``.

    ``outputs`` holds, per output, where its value is in the record (``None``: not recorded, e.g. a
    resource handle). ``index`` is the record's number in the ``.execution`` file(s).
    """

    index: int
    op_type: str
    graph_id: str
    input_ids: Tuple[int, ...]
    output_ids: Tuple[int, ...]
    wall_time: float
    outputs: Tuple[Optional[TensorLocation], ...]
    path: str
    span: RecordSpan = field(repr=False)


@dataclass
class V2Structure:
    """Graphs, op creations and eager executions of one dump, with the look-ups the naming needs."""

    graphs: Dict[str, V2Graph]
    ops: Dict[Tuple[str, str], V2Op]
    executions: List[V2Execution]

    def __post_init__(self) -> None:
        self._placeholders: Dict[str, List[V2Op]] = {}
        self._consumers: Dict[Tuple[str, str], List[V2Op]] = {}
        self._first_order: Dict[str, int] = {graph_id: graph.order for graph_id, graph in self.graphs.items()}
        for op in sorted(self.ops.values(), key=lambda op: op.order):
            if op.op_type == "Placeholder":
                self._placeholders.setdefault(op.graph_id, []).append(op)
            self._first_order.setdefault(op.graph_id, op.order)
            for input_name in op.input_names:
                producer = input_name.lstrip("^").rpartition(":")[0] or input_name.lstrip("^")
                self._consumers.setdefault((op.graph_id, producer), []).append(op)
        self._eager: Dict[int, Tuple[V2Execution, int]] = {}
        for execution in self.executions:
            for slot, tensor_id in enumerate(execution.output_ids):
                self._eager[tensor_id] = (execution, slot)

    def op_type(self, graph_id: str, op_name: str) -> Optional[str]:
        op = self.ops.get((graph_id, op_name))
        return op.op_type if op else None

    def placeholders(self, graph_id: str) -> List[V2Op]:
        """The graph's ``Placeholder`` ops in creation order (= the function's inputs: arguments, captures)."""
        return self._placeholders.get(graph_id, [])

    def calls(self, graph_id: str) -> List[V2Execution]:
        """Eager calls of the function whose graph this is, in execution order."""
        return [execution for execution in self.executions if execution.graph_id == graph_id]

    def eager_producer(self, tensor_id: int) -> Optional[Tuple[V2Execution, int]]:
        """The eager execution (and output slot) that produced tensor ``tensor_id``, if recorded."""
        return self._eager.get(tensor_id)

    def is_function(self, graph_id: str) -> bool:
        """True for a graph that is not the eager context (whose ``DebuggedGraph`` has no name and no outer)."""
        graph = self.graphs.get(graph_id)
        return graph is None or bool(graph.name or graph.outer_id)

    def outer_function(self, graph_id: str) -> Optional[str]:
        """The id of the function graph this one is nested in; ``None`` for a top-level function."""
        graph = self.graphs.get(graph_id)
        if graph is None or not graph.outer_id or not self.is_function(graph.outer_id):
            return None
        return graph.outer_id

    def path(self, graph_id: str) -> Tuple[str, ...]:
        """Function names from the outermost function down to this graph (``("outer", "inner")``)."""
        names: List[str] = []
        seen = set()
        current: Optional[str] = graph_id
        while current is not None and current not in seen:
            seen.add(current)
            graph = self.graphs.get(current)
            names.append(graph.name if graph is not None and graph.name else current)
            current = self.outer_function(current)
        return tuple(reversed(names))

    def first_order(self, graph_id: str) -> int:
        """Position of the graph's first record in the ``.graphs`` files (-1: none)."""
        return self._first_order.get(graph_id, -1)

    def consumers(self, graph_id: str, op_name: str) -> List[V2Op]:
        """Ops of the graph that take an output of ``op_name`` as input (calls of nested functions are not
        recorded, so they never appear)."""
        return self._consumers.get((graph_id, op_name), [])


def read_v2_structure(folder) -> V2Structure:
    """Read the ``.graphs`` and ``.execution`` files of a tfdbg v2 folder (values stay on disk).

    Raises
    ------
    ReferenceFormatError
        A record that is not a ``DebugEvent``, or malformed wire data (the message names the file).
    """
    folder = os.fspath(folder)
    graphs: Dict[str, V2Graph] = {}
    ops: Dict[Tuple[str, str], V2Op] = {}
    for order, event in enumerate(graph_events(folder)):
        if event.HasField("debugged_graph"):
            graph = event.debugged_graph
            graphs.setdefault(graph.graph_id, V2Graph(graph.graph_id, graph.graph_name, graph.outer_context_id, order))
        elif event.HasField("graph_op_creation"):
            op = event.graph_op_creation
            ops[(op.graph_id, op.op_name)] = V2Op(op.graph_id, op.op_name, op.op_type, tuple(op.input_names),
                                                  op.num_outputs, order)
    executions: List[V2Execution] = []
    for path in v2_files(folder, EXECUTION_SUFFIX):
        with TFRecordFile(path) as records:
            for span in records.spans():
                execution = _scan_execution(records.buffer, span, len(executions), path)
                if execution is not None:
                    executions.append(execution)
    return V2Structure(graphs, ops, executions)


def _ids(buf, wire_field, path: str) -> List[int]:
    """A repeated int64 field: one varint, or a packed run of them."""
    if wire_field.wire_type == WIRE_VARINT:
        return [signed64(wire_field.value)]
    values, pos, end = [], wire_field.start, wire_field.end
    while pos < end:
        value, shift = 0, 0
        while True:
            if pos >= end or shift > 63:
                raise ReferenceFormatError(path, "Execution: a packed tensor id runs past its field")
            byte = buf[pos]
            pos += 1
            value |= (byte & 0x7F) << shift
            shift += 7
            if byte < 0x80:
                break
        values.append(signed64(value))
    return values


def _scan_execution(buf, span: RecordSpan, index: int, path: str) -> Optional[V2Execution]:
    start, end = span.offset, span.offset + span.length
    wall_time, body = 0.0, None
    for wire_field in iter_wire_fields(buf, start, end, path, "DebugEvent"):
        if wire_field.number == 1 and wire_field.wire_type == WIRE_I64:
            wall_time = struct.unpack("<d", wire_field.value.to_bytes(8, "little"))[0]
        elif wire_field.number == _EXECUTION_FIELD and wire_field.wire_type == WIRE_LEN:
            body = wire_field
    if body is None:
        return None
    number = _EXECUTION_NUMBERS
    texts = {"op_type": "", "graph_id": ""}
    inputs: List[int] = []
    outputs: List[int] = []
    tensors: List[Optional[TensorLocation]] = []
    for wire_field in iter_wire_fields(buf, body.start, body.end, path, "Execution"):
        if wire_field.number == number["input_tensor_ids"] and wire_field.wire_type in (WIRE_VARINT, WIRE_LEN):
            inputs.extend(_ids(buf, wire_field, path))
        elif wire_field.number == number["output_tensor_ids"] and wire_field.wire_type in (WIRE_VARINT, WIRE_LEN):
            outputs.extend(_ids(buf, wire_field, path))
        elif wire_field.number == number["tensor_protos"] and wire_field.wire_type == WIRE_LEN:
            tensors.append(scan_tensor_proto(buf, wire_field.start, wire_field.end, path))
        elif wire_field.wire_type == WIRE_LEN:
            for name in texts:
                if wire_field.number == number[name]:
                    texts[name] = wire_string(buf, wire_field, path, f"Execution.{name}")
    # FULL_TENSOR keeps one TensorProto per output, but none for outputs it cannot serialise (handles).
    located: Tuple[Optional[TensorLocation], ...] = (
        tuple(tensors) if len(tensors) == len(outputs) else (None,) * len(outputs))
    return V2Execution(index, texts["op_type"], texts["graph_id"], tuple(inputs), tuple(outputs), wall_time,
                       located, path, span)


def _load_execution_output(path: str, span: RecordSpan, slot: int, verify: bool) -> Optional[np.ndarray]:
    data = read_span(path, span, verify)
    execution = _scan_execution(data, RecordSpan(span.index, 0, len(data)), 0, path)
    if execution is None or slot >= len(execution.outputs) or execution.outputs[slot] is None:
        raise ReferenceFormatError(path, f"record {span.index} no longer holds output {slot} (file changed?)")
    location = execution.outputs[slot]
    assert location is not None
    return load_located_tensor(data, location, path)


def eager_output_record(execution: V2Execution, slot: int, op_name: str, graph_id: str, op_type: str,
                        output_slot: int = 0, verify: bool = True) -> Optional[TfdbgTensor]:
    """Output ``slot`` of an eager execution as the record of ``op_name:output_slot`` in ``graph_id``.

    Used for a function argument that TF did not trace: its value is the eager tensor passed to the call.
    ``None`` when the execution recorded no value for that output.
    """
    location = execution.outputs[slot] if slot < len(execution.outputs) else None
    if location is None:
        return None
    timestamp = wall_time_us(execution.wall_time, execution.path, execution.span)
    loader = functools.partial(_load_execution_output, execution.path, execution.span, slot, verify)
    return TfdbgTensor(op_name, output_slot, timestamp, DEFAULT_DEVICE, op_type, location.dtype_code, location.shape,
                       execution.path, execution.index, EAGER_SOURCE, graph_id, _loader=loader)


# -- writer (tests) ----------------------------------------------------------------------------------------
@dataclass(frozen=True)
class GraphSpec:
    """A graph for :func:`write_tfdbg_v2_events`: id, function name, enclosing graph id (``""``: eager)."""

    graph_id: str
    name: str
    outer_id: str = ""


@dataclass(frozen=True)
class OpSpec:
    """An op creation for :func:`write_tfdbg_v2_events`."""

    graph_id: str
    op_name: str
    op_type: str
    input_names: Sequence[str] = ()
    num_outputs: int = 1


@dataclass(frozen=True)
class ExecutionSpec:
    """An eager execution for :func:`write_tfdbg_v2_events`; ``values``: one array (or ``None``) per output."""

    op_type: str
    input_ids: Sequence[int] = ()
    output_ids: Sequence[int] = ()
    values: Sequence[object] = ()
    graph_id: str = ""
    wall_time: float = 0.0


def write_tfdbg_v2_events(folder, graph_records: Sequence[object], traces: Sequence[Tuple] = (),
                          executions: Sequence[ExecutionSpec] = (), device: str = DEFAULT_DEVICE,
                          file_stem: str = "tfdbg_events.1700000000.host") -> None:
    """Write a tfdbg v2 ``FULL_TENSOR`` folder with the given structure (tests).

    ``graph_records``: :class:`GraphSpec` and :class:`OpSpec` in the order TF created them.
    ``traces``: ``(graph_id, op_name, output_slot, value, wall_time_s)``. ``executions``: :class:`ExecutionSpec`.
    """
    folder = os.fspath(folder)
    os.makedirs(folder, exist_ok=True)
    metadata = DebugEvent(wall_time=0.0)
    metadata.debug_metadata.file_version = "debug.Event:1"
    graph_messages = []
    for record in graph_records:
        event = DebugEvent(wall_time=0.0)
        if isinstance(record, GraphSpec):
            event.debugged_graph.graph_id = record.graph_id
            event.debugged_graph.graph_name = record.name
            event.debugged_graph.outer_context_id = record.outer_id
        else:
            assert isinstance(record, OpSpec), record
            event.graph_op_creation.CopyFrom(_CLASSES["GraphOpCreation"](
                op_type=record.op_type, op_name=record.op_name, graph_id=record.graph_id, device_name=device,
                input_names=list(record.input_names), num_outputs=record.num_outputs))
        graph_messages.append(event)
    trace_events = []
    for graph_id, op_name, output_slot, value, wall_time in traces:
        event = DebugEvent(wall_time=wall_time)
        trace = event.graph_execution_trace
        trace.tfdbg_context_id, trace.op_name, trace.output_slot = graph_id, op_name, output_slot
        trace.tensor_debug_mode, trace.device_name = tf_schema.FULL_TENSOR_MODE, device
        trace.tensor_proto.CopyFrom(_CLASSES["TensorProto"].FromString(as_tensor_proto(value).SerializeToString()))
        trace_events.append(event)
    execution_events = []
    for spec in executions:
        event = DebugEvent(wall_time=spec.wall_time)
        execution = event.execution
        execution.op_type, execution.graph_id = spec.op_type, spec.graph_id
        execution.num_outputs = len(spec.output_ids)
        execution.input_tensor_ids.extend(spec.input_ids)
        execution.output_tensor_ids.extend(spec.output_ids)
        execution.tensor_debug_mode = tf_schema.FULL_TENSOR_MODE
        for value in spec.values:
            if value is not None:
                proto = as_tensor_proto(value).SerializeToString()
                execution.tensor_protos.add().CopyFrom(_CLASSES["TensorProto"].FromString(proto))
        execution_events.append(event)
    for suffix, events in ((".metadata", [metadata]), (GRAPHS_SUFFIX, graph_messages),
                           (EXECUTION_SUFFIX, execution_events), (V2_TRACES_SUFFIX, trace_events)):
        with open(os.path.join(folder, file_stem + suffix), "wb") as handle:
            for event in events:
                handle.write(encode_record(event.SerializeToString()))
