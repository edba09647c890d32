"""tfdbg v2 DebugEvents folders, read without TensorFlow; :func:`write_tfdbg_v2_dump` writes them (tests, samples).

tfdbg v2 (``tf.debugging.experimental.enable_dump_debug_info``) writes TFRecord files of ``DebugEvent`` records:
``*.graphs`` (op creations: name -> type), ``*.graph_execution_traces`` (one record per op output executed inside a
``tf.function``; only ``FULL_TENSOR`` mode carries tensors). Records and run listing:
:mod:`precision_tool.formats.tfdbg`. Traces carry the op name as it is *inside its graph* (the same for every call
of a function and every graph with such an op), and TF 2.6 traces a function's argument placeholders, TF 2.21 does
not: :mod:`precision_tool.formats.tfdbg_v2_events` reads what tells them apart (graph structure, eager executions),
:mod:`precision_tool.formats.tfdbg_v2_names` builds the reference names from it.
"""
from __future__ import annotations

import functools
import math
import os
import struct
from dataclasses import dataclass
from typing import Any, Dict, Iterator, Optional, Tuple

import numpy as np
from google.protobuf.message import DecodeError

from precision_tool.errors import ReferenceFormatError, WorkspaceError
from precision_tool.formats import tf_schema
from precision_tool.formats.bounds import shown_name
from precision_tool.formats.tf_schema import WIRE_I64, WIRE_LEN, WIRE_VARINT, iter_wire_fields, signed64, wire_string
from precision_tool.formats.tf_tensor import (DT_RESOURCE, TensorLocation, base_dtype_code, load_located_tensor,
                                              scan_tensor_proto)
from precision_tool.formats.tfdbg import DEFAULT_DEVICE, V2_TRACES_SUFFIX, TfdbgTensor, as_tensor_proto, v2_files
from precision_tool.formats.tfrecord import RecordSpan, TFRecordFile, encode_record, read_span

_V2_GRAPHS_SUFFIX = ".graphs"
_MAX_TIMESTAMP_US = 10 ** 16  # reference .npy names hold 16 timestamp digits (up to the year 2286)


def graph_events(folder: str) -> Iterator[Any]:
    """Every ``DebugEvent`` of the ``*.graphs`` files of a tfdbg v2 folder, in file and record order.

    Raises ``ReferenceFormatError`` naming the file for a record that is not a DebugEvent.
    """
    for path in v2_files(folder, _V2_GRAPHS_SUFFIX):
        with TFRecordFile(path) as records:
            for span in records.spans():
                try:
                    event = tf_schema.DebugEvent.FromString(bytes(records.read(span)))
                except DecodeError as error:
                    raise ReferenceFormatError(path, f"record {span.index} is not a DebugEvent ({error})") from None
                yield event


def _v2_op_types(folder: str) -> Dict[Tuple[str, str], str]:
    """(graph id, op name) -> op type, from the ``*.graphs`` files."""
    op_types: Dict[Tuple[str, str], str] = {}
    for event in graph_events(folder):
        if event.HasField("graph_op_creation"):
            creation = event.graph_op_creation
            op_types[(creation.graph_id, creation.op_name)] = creation.op_type
    return op_types


@dataclass(frozen=True)
class _Trace:
    wall_time: float
    op_name: str
    output_slot: int
    graph_id: str
    device: str
    debug_mode: int
    tensor: Optional[TensorLocation]


def _scan_trace(buf, start: int, end: int, path: str) -> Optional[_Trace]:
    """The GraphExecutionTrace in the DebugEvent at ``buf[start:end]`` (``None`` if it holds another kind)."""
    wall_time, trace_field = 0.0, None
    for wire_field in iter_wire_fields(buf, start, end, path, "DebugEvent"):
        if wire_field.number == tf_schema.field_number("DebugEvent", "wall_time") and wire_field.wire_type == WIRE_I64:
            wall_time = struct.unpack("<d", wire_field.value.to_bytes(8, "little"))[0]
        elif (wire_field.number == tf_schema.field_number("DebugEvent", "graph_execution_trace")
              and wire_field.wire_type == WIRE_LEN):
            trace_field = wire_field
    if trace_field is None:
        return None
    number = {name: tf_schema.field_number("GraphExecutionTrace", name) for name in
              ("tfdbg_context_id", "op_name", "output_slot", "tensor_debug_mode", "tensor_proto", "device_name")}
    texts = {"tfdbg_context_id": "", "op_name": "", "device_name": ""}
    slot, mode, tensor = 0, 0, None
    for wire_field in iter_wire_fields(buf, trace_field.start, trace_field.end, path, "GraphExecutionTrace"):
        if wire_field.wire_type == WIRE_VARINT and wire_field.number == number["output_slot"]:
            slot = signed64(wire_field.value)
        elif wire_field.wire_type == WIRE_VARINT and wire_field.number == number["tensor_debug_mode"]:
            mode = signed64(wire_field.value)
        elif wire_field.wire_type == WIRE_LEN and wire_field.number == number["tensor_proto"]:
            tensor = scan_tensor_proto(buf, wire_field.start, wire_field.end, path)
        elif wire_field.wire_type == WIRE_LEN:
            for name in texts:
                if wire_field.number == number[name]:
                    texts[name] = wire_string(buf, wire_field, path, f"GraphExecutionTrace.{name}")
    return _Trace(wall_time, texts["op_name"], slot, texts["tfdbg_context_id"], texts["device_name"], mode, tensor)


