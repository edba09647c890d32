"""Which NPU the emulator models: its target, its precision mode, and the kernel behaviours that follow.

Targets (``--numerics``): ``ascend910`` (Atlas training series: saturation, Sigmoid's clamp) and ``ascend910b``
(Atlas A2: HF32 for float32 convolutions), both with native float16 kernels, and ``ideal`` (float16-rounded inputs,
float32 kernels, one rounding at the output: the model of earlier releases). Precision modes
(``--precision-mode``) are the TF adapter's; the default is the target's for training, and
:meth:`Hardware.dtypes` is the one rule. Every behaviour is a fact cited in docs/emulated-numerics.md; the choices
the facts leave open (a native float16 step within one ulp, :data:`NATIVE_STEP_ERROR`; Cube accumulation in
TensorFlow's order): docs/internals/emulator.md#hardware.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Tuple

from precision_tool.capture.emulate import op_tables as T
from precision_tool.capture.emulate.emulate_errors import EmulationError

ASCEND910, ASCEND910B, IDEAL = "ascend910", "ascend910b", "ideal"
TARGETS = (ASCEND910, ASCEND910B, IDEAL)

FORCE_FP32, ALLOW_FP32_TO_FP16, FORCE_FP16 = "force_fp32", "allow_fp32_to_fp16", "force_fp16"
MUST_KEEP_ORIGIN_DTYPE, ALLOW_MIX_PRECISION = "must_keep_origin_dtype", "allow_mix_precision"
CUBE_FP16IN_FP32OUT, ALLOW_MIX_PRECISION_FP16 = "cube_fp16in_fp32out", "allow_mix_precision_fp16"
ALLOW_MIX_PRECISION_BF16, ALLOW_FP32_TO_BF16 = "allow_mix_precision_bf16", "allow_fp32_to_bf16"
#: Every value the TF adapter accepts (npu_attrs.cc); the bfloat16 ones are refused by name (not emulated).
PRECISION_MODES = (FORCE_FP32, ALLOW_FP32_TO_FP16, FORCE_FP16, MUST_KEEP_ORIGIN_DTYPE, ALLOW_MIX_PRECISION,
                   CUBE_FP16IN_FP32OUT, ALLOW_MIX_PRECISION_FP16, ALLOW_MIX_PRECISION_BF16, ALLOW_FP32_TO_BF16)
BFLOAT16_MODES = (ALLOW_MIX_PRECISION_BF16, ALLOW_FP32_TO_BF16)
DEFAULT_PRECISION_MODE = {ASCEND910: ALLOW_FP32_TO_FP16, ASCEND910B: MUST_KEEP_ORIGIN_DTYPE, IDEAL: ALLOW_MIX_PRECISION}

#: TF op types on the Ascend 910 black list under mixed precision (aic-ascend910-ops-info.ini,
#: precision_reduce.flag=false), as the emulator maps them (Mean -> ReduceMeanD, LogSoftmax -> LogSoftmaxV2, Prod ->
#: ReduceProdD). Exp, Softmax, Sqrt, Rsqrt, Erf, Sum (ReduceSumD) are gray there: they follow their inputs.
ASCEND910_BLACK_TYPES = frozenset({
    "Log", "Log1p", "Expm1", "Pow", "Xlogy", "Xlog1py", "Mean", "Prod", "LogSoftmax", "L2Loss",
    "SigmoidCrossEntropyWithLogits", "BiasAddGrad", "UnsortedSegmentSum",
})
#: Float16 saturation value (910 saturation mode: inf -> +-65504).
FLOAT16_MAX = 65504.0
#: Sigmoid's float16 input clamp on Ascend910 (sigmoid.py: -ln(65504) truncated).
SIGMOID_FP16_CLAMP = -11.089
#: Relative perturbation of a native float16 step before rounding: 2^-12 is at most half the spacing of float16
#: at the value, so that with the rounding to nearest the step is within one ulp (docs/internals/emulator.md#hardware).
NATIVE_STEP_ERROR = 2.0 ** -12
#: Erf's polynomial (erf.py; Abramowitz & Stegun 7.1.25): p, a1, a2, a3.
ERF_P, ERF_A = 0.47047, (0.3480242, -0.0958798, 0.7478556)
#: Ops whose float16 kernel computes natively in float16, step by step (exp.py, log.py, real_div.py, sigmoid.py).
NATIVE_FP16_TYPES = frozenset({"Exp", "Log", "RealDiv", "Sigmoid"})
#: HF32 keeps 11 explicit mantissa bits of float32's 23.
HF32_DROPPED_BITS = 12


@dataclass(frozen=True)
class Hardware:
    """The modelled NPU: ``target`` (:data:`TARGETS`) and ``precision_mode`` (:data:`PRECISION_MODES`)."""

    target: str = IDEAL
    precision_mode: str = ALLOW_MIX_PRECISION

    @classmethod
    def of(cls, target: str = ASCEND910, precision_mode: Optional[str] = None) -> "Hardware":
        """The hardware for ``--numerics`` and ``--precision-mode`` (``None``: the target's default); a one-line
        :class:`EmulationError` for a value not known or not emulated."""
        if target not in TARGETS:
            raise EmulationError(f"--numerics {target!r}: choose one of {', '.join(TARGETS)}")
        mode = DEFAULT_PRECISION_MODE[target] if precision_mode is None else precision_mode
        if mode not in PRECISION_MODES:
            raise EmulationError(f"--precision-mode {mode!r}: not a TF adapter value; choose one of "
                                 f"{', '.join(PRECISION_MODES)}")
        if mode in BFLOAT16_MODES:
            raise EmulationError(f"--precision-mode {mode}: bfloat16 modes are not emulated (Atlas A2 only); "
                                 f"choose one of {', '.join(m for m in PRECISION_MODES if m not in BFLOAT16_MODES)}")
        return cls(target, mode)

    @property
    def saturates(self) -> bool:
        """910 saturation mode: float16 inf -> +-65504, NaN -> 0 (A2 defaults to IEEE inf/NaN)."""
        return self.target == ASCEND910

    @property
    def native_kernels(self) -> bool:
        """The op-specific kernels (native float16 steps, Softmax's float16 subtraction, Erf's polynomial)."""
        return self.target != IDEAL

    @property
    def hf32_convolutions(self) -> bool:
        """A2: float32 convolutions compute in HF32 by default (ENABLE_HF32_EXECUTION unset)."""
        return self.target == ASCEND910B

    @property
    def sigmoid_clamp(self) -> Optional[float]:
        """The float16 Sigmoid input clamp (Ascend910 only)."""
        return SIGMOID_FP16_CLAMP if self.target == ASCEND910 else None

    def black_list(self) -> frozenset:
        """TF op types kept in float32 under mixed precision: the 910 list on hardware, the earlier model's under
        ``ideal``."""
        return T.FP32_KEPT_TYPES if self.target == IDEAL else ASCEND910_BLACK_TYPES

    def dtypes(self, op_type: str, inputs_fp16: bool) -> Tuple[str, str]:
        """``(input dtype, output dtype)`` an op of ``op_type`` computes a float32 graph tensor in under the precision
        mode; ``inputs_fp16``: a non-constant input already arrives in float16 (gray ops follow it).

        ========================  ============================  =============================================
        mode                      Cube ops                      other float ops
        ========================  ============================  =============================================
        allow_mix_precision(_fp16) float16                      black: float32; else float16 when an input is
        allow_fp32_to_fp16        float16                       float32 (the graph's dtype)
        force_fp16                float16                       float16
        must_keep_origin_dtype    float32                       float32
        force_fp32, cube_fp16in_  float16 in, float32 out       float32
        fp32out
        ========================  ============================  =============================================
        """
        half, single = "float16", "float32"
        cube = op_type in T.CUBE_TYPES
        mode = self.precision_mode
        if mode in (ALLOW_MIX_PRECISION, ALLOW_MIX_PRECISION_FP16):
            if cube:
                return half, half
            if op_type in self.black_list():
                return single, single
            return (half, half) if inputs_fp16 else (single, single)
        if mode == ALLOW_FP32_TO_FP16:
            return (half, half) if cube else (single, single)
        if mode == FORCE_FP16:
            return half, half
        if mode == MUST_KEEP_ORIGIN_DTYPE:
            return single, single
        return (half, single) if cube else (single, single)  # force_fp32, cube_fp16in_fp32out

    def to_dict(self) -> dict:
        return {"numerics": self.target, "precision_mode": self.precision_mode}


IDEAL_HARDWARE = Hardware()
