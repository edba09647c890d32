"""TensorFlow debugger dumps (tfdbg v1 run folders, tfdbg v2 DebugEvents folders), read without TensorFlow.

tfdbg v1 (``DumpingDebugWrapperSession`` / ``DumpingDebugHook``) writes one folder per ``Session.run``::

    root/run_<epoch_us>_<counter>/
        _tfdbg_core_metadata_..., _tfdbg_feed_keys_info_, _tfdbg_fetches_info_
        _tfdbg_device_,job_localhost,replica_0,task_0,device_CPU_0/
            _tfdbg_graph_hash<h>_<us>                    an Event holding the executed GraphDef
            conv1/relu_0_DebugIdentity_<us>              node "conv1/relu", output 0: one Event

Each tensor file is ONE serialized ``Event`` (no framing) whose ``summary.value[0]`` has
``node_name = "node:slot:DebugIdentity"`` and the tensor as a TensorProto.

tfdbg v2 (``tf.debugging.experimental.enable_dump_debug_info``) writes TFRecord files of
``DebugEvent`` records: ``*.graphs`` (op creations: name -> type), ``*.graph_execution_traces`` (one
record per op output executed inside a ``tf.function``; only ``FULL_TENSOR`` mode carries tensors).

Both are read as an iterator of :class:`TfdbgTensor` records. Listing reads only record headers
(dtype and shape, a few hundred bytes each); :meth:`TfdbgTensor.load` reads one tensor's bytes with one
read, so a dump of any size is processed tensor by tensor.
"""
from __future__ import annotations

import mmap
import os
import re
import struct
from dataclasses import dataclass, field
from typing import Callable, Dict, Iterator, List, Optional, Tuple

import numpy as np
from google.protobuf.message import DecodeError

from precision_tool.errors import ReferenceFormatError, WorkspaceError
from precision_tool.formats import tf_schema
from precision_tool.formats.tf_schema import WIRE_I64, WIRE_LEN, WIRE_VARINT, iter_wire_fields, signed64, wire_string
from precision_tool.formats.tf_tensor import (DT_RESOURCE, TensorLocation, array_dtype, base_dtype_code,
                                              load_located_tensor, numpy_to_tensor_proto, scan_tensor_proto)
from precision_tool.formats.tfrecord import FOOTER_BYTES, RecordSpan, TFRecordFile, encode_record, masked_crc32c

DEVICE_DIR_PREFIX = "_tfdbg_device_"
GRAPH_FILE_PREFIX = "_tfdbg_graph_"
FULL_TENSOR_DEBUG_OP = "DebugIdentity"
_RUN_DIR = re.compile(r"run_(\d+)_(\d+)")
_TENSOR_FILE = re.compile(r"(?P<node>.+)_(?P<slot>\d+)_(?P<debug_op>[A-Za-z]+)_(?P<us>\d+)")
_V2_TRACES_SUFFIX = ".graph_execution_traces"
_V2_GRAPHS_SUFFIX = ".graphs"
_V2_FILE_TIME = re.compile(r"tfdbg_events\.(\d+)\.")


@dataclass(frozen=True)
class TfdbgTensor:
    """One dumped op output of a tfdbg dump; :meth:`load` reads its values.

    Attributes
    ----------
    op_name, output_slot : the TF tensor ``op_name:output_slot`` (names as executed).
    timestamp_us : when it was dumped (epoch microseconds).
    device : ``"/job:localhost/replica:0/task:0/device:CPU:0"``.
    op_type : ``"Conv2D"``, from the dumped graph; ``None`` when the dump does not say.
    dtype_code : TensorFlow ``DataType`` number (``dtype_name`` gives ``"DT_FLOAT"``).
    shape : the tensor's shape.
    path : the file holding it.
    index : execution order within the run, counting skipped resource tensors too (v1: position by
        timestamp; v2: trace number, as ``DebugDataReader.graph_execution_traces()`` numbers them).
    source_format : ``"tfdbg_v1"`` or ``"tfdbg_v2"``.
    graph_id : v2 only: id of the graph (tf.function) that ran the op.
    """

    op_name: str
    output_slot: int
    timestamp_us: int
    device: str
    op_type: Optional[str]
    dtype_code: int
    shape: Tuple[int, ...]
    path: str
    index: int
    source_format: str
    graph_id: Optional[str] = None
    _loader: Callable[[], Optional[np.ndarray]] = field(default=None, repr=False, compare=False)

    @property
    def tensor_name(self) -> str:
        """``"conv1/relu:0"``."""
        return f"{self.op_name}:{self.output_slot}"

    @property
    def dtype_name(self) -> str:
        """``"DT_FLOAT"``."""
        return tf_schema.tf_dtype_name(self.dtype_code)

    @property
    def dtype(self) -> Optional[np.dtype]:
        """dtype of the array :meth:`load` returns (float32 for bf16/fp8); ``None`` if not loadable."""
        return array_dtype(self.dtype_code)

    @property
    def loadable(self) -> bool:
        """False for resource handles, strings and variants."""
        return self.dtype is not None

    def load(self) -> Optional[np.ndarray]:
        """Read the values (``None`` for a resource handle; ``ReferenceFormatError`` for strings)."""
        return self._loader()

    def to_dict(self) -> dict:
        """JSON-ready description (no values)."""
        return {"op_name": self.op_name, "output_slot": self.output_slot, "timestamp_us": self.timestamp_us,
                "device": self.device, "op_type": self.op_type, "dtype": self.dtype_name,
                "shape": list(self.shape), "path": self.path, "index": self.index,
                "source_format": self.source_format, "graph_id": self.graph_id}


