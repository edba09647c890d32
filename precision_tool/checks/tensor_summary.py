"""Per-tensor statistics of dump files for the checks: one tensor read at a time, in its origin layout.

The numbers themselves (max, min, mean over the finite values, inf/NaN and fp16-saturation counts, streamed
in chunks) come from :func:`precision_tool.metrics.array_stats.array_stats`; this module decides which
array to summarise (origin layout, so device padding does not count) and records how.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Tuple

import numpy as np

from precision_tool.errors import LayoutError
from precision_tool.formats.dump_file import DumpFile, TensorEntry, raw_bytes_note, read_tensor
from precision_tool.formats.origin_tensor import RAW_BYTES_LAYOUT, read_origin_tensor
from precision_tool.formats.tensor_kind import TensorKind
from precision_tool.metrics.array_stats import array_stats


@dataclass(frozen=True)
class TensorSummary:
    """Statistics of one input or output of a dump file.

    Attributes
    ----------
    kind, index : :data:`~precision_tool.formats.tensor_kind.INPUT` or ``OUTPUT``, and the position among them.
    dtype : numpy name (``"float16"``) or CANN's (``"DT_STRING"``) when numpy cannot hold it; ``"DT_UNDEFINED"``
        for a tensor of unknown type, whose statistics are then those of its raw bytes as int8 (``note`` says so).
    layout, shape : the layout and shape the statistics were taken in: the origin layout (``"NHWC"``) when
        the tensor could be converted back, else as stored (``note`` says why).
    size : element count.
    max, min, mean : over the finite values; ``None`` when there are none (or the tensor is not numeric).
    inf, nan, saturated : counts; ``saturated`` is fp16 only (``|x| == 65504``).
    first_non_finite : index (in ``shape``) of the first inf/NaN element, ``None`` when there is none.
    note : one line: why the tensor was kept as stored, that its type is unknown (raw bytes), or why it could
        not be read.
    """

    kind: TensorKind
    index: int
    dtype: str
    layout: str
    shape: Tuple[int, ...]
    size: int = 0
    max: Optional[float] = None
    min: Optional[float] = None
    mean: Optional[float] = None
    inf: int = 0
    nan: int = 0
    saturated: int = 0
    first_non_finite: Optional[Tuple[int, ...]] = None
    note: str = ""

    @property
    def label(self) -> str:
        """``"output 0"``."""
        return f"{self.kind} {self.index}"

    @property
    def non_finite(self) -> int:
        return self.inf + self.nan

    @property
    def readable(self) -> bool:
        """False when the payload could not be read or decoded (``note`` says why)."""
        return not self.note.startswith("unreadable")

    def to_dict(self) -> dict:
        return {"kind": self.kind, "index": self.index, "dtype": self.dtype, "layout": self.layout,
                "shape": list(self.shape), "size": self.size, "max": self.max, "min": self.min,
                "mean": self.mean, "inf": self.inf, "nan": self.nan, "saturated": self.saturated,
                "first_non_finite": None if self.first_non_finite is None else list(self.first_non_finite),
                "note": self.note}


def summarize_entry(dump: DumpFile, entry: TensorEntry, *, origin_layout: bool = True) -> TensorSummary:
    """Read one tensor of ``dump`` and summarise it (see :class:`TensorSummary`); never raises for bad data.

    With ``origin_layout`` the tensor is converted to its origin layout first, so device padding does not
    count; when that fails the stored tensor is summarised and ``note`` says so. A payload that cannot be
    read at all gives a summary with ``note = "unreadable: ..."`` and no statistics.
    """
    from precision_tool.errors import PrecisionToolError

    dtype = entry.numpy_dtype.name if entry.numpy_dtype is not None and not entry.is_raw_bytes else entry.dtype_name
    note = ""
    try:
        if origin_layout:
            try:
                decoded = read_origin_tensor(dump, entry)
                array, layout = decoded.array, decoded.origin_format
                note = decoded.note if decoded.note.startswith("kept") or entry.is_raw_bytes else ""
            except LayoutError as error:
                array, layout = read_tensor(dump, entry), entry.format_name
                note = f"kept {entry.format_name}: {error}"
        else:
            array, note = read_tensor(dump, entry), raw_bytes_note(entry)
            layout = RAW_BYTES_LAYOUT if entry.is_raw_bytes else entry.format_name
    except PrecisionToolError as error:
        return TensorSummary(entry.kind, entry.index, dtype, entry.format_name, tuple(entry.shape),
                             note=f"unreadable: {error}")
    stats = array_stats(array)
    first = None
    if stats.first_non_finite_flat is not None:
        first = tuple(int(i) for i in np.unravel_index(stats.first_non_finite_flat, array.shape))
    return TensorSummary(entry.kind, entry.index, dtype, layout, tuple(array.shape), stats.size, stats.max,
                         stats.min, stats.mean, stats.inf, stats.nan, stats.saturated, first, note)


def summarize_dump(dump: DumpFile, *, origin_layout: bool = True) -> Tuple[TensorSummary, ...]:
    """:func:`summarize_entry` for every input, then every output, one tensor in memory at a time."""
    return tuple(summarize_entry(dump, entry, origin_layout=origin_layout) for entry in dump.tensors)
