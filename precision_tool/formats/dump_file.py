"""Ascend op dump files: read the header, read one tensor on demand (the writer is in ``dump_writer``).

Layout (little-endian, ``ascend-formats.md`` §1): uint64 ``L`` at ``[0, 8)``; a serialized
``toolkit.dumpdata.DumpData`` at ``[8, 8 + L)`` (entries carry type/format/shape/size, no data); then the payloads
back to back, every input, output, buffer, then workspace, each its entry's ``size`` bytes, of which a tensor
uses the first ``prod(shape) * itemsize``. :func:`read_dump_header` reads ``L`` and the header only, checking every
size against the file before anything is allocated (one :class:`~precision_tool.errors.DumpFormatError`, path
first); :func:`read_tensor` reads one payload. See docs/internals/formats.md#dump_file.
"""
from __future__ import annotations

import contextlib
import io
import itertools
import os
import struct
import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import BinaryIO, Iterator, Optional, Sequence, Tuple, Union, cast

import numpy as np

from precision_tool.compat import prod
from precision_tool.errors import DumpFormatError, NanoDumpError
from precision_tool.fileio import map_bytes, map_handle, open_input, read_windows
from precision_tool.formats import dtypes
from precision_tool.formats.bounds import ndim_problem
from precision_tool.formats.dump_schema import DUMP_RECORDS
from precision_tool.formats.proto_records import ProtoDecodeError
from precision_tool.formats.tensor_kind import INPUT, OUTPUT, TensorKind

LENGTH_FIELD_BYTES = 8
NANO_MAGIC = 0x5A5A5A5A

# Beyond this many bits of sum(bit_length(dim)) the element count is not worth computing exactly:
# the product is then at least 2**64, more than any file can hold.
_MAX_EXACT_COUNT_BITS = 128
_MAX_EMPTY_SHAPE_PRODUCT = 2 ** 58  # times the largest item size (16) stays below numpy's 2**63


def element_count(shape: Sequence[int]) -> Optional[int]:
    """``prod(shape)`` without building astronomically large integers.

    Returns ``0`` if any dim is 0, ``1`` for the scalar shape ``()``, and ``None`` when the product
    is certainly above ``2**64`` (a lying header) -- or, for a shape with a zero dim, when the product of
    its other dims is above ``2**58``: numpy refuses a shape whose other dims times the item size pass
    ``2**63`` even for an empty array ("array is too big"), and no real tensor comes near. Dims of 1 cost
    nothing, so a shape of a million ones is fine.
    """
    nonzero = [dim for dim in shape if dim != 0]
    bits = sum(dim.bit_length() for dim in nonzero if dim > 1)
    if bits > _MAX_EXACT_COUNT_BITS:
        return None
    count = 1
    for dim in nonzero:
        count *= dim
    if len(nonzero) < len(shape):
        return 0 if count <= _MAX_EMPTY_SHAPE_PRODUCT else None
    return count


def format_shape(shape: Sequence[int], max_dims: int = 12) -> str:
    """``[1, 16, 4]``; long shapes are elided (``[1, 2, ..., 9] (300 dims)``) to keep messages one line."""
    if len(shape) <= max_dims:
        return "[" + ", ".join(str(dim) for dim in shape) + "]"
    head = ", ".join(str(dim) for dim in shape[: max_dims - 2])
    return f"[{head}, ..., {shape[-1]}] ({len(shape)} dims)"


def dtype_label(code: int) -> str:
    """Short name for messages: numpy's name where numpy holds the type (``float16``), ``bfloat16``
    for bf16, else CANN's enum name (``DT_STRING``)."""
    if code == dtypes.DT_BF16:
        return "bfloat16"
    numpy_type = dtypes.numpy_dtype(code)
    return numpy_type.name if numpy_type is not None else dtypes.dtype_name(code)


