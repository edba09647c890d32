"""tfdbg v1 run folders, read without TensorFlow; :func:`write_tfdbg_v1_tensor` writes them (tests, samples).

tfdbg v1 (``DumpingDebugWrapperSession`` / ``DumpingDebugHook``) writes one folder per ``Session.run``
(``run_<epoch_us>_<counter>/``) holding a folder per device with one file per dumped tensor: ONE serialized
``Event`` (no framing) whose ``summary.value[0]`` has ``node_name = "node:slot:DebugIdentity"`` and the tensor as a
TensorProto. Fed placeholders, executed as ``_arg_{name}_0_{i}`` nodes, are given their own names back. Records
and run listing: :mod:`precision_tool.formats.tfdbg`; the folder tree: docs/internals/formats.md#tfdbg_v1.
"""
from __future__ import annotations

import functools
import io
import mmap
import os
import re
from typing import Dict, Iterator, List, Optional, Tuple, cast

import numpy as np
from google.protobuf.message import DecodeError

from precision_tool.errors import ReferenceFormatError, WorkspaceError
from precision_tool.fileio import open_input, read_input_bytes
from precision_tool.formats.bounds import parse_decimal, shown_name
from precision_tool.formats import tf_schema
from precision_tool.formats.tf_schema import WIRE_LEN, iter_wire_fields, wire_string
from precision_tool.formats.tf_tensor import (DT_RESOURCE, TensorLocation, base_dtype_code, load_located_tensor,
                                              scan_tensor_proto)
from precision_tool.formats.tfdbg import (DEFAULT_DEVICE, DEVICE_DIR_PREFIX, TfdbgTensor, as_tensor_proto,
                                          device_folder_name, device_name_from_folder, is_v1_run)

GRAPH_FILE_PREFIX = "_tfdbg_graph_"
FULL_TENSOR_DEBUG_OP = "DebugIdentity"
_TENSOR_FILE = re.compile(r"(?P<node>.+)_(?P<slot>[0-9]{1,20})_(?P<debug_op>[A-Za-z]+)_(?P<us>[0-9]{1,20})")


class _MappedFile:
    """A whole regular file as a read-only buffer (mmap; ``b""`` for an empty file).

    Opened with :func:`~precision_tool.fileio.open_input`: a FIFO, device, folder, dangling symlink or
    symlink loop is a :class:`ReferenceFormatError` naming the file, never a hang.
    """

    def __init__(self, path: str):
        self.path = path
        self._file = open_input(path, ReferenceFormatError)
        try:
            self.size = os.fstat(self._file.fileno()).st_size
            self.buffer = mmap.mmap(self._file.fileno(), 0, access=mmap.ACCESS_READ) if self.size else b""
        except (OSError, ValueError) as error:
            self._file.close()
            raise ReferenceFormatError(path, f"cannot map the file ({error})") from None

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
    """``"conv1/relu:0:DebugIdentity"`` -> ``("conv1/relu", 0)``; the slot is ASCII digits (at most 20: a
    ``'²'`` or a 5,000-digit slot is a damaged file, not an ``int()`` traceback)."""
    parts = node_name.rsplit(":", 2)
    slot = parse_decimal(parts[1]) if len(parts) == 3 else None
    if slot is None or not parts[0] or "\0" in parts[0]:
        raise ReferenceFormatError(path, f"node_name {shown_name(node_name)} is not 'op:slot:DebugOp' (an op name "
                                         "without NUL characters, a slot of ASCII digits)")
    return parts[0], slot


def _load_v1_tensor(path: str) -> Optional[np.ndarray]:
    with _MappedFile(path) as mapped:
        _, location = _scan_v1_event(mapped.buffer, mapped.size, path)
        if location.content is None:
            return load_located_tensor(mapped.buffer, location, path)
    start, end = location.content
    content = bytearray(end - start)
    try:
        with open_input(path, ReferenceFormatError) as handle:
            handle.seek(start)
            got = cast(io.BufferedReader, handle).readinto(content)  # open_input gives a BufferedReader
    except OSError as error:
        raise ReferenceFormatError(path, f"cannot read ({error.strerror or error})") from None
    if got != len(content):
        raise ReferenceFormatError(path, "file shrank while reading (truncated)")
    return load_located_tensor(content, TensorLocation(location.dtype_code, location.shape,
                                                       (0, len(content)), (0, len(content))), path)


def _v1_op_types(device_dir: str) -> Dict[str, str]:
    """Op name -> op type from the executed graphs (``_tfdbg_graph_hash...`` files) of a device folder.

    A graph file that cannot be read or decoded is passed over (its ops get no type): the tensors are still
    readable, and ``tf_dump`` says in a note that this graph was not kept (:mod:`.tf_graph`)."""
    op_types: Dict[str, str] = {}
    for name in sorted(os.listdir(device_dir)):
        path = os.path.join(device_dir, name)
        if not (name.startswith(GRAPH_FILE_PREFIX) and os.path.isfile(path)):
            continue
        try:
            event = tf_schema.Event.FromString(read_input_bytes(path, ReferenceFormatError))
            graph = tf_schema.GraphDef.FromString(event.graph_def)
        except (DecodeError, RuntimeError, ReferenceFormatError):
            continue
        op_types.update((node.name, node.op) for node in graph.node)
    return op_types


