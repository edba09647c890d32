"""Pieces of a device-layout tensor that convert, one at a time, to consecutive runs of its origin order.

A tensor too large to convert whole (:func:`~precision_tool.formats.layouts.to_origin` copies it) is compared a
piece at a time. A *slab* is a part of the stored array -- an index of whole blocks -- that
:func:`~precision_tool.formats.layouts.to_origin` turns into the next ``prod(slab.origin_shape)`` elements of the
tensor in origin order: the slabs of a tensor, in turn, give every origin element once, in order.

How the origin is cut. Origin axes map to stored axes: a plain axis to one stored axis (N, D, H, W, batch axes),
a blocked axis to its block-count axis (C to C1 in blocks of C0; FRACTAL_NZ's M to M1 in blocks of 16 and N to N1
in blocks of C0). A slab takes one index of each origin axis before a *split axis* ``a``, a range of whole blocks
of axis ``a``, and all of every later axis -- a run of the origin's flat order. The split axis is the first whose
one block, times everything after it, fits ``limit`` elements; it never lies beyond the first blocked axis (a
single channel of a C0 block is not a whole block), so a slab of an NCHW tensor stored NC1HWC0 holds at least one
channel block (C0 x H x W elements) whatever ``limit`` is.

Examples: NC1HWC0 ``[1, 4, 1024, 1024, 16]`` as NHWC ``[1, 1024, 1024, 64]`` is cut into runs of rows
``[0, h0:h1, :, :]`` (stored ``[0:1, :, h0:h1, :, :]``); FRACTAL_NZ ``[N1, M1, 16, 16]`` as ND ``[M, N]`` into
runs of 16-row blocks. FRACTAL_Z (weights: its first stored axis mixes C1, H and W) has no slabs: ``None``.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import List, Optional, Sequence, Tuple

from precision_tool.compat import prod
from precision_tool.formats.device_layouts import CUBE_BLOCK, DEVICE_LAYOUTS

@dataclass(frozen=True)
class Slab:
    """``stored_index`` of the stored array converts, as ``origin_shape``, to the next run of the origin order."""

    stored_index: Tuple[slice, ...]
    origin_shape: Tuple[int, ...]

    @property
    def size(self) -> int:
        return prod(self.origin_shape)

def _axis_map(stored_format: str, origin_format: str, origin_rank: int, c0: int) -> Optional[List[Tuple[int, int]]]:
    """``[(stored axis, block), ...]`` per origin axis, or ``None`` when the layout has no slabs."""
    layout = DEVICE_LAYOUTS.get(stored_format)
    if layout is None or stored_format == "FRACTAL_Z":
        return None
    if layout.logical is None:  # FRACTAL_NZ: [..., M, N] stored [..., N1, M1, 16, C0]
        if origin_rank < 2:
            return None
        batch = origin_rank - 2
        return [(axis, 1) for axis in range(batch)] + [(batch + 1, CUBE_BLOCK), (batch, c0)]
    if len(origin_format) != origin_rank or sorted(origin_format) != sorted(layout.logical):
        return None
    return [(layout.logical.index(letter), c0 if letter == "C" else 1) for letter in origin_format]

def origin_slabs(stored_shape: Sequence[int], stored_format: str, origin_format: str, origin_shape: Sequence[int],
                 limit: int) -> Optional[List[Slab]]:
    """The slabs of a tensor stored as ``stored_format`` ``stored_shape`` whose origin is ``origin_format``
    ``origin_shape`` (the module docstring), each of about ``limit`` origin elements or fewer where the geometry
    allows; ``None`` for a layout without slabs (FRACTAL_Z, a rank-1 FRACTAL_NZ origin) and an empty tensor.
    Formats are canonical names (:func:`~precision_tool.formats.layouts.format_of`); shapes are not checked here
    -- :func:`~precision_tool.formats.layouts.to_origin` checks each slab's."""
    shape = tuple(int(d) for d in origin_shape)
    if not shape or not stored_shape or prod(shape) == 0:
        return None
    axes = _axis_map(stored_format, origin_format, len(shape), int(stored_shape[-1]))
    if axes is None:
        return None
    last = next((i for i, (_, block) in enumerate(axes) if block > 1), len(shape) - 1)
    split = last
    for a in range(last + 1):
        if axes[a][1] * prod(shape[a + 1:]) <= limit:
            split = a
            break
    stored_axis, block = axes[split]
    tail = prod(shape[split + 1:])
    step = shape[split] if shape[split] * tail <= limit else block * max(1, limit // (block * tail))
    slabs = []
    for outer in _indices(shape[:split]):
        for start in range(0, shape[split], step):
            stop = min(start + step, shape[split])
            index = [slice(None)] * len(stored_shape)
            for (axis, _), i in zip(axes, outer):
                index[axis] = slice(i, i + 1)
            index[stored_axis] = slice(start // block, -(-stop // block))
            slabs.append(Slab(tuple(index), (1,) * split + (stop - start,) + shape[split + 1:]))
    return slabs

def _indices(shape: Sequence[int]):
    """Every index of ``shape`` in C order (one empty index for ``()``)."""
    if not shape:
        yield ()
        return
    for head in range(shape[0]):
        for rest in _indices(shape[1:]):
            yield (head,) + rest

__all__ = ["Slab", "origin_slabs"]
