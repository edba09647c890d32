"""A tfdbg run (v1 or v2) -> the flat reference ``.npy`` folder msaccucmp reads, as a typed result.

:func:`convert_tfdbg_run` reads one run (:mod:`precision_tool.formats.tfdbg`) and writes each op output, one tensor
at a time, as ``{op name'}.{output}.{timestamp}.npy`` (:func:`precision_tool.formats.npy_dir.write_reference_npy`).
It returns a :class:`ReferenceConversion`: what was written, what was skipped and why, what a user should know. The
folder holds exactly the run converted last (:data:`RECORD_FILE`); reference files no conversion recorded are
refused unless ``clean``. tfdbg v1 keeps an op output's last dump, v2 every execution
(:mod:`precision_tool.formats.tfdbg_v2_names`); aliases write one tensor under a second name. TensorFlow is not
needed. The rules in full: docs/internals/formats.md#tf_reference.
"""
from __future__ import annotations

import json
import os
import re
import shutil
from collections import Counter
from dataclasses import dataclass
from typing import Dict, Iterable, List, Mapping, Optional, Tuple, Union

from precision_tool.config import ensure_output_dir
from precision_tool.errors import PrecisionToolError, ReferenceFormatError, WorkspaceError
from precision_tool.fileio import TEMP_PREFIX, write_text_atomic
from precision_tool.formats.bounds import parse_decimal, shown_name
from precision_tool.formats.npy_dir import (RECORD_FILE, build_name_mapping, read_conversion_record,
                                            reference_file_name, write_reference_npy)
from precision_tool.formats.tf_graph import KeptGraph, keep_tfdbg_v1_graphs, keep_tfdbg_v2_graphs
from precision_tool.formats.tf_tensor import DT_RESOURCE, base_dtype_code
from precision_tool.formats.tf_schema import tf_dtype_name
from precision_tool.formats.tfdbg import TfdbgRun, TfdbgTensor, iter_tfdbg, list_tfdbg_runs
from precision_tool.formats.tfdbg_v1 import UNREADABLE_DTYPE
from precision_tool.formats.tfdbg_v2_names import ALIAS_USER, Alias, V2Naming, name_v2_dump

REFERENCE_FILE = re.compile(r"[^.]+\.[0-9]+\.[0-9]+\.npy")
"""Names of reference files (``{op}.{output}.{timestamp}.npy``): what ``clean`` removes and what counts as
another conversion's file."""

FUSED_TYPE_PREFIXES = ("_Fused", "_Mkl", "_Xla", "XlaLaunch", "XlaRun", "TPUPartitionedCall")
"""Op types that mean several TF ops were executed as one: their inner ops have no reference tensor."""

SKIP_RESOURCE = "resource"
SKIP_NON_NUMERIC = "non-numeric"
SKIP_FAILED = "failed"


@dataclass(frozen=True)
class ReferenceTensor:
    """One reference file written.

    Attributes
    ----------
    op_name, output_slot : the TF tensor ``op_name:output_slot``.
    op_type : ``"Conv2D"``; ``None`` when the dump does not say.
    dtype : the TF dtype name, ``"DT_FLOAT"``.
    shape : the written array's shape.
    file : the file name inside :attr:`ReferenceConversion.out_dir`.
    path : the file.
    nbytes : bytes of array data.
    timestamp_us : the dump time, as in the file name.
    tf_op_name : tfdbg v2: the op as TF executed it (``op_name`` is the reference name, which differs for
        a later execution, ``op@1``, or an op of another graph, ``fn/op``); ``None`` for v1.
    graph : tfdbg v2: the function that ran it, outermost first (``("train_step",)``).
    execution : tfdbg v2: which execution of this op output in its graph (0: the first).
    """

    op_name: str
    output_slot: int
    op_type: Optional[str]
    dtype: str
    shape: Tuple[int, ...]
    file: str
    path: str
    nbytes: int
    timestamp_us: int
    tf_op_name: Optional[str] = None
    graph: Tuple[str, ...] = ()
    execution: int = 0

    @property
    def tensor_name(self) -> str:
        """``"conv1/relu:0"``."""
        return f"{self.op_name}:{self.output_slot}"

    def to_dict(self) -> dict:
        """JSON-ready description, as ``tf_dump --json`` lists it under ``tensors`` (v2 adds where it ran)."""
        data = {"op_name": self.op_name, "output_slot": self.output_slot, "op_type": self.op_type,
                "dtype": self.dtype, "shape": list(self.shape), "file": self.file}
        if self.tf_op_name is not None:
            data.update(tf_op_name=self.tf_op_name, graph="/".join(self.graph), execution=self.execution)
        return data