@dataclass(frozen=True)
class TensorEntry:
    """One input or output of a dump file, as its header describes it (no data).

    Attributes
    ----------
    kind : :data:`~precision_tool.formats.tensor_kind.INPUT` or ``OUTPUT``.
    index : position among the inputs, or among the outputs.
    dtype_code, format_code : CANN numbers (``OutputDataType``, ``OutputFormat``).
    shape : stored (device-layout) shape, e.g. NC1HWC0 ``(N, C1, H, W, 16)``.
    original_shape : shape before the device layout; ``None`` when the header has none, ``()`` for
        a scalar.
    size : payload bytes the entry occupies in the file (may exceed :attr:`nbytes`).
    offset : absolute file offset of the payload.
    original_op_name, original_output_index : the TF tensor a fused op's output stands for
        (outputs only; ``None`` when unset).
    original_format_code : ``OriginalOp.format``, the origin layout of an output, when the header
        carries an ``original_op``; ``None`` otherwise. Its proto3 default 0 (NCHW) cannot be told
        from "not written", so readers treat 0 as unknown.
    sub_format, address : as dumped; the address is the device address.
    """

    kind: TensorKind
    index: int
    dtype_code: int
    format_code: int
    shape: Tuple[int, ...]
    original_shape: Optional[Tuple[int, ...]]
    size: int
    offset: int
    original_op_name: Optional[str] = None
    original_output_index: Optional[int] = None
    sub_format: int = 0
    address: int = 0
    original_format_code: Optional[int] = None

    @property
    def label(self) -> str:
        """``"output 0"`` -- how messages name the entry."""
        return f"{self.kind} {self.index}"

    @property
    def is_raw_bytes(self) -> bool:
        """True for ``DT_UNDEFINED``: the data type is unknown, the payload is read as :attr:`size` raw bytes
        (int8, flat)."""
        return self.dtype_code == dtypes.DT_UNDEFINED

    @property
    def array_shape(self) -> Tuple[int, ...]:
        """Shape of the array :func:`read_tensor` returns: :attr:`shape`, or ``(size,)`` for raw bytes."""
        return (self.size,) if self.is_raw_bytes else self.shape

    @property
    def stored_text(self) -> str:
        """The layout and shape as stored, for tables: ``NC1HWC0 [1, 1, 4, 4, 16]``; raw bytes:
        ``raw 32 bytes``, plus ``(header shape [2, 16])`` when the header gives a shape."""
        if self.is_raw_bytes:
            shape = f" (header shape {format_shape(self.shape)})" if self.shape else ""
            return f"raw {self.size} bytes{shape}"
        return f"{self.format_name} [{', '.join(str(dim) for dim in self.shape)}]"

    @property
    def dtype_name(self) -> str:
        """CANN enum name, ``"DT_FLOAT16"``."""
        return dtypes.dtype_name(self.dtype_code)

    @property
    def format_name(self) -> str:
        """Layout name, ``"NC1HWC0"``."""
        return dtypes.format_name(self.format_code)

    @property
    def storage_dtype(self) -> Optional[np.dtype]:
        """numpy dtype of the stored bytes (``uint16`` for bf16, int8 for raw bytes); ``None`` if numpy cannot
        hold them."""
        if self.is_raw_bytes:
            return dtypes.RAW_BYTES_DTYPE
        return dtypes.numpy_dtype(self.dtype_code)

    @property
    def numpy_dtype(self) -> Optional[np.dtype]:
        """dtype of the array :func:`read_tensor` returns (``float32`` for bf16); ``None`` if unsupported."""
        if self.dtype_code == dtypes.DT_BF16:
            return np.dtype("float32")
        return self.storage_dtype

    @property
    def element_count(self) -> Optional[int]:
        """``prod(array_shape)``; ``None`` if astronomically large (see :func:`element_count`)."""
        return element_count(self.array_shape)

    @property
    def nbytes(self) -> Optional[int]:
        """Bytes the tensor needs, ``prod(shape) * itemsize`` (``size`` for raw bytes); ``None`` if the dtype is
        not supported or the shape is astronomically large."""
        storage = self.storage_dtype
        count = self.element_count
        if storage is None or count is None:
            return None
        return count * storage.itemsize

    def to_dict(self) -> dict:
        """JSON-ready description (names as well as codes)."""
        return {
            "kind": self.kind, "index": self.index, "dtype": self.dtype_name, "format": self.format_name,
            "shape": list(self.shape),
            "original_shape": None if self.original_shape is None else list(self.original_shape),
            "size": self.size, "offset": self.offset, "original_op_name": self.original_op_name,
            "original_output_index": self.original_output_index,
            "original_format": (None if self.original_format_code is None
                                else dtypes.format_name(self.original_format_code)),
            "sub_format": self.sub_format, "address": self.address,
        }


@dataclass(frozen=True)
class BlobEntry:
    """A buffer (``kind="buffer"``, type 0 = L1) or workspace (``kind="space"``, type 0 = LOG)."""

    kind: str
    index: int
    type_code: int
    size: int
    offset: int


