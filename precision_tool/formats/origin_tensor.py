"""A dump tensor as TensorFlow saw it: device layout undone, original shape restored.

The origin *format* is chosen in this order: 1. an explicit ``origin_format`` (user flag, or the GE graph's);
2. the header's ``OriginalOp.format`` when not 0 (its proto3 default, which NCHW shares); 3. the first of the stored
format's :data:`CANDIDATES` (NHWC before NCHW, HWCN for weights) whose device shape equals the stored shape,
``ambiguous`` when more than one does. Plain formats are only reshaped (same element count). A device-layout tensor
without an original shape comes back as stored, with a note; a ``DT_UNDEFINED`` tensor comes back as its raw bytes
(flat int8, layout ``ND``) with :func:`~.dump_file.raw_bytes_note` as its note. See
docs/internals/formats.md#origin_tensor.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterator, Optional, Tuple

import numpy as np

from precision_tool.errors import LayoutError
from precision_tool.formats import dtypes, layouts
from precision_tool.formats.dump_file import (DumpFile, Payloads, TensorEntry, can_map, map_tensor, raw_bytes_note,
                                               read_stored_block, read_tensor, read_tensor_chunks)
from precision_tool.formats.origin_slabs import origin_slabs

RAW_BYTES_LAYOUT = "ND"  # the layout of a DT_UNDEFINED tensor as read: a flat array of its bytes
KEPT_AS_STORED = "kept as stored"  # the note of a tensor read with keep_layout (or with no origin layout to go to)

# Stored (device) format -> origin formats to try, most likely for a TensorFlow model first.
CANDIDATES = {
    "NC1HWC0": ("NHWC", "NCHW", "HWCN"),
    "FRACTAL_Z": ("HWCN", "NHWC", "NCHW"),
    "NDC1HWC0": ("NDHWC", "NCDHW"),
    "FRACTAL_NZ": ("ND",),
}


@dataclass(frozen=True)
class OriginTensor:
    """The decoded array and how it was decoded.

    ``origin_format`` is the format of ``array`` (the stored format when nothing was converted);
    ``note`` says what was assumed or why the layout was kept ("" when nothing needs saying).
    """

    array: np.ndarray
    origin_format: str
    converted: bool
    ambiguous: bool = False
    note: str = ""


def choose_origin_format(entry: TensorEntry, origin_format: Optional[str] = None):
    """``(format, ambiguous, how)`` for ``entry``: see the module docstring for the order of sources.

    Returns ``(None, False, reason)`` when no origin format fits the stored shape.
    """
    stored = layouts.format_of(entry.format_code)
    if origin_format:
        return layouts.format_of(origin_format), False, "given"
    header_format = entry.original_format_code
    if header_format:
        return layouts.format_of(header_format), False, "from the dump header"
    candidates = CANDIDATES.get(stored)
    if candidates is None:
        return stored, False, "plain format"
    c0 = entry.shape[-1] if entry.shape else 16
    fitting = [fmt for fmt in candidates if _fits(entry, fmt, stored, c0)]
    if not fitting:
        return None, False, (f"no origin format among {', '.join(candidates)} gives stored shape "
                             f"{layouts.shape_text(entry.shape)} from original shape "
                             f"{layouts.shape_text(entry.original_shape or ())}")
    return fitting[0], len(fitting) > 1, "inferred from the shapes"


def has_original_shape(entry: TensorEntry) -> bool:
    """Whether the header gives a shape to convert to: an original shape, and not ``[]`` for a tensor stored with
    dimensions (a header that leaves the field empty). Without one, :func:`read_origin_tensor` keeps the stored
    array."""
    return entry.original_shape is not None and not (entry.original_shape == () and entry.shape != ())


def shown_shape(entry: TensorEntry) -> Tuple[int, ...]:
    """The shape :func:`read_origin_tensor` gives a tensor it does not convert: the original shape when the header
    has one (:func:`has_original_shape`), else the stored shape."""
    original = entry.original_shape
    return tuple(original) if original is not None and has_original_shape(entry) else tuple(entry.shape)


def in_stored_order(entry: TensorEntry, origin_format: Optional[str] = None) -> bool:
    """True when :func:`read_origin_tensor` would only reshape ``entry`` (a plain stored format whose origin is the
    same or a reshape of it): its payload bytes are then the tensor's elements in origin order, and can be read
    a piece at a time (:func:`~precision_tool.formats.dump_file.read_tensor_chunks`)."""
    if entry.is_raw_bytes or entry.storage_dtype is None or entry.dtype_code == dtypes.DT_BF16:
        return False
    stored = layouts.format_of(entry.format_code)
    if stored in CANDIDATES:
        return False
    fmt, _, _ = choose_origin_format(entry, origin_format)
    return fmt == stored or (fmt is not None and layouts.is_reshape_pair(stored, fmt))


def _fits(entry: TensorEntry, origin: str, stored: str, c0: int) -> bool:
    if entry.original_shape is None:
        return False  # no shape to lay out (device_shape would raise LayoutError)
    try:
        return tuple(layouts.device_shape(entry.original_shape, origin, stored, c0=c0)) == tuple(entry.shape)
    except LayoutError:
        return False


def read_origin_tensor(dump_file: DumpFile, entry: TensorEntry, origin_format: Optional[str] = None,
                       keep_layout: bool = False, dtype=None, mapped: bool = False,
                       payloads: Optional[Payloads] = None) -> OriginTensor:
    """Read ``entry``'s payload and convert it to its origin format and original shape.

    ``keep_layout=True`` returns the stored array untouched. ``dtype`` is only for a device layout that is
    converted: the converted array is built in that dtype in the same pass as the layout copy (the
    comparison asks for float64, which it would otherwise make with a second pass); every other array keeps
    the stored dtype. A ``DT_UNDEFINED`` tensor is returned as raw bytes with a note (module docstring). Raises
    :class:`LayoutError` when the shapes contradict each other, and the dump reader's errors for unreadable
    payloads. ``mapped=True``: an array in stored order is a read-only memory map
    (:func:`~precision_tool.formats.dump_file.map_tensor`) whose pages are read only when indexed -- for ``pt`` and
    ``cp`` slices; a converted layout is read whole either way. ``payloads``: the file's payload bytes when the
    caller has read them already (:func:`~precision_tool.formats.dump_file.read_payloads`); an array in stored
    order is then a read-only view of them.
    """
    if entry.is_raw_bytes:
        return OriginTensor(read_tensor(dump_file, entry, payloads), RAW_BYTES_LAYOUT, converted=False,
                            note=raw_bytes_note(entry))
    stored_format = layouts.format_of(entry.format_code)
    array = map_tensor(dump_file, entry) if mapped and can_map(entry) else read_tensor(dump_file, entry, payloads)
    if keep_layout:
        return OriginTensor(array, stored_format, converted=False, note=KEPT_AS_STORED)
    if not has_original_shape(entry):
        if stored_format in CANDIDATES:
            return OriginTensor(array, stored_format, converted=False,
                                note=f"kept {stored_format}: the header has no original shape")
        return OriginTensor(array, stored_format, converted=False)
    fmt, ambiguous, how = choose_origin_format(entry, origin_format)
    if fmt is None:
        raise LayoutError(f"{entry.label}: {how}")
    widen = dtype if fmt != stored_format else None
    converted = layouts.to_origin(array, stored_format, fmt, shown_shape(entry), dtype=widen)
    note = _assumed_note(fmt, ambiguous, how)
    return OriginTensor(np.ascontiguousarray(converted), fmt, converted=fmt != stored_format or
                        converted.shape != array.shape, ambiguous=ambiguous, note=note)


def _assumed_note(fmt: str, ambiguous: bool, how: str) -> str:
    return f"assumed {fmt} ({how}; another layout fits too)" if ambiguous else ""


@dataclass(frozen=True)
class OriginPieces:
    """A tensor read a piece at a time in origin order: what :func:`read_origin_tensor` gives, without holding it.

    ``pieces()`` yields flat arrays of the stored dtype, in origin order, together every element once; each is
    valid until the next is asked for. ``shape`` and ``note`` are :func:`read_origin_tensor`'s.
    """

    shape: Tuple[int, ...]
    dtype: np.dtype
    note: str
    pieces: Callable[[], Iterator[np.ndarray]]


def origin_pieces(dump_file: DumpFile, entry: TensorEntry, origin_format: Optional[str], size: int
                  ) -> Optional[OriginPieces]:
    """``entry`` as pieces of about ``size`` elements in origin order (:class:`OriginPieces`), so a tensor of any
    size is compared in fixed memory; ``None`` when it cannot be read so and :func:`read_origin_tensor` must read it
    whole (bf16, raw bytes, FRACTAL_Z, a device layout without an original shape or whose layout does not fit).

    In stored order (:func:`in_stored_order`) the payload is read ``size`` elements at a time by offset. A device
    layout is cut into slabs (:mod:`~precision_tool.formats.origin_slabs`); each is read alone
    (:func:`~precision_tool.formats.dump_file.read_stored_block`) and converted alone.
    """
    storage = entry.storage_dtype
    if storage is None or not can_map(entry):
        return None
    if in_stored_order(entry, origin_format):
        return OriginPieces(shown_shape(entry), storage, "", lambda: read_tensor_chunks(dump_file, entry, size))
    stored_format = layouts.format_of(entry.format_code)
    if stored_format not in CANDIDATES or not has_original_shape(entry):
        return None
    fmt, ambiguous, how = choose_origin_format(entry, origin_format)
    if fmt is None:
        return None
    shape = shown_shape(entry)
    slabs = origin_slabs(entry.shape, stored_format, fmt, shape, size)
    if slabs is None:
        return None

    def pieces() -> Iterator[np.ndarray]:
        for slab in slabs:
            block = read_stored_block(dump_file, entry, slab.stored_index)
            yield layouts.to_origin(block, stored_format, fmt, slab.origin_shape).reshape(-1)

    return OriginPieces(shape, storage, _assumed_note(fmt, ambiguous, how), pieces)
