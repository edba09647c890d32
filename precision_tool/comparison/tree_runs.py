"""A dump tree compared one step or one device at a time: ``compare --steps all`` / ``--device all``, ``ac -c``.

Each run is one :class:`~precision_tool.formats.dump_tree.DumpSelection` handed to the one compare pipeline and summed
up as a :class:`StepRun`. From those: :func:`first_diverging` (the earliest failing step), :func:`replicas_differ`
(devices whose results differ from the other replicas') and :func:`exit_code_of` (1 when a run fails, else 2 when one
could not be used, else 0). See docs/internals/comparison.md#tree-runs.
"""
from __future__ import annotations

import math
import statistics
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, FrozenSet, List, Mapping, Optional, Sequence, Tuple

from precision_tool.comparison.result import ComparisonResult
from precision_tool.errors import batch_exit_code, EXIT_FAILED_CHECK, EXIT_OK, PrecisionToolError
from precision_tool.formats.dump_tree import Choice, DumpSelection

#: Replicas disagree on a tensor when its cosine is further than this from the replicas' median (cosines of
#: healthy fp16 tensors agree to about 1e-4; an op broken on one device moves them by tenths).
REPLICA_COSINE_TOLERANCE = 1e-3


@dataclass(frozen=True)
class StepRun:
    """One step of one device compared, or why it could not be.

    Attributes
    ----------
    device, step : its place in the tree (``None`` for a folder that is no tree).
    compared : tensors compared.
    failing : the failing tensors (``op:output:0``), the first divergence's first, then in execution order.
    first_divergence : the op that fails on good inputs (:attr:`ComparisonResult.divergence`); when failing
        tensors have no such op, the op of the first failing tensor; when none fails, the judgment's culprit;
        ``""`` when there is neither.
    exit_code : the comparison's (:meth:`ComparisonResult.exit_code`); 2 when it could not run.
    error : one line when it could not run (then nothing else is known).
    folder : where its result files were written (``""``: not written).
    cosines : tensor -> cosine of the compared tensors whose cosine is a number (for :func:`replicas_differ`).
    unreadable : dump files of this step that could not be read (listed in its result).
    """

    device: Optional[int]
    step: Optional[int]
    compared: int = 0
    failing: Tuple[str, ...] = ()
    first_divergence: str = ""
    exit_code: int = EXIT_OK
    error: str = ""
    folder: str = ""
    cosines: Mapping[str, float] = field(default_factory=dict, compare=False, hash=False, repr=False)
    unreadable: int = 0

    @classmethod
    def of(cls, selection: DumpSelection, result: ComparisonResult, folder: str = "") -> "StepRun":
        """The run of ``selection`` that gave ``result``."""
        failing = result.failing_in_order()
        first = result.divergence.first
        cosines = {row.tensor_id or row.op_name: row.cosine for row in result.compared
                   if row.cosine is not None and math.isfinite(row.cosine)}
        coverage = result.facts.coverage
        return cls(selection.device, selection.step, len(result.compared),
                   tuple(row.tensor_id or row.op_name for row in failing),
                   first.op_name if first is not None else (failing[0].op_name if failing else
                                                            result.culprit.op_name if result.culprit else ""),
                   result.exit_code(), folder=folder, cosines=cosines,
                   unreadable=len(coverage.unreadable) if coverage is not None else 0)

    @classmethod
    def failed(cls, selection: DumpSelection, error: PrecisionToolError) -> "StepRun":
        """The run of ``selection`` that ``error`` stopped."""
        return cls(selection.device, selection.step, exit_code=error.exit_code, error=str(error))

    @property
    def diverges(self) -> bool:
        """The step fails the one exit rule: a tensor fails or its judgment names a culprit
        (:func:`~precision_tool.comparison.judgment.exit_code`)."""
        return not self.error and self.exit_code == EXIT_FAILED_CHECK

    def to_dict(self) -> Dict[str, Any]:
        return {"device": self.device, "step": self.step, "compared": self.compared, "failed": len(self.failing),
                "failing": list(self.failing), "first_divergence": self.first_divergence or None,
                "exit_code": self.exit_code, "error": self.error or None, "folder": self.folder or None,
                "unreadable": self.unreadable}


def tree_of(npu_dir: str) -> Choice:
    """What the NPU dump tree at ``npu_dir`` holds (:attr:`Choice.held`; ``()`` for a flat folder), from a scan
    by name (no header read) whose note is not reported."""
    from precision_tool.formats.dump_names import scan_dump_folder

    return scan_dump_folder(npu_dir, DumpSelection()).choice