@dataclass(frozen=True)
class DumpFile:
    """What the header of one dump file says, plus where each payload is.

    ``file_size`` and ``mtime_ns`` are taken when the header is read; :func:`read_tensor` refuses a
    file whose size or modification time changed since.
    """

    path: str
    version: str
    dump_time: int
    op_name: str
    inputs: Tuple[TensorEntry, ...]
    outputs: Tuple[TensorEntry, ...]
    buffers: Tuple[BlobEntry, ...]
    spaces: Tuple[BlobEntry, ...]
    attrs: Tuple[Tuple[str, str], ...]
    header_length: int
    file_size: int
    mtime_ns: int = 0

    @property
    def payload_offset(self) -> int:
        """Offset of the first payload byte: ``8 + header_length``."""
        return LENGTH_FIELD_BYTES + self.header_length

    @property
    def payload_bytes(self) -> int:
        """Sum of the sizes of every input, output, buffer and space."""
        return sum(entry.size for entry in self.tensors) + sum(entry.size for entry in self.buffers + self.spaces)

    @property
    def trailing_bytes(self) -> int:
        """Bytes after the last payload (tolerated, normally 0)."""
        return self.file_size - self.payload_offset - self.payload_bytes

    @property
    def tensors(self) -> Tuple[TensorEntry, ...]:
        """Inputs then outputs, in payload order."""
        return self.inputs + self.outputs

    def tensor(self, kind: str, index: int) -> TensorEntry:
        """The entry ``kind`` (a :class:`TensorKind` or its text) number ``index``; ``DumpFormatError`` if absent."""
        parsed = TensorKind.parse(kind)
        if parsed is None:
            raise ValueError(f"kind must be 'input' or 'output', not {kind!r}")
        entries = self.inputs if parsed is INPUT else self.outputs
        if not 0 <= index < len(entries):
            raise DumpFormatError(self.path, f"has no {kind} {index} ({len(entries)} {kind}s)")
        return entries[index]

    def to_dict(self) -> dict:
        """JSON-ready description of the header."""
        return {
            "path": self.path, "version": self.version, "dump_time": self.dump_time, "op_name": self.op_name,
            "inputs": [entry.to_dict() for entry in self.inputs],
            "outputs": [entry.to_dict() for entry in self.outputs],
            "buffers": [entry.size for entry in self.buffers], "spaces": [entry.size for entry in self.spaces],
            "attrs": [list(pair) for pair in self.attrs], "header_length": self.header_length,
            "file_size": self.file_size,
        }


# --------------------------------------------------------------------------------------------- reading

def read_dump_header(path: Union[str, os.PathLike]) -> DumpFile:
    """Read and check the header of the dump file at ``path``; payloads are not read.

    Checks, in this order, each failing with one line starting with the path:

    1. the file is a regular file (:func:`~precision_tool.fileio.open_input`: not a FIFO, device, folder,
       dangling symlink or symlink loop) of more than 8 bytes;
    2. it is not a nano (TLV) dump -- uint32 ``0x5A5A5A5A`` at byte 8 -- (:class:`NanoDumpError`);
    3. the header length ``0 < L <= filesize - 8`` (checked on the file's size before reading ``L`` bytes;
       ``L = 0`` is no header at all: every real dump names its op and version);
    4. the header decodes as ``DumpData``;
    5. the sizes of all inputs, outputs, buffers and spaces fit in ``filesize - 8 - L``;
    6. no shape (stored or original) has more dimensions than numpy holds (``bounds.MAX_NDIM``);
    7. each tensor's ``prod(shape) * itemsize`` fits in its ``size`` (skipped for data types numpy
       cannot hold, whose item size is unknown).

    Returns
    -------
    DumpFile
        with absolute payload offsets, in payload order.

    Raises
    ------
    DumpFormatError, NanoDumpError
    """
    path = os.fspath(path)
    try:
        with open_input(path, DumpFormatError) as handle:  # regular files only: a FIFO cannot block
            info = os.fstat(handle.fileno())
            header_length, header = _read_length_and_header(path, handle, info.st_size)
    except OSError as error:
        raise DumpFormatError(path, f"cannot read: {error.strerror or error}") from None
    try:
        message = DUMP_RECORDS.decode("DumpData", header)
    except ProtoDecodeError as error:
        raise DumpFormatError(
            path, f"header ({header_length} bytes) is not a DumpData protobuf: {error}",
            "not an Ascend op dump, or a corrupted one") from None
    dump = _build_dump_file(path, message, header_length, info.st_size, info.st_mtime_ns)
    _remember_header((info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns), dump)
    return dump


