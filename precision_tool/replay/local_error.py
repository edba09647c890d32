"""Local and inherited error of one NPU output, and the floor its dtype explains.

For an NPU output ``n``, its replay ``p`` and the reference ``r`` (float64, origin layout), with ``RED(x, y) =
||x - y||_2 / ||y||_2`` over the elements finite in both (over a zero ``y``: 0 for no difference, ``inf`` for any):
``local = RED(n, p)``, ``inherited = RED(p, r)``, ``total = RED(n, r)``; ``rounding = RED(round(p), p)``, ``round``
storing ``p`` in the NPU output's dtype; ``floor = max(FLOOR_FACTOR * rounding, MIN_FLOOR[dtype])``; ``spec_error``
the mean relative error of ``n`` against ``p`` (:mod:`precision_tool.metrics.spec`). inf/NaN the op made from
finite inputs make ``local`` ``inf``, with a note. Integer and bool outputs: ``local`` is the share of elements
that differ, the floor 0. Edge cases: docs/internals/replay.md#local-error.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional

import numpy as np

from precision_tool.formats.dtypes import bf16_bits_to_float32, float32_to_bf16_bits
from precision_tool.metrics.rounding import FLOOR_FACTOR, MIN_FLOOR, UNIT_ROUNDOFF, ratio_to_floor, relative_error
from precision_tool.metrics.spec import mean_relative_error


@dataclass(frozen=True)
class OutputError:
    """The measured errors of one NPU output (see the module docstring). ``inherited`` is ``None`` when the
    output has no reference; ``note`` says anything unusual in one line."""

    tensor_id: str
    npu_dtype: str
    local: float
    floor: float
    rounding: float
    inherited: Optional[float] = None
    note: str = ""
    total: Optional[float] = None
    spec_error: Optional[float] = None

    @property
    def ratio(self) -> float:
        """How many floors the local error is (:func:`~precision_tool.metrics.rounding.ratio_to_floor`)."""
        return ratio_to_floor(self.local, self.floor)

    def to_dict(self) -> dict:
        return {"tensor_id": self.tensor_id, "npu_dtype": self.npu_dtype, "local": _json(self.local),
                "floor": _json(self.floor), "rounding": _json(self.rounding), "inherited": _json(self.inherited),
                "total": _json(self.total), "note": self.note, "spec_error": _json(self.spec_error)}


def _json(value):
    if value is None or math.isfinite(value):
        return value
    return str(value)


def red(x: np.ndarray, y: np.ndarray) -> float:
    """``||x - y|| / ||y||`` over the elements finite in both, in float64 (norms rescaled when squares would
    overflow or underflow)."""
    return _red(_Finite.of(x), _Finite.of(y))


class _Finite:
    """An array as a flat float64 vector with its square sum ``v . v`` and its mask of finite elements, made
    once per array however many REDs it takes part in. The square sum is finite exactly when every element is
    finite and the squares do not overflow; only otherwise is the mask computed (``None``: all finite)."""

    def __init__(self, values: np.ndarray):
        self.values = values
        self.square = _square(values)
        finite = None if math.isfinite(self.square) else np.isfinite(values)
        self.mask = None if finite is None or finite.all() else finite

    @classmethod
    def of(cls, array: np.ndarray) -> "_Finite":
        return cls(np.asarray(array, dtype=np.float64).ravel())


def _red(x: _Finite, y: _Finite) -> float:
    xs, ys = x.values, y.values
    square: Optional[float] = y.square
    if x.mask is not None or y.mask is not None:
        both = x.mask if y.mask is None else y.mask if x.mask is None else x.mask & y.mask
        xs, ys, square = xs[both], ys[both], None
    return relative_error(_norm(xs - ys), _norm(ys, square))


def _square(values: np.ndarray) -> float:
    with np.errstate(over="ignore", under="ignore", invalid="ignore"):
        return float(np.dot(values, values))


def _norm(values: np.ndarray, square: Optional[float] = None) -> float:
    """The 2-norm: ``sqrt(v . v)`` (``square``, when the caller has it), rescaled by ``max |v|`` only when that
    square sum overflows or underflows."""
    square = _square(values) if square is None else square
    if 1e-290 < square < math.inf:
        return math.sqrt(square)
    scale = float(np.max(np.abs(values))) if values.size else 0.0
    if scale == 0:
        return 0.0
    scaled = values / scale
    return scale * math.sqrt(float(np.dot(scaled, scaled)))


def round_to(values: np.ndarray, dtype: str) -> np.ndarray:
    """``values`` stored in ``dtype`` and read back as float64 (round to nearest even; bfloat16 by bits)."""
    values = np.asarray(values, dtype=np.float64)
    with np.errstate(over="ignore", invalid="ignore"):
        if dtype == "bfloat16":
            return bf16_bits_to_float32(float32_to_bf16_bits(values.astype(np.float32))).astype(np.float64)
        return values.astype(np.dtype(dtype)).astype(np.float64)


def measure_output(tensor_id: str, npu: np.ndarray, replay: np.ndarray, npu_dtype: str,
                   reference: Optional[np.ndarray] = None) -> OutputError:
    """The :class:`OutputError` of one output. ``npu`` is reshaped to ``replay``'s shape when only the shape
    differs (same element count); a different element count raises ``ValueError``."""
    npu, replay = np.asarray(npu), np.asarray(replay)
    if npu.size != replay.size:
        raise ValueError(f"{tensor_id}: the NPU output has {npu.size} elements, the replay {replay.size}")
    npu = npu.reshape(replay.shape)
    if npu.dtype.kind not in "fc" or replay.dtype.kind not in "fc":
        differs = float(np.mean(npu != replay)) if npu.size else 0.0
        inherited = None
        if reference is not None and np.asarray(reference).size == replay.size:
            inherited = float(np.mean(np.asarray(reference).reshape(replay.shape) != replay)) if replay.size else 0.0
        return OutputError(tensor_id, npu_dtype, differs, 0.0, 0.0, inherited,
                           "share of differing elements (an integer output: no floor, not ranked)")
    note = ""
    n, p = _Finite.of(npu), _Finite.of(replay)
    rounded = _Finite(round_to(p.values, npu_dtype) if npu_dtype in UNIT_ROUNDOFF else p.values)
    rounding = _red(rounded, p)
    if npu_dtype == "float32":  # kernels flush float32 subnormals to zero: that is rounding too
        tiny = float(np.finfo(np.float32).tiny)
        flushed = _Finite(np.where(np.abs(rounded.values) < tiny, 0.0, rounded.values))
        rounding = max(rounding, _red(flushed, p))
    floor = max(FLOOR_FACTOR * rounding, MIN_FLOOR.get(npu_dtype, 0.0))
    made = None if n.mask is None else ~n.mask if p.mask is None else ~n.mask & p.mask
    if made is not None and made.any():
        local = math.inf
        beyond = 0 if rounded.mask is None else int((made & ~rounded.mask).sum())
        note = (f"{int(made.sum())} inf/NaN where the replay is finite: produced inside the op"
                + (f" ({beyond} because the exact result is beyond {npu_dtype}'s range)" if beyond else ""))
    else:
        local = _red(n, p)
    inherited = total = None
    if reference is not None and np.asarray(reference).size == replay.size:
        r = _Finite.of(reference)
        inherited, total = _red(p, r), _red(n, r)
    spec_error = mean_relative_error(n.values, p.values, npu_dtype)
    return OutputError(tensor_id, npu_dtype, local, floor, rounding, inherited, note, total, spec_error)
