"""Load the tensors a ``pt``/``cp`` argument names (see :mod:`.tensor_spec` for the forms).

Dump tensors come back in their origin layout and shape, as ``dc`` writes them: the layout from the GE graph's desc
when the dump file belongs to the run's dump folder and its op is in the graph, else from the dump header (the rules
of :class:`~precision_tool.alignment.NpuTensorRef`); ``keep_layout=True`` returns the stored array. With a slice, a
tensor held in stored order (ND, a reshape of it, ``.npy`` files, ``--keep-layout``) is memory-mapped, so only the
pages the slice covers are read; a device layout that must be converted is read whole first. Without a slice the
array is the memory map itself, read in chunks by :func:`~precision_tool.metrics.array_stats.array_stats`, never as
one copy. See docs/commands.md#pt.
"""
from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass
from typing import List, Tuple

import numpy as np

from precision_tool.commands.tensor_spec import (ParsedSpec, TensorChoice, choose_tensor_file, parse_slice,
                                                 parse_tensor_spec)
from precision_tool.errors import LayoutError, UsageError
from precision_tool.formats.layouts import shape_text
from precision_tool.formats.tensor_kind import INPUT, OUTPUT


@dataclass(frozen=True)
class LoadedTensor:
    """One tensor read from disk.

    ``label`` names it (``conv1/Conv2D:output:0`` or the ``.npy`` file name); ``stored`` describes it as
    stored (``float16 NC1HWC0 [1, 1, 4, 4, 16]``); ``layout`` is the layout of ``array`` (``""`` for npy);
    ``note`` says what was assumed; ``dtype`` is a dump tensor's stored dtype name (``"bfloat16"`` although
    ``array`` is float32), ``""`` for npy. ``array`` is the part ``slice_text`` selects (``""``: the whole
    tensor, whose shape is ``whole_shape``); it may be a read-only memory map.
    """

    label: str
    path: str
    array: np.ndarray
    stored: str
    layout: str = ""
    note: str = ""
    dtype: str = ""
    slice_text: str = ""
    whole_shape: Tuple[int, ...] = ()

    @property
    def shown_label(self) -> str:
        """The label with its slice: ``conv1/Conv2D:output:0[0, :4]``."""
        return self.label + self.slice_text


def load_tensors(text: str, lookup, keep_layout: bool = False) -> Tuple[ParsedSpec, List[LoadedTensor]]:
    """Every tensor ``text`` names (a bare dump file or op gives all its inputs and outputs), each sliced by the
    slice in ``text`` if any."""
    spec = parse_tensor_spec(text)
    choice = choose_tensor_file(spec, lookup)
    if choice.kind == "npy":
        tensors = [_load_npy(choice.path)]
    else:
        tensors = _load_dump(choice, lookup, keep_layout)
    return spec, [select(tensor, spec.slice_text) for tensor in tensors]


def load_one_tensor(text: str, lookup, keep_layout: bool = False) -> Tuple[ParsedSpec, LoadedTensor, str]:
    """The single tensor ``text`` names, sliced by its slice if any: a whole dump file or op means its output 0
    (said in the note)."""
    spec = parse_tensor_spec(text)
    choice = choose_tensor_file(spec, lookup)
    if choice.kind == "npy":
        return spec, select(_load_npy(choice.path), spec.slice_text), ""
    note = ""
    if choice.index is None:
        choice = TensorChoice(choice.path, OUTPUT, 0, choice.op)
        note = f"{spec.base}: compared its output 0 (name another with :output:K or :input:K)"
    return spec, select(_load_dump(choice, lookup, keep_layout)[0], spec.slice_text), note


