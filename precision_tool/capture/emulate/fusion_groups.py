"""Group TensorFlow compute ops into NPU ops the way GE's fusion passes would.

With fusion on, a Cube op (Conv2D, DepthwiseConv2dNative, MatMul, BatchMatMul) absorbs the chain after it while
each link is the only consumer of the previous one: per-channel bias and affine ops (``ConvBiasaddFusionPass``,
``ConvBatchnormFusionPass``, ``MatMulBiasAddFusionPass``), after a ``Conv2D`` an inference batch norm, and one
activation (``TbeConvElemwiseFusionPass`` / ``TbeMatmulElemwiseFusionPass``); a pass switched off stops the chain.
The fused op is named after the Cube op; with fusion off every compute op is a group of its own.
:func:`batchnorm_links` finds the ops applying batch-norm parameters, with fusion on or off alike. The table:
docs/emulate.md#what-the-emulated-npu-does; the conditions: docs/internals/emulator.md#fusion_groups.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, List, Mapping, Optional, Sequence, Set, Tuple, Union

from precision_tool.capture.emulate import op_tables as T
from precision_tool.capture.emulate.graph_info import TfGraph, TfOp, split_tensor_name, tensor_name
from precision_tool.formats.fusion_result import GRAPH_FUSION, UB_FUSION, FusionSwitches

Fusion = Union[bool, FusionSwitches]


def as_switches(fusion: Fusion) -> FusionSwitches:
    """``True``: every pass on; ``False``: every pass off (``ALL`` off in both families); switches as given."""
    if isinstance(fusion, FusionSwitches):
        return fusion
    return FusionSwitches() if fusion else FusionSwitches.all_off()


@dataclass(frozen=True)
class FusionGroup:
    """TF ops executed as one NPU op. ``members[0]`` (the lead) names it; the last member's output
    0 is the fused op's output. ``activation`` is the absorbed activation op, if any."""

    members: Tuple[str, ...]
    graph_passes: Tuple[str, ...] = ()
    ub_pass: str = ""
    activation: Optional[str] = None

    @property
    def name(self) -> str:
        return self.members[0]

    @property
    def lead(self) -> str:
        return self.members[0]

    @property
    def last(self) -> str:
        return self.members[-1]

    @property
    def is_fused(self) -> bool:
        return len(self.members) > 1


def _per_channel(shape: Sequence[int], channels: int) -> bool:
    if not shape:
        return True
    return all(dim == 1 for dim in shape[:-1]) and shape[-1] in (1, channels)


def _affine_pass(lead: TfOp, link: TfOp, seen_mul: bool) -> Optional[str]:
    """The graph pass that absorbs ``link`` after ``lead``; ``None`` if it cannot be absorbed."""
    if lead.type in T.CONV_TYPES:
        if link.type == "Mul":
            return T.PASS_CONV_BATCHNORM
        return T.PASS_CONV_BATCHNORM if seen_mul else T.PASS_CONV_BIAS
    if link.type in ("BiasAdd", "Add", "AddV2"):
        return T.PASS_MATMUL_BIAS
    return None


