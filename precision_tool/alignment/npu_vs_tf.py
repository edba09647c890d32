"""NPU dump vs TensorFlow reference ``.npy`` folder: resolve every NPU tensor, then look the TF tensors up.

Two passes, so that ambiguity is judged on every TF name at once: first each NPU tensor is resolved to a TF
tensor (graph rules for ops in the graph, name rules otherwise), then the reference folder is indexed with all
those names and each tensor looked up (:mod:`.reference_index`).
"""
from __future__ import annotations

import os
from typing import Iterable, List, Optional, Tuple

from precision_tool.alignment.model import (INPUT, MODE_NPU_VS_TF, RULE_NORMALISED_NAME, RULE_OWN_NAME, AlignedPair,
                                            Alignment, Coverage, NpuTensorRef, Unaligned)
from precision_tool.alignment.npu_run import NpuRun
from precision_tool.alignment.npu_side import read_dumped_ops
from precision_tool.alignment.reference_index import ReferenceIndex
from precision_tool.alignment.targets import NoTarget, Resolution, Target
from precision_tool.formats.dump_tree import DumpSelection
from precision_tool.formats.npy_dir import read_npy_dir


def align_npu_vs_tf(npu_dump_dir, reference_dir, graph=None, tf_op_names: Iterable[str] = (),
                    selection: Optional[DumpSelection] = None, statistics: bool = False) -> Alignment:
    """Pair every NPU tensor under ``npu_dump_dir`` with a reference tensor in ``reference_dir``.

    ``graph`` is a loaded :class:`~precision_tool.formats.ge_graph.GraphModel` (or ``Graph``) or ``None``.
    Reference file names are lossy (``a/b`` and ``a.b`` share one); a file is refused as ambiguous when several
    known TF names share its name. Known names: every TF tensor looked up, every TF name the graph mentions
    (original op names, origin names), and ``tf_op_names`` (e.g. from the TF graph). With ``statistics``, the
    NPU tensors are those of the run's statistics CSVs (:func:`~.npu_side.read_dumped_ops`).
    """
    dumped = read_dumped_ops(npu_dump_dir, selection, statistics)
    listing = read_npy_dir(reference_dir)
    run = NpuRun(dumped, graph)
    jobs: List[Tuple[int, NpuTensorRef, Resolution]] = []
    for i in range(len(run.ops)):
        for kind, k, entry in run.tensors(i):
            jobs.append((i, run.tensor_ref(i, kind, k, entry), run.target(i, kind, k)))
    names = {target.name for _, _, target in jobs if isinstance(target, Target)}
    if run.index is not None:
        names |= run.index.tf_names()
    files = tuple(listing)
    references = ReferenceIndex(files, names | set(tf_op_names), listing.unreadable)
    order, order_source = run.order()
    position = {name: p for p, name in enumerate(order)}
    jobs.sort(key=lambda job: (position.get(job[1].op_name, len(position)), job[1].kind != INPUT, job[1].index))

    pairs: List[AlignedPair] = []
    unaligned: List[Unaligned] = []
    ambiguous: List[str] = list(run.ambiguous)
    for i, npu, target in jobs:
        if isinstance(target, NoTarget):
            unaligned.append(Unaligned(npu, target.reason))
            if target.ambiguous:
                ambiguous.append(target.ambiguous)
            continue
        found = references.find(target.name, target.index)
        if found.ref is None:
            unaligned.append(Unaligned(npu, found.reason))
            if found.ambiguous:
                ambiguous.append(found.ambiguous)
            continue
        rule, note = target.rule, ""
        if found.normalised:
            if rule == RULE_OWN_NAME:
                rule = RULE_NORMALISED_NAME
            note = f"matched reference file {os.path.basename(found.ref.path)} after normalising the name"
        elif rule == RULE_OWN_NAME and not run.ops[i].has_raw_name and run.nodes[i] is None:
            note = "op name taken from the file name (the header has none)"
        pairs.append(AlignedPair(npu, found.ref, rule, target.via, note))

    aligned_ops = {pair.npu.op_name for pair in pairs}
    coverage = Coverage(
        aligned_count=len(pairs), npu_tensors=len(jobs),
        npu_only_ops=tuple(name for name in dict.fromkeys(run.op_name(i) for i in range(len(run.ops)))
                           if name not in aligned_ops),
        reference_only=references.unused(),
        dumped_not_in_graph=tuple(run.not_in_graph),
        graph_ops_without_dump=run.graph_ops_without_dump(),
        ambiguous=tuple(dict.fromkeys(ambiguous)),
        unaligned=tuple((item.npu.tensor_id, item.reason) for item in unaligned),
        unreadable=tuple(run.unreadable),
        unreadable_references=listing.unreadable, ignored_references=listing.ignored, dump_choice=run.dump_choice,
        dump_step=run.choice.step, dump_device=run.choice.device)
    return Alignment(MODE_NPU_VS_TF, tuple(pairs), tuple(unaligned), coverage, order, order_source,
                     run.data_inputs(), files)
