"""Which TF ops to replay for each NPU op, fed from where, fetched as what -- from names only (no TensorFlow).

For every NPU op with a compared output, :func:`plan_replay` makes a :class:`ReplayUnit`, or says in one line why
the op cannot be replayed. Its TF ops (``members``) are the op's ``_datadump_original_op_names``, else its own name,
none stateful or random (:data:`NOT_REPLAYABLE`); each external input is fed from the op's own dump (``npu``), else
the reference (``reference``), else a ``Const`` of the reference graph (``constant``), else the dump's input by
position. GE-inserted ``Cast``/``TransData`` ops are ``conversion`` units. Each rule:
docs/internals/replay.md#replay-plan.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, Iterable, List, Mapping, Optional, Sequence, Tuple

from precision_tool.alignment.model import AlignedPair, NpuTensorRef, NpyTensorRef
from precision_tool.formats.tensor_kind import INPUT, OUTPUT
from precision_tool.replay.reference_graph import ReferenceGraph, split_tensor

SOURCE_NPU, SOURCE_REFERENCE, SOURCE_CONSTANT = "npu", "reference", "constant"
KIND_SUBGRAPH, KIND_CONVERSION = "subgraph", "conversion"
CONVERSION_TYPES = frozenset({"Cast", "TransData"})
PASS_THROUGH_TYPES = frozenset({"Identity", "Snapshot", "StopGradient", "PreventGradient"})
NOT_REPLAYABLE = ("Random", "TruncatedNormal", "Multinomial", "Variable", "VarHandle", "Assign", "Apply", "Queue",
                  "Iterator", "Stack", "TensorArray", "Placeholder", "_Arg", "_Retval", "_Recv", "_Send", "Print",
                  "Save", "Restore")
"""Op type fragments that make a TF op unfit for replay (state, randomness, input/output plumbing), known
without TensorFlow; the runner also refuses any op its registry calls stateful."""


@dataclass(frozen=True)
class Feed:
    """One external input of the replayed subgraph: the TF tensor as a member reads it (``tensor``,
    ``"op:k"``), its ``source`` and where the value comes from (``npu`` or ``ref``; neither for a constant).
    ``ref`` is also set for an NPU feed: the reference tensor it stands for, whose dtype and shape the TF op
    takes."""

    tensor: str
    source: str
    npu: Optional[NpuTensorRef] = None
    ref: Optional[NpyTensorRef] = None
    constant: str = ""

    @property
    def dumped(self) -> NpuTensorRef:
        """The NPU tensor of an ``npu`` feed (``ValueError`` for another source)."""
        if self.npu is None:
            raise ValueError(f"{self.tensor}: not fed from the NPU dump")
        return self.npu

    def describe(self) -> str:
        if not self.tensor:  # a conversion's input
            return f"NPU {self.dumped.tensor_id}"
        if self.source == SOURCE_NPU and self.npu is not None:
            return f"{self.tensor} <- NPU {self.npu.tensor_id}"
        if self.source == SOURCE_REFERENCE and self.ref is not None:
            return f"{self.tensor} <- reference {self.ref.tensor_id}"
        return f"{self.tensor} <- graph constant {self.constant}"


@dataclass(frozen=True)
class Fetch:
    """One compared NPU output, the TF tensor replay computes for it, and its reference tensor."""

    npu: NpuTensorRef
    tensor: str
    ref: Optional[NpyTensorRef] = None


@dataclass(frozen=True)
class ReplayUnit:
    """One NPU op to replay: its TF ``members`` (``()`` for a conversion), feeds and fetches."""

    op_name: str
    op_type: str
    kind: str
    members: Tuple[str, ...]
    feeds: Tuple[Feed, ...]
    fetches: Tuple[Fetch, ...]


@dataclass(frozen=True)
class ReplayPlan:
    """``units`` in execution order; ``skipped``: ``{op name: one-line reason}`` for compared ops that cannot
    be replayed."""

    units: Tuple[ReplayUnit, ...]
    skipped: Dict[str, str]


def tensor_key(name: str) -> str:
    """``"a"`` and ``"a:0"`` -> ``"a:0"``: one spelling per tensor."""
    op, index = split_tensor(name)
    return f"{op}:{index}"


_TfPair = Tuple[NpuTensorRef, NpyTensorRef]


def _tensor_of(ref: NpyTensorRef) -> str:
    return tensor_key(f"{ref.op_name}:{ref.output_index}")


def _not_replayable(op_type: str) -> bool:
    return any(fragment in op_type for fragment in NOT_REPLAYABLE) and not op_type.startswith("Stateless")


def _members(op_name: str, ge_graph) -> Tuple[str, ...]:
    node = ge_graph.find_op(op_name) if ge_graph is not None else None
    names = node.original_op_names if node is not None else ()
    return tuple(dict.fromkeys(names)) or (op_name,)


class _Planner:
    def __init__(self, graph: ReferenceGraph, ge_graph, reference_lookup):
        self.graph = graph
        self.ge_graph = ge_graph
        self.lookup = reference_lookup

    def chain(self, tensor: str) -> List[str]:
        """``tensor``, then what it passes through (Identity inputs), nearest first."""
        found = [tensor_key(tensor)]
        while True:
            op, index = split_tensor(found[-1])
            node = self.graph.node(op)
            if node is None or node.op not in PASS_THROUGH_TYPES or index != 0 or not node.data_inputs:
                return found
            nxt = tensor_key(node.data_inputs[0])
            if nxt in found:
                return found
            found.append(nxt)

    def feed(self, tensor: str, npu_inputs: Mapping[str, "_TfPair"]) -> Optional[Feed]:
        names = self.chain(tensor)
        for name in names:
            if name in npu_inputs:
                npu, ref = npu_inputs[name]
                return Feed(tensor_key(tensor), SOURCE_NPU, npu=npu, ref=ref)
        for name in names:
            found = self.lookup(name) if self.lookup is not None else None
            if found is not None:
                return Feed(tensor_key(tensor), SOURCE_REFERENCE, ref=found)
        last_op, _ = split_tensor(names[-1])
        node = self.graph.node(last_op)
        if node is not None and node.op == "Const":
            return Feed(tensor_key(tensor), SOURCE_CONSTANT, constant=last_op)
        return None

    def externals(self, members: Sequence[str]) -> List[str]:
        """The tensors the members read that no member produces, in member then input order."""
        produced = set(members)
        found: List[str] = []
        for member in members:
            for source in self.graph[member].data_inputs:
                tensor = tensor_key(source)
                if split_tensor(tensor)[0] not in produced and tensor not in found:
                    found.append(tensor)
        return found

    @staticmethod
    def positional(externals: Sequence[str], dumped_inputs: Sequence[NpuTensorRef]) -> Dict[str, NpuTensorRef]:
        """External tensor k -> dump input k, when the dump lists exactly one input per external tensor."""
        by_index = {ref.index: ref for ref in dumped_inputs}
        if sorted(by_index) != list(range(len(externals))):
            return {}
        return {tensor: by_index[k] for k, tensor in enumerate(externals)}

    def unit(self, op_name: str, op_type: str, pairs: Sequence[AlignedPair],
             dumped_inputs: Sequence[NpuTensorRef] = ()):
        """A :class:`ReplayUnit`, or the reason (``str``) the op cannot be replayed. ``dumped_inputs``: every
        input of the op's dump file, aligned or not."""
        tf_pairs: List[_TfPair] = [(p.npu, p.ref) for p in pairs if isinstance(p.ref, NpyTensorRef)]
        inputs = {_tensor_of(ref): (npu, ref) for npu, ref in tf_pairs if npu.kind == INPUT}
        outputs = [(npu, ref) for npu, ref in tf_pairs if npu.kind == OUTPUT]
        if op_name not in self.graph and op_type in CONVERSION_TYPES:
            first = [(npu, ref) for npu, ref in tf_pairs if npu.kind == INPUT and npu.index == 0]
            if not first:
                return "its input 0 has no reference, so its dump was not listed for replay"
            conversions = tuple(Fetch(npu, _tensor_of(ref), ref) for npu, ref in outputs)
            return ReplayUnit(op_name, op_type, KIND_CONVERSION, (),
                              (Feed("", SOURCE_NPU, npu=first[0][0], ref=first[0][1]),), conversions)
        members = _members(op_name, self.ge_graph)
        missing = [m for m in members if m not in self.graph]
        if missing:
            return f"TF op {missing[0]} is not in the reference graph"
        stateful = [self.graph[m] for m in members if _not_replayable(self.graph[m].op)]
        if stateful:
            return (f"TF op {stateful[0].name} ({stateful[0].op}) is stateful or random: replay would not compute "
                    "the same")
        produced = set(members)
        fetches: List[Fetch] = []
        for npu, ref in outputs:
            tensor = _tensor_of(ref)
            if split_tensor(tensor)[0] in produced:
                fetches.append(Fetch(npu, tensor, ref))
        if not fetches:
            return "its compared outputs stand for TF tensors its own TF ops do not compute"
        feeds: Dict[str, Feed] = {}
        externals = self.externals(members)
        by_position = self.positional(externals, dumped_inputs)
        for tensor in externals:
            feed = self.feed(tensor, inputs)
            if feed is None and tensor in by_position:
                feed = Feed(tensor, SOURCE_NPU, npu=by_position[tensor])
            if feed is None:
                return f"no value for its input tensor {tensor} (neither its dump nor the reference has it)"
            feeds[tensor] = feed
        return ReplayUnit(op_name, op_type, KIND_SUBGRAPH, members, tuple(feeds.values()), tuple(fetches))