class _Grouper:
    def __init__(self, graph: TfGraph, constants: Set[str], aliases: Mapping[str, str],
                 consumers: Mapping[str, List[Tuple[str, int]]], switches: Optional[FusionSwitches] = None):
        self.switches = switches if switches is not None else FusionSwitches()
        self.graph = graph
        self.constants = constants
        self.aliases = aliases
        self.consumers = consumers
        self.outputs = {aliases.get(t, t) for t in graph.outputs}

    def _only_consumer(self, op_name: str) -> Optional[TfOp]:
        """The op reading ``op_name:0``, if it is the only reader of any of ``op_name``'s outputs and
        ``op_name:0`` is no model output."""
        tensor = tensor_name(op_name)
        users = self.consumers.get(tensor, [])
        if tensor in self.outputs or len(users) != 1:
            return None
        for k in range(1, len(self.graph.op(op_name).outputs)):  # FusedBatchNorm's statistics, unread
            other = tensor_name(op_name, k)
            if self.consumers.get(other) or other in self.outputs:
                return None
        return self.graph.op(users[0][0])

    def _batchnorm_ok(self, lead: TfOp, link: TfOp, previous: str) -> bool:
        """``link`` is a batch norm ``ConvBatchnormFusionPass`` merges into ``lead`` (the conditions:
        docs/internals/emulator.md#fusion_groups)."""
        if lead.type not in T.CONV_BATCHNORM_LEADS or len(link.inputs) < 5 or len(lead.inputs) < 2:
            return False
        if link.attr("is_training") is True:
            return False  # a training batch norm computes its statistics: BNTrainingReduce + BNTrainingUpdate
        if split_tensor_name(self.aliases.get(lead.inputs[1], lead.inputs[1]))[0] not in self.constants:
            return False  # CANN: no fusion when the convolution's filter is not a constant
        sources = [self.aliases.get(t, t) for t in link.inputs]
        if sources[0] != tensor_name(previous) or tensor_name(previous) in sources[1:]:
            return False
        return all(split_tensor_name(t)[0] in self.constants for t in sources[1:5])

    def _constant_operand_ok(self, link: TfOp, previous: str, channels: int) -> bool:
        """``link`` reads ``previous:0`` once (first input for Sub/BiasAdd) and a per-channel constant."""
        sources = [self.aliases.get(t, t) for t in link.inputs]
        if len(sources) != 2 or sources.count(tensor_name(previous)) != 1:
            return False
        data_position = sources.index(tensor_name(previous))
        if link.type in ("Sub", "BiasAdd") and data_position != 0:
            return False
        other = sources[1 - data_position]
        if split_tensor_name(other)[0] not in self.constants:
            return False
        return _per_channel(self.graph.tensor(other).shape, channels)

    def group(self, lead: TfOp) -> FusionGroup:
        members, passes = [lead.name], []
        channels = lead.outputs[0].shape[-1] if lead.outputs and lead.outputs[0].shape else 0
        seen_mul = seen_batchnorm = False
        affine_count = 0
        activation = None
        current = lead.name
        while True:
            link = self._only_consumer(current)
            if link is None:
                break
            if link.type in T.ACTIVATION_TYPES and len(link.inputs) == 1:
                ub = T.PASS_UB_MATMUL_ELEMWISE if lead.type in T.MATMUL_TYPES else T.PASS_UB_CONV_ELEMWISE
                if self.switches.is_enabled(ub, UB_FUSION):
                    activation = link.name
                    members.append(link.name)
                break
            if seen_batchnorm:
                break
            if link.type in T.BATCHNORM_TYPES:
                if (seen_mul or not self._batchnorm_ok(lead, link, current)
                        or not self.switches.is_enabled(T.PASS_CONV_BATCHNORM, GRAPH_FUSION)):
                    break
                seen_batchnorm = True
                members.append(link.name)
                if T.PASS_CONV_BATCHNORM not in passes:
                    passes.append(T.PASS_CONV_BATCHNORM)
                current = link.name
                continue
            if link.type not in T.AFFINE_TYPES or not self._constant_operand_ok(link, current, channels):
                break
            if lead.type in T.MATMUL_TYPES and affine_count == 1:
                break
            pass_name = _affine_pass(lead, link, seen_mul)
            if pass_name is None or not self.switches.is_enabled(pass_name, GRAPH_FUSION):
                break
            seen_mul = seen_mul or link.type == "Mul"
            affine_count += 1
            members.append(link.name)
            if pass_name not in passes:
                passes.append(pass_name)
            current = link.name
        ub_pass = ""
        if activation is not None:
            ub_pass = T.PASS_UB_MATMUL_ELEMWISE if lead.type in T.MATMUL_TYPES else T.PASS_UB_CONV_ELEMWISE
        return FusionGroup(tuple(members), tuple(passes), ub_pass, activation)


def group_ops(graph: TfGraph, compute: Sequence[TfOp], constants: Set[str], aliases: Mapping[str, str],
              consumers: Mapping[str, List[Tuple[str, int]]], fusion: Fusion = True) -> List[FusionGroup]:
    """The NPU ops, as groups of ``compute`` ops, in execution order (a group where its lead is).

    Parameters
    ----------
    graph : the frozen graph; ``compute`` its compute ops in topological order.
    constants, aliases, consumers : from :mod:`precision_tool.capture.emulate.graph_info`.
    fusion : ``False`` gives one group per op (GE with every fusion pass switched off); a
        :class:`~precision_tool.formats.fusion_result.FusionSwitches` runs only the passes it leaves on.
    """
    if fusion is False:
        return [FusionGroup((op.name,)) for op in compute]
    grouper = _Grouper(graph, constants, aliases, consumers, as_switches(fusion))
    taken: Set[str] = set()
    groups: List[FusionGroup] = []
    for op in compute:
        if op.name in taken:
            continue
        group = grouper.group(op) if op.type in T.FUSION_LEAD_TYPES else FusionGroup((op.name,))
        taken.update(group.members)
        groups.append(group)
    return groups


def batchnorm_links(graph: TfGraph, compute: Sequence[TfOp], constants: Set[str], aliases: Mapping[str, str],
                    consumers: Mapping[str, List[Tuple[str, int]]]) -> Set[str]:
    """Names of the TF ops that apply a batch norm's scale or offset after a convolution
    (docs/internals/emulator.md#fusion_groups): the same chains with fusion on or off."""
    grouper = _Grouper(graph, constants, aliases, consumers)
    links: Set[str] = set()
    for op in compute:
        if op.type not in T.CONV_TYPES:
            continue
        group = grouper.group(op)
        channels = op.outputs[0].shape[-1]
        previous, started = op.name, False
        for name in group.members[1:]:
            if name == group.activation:
                break
            link = graph.op(name)
            if not started and link.type == "Mul":
                sources = [aliases.get(t, t) for t in link.inputs]
                other = sources[1 - sources.index(tensor_name(previous))]
                shape = graph.tensor(other).shape
                started = bool(shape) and shape[-1] == channels
            if started:
                links.add(name)
            previous = name
    return links


def pass_counts(groups: Sequence[FusionGroup]) -> Dict[str, Dict[str, int]]:
    """``{"graph_fusion": {pass: n}, "ub_fusion": {pass: n}}``: how many fused ops each pass made."""
    counts: Dict[str, Dict[str, int]] = {"graph_fusion": {}, "ub_fusion": {}}
    for group in groups:
        for name in group.graph_passes:
            counts["graph_fusion"][name] = counts["graph_fusion"].get(name, 0) + 1
        if group.ub_pass:
            counts["ub_fusion"][group.ub_pass] = counts["ub_fusion"].get(group.ub_pass, 0) + 1
    return counts
