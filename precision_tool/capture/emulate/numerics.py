"""NPU numerics on the CPU: one TensorFlow run that computes what every NPU op would output.

The frozen graph is extended with a copy of every compute op (``npu_emu/<tf name>``), all in float32
kernels but fed with the values the NPU would feed them:

* an op computing in float16 (see :mod:`~precision_tool.capture.emulate.op_tables`) reads every float
  input rounded to float16 (``Cast`` to ``DT_HALF`` and back: weights, ``Data`` and float32 tensors),
  except batch-norm parameters (``NpuPlan.fp32_inputs``), which it reads in float32 as they are;
  products of float16 values are exact in float32, so a float32 Conv2D/MatMul on rounded inputs *is*
  "float16 in, float32 accumulation" -- what TensorFlow's own float16 kernels do on the CPU;
* a fused op keeps its internal values in float32 and rounds once, at its output, and once before
  its absorbed activation (where the Cube result leaves the accumulator -- where an overflow shows);
* an unfused op rounds its float16 output, so with fusion off every op boundary rounds;
* ``--perturb OP=REL`` multiplies OP's output by ``1 + REL * z`` (``z`` standard normal, fixed by the
  seed and the op name) before anything reads it: an imprecise kernel whose error propagates.

Values come back as float32 arrays holding float16-representable numbers for float16 tensors (the
casting to float16 is exact), in the TF (origin) layout.
"""
from __future__ import annotations

import zlib
from dataclasses import dataclass, field
from typing import Dict, List, Mapping, Optional, Sequence

import numpy as np

from precision_tool.capture.emulate.graph_info import split_tensor_name, tensor_name
from precision_tool.capture.emulate.plan import FLOAT16, FLOAT32, NpuPlan
from precision_tool.capture.emulate.tf_graph import FrozenModel, run_graph
from precision_tool.lazy import lazy_import

tf = lazy_import("tensorflow")

SCOPE = "npu_emu"


def perturbation_factor(op_name: str, shape, rel: float, seed: int) -> np.ndarray:
    """``1 + rel * z`` with ``z`` standard normal, reproducible from ``seed`` and ``op_name``."""
    rng = np.random.default_rng([int(seed), zlib.crc32(op_name.encode("utf-8"))])
    return (1.0 + rel * rng.standard_normal(tuple(shape))).astype(np.float32)


@dataclass
class NumericsResult:
    """``values``: NPU value of every Data/compute output TF tensor (float32 arrays);
    ``constants``: every folded constant tensor an NPU op reads; ``rounding``: per compute op, the
    values rounded inside it before its activation (overflow shows there first)."""

    values: Dict[str, np.ndarray] = field(default_factory=dict)
    constants: Dict[str, np.ndarray] = field(default_factory=dict)
    rounding: Dict[str, List[np.ndarray]] = field(default_factory=dict)


