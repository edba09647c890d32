"""Records of an alignment: which NPU tensor is compared with which reference tensor, and what was not.

Everything here is a frozen dataclass built from names and dump headers only; no tensor payload is read
while aligning. The comparator loads one pair at a time (:meth:`NpuTensorRef.load`, :meth:`NpyTensorRef.load`).
:attr:`AlignedPair.rule` (one of :data:`RULES`) says how the reference tensor was found; :attr:`AlignedPair.via`
lists the NPU ops visited on the way, nearest first. The rules and their precedence:
docs/internals/alignment.md#rules.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Optional, Tuple, Union

# The alignment modules take the kinds from here (explicit re-exports).
from precision_tool.formats.tensor_kind import INPUT as INPUT
from precision_tool.formats.tensor_kind import OUTPUT as OUTPUT
from precision_tool.formats.tensor_kind import TensorKind

RULE_ORIGIN_NAME = "origin_name"
RULE_HEADER_ORIGINAL_OP = "header_original_op"
RULE_SINGLE_ORIGINAL_OP = "single_original_op"
RULE_SPLIT_OUTPUT = "split_output"
RULE_OWN_NAME = "own_name"
RULE_NORMALISED_NAME = "normalised_name"
RULE_SAME_OP_NAME = "same_op_name"
RULE_SAME_ORIGINAL_TENSOR = "same_original_tensor"
RULES = (RULE_ORIGIN_NAME, RULE_HEADER_ORIGINAL_OP, RULE_SINGLE_ORIGINAL_OP, RULE_SPLIT_OUTPUT, RULE_OWN_NAME,
         RULE_NORMALISED_NAME, RULE_SAME_OP_NAME, RULE_SAME_ORIGINAL_TENSOR)

MODE_NPU_VS_TF = "npu_vs_tf"
MODE_NPU_VS_NPU = "npu_vs_npu"

ORDER_GRAPH = "graph"
ORDER_DUMP_TIME = "dump_time"


@dataclass(frozen=True)
class NpuTensorRef:
    """One input or output of one NPU op dump file.

    Attributes
    ----------
    path : the dump file (the latest execution of the op).
    op_name : the GE op name, unsanitised: the graph's name when the op is in the graph, else the dump
        header's ``op_name``, else the op part of the file name (sanitised, the best there is).
    op_type : from the file name.
    kind, index : :data:`INPUT` / :data:`OUTPUT` (a :class:`TensorKind`) and the position among them, as in the
        dump header.
    timestamp : dump time from the file name (microseconds).
    dtype, shape : as stored (``"float16"``, device-layout shape), from the header.
    origin_format : layout to convert back to (``"NHWC"``); ``""`` when unknown, so
        :func:`~precision_tool.formats.origin_tensor.read_origin_tensor` infers it.
    origin_shape : shape before the device layout; ``None`` when unknown.
    origin_format_from, origin_shape_from : ``"graph"`` (the op's desc in the GE graph), ``"header"``
        (the dump header) or ``""``. The graph wins over the header.
    """

    path: str
    op_name: str
    op_type: str
    kind: TensorKind
    index: int
    timestamp: int = 0
    dtype: str = ""
    shape: Tuple[int, ...] = ()
    origin_format: str = ""
    origin_shape: Optional[Tuple[int, ...]] = None
    origin_format_from: str = ""
    origin_shape_from: str = ""

    @property
    def key(self) -> Tuple[str, str, int]:
        """``(op_name, kind, index)``: the key of the pass/fail map :mod:`.divergence` reads."""
        return (self.op_name, self.kind, self.index)

    @property
    def tensor_id(self) -> str:
        """``conv1/Conv2D:output:0`` -- msaccucmp's ``TensorIndex``."""
        return f"{self.op_name}:{self.kind}:{self.index}"

    def load(self, keep_layout: bool = False, dtype=None, mapped: bool = False):
        """Read this tensor's payload in its origin layout (an :class:`OriginTensor`).

        The origin format given to ``read_origin_tensor`` is :attr:`origin_format`; when the dump header has
        no original shape but the graph gave one, the graph's shape is used. ``dtype``: build a converted
        layout in that dtype in the same pass (see ``read_origin_tensor``; an array not converted keeps the
        stored dtype). ``mapped``: an array in stored order is a read-only memory map, read when indexed (``pt``
        and ``cp``). For the comparator and replay: alignment itself never calls this.
        """
        from precision_tool.formats.dump_file import read_dump_header_cached
        from precision_tool.formats.origin_tensor import read_origin_tensor

        dump = read_dump_header_cached(self.path)  # one parse for every tensor of a file, not one per tensor
        entry = dump.tensor(self.kind, self.index)
        if entry.original_shape is None and self.origin_shape is not None:
            entry = dataclasses.replace(entry, original_shape=tuple(self.origin_shape))
        return read_origin_tensor(dump, entry, self.origin_format or None, keep_layout=keep_layout, dtype=dtype,
                                  mapped=mapped)

    def to_dict(self) -> dict:
        return {"tensor_id": self.tensor_id, "path": self.path, "op_name": self.op_name, "op_type": self.op_type,
                "kind": self.kind, "index": self.index, "timestamp": self.timestamp, "dtype": self.dtype,
                "shape": list(self.shape), "origin_format": self.origin_format,
                "origin_shape": None if self.origin_shape is None else list(self.origin_shape),
                "origin_format_from": self.origin_format_from, "origin_shape_from": self.origin_shape_from}


@dataclass(frozen=True)
class NpyTensorRef:
    """One reference (TensorFlow) tensor file: ``{file_op_name}.{output_index}.{timestamp}.npy``.

    ``op_name`` is the TF op name the alignment looked for (unsanitised); ``file_op_name`` the name as the
    file spells it; ``dtype`` (numpy dtype string, ``"<f4"``) and ``shape`` come from the ``.npy`` header.
    """

    path: str
    op_name: str
    output_index: int
    file_op_name: str = ""
    dtype: str = ""
    shape: Tuple[int, ...] = ()

    @property
    def tensor_id(self) -> str:
        """``conv1/Relu:output:0``."""
        return f"{self.op_name}:{OUTPUT}:{self.output_index}"

    def load(self):
        """The array, read with ``allow_pickle=False``; refuses a file whose dtype or shape changed since it
        was listed (for the comparator)."""
        import numpy as np

        from precision_tool.formats.npy_dir import NpyReference

        return NpyReference(self.op_name, self.output_index, 0, np.dtype(self.dtype), tuple(self.shape), self.path,
                            self.file_op_name).load()

    def to_dict(self) -> dict:
        return {"tensor_id": self.tensor_id, "path": self.path, "op_name": self.op_name,
                "output_index": self.output_index, "file_op_name": self.file_op_name, "dtype": self.dtype,
                "shape": list(self.shape)}


ReferenceRef = Union[NpyTensorRef, NpuTensorRef]


@dataclass(frozen=True)
class AlignedPair:
    """An NPU tensor and the reference tensor it is compared with.

    ``ref`` is an :class:`NpyTensorRef` (NPU vs TF) or another run's :class:`NpuTensorRef` (NPU vs NPU).
    ``rule`` and ``via``: docs/internals/alignment.md#rules. ``note`` says anything the reader should know
    (``"matched after normalising the name"``).
    """

    npu: NpuTensorRef
    ref: ReferenceRef
    rule: str
    via: Tuple[str, ...] = ()
    note: str = ""

    def to_dict(self) -> dict:
        return {"npu": self.npu.to_dict(), "ref": self.ref.to_dict(), "rule": self.rule, "via": list(self.via),
                "note": self.note}


@dataclass(frozen=True)
class Unaligned:
    """An NPU tensor that is not compared, and why (one line)."""

    npu: NpuTensorRef
    reason: str

    def to_dict(self) -> dict:
        return {"tensor_id": self.npu.tensor_id, "reason": self.reason}


@dataclass(frozen=True)
class Coverage:
    """What was compared and, above all, what was not.

    Attributes
    ----------
    aligned_count : NPU tensors with a reference tensor.
    npu_tensors : every input and output of every readable dump file.
    npu_only_ops : dumped ops none of whose tensors has a reference.
    reference_only : reference tensors no NPU tensor is compared with (``name:output:k``); in NPU-vs-NPU
        mode, the other run's output tensors left unpaired.
    dumped_not_in_graph : dumped ops the graph does not hold (aligned by name instead, not dropped).
    graph_ops_without_dump : graph ops that run as tasks but have no dump file.
    ambiguous : one line per name that could mean several tensors and was therefore not guessed.
    unaligned : ``(tensor_id, reason)`` for every NPU tensor without a reference.
    unreadable : ``(path, message)`` for dump files whose header could not be read.
    unreadable_references : ``(path, message)`` for reference ``.npy`` files (NPU vs TF) whose header could
        not be read -- truncated, damaged, a FIFO, folder or dangling symlink named like a reference; their
        tensors are not compared (the NPU tensors they would serve say why in :attr:`unaligned`).
    dump_choice : which step and device of the NPU dump tree were compared, when it holds others or one was
        asked for (:mod:`precision_tool.formats.dump_tree`); ``""`` otherwise.
    ignored_references : ``.npy`` files of the reference folder (NPU vs TF) not named
        ``{name}.{index}.{timestamp}.npy``: not read, so no tensor is compared with them.
    dump_step, dump_device : the step and device compared, as numbers (``None``: the dumps were not in GE's
        step folders); what ``vcs``, ``ni`` and ``report`` match a ``--step``/``--device`` against.
    """

    aligned_count: int = 0
    npu_tensors: int = 0
    npu_only_ops: Tuple[str, ...] = ()
    reference_only: Tuple[str, ...] = ()
    dumped_not_in_graph: Tuple[str, ...] = ()
    graph_ops_without_dump: Tuple[str, ...] = ()
    ambiguous: Tuple[str, ...] = ()
    unaligned: Tuple[Tuple[str, str], ...] = ()
    unreadable: Tuple[Tuple[str, str], ...] = ()
    unreadable_references: Tuple[Tuple[str, str], ...] = ()
    ignored_references: Tuple[str, ...] = ()
    dump_choice: str = ""
    dump_step: Optional[int] = None
    dump_device: Optional[int] = None

    def to_dict(self) -> dict:
        chosen: dict = {"dump_choice": self.dump_choice} if self.dump_choice else {}
        chosen.update((key, value) for key, value in (("dump_step", self.dump_step),
                                                      ("dump_device", self.dump_device)) if value is not None)
        return {**chosen, "aligned_count": self.aligned_count, "npu_tensors": self.npu_tensors,
                "npu_only_ops": list(self.npu_only_ops), "reference_only": list(self.reference_only),
                "dumped_not_in_graph": list(self.dumped_not_in_graph),
                "graph_ops_without_dump": list(self.graph_ops_without_dump), "ambiguous": list(self.ambiguous),
                "unaligned": [list(item) for item in self.unaligned],
                "unreadable": [list(item) for item in self.unreadable],
                "unreadable_references": [list(item) for item in self.unreadable_references],
                **({"ignored_references": list(self.ignored_references)} if self.ignored_references else {})}

    @property
    def unusable_inputs(self) -> Tuple[Tuple[str, str], ...]:
        """``(path, message)`` of every input file the run could not read: dump files, then references."""
        return self.unreadable + self.unreadable_references



@dataclass(frozen=True)
class Alignment:
    """Result of :func:`precision_tool.alignment.align`.

    Attributes
    ----------
    mode : ``"npu_vs_tf"`` or ``"npu_vs_npu"``.
    pairs : in :attr:`order`, inputs before outputs within an op.
    unaligned : NPU tensors without a reference, same order.
    coverage : the counts and names of what was not compared.
    order : op names, producers before consumers (graph topological order, then dumped ops missing from the
        graph by dump time) or, without a graph, by dump time.
    order_source : ``"graph"`` or ``"dump_time"``.
    data_inputs : ``{op name: ((producer, output index), ...)}`` from the graph (data edges; input k of a
        dump is entry k); empty without a graph. :mod:`.divergence` follows these edges.
    reference_files : the reference folder's files as read (``NpyReference`` records, NPU-vs-TF only), for a
        caller that looks up more TF tensors (replay) without reading every header again.
    choices : the :class:`~precision_tool.formats.dump_tree.Choice` of each NPU run read, the compared run first
        (NPU vs NPU: then the other run's), for a caller that needs the steps read without scanning again.
    """

    mode: str
    pairs: Tuple[AlignedPair, ...]
    unaligned: Tuple[Unaligned, ...]
    coverage: Coverage
    order: Tuple[str, ...]
    order_source: str
    data_inputs: dict = field(default_factory=dict, hash=False, compare=False)
    reference_files: tuple = field(default=(), hash=False, compare=False)
    choices: tuple = field(default=(), hash=False, compare=False)

    def first_divergence(self, verdicts):
        """:func:`~precision_tool.alignment.divergence.find_first_divergence` over this alignment's order
        and edges; ``verdicts`` maps :attr:`NpuTensorRef.key` to ``True`` (passed) / ``False`` (failed)."""
        from precision_tool.alignment.divergence import find_first_divergence

        return find_first_divergence(verdicts, self.order, self.data_inputs, self.order_source)

    def to_dict(self) -> dict:
        return {"mode": self.mode, "order_source": self.order_source, "coverage": self.coverage.to_dict(),
                "pairs": [pair.to_dict() for pair in self.pairs]}
