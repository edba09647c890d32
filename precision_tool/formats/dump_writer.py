"""Ascend op dump files, written: :func:`write_dump` and :func:`build_dump_bytes` (tests, samples, the emulator).

The layout is the one :mod:`precision_tool.formats.dump_file` reads (``ascend-formats.md`` §1): uint64
header length, a serialized ``DumpData`` header, then every input, output, buffer and workspace payload.
"""
from __future__ import annotations

import os
import struct
import time
from dataclasses import dataclass
from typing import Iterable, Mapping, Optional, Sequence, Tuple, Union

import numpy as np

from precision_tool.fileio import atomic_write
from precision_tool.formats import dtypes
from precision_tool.formats.dump_schema import DumpData

DEFAULT_VERSION = "2.0"
FORMAT_ND = dtypes.FORMAT_BY_NAME["ND"]


@dataclass(frozen=True, eq=False)
class TensorSpec:
    """One input or output for :func:`write_dump`.

    Parameters
    ----------
    array : the values, already in their stored (device) layout and shape. Written C-order,
        little-endian.
    format : layout code or name (``3`` or ``"NC1HWC0"``); default ND.
    original_shape : shape before the device layout; ``None`` writes none.
    original_op : ``(tf_op_name, output_index)`` for outputs of fused ops; outputs only.
    original_format : origin layout (code or name) written as ``OriginalOp.format``; outputs only.
    dtype_code : CANN data type when the array's dtype does not say it, e.g. ``27`` (bf16) for an
        array of uint16 bits. Must have the array's item size when numpy holds that type.
    size : payload bytes to declare AND write instead of ``array.nbytes``: larger pads with zeros,
        smaller truncates (a deliberately bad file, for tests).
    shape : header shape to declare instead of ``array.shape`` (a deliberately lying header, for tests).
    sub_format, address : written as given.
    """

    array: np.ndarray
    format: Union[int, str] = FORMAT_ND
    original_shape: Optional[Sequence[int]] = None
    original_op: Optional[Tuple[str, int]] = None
    original_format: Optional[Union[int, str]] = None
    dtype_code: Optional[int] = None
    size: Optional[int] = None
    shape: Optional[Sequence[int]] = None
    sub_format: int = 0
    address: int = 0


def _as_spec(item: Union[TensorSpec, np.ndarray]) -> TensorSpec:
    return item if isinstance(item, TensorSpec) else TensorSpec(np.asarray(item))


def _format_code(value: Union[int, str]) -> int:
    if isinstance(value, str):
        try:
            return dtypes.FORMAT_BY_NAME[value.upper().replace("FORMAT_", "", 1)]
        except KeyError:
            raise ValueError(f"unknown format name {value!r}") from None
    return int(value)


def _payload_bytes(spec: TensorSpec) -> Tuple[int, bytes]:
    """(dtype code, payload bytes exactly as they go into the file)."""
    array = np.asarray(spec.array)
    if array.dtype.byteorder == ">":
        array = array.astype(array.dtype.newbyteorder("<"))
    if spec.dtype_code is None:
        code = dtypes.dtype_code(array.dtype)
    else:
        code = int(spec.dtype_code)
        holder = dtypes.numpy_dtype(code)
        if holder is not None and holder.itemsize != array.dtype.itemsize:
            raise ValueError(f"dtype_code {code} ({dtypes.dtype_name(code)}) has item size {holder.itemsize}, "
                             f"the array's dtype {array.dtype} has {array.dtype.itemsize}")
    data = np.ascontiguousarray(array).tobytes()
    if spec.size is not None:
        data = data[: spec.size].ljust(spec.size, b"\0")
    return code, data


