"""What one worker does: load one aligned pair, compare it, return a small :class:`TensorResult` (no arrays).

Each process keeps a :class:`PairComparer` with two small caches -- the last few dump headers and the last
reference array -- so only one tensor pair, plus at most one cached reference, is in memory at a time; payloads are
read by offset from the cached header. :func:`prepare_worker_process` limits BLAS/OpenMP to one thread, keeps freed
memory for reuse and maps files rather than copying them; a worker dies with the process that started it. Why each:
docs/internals/comparison.md#one-worker.
"""
from __future__ import annotations

import dataclasses
import functools
import os
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np

from precision_tool.alignment import AlignedPair, NpuTensorRef, NpyTensorRef
from precision_tool.collector import forked_child
from precision_tool.process_env import process_symbols
from precision_tool.comparison.result import TensorResult
from precision_tool.compat import prod
from precision_tool.errors import DumpFormatError, PrecisionToolError
from precision_tool.fileio import allow_mapped_reads, prefetch, shrunk_while_mapped
from precision_tool.formats.dump_file import (DumpFile, Payloads, TensorEntry, read_dump_header_cached,
                                               read_payloads, same_payload)
from precision_tool.formats.npy_dir import npy_fortran_order, read_npy_chunks
from precision_tool.formats.origin_tensor import origin_pieces, read_origin_tensor
from precision_tool.metrics import DEFAULT_TOLERANCES, TensorComparison, compare_tensors
from precision_tool.metrics.pair_stats import CHUNK, paired_pieces, same_bytes
from precision_tool.metrics.tensor_verdict import TensorLayout
from precision_tool.status import Status

THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")
#: Pairs of more elements than this are read in pieces when they can be (:meth:`PairComparer.streamed`): 16M
#: float16 + float32 elements are 96 MiB, below which reading whole is simpler and as fast.
STREAM_ABOVE = 1 << 24
#: Dump files up to this size are read whole, once, the last :data:`FILES_KEPT` kept (:meth:`PairComparer.payloads`).
WHOLE_FILE_LIMIT = 16 << 20
FILES_KEPT = 2
# glibc mallopt parameters (malloc.h)
_M_TRIM_THRESHOLD, _M_TOP_PAD, _M_MMAP_THRESHOLD = -1, -2, -3


@dataclass(frozen=True)
class PairTask:
    """One aligned pair to compare, with what the row needs besides the tensors.

    ``same_as`` is the producer output whose result this input may share: the engine sets it only when
    both are compared with the same reference tensor and decode alike; the worker then checks the stored
    bytes (:meth:`PairComparer.same_stored_tensor`).
    """

    pair: AlignedPair
    index: int
    ground_truth: str
    same_as: Optional[NpuTensorRef] = None


#: What a worker returns per task: the row, and the tensor id whose result it shares (``""`` if computed).
Outcome = Tuple[TensorResult, str]


def keep_freed_memory() -> bool:
    """Ask glibc to keep freed memory for reuse instead of returning it to the kernel; False if not glibc.

    Raises the mmap threshold to 256 MiB (blocks below it come from the heap) and the trim threshold to
    512 MiB (the heap is not shrunk after every free). Peak memory is unchanged -- the same blocks are
    reused -- but work arrays are no longer page-faulted afresh for every tensor.
    """
    try:
        mallopt = process_symbols().mallopt
    except (OSError, AttributeError, TypeError):
        return False
    ok = mallopt(_M_MMAP_THRESHOLD, 256 << 20) == 1
    ok = mallopt(_M_TRIM_THRESHOLD, 512 << 20) == 1 and ok
    return mallopt(_M_TOP_PAD, 16 << 20) == 1 and ok


def prepare_worker_process() -> None:
    """One BLAS/OpenMP thread per worker, freed memory kept for reuse and files mapped rather than copied
    (docs/internals/comparison.md#one-worker)."""
    for variable in THREAD_VARIABLES:
        os.environ[variable] = "1"
    keep_freed_memory()
    allow_mapped_reads()


