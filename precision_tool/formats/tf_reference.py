"""A tfdbg run (v1 or v2) -> the flat reference ``.npy`` folder msaccucmp reads, as a typed result.

:func:`convert_tfdbg_run` reads one run with :mod:`precision_tool.formats.tfdbg` and writes each op
output with :func:`precision_tool.formats.npy_dir.write_reference_npy` as
``{op name'}.{output}.{timestamp}.npy`` (``/`` and ``.`` of the op name become ``_``; the timestamp is
the tensor's dump time). It returns a :class:`ReferenceConversion` saying what was written, what was
skipped and why, and what a user should know (repeated outputs, fused op types, file-name collisions,
older files left in the folder). The ``tf_dump`` command prints it; the emulator uses it directly.

Rules:

* Resource handles have no values and are skipped; strings and variants too (``non-numeric``).
* When one op output was dumped several times in the run (a while loop, several ``tf.function`` calls
  in one v2 capture) the last one is kept; :attr:`ReferenceConversion.repeated` says how often.
* Tensors are read and written one at a time: memory stays at the size of the largest tensor.
* A tensor that cannot be read or written is recorded as a failure (``reason == "failed"``, with the
  one-line error naming the file), and the others are still written. Problems with the run as a whole
  (no such folder, nothing with values, output inside the input) raise a :class:`PrecisionToolError`.

TensorFlow is not needed.
"""
from __future__ import annotations

import os
import re
from collections import Counter
from dataclasses import dataclass
from typing import Dict, List, Optional, Tuple, Union

