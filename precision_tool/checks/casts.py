"""Casts that lose information: what a ``Cast`` op's input holds that its output type cannot.

Every dumped op whose type contains ``Cast`` and that has one input and one output is checked, reading its input
once: float -> integer (out of range, NaN/inf, fractional parts), float32/64 -> float16 (finite beyond +/-65504,
non-zero below 2**-24), float64 -> float32 (beyond range), integer -> narrower int (out of range), integer ->
float16 (beyond +/-65504). Other casts (widening, float -> bool, ...) are not read. The rules and what each loss
becomes on the NPU: docs/internals/checks.md#casts.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import List, Optional, Tuple

import numpy as np

from precision_tool.metrics.array_stats import CHUNK_ELEMENTS, FP16_MAX
from precision_tool.errors import PrecisionToolError
from precision_tool.formats.dump_file import read_dump_header, read_tensor
from precision_tool.formats.dump_names import DumpScan

FP16_SMALLEST_SUBNORMAL = 2.0 ** -24


@dataclass(frozen=True)
class LossyCast:
    """A Cast op that loses information. ``losses`` is one line per kind of loss, with its count."""

    position: int
    op_name: str
    op_type: str
    path: str
    from_dtype: str
    to_dtype: str
    size: int
    losses: Tuple[str, ...]

    def to_dict(self) -> dict:
        return {"position": self.position, "op_name": self.op_name, "op_type": self.op_type, "path": self.path,
                "from": self.from_dtype, "to": self.to_dtype, "size": self.size, "losses": list(self.losses)}


@dataclass(frozen=True)
class CastCheck:
    casts_checked: int
    lossy: Tuple[LossyCast, ...] = ()
    unreadable: Tuple[str, ...] = ()

    def to_dict(self) -> dict:
        return {"casts_checked": self.casts_checked, "lossy": [cast.to_dict() for cast in self.lossy],
                "unreadable": list(self.unreadable)}


def _range_of(dtype: np.dtype) -> Tuple[float, float]:
    if dtype.kind in "iu":
        integers = np.iinfo(dtype)
        return float(integers.min), float(integers.max)
    floats = np.finfo(dtype)
    return float(-floats.max), float(floats.max)


def _rule(source: np.dtype, target: np.dtype) -> Optional[str]:
    """Which check applies to a cast from ``source`` to ``target`` (``None``: nothing can be lost)."""
    if source.kind == "f" and target.kind in "iu":
        return "float_to_int"
    if source.kind == "f" and target.kind == "f" and target.itemsize < source.itemsize:
        return "float_narrowing"
    if source.kind in "iu" and target.kind in "iu" and (target.itemsize < source.itemsize
                                                        or (source.kind == "i" and target.kind == "u")):
        return "int_narrowing"
    if source.kind in "iu" and target == np.float16:
        return "int_to_fp16"
    return None


def count_losses(values: np.ndarray, source: np.dtype, target: np.dtype) -> List[str]:
    """One line per kind of loss when ``values`` (of dtype ``source``) are cast to ``target``; ``[]`` if none.

    >>> count_losses(np.array([1.5, 70000.0, 3.0], dtype=np.float32), np.dtype("float32"), np.dtype("float16"))
    ['1 of 3 values beyond +/-65504 (become inf or saturate)']
    >>> count_losses(np.array([1.5, -2.0, np.nan]), np.dtype("float64"), np.dtype("int32"))
    ['1 of 3 values are NaN/inf (no integer stands for them)', '1 of 3 values have a fractional part (truncated)']
    """
    rule = _rule(source, target)
    if rule is None:
        return []
    flat = np.asarray(values).reshape(-1)
    low, high = _range_of(target) if rule != "int_to_fp16" else (-FP16_MAX, FP16_MAX)
    out_of_range = non_finite = fractional = flushed = 0
    for start in range(0, flat.size, CHUNK_ELEMENTS):
        chunk = flat[start:start + CHUNK_ELEMENTS]
        if chunk.dtype.kind == "f":
            finite = np.isfinite(chunk)
            non_finite += int(chunk.size - finite.sum())
            chunk = chunk[finite]
        wide = chunk.astype(np.float64)
        out_of_range += int(np.count_nonzero((wide < low) | (wide > high)))
        if rule == "float_to_int":
            fractional += int(np.count_nonzero(wide != np.trunc(wide)))
        if rule == "float_narrowing" and target == np.float16:
            magnitude = np.abs(wide)
            flushed += int(np.count_nonzero((magnitude > 0) & (magnitude < FP16_SMALLEST_SUBNORMAL)))
    total = flat.size
    losses = []
    if out_of_range:
        limit = f"+/-{high:g}" if rule != "int_narrowing" else f"[{low:g}, {high:g}]"
        effect = "saturate" if rule in ("float_to_int", "int_narrowing") else "become inf or saturate"
        losses.append(f"{out_of_range} of {total} values beyond {limit} ({effect})")
    if non_finite and rule == "float_to_int":
        losses.append(f"{non_finite} of {total} values are NaN/inf (no integer stands for them)")
    if fractional:
        losses.append(f"{fractional} of {total} values have a fractional part (truncated)")
    if flushed:
        losses.append(f"{flushed} of {total} non-zero values below 2**-24 in magnitude (flushed to zero)")
    return losses


def check_casts(scan: DumpScan) -> CastCheck:
    """Check every Cast op of ``scan`` (latest dump each) as the module docstring says."""
    checked = 0
    lossy: List[LossyCast] = []
    unreadable: List[str] = []
    for position, op in enumerate(scan.ops, start=1):
        if "cast" not in op.op_type.lower():
            continue
        try:
            dump = read_dump_header(op.latest.path)
            if len(dump.inputs) != 1 or len(dump.outputs) != 1 or dump.inputs[0].is_raw_bytes \
                    or dump.outputs[0].is_raw_bytes:  # raw bytes (DT_UNDEFINED): the types are unknown
                continue
            source, target = dump.inputs[0].numpy_dtype, dump.outputs[0].numpy_dtype
            if source is None or target is None or _rule(source, target) is None:
                continue
            checked += 1
            losses = count_losses(read_tensor(dump, dump.inputs[0]), source, target)
        except PrecisionToolError as error:
            unreadable.append(str(error))
            continue
        if losses:
            lossy.append(LossyCast(position, dump.op_name or op.op_name, op.op_type, op.latest.path, source.name,
                                   target.name, int(dump.inputs[0].element_count or 0), tuple(losses)))
    return CastCheck(checked, tuple(lossy), tuple(unreadable))
