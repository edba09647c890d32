"""Typed errors: user mistakes and bad input print one line; bugs keep their traceback.

Every error a user can cause (bad file, missing folder, wrong flag) is a :class:`PrecisionToolError`: ``cli.main``
and the shell print ``str(error)`` -- one line saying which file, what is wrong and, where useful, what to do -- and
carry on or exit with :attr:`PrecisionToolError.exit_code`. Anything else that escapes is a bug in precision_tool,
shown with its traceback on purpose (the split Polygraphy makes between ``PolygraphyException`` and
``PolygraphyInternalException``). Exit codes follow the comparator's contract for CI: 0 all good, 1 a tensor failed
a threshold, 2 unusable input (this module's errors); a batch with both exits 1, naming those inputs
(:func:`batch_exit_code`, the rule every command applies).
"""
from __future__ import annotations

import os
from typing import Iterable

EXIT_OK = 0
EXIT_FAILED_CHECK = 1
EXIT_UNUSABLE_INPUT = 2
EXIT_INTERRUPTED = 130  # Ctrl-C, as a shell reports a process ended by SIGINT
_EXIT_RANK = {EXIT_OK: 0, EXIT_UNUSABLE_INPUT: 1, EXIT_FAILED_CHECK: 2}


def batch_exit_code(found: bool, unusable: bool) -> int:
    """The one exit rule of a batch of inputs (files, tensors, records, steps), for every command.

    ======  ==================================================================================================
    ``1``   something was found (a failing tensor, an overflow, a culprit) -- whether or not some inputs could not
            be used: the finding is real, and the report names those inputs too
    ``2``   nothing was found, but an input could not be used (or nothing was there to check): a finding may hide
            in what was not read. A command that finds nothing by design (``dc``, ``tf_dump``) exits 2 on any
            failure, the other files written
    ``0``   nothing found, every input used
    ======  ==================================================================================================

    >>> batch_exit_code(True, True), batch_exit_code(False, True), batch_exit_code(False, False)
    (1, 2, 0)
    """
    if found:
        return EXIT_FAILED_CHECK
    return EXIT_UNUSABLE_INPUT if unusable else EXIT_OK


def worst_exit_code(codes: Iterable[int]) -> int:
    """The exit code of several commands run as one job (lines piped into the shell): any other code first (an
    interrupted command, 130), then 1 -- a check failed, which wins over 2 as it does within one comparison
    (:func:`~precision_tool.comparison.judgment.exit_code`) -- then 2, then 0 (also for no command at all).

    >>> worst_exit_code([0, 2, 1, 0]), worst_exit_code([2, 0]), worst_exit_code([1, 130]), worst_exit_code([])
    (1, 2, 130, 0)
    """
    return max(codes, key=lambda code: _EXIT_RANK.get(code, len(_EXIT_RANK)), default=EXIT_OK)


class PrecisionToolError(Exception):
    """Base of every user-facing error. ``str()`` is one line, ready to print."""

    exit_code = EXIT_UNUSABLE_INPUT

    def __init__(self, message: str, hint: str | None = None):
        one_line = " ".join(str(message).split())
        if hint:
            one_line = f"{one_line} ({' '.join(hint.split())})"
        super().__init__(one_line)


class FileFormatError(PrecisionToolError):
    """A file exists but cannot be read as the format it should be in.

    The message always starts with the file's path, then the cause.
    """

    format_name = "file"

    def __init__(self, path, cause: str, hint: str | None = None):
        self.path = os.fspath(path) if path is not None else "<memory>"
        self.cause = cause
        super().__init__(f"{self.path}: {cause}", hint)


class DumpFormatError(FileFormatError):
    """An Ascend op dump file (or Opdebug record) that is truncated, lies about sizes, or is not a dump."""

    format_name = "Ascend dump"


class NanoDumpError(DumpFormatError):
    """The file is an Ascend 'nano' (TLV) dump, a different format this reader does not decode."""


class OverflowRecordError(DumpFormatError):
    """An Opdebug overflow record whose status bytes are neither the old nor the new layout."""


class LayoutError(PrecisionToolError):
    """A tensor cannot be converted between a device layout and its origin layout (shapes disagree)."""


class GraphFormatError(FileFormatError):
    """A GE graph dump (protobuf text or JSON) that cannot be parsed."""

    format_name = "GE graph"


class FusionFormatError(FileFormatError):
    """A fusion_result.json or fusion switch file that cannot be read."""

    format_name = "fusion artifact"


class ReferenceFormatError(FileFormatError):
    """A TensorFlow reference artifact (tfdbg dump, npy file) that cannot be read."""

    format_name = "reference"


class ResultCsvError(FileFormatError):
    """A compare result CSV (ours or msaccucmp's) that cannot be read, or whose header is not a result's."""

    format_name = "result CSV"


class ResultFileError(FileFormatError):
    """A lossless result file (``result_*.jsonl``, written beside the result CSV) or a run's ``summary.json``
    that cannot be read."""

    format_name = "result file"


class WorkspaceError(PrecisionToolError):
    """A folder or file the command needs is missing, or an output would go into an input folder."""


class WorkerError(PrecisionToolError):
    """A worker process of the comparison died (killed by the system -- out of memory -- or by a signal): the run
    cannot finish, and nothing is written."""


class UsageError(PrecisionToolError):
    """A command line that does not parse: unknown command, bad flag, bad value."""


class UnknownMetricError(PrecisionToolError, KeyError):
    """A metric name or alias that the metrics registry does not know.

    Also a :class:`KeyError`, so ``except KeyError`` around a lookup keeps working.
    """

    def __init__(self, name, known):
        self.name = name
        self.known = tuple(known)
        super().__init__(f"unknown metric {name!r}", f"known metrics: {', '.join(self.known)}")

    def __str__(self) -> str:  # KeyError would otherwise quote the message
        return Exception.__str__(self)


class MetricInputError(PrecisionToolError, ValueError):
    """Arrays that a metric cannot take: not 1-D, different lengths, or not real numbers."""


class CaptureError(PrecisionToolError):
    """A capture helper cannot do what was asked: unknown action, conflicting actions, a missing
    Ascend module (``npu_bridge``, ``npu_device``) or a session it cannot wrap."""
