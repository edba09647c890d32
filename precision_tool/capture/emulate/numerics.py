"""NPU numerics on the CPU: one TensorFlow run that computes what every NPU op would output.

The frozen graph is extended with a copy of every compute op (``npu_emu/<tf name>``), on float32 kernels but fed
what the NPU would feed it: an op computing in float16 reads its float inputs rounded to float16 (batch-norm
parameters excepted), so a float32 Conv2D or MatMul on them *is* "float16 in, float32 accumulation"; a fused op
rounds once at its output and once before its absorbed activation, an unfused one at its output. A planted fault
(:mod:`~precision_tool.capture.emulate.faults`) replaces an op's float32 output before anything reads it; the
Ascend kernels are built from TF ops too. Values come back as float32 arrays in the TF layout, float16 tensors
holding float16-representable values. See docs/internals/emulator.md#numerics.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, List, Mapping, Optional, Sequence, Set, Tuple, Union

import numpy as np

from precision_tool.capture.emulate import faults as F
from precision_tool.capture.emulate import hardware as H
from precision_tool.capture.emulate import op_tables as T
from precision_tool.capture.emulate.graph_info import split_tensor_name, tensor_name
from precision_tool.capture.emulate.npu_plan import FLOAT16, FLOAT32, NpuPlan
from precision_tool.capture.emulate.tf_freeze import FrozenModel, run_graph
from precision_tool.lazy import lazy_import

tf = lazy_import("tensorflow")

SCOPE = "npu_emu"


def perturbation_factor(op_name: str, shape, rel: float, seed: int) -> np.ndarray:
    """``1 + rel * z`` with ``z`` standard normal, reproducible from ``seed`` and ``op_name``
    (:func:`~precision_tool.capture.emulate.faults.noise_factor`)."""
    return F.noise_factor(op_name, shape, rel, seed)


@dataclass
class NumericsResult:
    """``values``: NPU value of every Data/compute output TF tensor (float32 arrays);
    ``constants``: every folded constant tensor an NPU op reads; ``rounding``: per compute op, the
    values rounded inside it before its activation (overflow shows there first); ``faults``: per planted
    TF op, what its fault did to its float32 output (:func:`~.faults.fault_effect`, plus ``positions``, the
    indices changed, or ``chunks``, the partial sums of fp16acc); ``saturated``: on a saturating target, the NPU
    ops that stored an inf, NaN or out-of-range value as +-65504 or 0 (an overflow the values no longer show)."""

    values: Dict[str, np.ndarray] = field(default_factory=dict)
    constants: Dict[str, np.ndarray] = field(default_factory=dict)
    rounding: Dict[str, List[np.ndarray]] = field(default_factory=dict)
    faults: Dict[str, dict] = field(default_factory=dict)
    saturated: Set[str] = field(default_factory=set)


class _Builder:
    def __init__(self, frozen: FrozenModel, plan: NpuPlan, faults: Mapping[str, F.Fault], seed: int):
        self.plan = plan
        self.graph_def = tf.compat.v1.GraphDef.FromString(frozen.graph_def)
        self.nodes = {node.name: node for node in self.graph_def.node}
        self.faults = dict(faults)
        self.seed = seed
        self.fault_points: Dict[str, Tuple[str, str]] = {}  # planted TF op -> (output before, after)
        self.fault_details: Dict[str, dict] = {}
        self.value: Dict[str, str] = {}      # TF tensor -> emulated tensor name (NPU value)
        self.rounded: Dict[str, str] = {}
        self.rounding_points: Dict[str, List[str]] = {}
        self.round_source: Dict[str, str] = {}  # a round16 output -> the float32 value it stores
        self.finite_flags: Dict[str, List[str]] = {}  # NPU op -> scalar "all finite" of what it stores (saturating)
        self.counter = 0

    def _add(self, op: str, name: str, inputs: Sequence[str], **attrs):
        node = self.graph_def.node.add(op=op, name=name)
        node.input.extend(inputs)
        for key, value in attrs.items():
            node.attr[key].CopyFrom(value)
        return node

    def round16(self, source: str) -> str:
        """``source`` (float32) stored in float16 and read back; on a saturating target (910) NaN becomes 0 and a
        value beyond the range +-65504 first (:attr:`~.hardware.Hardware.saturates`)."""
        if source not in self.rounded:
            self.counter += 1
            base = f"{SCOPE}/round_{self.counter}"
            half = tf.compat.v1.AttrValue(type=tf.float16.as_datatype_enum)
            single = tf.compat.v1.AttrValue(type=tf.float32.as_datatype_enum)
            no = tf.compat.v1.AttrValue(b=False)
            stored = source
            if self.plan.hardware.saturates:
                limit = self._const(f"{base}/limit", np.float32(H.FLOAT16_MAX))
                clipped = self._op("ClipByValue", f"{base}/saturate", [source, self._op("Neg", f"{base}/minus_limit",
                                                                                       [limit]), limit])
                nan = self._add("IsNan", f"{base}/is_nan", [source], T=single).name
                stored = self._op("Select", f"{base}/nan_to_zero",
                                  [nan, self._op("ZerosLike", f"{base}/zero", [source]), clipped])
            self._add("Cast", f"{base}/to_half", [stored], SrcT=single, DstT=half, Truncate=no)
            self._add("Cast", f"{base}/to_float", [f"{base}/to_half"], SrcT=half, DstT=single, Truncate=no)
            self.rounded[source] = f"{base}/to_float:0"
            self.round_source[self.rounded[source]] = source
        return self.rounded[source]

    def _finite_flag(self, source: str) -> str:
        """A scalar: every element of ``source`` is finite and within float16's range (before saturation)."""
        self.counter += 1
        base = f"{SCOPE}/finite_{self.counter}"
        int32 = tf.compat.v1.AttrValue(type=tf.int32.as_datatype_enum)
        flat = self._add("Reshape", f"{base}/flat", [source, self._const(f"{base}/shape", np.array([-1], np.int32))],
                         T=_float32(), Tshape=int32).name
        size = self._op("Abs", f"{base}/abs", [flat])
        within = self._add("LessEqual", f"{base}/within", [size, self._const(f"{base}/max", np.float32(
            H.FLOAT16_MAX))], T=_float32()).name  # False for NaN and inf too
        return self._add("All", f"{base}/all", [within, self._const(f"{base}/axis", np.int32(0))], Tidx=int32,
                         keep_dims=tf.compat.v1.AttrValue(b=False)).name + ":0"

    def external(self, tensor: str, mode: str) -> str:
        base = self.value.get(tensor, tensor)  # constants and Data are read as they are
        is_float32 = self.plan.graph.tensor(tensor).dtype == FLOAT32
        if mode == FLOAT16 and is_float32 and self.plan.tensor_dtypes.get(tensor) != FLOAT16:
            return self.round16(base)
        return base

    def _const(self, name: str, array) -> str:
        array = np.asarray(array)
        dtype = tf.as_dtype(array.dtype).as_datatype_enum
        self._add("Const", name, [], dtype=tf.compat.v1.AttrValue(type=dtype),
                  value=tf.compat.v1.AttrValue(tensor=tf.make_tensor_proto(array)))
        return name

    def _op(self, op: str, name: str, inputs: Sequence[str], **attrs) -> str:
        float32 = tf.compat.v1.AttrValue(type=tf.float32.as_datatype_enum)
        self._add(op, name, inputs, **dict({"T": float32}, **attrs))
        return name

    def _rms(self, base: str, source: str, rank: int) -> str:
        """``sqrt(mean(x**2))`` over every element of ``source`` (float32 scalar)."""
        axes = self._const(f"{base}/rms_axes", np.arange(rank, dtype=np.int32))
        square = self._op("Square", f"{base}/square", [source])
        mean = self._op("Mean", f"{base}/mean_square", [square, axes],
                        Tidx=tf.compat.v1.AttrValue(type=tf.int32.as_datatype_enum),
                        keep_dims=tf.compat.v1.AttrValue(b=False))
        return self._op("Sqrt", f"{base}/rms", [mean])

    def perturbed(self, member: str, source: str, node, inputs: Sequence[str]) -> str:
        """``source`` (the member's float32 output) with its fault planted; see :mod:`~.faults`."""
        fault = self.faults[member]
        shape = self.plan.graph.op(member).outputs[0].shape
        base = f"{SCOPE}/{member}"
        if fault.kind == F.NOISE:  # the original graph, node for node (committed samples stay bit-identical)
            factor = perturbation_factor(member, shape, fault.value, self.seed)
            const = self._const(f"{base}/perturb_factor", factor)
            out = self._op("Mul", f"{base}/perturbed", [source, const])
        elif fault.kind == F.BIAS:
            rms = self._rms(base, source, len(shape))
            shift = self._op("Mul", f"{base}/bias_shift", [rms, self._const(f"{base}/bias_rel",
                                                                             np.float32(fault.value))])
            out = self._op("Add", f"{base}/biased", [source, shift])
        elif fault.kind == F.SATURATE:
            limit = np.float32(fault.value)
            low = self._op("Minimum", f"{base}/saturate_max", [source, self._const(f"{base}/limit", limit)])
            out = self._op("Maximum", f"{base}/saturated", [low, self._const(f"{base}/minus_limit", -limit)])
        elif fault.kind == F.POSITIONS:
            positions = F.chosen_positions(member, shape, fault.count, self.seed)
            self.fault_details[member] = {"positions": [list(p) for p in positions]}
            out = self._wrong_positions(base, source, shape, positions)
        else:
            out = self._fp16_accumulation(member, node, inputs, fault.count)
        out = f"{out}:0"
        self.fault_points[member] = (source, out)
        return out

    def _wrong_positions(self, base: str, source: str, shape, positions) -> str:
        """``y = select(mask, -x - PUSH * rms(x) * s, x)``, ``s = 1`` where ``x > 0`` else ``-1``."""
        rms = self._rms(base, source, len(shape))
        zero = self._const(f"{base}/zero", np.float32(0))
        positive = self._add("Greater", f"{base}/positive", [source, zero],
                             T=tf.compat.v1.AttrValue(type=tf.float32.as_datatype_enum)).name
        step = self._add("Cast", f"{base}/positive_float", [positive],
                         SrcT=tf.compat.v1.AttrValue(type=tf.bool.as_datatype_enum),
                         DstT=tf.compat.v1.AttrValue(type=tf.float32.as_datatype_enum),
                         Truncate=tf.compat.v1.AttrValue(b=False)).name
        doubled = self._op("Mul", f"{base}/sign_x2", [step, self._const(f"{base}/two", np.float32(2))])
        sign = self._op("Sub", f"{base}/sign", [doubled, self._const(f"{base}/one", np.float32(1))])
        push = self._op("Mul", f"{base}/push", [rms, self._const(f"{base}/push_factor", np.float32(F.POSITION_PUSH))])
        pushed = self._op("Mul", f"{base}/signed_push", [sign, push])
        flipped = self._op("Neg", f"{base}/flipped", [source])
        wrong = self._op("Sub", f"{base}/wrong", [flipped, pushed])
        mask = self._const(f"{base}/positions_mask", F.position_mask(shape, positions))
        return self._op("Select", f"{base}/wrong_positions", [mask, wrong, source])

    def _fp16_accumulation(self, member: str, node, inputs: Sequence[str], chunk: int) -> str:
        """The op run once per chunk on its second input masked to the chunk (partial sums ``p_c``), then
        ``a_1 = fp16(p_1)``, ``a_c = fp16(a_{c-1} + p_c)``."""
        op = self.plan.graph.op(member)
        weight = self.plan.graph.tensor(op.inputs[1]).shape
        masks = F.reduction_masks(op.type, weight, op.attrs, chunk)
        self.fault_details[member] = {"chunks": len(masks)}
        base = f"{SCOPE}/{member}/fp16acc"
        accumulator = ""
        for k, mask in enumerate(masks):
            masked = self._op("Mul", f"{base}/weight_{k}", [inputs[1], self._const(f"{base}/mask_{k}", mask)])
            partial = tf.compat.v1.NodeDef()
            partial.CopyFrom(node)
            partial.name = f"{base}/partial_{k}"
            partial.input[1] = masked
            self.graph_def.node.append(partial)
            total = partial.name if k == 0 else self._op("Add", f"{base}/sum_{k}", [accumulator, partial.name])
            accumulator = self.round16(total).split(":")[0]
        return accumulator

    def add_compute_op(self, npu_op) -> None:
        group, mode = npu_op.group, npu_op.compute_dtype
        out_fp16 = bool(npu_op.outputs) and npu_op.outputs[0].dtype == FLOAT16
        exact = any(member in self.plan.exact for member in group.members)
        hardware = self.plan.hardware
        internal: Dict[str, str] = {}
        points: List[str] = []
        for member in group.members:
            node = tf.compat.v1.NodeDef()
            node.CopyFrom(self.nodes[member])
            node.name = f"{SCOPE}/{member}"
            inputs = []
            position = -1  # data inputs come before control inputs
            for source in self.nodes[member].input:
                if source.startswith("^"):
                    continue
                position += 1
                tensor = self.plan.aliases.get(_normalised(source), _normalised(source))
                if tensor in internal:
                    emulated = internal[tensor]
                    if member == group.activation and out_fp16:
                        emulated = self.round16(emulated)
                        points.append(emulated)
                    inputs.append(emulated)
                else:
                    kept = (member, position) in self.plan.fp32_inputs
                    inputs.append(self.external(tensor, FLOAT32 if kept else mode))
            if hardware.hf32_convolutions and not exact and mode == FLOAT32 and member == group.lead \
                    and node.op in T.CONV_TYPES | T.CONV_BACKPROP_INPUT_TYPES | T.CONV_BACKPROP_FILTER_TYPES:
                inputs = [self._hf32(f"{SCOPE}/{member}/hf32_{k}", tensor)
                          if self.plan.graph.op(member).inputs and k < 3 and self._is_float32_input(member, k)
                          else tensor for k, tensor in enumerate(inputs)]
            del node.input[:]
            node.input.extend(inputs)
            self.graph_def.node.append(node)
            for k in range(len(self.plan.graph.op(member).outputs)):
                internal[tensor_name(member, k)] = f"{SCOPE}/{member}:{k}"
            if hardware.native_kernels and not exact:
                kernel = self._ascend_kernel(member, node.op, inputs, out_fp16)
                if kernel is not None:
                    internal[tensor_name(member)] = kernel
            if member in self.faults and not exact and (mode == FLOAT16 or not self.faults[member].fp16_only):
                internal[tensor_name(member)] = self.perturbed(member, internal[tensor_name(member)], node, inputs)
        for out in npu_op.outputs:
            emulated = internal[out.tf_tensor]
            self.value[out.tf_tensor] = self.round16(emulated) if out.dtype == FLOAT16 else emulated
            if out.dtype == FLOAT16 and hardware.saturates:
                self.finite_flags.setdefault(npu_op.name, []).append(self._finite_flag(emulated))
        if hardware.saturates and points:
            self.finite_flags.setdefault(npu_op.name, []).extend(
                self._finite_flag(self.round_source[point]) for point in points)
        self.rounding_points[npu_op.name] = points

    # -- the Ascend kernels (hardware.py; each fact is cited in docs/emulated-numerics.md)
    def _is_float32_input(self, member: str, k: int) -> bool:
        source = self.plan.graph.op(member).inputs[k]
        return self.plan.graph.tensor(self.plan.aliases.get(source, source)).dtype == FLOAT32

    def _hf32(self, base: str, source: str) -> str:
        """``source`` (float32) rounded to HF32: 11 explicit mantissa bits, to nearest even, by its bits:
        ``(b + 0x7FF + ((b >> 12) & 1)) & ~0xFFF``."""
        int32 = tf.compat.v1.AttrValue(type=tf.int32.as_datatype_enum)
        single = tf.compat.v1.AttrValue(type=tf.float32.as_datatype_enum)
        dropped = H.HF32_DROPPED_BITS
        bits = self._add("Bitcast", f"{base}/bits", [source], T=single, type=int32).name
        shift = self._const(f"{base}/shift", np.int32(dropped))
        shifted = self._add("RightShift", f"{base}/shifted", [bits, shift], T=int32).name
        odd = self._add("BitwiseAnd", f"{base}/odd", [shifted, self._const(f"{base}/one", np.int32(1))],
                        T=int32).name
        half = self._add("Add", f"{base}/half", [odd, self._const(f"{base}/half_ulp",
                                                                  np.int32((1 << (dropped - 1)) - 1))], T=int32).name
        biased = self._add("Add", f"{base}/biased", [bits, half], T=int32).name
        kept = self._add("BitwiseAnd", f"{base}/kept", [biased, self._const(f"{base}/mask",
                                                                            np.int32(~((1 << dropped) - 1)))],
                         T=int32).name
        return self._add("Bitcast", f"{base}/hf32", [kept], T=int32, type=single).name + ":0"

    def _faithful16(self, base: str, source: str, shape) -> str:
        """A native float16 step: ``round16(v * (1 + NATIVE_STEP_ERROR * z))``, ``z`` uniform in [-1, 1] seeded by
        the step's name -- within one float16 ulp of ``v`` (hardware.py: the instructions' bound is not
        published)."""
        if shape is None or any(d is None or d < 0 for d in shape):
            return self.round16(source)
        factor = 1.0 + H.NATIVE_STEP_ERROR * F.uniform_unit(base, shape, self.seed)
        scaled = self._op("Mul", f"{base}/native_error", [source, self._const(f"{base}/native_factor", factor)])
        return self.round16(scaled)

    def _ascend_kernel(self, member: str, op_type: str, inputs: Sequence[str], out_fp16: bool) -> Optional[str]:
        """The member's output as the Ascend kernel computes it (float32 tensor name), or ``None`` where the
        TensorFlow kernel is the model (every op not named in hardware.py)."""
        info = self.plan.graph.op(member)
        modelled = op_type == "Erf" or (out_fp16 and (op_type == "Softmax" or op_type in H.NATIVE_FP16_TYPES))
        if not modelled or not info.outputs or info.outputs[0].dtype not in (FLOAT16, FLOAT32):
            return None
        shape = info.outputs[0].shape
        base = f"{SCOPE}/{member}/ascend"
        single = [self._as_float32(f"{base}/in_{k}", t, member, k) for k, t in enumerate(inputs)]
        if op_type == "Erf":
            out = self._erf(base, single[0])
        elif op_type == "Softmax" and out_fp16:
            axis = self._const(f"{base}/axis", np.int32(-1))
            row_max = self._add("Max", f"{base}/row_max", [single[0], axis], T=_float32(),
                                Tidx=tf.compat.v1.AttrValue(type=tf.int32.as_datatype_enum),
                                keep_dims=tf.compat.v1.AttrValue(b=True)).name
            shifted = self.round16(self._op("Sub", f"{base}/minus_max", [single[0], row_max]))
            out = self._op("Softmax", f"{base}/softmax", [shifted])
        elif op_type in H.NATIVE_FP16_TYPES and out_fp16:
            if op_type == "Sigmoid":
                x = single[0]
                clamp = self.plan.hardware.sigmoid_clamp
                if clamp is not None:
                    x = self._op("Maximum", f"{base}/clamped", [x, self._const(f"{base}/clamp", np.float32(clamp))])
                negated = self.round16(self._op("Neg", f"{base}/neg", [x]))
                exp = self._faithful16(f"{base}/exp", self._op("Exp", f"{base}/exp", [negated]), shape)
                one = self._const(f"{base}/one", np.float32(1))
                denominator = self.round16(self._op("Add", f"{base}/plus_one", [exp, one]))
                out = self._faithful16(f"{base}/rec", self._op("Reciprocal", f"{base}/rec", [denominator]), shape)
            else:
                out = self._faithful16(f"{base}/{op_type.lower()}",
                                       self._op(op_type, f"{base}/{op_type.lower()}", single[:2]), shape)
        else:
            return None
        if info.outputs[0].dtype == FLOAT16:  # an op of a float16 graph: its consumers read half tensors
            return self._add("Cast", f"{base}/to_graph_dtype", [out], SrcT=_float32(),
                             DstT=tf.compat.v1.AttrValue(type=tf.float16.as_datatype_enum),
                             Truncate=tf.compat.v1.AttrValue(b=False)).name + ":0"
        return out if ":" in out else out + ":0"

    def _as_float32(self, base: str, tensor: str, member: str, k: int) -> str:
        """``tensor`` as float32 (a float16 graph tensor is cast up, exactly)."""
        source = self.plan.graph.op(member).inputs[k]
        if self.plan.graph.tensor(self.plan.aliases.get(source, source)).dtype != FLOAT16:
            return tensor
        return self._add("Cast", base, [tensor], SrcT=tf.compat.v1.AttrValue(type=tf.float16.as_datatype_enum),
                         DstT=_float32(), Truncate=tf.compat.v1.AttrValue(b=False)).name

    def _erf(self, base: str, x: str) -> str:
        """``sign(x) (1 - (a1 t + a2 t^2 + a3 t^3) exp(-x^2))``, ``t = 1 / (1 + p |x|)`` in float32 (erf.py)."""
        def const(name, value):
            return self._const(f"{base}/{name}", np.float32(value))
        magnitude = self._op("Abs", f"{base}/abs", [x])
        t = self._op("Reciprocal", f"{base}/t", [self._op("Add", f"{base}/one_plus", [
            const("one", 1.0), self._op("Mul", f"{base}/p_abs", [const("p", H.ERF_P), magnitude])])])
        a1, a2, a3 = H.ERF_A
        t_a3 = self._op("Mul", f"{base}/t_a3", [t, const("a3", a3)])
        inner = self._op("Add", f"{base}/a2_plus", [const("a2", a2), t_a3])
        t_inner = self._op("Mul", f"{base}/t_inner", [t, inner])
        middle = self._op("Add", f"{base}/a1_plus", [const("a1", a1), t_inner])
        poly = self._op("Mul", f"{base}/poly", [t, middle])
        gauss = self._op("Exp", f"{base}/gauss", [self._op("Neg", f"{base}/minus_square", [
            self._op("Square", f"{base}/square", [x])])])
        tail = self._op("Mul", f"{base}/tail", [poly, gauss])
        value = self._op("Sub", f"{base}/one_minus", [const("one_b", 1.0), tail])
        return self._op("Mul", f"{base}/erf", [self._op("Sign", f"{base}/sign", [x]), value])

    def build(self):
        for op in self.plan.ops:
            if op.kind == "compute":
                self.add_compute_op(op)
        return self.graph_def