def _read_length_and_header(path: str, handle, file_size: int) -> Tuple[int, bytes]:
    if file_size <= LENGTH_FIELD_BYTES:
        raise DumpFormatError(
            path, f"file is {file_size} bytes; a dump file holds an 8-byte header length, a header and payloads")
    prefix = handle.read(LENGTH_FIELD_BYTES + 4)
    if len(prefix) < LENGTH_FIELD_BYTES:
        raise DumpFormatError(path, "file shrank while being read")
    (header_length,) = struct.unpack_from("<Q", prefix)
    if len(prefix) == LENGTH_FIELD_BYTES + 4 and struct.unpack_from("<I", prefix, 8)[0] == NANO_MAGIC:
        raise NanoDumpError(
            path, "nano (TLV) dump format, not supported: magic 0x5A5A5A5A at byte 8",
            "dump without nano mode, or convert it with msaccucmp")
    available = file_size - LENGTH_FIELD_BYTES
    if header_length == 0:
        raise DumpFormatError(path, "header length is 0: the file holds no DumpData header",
                              "not an Ascend op dump, or a corrupted one")
    if header_length > available:
        raise DumpFormatError(
            path, f"header length {header_length} exceeds the {available} bytes after the length field",
            "truncated file, or not an Ascend op dump")
    handle.seek(LENGTH_FIELD_BYTES)
    header = handle.read(header_length)
    if len(header) != header_length:
        raise DumpFormatError(path, "file shrank while being read")
    return header_length, header


def _optional_shape(entry, field_name: str) -> Optional[Tuple[int, ...]]:
    return tuple(getattr(entry, field_name).dim) if entry.HasField(field_name) else None


def _build_dump_file(path: str, message, header_length: int, file_size: int, mtime_ns: int) -> DumpFile:
    available = file_size - LENGTH_FIELD_BYTES - header_length
    groups = (message.input, message.output, message.buffer, message.space)
    total = sum(entry.size for group in groups for entry in group)
    if total > available:
        counts = ", ".join(f"{len(group)} {name}" for group, name in zip(groups, _GROUP_NAMES))
        raise DumpFormatError(
            path, f"payload sizes total {total} bytes ({counts}) but only {available} bytes follow the header",
            "truncated file, or a header that lies about sizes")
    offset = LENGTH_FIELD_BYTES + header_length
    inputs, offset = _tensor_entries(path, INPUT, message.input, offset)
    outputs, offset = _tensor_entries(path, OUTPUT, message.output, offset)
    buffers, offset = _blob_entries("buffer", message.buffer, "buffer_type", offset)
    spaces, offset = _blob_entries("space", message.space, "type", offset)
    return DumpFile(
        path=path, version=message.version, dump_time=message.dump_time, op_name=message.op_name,
        inputs=inputs, outputs=outputs, buffers=buffers, spaces=spaces,
        attrs=tuple((attr.name, attr.value) for attr in message.attr),
        header_length=header_length, file_size=file_size, mtime_ns=mtime_ns)


_GROUP_NAMES = ("inputs", "outputs", "buffers", "spaces")


def _tensor_entries(path: str, kind: TensorKind, messages, offset: int) -> Tuple[Tuple[TensorEntry, ...], int]:
    entries = []
    for index, item in enumerate(messages):
        original_name = original_index = original_format = None
        if kind is OUTPUT and item.HasField("original_op"):
            original_name, original_index = item.original_op.name, item.original_op.output_index
            original_format = item.original_op.format
        _check_ndim(path, kind, index, item)
        _check_wire_types(path, kind, index, item)
        entry = TensorEntry(
            kind=kind, index=index, dtype_code=item.data_type, format_code=item.format,
            shape=tuple(item.shape.dim), original_shape=_optional_shape(item, "original_shape"),
            size=item.size, offset=offset, original_op_name=original_name,
            original_output_index=original_index, sub_format=item.sub_format, address=item.address,
            original_format_code=original_format)
        _check_tensor_fits(path, entry)
        entries.append(entry)
        offset += item.size
    return tuple(entries), offset


#: The fields of a tensor's header entry that reading its payload needs.
REQUIRED_TENSOR_FIELDS = ("data_type", "format", "shape", "size")


def _check_wire_types(path: str, kind: TensorKind, index: int, item) -> None:
    """Refuse a tensor whose data type, format, shape (or a dimension) or size came with a wire type its type never
    has: protobuf skips such a field, which leaves the default (``DT_UNDEFINED``, a scalar shape, size 0) -- a
    tensor read as something the producer did not write."""
    mistyped = getattr(item, "mistyped", None)
    if mistyped is None:  # a protobuf message, not a record: nothing was remembered
        return
    bad = [name for name in mistyped() if name in REQUIRED_TENSOR_FIELDS]
    bad += ["shape" for name in item.shape.mistyped() if name == "dim" and "shape" not in bad]
    if bad:
        raise DumpFormatError(path, f"{kind} {index}: its {bad[0]} field has a wire type its type never has "
                                    f"(protobuf skips it), so the {bad[0].replace('_', ' ')} is unknown",
                              "a corrupted header")