def _v1_tensor_files(device_dir: str) -> List[Tuple[int, str]]:
    """``(time stamp, path)`` of every ``DebugIdentity`` tensor file under ``device_dir`` -- and of every folder
    named like one (a tensor file replaced by a folder: listed, so that reading it fails and names it)."""
    found = []
    for folder, subfolders, files in os.walk(device_dir):
        subfolders.sort()
        for name in files + [sub for sub in subfolders if _is_tensor_name(sub)]:
            if folder == device_dir and name.startswith("_tfdbg_"):
                continue
            match = _TENSOR_FILE.fullmatch(name)
            if match and match.group("debug_op") == FULL_TENSOR_DEBUG_OP:
                found.append((int(match.group("us")), os.path.join(folder, name)))
    return found


def _is_tensor_name(name: str) -> bool:
    match = _TENSOR_FILE.fullmatch(name)
    return match is not None and match.group("debug_op") == FULL_TENSOR_DEBUG_OP


_FEED_KEYS_FILE = "_tfdbg_feed_keys_info_"
_FED_TENSOR = re.compile(rb"'([^'<>]+):[0-9]+'")  # <tf.Tensor 'scope/x:0' ...> or 'scope/x:0' (string keys)
_ARG_NODE = re.compile(r"_arg_(?P<name>.+)_0_[0-9]+")


def _v1_fed_placeholders(run_dir: str) -> set:
    """Names of the placeholders fed in this run, from ``_tfdbg_feed_keys_info_`` (the reprs of the feed
    dict's keys: ``<tf.Tensor 'scope/x:0' ...>``, or ``'scope/x:0'`` when fed by name); empty when the file
    is missing or says nothing."""
    path = os.path.join(run_dir, _FEED_KEYS_FILE)
    try:
        with open_input(path, ReferenceFormatError) as handle:
            content = handle.read(1 << 20)
    except (OSError, ReferenceFormatError):
        return set()  # missing or not a regular file: no placeholder is renamed
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
    if not os.path.isdir(run_dir) or not is_v1_run(run_dir):
        raise WorkspaceError(f"{run_dir}: not a tfdbg v1 run folder (no _tfdbg_device_... folder inside)")
    entries: List[Tuple[int, str, str, Dict[str, str]]] = []
    for name in sorted(os.listdir(run_dir)):
        device_dir = os.path.join(run_dir, name)
        if name.startswith(DEVICE_DIR_PREFIX) and os.path.isdir(device_dir):
            device = device_name_from_folder(name)
            op_types = _v1_op_types(device_dir)
            entries.extend((stamp, path, device, op_types) for stamp, path in _v1_tensor_files(device_dir))
    entries.sort(key=lambda entry: (entry[0], entry[1]))
    fed = _v1_fed_placeholders(run_dir)
    for index, (stamp, path, device, op_types) in enumerate(entries):
        if os.path.isdir(path):  # a tensor file replaced by a folder: a tensor that cannot be read, named as one
            op_name, slot = _name_from_path(device_dir_of(path, run_dir), path)
            yield TfdbgTensor(op_name, slot, stamp, device, op_types.get(op_name), UNREADABLE_DTYPE, (), path, index,
                              "tfdbg_v1", _loader=functools.partial(_refuse_folder, path))
            continue
        with _MappedFile(path) as mapped:
            node_name, location = _scan_v1_event(mapped.buffer, mapped.size, path)
        executed_name, slot = _split_debug_node_name(node_name, path)
        if skip_resources and base_dtype_code(location.dtype_code) == DT_RESOURCE:
            continue
        op_name = _placeholder_name(executed_name, fed)
        op_type = "Placeholder" if op_name != executed_name else op_types.get(op_name)
        yield TfdbgTensor(op_name, slot, stamp, device, op_type, location.dtype_code,
                          location.shape, path, index, "tfdbg_v1",
                          _loader=functools.partial(_load_v1_tensor, path))


UNREADABLE_DTYPE = -1  # the dtype code of a tensor whose file cannot be read at all (a folder in its place)


def device_dir_of(path: str, run_dir: str) -> str:
    """The ``_tfdbg_device_...`` folder of ``run_dir`` that holds ``path``."""
    relative = os.path.relpath(path, run_dir)
    return os.path.join(run_dir, relative.split(os.sep, 1)[0])


def _name_from_path(device_dir: str, path: str) -> Tuple[str, int]:
    """The op name and slot a tensor file's path spells (``dense/MatMul_0_DebugIdentity_{us}``)."""
    match = _TENSOR_FILE.fullmatch(os.path.basename(path))
    assert match is not None
    folder = os.path.relpath(os.path.dirname(path), device_dir)
    op_name = match.group("node") if folder == "." else "/".join(folder.split(os.sep) + [match.group("node")])
    return op_name, int(match.group("slot"))


def _refuse_folder(path: str):
    raise ReferenceFormatError(path, "a folder, not a tfdbg tensor file")


# -- writer (tests, sample dumps) ------------------------------------------------------------------
def write_tfdbg_v1_tensor(run_dir, op_name: str, output_slot: int, value, timestamp_us: int,
                          device: str = DEFAULT_DEVICE) -> str:
    """Write one tensor file as tfdbg v1 does (``value``: array or TensorProto); returns its path."""
    device_dir = os.path.join(os.fspath(run_dir), device_folder_name(device))
    path = os.path.join(device_dir, *op_name.split("/"))
    path = f"{path}_{output_slot}_{FULL_TENSOR_DEBUG_OP}_{timestamp_us}"
    os.makedirs(os.path.dirname(path), exist_ok=True)
    event = tf_schema.Event(wall_time=float(timestamp_us))
    summary_value = event.summary.value.add(tag=op_name, node_name=f"{op_name}:{output_slot}:{FULL_TENSOR_DEBUG_OP}")
    summary_value.tensor.CopyFrom(as_tensor_proto(value))
    with open(path, "wb") as handle:
        handle.write(event.SerializeToString())
    return path
