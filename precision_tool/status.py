"""The one verdict vocabulary: what became of one NPU tensor (or one op) in a comparison.

Every layer speaks it: :func:`~precision_tool.metrics.compare_tensors` returns the first eight of the *compared*
statuses, the judgment of a run (:mod:`precision_tool.comparison.judgment`) adds ``BELOW_NOISE``, the
comparison engine adds the last three (why nothing was compared), and the CSV,
``summary.json``, the lossless result file, ``vcs``, ``ni``, JUnit and the HTML page all write and read the
same words. A :class:`Status` is a ``str``, so ``Status.PASS == "PASS"`` and JSON keeps the word.

=================  =====  =========  ====================================================================
status             pass?  compared?  meaning
=================  =====  =========  ====================================================================
``PASS``           yes    yes        cosine at or above the threshold (or the gate is off)
``FAIL``           no     yes        cosine below the threshold
``SHAPE_MISMATCH`` no     yes        same element count, different shapes: metrics on the flat data
``COUNT_MISMATCH`` no     yes        element counts differ: nothing computed
``NAN_INF``        no     yes        NaN/inf that differ between the sides (on one side only, at other
                                     positions, or of another kind): metrics over the pairs finite on both
``BOTH_ZERO``      yes    yes        both sides all zero: identical
``ONE_SIDE_ZERO``  no     yes        one side all zero, the other not
``EMPTY``          yes    yes        nothing to measure: no elements on either side, or every element NaN/inf
                                     matching the reference's
``BELOW_NOISE``    yes    yes        the reference is below the rounding noise of the computation that made it
                                     (a sum that cancels: a bias gradient before a training batch norm), and
                                     the NPU's absolute error is within that noise; or computed from such a
                                     tensor by an op that adds no error of its own (docs/local-error.md)
``ERROR``          no     no         aligned but unreadable (payload, layout): counts as failed, since
                                     nothing shows it is right, but no metric exists
``NOT_COMPARED``   --     no         the NPU tensor has no reference: coverage, not a failure
``NO_DUMP``        --     no         an op that runs as a task has no dump file: coverage, not a failure
=================  =====  =========  ====================================================================

NaN/inf at identical positions with identical kinds on both sides (NaN/NaN, +inf/+inf, -inf/-inf: the
reference computes them too) are no status of their own: they are left out, the tensor gets the status its
finite elements earn (``PASS``, ``FAIL``, ``BOTH_ZERO``, ...; ``EMPTY`` when none is finite), and the row is
classified *matching non-finite* by its count
(:attr:`~precision_tool.comparison.result.TensorResult.matched_non_finite`) and a note.

Each status also has a :attr:`~Status.verdict`, the coarse word ``ni`` and the HTML table show: ``pass``,
``fail``, ``error`` or ``not_compared``.

>>> Status.NAN_INF.passed, Status.NAN_INF.failed, Status.NAN_INF.verdict
(False, True, 'fail')
>>> Status.ERROR.compared, Status.ERROR.failed, Status.NO_DUMP.failed
(False, True, False)
>>> Status("BOTH_ZERO").verdict, f"{Status.PASS}"
('pass', 'PASS')
"""
from __future__ import annotations

from enum import Enum


class Status(str, Enum):
    """The verdict on one tensor (see the module docstring for the table)."""

    PASS = "PASS"
    FAIL = "FAIL"
    SHAPE_MISMATCH = "SHAPE_MISMATCH"
    COUNT_MISMATCH = "COUNT_MISMATCH"
    NAN_INF = "NAN_INF"
    BOTH_ZERO = "BOTH_ZERO"
    ONE_SIDE_ZERO = "ONE_SIDE_ZERO"
    EMPTY = "EMPTY"
    BELOW_NOISE = "BELOW_NOISE"
    ERROR = "ERROR"
    NOT_COMPARED = "NOT_COMPARED"
    NO_DUMP = "NO_DUMP"

    @property
    def compared(self) -> bool:
        """True when the metrics ran (the first nine statuses)."""
        return self not in _UNCOMPARED

    @property
    def passed(self) -> bool:
        """True for ``PASS``, ``BOTH_ZERO``, ``EMPTY`` and ``BELOW_NOISE``: nothing disagrees beyond rounding."""
        return self in _PASSING

    @property
    def failed(self) -> bool:
        """Compared and not passed, or ``ERROR``: what makes a run exit 1."""
        return (self.compared and not self.passed) or self is Status.ERROR

    @property
    def cosine_gated(self) -> bool:
        """``PASS`` or ``FAIL``: decided by the cosine gate alone, so another threshold may change it."""
        return self in (Status.PASS, Status.FAIL)

    @property
    def verdict(self) -> str:
        """``pass``, ``fail``, ``error`` or ``not_compared``."""
        if self is Status.ERROR:
            return "error"
        if not self.compared:
            return "not_compared"
        return "pass" if self.passed else "fail"

    def __str__(self) -> str:
        return self.value

    def __format__(self, spec: str) -> str:
        return format(self.value, spec)


_PASSING = frozenset({Status.PASS, Status.BOTH_ZERO, Status.EMPTY, Status.BELOW_NOISE})
_UNCOMPARED = frozenset({Status.ERROR, Status.NOT_COMPARED, Status.NO_DUMP})
#: Statuses of tensors the metrics ran on, in declaration order.
COMPARED_STATUSES = tuple(status for status in Status if status.compared)
