"""The records of a planned NPU (GE Build) graph: :class:`NpuTensor`, :class:`NpuOp`, :class:`NpuPlan`.

Plain data, filled by :mod:`precision_tool.capture.emulate.npu_plan`; read by the numerics, the value
derivation and the artifact writers.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, List, Optional, Tuple

from precision_tool.capture.emulate import op_tables as T
from precision_tool.capture.emulate.fusion_groups import FusionGroup
from precision_tool.capture.emulate.graph_info import TfGraph
from precision_tool.capture.emulate.hardware import IDEAL_HARDWARE, Hardware
from precision_tool.formats import layouts

Ref = Tuple[str, int]
FLOAT16, FLOAT32 = "float16", "float32"
TASK_KINDS = ("compute", "cast", "transdata")


@dataclass(frozen=True)
class NpuTensor:
    """One NPU op output.

    ``tf_tensor`` is the TF tensor whose values it holds (for ``Cast``/``TransData`` the tensor they
    carry, with ``is_origin`` False); ``shape`` is the origin (TF) shape in ``origin_format``.
    """

    tf_tensor: str
    dtype: str
    format: str
    origin_format: str
    shape: Tuple[int, ...]
    is_origin: bool = True

    @property
    def device_shape(self) -> Tuple[int, ...]:
        if self.format == self.origin_format or self.format not in T.DEVICE_FORMATS:
            return tuple(self.shape)
        return tuple(layouts.device_shape(self.shape, self.origin_format, self.format))


@dataclass(frozen=True)
class NpuOp:
    """One op of the Build graph. ``kind`` is data, const, compute, cast, transdata or netoutput;
    compute ops carry their :class:`FusionGroup` and the dtype they compute in."""

    name: str
    type: str
    kind: str
    inputs: Tuple[Ref, ...] = ()
    outputs: Tuple[NpuTensor, ...] = ()
    group: Optional[FusionGroup] = None
    compute_dtype: str = ""

    @property
    def is_task(self) -> bool:
        """Executed on the device and dumped (compute, Cast, TransData)."""
        return self.kind in TASK_KINDS

    @property
    def tf_ops(self) -> Tuple[str, ...]:
        return self.group.members if self.group is not None else ()


@dataclass
class NpuPlan:
    """The planned Build graph. ``tensor_dtypes`` maps every non-constant TF tensor the NPU produces
    (Data and compute outputs) to its device dtype. ``fp32_inputs`` holds ``(TF op, input position)``
    of every batch-norm parameter: read in float32 whatever the op's precision (``op_tables``). ``hardware``: the
    modelled NPU (:mod:`~.hardware`); ``exact``: the TF ops ``--exact`` computes as the reference does."""

    ops: Tuple[NpuOp, ...]
    graph: TfGraph
    fusion: bool
    tensor_dtypes: Dict[str, str] = field(default_factory=dict)
    aliases: Dict[str, str] = field(default_factory=dict)
    constants: frozenset = frozenset()
    fp32_inputs: frozenset = frozenset()
    hardware: Hardware = IDEAL_HARDWARE
    exact: frozenset = frozenset()

    def __post_init__(self):
        self._by_name = {op.name: op for op in self.ops}
        self._by_tf_op = {member: op for op in self.ops for member in op.tf_ops}

    def op(self, name: str) -> NpuOp:
        return self._by_name[name]

    def tensor(self, ref: Ref) -> NpuTensor:
        return self._by_name[ref[0]].outputs[ref[1]]

    def input_tensors(self, op: NpuOp) -> List[NpuTensor]:
        return [self.tensor(ref) for ref in op.inputs]

    def op_for_tf(self, tf_op: str) -> Optional[NpuOp]:
        """The compute op implementing TF op ``tf_op`` (``None`` for constants and inputs)."""
        return self._by_tf_op.get(tf_op)

    @property
    def tasks(self) -> List[NpuOp]:
        return [op for op in self.ops if op.is_task]

    @property
    def groups(self) -> List[FusionGroup]:
        return [op.group for op in self.ops if op.kind == "compute" and op.group is not None]