def _check_ndim(path: str, kind: TensorKind, index: int, item) -> None:
    """Refuse a stored or original shape with more dimensions than numpy holds, before any array exists."""
    for field_name, what in (("shape", "shape"), ("original_shape", "original shape")):
        if field_name == "original_shape" and not item.HasField(field_name):
            continue
        problem = ndim_problem(len(getattr(item, field_name).dim), what)
        if problem is not None:
            raise DumpFormatError(path, f"{kind} {index}: {problem}", "a corrupted header")


def _check_tensor_fits(path: str, entry: TensorEntry) -> Optional[int]:
    """``entry.nbytes`` after checking it fits ``entry.size``; ``None`` for a data type numpy cannot hold (its
    item size is unknown: only the size total is checked)."""
    if entry.storage_dtype is None:
        return None
    needed = entry.nbytes
    if needed is None:
        raise DumpFormatError(
            path, f"{entry.label}: shape {format_shape(entry.shape)} {dtype_label(entry.dtype_code)} needs "
                  f"more than 2**64 bytes but size is {entry.size}", "a header that lies about shapes")
    if needed > entry.size:
        raise DumpFormatError(
            path, f"{entry.label}: shape {format_shape(entry.shape)} {dtype_label(entry.dtype_code)} needs "
                  f"{needed} bytes but size is {entry.size}")
    return needed


def _blob_entries(kind: str, messages, type_field: str, offset: int) -> Tuple[Tuple[BlobEntry, ...], int]:
    entries = []
    for index, item in enumerate(messages):
        entries.append(BlobEntry(kind=kind, index=index, type_code=getattr(item, type_field),
                                 size=item.size, offset=offset))
        offset += item.size
    return tuple(entries), offset


Entry = Union["BlobEntry", "TensorEntry"]


def read_tensor(dump_file: DumpFile, entry: TensorEntry, payloads: Optional["Payloads"] = None) -> np.ndarray:
    """Read one tensor's payload: seek to ``entry.offset`` and read ``entry.nbytes`` bytes -- or take them from
    ``payloads``, the file's payload bytes already read (:func:`read_payloads`).

    Returns
    -------
    numpy.ndarray
        An array in the STORED shape and layout (e.g. NC1HWC0 5-D; no conversion): writable when read here,
        read-only over ``payloads`` (it shares their memory). bf16 is widened exactly to float32; bool bytes are
        taken as they are. A ``DT_UNDEFINED`` tensor is its ``size`` raw bytes as a flat int8 array
        (:attr:`TensorEntry.array_shape`).

    Raises
    ------
    DumpFormatError
        for a data type numpy cannot hold (string, fp8, ...), an entry whose shape does not fit its
        size, or a file that changed on disk (size or modification time) since its header was read.
    """
    storage = entry.storage_dtype
    if storage is None:
        raise DumpFormatError(
            dump_file.path, f"{entry.label}: data type {entry.dtype_name} is not supported (numpy cannot hold it)")
    nbytes = _check_tensor_fits(dump_file.path, entry)
    assert nbytes is not None  # the storage dtype is known and _check_tensor_fits refused a too-large shape
    if payloads is not None:
        array = np.frombuffer(payloads.view(entry, nbytes), dtype=storage).reshape(entry.array_shape)
        array.flags.writeable = False
    else:
        array = np.frombuffer(_read_payload(dump_file, entry.offset, nbytes), dtype=storage).reshape(
            entry.array_shape)
    if entry.dtype_code == dtypes.DT_BF16:
        return dtypes.bf16_bits_to_float32(array)
    return array


@dataclass(frozen=True)
class Payloads:
    """Every payload byte of one dump file, read with one open and one read: for a reader that takes several
    tensors of a file, or compares them byte for byte (the comparator reads an op's input and output and its
    consumer's input from the same few files). ``data`` holds the file's bytes from
    :attr:`DumpFile.payload_offset` to its end."""

    dump: DumpFile
    data: np.ndarray  # uint8

    def view(self, entry: Union[BlobEntry, "TensorEntry"], nbytes: int) -> memoryview:
        """The first ``nbytes`` payload bytes of ``entry`` (no copy). Raises :class:`DumpFormatError` when they lie
        past the end of the file."""
        start = entry.offset - self.dump.payload_offset
        if start < 0 or start + nbytes > len(self.data):
            raise DumpFormatError(self.dump.path, f"payload at offset {entry.offset} ({nbytes} bytes) lies past the "
                                                  f"end of the file")
        return self.data[start:start + nbytes].data