def compare_each(selections: Sequence[DumpSelection], run_one: Callable[[DumpSelection], StepRun]
                 ) -> List[StepRun]:
    """``run_one(selection)`` for each selection (which its scans are to keep); a run stopped by a
    :class:`PrecisionToolError` is kept as :meth:`StepRun.failed` and the next one goes on.

    Raises the first run's error when every run was stopped (one line, as a single comparison would).
    """
    runs: List[StepRun] = []
    errors: List[PrecisionToolError] = []
    for selection in selections:
        try:
            runs.append(run_one(selection))
        except PrecisionToolError as error:
            errors.append(error)
            runs.append(StepRun.failed(selection, error))
    if errors and len(errors) == len(runs):
        raise errors[0]
    return runs


def first_diverging(runs: Sequence[StepRun]) -> Optional[StepRun]:
    """The diverging run of the earliest step (then the lowest device), or ``None`` when none diverges."""
    diverging = [run for run in runs if run.diverges]
    return min(diverging, key=lambda run: (run.step if run.step is not None else -1,
                                           run.device if run.device is not None else -1), default=None)


def exit_code_of(runs: Sequence[StepRun]) -> int:
    """1 when a run fails, else 2 when one could not be used (or run), else 0."""
    codes = {run.exit_code for run in runs}
    return batch_exit_code(EXIT_FAILED_CHECK in codes, bool(codes - {EXIT_OK}))


def replicas_differ(runs: Sequence[StepRun], tolerance: float = REPLICA_COSINE_TOLERANCE) -> Dict[int, str]:
    """``{device: why}`` for the devices of ``runs`` (one run each, the replicas of one step) whose results
    differ from the others' (see the module docstring); runs that could not be compared are left out, and
    fewer than two replicas never differ.

    >>> same = StepRun(0, 5, 8, cosines={"a": 0.99991})
    >>> odd = StepRun(1, 5, 8, ("a",), "a", 1, cosines={"a": 0.64})
    >>> replicas_differ([same, odd])
    {1: 'fails a where device 0 passes'}
    """
    usable = [run for run in runs if not run.error and run.device is not None]
    if len(usable) < 2:
        return {}
    sets = Counter(frozenset(run.failing) for run in usable)
    consensus = min(sets, key=lambda failing: (-sets[failing], len(failing), sorted(failing)))
    agreeing = [run for run in usable if frozenset(run.failing) == consensus]
    found: Dict[int, str] = {}
    where = "device" + ("s " if len(agreeing) > 1 else " ") + ", ".join(str(run.device) for run in agreeing)
    for run in usable:
        why = _set_difference(run, consensus, where) or _cosine_difference(run, agreeing, tolerance)
        if why and run.device is not None:
            found[run.device] = why
    return found


def _set_difference(run: StepRun, consensus: FrozenSet[str], where: str) -> str:
    """Why ``run`` fails other tensors than ``consensus`` (those of the agreeing devices, ``where``), or ``""``."""
    more = [tensor for tensor in run.failing if tensor not in consensus]
    fewer = sorted(consensus - set(run.failing))
    verbs = ("pass", "fail") if where.startswith("devices") else ("passes", "fails")
    parts = []
    if more:
        parts.append(f"fails {_names(more)} where {where} {verbs[0]}")
    if fewer:
        parts.append(f"passes {_names(fewer)} where {where} {verbs[1]}")
    return "; ".join(parts)


def _cosine_difference(run: StepRun, agreeing: Sequence[StepRun], tolerance: float) -> str:
    """Why a cosine of ``run`` is off the agreeing replicas' median, or ``""``. Of two replicas the median lies
    halfway: both are off by as much, so the line says that which one is off cannot be told (both are flagged)."""
    for tensor, cosine in run.cosines.items():
        values = [other.cosines[tensor] for other in agreeing if tensor in other.cosines]
        if len(values) < 2:
            continue
        median = statistics.median(values)
        if abs(cosine - median) <= tolerance:
            continue
        if len(values) == 2:
            (other,) = [o for o in agreeing if o is not run and tensor in o.cosines] or [run]
            return (f"cosine of {tensor} {cosine:.6g} against device {other.device}'s {other.cosines[tensor]:.6g} "
                    "(two replicas: which one is off cannot be told)")
        return f"cosine of {tensor} {cosine:.6g}, replicas' median {median:.6g}"
    return ""


def _names(tensors: Sequence[str], shown: int = 3) -> str:
    more = f" and {len(tensors) - shown} more" if len(tensors) > shown else ""
    return ", ".join(tensors[:shown]) + more