class _Builder:
    def __init__(self, frozen: FrozenModel, plan: NpuPlan, perturb: Mapping[str, float], seed: int):
        self.plan = plan
        self.graph_def = tf.compat.v1.GraphDef.FromString(frozen.graph_def)
        self.nodes = {node.name: node for node in self.graph_def.node}
        self.perturb = dict(perturb)
        self.seed = seed
        self.value: Dict[str, str] = {}      # TF tensor -> emulated tensor name (NPU value)
        self.rounded: Dict[str, str] = {}
        self.rounding_points: Dict[str, List[str]] = {}
        self.counter = 0

    def _add(self, op: str, name: str, inputs: Sequence[str], **attrs):
        node = self.graph_def.node.add(op=op, name=name)
        node.input.extend(inputs)
        for key, value in attrs.items():
            node.attr[key].CopyFrom(value)
        return node

    def round16(self, source: str) -> str:
        if source not in self.rounded:
            self.counter += 1
            base = f"{SCOPE}/round_{self.counter}"
            half = tf.compat.v1.AttrValue(type=tf.float16.as_datatype_enum)
            single = tf.compat.v1.AttrValue(type=tf.float32.as_datatype_enum)
            no = tf.compat.v1.AttrValue(b=False)
            self._add("Cast", f"{base}/to_half", [source], SrcT=single, DstT=half, Truncate=no)
            self._add("Cast", f"{base}/to_float", [f"{base}/to_half"], SrcT=half, DstT=single, Truncate=no)
            self.rounded[source] = f"{base}/to_float:0"
        return self.rounded[source]

    def external(self, tensor: str, mode: str) -> str:
        base = self.value.get(tensor, tensor)  # constants and Data are read as they are
        is_float32 = self.plan.graph.tensor(tensor).dtype == FLOAT32
        if mode == FLOAT16 and is_float32 and self.plan.tensor_dtypes.get(tensor) != FLOAT16:
            return self.round16(base)
        return base

    def perturbed(self, member: str, source: str) -> str:
        shape = self.plan.graph.op(member).outputs[0].shape
        factor = perturbation_factor(member, shape, self.perturb[member], self.seed)
        const = self._add("Const", f"{SCOPE}/{member}/perturb_factor", [],
                          dtype=tf.compat.v1.AttrValue(type=tf.float32.as_datatype_enum),
                          value=tf.compat.v1.AttrValue(tensor=tf.make_tensor_proto(factor)))
        self._add("Mul", f"{SCOPE}/{member}/perturbed", [source, const.name],
                  T=tf.compat.v1.AttrValue(type=tf.float32.as_datatype_enum))
        return f"{SCOPE}/{member}/perturbed:0"

    def add_compute_op(self, npu_op) -> None:
        group, mode = npu_op.group, npu_op.compute_dtype
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
                    if member == group.activation and mode == FLOAT16:
                        emulated = self.round16(emulated)
                        points.append(emulated)
                    inputs.append(emulated)
                else:
                    kept = (member, position) in self.plan.fp32_inputs
                    inputs.append(self.external(tensor, FLOAT32 if kept else mode))
            del node.input[:]
            node.input.extend(inputs)
            self.graph_def.node.append(node)
            for k in range(len(self.plan.graph.op(member).outputs)):
                internal[tensor_name(member, k)] = f"{SCOPE}/{member}:{k}"
            if member in self.perturb:
                internal[tensor_name(member)] = self.perturbed(member, internal[tensor_name(member)])
        for out in npu_op.outputs:
            emulated = internal[out.tf_tensor]
            self.value[out.tf_tensor] = self.round16(emulated) if out.dtype == FLOAT16 else emulated
        self.rounding_points[npu_op.name] = points

    def build(self):
        for op in self.plan.ops:
            if op.kind == "compute":
                self.add_compute_op(op)
        return self.graph_def


def _normalised(source: str) -> str:
    op_name, index = split_tensor_name(source)
    return tensor_name(op_name, index)


def run_numerics(frozen: FrozenModel, plan: NpuPlan, batch: Sequence[np.ndarray],
                 perturb: Optional[Mapping[str, float]] = None, seed: int = 0) -> NumericsResult:
    """Compute the NPU value of every tensor the NPU ops of ``plan`` read or write (one session run).

    Parameters
    ----------
    frozen, plan : the frozen model and its planned NPU graph.
    batch : the input arrays, fed to the ``Data`` ops as they are.
    perturb : TF op name -> relative noise (see the module docstring); ``seed`` fixes the noise.

    Returns
    -------
    NumericsResult
        float32 arrays in TF layout; float16 tensors hold float16-representable values.
    """
    builder = _Builder(frozen, plan, perturb or {}, seed)
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
        elif op.kind == "const":
            keys.append(("const", op.outputs[0].tf_tensor))
            fetch_names.append(op.outputs[0].tf_tensor)
    arrays = run_graph(frozen, fetch_names, batch, graph_def=graph_def) if fetch_names else []
    result = NumericsResult()
    for (kind, key), array in zip(keys, arrays):
        array = np.asarray(array)
        if kind == "value":
            result.values[key] = array
        elif kind == "const":
            result.constants[key] = array
        else:
            result.rounding.setdefault(key, []).append(array)
    for tensor, array in zip(frozen.inputs, batch):
        result.values[_normalised(tensor)] = np.asarray(array)
    return result
