"""NPU run vs NPU run: ``npu/debug_0`` against ``npu/debug_1`` (fusion on vs off, another CANN version ...).

Each side is resolved to TF tensors as in NPU-vs-TF mode; output ``k`` of a left op is paired with the same-named
op's output ``k`` (``same_op_name``) unless that stands for another TF tensor, else with the other run's output that
stands for the same TF tensor (``same_original_tensor``: a fused op against the unfused run's last op), else left
out with the reason. The other run's dump tree follows the left run's step and device.
See docs/internals/alignment.md#npu-vs-npu for the input rule and the ambiguous cases.
"""
from __future__ import annotations

import os
from typing import Dict, List, Optional, Tuple

from precision_tool.alignment.model import (MODE_NPU_VS_NPU, OUTPUT, RULE_SAME_OP_NAME,
                                            RULE_SAME_ORIGINAL_TENSOR, AlignedPair, Alignment, Coverage, NpuTensorRef,
                                            TensorKind, Unaligned)
from precision_tool.alignment.npu_run import NpuRun
from precision_tool.alignment.npu_side import read_dumped_ops
from precision_tool.alignment.targets import NoTarget, Resolution, Target
from precision_tool.formats.dump_names import sanitize_op_name, scan_dump_folder
from precision_tool.formats.dump_tree import DumpSelection, following


class _OtherRun:
    """The reference run, indexed by op name and by the TF tensor each output stands for."""

    def __init__(self, run: NpuRun):
        self.run = run
        self.by_name: Dict[str, int] = {}
        self.by_sanitised: Dict[str, List[int]] = {}
        self.by_tensor: Dict[Tuple[str, int], List[Tuple[int, int]]] = {}
        self.used: set = set()
        for i in range(len(run.ops)):
            name = run.op_name(i)
            self.by_name.setdefault(name, i)
            self.by_sanitised.setdefault(sanitize_op_name(name), []).append(i)
            for k in range(len(run.ops[i].entries(OUTPUT))):
                target = run.target(i, OUTPUT, k)
                if isinstance(target, Target) and not target.via:
                    self.by_tensor.setdefault(target.tensor, []).append((i, k))

    def same_name(self, name: str) -> Optional[int]:
        if name in self.by_name:
            return self.by_name[name]
        candidates = self.by_sanitised.get(sanitize_op_name(name), ())
        return candidates[0] if len(candidates) == 1 else None

    def count(self, i: int, kind: str) -> int:
        return len(self.run.ops[i].entries(kind))

    def ref(self, i: int, kind: TensorKind, k: int) -> NpuTensorRef:
        self.used.add((i, kind, k))
        return self.run.tensor_ref(i, kind, k, self.run.ops[i].entries(kind)[k])

    def unused_outputs(self) -> Tuple[str, ...]:
        found = []
        for i in range(len(self.run.ops)):
            for k in range(self.count(i, OUTPUT)):
                if (i, OUTPUT, k) not in self.used:
                    found.append(f"{self.run.op_name(i)}:{OUTPUT}:{k}")
        return tuple(found)


def _differ(a: Resolution, b: Resolution) -> bool:
    return isinstance(a, Target) and isinstance(b, Target) and a.tensor != b.tensor


def _like_with_like(npu_dump_dir, other_dump_dir, selection: DumpSelection) -> Optional[DumpSelection]:
    """The step to read of the left run when none was asked for and the other run holds a single step that the
    left one holds too, not its newest (a fusion-off run dumped at step 0 beside a dump run of steps 0 and 5): that
    step, so that the two runs compare like with like (at different steps the weights differ, and every op
    would seem to). ``None``: the usual choice. Only the folders' names are scanned here."""
    if selection.step is not None or not os.path.isdir(npu_dump_dir) or not os.path.isdir(other_dump_dir):
        return None
    ahead = selection.unlogged()  # a look ahead: its notes are not the command's
    left = scan_dump_folder(npu_dump_dir, ahead).choice
    if left.step is None or left.device is None:
        return None
    other = scan_dump_folder(other_dump_dir, following(ahead.at(left.step, left.device))).choice
    if other.step is None or other.step == left.step or other.step not in left.steps_of(left.device):
        return None
    return selection.at(other.step, selection.device,
                        why=f"to match {os.fspath(other_dump_dir)}, which holds only that step")


