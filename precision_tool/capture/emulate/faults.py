"""Planted kernel faults (``--perturb OP=KIND:VALUE``): what each kind does, parsed in one place.

A fault replaces TF op OP's float32 output ``x`` -- inside its NPU op, before anything reads it and before the NPU
op rounds its output to float16 -- by a faulty ``y``: ``noise:REL`` (or a bare REL) ``x * (1 + REL * z)``;
``bias:REL`` ``x + REL * rms(x)``; ``fp16acc[:CHUNK]`` a Cube op's reduction accumulated in float16, CHUNK terms a
chunk; ``saturate:LIMIT`` ``clip(x, -LIMIT, LIMIT)``; ``positions:N`` N elements ``-x - 4 * rms(x) * s`` (``s = 1``
where ``x > 0``, else -1). The values are built from TF ops in :mod:`~precision_tool.capture.emulate.numerics`;
:func:`fault_effect` says what each did in a run. The kinds in full: docs/emulate.md#files-written ("Planted
kernels"); what follows from them: docs/internals/emulator.md#faults.
"""
from __future__ import annotations

import math
import zlib
from dataclasses import dataclass
from typing import List, Optional, Sequence, Tuple

import numpy as np

from precision_tool.capture.emulate.emulate_errors import EmulationError

NOISE, BIAS, FP16ACC, SATURATE, POSITIONS = "noise", "bias", "fp16acc", "saturate", "positions"
KINDS = (NOISE, BIAS, FP16ACC, SATURATE, POSITIONS)
SYNTAX = "noise:REL, bias:REL, fp16acc[:CHUNK], saturate:LIMIT, positions:N (or a bare REL for noise)"
DEFAULT_CHUNK = 16
MAX_CHUNKS = 4096
POSITION_PUSH = 4.0  # positions: the wrong value lies this many rms beyond the flipped one
FP16ACC_TYPES = frozenset({"Conv2D", "DepthwiseConv2dNative", "MatMul", "BatchMatMul", "BatchMatMulV2",
                           "BatchMatMulV3"})
_SEED_TAG = {POSITIONS: 0x9051, "native": 0x4a71}  # own streams (noise keeps its original one)


@dataclass(frozen=True)
class Fault:
    """One planted fault: ``kind`` (:data:`KINDS`) and its ``value`` (REL, CHUNK, LIMIT or N; see the
    module docstring). Build it with :func:`parse_fault` or :func:`as_fault`, which check the value."""

    kind: str
    value: float
    fp16_only: bool = False  # ``@fp16``: the faulty kernel is the float16 one; in float32 the op is right

    @property
    def spec(self) -> str:
        """``"bias:0.05"``, ``"fp16acc:16"``, ``"positions:3"``, ``"noise:0.3@fp16"`` -- what ``--perturb OP=``
        takes back."""
        value = int(self.value) if self.kind in (FP16ACC, POSITIONS) else self.value
        return f"{self.kind}:{value}" + ("@fp16" if self.fp16_only else "")

    @property
    def count(self) -> int:
        """CHUNK (fp16acc) or N (positions) as an integer."""
        return int(self.value)

    def parameters(self) -> dict:
        """The parameter as ``manifest.json`` records it: ``{"rel": ...}``, ``{"chunk": ...}``,
        ``{"limit": ...}`` or ``{"n": ...}``."""
        name = {NOISE: "rel", BIAS: "rel", FP16ACC: "chunk", SATURATE: "limit", POSITIONS: "n"}[self.kind]
        return {name: self.count if self.kind in (FP16ACC, POSITIONS) else self.value}


def _bad(op: str, spec: object, why: str) -> EmulationError:
    return EmulationError(f"--perturb {op}={spec}: {why}", f"kinds: {SYNTAX}")