def plan_replay(pairs: Iterable[AlignedPair], order: Sequence[str], graph: ReferenceGraph, ge_graph=None,
                reference_lookup=None, unaligned: Iterable[NpuTensorRef] = ()) -> ReplayPlan:
    """Plan the replay of every NPU op with a compared output (docs/internals/replay.md#replay-plan).

    Parameters
    ----------
    pairs : the alignment's pairs (NPU vs TF; other pairs are ignored).
    order : op names in execution order (:attr:`Alignment.order`); units come in that order.
    graph : the reference graph (:func:`~.reference_graph.load_reference_graph`).
    ge_graph : the NPU Build graph (``_datadump_original_op_names``), or ``None``.
    reference_lookup : ``tensor "op:k" -> NpyTensorRef or None``, for feeds from the reference.
    unaligned : the NPU tensors without a reference (their inputs can still be fed by position).
    """
    by_op: Dict[str, List[AlignedPair]] = {}
    dumped: Dict[str, List[NpuTensorRef]] = {}
    for pair in pairs:
        by_op.setdefault(pair.npu.op_name, []).append(pair)
        if pair.npu.kind == INPUT:
            dumped.setdefault(pair.npu.op_name, []).append(pair.npu)
    for ref in unaligned:
        if ref.kind == INPUT:
            dumped.setdefault(ref.op_name, []).append(ref)
    planner = _Planner(graph, ge_graph, reference_lookup)
    units: List[ReplayUnit] = []
    skipped: Dict[str, str] = {}
    position = {name: k for k, name in enumerate(order)}
    for op_name in sorted(by_op, key=lambda name: (position.get(name, len(position)), name)):
        op_pairs = by_op[op_name]
        if not any(p.npu.kind == OUTPUT and isinstance(p.ref, NpyTensorRef) for p in op_pairs):
            continue
        result = planner.unit(op_name, op_pairs[0].npu.op_type, op_pairs, dumped.get(op_name, ()))
        if isinstance(result, str):
            skipped[op_name] = result
        else:
            units.append(result)
    return ReplayPlan(tuple(units), skipped)