def read_payloads(dump_file: DumpFile) -> Payloads:
    """Every payload byte of ``dump_file`` (:class:`Payloads`), with :func:`read_tensor`'s check that the file is
    still the one whose header was read."""
    start = min(dump_file.payload_offset, dump_file.file_size)
    return Payloads(dump_file, _read_payload(dump_file, start, dump_file.file_size - start, mapped=True))


def read_tensor_chunks(dump_file: DumpFile, entry: TensorEntry, size: int) -> Iterator[np.ndarray]:
    """The payload of ``entry`` as flat arrays of at most ``size`` elements, in stored order, read one at a time by
    offset (a tensor of any size in a fixed amount of memory; mapped where :func:`~precision_tool.fileio.map_bytes`
    maps, :func:`~precision_tool.fileio.read_windows`). Each array is valid until the next is read; a file changed
    on disk (size or modification time) by the time an array has been used raises :class:`DumpFormatError` on
    asking for the next.
    Same errors as :func:`read_tensor`; float16/32/64 and integer tensors only (not bf16 or raw bytes)."""
    storage = entry.storage_dtype
    if storage is None or not can_map(entry):
        raise DumpFormatError(dump_file.path, f"{entry.label}: data type {entry.dtype_name} is not read in pieces")
    nbytes = _check_tensor_fits(dump_file.path, entry)
    assert nbytes is not None
    step = max(1, size) * storage.itemsize

    def shrank(start: int) -> DumpFormatError:
        return DumpFormatError(dump_file.path, f"file shrank while being read (wanted {min(step, nbytes - start)} "
                                               f"bytes at offset {entry.offset + start})")

    with _opened_payload(dump_file, entry.offset, nbytes) as handle:
        for window in read_windows(handle, dump_file.path, entry.offset, nbytes, step, shrank):
            yield window.view(storage)
            _check_unchanged(dump_file, handle)  # the window was used: rewritten meanwhile, it mixed two versions


def map_tensor(dump_file: DumpFile, entry: TensorEntry) -> np.ndarray:
    """:func:`read_tensor` without the read: a read-only memory map of the payload in the stored shape
    (:func:`~precision_tool.fileio.map_input`), so indexing it reads only the pages indexed -- four elements of
    a 2 GiB tensor cost a page, not 2 GiB. Same checks and errors as :func:`read_tensor`; for tensors numpy
    holds as stored (:func:`can_map`), not bf16 (widened on reading) or raw bytes."""
    if not can_map(entry):
        raise DumpFormatError(dump_file.path, f"{entry.label}: data type {entry.dtype_name} is not mapped")
    nbytes = _check_tensor_fits(dump_file.path, entry)
    assert nbytes is not None
    with _opened_payload(dump_file, entry.offset, nbytes) as handle:
        try:
            return map_handle(handle, entry.storage_dtype, entry.array_shape, entry.offset)
        except ValueError as error:
            raise DumpFormatError(dump_file.path, f"cannot map: {error}") from None