from precision_tool.config import ensure_output_dir
from precision_tool.errors import PrecisionToolError, WorkspaceError
from precision_tool.formats.npy_dir import build_name_mapping, write_reference_npy
from precision_tool.formats.tf_tensor import DT_RESOURCE, base_dtype_code
from precision_tool.formats.tfdbg import TfdbgRun, TfdbgTensor, iter_tfdbg, list_tfdbg_runs

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

    @property
    def tensor_name(self) -> str:
        """``"conv1/relu:0"``."""
        return f"{self.op_name}:{self.output_slot}"

    def to_dict(self) -> dict:
        """JSON-ready description, as ``tf_dump --json`` lists it under ``tensors``."""
        return {"op_name": self.op_name, "output_slot": self.output_slot, "op_type": self.op_type,
                "dtype": self.dtype, "shape": list(self.shape), "file": self.file}


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
    tensors : the files written, in the order of each op output's last dump.
    skipped : resource handles and non-numeric tensors in dump order (each dump counts), then failures.
    repeated : ``(tensor name, times dumped)`` for op outputs dumped more than once, in first-dump order.
    fused_op_types : ``(op type, outputs)`` for op types in :data:`FUSED_TYPE_PREFIXES`, first seen first.
    name_collisions : ``(file op name, TF op names)`` where several op names share a file name.
    other_files : reference files in ``out_dir`` that this conversion did not write (earlier ones).
    removed : reference files deleted first (``clean=True``).
    """

    run: TfdbgRun
    out_dir: str
    tensors: Tuple[ReferenceTensor, ...]
    skipped: Tuple[SkippedTensor, ...]
    repeated: Tuple[Tuple[str, int], ...]
    fused_op_types: Tuple[Tuple[str, int], ...]
    name_collisions: Tuple[Tuple[str, Tuple[str, ...]], ...]
    other_files: Tuple[str, ...]
    removed: int

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


def convert_tfdbg_run(run: Union[TfdbgRun, str, os.PathLike], out_dir, *, clean: bool = False) -> ReferenceConversion:
    """Write the reference ``.npy`` folder for one tfdbg run (see the module docstring).

    Parameters
    ----------
    run : TfdbgRun, or the path of one run
        A v1 run folder (``run_<us>_<n>``) or a v2 DebugEvents folder; :func:`find_tfdbg_runs` finds them.
    out_dir : str or Path
        The reference folder; created if missing. It may not be the run folder or inside it.
    clean : bool
        First delete the reference files already in ``out_dir`` (names like ``a.0.123.npy`` only).

    Returns
    -------
    ReferenceConversion
        Falsy when some tensor could not be converted (see :attr:`ReferenceConversion.failures`).

    Raises
    ------
    WorkspaceError
        ``run`` is not a folder or holds no tfdbg run, or several; ``out_dir`` is inside it or cannot be
        created; the run holds no tensor with values.
    ReferenceFormatError
        A dump file whose header cannot be read (the message names the file).
    """
    run = _one_run(run)
    out_dir = ensure_output_dir(os.fspath(out_dir), run.path)
    removed = _remove_reference_files(out_dir) if clean else 0
    last, seen, skipped = _scan(run)
    if not last:
        hint = ("enable_reference_dump() must run before the step is first traced"
                if run.version == 2 else "was anything run under the wrapped session?")
        raise WorkspaceError(f"{run.path}: the run holds no tensor with values", hint)

    tensors: List[ReferenceTensor] = []
    fused: Counter = Counter()
    for (op_name, slot), record in last.items():
        if record.op_type and record.op_type.startswith(FUSED_TYPE_PREFIXES):
            fused[record.op_type] += 1
        try:
            array = record.load()
            assert array is not None, "only resource handles load as None, and they were skipped"
            path = write_reference_npy(out_dir, op_name, slot, array, record.timestamp_us)
        except PrecisionToolError as error:
            skipped.append(SkippedTensor(op_name, slot, record.dtype_name, SKIP_FAILED, str(error)))
            continue
        tensors.append(ReferenceTensor(op_name, slot, record.op_type, record.dtype_name, tuple(array.shape),
                                       os.path.basename(path), path, int(array.nbytes), record.timestamp_us))
        del array

    written = {tensor.file for tensor in tensors}
    others = sorted(name for name in os.listdir(out_dir) if REFERENCE_FILE.fullmatch(name) and name not in written)
    collisions = tuple((file_name, names) for file_name, names in build_name_mapping(op for op, _ in last).items()
                       if len(names) > 1)
    return ReferenceConversion(
        run=run, out_dir=out_dir, tensors=tuple(tensors), skipped=tuple(skipped),
        repeated=tuple((f"{op}:{slot}", count) for (op, slot), count in seen.items() if count > 1),
        fused_op_types=tuple(fused.items()), name_collisions=collisions, other_files=tuple(others),
        removed=removed)


def _one_run(run) -> TfdbgRun:
    if isinstance(run, TfdbgRun):
        return run
    path = os.fspath(run)
    runs = list_tfdbg_runs(path)
    if len(runs) != 1:
        raise WorkspaceError(f"{path}: holds {len(runs)} tfdbg runs, not one",
                             "pass one run_<us>_<n> folder, or choose one from find_tfdbg_runs()")
    return runs[0]


def _scan(run: TfdbgRun) -> Tuple[Dict[Tuple[str, int], TfdbgTensor], Counter, List[SkippedTensor]]:
    """Last record per op output (in the order of those last records), how often each was dumped, and
    the resource and non-numeric tensors skipped. Reads headers only."""
    last: Dict[Tuple[str, int], TfdbgTensor] = {}
    seen: Counter = Counter()
    skipped: List[SkippedTensor] = []
    for record in iter_tfdbg(run.path, skip_resources=False):
        if base_dtype_code(record.dtype_code) == DT_RESOURCE:
            skipped.append(SkippedTensor(record.op_name, record.output_slot, record.dtype_name, SKIP_RESOURCE))
            continue
        if not record.loadable:
            skipped.append(SkippedTensor(record.op_name, record.output_slot, record.dtype_name, SKIP_NON_NUMERIC))
            continue
        key = (record.op_name, record.output_slot)
        seen[key] += 1
        last.pop(key, None)
        last[key] = record
    return last, seen, skipped


def _remove_reference_files(folder: str) -> int:
    removed = 0
    for name in os.listdir(folder):
        path = os.path.join(folder, name)
        if REFERENCE_FILE.fullmatch(name) and os.path.isfile(path):
            os.unlink(path)
            removed += 1
    return removed