def wall_time_us(wall_time: float, path: str, span: RecordSpan) -> int:
    """``wall_time`` (epoch seconds) in whole microseconds; a value no clock gives is a corrupt record.

    TensorFlow writes ``time.time()``. NaN, infinity, a negative time or one past 16 digits of
    microseconds (the reference ``.npy`` name) can only come from damaged bytes, and would break
    every later step (sorting, file names), so the record is refused here, naming it.
    """
    timestamp = wall_time * 1e6
    if not (math.isfinite(timestamp) and 0 <= timestamp < _MAX_TIMESTAMP_US):
        raise ReferenceFormatError(path, f"record {span.index}: wall_time {wall_time!r} is not a time in seconds "
                                         "since 1970 (corrupt record)")
    return int(round(timestamp))


def check_trace_names(op_name: str, output_slot: int, path: str, span: RecordSpan) -> None:
    """Refuse a traced tensor name no TensorFlow run writes: a NUL character in the op name (TF op names hold
    letters, digits and ``_ . / > - \\`` only, and no file can be named after a NUL) or a negative output slot
    (a slot is an index into the op's outputs). Each is damaged bytes; the message names the file and record."""
    if "\0" in op_name:
        raise ReferenceFormatError(path, f"record {span.index}: op name {shown_name(op_name)} holds a NUL "
                                         "character (corrupt record)")
    if output_slot < 0:
        raise ReferenceFormatError(path, f"record {span.index}: op {shown_name(op_name)} has output_slot "
                                         f"{output_slot}, a negative index (corrupt record)")


def _load_v2_tensor(path: str, span: RecordSpan, verify: bool) -> Optional[np.ndarray]:
    data = read_span(path, span, verify)
    trace = _scan_trace(data, 0, len(data), path)
    if trace is None or trace.tensor is None:
        raise ReferenceFormatError(path, f"record {span.index} no longer holds a tensor (file changed?)")
    return load_located_tensor(data, trace.tensor, path)


def iter_tfdbg_v2(folder, skip_resources: bool = True, verify: bool = True) -> Iterator[TfdbgTensor]:
    """Tensors of a tfdbg v2 DebugEvents folder, in trace order (``FULL_TENSOR`` dumps only).

    Raises
    ------
    ReferenceFormatError
        A corrupt record, or a dump taken in another ``tensor_debug_mode`` (it holds summaries,
        not tensors).
    """
    folder = os.fspath(folder)
    trace_files = v2_files(folder, V2_TRACES_SUFFIX) if os.path.isdir(folder) else []
    if not trace_files:
        raise WorkspaceError(f"{folder}: not a tfdbg v2 dump folder (no *.graph_execution_traces file)")
    op_types = _v2_op_types(folder)
    index = 0
    for path in trace_files:
        with TFRecordFile(path) as records:
            for span in records.spans():
                trace = _scan_trace(records.buffer, span.offset, span.offset + span.length, path)
                if trace is None:
                    continue
                index += 1
                check_trace_names(trace.op_name, trace.output_slot, path, span)
                if trace.debug_mode != tf_schema.FULL_TENSOR_MODE or trace.tensor is None:
                    mode = tf_schema.TENSOR_DEBUG_MODES.get(trace.debug_mode, str(trace.debug_mode))
                    raise ReferenceFormatError(
                        path, f"traces were dumped with tensor_debug_mode={mode}, which keeps no tensor values",
                        "re-capture with tensor_debug_mode='FULL_TENSOR'")
                if skip_resources and base_dtype_code(trace.tensor.dtype_code) == DT_RESOURCE:
                    continue
                yield TfdbgTensor(trace.op_name, trace.output_slot, wall_time_us(trace.wall_time, path, span),
                                  trace.device, op_types.get((trace.graph_id, trace.op_name)), trace.tensor.dtype_code,
                                  trace.tensor.shape, path, index - 1, "tfdbg_v2", trace.graph_id,
                                  _loader=functools.partial(_load_v2_tensor, path, span, verify))


# -- writer (tests, sample dumps) ------------------------------------------------------------------
def write_tfdbg_v2_dump(folder, traces, graph_id: str = "graph-0", device: str = DEFAULT_DEVICE,
                        file_stem: str = "tfdbg_events.1700000000.host") -> None:
    """Write a minimal tfdbg v2 FULL_TENSOR dump.

    ``traces``: iterable of ``(op_name, op_type, output_slot, value, wall_time_s)``; ``value`` an
    array or a TensorProto. Writes ``.metadata``, ``.graphs`` (one op creation per op) and
    ``.graph_execution_traces``.
    """
    folder = os.fspath(folder)
    os.makedirs(folder, exist_ok=True)
    metadata = tf_schema.DebugEvent(wall_time=0.0)
    metadata.debug_metadata.file_version = "debug.Event:1"
    graphs, records, seen = [], [], set()
    for op_name, op_type, output_slot, value, wall_time in traces:
        if op_name not in seen:
            seen.add(op_name)
            creation = tf_schema.DebugEvent(wall_time=wall_time)
            creation.graph_op_creation.CopyFrom(tf_schema.GraphOpCreation(
                op_type=op_type, op_name=op_name, graph_id=graph_id, device_name=device, num_outputs=1))
            graphs.append(creation)
        event = tf_schema.DebugEvent(wall_time=wall_time)
        trace = event.graph_execution_trace
        trace.tfdbg_context_id, trace.op_name, trace.output_slot = graph_id, op_name, output_slot
        trace.tensor_debug_mode, trace.device_name = tf_schema.FULL_TENSOR_MODE, device
        trace.tensor_proto.CopyFrom(as_tensor_proto(value))
        records.append(event)
    for suffix, events in ((".metadata", [metadata]), (_V2_GRAPHS_SUFFIX, graphs), (V2_TRACES_SUFFIX, records)):
        with open(os.path.join(folder, file_stem + suffix), "wb") as handle:
            for event in events:
                handle.write(encode_record(event.SerializeToString()))