class PairComparer:
    """Compares pairs one at a time; dump headers come from the process's header cache
    (:func:`~precision_tool.formats.dump_file.read_dump_header_cached`), references from a one-entry cache, and
    the payload bytes of the last :data:`FILES_KEPT` dump files of at most :data:`WHOLE_FILE_LIMIT` bytes from a
    small cache: each such file is read with one open and one read, although an op's input, its output and its
    consumer's shared-input check all take bytes from it."""

    def __init__(self, cosine_threshold: Optional[float]):
        self.cosine_threshold = cosine_threshold
        self._reference_key: Optional[tuple] = None
        self._reference_array: Optional[np.ndarray] = None
        self._payloads: "OrderedDict[str, Payloads]" = OrderedDict()

    # ------------------------------------------------------------------ loading
    def header(self, path: str) -> DumpFile:
        """The parsed header of a dump file, from the cache when recently read (and unchanged)."""
        return read_dump_header_cached(path)

    def load_npu(self, ref: NpuTensorRef):
        """``(OriginTensor, TensorEntry)``: as :meth:`NpuTensorRef.load`, with the header from the cache, in the
        stored dtype (the metrics widen a block at a time). A ``DT_UNDEFINED`` tensor (type unknown) raises
        :class:`DumpFormatError`: it is not compared.
        """
        dump, entry = self.entry(ref)
        if entry.is_raw_bytes:  # its bytes as int8 (what pt and dc show) mean nothing against a reference
            raise DumpFormatError(ref.path, f"{entry.label}: data type DT_UNDEFINED (unknown: raw bytes), not "
                                            "compared")
        return read_origin_tensor(dump, entry, ref.origin_format or None, payloads=self.payloads(dump)), entry

    def payloads(self, dump: DumpFile) -> Optional[Payloads]:
        """``dump``'s payload bytes, read whole on first use and kept (the last :data:`FILES_KEPT` files); ``None``
        for a file over :data:`WHOLE_FILE_LIMIT` bytes, whose tensors are read one by one. A kept file is used only
        for the header it was read with (a rewritten file has a new header, so it is read again)."""
        if dump.file_size > WHOLE_FILE_LIMIT:
            return None
        kept = self._payloads.get(dump.path)
        if kept is not None and kept.dump is dump:
            self._payloads.move_to_end(dump.path)
            return kept
        self._payloads.pop(dump.path, None)
        while len(self._payloads) >= FILES_KEPT:
            self._payloads.popitem(last=False)
        self._payloads[dump.path] = kept = read_payloads(dump)
        return kept

    def entry(self, ref: NpuTensorRef) -> Tuple[DumpFile, TensorEntry]:
        """The dump file and ``ref``'s entry in it, with the graph's origin shape when the header has none (the
        rule of :meth:`NpuTensorRef.load`)."""
        dump = self.header(ref.path)
        entry = dump.tensor(ref.kind, ref.index)
        if entry.original_shape is None and ref.origin_shape is not None:
            entry = dataclasses.replace(entry, original_shape=tuple(ref.origin_shape))
        return dump, entry

    def load_reference(self, ref) -> np.ndarray:
        """The reference array; the last one is kept, since a consumer's input shares its producer's."""
        key = reference_identity(ref)
        if key != self._reference_key:
            self._reference_key, self._reference_array = None, None  # drop the old array before loading
            array = ref.load() if isinstance(ref, NpyTensorRef) else self.load_npu(ref)[0].array
            self._reference_key, self._reference_array = key, array
            return array
        assert self._reference_array is not None  # set together with the key
        return self._reference_array

    # ------------------------------------------------------------------ reuse
    def same_stored_tensor(self, first: NpuTensorRef, second: NpuTensorRef) -> bool:
        """True when two dumped tensors decode alike and hold the same stored bytes.

        Same dtype, stored format and shape, original shape and origin format, then the payloads compared
        byte for byte. Anything unreadable gives False (the tensor is then compared normally).
        """
        if first.origin_format != second.origin_format:
            return False
        try:
            a_dump, b_dump = self.header(first.path), self.header(second.path)
            a, b = a_dump.tensor(first.kind, first.index), b_dump.tensor(second.kind, second.index)
        except PrecisionToolError:
            return False
        a_original = a.original_shape if a.original_shape is not None else first.origin_shape
        b_original = b.original_shape if b.original_shape is not None else second.origin_shape
        if (a.dtype_code, a.format_code, a.shape, a_original) != (b.dtype_code, b.format_code, b.shape, b_original):
            return False
        nbytes = a.nbytes
        if nbytes is None:
            return False
        try:
            if max(a_dump.file_size, b_dump.file_size) <= WHOLE_FILE_LIMIT:  # both kept whole: one memcmp
                a_payloads, b_payloads = self.payloads(a_dump), self.payloads(b_dump)
                assert a_payloads is not None and b_payloads is not None
                return same_bytes(a_payloads.view(a, nbytes), b_payloads.view(b, nbytes))
            return same_payload((a_dump, a), (b_dump, b), nbytes)
        except PrecisionToolError:
            return False

    # ------------------------------------------------------------------ comparing
    def run(self, task: PairTask) -> Outcome:
        """Compare one pair (or find that it shares its producer's result) and return the row -- an ERROR row when
        a file it read was cut short while mapped, or changed on disk (size, modification time or identity) while
        the pair was compared: what was computed from it is void, a mix of two versions or zeros."""
        if shrunk_while_mapped():  # left by a pair that raised: not this pair's, but the kept maps may hold zeros
            self._forget_kept_files()
        files = files_read(task)
        before = [_identity(path) for path in files]
        outcome = self._compare(task)
        shrunk = shrunk_while_mapped()
        changed = [path for path, identity in zip(files, before) if _identity(path) != identity]
        if not shrunk and not changed:
            return outcome
        self._forget_kept_files()  # read them again, and meet their new sizes
        reason = (f"{shrunk[0]}: file shrank while being compared (cut short by another process?); not compared"
                  if shrunk else f"{changed[0]}: changed on disk while being compared (rewritten by another "
                                 "process?); not compared")
        return TensorResult(**_row_fields(task), status=Status.ERROR, ref_dtype=_dtype_name(task.pair.ref.dtype),
                            address=self._address(task.pair.npu), reason=reason), ""

    def _forget_kept_files(self) -> None:
        self._payloads.clear()
        self._reference_key, self._reference_array = None, None

    def _compare(self, task: PairTask) -> Outcome:
        pair, npu = task.pair, task.pair.npu
        base = _row_fields(task)
        if task.same_as is not None and self.same_stored_tensor(npu, task.same_as):
            return TensorResult(**base, status=Status.ERROR, ref_dtype=_dtype_name(pair.ref.dtype),
                                address=self._address(npu)), task.same_as.tensor_id
        try:
            streamed = self.streamed(pair)
            if streamed is not None:
                comparison, entry, reference_dtype, shape, decoded_note = streamed
            else:
                decoded, entry = self.load_npu(npu)
                reference = self.load_reference(pair.ref)
                comparison = judge_pair(decoded.array, reference, cosine_threshold=self.cosine_threshold,
                                        dtype_labels=(npu.dtype, pair.ref.dtype))
                reference_dtype, shape, decoded_note = reference.dtype, decoded.array.shape, decoded.note
        except PrecisionToolError as error:
            return TensorResult(**base, status=Status.ERROR, ref_dtype=_dtype_name(pair.ref.dtype),
                                address=self._address(npu), reason=str(error)), ""
        notes = tuple(note for note in (decoded_note, pair.note) if note) + comparison.notes
        ref_address = self._address(pair.ref) if isinstance(pair.ref, NpuTensorRef) else ""
        values = tuple(metric.value for metric in comparison.metrics)
        return TensorResult(
            **base, status=comparison.status, reason=comparison.reason, address=str(entry.address),
            ref_dtype=_dtype_name(reference_dtype), ref_address=ref_address,
            shape=tuple(int(d) for d in shape),
            metrics=values, allclose_ratio=comparison.allclose_ratio,
            allclose_min_ratio=DEFAULT_TOLERANCES[comparison.dtype].min_ratio, tolerance_dtype=comparison.dtype,
            notes=notes, matched_non_finite=comparison.matched_non_finite), ""

    def streamed(self, pair: AlignedPair):
        """``(comparison, entry, reference dtype, shape, note)`` for a pair too large to hold (more than
        :data:`STREAM_ABOVE` elements) whose reference is a ``.npy`` file: the NPU tensor is read in pieces in origin
        order (:func:`~precision_tool.formats.origin_tensor.origin_pieces`: by offset in stored order, by slabs from
        a device layout) and the reference :data:`~precision_tool.metrics.pair_stats.CHUNK` elements at a time, so
        memory stays fixed. ``None``: load it whole (smaller tensors, bf16, FRACTAL_Z, NPU references)."""
        npu, ref = pair.npu, pair.ref
        if not isinstance(ref, NpyTensorRef) or not ref.dtype:
            return None
        ref_shape = tuple(ref.shape)
        count = prod(ref_shape)
        if count <= STREAM_ABOVE:  # the listed reference shape decides, before any file is touched
            return None
        dump, entry = self.entry(npu)
        ref_dtype: np.dtype = np.dtype(ref.dtype)
        pieces = origin_pieces(dump, entry, npu.origin_format or None, CHUNK)
        if (pieces is None or prod(pieces.shape) != count or ref_dtype.kind not in "fiub"
                or npy_fortran_order(ref.path)):
            return None  # the whole-tensor path compares it, or says what is wrong

        def chunks():
            return paired_pieces(pieces.pieces(), read_npy_chunks(ref.path, ref_dtype, ref_shape, CHUNK))

        comparison = judge_pair(TensorLayout(pieces.shape, pieces.dtype), TensorLayout(ref_shape, ref_dtype),
                                cosine_threshold=self.cosine_threshold, dtype_labels=(npu.dtype, ref.dtype),
                                chunks=chunks)
        return comparison, entry, ref_dtype, pieces.shape, pieces.note

    def run_all(self, tasks: Sequence[PairTask]) -> List[Outcome]:
        """Every task's outcome, in order; while one pair is compared, the next pair's files are already being
        read into the page cache (:func:`~precision_tool.fileio.prefetch`), so a dump on disk is read while the
        CPU computes."""
        outcomes = []
        asked: set = set()
        for number, task in enumerate(tasks):
            if number + 1 < len(tasks):
                for path in files_read(tasks[number + 1]):
                    if path not in asked:  # an op's inputs and outputs share a file, a consumer its producer's
                        asked.add(path)
                        prefetch(path)
            outcomes.append(self.run(task))
        return outcomes

    def _address(self, ref: NpuTensorRef) -> str:
        try:
            return str(self.header(ref.path).tensor(ref.kind, ref.index).address)
        except PrecisionToolError:
            return ""