def _float32():
    return tf.compat.v1.AttrValue(type=tf.float32.as_datatype_enum)


def _normalised(source: str) -> str:
    op_name, index = split_tensor_name(source)
    return tensor_name(op_name, index)


def run_numerics(frozen: FrozenModel, plan: NpuPlan, batch: Sequence[np.ndarray],
                 perturb: Optional[Mapping[str, Union[float, str, F.Fault]]] = None, seed: int = 0) -> NumericsResult:
    """Compute the NPU value of every tensor the NPU ops of ``plan`` read or write (one session run).

    Parameters
    ----------
    frozen, plan : the frozen model and its planned NPU graph.
    batch : the input arrays, fed to the ``Data`` ops as they are.
    perturb : TF op name -> fault (:class:`~.faults.Fault`, a spec such as ``"bias:0.05"``, or a number:
        relative noise); ``seed`` fixes the noise and the positions.

    Returns
    -------
    NumericsResult
        float32 arrays in TF layout; float16 tensors hold float16-representable values.
    """
    faults = {op: F.as_fault(op, value) for op, value in (perturb or {}).items()}
    builder = _Builder(frozen, plan, faults, seed)
    graph_def = builder.build()
    fetch_names: List[str] = []
    keys: List[tuple] = []
    for op in plan.ops:
        if op.kind == "compute":
            for out in op.outputs:
                keys.append(("value", out.tf_tensor))
                fetch_names.append(builder.value[out.tf_tensor])
            for point in builder.rounding_points[op.name]:
                keys.append(("rounding", op.name))
                fetch_names.append(point)
            for flag in builder.finite_flags.get(op.name, []):
                keys.append(("finite", op.name))
                fetch_names.append(flag)
        elif op.kind == "const":
            keys.append(("const", op.outputs[0].tf_tensor))
            fetch_names.append(op.outputs[0].tf_tensor)
    for member, (before, after) in sorted(builder.fault_points.items()):
        keys += [("before", member), ("after", member)]
        fetch_names += [before, after]
    arrays = run_graph(frozen, fetch_names, batch, graph_def=graph_def) if fetch_names else []
    result = NumericsResult()
    planted: Dict[str, Dict[str, np.ndarray]] = {}
    for (kind, key), array in zip(keys, arrays):
        array = np.asarray(array)
        if kind == "value":
            result.values[key] = array
        elif kind == "const":
            result.constants[key] = array
        elif kind == "rounding":
            result.rounding.setdefault(key, []).append(array)
        elif kind == "finite":
            if not bool(array):
                result.saturated.add(key)
        else:
            planted.setdefault(key, {})[kind] = array
    for member, pair in planted.items():
        effect = F.fault_effect(faults[member], pair["before"], pair["after"])
        result.faults[member] = dict(effect, **builder.fault_details.get(member, {}))
    for tensor, array in zip(frozen.inputs, batch):
        result.values[_normalised(tensor)] = np.asarray(array)
    return result
