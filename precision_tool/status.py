"""The one verdict vocabulary: what became of one NPU tensor (or one op) in a comparison.

Every layer speaks it -- the comparator, the judgment of a run, the CSV, ``summary.json``, the lossless result file,
``vcs``, ``ni``, JUnit and the HTML page write and read the same words. A :class:`Status` is a ``str``, so
``Status.PASS == "PASS"`` and JSON keeps the word; each has ``passed``, ``failed``, ``compared`` and a coarse
:attr:`~Status.verdict` (``pass``, ``fail``, ``error``, ``not_compared``), which ``ni`` and the HTML table show. What
each status means: docs/compare.md#verdict-per-tensor; which layer makes it, and which are compared:
docs/internals/package.md#status.
"""
from __future__ import annotations

from enum import Enum


class Status(str, Enum):
    """The verdict on one tensor (the statuses: docs/internals/package.md#status).

    >>> Status.NAN_INF.passed, Status.NAN_INF.failed, Status.NAN_INF.verdict
    (False, True, 'fail')
    >>> Status.ERROR.compared, Status.ERROR.failed, Status.NO_DUMP.failed
    (False, True, False)
    >>> Status("BOTH_ZERO").verdict, f"{Status.PASS}"
    ('pass', 'PASS')
    """

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