def align_npu_vs_npu(npu_dump_dir, other_dump_dir, graph=None, other_graph=None,
                     selection: Optional[DumpSelection] = None) -> Alignment:
    """Pair every tensor of the run under ``npu_dump_dir`` with one of the run under ``other_dump_dir``.

    ``graph`` / ``other_graph``: each run's loaded GE Build graph, or ``None``. Of a dump tree holding several
    steps or devices, the other run's follows the step and device read of the left one
    (:attr:`~precision_tool.formats.dump_tree.DumpSelection.follow`).
    """
    selection = DumpSelection() if selection is None else selection
    dumped = read_dumped_ops(npu_dump_dir, _like_with_like(npu_dump_dir, other_dump_dir, selection) or selection)
    chosen = dumped[2]  # both runs' headers first: a graph still being read is waited for after
    other_dumped = read_dumped_ops(other_dump_dir, following(selection.at(chosen.step, chosen.device)))
    left = NpuRun(dumped, graph)
    other = _OtherRun(NpuRun(other_dumped, other_graph))
    order, order_source = left.order()
    position = {name: p for p, name in enumerate(order)}
    pairs: List[AlignedPair] = []
    unaligned: List[Unaligned] = []
    ambiguous: List[str] = list(left.ambiguous) + list(other.run.ambiguous)
    npu_tensors = 0
    indices = sorted(range(len(left.ops)), key=lambda i: position.get(left.op_name(i), len(position)))
    for i in indices:
        name = left.op_name(i)
        same = other.same_name(name)
        for kind, k, entry in left.tensors(i):
            npu_tensors += 1
            npu = left.tensor_ref(i, kind, k, entry)
            target = left.target(i, kind, k)
            same_ok = same is not None and k < other.count(same, kind)
            if same is not None and same_ok and not _differ(target, other.run.target(same, kind, k)):
                pairs.append(AlignedPair(npu, other.ref(same, kind, k), RULE_SAME_OP_NAME))
                continue
            if not isinstance(target, Target):
                reason = target.reason if isinstance(target, NoTarget) else ""
                where = "" if same is not None else f"; the other run has no op called {name}"
                if same is not None and not same_ok:
                    where = f"; {name} has only {other.count(same, kind)} {kind}(s) in the other run"
                unaligned.append(Unaligned(npu, (reason or "unknown TF tensor") + where))
                continue
            hits = other.by_tensor.get(target.tensor, [])
            if len(hits) > 1 and same is not None:
                hits = [hit for hit in hits if hit[0] == same] or hits
            if len(hits) == 1:
                j, m = hits[0]
                pairs.append(AlignedPair(npu, other.ref(j, OUTPUT, m), RULE_SAME_ORIGINAL_TENSOR, target.via))
            elif hits:
                names = ", ".join(f"{other.run.op_name(j)}:{OUTPUT}:{m}" for j, m in hits)
                ambiguous.append(f"{target.name}:{target.index} -> other run {names}")
                unaligned.append(Unaligned(npu, f"stands for {target.name}:{target.index}, which several outputs "
                                                f"of the other run stand for: {names}"))
            else:
                because = ("its same-named op there stands for another tensor" if same_ok
                           else f"and no op called {name} is there" if same is None else "")
                unaligned.append(Unaligned(npu, f"stands for {target.name}:{target.index}; no output of the other "
                                                f"run stands for it" + (f" ({because})" if because else "")))

    aligned_ops = {pair.npu.op_name for pair in pairs}
    not_in_graph = list(left.not_in_graph) + [f"{n} (other run)" for n in other.run.not_in_graph]
    without_dump = left.graph_ops_without_dump() + tuple(f"{n} (other run)"
                                                         for n in other.run.graph_ops_without_dump())
    coverage = Coverage(
        aligned_count=len(pairs), npu_tensors=npu_tensors,
        npu_only_ops=tuple(n for n in dict.fromkeys(left.op_name(i) for i in indices) if n not in aligned_ops),
        reference_only=other.unused_outputs(),
        dumped_not_in_graph=tuple(not_in_graph), graph_ops_without_dump=without_dump,
        ambiguous=tuple(dict.fromkeys(ambiguous)),
        unaligned=tuple((item.npu.tensor_id, item.reason) for item in unaligned),
        unreadable=tuple(left.unreadable) + tuple(other.run.unreadable),
        dump_choice="; ".join(filter(None, (left.dump_choice,
                                            other.run.dump_choice and f"other run: {other.run.dump_choice}"))),
        dump_step=left.choice.step, dump_device=left.choice.device)
    return Alignment(MODE_NPU_VS_NPU, tuple(pairs), tuple(unaligned), coverage, order, order_source,
                     left.data_inputs(), choices=(left.choice, other.run.choice))