def select(tensor: LoadedTensor, slice_text: str) -> LoadedTensor:
    """``tensor`` with ``array`` cut to ``slice_text`` (``"[0, :4]"``; ``""`` keeps it whole) as an in-memory
    copy: reading only the pages it covers when the array is mapped. A slice that does not fit the shape is a
    :class:`UsageError` naming the tensor and its shape."""
    if not slice_text:
        return tensor
    try:
        part = np.array(tensor.array[parse_slice(slice_text)])
    except (IndexError, ValueError, TypeError) as error:
        raise UsageError(f"slice {slice_text} does not fit {tensor.label} of shape "
                         f"{shape_text(tensor.array.shape)}: {error}") from None
    return dataclasses.replace(tensor, array=part, slice_text=slice_text)


def _load_npy(path: str) -> LoadedTensor:
    from precision_tool.formats.npy_dir import map_npy

    array = map_npy(path)
    return LoadedTensor(os.path.basename(path), path, array, f"npy {array.dtype} {list(array.shape)}",
                        whole_shape=tuple(array.shape))


def _load_dump(choice: TensorChoice, lookup, keep_layout: bool) -> List[LoadedTensor]:
    from precision_tool.formats.dump_file import read_dump_header

    dump = read_dump_header(choice.path)
    kind = choice.tensor_kind
    if kind is not None and choice.index is not None:
        entries = [dump.tensor(kind, choice.index)]
    else:
        entries = list(dump.tensors)
    if not entries:
        raise UsageError(f"{choice.path}: the dump file holds no input or output tensor")
    node = choice.op if choice.op is not None else _graph_node(dump, choice.path, lookup)
    loaded = []
    for entry in entries:
        ref = npu_tensor_ref(choice.path, dump, entry, node)
        try:
            decoded = ref.load(keep_layout=keep_layout, mapped=True)
        except LayoutError as error:  # the shapes of the header contradict: say which file and tensor
            raise LayoutError(f"{choice.path}: {entry.label}: {error}", "--keep-layout shows it as stored") from None
        stored = f"{ref.dtype} {entry.stored_text}"
        loaded.append(LoadedTensor(ref.tensor_id, choice.path, decoded.array, stored, decoded.origin_format,
                                   decoded.note, ref.dtype, whole_shape=tuple(decoded.array.shape)))
    return loaded


def _graph_node(dump, path: str, lookup):
    """The graph op of a dump file that lies in the run's dump folder (another run's graph could differ)."""
    inside = os.path.realpath(path).startswith(os.path.realpath(lookup.dump_dir) + os.sep)
    if not inside or not dump.op_name:
        return None
    model = lookup.graph_model(required=False)
    return model.find_op(dump.op_name) if model is not None else None


def npu_tensor_ref(path: str, dump, entry, node):
    """The :class:`~precision_tool.alignment.NpuTensorRef` of one entry of a dump file, with the origin
    layout and shape from ``node``'s desc when there is a node (the alignment's own rule)."""
    from precision_tool.alignment import NpuTensorRef
    from precision_tool.alignment.npu_side import input_desc, origin_of
    from precision_tool.formats.dump_file import dtype_label
    from precision_tool.formats.dump_names import DumpName, parse_any_dump_name

    desc = None
    if node is not None:
        desc = input_desc(node, entry.index) if entry.kind == INPUT else (
            node.output_descs[entry.index] if entry.index < len(node.output_descs) else None)
    fmt, shape, fmt_from, shape_from = origin_of(desc, entry)
    name = parse_any_dump_name(os.path.basename(path))  # an exception dump's: a Lite name has no op
    file_op_name = name.op_name if name is not None else ""
    op_name = node.name if node is not None else (dump.op_name or file_op_name or os.path.basename(path))
    op_type = node.type if node is not None else (name.op_type if name is not None else "")
    timestamp = name.timestamp if isinstance(name, DumpName) else 0  # microseconds: normal dump names only
    return NpuTensorRef(path, op_name, op_type, entry.kind, entry.index, timestamp,
                        dtype_label(entry.dtype_code), entry.shape, fmt, shape, fmt_from, shape_from)