@dataclass(frozen=True)
class TfdbgRun:
    """One dump: a v1 run folder (one ``Session.run``) or a v2 DebugEvents folder."""

    path: str
    version: int
    timestamp_us: int
    counter: int = 0


# -- finding runs ---------------------------------------------------------------------------------
def _is_v1_run(folder: str) -> bool:
    return any(name.startswith(DEVICE_DIR_PREFIX) and os.path.isdir(os.path.join(folder, name))
               for name in os.listdir(folder))


def _v2_files(folder: str, suffix: str) -> List[str]:
    return sorted(os.path.join(folder, name) for name in os.listdir(folder)
                  if name.endswith(suffix) and os.path.isfile(os.path.join(folder, name)))


def _v2_run(folder: str) -> TfdbgRun:
    stamps = [int(m.group(1)) * 1_000_000 for m in map(_V2_FILE_TIME.match, os.listdir(folder)) if m]
    return TfdbgRun(folder, 2, min(stamps) if stamps else 0)


def list_tfdbg_runs(root) -> List[TfdbgRun]:
    """All dumps under ``root``, oldest first (so ``[-1]`` is the last run).

    ``root`` may be a tfdbg v1 dump root (holding ``run_<us>_<n>`` folders), one v1 run folder
    (holding ``_tfdbg_device_...`` folders) or a v2 DebugEvents folder.

    Raises
    ------
    WorkspaceError
        ``root`` is not a folder, or holds no tfdbg dump.
    """
    root = os.fspath(root)
    if not os.path.isdir(root):
        raise WorkspaceError(f"{root}: no such folder (expected a tfdbg dump folder)")
    if _v2_files(root, _V2_TRACES_SUFFIX):
        return [_v2_run(root)]
    if _is_v1_run(root):
        match = _RUN_DIR.fullmatch(os.path.basename(os.path.normpath(root)))
        return [TfdbgRun(root, 1, int(match.group(1)) if match else 0, int(match.group(2)) if match else 0)]
    runs = []
    for name in os.listdir(root):
        match = _RUN_DIR.fullmatch(name)
        path = os.path.join(root, name)
        if match and os.path.isdir(path) and _is_v1_run(path):
            runs.append(TfdbgRun(path, 1, int(match.group(1)), int(match.group(2))))
    if not runs:
        raise WorkspaceError(f"{root}: no tfdbg dump here (expected run_<us>_<n>/ folders, "
                             "_tfdbg_device_... folders or *.graph_execution_traces files)")
    return sorted(runs, key=lambda run: (run.timestamp_us, run.counter))


def iter_tfdbg(path, run: int = -1, skip_resources: bool = True, verify: bool = True) -> Iterator[TfdbgTensor]:
    """Iterate over the tensors of one tfdbg dump, v1 or v2.

    Parameters
    ----------
    path : str or Path
        See :func:`list_tfdbg_runs`.
    run : int
        Which run of :func:`list_tfdbg_runs` (default ``-1``: the last).
    skip_resources : bool
        Leave out ``DT_RESOURCE`` tensors (variable handles), which have no values.
    verify : bool
        v2: check every record's data CRC when it is loaded.
    """
    runs = list_tfdbg_runs(path)
    try:
        chosen = runs[run]
    except IndexError:
        raise WorkspaceError(f"{os.fspath(path)}: run {run} does not exist ({len(runs)} run(s) found)") from None
    if chosen.version == 2:
        return iter_tfdbg_v2(chosen.path, skip_resources, verify)
    return iter_tfdbg_v1(chosen.path, skip_resources)