def not_compared(task: PairTask, reason: str) -> Outcome:
    """``task``'s outcome when no comparer could run it (its worker was lost): an ERROR row saying why."""
    return TensorResult(**_row_fields(task), status=Status.ERROR, ref_dtype=_dtype_name(task.pair.ref.dtype),
                        reason=reason), ""


def _row_fields(task: PairTask) -> Dict[str, Any]:
    """The fields every row of ``task`` has, whatever the outcome (``TensorResult(**fields, ...)`` costs 20 us less
    than ``dataclasses.replace``)."""
    pair, npu = task.pair, task.pair.npu
    return dict(index=task.index, tensor_id=npu.tensor_id, op_name=npu.op_name, kind=npu.kind, tensor_index=npu.index,
                op_type=npu.op_type, npu_dump=npu.path, npu_dtype=npu.dtype, ground_truth=task.ground_truth,
                reference=pair.ref.tensor_id, rule=pair.rule)


def files_read(task: PairTask) -> Tuple[str, ...]:
    """The files comparing ``task`` reads: the NPU dump, and the producer's dump (a shared input) or else the
    reference."""
    if task.same_as is not None:
        return (task.pair.npu.path, task.same_as.path)
    return (task.pair.npu.path, task.pair.ref.path)


def _identity(path: str) -> Optional[Tuple[int, int, int, int]]:
    """What tells a file's versions apart: device, inode, size and modification time; ``None`` if it does not stat."""
    try:
        info = os.stat(path)
    except (OSError, ValueError):
        return None
    return info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns


