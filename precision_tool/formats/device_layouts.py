"""The four blocked Ascend device layouts: their index formulas, shapes, packing and unpacking.

- NC1HWC0 (N, C, H, W): ``[N, C1, H, W, C0]``; (n, c, h, w) at ``[n, c//C0, h, w, c%C0]``. NDC1HWC0: D after N.
- FRACTAL_Z (weights N, C, H, W): ``[C1*H*W, N1, 16, C0]``; (n, c, h, w) at ``[(c//C0)*H*W+h*W+w, n//16, n%16, c%C0]``.
- FRACTAL_NZ (``[..., M, N]``): ``[..., N1, M1, 16, C0]``; (..., m, n) at ``[..., n//C0, m//16, m%16, n%C0]``.

with ``C1 = ceil(C/C0)``, ``N1 = ceil(N/16)`` (FRACTAL_Z) or ``ceil(N/C0)`` (FRACTAL_NZ), ``M1 = ceil(M/16)``;
padding is zeros. Packing takes C0 (default 16); unpacking reads it from the stored array's last axis.
See docs/internals/formats.md#device_layouts.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, List, Sequence

import numpy as np

C0_DEFAULT = 16
CUBE_BLOCK = 16  # N0 of FRACTAL_Z and M0 of FRACTAL_NZ


def ceil_div(size: int, block: int) -> int:
    """Blocks of ``block`` needed to hold ``size`` elements (``ceil_div(0, 16) == 0``)."""
    return -(-size // block)


@dataclass(frozen=True)
class StoredAxis:
    """One axis of a stored (device) shape, as expected from the origin shape.

    ``explain(got)`` says, in a few words, why a stored size ``got`` cannot hold the origin tensor.
    """

    label: str
    size: int
    explain: Callable[[int], str]


def _plain_axis(label: str, size: int) -> StoredAxis:
    return StoredAxis(label, size, lambda got: f"{label}={got} but the origin shape has {label}={size}")


def _block_count_axis(label: str, whole: int, block: int, noun: str) -> StoredAxis:
    need = ceil_div(whole, block)

    def explain(got: int) -> str:
        if got < need:
            return f"{label}={got} holds at most {got * block} {noun}, not {whole}"
        return f"{label}={got} is more than the {need} needed for {whole} {noun}"

    return StoredAxis(label, need, explain)


def _block_axis(label: str, block: int) -> StoredAxis:
    return StoredAxis(label, block, lambda got: f"{label}={got} but this layout's {label} is {block}")


def _pad_axes(array: np.ndarray, targets: Sequence[int]) -> np.ndarray:
    """Pad each axis of ``array`` at its end with zeros up to ``targets`` (same rank)."""
    widths = [(0, target - size) for size, target in zip(array.shape, targets)]
    if not any(after for _, after in widths):
        return array
    return np.pad(array, widths, mode="constant", constant_values=0)


class ChannelSplitLayout:
    """NC1HWC0 (logical NCHW) and NDC1HWC0 (logical NDCHW): C split into C1 blocks of C0, C0 innermost.

    The stored shape is the logical shape with C replaced by C1, then C0 appended:
    ``NC1HWC0 = [N, C1, H, W, C0]``, ``NDC1HWC0 = [N, D, C1, H, W, C0]``.
    """

    def __init__(self, name: str, logical: str):
        self.name = name
        self.logical = logical
        self._c = logical.index("C")

    def stored_axes(self, dims: Sequence[int], c0: int) -> List[StoredAxis]:
        """Expected stored axes for logical ``dims`` (in :attr:`logical` order)."""
        axes = [_plain_axis(letter, size) for letter, size in zip(self.logical, dims)]
        axes[self._c] = _block_count_axis("C1", dims[self._c], c0, "channels")
        return axes + [_block_axis("C0", c0)]

    def pack(self, logical_array: np.ndarray, c0: int) -> np.ndarray:
        """Logical array -> stored array, C padded with zeros to a multiple of ``c0``."""
        c = self._c
        channels = logical_array.shape[c]
        c1 = ceil_div(channels, c0)
        padded = _pad_axes(logical_array, [*logical_array.shape[:c], c1 * c0, *logical_array.shape[c + 1:]])
        split = padded.reshape(*padded.shape[:c], c1, c0, *padded.shape[c + 1:])
        return np.moveaxis(split, c + 1, -1)

    def unpack(self, stored: np.ndarray, dims: Sequence[int]) -> np.ndarray:
        """Stored array -> logical array with C still padded to ``C1*C0`` (``dims`` only for the interface)."""
        c = self._c
        c0 = stored.shape[-1]
        c_inner = np.moveaxis(stored, -1, c + 1)
        shape = c_inner.shape
        return c_inner.reshape(*shape[:c], shape[c] * c0, *shape[c + 2:])


class FractalZLayout:
    """FRACTAL_Z, the Cube layout of convolution weights (logical NCHW = out-channels, in-channels, kh, kw).

    Stored ``[C1*H*W, N1, 16, C0]``: element (n, c, h, w) at ``[(c//C0)*H*W + h*W + w, n//16, n%16, c%C0]``.
    N is padded to a multiple of 16, C to a multiple of C0. Only ``groups == 1`` (plain convolution); group
    convolution packs several groups into one block and is not handled here.
    """

    name = "FRACTAL_Z"
    logical = "NCHW"

    def stored_axes(self, dims: Sequence[int], c0: int) -> List[StoredAxis]:
        n, c, h, w = dims
        c1 = ceil_div(c, c0)
        first = c1 * h * w
        composite = StoredAxis("C1*H*W", first, lambda got: (
            f"C1*H*W={got} but C={c}, H={h}, W={w} give {c1}*{h}*{w}={first}"))
        return [composite, _block_count_axis("N1", n, CUBE_BLOCK, "kernels (N)"),
                _block_axis("N0", CUBE_BLOCK), _block_axis("C0", c0)]

    def pack(self, logical_array: np.ndarray, c0: int) -> np.ndarray:
        n, c, h, w = logical_array.shape
        n1, c1 = ceil_div(n, CUBE_BLOCK), ceil_div(c, c0)
        padded = _pad_axes(logical_array, [n1 * CUBE_BLOCK, c1 * c0, h, w])
        blocks = padded.reshape(n1, CUBE_BLOCK, c1, c0, h, w)
        return blocks.transpose(2, 4, 5, 0, 1, 3).reshape(c1 * h * w, n1, CUBE_BLOCK, c0)

    def unpack(self, stored: np.ndarray, dims: Sequence[int]) -> np.ndarray:
        """Stored array -> NCHW padded to ``[N1*16, C1*C0, H, W]``; H and W come from the origin ``dims``."""
        _, c, h, w = dims
        _, n1, n0, c0 = stored.shape
        c1 = ceil_div(c, c0)
        blocks = stored.reshape(c1, h, w, n1, n0, c0)
        return blocks.transpose(3, 4, 0, 5, 1, 2).reshape(n1 * n0, c1 * c0, h, w)


class FractalNZLayout:
    """FRACTAL_NZ, the Cube layout of matrices: ``[..., M, N]`` stored as ``[..., N1, M1, 16, C0]``.

    Element (..., m, n) at ``[..., n//C0, m//16, m%16, n%C0]``: column blocks outermost ("N"), then row blocks
    ("Z" order inside). Leading (batch) axes are kept as they are. M is padded to a multiple of 16 and N to a
    multiple of C0. A rank-1 origin ``[N]`` is the matrix ``[1, N]``; the caller reshapes.
    """

    name = "FRACTAL_NZ"
    logical = None  # any rank >= 2, last two axes are M, N

    def stored_axes(self, dims: Sequence[int], c0: int) -> List[StoredAxis]:
        *batch, m, n = dims
        axes = [_plain_axis(f"batch[{i}]", size) for i, size in enumerate(batch)]
        return axes + [_block_count_axis("N1", n, c0, "columns (N)"),
                       _block_count_axis("M1", m, CUBE_BLOCK, "rows (M)"),
                       _block_axis("M0", CUBE_BLOCK), _block_axis("C0", c0)]

    def pack(self, logical_array: np.ndarray, c0: int) -> np.ndarray:
        *batch, m, n = logical_array.shape
        m1, n1 = ceil_div(m, CUBE_BLOCK), ceil_div(n, c0)
        padded = _pad_axes(logical_array, [*batch, m1 * CUBE_BLOCK, n1 * c0])
        blocks = padded.reshape(*batch, m1, CUBE_BLOCK, n1, c0)
        b = len(batch)
        return blocks.transpose(*range(b), b + 2, b, b + 1, b + 3)

    def unpack(self, stored: np.ndarray, dims: Sequence[int]) -> np.ndarray:
        """Stored array -> ``[..., M1*16, N1*C0]`` (padded)."""
        *batch, n1, m1, m0, c0 = stored.shape
        b = len(batch)
        blocks = stored.transpose(*range(b), b + 1, b + 2, b, b + 3)
        return blocks.reshape(*batch, m1 * m0, n1 * c0)


DEVICE_LAYOUTS = {
    layout.name: layout
    for layout in (ChannelSplitLayout("NC1HWC0", "NCHW"), ChannelSplitLayout("NDC1HWC0", "NDCHW"),
                   FractalZLayout(), FractalNZLayout())
}