def read_stored_block(dump_file: DumpFile, entry: TensorEntry, index: Tuple[slice, ...]) -> np.ndarray:
    """``read_tensor(dump_file, entry)[index]`` for an ``index`` of one step-1 slice per stored axis, reading only
    those bytes: the block is a few contiguous runs of the payload (every axis after the last partial one is
    whole), each read into its place with one open for all -- or, where :func:`~precision_tool.fileio.map_bytes`
    maps (the comparison workers, guarded against a file cut short meanwhile), a strided view of the block in a map of
    the bytes from its first to its last, of which only the block's pages are read. For the slabs a large
    device-layout tensor is compared in (:func:`~precision_tool.formats.origin_tensor.origin_pieces`). Same checks
    and errors as :func:`read_tensor`; for tensors :func:`can_map` takes."""
    if not can_map(entry):
        raise DumpFormatError(dump_file.path, f"{entry.label}: data type {entry.dtype_name} is not read in blocks")
    nbytes = _check_tensor_fits(dump_file.path, entry)
    assert nbytes is not None and entry.storage_dtype is not None
    shape = entry.array_shape
    ranges = [range(*part.indices(size)) for part, size in zip(index, shape)]
    if len(ranges) != len(shape) or any(r.step != 1 for r in ranges):
        raise ValueError(f"index {index!r} is not one step-1 slice per axis of {shape}")
    block_shape = tuple(len(r) for r in ranges)
    if not prod(block_shape):
        return np.empty(block_shape, entry.storage_dtype)
    itemsize = entry.storage_dtype.itemsize
    strides = [itemsize * prod(shape[axis + 1:]) for axis in range(len(shape))]
    with _opened_payload(dump_file, entry.offset, nbytes) as handle:
        first = sum(r.start * stride for r, stride in zip(ranges, strides))
        last = sum((r.stop - 1) * stride for r, stride in zip(ranges, strides)) + itemsize
        window = map_bytes(handle, dump_file.path, entry.offset + first, last - first)
        if window is not None:  # the block in place, strided, in the map of the bytes from its first to its last
            return np.ndarray(block_shape, entry.storage_dtype, buffer=window, strides=tuple(strides))
        block = np.empty(block_shape, entry.storage_dtype)
        partial = max((axis for axis, (r, size) in enumerate(zip(ranges, shape)) if len(r) != size), default=0)
        run = len(ranges[partial]) * strides[partial]
        runs = memoryview(block.reshape(-1).view(np.uint8))
        for number, outer in enumerate(itertools.product(*ranges[:partial])):
            start = entry.offset + sum(i * stride for i, stride in zip(outer, strides)) \
                + ranges[partial].start * strides[partial]
            handle.seek(start)
            if cast(io.BufferedReader, handle).readinto(runs[number * run:(number + 1) * run]) != run:
                raise DumpFormatError(dump_file.path, f"file shrank while being read (wanted {run} bytes at "
                                                      f"offset {start})")
    return block


def can_map(entry: TensorEntry) -> bool:
    """Whether :func:`map_tensor` takes ``entry``: a type numpy holds as stored (not bf16, not raw bytes)."""
    return entry.storage_dtype is not None and entry.dtype_code != dtypes.DT_BF16 and not entry.is_raw_bytes


def same_payload(first: Tuple[DumpFile, "Entry"], second: Tuple[DumpFile, "Entry"], nbytes: int,
                 piece: int = 1 << 20) -> bool:
    """Whether the first ``nbytes`` payload bytes of two entries (``(dump file, entry)`` each) are equal, read
    ``piece`` bytes at a time into two reused buffers: no copies, fixed memory, and it stops at the first piece
    that differs. Errors as :func:`read_blob`."""
    (a_dump, a), (b_dump, b) = first, second
    size = max(1, min(piece, nbytes))
    a_buffer, b_buffer = bytearray(size), bytearray(size)
    for start in range(0, nbytes, size):
        length = min(size, nbytes - start)
        a_view, b_view = memoryview(a_buffer)[:length], memoryview(b_buffer)[:length]
        _read_payload_into(a_dump, a.offset + start, a_view)
        _read_payload_into(b_dump, b.offset + start, b_view)
        if length == size:
            if a_buffer != b_buffer:  # bytearray equality is one memcmp
                return False
        elif a_buffer[:length] != b_buffer[:length]:
            return False
    return True


def raw_bytes_note(entry: TensorEntry) -> str:
    """The note every reader gives a ``DT_UNDEFINED`` tensor (``""`` for any other).

    >>> raw_bytes_note(TensorEntry(INPUT, 0, 0, 0, (), None, 32, 26))
    'data type unknown (DT_UNDEFINED): its 32 bytes as int8, as msaccucmp converts them'
    """
    if not entry.is_raw_bytes:
        return ""
    return f"data type unknown (DT_UNDEFINED): its {entry.size} bytes as int8, as msaccucmp converts them"


def read_blob(dump_file: DumpFile, entry: Union[BlobEntry, TensorEntry]) -> bytes:
    """All ``entry.size`` payload bytes of a buffer, space or tensor, as they are on disk."""
    return bytes(_read_payload(dump_file, entry.offset, entry.size))


def _read_payload(dump_file: DumpFile, offset: int, length: int, mapped: bool = False) -> np.ndarray:
    """``length`` bytes at ``offset`` as a writable uint8 array (not a bytearray: it would be zero-filled first, a
    sixth of the cost of reading a file from the page cache). ``mapped``: mapped copy-on-write instead, in a
    process that maps (:func:`~precision_tool.fileio.map_bytes`: the comparison workers' whole-file reads)."""
    with _opened_payload(dump_file, offset, length) as handle:
        payload = map_bytes(handle, dump_file.path, offset, length) if mapped else None
        if payload is None:
            payload = np.empty(length, np.uint8)
            _read_into(dump_file, handle, offset, memoryview(payload))
    return payload