def reference_identity(ref) -> tuple:
    """What makes two reference tensors the same: the npy file, or the other run's dump file and tensor."""
    if isinstance(ref, NpyTensorRef):
        return ("npy", ref.path)
    return ("npu", ref.path, ref.kind, ref.index)


def judge_pair(npu, reference, *, cosine_threshold: Optional[float], dtype: Optional[str] = None,
               dtype_labels: Sequence[str] = (), rtol: Optional[float] = None,
               atol: Optional[float] = None, chunks=None) -> TensorComparison:
    """``compare``'s verdict on one NPU/reference pair: the one rule ``compare``, ``ac -c`` and ``cp`` share.

    :func:`~precision_tool.metrics.compare_tensors` with the cosine gate and its honest statuses (NaN/inf,
    shape, count, zero tensors); NaN/inf at identical positions and of identical kinds on both sides are left
    out and the tensor is judged on its finite elements (:attr:`TensorComparison.matched_non_finite`). The
    allclose gate is off (``min_allclose_ratio=0``, see :mod:`precision_tool.comparison.engine`): the ratio is
    reported, not judged -- unless the caller gives ``rtol`` or ``atol`` explicitly (``cp -al/-rl``), which
    asks for that gate with the dtype's minimum ratio.

    ``dtype`` names the tolerance class (``None``: inferred from the arrays); ``dtype_labels`` are the two
    sides' dtype names as stored, and ``"bfloat16"`` among them selects bf16's tolerances (bf16 arrives as
    float32).
    """
    if "bfloat16" in dtype_labels:
        dtype = "bfloat16"
    gate_off = rtol is None and atol is None
    return compare_tensors(npu, reference, dtype=dtype, cosine_threshold=cosine_threshold, rtol=rtol, atol=atol,
                           min_allclose_ratio=0.0 if gate_off else None, chunks=chunks)


