"""Overflow records of an NPU run: decode every Opdebug file, order them, and find each one's op.

An overflow run (``action='overflow'``) writes ``Opdebug.Node_OpDebug.{task}.{stream}.{timestamp}`` records beside
the dumps of the ops that overflowed (``ascend-formats.md`` §3). :func:`check_overflow_records` orders them by
timestamp, oldest first (the first overflow leads), decodes each (old and new layouts), locates its op's dump by
task and stream id (:func:`locate_dump`) and summarises the tensors of the first ``limit`` (:mod:`.tensor_summary`).
A record that cannot be decoded is one line in :attr:`OverflowCheck.failures`; one whose op has no dump is kept,
with the reason. The steps: docs/internals/checks.md#overflow_records.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, replace
from typing import Dict, List, Optional, Sequence, Tuple

from precision_tool.checks.tensor_summary import TensorSummary, summarize_dump
from precision_tool.errors import PrecisionToolError
from precision_tool.formats.dump_file import read_dump_header
from precision_tool.formats.dump_names import DumpFileRef, DumpScan, scan_dump_folder
from precision_tool.formats.opdebug import OverflowRecord, describe_status, read_overflow_record


@dataclass(frozen=True)
class OverflowFinding:
    """One decoded overflow record and the op it points at.

    Attributes
    ----------
    position : 1-based place in timestamp order (1 = the first overflow).
    record_path, timestamp : the Opdebug file and the timestamp in its name (microseconds).
    layout : ``"old"`` or ``"new"``.
    unit : the reporting unit (``"AI Core"``, ``"L2 Atomic Add"``, ``"AIC"``, ...).
    task_id, stream_id : the reporting unit's ids; ``context_id``/``thread_id`` when the record sets them.
    status : the reporting unit's status words.
    status_lines : every status set in the record, in words (:func:`describe_status`).
    dump_path : the located dump file, ``""`` when none matches (``problem`` says so).
    op_type, op_name : from the dump (raw op name from its header, else the file name); ``""`` without a dump.
    tensors : input then output statistics; empty when not summarised (beyond the limit, or no dump).
    candidates : how many dump files carried the ids (more than one: ``dump_path`` is the one chosen).
    problem : one line when the op could not be located or read.
    """

    position: int
    record_path: str
    timestamp: int
    layout: str
    unit: str
    task_id: int
    stream_id: int
    status: Tuple[int, ...]
    status_lines: Tuple[str, ...]
    context_id: Optional[int] = None
    thread_id: Optional[int] = None
    dump_path: str = ""
    op_type: str = ""
    op_name: str = ""
    tensors: Tuple[TensorSummary, ...] = ()
    candidates: int = 0
    problem: str = ""

    @property
    def located(self) -> bool:
        return bool(self.dump_path)

    @property
    def status_text(self) -> str:
        """``0x100`` (words joined by ``,`` for four-word statuses)."""
        return ",".join(f"0x{word:x}" for word in self.status)

    def to_dict(self) -> dict:
        return {"position": self.position, "record": self.record_path, "timestamp": self.timestamp,
                "layout": self.layout, "unit": self.unit, "task_id": self.task_id, "stream_id": self.stream_id,
                "context_id": self.context_id, "thread_id": self.thread_id, "status": list(self.status),
                "status_lines": list(self.status_lines), "dump": self.dump_path or None, "op_type": self.op_type,
                "op_name": self.op_name, "candidates": self.candidates, "problem": self.problem or None,
                "tensors": [tensor.to_dict() for tensor in self.tensors]}


@dataclass(frozen=True)
class OverflowCheck:
    """Every overflow record of one folder.

    ``findings`` are in timestamp order; the first ``limit`` carry tensor statistics (``shown``).
    ``failures`` holds one line per record that could not be decoded. ``folder_exists`` is False when
    there is no overflow run at all. ``not_read``: why the run's records were not read at all (it lacks the step
    or device asked for, of several): no record is known, which is not "nothing overflowed".
    """

    folder: str
    folder_exists: bool
    findings: Tuple[OverflowFinding, ...] = ()
    failures: Tuple[str, ...] = ()
    limit: Optional[int] = None
    not_read: str = ""

    @property
    def records(self) -> int:
        """Records found, decodable or not."""
        return len(self.findings) + len(self.failures)

    @property
    def overflowed(self) -> bool:
        return any(finding.status_lines for finding in self.findings)

    @property
    def first(self) -> Optional[OverflowFinding]:
        """The first record whose status says something overflowed."""
        return next((finding for finding in self.findings if finding.status_lines), None)

    @property
    def shown(self) -> Tuple[OverflowFinding, ...]:
        return self.findings if not self.limit else self.findings[: self.limit]

    def to_dict(self) -> dict:
        return {"folder": self.folder, "folder_exists": self.folder_exists, "records": self.records,
                "limit": self.limit, "findings": [finding.to_dict() for finding in self.findings],
                "failures": list(self.failures), **({"not_read": self.not_read} if self.not_read else {})}


def _dump_index(scan: DumpScan) -> Dict[Tuple[int, int], List[DumpFileRef]]:
    index: Dict[Tuple[int, int], List[DumpFileRef]] = {}
    for op in scan.ops:
        for ref in (op.latest, *op.superseded):
            index.setdefault((ref.name.task_id, ref.name.stream_id), []).append(ref)
    return index


def locate_dump(candidates: Sequence[DumpFileRef], record: DumpFileRef, context_id: Optional[int] = None,
                thread_id: Optional[int] = None) -> Optional[DumpFileRef]:
    """The dump file of the op that raised ``record``, among files with its task and stream ids.

    Files whose name sets a context/thread id different from the record's are left out (only when the record
    sets them). Then files in the record's own folder (its dump step) come first, and among those the latest
    dump written at or before the record (the op runs, then its overflow is recorded); if every candidate is
    later than the record, the earliest. msaccucmp takes the earliest file of the record's folder, which is
    the same file whenever a step folder holds one execution of the op.
    """
    usable = [ref for ref in candidates
              if not (context_id is not None and ref.name.context_id not in (None, context_id))
              and not (thread_id is not None and ref.name.thread_id not in (None, thread_id))]
    if not usable:
        return None
    folder = os.path.dirname(record.path)
    same_folder = [ref for ref in usable if os.path.dirname(ref.path) == folder]
    pool = same_folder or usable
    before = [ref for ref in pool if ref.name.timestamp <= record.name.timestamp]
    if before:
        return max(before, key=lambda ref: (ref.name.timestamp, ref.path))
    return min(pool, key=lambda ref: (ref.name.timestamp, ref.path))


def _decode(ref: DumpFileRef, position: int, index) -> OverflowFinding:
    record: OverflowRecord = read_overflow_record(ref.path)
    unit = record.reporting_unit
    lines = tuple(describe_status(record))
    base = OverflowFinding(position=position, record_path=ref.path, timestamp=ref.name.timestamp,
                           layout=record.layout, unit=unit.unit, task_id=unit.task_id, stream_id=unit.stream_id,
                           status=tuple(unit.status), status_lines=lines, context_id=unit.context_id,
                           thread_id=unit.thread_id)
    candidates = index.get((unit.task_id, unit.stream_id), [])
    chosen = locate_dump(candidates, ref, unit.context_id, unit.thread_id)
    if chosen is None:
        problem = (f"no dump file with task id {unit.task_id} and stream id {unit.stream_id} "
                   f"under {os.path.dirname(ref.path)}")
        if not lines:
            problem = "the record sets no status; " + problem
        return replace(base, problem=problem)
    located = replace(base, dump_path=chosen.path, op_type=chosen.name.op_type,
                      op_name=chosen.name.op_name, candidates=len(candidates))
    try:
        header = read_dump_header(chosen.path)
    except PrecisionToolError as error:
        return replace(located, problem=f"its dump cannot be read: {error}")
    return replace(located, op_name=header.op_name or located.op_name)


def _with_tensors(finding: OverflowFinding) -> OverflowFinding:
    try:
        dump = read_dump_header(finding.dump_path)
    except PrecisionToolError as error:
        return replace(finding, problem=f"its dump cannot be read: {error}")
    return replace(finding, tensors=summarize_dump(dump))


def check_overflow_records(folder: str, limit: Optional[int] = None, *, scan: Optional[DumpScan] = None,
                           tensor_stats: bool = True) -> OverflowCheck:
    """Decode, order and locate every Opdebug record under ``folder`` (docs/internals/checks.md#overflow_records).

    Parameters
    ----------
    folder : the overflow run's dump folder (``WORKSPACE/overflow/dump``), searched recursively. A missing
        folder is not an error: the result says ``folder_exists=False``.
    limit : summarise the tensors of the first ``limit`` records only (``None`` or 0: all). Every record is
        still decoded and located.
    scan : an existing scan of ``folder`` (saves a second walk).
    tensor_stats : False skips the tensor statistics altogether.
    """
    folder = os.fspath(folder)
    if not os.path.isdir(folder):
        return OverflowCheck(folder, False, limit=limit)
    scan = scan or scan_dump_folder(folder)
    index = _dump_index(scan)
    findings: List[OverflowFinding] = []
    failures: List[str] = []
    for ref in scan.overflow_records:
        try:
            findings.append(_decode(ref, len(findings) + 1, index))
        except PrecisionToolError as error:
            failures.append(str(error))
    if tensor_stats:
        count = len(findings) if not limit else min(limit, len(findings))
        findings[:count] = [_with_tensors(f) if f.located and not f.problem else f for f in findings[:count]]
    return OverflowCheck(folder, True, tuple(findings), tuple(failures), limit)