@dataclass(frozen=True)
class ReferenceAlias:
    """A second name written for a reference tensor (a hard link to its file, or a copy).

    Attributes
    ----------
    name, output_slot : the alias tensor ``name:output_slot`` (``conv/kernel:0``, ``image:0``).
    target : the written tensor it names (``net/conv/Conv2D/ReadVariableOp:0``).
    kind : ``"variable"``, ``"model input"`` or ``"--alias"`` (asked for by the caller).
    file, path : the alias file.
    """

    name: str
    output_slot: int
    target: str
    kind: str
    file: str
    path: str

    @property
    def tensor_name(self) -> str:
        return f"{self.name}:{self.output_slot}"

    def to_dict(self) -> dict:
        return {"alias": self.tensor_name, "target": self.target, "kind": self.kind, "file": self.file}


@dataclass(frozen=True)
class SkippedTensor:
    """One dumped tensor that has no reference file.

    Attributes
    ----------
    op_name, output_slot : the TF tensor.
    dtype : the TF dtype name (``"DT_RESOURCE"``, ``"DT_STRING"``, ...).
    reason : :data:`SKIP_RESOURCE` (a variable handle: no values), :data:`SKIP_NON_NUMERIC` (strings,
        variants) or :data:`SKIP_FAILED` (could not be read or written; see ``message``).
    message : for failures, the one-line error naming the file and the cause; else ``""``.
    """

    op_name: str
    output_slot: int
    dtype: str
    reason: str
    message: str = ""

    @property
    def tensor_name(self) -> str:
        return f"{self.op_name}:{self.output_slot}"

    def describe(self) -> str:
        """``"names:0 (DT_STRING)"`` for a skip; the error message for a failure."""
        return self.message if self.reason == SKIP_FAILED else f"{self.tensor_name} ({self.dtype})"


@dataclass(frozen=True)
class ReferenceConversion:
    """What :func:`convert_tfdbg_run` did.

    Attributes
    ----------
    run : the tfdbg run read (``run.path``, ``run.version``).
    out_dir : the reference folder written (its real path).
    tensors : the files written: v1 in the order of each op output's last dump, v2 in dump order.
    skipped : resource handles and non-numeric tensors in dump order (each dump counts), then failures.
    repeated : ``(tensor name, times dumped)`` for op outputs dumped more than once, in first-dump order
        (v2: the reference name of the first execution; every execution was written).
    fused_op_types : ``(op type, outputs)`` for op types in :data:`FUSED_TYPE_PREFIXES`, first seen first.
    name_collisions : ``(file op name, TF op names)`` where several op names share a file name.
    removed : reference files deleted first: the previous conversion's (``replaced_run`` names its run), or every
        one (``clean=True``).
    aliases : the alias files written (see :class:`ReferenceAlias`).
    notes : what the user should know about names: arguments without values, weights or inputs that got
        no alias, aliases refused (v2 naming and ``aliases``).
    keeps_every_execution : True for v2 (``op@k`` names), False for v1 (the last dump is kept).
    graphs : the executed graphs kept in ``graph_dir`` (see ``keep_tfdbg_v1_graphs`` and
        ``keep_tfdbg_v2_graphs`` in :mod:`precision_tool.formats.tf_graph`); why one was not kept is in ``notes``.
    """

    run: TfdbgRun
    out_dir: str
    tensors: Tuple[ReferenceTensor, ...]
    skipped: Tuple[SkippedTensor, ...]
    repeated: Tuple[Tuple[str, int], ...]
    fused_op_types: Tuple[Tuple[str, int], ...]
    name_collisions: Tuple[Tuple[str, Tuple[str, ...]], ...]
    removed: int
    aliases: Tuple[ReferenceAlias, ...] = ()
    notes: Tuple[str, ...] = ()
    keeps_every_execution: bool = False
    graphs: Tuple[KeptGraph, ...] = ()
    replaced_run: str = ""

    @property
    def nbytes(self) -> int:
        """Bytes of array data written."""
        return sum(tensor.nbytes for tensor in self.tensors)

    @property
    def resources(self) -> Tuple[SkippedTensor, ...]:
        return tuple(skip for skip in self.skipped if skip.reason == SKIP_RESOURCE)

    @property
    def non_numeric(self) -> Tuple[SkippedTensor, ...]:
        return tuple(skip for skip in self.skipped if skip.reason == SKIP_NON_NUMERIC)

    @property
    def failures(self) -> Tuple[SkippedTensor, ...]:
        return tuple(skip for skip in self.skipped if skip.reason == SKIP_FAILED)

    def __bool__(self) -> bool:
        """True when every tensor with values was written."""
        return not self.failures