def _number(op: str, spec: str, text: str, what: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise _bad(op, spec, f"{what} {text!r} is not a number") from None
    if not math.isfinite(value):
        raise _bad(op, spec, f"{what} must be finite")
    return value


def _integer(op: str, spec: str, text: str, what: str) -> int:
    value = _number(op, spec, text, what)
    if value != int(value) or value < 1:
        raise _bad(op, spec, f"{what} must be an integer >= 1")
    return int(value)


def parse_fault(op: str, spec: str) -> Fault:
    """``"0.3"`` / ``"noise:0.3"`` / ``"bias:-0.1"`` / ``"fp16acc"`` / ``"fp16acc:1"`` / ``"saturate:4"`` /
    ``"positions:3"`` -> :class:`Fault`; :class:`EmulationError` (one line, naming ``OP=SPEC``) otherwise.

    >>> parse_fault("conv", "bias:0.05")
    Fault(kind='bias', value=0.05, fp16_only=False)
    >>> parse_fault("conv", "fp16acc").spec
    'fp16acc:16'
    >>> parse_fault("conv", "0.5@fp16")
    Fault(kind='noise', value=0.5, fp16_only=True)

    A trailing ``@fp16`` plants the fault only while the op computes in float16 (its float16 kernel is the
    faulty one): kept in float32 (a ``customize_dtypes`` line naming it), the op is right.
    """
    text = spec.strip()
    if text.lower().endswith("@fp16"):
        fault = parse_fault(op, text[:-len("@fp16")])
        return Fault(fault.kind, fault.value, fp16_only=True)
    kind, colon, value = text.partition(":")
    kind = kind.strip().lower()
    if not colon and kind not in KINDS:  # a bare number: noise, the original OP=REL form
        try:
            float(text)
        except ValueError:
            raise _bad(op, spec, f"unknown fault kind {kind!r}") from None
        kind, value = NOISE, text
    if kind not in KINDS:
        raise _bad(op, spec, f"unknown fault kind {kind!r}")
    value = value.strip()
    if kind == FP16ACC:
        return Fault(FP16ACC, float(_integer(op, spec, value, "CHUNK") if colon else DEFAULT_CHUNK))
    if not value:
        what = {NOISE: "REL", BIAS: "REL", SATURATE: "LIMIT", POSITIONS: "N"}[kind]
        raise _bad(op, spec, f"{kind} needs a value: {kind}:{what}")
    if kind == POSITIONS:
        return Fault(POSITIONS, float(_integer(op, spec, value, "N")))
    number = _number(op, spec, value, {NOISE: "REL", BIAS: "REL", SATURATE: "LIMIT"}[kind])
    if kind == NOISE and number <= 0:
        raise _bad(op, spec, "the relative noise must be a number > 0")
    if kind == BIAS and number == 0:
        raise _bad(op, spec, "REL must not be 0 (a bias of 0 plants nothing)")
    if kind == SATURATE and number <= 0:
        raise _bad(op, spec, "LIMIT must be > 0")
    return Fault(kind, number)


def as_fault(op: str, value: object) -> Fault:
    """What :class:`~.run.EmulationOptions` takes per op: a number (relative noise, as before), a spec
    string (:func:`parse_fault`) or a :class:`Fault` (checked again)."""
    if isinstance(value, Fault):
        return parse_fault(op, value.spec)
    if isinstance(value, str):
        return parse_fault(op, value)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not (math.isfinite(value) and value > 0):
        raise EmulationError(f"--perturb {op}={value}: the relative noise must be a number > 0")
    return Fault(NOISE, float(value))


# --------------------------------------------------------------------------------------------- values
def _rng(op_name: str, seed: int, kind: str) -> np.random.Generator:
    key = [int(seed), zlib.crc32(op_name.encode("utf-8"))]
    if _SEED_TAG.get(kind):
        key.append(_SEED_TAG[kind])
    return np.random.default_rng(key)


def noise_factor(op_name: str, shape, rel: float, seed: int) -> np.ndarray:
    """``1 + rel * z`` with ``z`` standard normal, reproducible from ``seed`` and ``op_name``."""
    return (1.0 + rel * _rng(op_name, seed, NOISE).standard_normal(tuple(shape))).astype(np.float32)


def uniform_unit(name: str, shape, seed: int) -> np.ndarray:
    """Uniform values in [-1, 1] of ``shape`` (float32), reproducible from ``seed`` and ``name`` (a native
    float16 step's error, :mod:`~.hardware`)."""
    return _rng(name, seed, "native").uniform(-1.0, 1.0, tuple(shape)).astype(np.float32)


def chosen_positions(op_name: str, shape: Sequence[int], n: int, seed: int) -> List[Tuple[int, ...]]:
    """The ``n`` distinct element indices ``positions:n`` changes (sorted, row-major), from ``seed`` and
    ``op_name``. Raises :class:`EmulationError` when ``n`` exceeds the element count."""
    size = int(np.prod(shape, dtype=np.int64))
    if n > size:
        raise EmulationError(f"--perturb {op_name}=positions:{n}: the output has only {size} elements")
    flat = np.sort(_rng(op_name, seed, POSITIONS).choice(size, size=n, replace=False))
    return [tuple(int(i) for i in np.unravel_index(k, tuple(shape))) for k in flat]


def position_mask(shape: Sequence[int], positions: Sequence[Tuple[int, ...]]) -> np.ndarray:
    """Boolean array of ``shape``, True at ``positions``."""
    mask: np.ndarray = np.zeros(tuple(shape), dtype=bool)
    for index in positions:
        mask[index] = True
    return mask


def reduction_masks(op_type: str, weight_shape: Sequence[int], attrs, chunk: int) -> List[np.ndarray]:
    """One float32 0/1 mask per chunk of ``fp16acc``, to multiply the op's second input by (broadcasting):
    the chunk's terms of the reduction kept, the others zeroed. Order: the accumulation order.

    Conv2D (filter HWIO): mask shape ``(H, W, I, 1)``, chunks (channel block, kh, kw).
    DepthwiseConv2dNative (filter HWCM): ``(H, W, 1, 1)``, one per tap.
    MatMul / BatchMatMul (``b`` is ``[..., K, N]``, or ``[..., N, K]`` transposed): ``(K, 1)`` or ``(1, K)``,
    CHUNK rows of K each.
    """
    shape = tuple(int(d) for d in weight_shape)
    masks: List[np.ndarray] = []
    mask: np.ndarray
    if op_type == "Conv2D":
        height, width, channels = shape[0], shape[1], shape[2]
        for start in range(0, channels, chunk):
            for kh in range(height):
                for kw in range(width):
                    mask = np.zeros((height, width, channels, 1), dtype=np.float32)
                    mask[kh, kw, start:start + chunk, 0] = 1
                    masks.append(mask)
    elif op_type == "DepthwiseConv2dNative":
        height, width = shape[0], shape[1]
        for kh in range(height):
            for kw in range(width):
                mask = np.zeros((height, width, 1, 1), dtype=np.float32)
                mask[kh, kw, 0, 0] = 1
                masks.append(mask)
    else:
        transposed = bool((attrs or {}).get("transpose_b") or (attrs or {}).get("adj_y"))
        depth = shape[-1] if transposed else shape[-2]
        for start in range(0, depth, chunk):
            mask = np.zeros((1, depth) if transposed else (depth, 1), dtype=np.float32)
            if transposed:
                mask[0, start:start + chunk] = 1
            else:
                mask[start:start + chunk, 0] = 1
            masks.append(mask)
    return masks


def count_chunks(op_type: str, weight_shape: Sequence[int], attrs, chunk: int) -> int:
    """How many partial sums ``fp16acc:chunk`` accumulates (see :func:`reduction_masks`)."""
    shape = tuple(int(d) for d in weight_shape)
    if op_type == "Conv2D":
        return shape[0] * shape[1] * -(-shape[2] // chunk)
    if op_type == "DepthwiseConv2dNative":
        return shape[0] * shape[1]
    transposed = bool((attrs or {}).get("transpose_b") or (attrs or {}).get("adj_y"))
    return -(-(shape[-1] if transposed else shape[-2]) // chunk)


def check_fault_site(fault: Fault, op_name: str, op_type: str, output_shape: Sequence[int],
                     weight_shape: Optional[Sequence[int]], attrs) -> None:
    """What the kind needs of the op, before anything runs: ``fp16acc`` a Cube op whose second input has
    a static shape and at most :data:`MAX_CHUNKS` partial sums; ``positions:N`` at least N elements."""
    if fault.kind == POSITIONS:
        size = int(np.prod(tuple(output_shape), dtype=np.int64))
        if fault.count > size:
            raise EmulationError(f"--perturb {op_name}={fault.spec}: the output has only {size} elements",
                                 "choose a smaller N")
    if fault.kind != FP16ACC:
        return
    if op_type not in FP16ACC_TYPES:
        raise EmulationError(f"--perturb {op_name}={fault.spec}: this op is {op_type}; fp16acc plants on a Cube "
                             f"op ({', '.join(sorted(FP16ACC_TYPES))})", "choose the convolution or matmul")
    if weight_shape is None or len(weight_shape) < 2 or any(int(d) < 0 for d in weight_shape):
        raise EmulationError(f"--perturb {op_name}={fault.spec}: its second input has no static shape")
    chunks = count_chunks(op_type, weight_shape, attrs, fault.count)
    if chunks > MAX_CHUNKS:
        raise EmulationError(f"--perturb {op_name}={fault.spec}: {chunks} partial sums (at most {MAX_CHUNKS})",
                             "choose a larger CHUNK")


def fault_effect(fault: Fault, before: np.ndarray, after: np.ndarray) -> dict:
    """What the fault did to the op's float32 output in one run (``manifest.json``): ``elements``,
    ``changed`` (elements whose value differs; NaN = NaN), ``rms_before`` (``rms(x)``) and ``red``
    (``||y - x|| / ||x||`` over elements finite in both; ``None`` when ``||x|| = 0`` but not ``||y - x||``). Kind
    extras: ``shift`` (bias: the value added, ``mean(y - x)``), ``max_abs_after`` (saturate)."""
    x = np.asarray(before, dtype=np.float64)
    y = np.asarray(after, dtype=np.float64)
    same = (x == y) | (np.isnan(x) & np.isnan(y))
    finite = np.isfinite(x) & np.isfinite(y)
    norm = float(np.sqrt(np.sum(x[finite] ** 2)))
    diff = float(np.sqrt(np.sum((y[finite] - x[finite]) ** 2)))
    effect = {"elements": int(x.size), "changed": int(x.size - np.count_nonzero(same)),
              "rms_before": float(np.sqrt(np.mean(x[finite] ** 2))) if finite.any() else 0.0,
              "red": diff / norm if norm else (0.0 if diff == 0 else None)}
    if fault.kind == BIAS:
        effect["shift"] = float(np.mean(y[finite] - x[finite])) if finite.any() else 0.0
    if fault.kind == SATURATE:
        effect["max_abs_after"] = float(np.max(np.abs(y))) if y.size else 0.0
    return effect