def _read_payload_into(dump_file: DumpFile, offset: int, payload: memoryview) -> None:
    with _opened_payload(dump_file, offset, len(payload)) as handle:
        _read_into(dump_file, handle, offset, payload)


def _read_into(dump_file: DumpFile, handle: BinaryIO, offset: int, payload: memoryview) -> None:
    length = len(payload)
    handle.seek(offset)
    got = cast(io.BufferedReader, handle).readinto(payload)  # open_input gives a BufferedReader
    if got != length:
        raise DumpFormatError(dump_file.path,
                              f"file shrank while being read (wanted {length} bytes at offset {offset})")


@contextlib.contextmanager
def _opened_payload(dump_file: DumpFile, offset: int, length: int) -> Iterator[BinaryIO]:
    """The dump file opened for ``length`` payload bytes at ``offset``, after checking they lie inside it and that
    the open file (``fstat`` on its descriptor) is still the one whose header was read; an ``OSError`` inside the
    ``with`` becomes one :class:`DumpFormatError` naming the file."""
    path = dump_file.path
    if offset + length > dump_file.file_size:
        raise DumpFormatError(path, f"payload at offset {offset} ({length} bytes) lies past the end of the file")
    try:
        with open_input(path, DumpFormatError) as handle:
            _check_unchanged(dump_file, handle)
            yield handle
    except OSError as error:
        raise DumpFormatError(path, f"cannot read: {error.strerror or error}") from None


def _check_unchanged(dump_file: DumpFile, handle: BinaryIO) -> None:
    """Raise :class:`DumpFormatError` unless the open file (``fstat`` on its descriptor) still has the size and
    modification time ``dump_file``'s header was read with."""
    info = os.fstat(handle.fileno())
    if info.st_size != dump_file.file_size or info.st_mtime_ns != dump_file.mtime_ns:
        raise DumpFormatError(dump_file.path, f"changed on disk since its header was read ({dump_file.file_size} -> "
                                              f"{info.st_size} bytes)", "read the header again")


# --------------------------------------------------------------------------------------------- cached headers

_HEADER_CACHE_SIZE = 4096
_HEADER_CACHE_BYTES = 4 << 20
"""Headers kept: at most this many, of at most this many serialized bytes together. A parsed header takes about
17 times its serialized size (measured: 50 KB of a 2,000-tensor header kept 843 KB of objects), so the cache holds
at most ~70 MiB. Enough for every header of a usual run (300 ops: ~60 KB serialized): the alignment parses them
in the parent process, and the comparison's forked workers find them here instead of parsing each again."""
_header_cache: "OrderedDict[str, Tuple[Tuple[int, int, int, int], DumpFile]]" = OrderedDict()
_header_cache_lock = threading.Lock()
_header_cache_bytes = 0


def read_dump_header_cached(path: Union[str, os.PathLike]) -> DumpFile:
    """:func:`read_dump_header`, parsed once per file version: the last few headers read are kept.

    Every :func:`read_dump_header` remembers its result with the file's ``(device, inode, size, mtime_ns)``
    (from ``fstat`` on the descriptor it read). A kept header is returned while ``os.stat(path)`` still gives
    that identity; anything else (a rewritten or replaced file, a path that no longer stats) is parsed again,
    so errors are :func:`read_dump_header`'s own. Reading every tensor of a dump one by one (``pt`` on a
    10,000-tensor file, the comparator) then costs one header parse, not one per tensor;
    :func:`read_tensor` still refuses a file that changed after the parse.
    """
    path = os.fspath(path)
    try:
        info = os.stat(path)
    except (OSError, ValueError):
        return read_dump_header(path)
    identity = (info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns)
    with _header_cache_lock:
        kept = _header_cache.get(path)
        if kept is not None and kept[0] == identity:
            _header_cache.move_to_end(path)
            return kept[1]
    return read_dump_header(path)


def _remember_header(identity: Tuple[int, int, int, int], dump: DumpFile) -> None:
    global _header_cache_bytes
    with _header_cache_lock:
        replaced = _header_cache.pop(dump.path, None)
        if replaced is not None:
            _header_cache_bytes -= replaced[1].header_length
        _header_cache[dump.path] = (identity, dump)
        _header_cache_bytes += dump.header_length
        while len(_header_cache) > 1 and (len(_header_cache) > _HEADER_CACHE_SIZE
                                          or _header_cache_bytes > _HEADER_CACHE_BYTES):
            _header_cache_bytes -= _header_cache.popitem(last=False)[1][1].header_length