def find_tfdbg_runs(root) -> List[TfdbgRun]:
    """Every tfdbg run in ``root`` and in its immediate sub-folders (one per capture), oldest first.

    Raises
    ------
    WorkspaceError
        ``root`` is not a folder, or neither it nor its sub-folders hold a tfdbg run.
    """
    root = os.fspath(root)
    if not os.path.isdir(root):
        raise WorkspaceError(f"{root}: no such folder", "capture a reference first with sess_dump, estimator_dump "
                                                        "or enable_reference_dump, or pass -i DIR")
    found: Dict[str, TfdbgRun] = {}
    for folder in [root, *sorted(os.path.join(root, n) for n in os.listdir(root))]:
        if not os.path.isdir(folder):
            continue
        try:
            runs = list_tfdbg_runs(folder)
        except WorkspaceError:
            continue
        for run in runs:
            found.setdefault(os.path.realpath(run.path), run)
    if not found:
        raise WorkspaceError(f"{root}: no tfdbg run here or in its sub-folders",
                             "capture a reference first with sess_dump, estimator_dump or enable_reference_dump")
    return sorted(found.values(), key=lambda run: (run.timestamp_us, run.counter, run.path))


def convert_tfdbg_run(run: Union[TfdbgRun, str, os.PathLike], out_dir, *, clean: bool = False,
                      aliases: Optional[Mapping[str, str]] = None, graph_dir=None) -> ReferenceConversion:
    """Write the reference ``.npy`` folder for one tfdbg run (the rules: docs/internals/formats.md#tf_reference).

    Parameters
    ----------
    run : TfdbgRun, or the path of one run
        A v1 run folder (``run_<us>_<n>``) or a v2 DebugEvents folder; :func:`find_tfdbg_runs` finds them.
    out_dir : str or Path
        The reference folder; created if missing. It may not be the run folder or inside it.
    clean : bool
        First delete every reference file in ``out_dir`` (names like ``a.0.123.npy`` only), recorded or not.
        Without it, the previous conversion's files (its :data:`RECORD_FILE`) are deleted, and any other
        reference file is refused.
    aliases : mapping, optional
        ``{written tensor: alias tensor}`` (``{"IteratorGetNext:0": "image"}``; ``:0`` may be left out):
        also write each as the alias, like the aliases the v2 naming finds. An alias naming a written
        tensor or another ``aliases`` entry, or a tensor that was not written, is refused with a note; one
        naming an automatic alias (``image``) replaces it, with a note saying which.
    graph_dir : str or Path, optional
        Also keep the run's executed graph there (tfdbg v1: ``graph_<run>_<device>.pb`` and ``index.json``,
        :func:`precision_tool.formats.tf_graph.keep_tfdbg_v1_graphs`). A graph that cannot be read or
        written is a note, not an error. A tfdbg v2 run's graphs are the function graphs the capture left
        (``keep_tfdbg_v2_graphs``).

    Returns
    -------
    ReferenceConversion
        Falsy when some tensor could not be converted (see :attr:`ReferenceConversion.failures`).

    Raises
    ------
    WorkspaceError
        ``run`` is not a folder or holds no tfdbg run, or several; ``out_dir`` is inside it or cannot be
        created; the run holds no tensor with values; ``out_dir`` holds reference files no conversion recorded
        (without ``clean``).
    ReferenceFormatError
        A dump file whose header cannot be read (the message names the file).
    """
    run = _one_run(run)
    out_dir = ensure_output_dir(os.fspath(out_dir), run.path)
    present = _reference_files(out_dir)
    previous = read_conversion_record(out_dir)
    if not clean:
        check_replaceable(out_dir, run)
    found_aliases: List[Alias] = []
    notes: List[str] = []
    if run.version == 2:
        entries, seen, skipped, naming = _scan_v2(run)
        found_aliases.extend(naming.aliases)
        notes.extend(naming.notes)
    else:
        entries, seen, skipped = _scan(run)
    if not entries:
        hint = ("enable_reference_dump() must run before the step is first traced"
                if run.version == 2 else "was anything run under the wrapped session?")
        raise WorkspaceError(f"{run.path}: the run holds no tensor with values", hint)
    for name in present:
        os.unlink(os.path.join(out_dir, name))
    record_conversion(out_dir, run.path, (), complete=False)
    found_aliases.extend(_user_aliases(aliases or {}))
    graphs: List[KeptGraph] = []
    if graph_dir is not None:
        keep = keep_tfdbg_v1_graphs if run.version == 1 else keep_tfdbg_v2_graphs
        graphs, graph_notes = keep(run.path, os.fspath(graph_dir))
        notes.extend(graph_notes)

    tensors: List[ReferenceTensor] = []
    fused: Counter = Counter()
    for entry in entries:
        record, op_name, slot = entry.record, entry.name, entry.record.output_slot
        if record.op_type and record.op_type.startswith(FUSED_TYPE_PREFIXES):
            fused[record.op_type] += 1
        try:
            array = record.load()
            assert array is not None, "only resource handles load as None, and they were skipped"
            path = write_reference_npy(out_dir, op_name, slot, array, record.timestamp_us)
        except PrecisionToolError as error:
            skipped.append(SkippedTensor(op_name, slot, record.dtype_name, SKIP_FAILED, str(error)))
            continue
        v2 = run.version == 2
        tensors.append(ReferenceTensor(op_name, slot, record.op_type, record.dtype_name, tuple(array.shape),
                                       os.path.basename(path), path, int(array.nbytes), record.timestamp_us,
                                       record.op_name if v2 else None, entry.graph, entry.execution))
        del array

    written_aliases, alias_notes = _write_aliases(out_dir, tensors, found_aliases)
    notes.extend(alias_notes)
    written = {tensor.file for tensor in tensors} | {alias.file for alias in written_aliases}
    failed = [(reference_file_name(skip.op_name, skip.output_slot, 0), skip.message) for skip in skipped
              if skip.reason == SKIP_FAILED]
    record_conversion(out_dir, run.path, written, complete=True, failed=failed)
    names = [entry.name for entry in entries] + [alias.name for alias in written_aliases]
    collisions = tuple((file_name, names) for file_name, names in build_name_mapping(names).items()
                       if len(names) > 1)
    return ReferenceConversion(
        run=run, out_dir=out_dir, tensors=tuple(tensors), skipped=tuple(skipped),
        repeated=tuple((name, count) for name, count in seen.items() if count > 1),
        fused_op_types=tuple(fused.items()), name_collisions=collisions,
        removed=len(present), replaced_run=(previous or {}).get("run", "") if present else "",
        aliases=tuple(written_aliases), notes=tuple(notes), keeps_every_execution=run.version == 2,
        graphs=tuple(graphs))


