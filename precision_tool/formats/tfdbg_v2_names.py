"""Reference names for every tensor of a tfdbg v2 dump: each execution kept, inputs and weights aliased.

:func:`name_v2_dump` gives every dumped op output of a tfdbg v2 folder the name its reference file gets (``tf_dump``
writes them): ``op`` for the first execution, ``op@k`` for execution ``k`` in the same graph (``@`` cannot occur in a
TF op name), ``outer/inner/op`` for an op whose name another graph used first. Function arguments TF 2.21 does not
trace are taken from the eager op that produced them. Aliases, a second name for one tensor (what the NPU side calls
it cannot be known without an NPU): a ``ReadVariableOp`` output -> its variable's name, the model's input -> the
Keras ``Input`` name, both from :mod:`precision_tool.formats.capture_names`. TensorFlow is not needed.
The scheme in full: ``docs/capture-keras-tf2.md`` and docs/internals/formats.md#tfdbg_v2_names.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Dict, Iterable, List, Optional, Sequence, Set, Tuple

from precision_tool.formats.bounds import parse_decimal, shown_name
from precision_tool.formats.capture_names import CaptureNames, ModelNames, read_capture_names
from precision_tool.formats.tfdbg import TfdbgTensor
from precision_tool.formats.tfdbg_v2 import iter_tfdbg_v2
from precision_tool.formats.tfdbg_v2_events import V2Structure, eager_output_record, read_v2_structure

EXECUTION_MARK = "@"
RESOURCE_OPS = frozenset({"ReadVariableOp", "AssignVariableOp", "AssignAddVariableOp", "AssignSubVariableOp",
                          "ResourceGather", "ResourceGatherNd", "VarIsInitializedOp", "VariableShape",
                          "DestroyResourceOp"})
_HANDLE_READERS = ("IteratorGetNext", "MultiDeviceIteratorGetNext", "ResourceApply", "ResourceSparseApply",
                   "ResourceScatter", "ResourceStrided")
ALIAS_VARIABLE = "variable"
ALIAS_INPUT = "model input"
ALIAS_USER = "--alias"


@dataclass(frozen=True)
class Alias:
    """Another name for a written tensor: ``name:output_slot`` is ``target`` (a reference tensor name)."""

    name: str
    output_slot: int
    target: str
    kind: str

    @property
    def tensor_name(self) -> str:
        return f"{self.name}:{self.output_slot}"


@dataclass(frozen=True)
class NamedTensor:
    """A dumped op output and its reference name.

    ``record.op_name`` is the op as executed; ``name`` what the file is called; ``execution`` the index
    of this execution of the op output in its graph; ``graph`` the function path (``("train_step",)``).
    """

    name: str
    record: TfdbgTensor
    execution: int
    graph: Tuple[str, ...]

    @property
    def tensor_name(self) -> str:
        return f"{self.name}:{self.record.output_slot}"


@dataclass(frozen=True)
class V2Naming:
    """What :func:`name_v2_dump` found: every tensor named, the aliases, and notes for the user."""

    tensors: Tuple[NamedTensor, ...]
    aliases: Tuple[Alias, ...]
    notes: Tuple[str, ...]
    recovered_arguments: int
    names_file: bool


def _tensor(name: str) -> Tuple[str, int]:
    """``"a/b:1"`` -> ``("a/b", 1)``; ``"a/b"`` -> ``("a/b", 0)``; control inputs lose their ``^``.

    The slot is ASCII digits (at most 20); anything else (``"a:²"``) is part of the name."""
    name = name.lstrip("^")
    op_name, sep, slot = name.rpartition(":")
    number = parse_decimal(slot) if sep else None
    if number is not None:
        return op_name, number
    return name, 0


def _slot_notes(structure: V2Structure, traces: Sequence[TfdbgTensor]) -> List[str]:
    """One note when traced tensors name an output slot at or past their op's ``num_outputs`` (as its
    ``GraphOpCreation`` records it; 0 = not recorded, not checked): damaged bytes or a dump mixing runs.
    The tensors are still written under the slot they name."""
    beyond = []
    for record in traces:
        op = structure.ops.get((record.graph_id or "", record.op_name))
        if op is not None and 0 < op.num_outputs <= record.output_slot:
            beyond.append((record, op.num_outputs))
    if not beyond:
        return []
    record, outputs = beyond[0]
    return [f"{record.path}: {len(beyond)} traced tensor(s) name an output past their op's outputs (first: trace "
            f"{record.index}, {shown_name(record.op_name)} output {record.output_slot} of {outputs}); written under "
            "that slot, check the dump"]


class _Names:
    """Assigns base names per (graph, op) so that one name never stands for two ops."""

    def __init__(self, structure: V2Structure):
        self.structure = structure
        self.assigned: Dict[Tuple[str, str], str] = {}
        self.taken: Set[str] = set()
        self.prefixes: Dict[Optional[str], str] = {}

    def prefix(self, graph_id: Optional[str]) -> str:
        if graph_id not in self.prefixes:
            path = list(self.structure.path(graph_id)) if graph_id else ["graph"]
            base, number = "/".join(path), 0
            candidate = base
            while candidate in self.prefixes.values():
                number += 1
                candidate = f"{base}_{number}"
            self.prefixes[graph_id] = candidate
        return self.prefixes[graph_id]

    def base(self, graph_id: Optional[str], op_name: str) -> str:
        key = (graph_id or "", op_name)
        if key not in self.assigned:
            name = op_name
            if name in self.taken:
                prefix, number = self.prefix(graph_id), 0
                name = f"{prefix}/{op_name}"
                while name in self.taken:
                    number += 1
                    name = f"{prefix}_{number}/{op_name}"
            self.taken.add(name)
            self.assigned[key] = name
        return self.assigned[key]


def _reads_handle(op_type: str) -> bool:
    """True for ops whose input is a handle (variable, iterator), not data."""
    return op_type in RESOURCE_OPS or op_type.startswith(_HANDLE_READERS)


def _is_data_argument(structure: V2Structure, graph_id: str, placeholder: str) -> bool:
    """True when some recorded op uses the placeholder as data (handles only feed handle readers)."""
    return any(not _reads_handle(op.op_type) for op in structure.consumers(graph_id, placeholder))


def _recover_arguments(structure: V2Structure, traced: Set[Tuple[str, str]], verify: bool
                       ) -> Tuple[List[Tuple[TfdbgTensor, int]], int]:
    """Values of untraced arguments of top-level functions: ``[(record, call index)]``, and how many
    arguments had no recorded value."""
    recovered: List[Tuple[TfdbgTensor, int]] = []
    missing = 0
    for graph_id in list(structure.graphs) + sorted({op.graph_id for op in structure.ops.values()}
                                                    - set(structure.graphs)):
        placeholders = structure.placeholders(graph_id)
        if not placeholders or structure.outer_function(graph_id) is not None:
            continue
        for call_index, call in enumerate(structure.calls(graph_id)):
            if len(call.input_ids) != len(placeholders):
                break
            for op, tensor_id in zip(placeholders, call.input_ids):
                if (graph_id, op.op_name) in traced:
                    continue
                producer = structure.eager_producer(tensor_id)
                if producer is None:
                    missing += int(_is_data_argument(structure, graph_id, op.op_name))
                    continue
                execution, slot = producer
                record = eager_output_record(execution, slot, op.op_name, graph_id, "Placeholder", 0, verify)
                if record is not None:  # no value: a handle (variable, iterator), not data
                    recovered.append((record, call_index))
    return recovered, missing


def _merge(traces: List[TfdbgTensor], recovered: List[Tuple[TfdbgTensor, int]]
           ) -> List[Tuple[TfdbgTensor, Optional[int]]]:
    """Traces in file order, each recovered argument placed before the first trace not older than it."""
    pending = sorted(recovered, key=lambda item: item[0].timestamp_us)
    merged: List[Tuple[TfdbgTensor, Optional[int]]] = []
    position = 0
    for record in traces:
        while position < len(pending) and pending[position][0].timestamp_us <= record.timestamp_us:
            merged.append(pending[position])
            position += 1
        merged.append((record, None))
    merged.extend(pending[position:])
    return merged


def _resolve_handle(structure: V2Structure, graph_id: str, placeholder: str, depth: int = 0) -> Optional[int]:
    """The eager tensor id passed for ``placeholder`` of ``graph_id`` (the same in every call), if knowable."""
    placeholders = structure.placeholders(graph_id)
    names = [op.op_name for op in placeholders]
    if placeholder not in names or depth > 16:
        return None
    position = names.index(placeholder)
    outer = structure.outer_function(graph_id)
    if outer is None:
        ids = {call.input_ids[position] for call in structure.calls(graph_id)
               if len(call.input_ids) == len(placeholders)}
        return ids.pop() if len(ids) == 1 else None
    # A nested function's captures become placeholders of the outer function, created in order when the
    # inner function is first called; they are the outer placeholders made after the inner graph began
    # and before the next function nested in the same outer one began.
    start = structure.first_order(graph_id)
    later = [structure.first_order(other) for other in structure.graphs
             if other != graph_id and structure.outer_function(other) == outer
             and structure.first_order(other) > start]
    stop = min(later) if later else float("inf")
    created = [op for op in structure.placeholders(outer) if start < op.order < stop]
    if not created or len(created) > len(placeholders) or position < len(placeholders) - len(created):
        return None
    outer_op = created[position - (len(placeholders) - len(created))]
    return _resolve_handle(structure, outer, outer_op.op_name, depth + 1)


def _variable_aliases(structure: V2Structure, names: CaptureNames, first: Dict[Tuple[str, str, int], NamedTensor],
                      order: Dict[Tuple[str, str, int], int]) -> Tuple[List[Alias], List[str]]:
    by_handle = names.variable_names()
    reads: Dict[str, List[Tuple[int, NamedTensor]]] = {}
    unresolved, unnamed = 0, 0
    for op in structure.ops.values():
        if op.op_type != "ReadVariableOp" or not op.input_names:
            continue
        key = (op.graph_id, op.op_name, 0)
        if key not in first:
            continue
        handle = _resolve_handle(structure, op.graph_id, _tensor(op.input_names[0])[0])
        if handle is None:
            unresolved += 1
            continue
        if handle not in by_handle:
            unnamed += 1
            continue
        reads.setdefault(by_handle[handle], []).append((order[key], first[key]))
    aliases = [Alias(name, 0, min(found, key=lambda item: item[0])[1].tensor_name, ALIAS_VARIABLE)
               for name, found in reads.items()]
    notes = []
    if unresolved:
        notes.append(f"{unresolved} ReadVariableOp outputs could not be traced back to a variable handle (the "
                     "function call that passed it is not in the dump); they keep their op names only.")
    if unnamed:
        notes.append(f"{unnamed} ReadVariableOp outputs read variables that the names file does not list; they keep "
                     "their op names only.")
    return aliases, notes


def _model_scopes(structure: V2Structure, model: ModelNames) -> Dict[Tuple[str, str], List[str]]:
    """(graph id, scope prefix such as ``net_1/``) -> names of ops under it."""
    pattern = re.compile(r"(?:^|/)" + re.escape(model.name) + r"(?:_[0-9]+)?/")
    scopes: Dict[Tuple[str, str], List[str]] = {}
    for graph_id, op_name in structure.ops:
        match = pattern.search(op_name)
        if match:
            scopes.setdefault((graph_id, op_name[:match.end()]), []).append(op_name)
    return scopes


def _entry_tensors(structure: V2Structure, graph_id: str, prefix: str, op_names: Iterable[str],
                   consumers: Tuple[str, ...]) -> Dict[Tuple[str, int], List[str]]:
    """Tensors from outside ``prefix`` consumed by data ops under it (by the given layers, if any), each with
    the ops under ``prefix`` that consume it."""
    layer = (re.compile(re.escape(prefix) + "(?:" + "|".join(re.escape(c) for c in consumers) + r")(?:_[0-9]+)?/")
             if consumers else None)
    found: Dict[Tuple[str, int], List[str]] = {}
    for op_name in op_names:
        op = structure.ops[(graph_id, op_name)]
        if _reads_handle(op.op_type) or (layer is not None and not layer.match(op_name)):
            continue
        for input_name in op.input_names:
            if input_name.startswith("^"):
                continue
            producer, slot = _tensor(input_name)
            if producer.startswith(prefix) or structure.op_type(graph_id, producer) == "Const":
                continue
            found.setdefault((producer, slot), []).append(op_name)
    return found


def _input_aliases(structure: V2Structure, names: CaptureNames, first: Dict[Tuple[str, str, int], NamedTensor],
                   order: Dict[Tuple[str, str, int], int]) -> Tuple[List[Alias], List[str]]:
    """The model input of the graph whose layer ops kept their bare names (the ones an NPU graph's names
    match): when several functions run the model (``fit`` then ``predict``), another function's input is
    another batch, so it is never borrowed; an input without a value gets a note instead."""
    bare = {(graph_id, op_name) for (graph_id, op_name, _), named in first.items() if named.name == op_name}
    aliases: List[Alias] = []
    notes: List[str] = []
    for model in names.models:
        scopes = _model_scopes(structure, model)
        for model_input in model.inputs:
            # (graph id, entry tensor) per scope, and whether its consumers are the bare-named ops
            found: List[Tuple[str, str, int, bool]] = []
            for (graph_id, prefix), op_names in scopes.items():
                entries = _entry_tensors(structure, graph_id, prefix, op_names, model_input.consumers)
                if not entries and len(model.inputs) == 1:
                    entries = _entry_tensors(structure, graph_id, prefix, op_names, ())
                if len(entries) != 1:
                    continue
                (((producer, slot), consumers),) = entries.items()
                owns = any((graph_id, consumer) in bare for consumer in consumers)
                found.append((graph_id, producer, slot, owns))
            others: List[str] = []
            if any(item[3] for item in found):
                others = sorted({"/".join(structure.path(item[0])) for item in found
                                 if not item[3] and (item[0], item[1], item[2]) in first})
                found = [item for item in found if item[3]]
            hits: List[Tuple[int, NamedTensor]] = []
            unrecorded: Dict[str, bool] = {}
            for graph_id, producer, slot, _owns in found:
                key = (graph_id, producer, slot)
                if key in first:
                    hits.append((order[key], first[key]))
                else:
                    where = f"{producer}:{slot} in {'/'.join(structure.path(graph_id))}"
                    unrecorded[where] = structure.outer_function(graph_id) is not None
            if hits:
                target = min(hits, key=lambda item: item[0])[1]
                aliases.append(Alias(model_input.name, 0, target.tensor_name, ALIAS_INPUT))
            elif unrecorded:
                why = ("an argument of a nested function, which TF 2.21 does not trace" if any(unrecorded.values())
                       else "a tf.function argument made without a recorded op, e.g. tf.constant or NumPy input, "
                            "and TF 2.21 does not trace arguments")
                borrowed = "" if not others else (
                    f" The input recorded in {', '.join(others)} is not borrowed: it belongs to another function "
                    "(another batch; the model's ops there are the prefixed copies).")
                notes.append(f"Model input {model_input.name!r} of {model.name!r} enters as "
                             f"{', '.join(sorted(unrecorded))}, which the dump holds no value of ({why}); name the "
                             f"tensor that feeds it with --alias, e.g. --alias IteratorGetNext:0={model_input.name}."
                             f"{borrowed}")
            else:
                notes.append(f"Model input {model_input.name!r} of {model.name!r} was not found in the dump (no op "
                             f"under the name scope {model.name}/ reads one outside tensor).")
    return aliases, notes


def name_v2_dump(folder, verify: bool = True) -> V2Naming:
    """Name every op output of a tfdbg v2 ``FULL_TENSOR`` folder (the scheme: docs/internals/formats.md#tfdbg_v2_names).

    Records are listed, not loaded (``record.load()`` reads one value). Resource handles are included
    (the caller skips them); names are given in dump order.
    """
    structure = read_v2_structure(folder)
    traces = list(iter_tfdbg_v2(folder, skip_resources=False, verify=verify))
    traced = {(record.graph_id or "", record.op_name) for record in traces}
    recovered, missing = _recover_arguments(structure, traced, verify)
    names = _Names(structure)
    counts: Dict[Tuple[str, str, int], int] = {}
    tensors: List[NamedTensor] = []
    first: Dict[Tuple[str, str, int], NamedTensor] = {}
    order: Dict[Tuple[str, str, int], int] = {}
    for record, call_index in _merge(traces, recovered):
        key = (record.graph_id or "", record.op_name, record.output_slot)
        execution = counts.get(key, 0) if call_index is None else call_index
        counts[key] = counts.get(key, 0) + 1
        base = names.base(record.graph_id, record.op_name)
        name = base if execution == 0 else f"{base}{EXECUTION_MARK}{execution}"
        graph = structure.path(record.graph_id) if record.graph_id else ()
        named = NamedTensor(name, record, execution, graph)
        tensors.append(named)
        if key not in first:
            first[key], order[key] = named, len(tensors) - 1

    notes: List[str] = _slot_notes(structure, traces)
    if missing:
        notes.append(f"{missing} tf.function arguments have no value in the dump: TF 2.21 does not trace function "
                     "arguments, and these were not made by a recorded eager op (tf.constant or NumPy input). Feed "
                     "the step from a tf.data dataset, or see docs/capture-keras-tf2.md.")
    aliases: List[Alias] = []
    capture_names = read_capture_names(folder)
    if capture_names is not None:
        for find in (_input_aliases, _variable_aliases):
            found, found_notes = find(structure, capture_names, first, order)
            aliases.extend(found)
            notes.extend(found_notes)
    elif any(op.op_type == "ReadVariableOp" for op in structure.ops.values()):
        notes.append("No names file (precision_tool_names.json) in the capture: weights keep their ReadVariableOp "
                     "names and model inputs their tf.function argument names (see docs/capture-keras-tf2.md).")
    return V2Naming(tuple(tensors), tuple(aliases), tuple(notes), len(recovered), capture_names is not None)