# -- tfdbg v1 --------------------------------------------------------------------------------------
def device_name_from_folder(folder_name: str) -> str:
    """``_tfdbg_device_,job_localhost,replica_0,task_0,device_CPU_0`` -> ``/job:localhost/.../device:CPU:0``."""
    parts = [part for part in folder_name[len(DEVICE_DIR_PREFIX):].split(",") if part]
    names = []
    for part in parts:
        key, _, value = part.partition("_")
        if key == "device":
            value = value.replace("_", ":", 1)
        names.append(f"{key}:{value}")
    return "/" + "/".join(names)


class _MappedFile:
    """A whole file as a read-only buffer (mmap; ``b""`` for an empty file)."""

    def __init__(self, path: str):
        self.path = path
        try:
            self._file = open(path, "rb")
        except OSError as error:
            raise ReferenceFormatError(path, f"cannot open ({error.strerror})") from None
        self.size = os.fstat(self._file.fileno()).st_size
        self.buffer = mmap.mmap(self._file.fileno(), 0, access=mmap.ACCESS_READ) if self.size else b""

    def __enter__(self) -> "_MappedFile":
        return self

    def __exit__(self, *exc_info) -> None:
        if isinstance(self.buffer, mmap.mmap):
            self.buffer.close()
        self._file.close()


def _scan_v1_event(buf, size: int, path: str) -> Tuple[str, TensorLocation]:
    """(``node:slot:DebugOp``, tensor location) of a v1 tensor file held in ``buf``."""
    what = "tfdbg v1 Event"
    if size == 0:
        raise ReferenceFormatError(path, "empty file (a tfdbg v1 tensor file holds one Event)")
    summary = tf_schema.last_field(iter_wire_fields(buf, 0, size, path, what),
                                   tf_schema.field_number("Event", "summary"), WIRE_LEN)
    value = None
    if summary is not None:
        value_number = tf_schema.field_number("Summary", "value")
        value = next((f for f in iter_wire_fields(buf, summary.start, summary.end, path, "Summary")
                      if f.number == value_number and f.wire_type == WIRE_LEN), None)
    if value is None:
        raise ReferenceFormatError(path, "not a tfdbg tensor dump (the Event has no summary value)")
    node_name, tensor = None, None
    for wire_field in iter_wire_fields(buf, value.start, value.end, path, "Summary.Value"):
        if wire_field.wire_type != WIRE_LEN:
            continue
        if wire_field.number == tf_schema.field_number("SummaryValue", "node_name"):
            node_name = wire_string(buf, wire_field, path, "Summary.Value.node_name")
        elif wire_field.number == tf_schema.field_number("SummaryValue", "tensor"):
            tensor = wire_field
    if node_name is None or tensor is None:
        raise ReferenceFormatError(path, "not a tfdbg tensor dump (no node_name or no tensor in the Event)")
    return node_name, scan_tensor_proto(buf, tensor.start, tensor.end, path)


def _split_debug_node_name(node_name: str, path: str) -> Tuple[str, int]:
    parts = node_name.rsplit(":", 2)
    if len(parts) != 3 or not parts[1].isdigit():
        raise ReferenceFormatError(path, f"node_name {node_name!r} is not 'op:slot:DebugOp'")
    return parts[0], int(parts[1])


def _load_v1_tensor(path: str) -> Optional[np.ndarray]:
    with _MappedFile(path) as mapped:
        _, location = _scan_v1_event(mapped.buffer, mapped.size, path)
        if location.content is None:
            return load_located_tensor(mapped.buffer, location, path)
    start, end = location.content
    content = bytearray(end - start)
    with open(path, "rb") as handle:
        handle.seek(start)
        if handle.readinto(content) != len(content):
            raise ReferenceFormatError(path, "file shrank while reading (truncated)")
    return load_located_tensor(content, TensorLocation(location.dtype_code, location.shape,
                                                       (0, len(content)), (0, len(content))), path)


