"""Turn a frozen TF graph into the NPU ops a GE Build graph would hold, in execution order.

Each NPU op reads ``(producer, output index)`` pairs; each output is an :class:`NpuTensor` (the TF tensor whose value
it carries, its device dtype and layout, its origin layout and shape). The rules come from
:mod:`~precision_tool.capture.emulate.op_tables` and :mod:`~precision_tool.capture.emulate.hardware`: ``Cast`` and
``TransData`` ops are inserted where a producer's dtype or layout differs from what a consumer needs, and constants
arrive folded, in the dtype and layout their consumer wants (batch-norm parameters in float32). Order: ``Data``,
``Const``, the executed ops, ``NetOutput``. What the plan holds: docs/emulate.md#what-the-emulated-npu-does; how it
is planned: docs/internals/emulator.md#npu_plan.
"""
from __future__ import annotations

from typing import Dict, FrozenSet, List, Sequence, Set, Tuple

from precision_tool.capture.emulate import op_tables as T
from precision_tool.formats.fusion_result import GRAPH_FUSION, UB_FUSION
from precision_tool.capture.emulate.fusion_groups import Fusion, FusionGroup, batchnorm_links, group_ops
from precision_tool.capture.emulate.hardware import IDEAL_HARDWARE, Hardware
from precision_tool.capture.emulate.graph_info import (TfGraph, TfOp, compute_ops, constant_ops, consumers,
                                                       split_tensor_name, tensor_aliases, tensor_name)
from precision_tool.capture.emulate.npu_graph import FLOAT16, FLOAT32, NpuOp, NpuPlan, NpuTensor, Ref

__all__ = ["FLOAT16", "FLOAT32", "NpuOp", "NpuPlan", "NpuTensor", "Ref", "plan_npu_graph"]

def _origin_format(fmt: str, rank: int) -> str:
    if fmt == "FRACTAL_NZ":
        return "ND"
    if fmt == "FRACTAL_Z":
        return "HWCN"
    return T.plain_format(rank)


def _per_channel_or_scalar(shape: Sequence[int], channels: int) -> bool:
    return not shape or (all(d == 1 for d in shape[:-1]) and shape[-1] in (1, channels))