def _user_aliases(aliases: Mapping[str, str]) -> List[Alias]:
    found = []
    for target, alias in aliases.items():
        target_name, target_slot = _split_tensor(target)
        alias_name, alias_slot = _split_tensor(alias)
        found.append(Alias(alias_name, alias_slot, f"{target_name}:{target_slot}", ALIAS_USER))
    return found


def _split_tensor(name: str) -> Tuple[str, int]:
    """``"a/b:1"`` -> ``("a/b", 1)``, ``"a/b"`` -> ``("a/b", 0)``."""
    op_name, sep, slot = name.rpartition(":")
    number = parse_decimal(slot) if sep else None
    return (op_name, number) if number is not None else (name, 0)


def _link(source: str, destination: str) -> None:
    """``destination`` becomes another name of ``source`` (a hard link; a copy where links fail), atomically."""
    temporary = os.path.join(os.path.dirname(destination), f"{TEMP_PREFIX}{os.getpid()}-alias.tmp")
    if os.path.lexists(temporary):
        os.unlink(temporary)
    try:
        try:
            os.link(source, temporary)
        except OSError:
            shutil.copyfile(source, temporary)
        os.replace(temporary, destination)
    finally:
        if os.path.lexists(temporary):
            os.unlink(temporary)


def _write_aliases(out_dir: str, tensors: Iterable[ReferenceTensor], aliases: Iterable[Alias]
                   ) -> Tuple[List[ReferenceAlias], List[str]]:
    """Link each alias to its target's file. An alias naming a written tensor, or an alias already written,
    is refused with a note -- except that a ``--alias`` replaces an automatic one (the user knows better)."""
    by_name = {tensor.tensor_name: tensor for tensor in tensors}
    written: Dict[str, ReferenceAlias] = {}
    notes = []
    for alias in aliases:
        target = by_name.get(alias.target)
        earlier = written.get(alias.tensor_name)
        replaces = earlier is not None and alias.kind == ALIAS_USER and earlier.kind != ALIAS_USER
        if alias.tensor_name in by_name or (earlier is not None and not replaces):
            if alias.tensor_name != alias.target:
                notes.append(f"Alias {alias.tensor_name} for {alias.target} ({alias.kind}) not written: that name "
                             "is already a reference tensor or another alias.")
            continue
        if target is None:
            notes.append(f"Alias {alias.tensor_name} ({alias.kind}) not written: no reference tensor {alias.target} "
                         "was written.")
            continue
        path = os.path.join(out_dir, reference_file_name(alias.name, alias.output_slot, target.timestamp_us))
        try:
            _link(target.path, path)
        except OSError as error:
            notes.append(f"{path}: alias {alias.tensor_name} not written ({error.strerror or error}).")
            continue
        except ValueError:  # a NUL character in a name from a damaged names file: no file can be named so
            notes.append(f"alias {shown_name(alias.tensor_name)} not written: a NUL character cannot be in a file "
                         "name.")
            continue
        if earlier is not None:
            if os.path.realpath(earlier.path) != os.path.realpath(path):
                os.unlink(earlier.path)
            if earlier.target != alias.target:
                notes.append(f"Alias {alias.tensor_name} = {alias.target} ({alias.kind}) replaces the automatic "
                             f"{earlier.kind} alias {earlier.tensor_name} = {earlier.target}.")
            del written[alias.tensor_name]
        written[alias.tensor_name] = ReferenceAlias(alias.name, alias.output_slot, alias.target, alias.kind,
                                                    os.path.basename(path), path)
    return list(written.values()), notes


