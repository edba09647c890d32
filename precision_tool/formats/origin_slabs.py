"""Pieces of a device-layout tensor that convert, one at a time, to consecutive runs of its origin order.

A tensor too large to convert whole is compared a piece at a time. A *slab* is a part of the stored array -- an
index of whole blocks -- that :func:`~precision_tool.formats.layouts.to_origin` turns into the next
``prod(slab.origin_shape)`` elements of the tensor in origin order: the slabs of a tensor, in turn, give every origin
element once, in order. A slab takes one index of each origin axis before a *split axis*, a range of whole blocks of
that axis, and all of every later axis. FRACTAL_Z (weights) has no slabs: ``None``. How the origin is cut, with
examples: docs/internals/formats.md#origin_slabs.
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
    ``origin_shape`` (docs/internals/formats.md#origin_slabs), each of about ``limit`` origin elements or fewer
    where the geometry allows; ``None`` for a layout without slabs (FRACTAL_Z, a rank-1 FRACTAL_NZ origin) and an
    empty tensor. Formats are canonical names (:func:`~precision_tool.formats.layouts.format_of`); shapes are not
    checked here -- :func:`~precision_tool.formats.layouts.to_origin` checks each slab's."""
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
