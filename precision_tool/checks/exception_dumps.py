"""Exception dumps found in a run: the tensors of an op that raised an AI Core error, one entry per file.

With ``enable_exception_dump`` CANN writes the inputs (and outputs, workspace, tiling data) of the failing task to
``{root}/extra-info/data-dump/{device_id}/`` (``ascend-dump-trees.md`` §3): Lite files
``exception_info.{stream}.{task}.{timestamp}`` whose tensors are raw bytes (``DT_UNDEFINED``), or mode-1 files named
like an op dump without the stream id. They are not overflow records and not ops to compare:
:func:`describe_exception_dumps` lists them -- stream, task, time, path, and from each header alone how many tensors
and bytes it holds. A header that cannot be read is kept as an entry whose ``problem`` says why.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Iterable, List, Tuple

from precision_tool.errors import PrecisionToolError
from precision_tool.formats.dump_file import read_dump_header
from precision_tool.formats.dump_names import DumpScan, ExceptionDumpName, ExceptionDumpRef, exception_dump_order

@dataclass(frozen=True)
class ExceptionDumpInfo:
    """One exception dump.

    Attributes
    ----------
    path, name : the file and its parsed name (stream id, task id, timestamp; op for mode-1 names).
    header_read : False when the header was not asked for (``read_headers=False``) or could not be read.
    op_name : the header's op name (Lite dumps leave it empty), else the mode-1 name's; ``""`` when unknown.
    inputs, outputs : tensor counts from the header.
    payload_bytes : bytes of every tensor, buffer and workspace the header lists.
    problem : one line (cause, without the path) when the header could not be read.
    """

    path: str
    name: ExceptionDumpName
    header_read: bool = False
    op_name: str = ""
    inputs: int = 0
    outputs: int = 0
    payload_bytes: int = 0
    problem: str = ""

    @property
    def tensors_text(self) -> str:
        """``1 input, 0 outputs (32 bytes)``; ``unreadable: cause``; ``-`` when the header was not read."""
        if self.problem:
            return f"unreadable: {self.problem}"
        if not self.header_read:
            return "-"
        inputs = f"{self.inputs} input{'s' if self.inputs != 1 else ''}"
        outputs = f"{self.outputs} output{'s' if self.outputs != 1 else ''}"
        return f"{inputs}, {outputs} ({self.payload_bytes} bytes)"

    def to_dict(self) -> dict:
        return {"path": self.path, **self.name.to_dict(), "op_name": self.op_name or self.name.op_name or None,
                "inputs": self.inputs if self.header_read else None,
                "outputs": self.outputs if self.header_read else None,
                "payload_bytes": self.payload_bytes if self.header_read else None, "problem": self.problem or None}


def describe_exception_dumps(refs: Iterable[ExceptionDumpRef], read_headers: bool = True) \
        -> Tuple[ExceptionDumpInfo, ...]:
    """One :class:`ExceptionDumpInfo` per ref, in the order given (a scan gives them oldest first).

    With ``read_headers`` each file's header -- not its payloads -- is read for the counts; an unreadable one
    gets ``problem`` instead.
    """
    infos: List[ExceptionDumpInfo] = []
    for ref in refs:
        info = ExceptionDumpInfo(ref.path, ref.name, op_name=ref.name.op_name)
        if read_headers:
            try:
                dump = read_dump_header(ref.path)
            except PrecisionToolError as error:
                cause = getattr(error, "cause", None) or str(error)
                info = ExceptionDumpInfo(ref.path, ref.name, op_name=ref.name.op_name, problem=cause)
            else:
                info = ExceptionDumpInfo(ref.path, ref.name, True, dump.op_name or ref.name.op_name,
                                         len(dump.inputs), len(dump.outputs), dump.payload_bytes)
        infos.append(info)
    return tuple(infos)


def exception_refs(*scans) -> Tuple[ExceptionDumpRef, ...]:
    """The exception dumps of every scan given (``None`` skipped), each file once (by real path), oldest first
    (:func:`~precision_tool.formats.dump_names.exception_dump_order`)."""
    seen = set()
    refs = []
    for scan in scans:
        if not isinstance(scan, DumpScan):
            continue
        for ref in scan.exception_dumps:
            key = os.path.realpath(ref.path)
            if key not in seen:
                seen.add(key)
                refs.append(ref)
    return tuple(sorted(refs, key=exception_dump_order))