@functools.lru_cache(maxsize=64)
def _dtype_name(dtype) -> str:
    """``"float32"`` for ``"<f4"``; NPU labels (``"float16"``, ``"bfloat16"``, ``"DT_STRING"``) unchanged (cached:
    ``np.dtype(...).name`` costs microseconds, three times per pair)."""
    if not dtype:
        return ""
    try:
        return np.dtype(dtype).name
    except TypeError:
        return str(dtype)


# --------------------------------------------------------------------------------------------- pool side
_PROCESS_COMPARER: Optional[PairComparer] = None
_PROCESS_TASKS: Sequence[PairTask] = ()


def init_pool_worker(cosine_threshold: Optional[float], tasks: Sequence[PairTask] = (), *,
                     forked: bool = False) -> None:
    """A worker's set-up (:mod:`~precision_tool.comparison.processes`): process settings, the collector of a
    ``forked`` one, this process's comparer, and every task of the run. A forked worker finds the tasks in the
    memory it inherited (a fork pickles no argument), so only chunk ranges cross its pipe (:func:`run_chunk`)."""
    global _PROCESS_COMPARER, _PROCESS_TASKS
    if forked:
        forked_child()  # a fork may inherit the hold of TensorFlow's background import: back on, inherited frozen
    prepare_worker_process()
    _PROCESS_COMPARER = PairComparer(cosine_threshold)
    _PROCESS_TASKS = tasks


def run_chunk(span: Tuple[int, int]) -> List[Outcome]:
    """A worker's task: compare tasks ``[start, stop)`` of the run, consecutive pairs (so the caches hit)."""
    if _PROCESS_COMPARER is None:  # not a worker: init_pool_worker has not run
        raise RuntimeError("run_chunk runs only in a worker set up by init_pool_worker")
    start, stop = span
    return _PROCESS_COMPARER.run_all(_PROCESS_TASKS[start:stop])


__all__ = ["PairTask", "PairComparer", "Outcome", "judge_pair", "prepare_worker_process", "keep_freed_memory",
           "reference_identity", "init_pool_worker", "run_chunk", "not_compared"]