def _one_run(run) -> TfdbgRun:
    if isinstance(run, TfdbgRun):
        return run
    path = os.fspath(run)
    runs = list_tfdbg_runs(path)
    if len(runs) != 1:
        raise WorkspaceError(f"{path}: holds {len(runs)} tfdbg runs, not one",
                             "pass one run_<us>_<n> folder, or choose one from find_tfdbg_runs()")
    return runs[0]


@dataclass(frozen=True)
class _Entry:
    """One tensor to write: its reference name, record, and (v2) graph path and execution index."""

    name: str
    record: TfdbgTensor
    graph: Tuple[str, ...] = ()
    execution: int = 0


def _skip_reason(record: TfdbgTensor) -> Optional[Tuple[str, str]]:
    """``(reason, message)`` when ``record`` is not written: a resource handle or a string/variant (no values to
    compare), or -- a failure, naming the file -- a data type that is no TensorFlow data type (a damaged
    TensorProto) or a tensor file that is a folder. ``None`` for a tensor to write."""
    if base_dtype_code(record.dtype_code) == DT_RESOURCE:
        return SKIP_RESOURCE, ""
    if record.dtype_code == UNREADABLE_DTYPE:
        try:
            record.load()
        except PrecisionToolError as error:
            return SKIP_FAILED, str(error)
    if tf_dtype_name(record.dtype_code).startswith("DT_UNKNOWN"):
        return SKIP_FAILED, str(ReferenceFormatError(record.path, f"data type {record.dtype_code} is no TensorFlow "
                                                                  "data type (a damaged TensorProto)"))
    if not record.loadable:
        return SKIP_NON_NUMERIC, ""
    return None