class _Planner:
    def __init__(self, graph: TfGraph, fusion: Fusion, keep_fp32: FrozenSet[str] = frozenset(),
                 hardware: Hardware = IDEAL_HARDWARE, exact: FrozenSet[str] = frozenset()):
        self.keep_fp32 = keep_fp32
        self.hardware = hardware
        self.exact = exact
        self.graph = graph
        self.fusion = fusion if isinstance(fusion, bool) else any(  # a switch file: fused if any pass runs
            fusion.is_enabled(name, GRAPH_FUSION) for name in T.GRAPH_PASSES) or any(
            fusion.is_enabled(name, UB_FUSION) for name in T.UB_PASSES)
        self.aliases = tensor_aliases(graph)
        self.constants = constant_ops(graph)
        self.consumers = consumers(graph, self.aliases)
        compute = compute_ops(graph, self.constants)
        self.groups = group_ops(graph, compute, self.constants, self.aliases, self.consumers, fusion)
        self.fp32_inputs = self.batchnorm_parameters(compute)
        self.data_ops: List[NpuOp] = []
        self.const_ops: List[NpuOp] = []
        self.exec_ops: List[NpuOp] = []
        self.by_name: Dict[str, NpuOp] = {}
        self.produced: Dict[str, Ref] = {}
        self.converted: Dict[tuple, Ref] = {}
        self.inserted = 0

    # -- helpers
    def resolve(self, tensor: str) -> str:
        return self.aliases.get(tensor, tensor)

    def is_const(self, tensor: str) -> bool:
        return split_tensor_name(tensor)[0] in self.constants

    def tensor_of(self, ref: Ref) -> NpuTensor:
        return self.by_name[ref[0]].outputs[ref[1]]

    def add(self, op: NpuOp, bucket: List[NpuOp]) -> NpuOp:
        if op.name in self.by_name:
            raise ValueError(f"two NPU ops named {op.name!r}")
        self.by_name[op.name] = op
        bucket.append(op)
        return op

    # -- inserted ops and constants
    def insert(self, source: Ref, kind: str, dtype: str, fmt: str) -> Ref:
        key = (source, kind, dtype, fmt)
        if key in self.converted:
            return self.converted[key]
        tensor = self.tensor_of(source)
        origin_format = tensor.origin_format if fmt in T.DEVICE_FORMATS else T.plain_format(len(tensor.shape))
        out = NpuTensor(tensor.tf_tensor, dtype, fmt, origin_format, tensor.shape, is_origin=False)
        op_type = "Cast" if kind == "cast" else "TransData"
        op = self.add(NpuOp(f"trans_{op_type}_{self.inserted}", op_type, kind, (source,), (out,)), self.exec_ops)
        self.inserted += 1
        self.converted[key] = (op.name, 0)
        return (op.name, 0)

    def convert(self, source: Ref, dtype: str, fmt: str) -> Ref:
        """``source`` as ``dtype`` in layout ``fmt``, through TransData/Cast ops as needed."""
        current = source
        tensor = self.tensor_of(current)
        if tensor.format != fmt and tensor.format in T.DEVICE_FORMATS:
            current = self.insert(current, "transdata", tensor.dtype, T.plain_format(len(tensor.shape)))
        if self.tensor_of(current).dtype != dtype:
            current = self.insert(current, "cast", dtype, self.tensor_of(current).format)
        if self.tensor_of(current).format != fmt:
            current = self.insert(current, "transdata", dtype, fmt)
        return current

    def constant(self, tensor: str, dtype: str, fmt: str) -> Ref:
        key = ("const", tensor, dtype, fmt)
        if key in self.converted:
            return self.converted[key]
        info = self.graph.tensor(tensor)
        op_name, index = split_tensor_name(tensor)
        name = op_name if index == 0 else f"{op_name}_{index}"
        suffix = 1
        while name in self.by_name:
            name, suffix = f"{op_name}_{suffix}", suffix + 1
        out = NpuTensor(tensor, dtype, fmt, _origin_format(fmt, len(info.shape)), info.shape)
        self.add(NpuOp(name, "Const", "const", (), (out,)), self.const_ops)
        self.converted[key] = (name, 0)
        return (name, 0)

    # -- planning
    def batchnorm_parameters(self, compute: Sequence[TfOp]) -> frozenset:
        """``(TF op, input position)`` of every batch-norm parameter: read in float32 (op_tables)."""
        found: Set[Tuple[str, int]] = set()
        for op in compute:
            if op.type in T.BATCHNORM_TYPES:
                found.update((op.name, k) for k in T.BATCHNORM_PARAMETER_POSITIONS if k < len(op.inputs))
            elif op.type in T.BATCHNORM_GRAD_TYPES:
                found.update((op.name, k) for k in T.BATCHNORM_GRAD_FP32_POSITIONS if k < len(op.inputs))
        for name in batchnorm_links(self.graph, compute, self.constants, self.aliases, self.consumers):
            found.update((name, k) for k, source in enumerate(self.graph.op(name).inputs)
                         if self.is_const(self.resolve(source)))
        return frozenset(found)

    def compute_dtypes(self, group: FusionGroup, lead: TfOp, external: List[str]) -> Tuple[str, str]:
        """``(input, output)`` dtype of a group's float32 graph tensors: float32 for an op a ``customize_dtypes``
        line names, an ``--exact`` op and a variable update's arithmetic; else the precision mode's
        (:meth:`~.hardware.Hardware.dtypes`). ``external``: the tensors that decide (batch-norm parameters do not)."""
        if lead.name in self.keep_fp32 or lead.attr(T.KEEP_FP32_ATTR) is True \
                or any(member in self.exact for member in group.members):
            return FLOAT32, FLOAT32
        inputs_fp16 = any(not self.is_const(tensor) and self.tensor_of(self.produced[tensor]).dtype == FLOAT16
                          for tensor in external)
        return self.hardware.dtypes(lead.type, inputs_fp16)

    def elementwise_format(self, lead: TfOp, external: List[str]) -> str:
        """The device layout an elementwise op keeps, or its plain layout."""
        out = lead.outputs[0]
        plain = T.plain_format(len(out.shape))
        if lead.type not in T.ELEMENTWISE_TYPES or not out.is_float:
            return plain
        non_const = [t for t in external if not self.is_const(t)]
        if not non_const or any(self.graph.tensor(t).shape != out.shape for t in non_const):
            return plain
        channels = out.shape[-1] if out.shape else 1
        for tensor in external:
            if self.is_const(tensor):
                shape = self.graph.tensor(tensor).shape
                if shape != out.shape and not _per_channel_or_scalar(shape, channels):
                    return plain
        formats = [self.tensor_of(self.produced[t]).format for t in non_const]
        device = [f for f in formats if f in ("NC1HWC0", "FRACTAL_NZ")]
        if not device:
            return plain
        fmt = device[0]
        if (fmt == "NC1HWC0" and len(out.shape) != 4) or (fmt == "FRACTAL_NZ" and len(out.shape) < 2):
            return plain
        return fmt

    def output_format(self, lead: TfOp, group_format: str) -> str:
        rank = len(lead.outputs[0].shape) if lead.outputs else 0
        if lead.type in T.CONV_TYPES | T.VECTOR_5HD_TYPES | T.CONV_BACKPROP_INPUT_TYPES and rank == 4:
            return "NC1HWC0"
        if lead.type in T.CONV_BACKPROP_FILTER_TYPES and rank == 4:
            return "FRACTAL_Z"
        if lead.type in T.MATMUL_TYPES and rank >= 2:
            return "FRACTAL_NZ"
        return group_format

    def input_format(self, member: TfOp, is_lead: bool, position: int, tensor: str, group_format: str) -> str:
        info = self.graph.tensor(tensor)
        rank = len(info.shape)
        if is_lead and member.type in T.CONV_TYPES and rank == 4 and position in (0, 1):
            return "NC1HWC0" if position == 0 else "FRACTAL_Z"
        if is_lead and member.type in T.CONV_BACKPROP_INPUT_TYPES and rank == 4 and position in (1, 2):
            return "FRACTAL_Z" if position == 1 else "NC1HWC0"
        if is_lead and member.type in T.CONV_BACKPROP_FILTER_TYPES and rank == 4 and position in (0, 2):
            return "NC1HWC0"
        if is_lead and member.type in T.VECTOR_5HD_TYPES and rank == 4 and (
                position == 0 or (position == 1 and member.type in T.BATCHNORM_GRAD_TYPES)):
            return "NC1HWC0"
        if is_lead and member.type in T.MATMUL_TYPES and position in (0, 1) and rank >= 2:
            return "FRACTAL_NZ"
        if group_format in T.DEVICE_FORMATS and member.outputs and info.shape == member.outputs[0].shape:
            return group_format
        return T.plain_format(rank)

    def plan_group(self, group: FusionGroup) -> None:
        members = [self.graph.op(name) for name in group.members]
        inside = {tensor_name(name, k) for name in group.members
                  for k in range(len(self.graph.op(name).outputs))}
        external = []  # (member, is_lead, position, tensor)
        for k, member in enumerate(members):
            for position, source in enumerate(member.inputs):
                tensor = self.resolve(source)
                if tensor not in inside and not self.graph.tensor(tensor).dynamic:  # a reserve space: not on the NPU
                    external.append((member, k == 0, position, tensor))
        lead = members[0]
        tensors = [e[3] for e in external]
        dtype, out_mode = self.compute_dtypes(group, lead, [e[3] for e in external
                                                          if (e[0].name, e[2]) not in self.fp32_inputs])
        group_format = self.elementwise_format(lead, tensors) if not group.is_fused else T.plain_format(0)
        inputs = []
        for member, is_lead, position, tensor in external:
            info = self.graph.tensor(tensor)
            want_dtype = dtype if info.dtype == FLOAT32 else info.dtype
            if info.dtype == FLOAT32 and (member.name, position) in self.fp32_inputs:
                want_dtype = FLOAT32
            fmt = self.input_format(member, is_lead, position, tensor, group_format)
            if self.is_const(tensor):
                inputs.append(self.constant(tensor, want_dtype, fmt))
            else:
                inputs.append(self.convert(self.produced[tensor], want_dtype, fmt))
        out_format = self.output_format(lead, group_format)
        last = members[-1]
        # A fused op stands for its last member's y; so does BNInfer, which has no other output (the
        # inference batch norm's statistics and reserve spaces are neither computed nor dumped).
        # A training batch norm (BNTrainingUpdate) and its gradient also write statistics / parameter gradients,
        # in float32; their reserve spaces (dynamic) are not written.
        training = last.type in T.BATCHNORM_TYPES and last.attr("is_training") is True
        if group.is_fused or (last.type in T.BATCHNORM_TYPES and not training):
            slots = [0]
        elif last.type in T.BATCHNORM_GRAD_TYPES:
            slots = [0, 1, 2]  # x, scale and offset gradients; 3-4 are reserve spaces the NPU has not
        else:
            slots = [k for k, info in enumerate(last.outputs) if not info.dynamic]
        statistics = training or last.type in T.BATCHNORM_GRAD_TYPES
        outputs = []
        for k in slots:
            info = last.outputs[k]
            same_rank = len(info.shape) == len(last.outputs[0].shape)
            fmt = out_format if info.is_float and same_rank else T.plain_format(len(info.shape))
            out_dtype = out_mode if info.dtype == FLOAT32 else info.dtype
            if (statistics and k > 0) or last.type in T.CONV_BACKPROP_FILTER_TYPES:
                out_dtype = info.dtype
            outputs.append(NpuTensor(tensor_name(last.name, k), out_dtype, fmt, _origin_format(fmt, len(info.shape)),
                                     info.shape))
        op = self.add(NpuOp(group.name, T.npu_op_type(lead.type, lead.attr("is_training") is True), "compute",
                            tuple(inputs), tuple(outputs),
                            group=group, compute_dtype=dtype), self.exec_ops)
        for k, out in enumerate(outputs):
            self.produced[out.tf_tensor] = (op.name, k)

    def plan(self) -> NpuPlan:
        for tensor in self.graph.inputs:
            op_name, _ = split_tensor_name(tensor)
            info = self.graph.op(op_name).outputs[0]
            out = NpuTensor(tensor_name(op_name), info.dtype, T.plain_format(len(info.shape)),
                            T.plain_format(len(info.shape)), info.shape)
            self.add(NpuOp(op_name, "Data", "data", (), (out,)), self.data_ops)
            self.produced[tensor_name(op_name)] = (op_name, 0)
        for group in self.groups:
            self.plan_group(group)
        net_inputs = []
        for tensor in self.graph.outputs:
            resolved = self.resolve(tensor)
            if resolved in self.produced:
                info = self.graph.tensor(resolved)
                net_inputs.append(self.convert(self.produced[resolved], info.dtype, T.plain_format(len(info.shape))))
        netoutput = NpuOp("Node_Output", "NetOutput", "netoutput", tuple(net_inputs), ())
        ops = tuple(self.data_ops + self.const_ops + self.exec_ops + [netoutput])
        dtypes = {tensor: self.tensor_of(ref).dtype for tensor, ref in self.produced.items()}
        return NpuPlan(ops, self.graph, fusion=self.fusion, tensor_dtypes=dtypes, aliases=dict(self.aliases),
                       constants=frozenset(self.constants), fp32_inputs=self.fp32_inputs, hardware=self.hardware,
                       exact=self.exact)


def plan_npu_graph(graph: TfGraph, fusion: Fusion = True, keep_fp32: FrozenSet[str] = frozenset(),
                   hardware: Hardware = IDEAL_HARDWARE, exact: FrozenSet[str] = frozenset()) -> NpuPlan:
    """The NPU ops GE would build for ``graph`` (see the module docstring).

    Parameters
    ----------
    graph : the frozen TF graph (:class:`~.graph_info.TfGraph`, topological order).
    fusion : ``False`` fuses nothing (every fusion pass switched off); switches (a fusion switch file) run the
        passes they leave on.
    keep_fp32 : NPU op names computed in float32 whatever their type (``customize_dtypes`` lines naming
        them with float32 dtypes; a name GE fused away matches nothing, as on the NPU).
    hardware : the modelled NPU and precision mode (:class:`~.hardware.Hardware`; the ``ideal`` model by default).
    exact : TF op names whose NPU op computes as the reference does (``--exact``): float32 in and out.

    Returns
    -------
    NpuPlan
        ops in execution order: ``Data``, ``Const``, executed ops (with Cast/TransData), ``NetOutput``.
    """
    return _Planner(graph, fusion, keep_fp32, hardware, exact).plan()