def _v1_op_types(device_dir: str) -> Dict[str, str]:
    """Op name -> op type from the executed graphs (``_tfdbg_graph_hash...`` files) of a device folder."""
    op_types: Dict[str, str] = {}
    for name in sorted(os.listdir(device_dir)):
        path = os.path.join(device_dir, name)
        if not (name.startswith(GRAPH_FILE_PREFIX) and os.path.isfile(path)):
            continue
        try:
            with open(path, "rb") as handle:
                event = tf_schema.Event.FromString(handle.read())
            graph = tf_schema.GraphDef.FromString(event.graph_def)
        except DecodeError as error:
            raise ReferenceFormatError(path, f"not a tfdbg graph file ({error})") from None
        op_types.update((node.name, node.op) for node in graph.node)
    return op_types


def _v1_tensor_files(device_dir: str) -> List[Tuple[int, str]]:
    found = []
    for folder, subfolders, files in os.walk(device_dir):
        subfolders.sort()
        for name in files:
            if folder == device_dir and name.startswith("_tfdbg_"):
                continue
            match = _TENSOR_FILE.fullmatch(name)
            if match and match.group("debug_op") == FULL_TENSOR_DEBUG_OP:
                found.append((int(match.group("us")), os.path.join(folder, name)))
    return found


_FEED_KEYS_FILE = "_tfdbg_feed_keys_info_"
_FED_TENSOR = re.compile(rb"'([^'<>]+):\d+'")  # <tf.Tensor 'scope/x:0' ...> or 'scope/x:0' (string keys)
_ARG_NODE = re.compile(r"_arg_(?P<name>.+)_0_\d+")


def _v1_fed_placeholders(run_dir: str) -> set:
    """Names of the placeholders fed in this run, from ``_tfdbg_feed_keys_info_`` (the reprs of the feed
    dict's keys: ``<tf.Tensor 'scope/x:0' ...>``, or ``'scope/x:0'`` when fed by name); empty when the file
    is missing or says nothing."""
    path = os.path.join(run_dir, _FEED_KEYS_FILE)
    try:
        with open(path, "rb") as handle:
            content = handle.read(1 << 20)
    except OSError:
        return set()
    return {name.decode("utf-8", "replace") for name in _FED_TENSOR.findall(content)}


def _placeholder_name(op_name: str, fed: set) -> str:
    """A fed placeholder runs as node ``_arg_{placeholder}_0_{arg index}``; give it its own name back.

    Only names whose middle part is a placeholder this run fed are renamed, so an op that merely looks
    like ``_arg_..._0_N`` keeps its name.
    """
    match = _ARG_NODE.fullmatch(op_name)
    if match and match.group("name") in fed:
        return match.group("name")
    return op_name


def iter_tfdbg_v1(run_dir, skip_resources: bool = True) -> Iterator[TfdbgTensor]:
    """Tensors of one tfdbg v1 run folder, in execution (timestamp) order, every device.

    Only ``DebugIdentity`` files hold whole tensors; other debug ops' files are ignored. Fed placeholders,
    which TensorFlow executes as ``_arg_{name}_0_{i}`` nodes, are reported under the placeholder's own name
    (what the NPU graph's Data op refers to), with op type ``Placeholder``.
    """
    run_dir = os.fspath(run_dir)
    if not os.path.isdir(run_dir) or not _is_v1_run(run_dir):
        raise WorkspaceError(f"{run_dir}: not a tfdbg v1 run folder (no _tfdbg_device_... folder inside)")
    entries = []
    for name in sorted(os.listdir(run_dir)):
        device_dir = os.path.join(run_dir, name)
        if name.startswith(DEVICE_DIR_PREFIX) and os.path.isdir(device_dir):
            device = device_name_from_folder(name)
            op_types = _v1_op_types(device_dir)
            entries.extend((stamp, path, device, op_types) for stamp, path in _v1_tensor_files(device_dir))
    entries.sort(key=lambda entry: (entry[0], entry[1]))
    fed = _v1_fed_placeholders(run_dir)
    for index, (stamp, path, device, op_types) in enumerate(entries):
        with _MappedFile(path) as mapped:
            node_name, location = _scan_v1_event(mapped.buffer, mapped.size, path)
        executed_name, slot = _split_debug_node_name(node_name, path)
        if skip_resources and base_dtype_code(location.dtype_code) == DT_RESOURCE:
            continue
        op_name = _placeholder_name(executed_name, fed)
        op_type = "Placeholder" if op_name != executed_name else op_types.get(op_name)
        yield TfdbgTensor(op_name, slot, stamp, device, op_type, location.dtype_code,
                          location.shape, path, index, "tfdbg_v1",
                          _loader=lambda path=path: _load_v1_tensor(path))