def _fill_tensor(message, spec: TensorSpec, is_output: bool) -> bytes:
    code, data = _payload_bytes(spec)
    message.data_type = code
    message.format = _format_code(spec.format)
    shape = np.shape(spec.array) if spec.shape is None else spec.shape
    message.shape.SetInParent()
    message.shape.dim.extend(int(dim) for dim in shape)
    message.size = len(data)
    if spec.original_shape is not None:
        message.original_shape.SetInParent()
        message.original_shape.dim.extend(int(dim) for dim in spec.original_shape)
    if spec.original_op is not None:
        if not is_output:
            raise ValueError("original_op is only written for outputs")
        name, output_index = spec.original_op
        message.original_op.name = name
        message.original_op.output_index = int(output_index)
    if spec.original_format is not None:
        if not is_output:
            raise ValueError("original_format is only written for outputs")
        message.original_op.format = _format_code(spec.original_format)
        message.original_op.data_type = code
    message.sub_format = int(spec.sub_format)
    message.address = int(spec.address)
    return data


def build_dump_bytes(
    op_name: str,
    inputs: Iterable[Union[TensorSpec, np.ndarray]] = (),
    outputs: Iterable[Union[TensorSpec, np.ndarray]] = (),
    *,
    dump_time: Optional[int] = None,
    version: str = DEFAULT_VERSION,
    buffers: Iterable[bytes] = (),
    spaces: Iterable[bytes] = (),
    attrs: Union[Mapping[str, str], Iterable[Tuple[str, str]]] = (),
) -> bytes:
    """The complete bytes of a dump file (see :func:`write_dump` for the parameters)."""
    if dump_time is None:
        dump_time = time.time_ns() // 1000
    message = DumpData(version=version, dump_time=int(dump_time), op_name=op_name)
    input_data = [_fill_tensor(message.input.add(), _as_spec(spec), False) for spec in inputs]
    output_data = [_fill_tensor(message.output.add(), _as_spec(spec), True) for spec in outputs]
    buffers, spaces = [bytes(blob) for blob in buffers], [bytes(blob) for blob in spaces]
    for blob in buffers:
        message.buffer.add(buffer_type=0, size=len(blob))
    for blob in spaces:
        message.space.add(type=0, size=len(blob))
    pairs = attrs.items() if isinstance(attrs, Mapping) else attrs
    for name, value in pairs:
        message.attr.add(name=name, value=value)
    header = message.SerializeToString()
    return b"".join([struct.pack("<Q", len(header)), header, *input_data, *output_data, *buffers, *spaces])


def write_dump(
    path: Union[str, os.PathLike],
    op_name: str,
    inputs: Iterable[Union[TensorSpec, np.ndarray]] = (),
    outputs: Iterable[Union[TensorSpec, np.ndarray]] = (),
    *,
    dump_time: Optional[int] = None,
    version: str = DEFAULT_VERSION,
    buffers: Iterable[bytes] = (),
    spaces: Iterable[bytes] = (),
    attrs: Union[Mapping[str, str], Iterable[Tuple[str, str]]] = (),
) -> str:
    """Write an op dump file at ``path``, atomically (temp file in the same folder, then ``os.replace``).

    Parameters
    ----------
    path : destination; its folder must exist. Name it with
        :func:`precision_tool.formats.dump_names.build_dump_name` to make it findable.
    op_name : the GE op name stored in the header (unsanitised, e.g. ``"scope/conv1"``).
    inputs, outputs : :class:`TensorSpec` or plain arrays (ND, dtype from the array).
    dump_time : microseconds since the epoch, stored in the header; default now.
    buffers, spaces : raw bytes of L1 buffers and LOG workspaces, written after the outputs.
    attrs : ``{name: value}`` or pairs; ``attr[0].value`` is JSON thread info for FFTS+ ops.

    Returns
    -------
    str
        ``path`` as a string.
    """
    path = os.fspath(path)
    content = build_dump_bytes(op_name, inputs, outputs, dump_time=dump_time, version=version,
                               buffers=buffers, spaces=spaces, attrs=attrs)
    with atomic_write(path) as handle:
        handle.write(content)
    return path