def _scan(run: TfdbgRun) -> Tuple[List[_Entry], Counter, List[SkippedTensor]]:
    """v1: the last record per op output (in the order of those last records), how often each was dumped
    (by tensor name), and the resource and non-numeric tensors skipped. Reads headers only."""
    last: Dict[Tuple[str, int], TfdbgTensor] = {}
    seen: Counter = Counter()
    skipped: List[SkippedTensor] = []
    for record in iter_tfdbg(run.path, skip_resources=False):
        skip = _skip_reason(record)
        if skip is not None:
            skipped.append(SkippedTensor(record.op_name, record.output_slot, record.dtype_name, *skip))
            continue
        key = (record.op_name, record.output_slot)
        seen[f"{record.op_name}:{record.output_slot}"] += 1
        last.pop(key, None)
        last[key] = record
    return [_Entry(op_name, record) for (op_name, _), record in last.items()], seen, skipped


def _scan_v2(run: TfdbgRun) -> Tuple[List[_Entry], Counter, List[SkippedTensor], V2Naming]:
    """v2: every execution of every op output under its reference name (dump order), how often each op
    output ran (by the first execution's name), the skipped tensors, and the naming's aliases and notes."""
    naming = name_v2_dump(run.path)
    entries: List[_Entry] = []
    seen: Counter = Counter()
    skipped: List[SkippedTensor] = []
    first_name: Dict[Tuple[str, str, int], str] = {}
    for named in naming.tensors:
        record = named.record
        skip = _skip_reason(record)
        if skip is not None:
            skipped.append(SkippedTensor(named.name, record.output_slot, record.dtype_name, *skip))
            continue
        key = (record.graph_id or "", record.op_name, record.output_slot)
        seen[first_name.setdefault(key, named.tensor_name)] += 1
        entries.append(_Entry(named.name, record, named.graph, named.execution))
    return entries, seen, skipped, naming


def _reference_files(folder: str) -> List[str]:
    return sorted(name for name in os.listdir(folder)
                  if REFERENCE_FILE.fullmatch(name) and os.path.isfile(os.path.join(folder, name)))


def check_replaceable(folder: str, run: TfdbgRun) -> None:
    """Raise :class:`WorkspaceError` when ``folder`` holds reference files that no conversion recorded, which
    converting ``run`` there (without ``clean``) would refuse to delete; an interrupted conversion's record covers
    every file. For a caller that writes beside the folder first (``tf_dump`` keeps the graph): refuse before."""
    present = _reference_files(folder) if os.path.isdir(folder) else []
    record = read_conversion_record(folder) if present else None
    if not present or (record is not None and not record.get("complete", False)):
        return
    known = set(record.get("files", [])) if record is not None else set()
    unknown = [name for name in present if name not in known]
    if unknown:
        raise WorkspaceError(f"{folder}: holds {len(unknown)} reference file(s) that no tf_dump conversion "
                             f"recorded (e.g. {unknown[0]}); converting {os.path.basename(run.path)} beside them "
                             "would mix two runs", "pass --clean to delete them first, or -o another folder")


def record_conversion(folder: str, run: str, files: Iterable[str], complete: bool = True,
                      failed: Iterable[Tuple[str, str]] = ()) -> None:
    """Write ``folder``'s :data:`RECORD_FILE`: ``run`` (what was converted) wrote ``files`` (names in ``folder``);
    ``failed``: ``(file name it would have had, one-line message)`` of the tensors that could not be converted.
    For a writer that renames or adds reference files after :func:`convert_tfdbg_run` (the emulator)."""
    record = {"run": run, "complete": complete, "files": sorted(files),
              "failed": [{"file": name, "message": message} for name, message in failed]}
    text = json.dumps(record, indent=1)
    try:
        write_text_atomic(os.path.join(folder, RECORD_FILE), text + "\n")
    except OSError as error:
        raise WorkspaceError(f"{os.path.join(folder, RECORD_FILE)}: cannot be written ({error.strerror})") from None
