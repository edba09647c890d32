"""Overflow without Opdebug records: scan a run's dumps for inf/NaN and fp16 saturation.

Each dumped op, in execution order (dump time), has its float outputs read one tensor at a time
(:mod:`.tensor_summary`) and counted for inf, NaN and, for float16, elements clamped at +/-65504; for an op with such
an output its inputs are read too, to tell whether it **introduced** the values or **inherited** them from an input.
:attr:`DumpScanCheck.first_introduced` is where the non-finite values first appear; its output's first bad element
is given as an index in the origin layout. The inheritance rule: docs/internals/checks.md#nonfinite.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import List, Optional, Tuple

from precision_tool.checks.tensor_summary import TensorSummary, summarize_entry
from precision_tool.errors import PrecisionToolError
from precision_tool.formats.dump_file import read_dump_header
from precision_tool.formats.dump_names import DumpScan, scan_dump_folder

INTRODUCED, INHERITED, UNKNOWN = "introduced", "inherited", "unknown"


@dataclass(frozen=True)
class NonFiniteOp:
    """A dumped op with at least one output holding inf/NaN or fp16-saturated values.

    ``origin`` is :data:`INTRODUCED` (every input clean), :data:`INHERITED` (``bad_inputs`` lists the input
    indices already holding such values) or :data:`UNKNOWN` (an input could not be read).
    """

    position: int
    op_name: str
    op_type: str
    path: str
    outputs: Tuple[TensorSummary, ...]
    origin: str
    bad_inputs: Tuple[int, ...] = ()

    @property
    def worst(self) -> TensorSummary:
        """The output with the most non-finite (then saturated) elements."""
        return max(self.outputs, key=lambda t: (t.non_finite, t.saturated))

    def to_dict(self) -> dict:
        return {"position": self.position, "op_name": self.op_name, "op_type": self.op_type, "path": self.path,
                "origin": self.origin, "bad_inputs": list(self.bad_inputs),
                "outputs": [tensor.to_dict() for tensor in self.outputs]}


@dataclass(frozen=True)
class DumpScanCheck:
    """Result of :func:`scan_dumps_for_overflow`. ``ops_scanned`` counts dumped ops; ``unreadable`` has one
    line per file or tensor that could not be read."""

    folder: str
    ops_scanned: int
    ops: Tuple[NonFiniteOp, ...] = ()
    unreadable: Tuple[str, ...] = ()

    @property
    def first_introduced(self) -> Optional[NonFiniteOp]:
        """The first op (execution order) that introduces inf/NaN or saturation; else the first listed."""
        return next((op for op in self.ops if op.origin == INTRODUCED), self.ops[0] if self.ops else None)

    def to_dict(self) -> dict:
        first = self.first_introduced
        return {"folder": self.folder, "ops_scanned": self.ops_scanned, "ops": [op.to_dict() for op in self.ops],
                "first_introduced": None if first is None else first.op_name, "unreadable": list(self.unreadable)}


def _bad(summary: TensorSummary) -> bool:
    return summary.non_finite > 0 or summary.saturated > 0


def _explains_non_finite(summary: TensorSummary) -> bool:
    return summary.non_finite > 0


def _is_float(entry) -> bool:
    dtype = entry.numpy_dtype
    return dtype is not None and dtype.kind == "f"


def scan_dumps_for_overflow(folder: str, scan: Optional[DumpScan] = None) -> DumpScanCheck:
    """Scan every op under ``folder`` (latest dump of each, by dump time) as docs/internals/checks.md#nonfinite says.

    Raises :class:`~precision_tool.errors.WorkspaceError` when ``folder`` does not exist; unreadable files
    are listed, not raised.
    """
    folder = os.fspath(folder)
    scan = scan or scan_dump_folder(folder)
    found: List[NonFiniteOp] = []
    unreadable: List[str] = [message for _, message in scan.unresolved]
    for position, op in enumerate(scan.ops, start=1):
        try:
            dump = read_dump_header(op.latest.path)
        except PrecisionToolError as error:
            unreadable.append(str(error))
            continue
        bad_outputs = []
        for entry in dump.outputs:
            if not _is_float(entry):
                continue
            summary = summarize_entry(dump, entry)
            if not summary.readable:
                unreadable.append(f"{op.latest.path}: {entry.label}: {summary.note}")
            elif _bad(summary):
                bad_outputs.append(summary)
        if not bad_outputs:
            continue
        bad_inputs, origin = [], INTRODUCED
        explains = _explains_non_finite if any(t.non_finite for t in bad_outputs) else _bad
        for entry in dump.inputs:
            if not _is_float(entry):
                continue
            summary = summarize_entry(dump, entry, origin_layout=False)
            if not summary.readable:
                origin = UNKNOWN
            elif explains(summary):
                bad_inputs.append(entry.index)
        if bad_inputs:
            origin = INHERITED
        found.append(NonFiniteOp(position, dump.op_name or op.op_name, op.op_type, op.latest.path,
                                 tuple(bad_outputs), origin, tuple(bad_inputs)))
    return DumpScanCheck(folder, len(scan.ops), tuple(found), tuple(unreadable))