# -- tfdbg v2 --------------------------------------------------------------------------------------
def _v2_op_types(folder: str) -> Dict[Tuple[str, str], str]:
    """(graph id, op name) -> op type, from the ``*.graphs`` files."""
    op_types: Dict[Tuple[str, str], str] = {}
    for path in _v2_files(folder, _V2_GRAPHS_SUFFIX):
        with TFRecordFile(path) as records:
            for span in records.spans():
                try:
                    event = tf_schema.DebugEvent.FromString(bytes(records.read(span)))
                except DecodeError as error:
                    raise ReferenceFormatError(path, f"record {span.index} is not a DebugEvent ({error})") from None
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


def _load_v2_tensor(path: str, span: RecordSpan, verify: bool) -> Optional[np.ndarray]:
    data = bytearray(span.length)
    with open(path, "rb") as handle:
        handle.seek(span.offset)
        read = handle.readinto(data)
        stored = handle.read(FOOTER_BYTES)
    if read != span.length or len(stored) != FOOTER_BYTES:
        raise ReferenceFormatError(path, f"record {span.index} is truncated (file changed since it was listed?)")
    if verify and masked_crc32c(data) != struct.unpack("<I", stored)[0]:
        raise ReferenceFormatError(path, f"TFRecord record {span.index}: data CRC mismatch (corrupt file)")
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
    trace_files = _v2_files(folder, _V2_TRACES_SUFFIX) if os.path.isdir(folder) else []
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
                if trace.debug_mode != tf_schema.FULL_TENSOR_MODE or trace.tensor is None:
                    mode = tf_schema.TENSOR_DEBUG_MODES.get(trace.debug_mode, str(trace.debug_mode))
                    raise ReferenceFormatError(
                        path, f"traces were dumped with tensor_debug_mode={mode}, which keeps no tensor values",
                        "re-capture with tensor_debug_mode='FULL_TENSOR'")
                if skip_resources and base_dtype_code(trace.tensor.dtype_code) == DT_RESOURCE:
                    continue
                yield TfdbgTensor(trace.op_name, trace.output_slot, int(round(trace.wall_time * 1e6)), trace.device,
                                  op_types.get((trace.graph_id, trace.op_name)), trace.tensor.dtype_code,
                                  trace.tensor.shape, path, index - 1, "tfdbg_v2", trace.graph_id,
                                  _loader=lambda path=path, span=span: _load_v2_tensor(path, span, verify))


# -- writers (tests, sample dumps) -----------------------------------------------------------------
DEFAULT_DEVICE = "/job:localhost/replica:0/task:0/device:CPU:0"


def device_folder_name(device: str) -> str:
    """Inverse of :func:`device_name_from_folder`."""
    parts = [part.replace(":", "_") for part in device.strip("/").split("/") if part]
    return DEVICE_DIR_PREFIX + "," + ",".join(parts)


def _tensor_proto(value):
    return value if isinstance(value, tf_schema.TensorProto) else numpy_to_tensor_proto(value)


def write_tfdbg_v1_tensor(run_dir, op_name: str, output_slot: int, value, timestamp_us: int,
                          device: str = DEFAULT_DEVICE) -> str:
    """Write one tensor file as tfdbg v1 does (``value``: array or TensorProto); returns its path."""
    device_dir = os.path.join(os.fspath(run_dir), device_folder_name(device))
    path = os.path.join(device_dir, *op_name.split("/"))
    path = f"{path}_{output_slot}_{FULL_TENSOR_DEBUG_OP}_{timestamp_us}"
    os.makedirs(os.path.dirname(path), exist_ok=True)
    event = tf_schema.Event(wall_time=float(timestamp_us))
    summary_value = event.summary.value.add(tag=op_name, node_name=f"{op_name}:{output_slot}:{FULL_TENSOR_DEBUG_OP}")
    summary_value.tensor.CopyFrom(_tensor_proto(value))
    with open(path, "wb") as handle:
        handle.write(event.SerializeToString())
    return path


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
        trace.tensor_proto.CopyFrom(_tensor_proto(value))
        records.append(event)
    for suffix, events in ((".metadata", [metadata]), (_V2_GRAPHS_SUFFIX, graphs), (_V2_TRACES_SUFFIX, records)):
        with open(os.path.join(folder, file_stem + suffix), "wb") as handle:
            for event in events:
                handle.write(encode_record(event.SerializeToString()))
