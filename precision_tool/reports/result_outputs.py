"""Where a compare run's outputs go, and writing them: the same files for ``compare``, ``vc`` and ``ac -c``.

With ``-out OUT`` a run writes ``OUT/result_{YYYYmmddHHMMSS}.csv``; without, ``ROOT/{ts}/result_{ts}.csv`` (``ROOT`` =
``WORKSPACE/temp/vector_compare``). Names are unique per run (a taken name becomes ``result_{ts}_{n}.csv``, the folder
``{ts}_{n}``), taken atomically, so two runs never overwrite each other. Every file is written atomically, in the
order ``result_{ts}.jsonl``, the CSV, the JUnit XML, ``summary.json``: a killed run never leaves a summary naming a
missing CSV. Output folders are checked against every input first (:func:`~precision_tool.config.ensure_output_dir`).
See docs/compare.md#atomic-outputs, and docs/internals/reports.md#result_outputs for how a name is taken.
"""
from __future__ import annotations

import os
import re
import time
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Sequence, Tuple

from precision_tool.comparison import ComparisonResult
from precision_tool.config import Workspace, ensure_output_dir, ensure_output_file
from precision_tool.errors import WorkspaceError
from precision_tool.fileio import TEMP_PREFIX, temp_path_beside, write_text_atomic

RESULT_FOLDER = "vector_compare"
_STALE_TEMP = re.compile(re.escape(TEMP_PREFIX) + r"([0-9]{1,10})-[0-9a-f]+\.tmp")
_RUN_FOLDER = re.compile(r"[0-9]{14}(?:_[0-9]+)?")
#: What a result name's placeholder holds until the complete lossless file replaces it: the claiming PID, so
#: that a placeholder left by a killed run is removed like its temporary files.
_CLAIM = "precision_tool result name claimed by pid {pid}\n"
_CLAIM_PATTERN = re.compile(r"precision_tool result name claimed by pid ([0-9]{1,10})\n")
_PLACEHOLDER_NAME = re.compile(r"result_[0-9]{14}(?:_[0-9]+)?\.jsonl")


@dataclass(frozen=True)
class OutputPaths:
    """The files one run writes; ``junit`` is ``None`` unless asked for. ``cleaned``: what runs killed while writing
    had left in the folders written to, removed when the names were taken (:func:`remove_stale_temp_files`)."""

    folder: str
    csv: str
    results: str
    summary: str
    junit: Optional[str] = None
    cleaned: Tuple[str, ...] = ()

    def cleaned_line(self) -> str:
        """One line saying what was removed, or ``""``."""
        if not self.cleaned:
            return ""
        names = ", ".join(os.path.basename(path) for path in self.cleaned[:3])
        more = f" and {len(self.cleaned) - 3} more" if len(self.cleaned) > 3 else ""
        return (f"Removed {len(self.cleaned)} file(s) that runs killed while writing had left "
                f"({names}{more}).")


def timestamp() -> str:
    return time.strftime("%Y%m%d%H%M%S")


def workspace_result_folder(data_dir: str) -> str:
    """``WORKSPACE/temp/vector_compare``, where ``compare``/``vc``/``ac -c`` write by default and ``vcs`` looks."""
    return os.path.join(Workspace(data_dir).temp, RESULT_FOLDER)


def require_result_folder(data_dir: str) -> str:
    """:func:`workspace_result_folder`, which must exist: else :class:`WorkspaceError` naming what is missing -- the
    workspace itself (``-d`` a wrong folder), or its results (no comparison run yet) -- with what to do."""
    Workspace(data_dir).require_root()
    folder = workspace_result_folder(data_dir)
    if not os.path.isdir(folder):
        raise WorkspaceError(f"no compare result in {data_dir} yet ({folder} is missing)",
                             f"run 'precision_tool -d {data_dir} ac -c' or 'compare' first, or give -f RESULT")
    return folder


def check_outputs(out_dir: Optional[str], default_root: str, inputs: Sequence[str],
                  junit: Optional[str] = None, folders: Sequence[str] = ()) -> None:
    """Refuse output folders inside an input -- the ``inputs`` and the input ``folders`` (a workspace's
    :attr:`~precision_tool.config.Workspace.input_folders`) -- and create them, before a long comparison: what
    :func:`plan_outputs` checks again when it takes the names. Refuse too, before it, a folder this process cannot
    write into (read-only: its permissions, or a read-only file system) and a ``junit`` path that is a folder.
    Raises :class:`WorkspaceError` naming the output given."""
    out = out_dir or default_root
    _check_writable(ensure_output_dir(out, *inputs, folders=folders), out)
    if junit:
        _check_writable(os.path.dirname(_junit_file(junit, inputs, folders)), junit)


def _junit_file(junit: str, inputs: Sequence[str], folders: Sequence[str]) -> str:
    """The ``--junit`` file checked (not an input, not inside one, not a folder), its folder created."""
    path = ensure_output_file(junit, *inputs, folders=folders)
    if os.path.isdir(path):
        raise WorkspaceError(f"{junit}: is a folder", "--junit takes the path of the XML file to write")
    return os.path.abspath(path)


def _check_writable(folder: str, given: str) -> None:
    if not os.access(folder, os.W_OK | os.X_OK):
        raise WorkspaceError(f"{given}: cannot write into {folder} (read-only)", "choose another output folder")


def plan_outputs(out_dir: Optional[str], default_root: str, inputs: Sequence[str],
                 junit: Optional[str] = None, folders: Sequence[str] = ()) -> OutputPaths:
    """Take this run's names (docs/internals/reports.md#result_outputs) and remove stale
    temporary files from the folders written to. Checks no output lies inside an input (as
    :func:`check_outputs`).

    Call it when the result is ready to be written: the name stays taken (an empty ``result_*.jsonl``)
    until :func:`write_outputs` replaces it. Raises :class:`WorkspaceError`.
    """
    from precision_tool.reports.result_store import results_path_for
    from precision_tool.reports.summary import SUMMARY_NAME

    stamp = timestamp()
    cleaned: List[str] = []
    if out_dir:
        folder = ensure_output_dir(out_dir, *inputs, folders=folders)
        cleaned += remove_stale_temp_files(folder)
    else:
        root = ensure_output_dir(default_root, *inputs, folders=folders)
        for old_run in _run_folders(root):
            cleaned += remove_stale_temp_files(old_run)
        folder = _take_run_folder(root, stamp)
    junit_path = None
    if junit:
        junit_path = _junit_file(junit, inputs, folders)
        cleaned += remove_stale_temp_files(os.path.dirname(junit_path))
    csv_path = take_result_name(folder, stamp)
    return OutputPaths(folder, csv_path, results_path_for(csv_path), os.path.join(folder, SUMMARY_NAME), junit_path,
                       tuple(cleaned))


def take_run_folder(default_root: str, inputs: Sequence[str], folders: Sequence[str] = ()) -> str:
    """A new ``ROOT/{ts}[_n]`` folder, taken now (checked against the inputs as :func:`check_outputs` does), for
    a command writing several runs' outputs into sub-folders of one (``compare --steps all``)."""
    root = ensure_output_dir(default_root, *inputs, folders=folders)
    return _take_run_folder(root, timestamp())


def _numbered(stem: str, n: int) -> str:
    """``stem`` for the first run, ``stem_1``, ``stem_2``... for the next ones."""
    return stem if n == 0 else f"{stem}_{n}"


def _take_run_folder(root: str, stamp: str) -> str:
    """Make and return the first free ``ROOT/{stamp}[_n]`` (``mkdir`` fails on an existing folder)."""
    n = 0
    while True:
        folder = os.path.join(root, _numbered(stamp, n))
        try:
            os.mkdir(folder)
            return folder
        except FileExistsError:
            n += 1
        except OSError as error:
            raise WorkspaceError(f"{folder}: cannot create output folder ({error.strerror or error})") from None


def take_result_name(folder: str, stamp: str) -> str:
    """The path of the first ``result_{stamp}[_n].csv`` in ``folder`` that no other run has taken, taken now.

    Taken by creating its lossless file ``result_{stamp}[_n].jsonl`` with ``O_EXCL`` (atomic: of two runs
    asking at once, one gets it, the other moves on to ``_n+1``); a name whose CSV exists already (written
    by msaccucmp or an older tool) is given back and skipped. Raises :class:`WorkspaceError` when the
    folder cannot be written.
    """
    from precision_tool.reports.result_store import results_path_for

    n = 0
    while True:
        csv_path = os.path.join(folder, _numbered(f"result_{stamp}", n) + ".csv")
        placeholder = results_path_for(csv_path)
        n += 1
        try:
            if not _claim(placeholder):
                continue
        except OSError as error:
            raise WorkspaceError(f"{folder}: cannot write results ({error.strerror or error})") from None
        if not os.path.lexists(csv_path):
            return csv_path
        os.unlink(placeholder)


def _claim(placeholder: str) -> bool:
    """Create ``placeholder`` holding this process's claim, unless it exists (False). Atomic, content included: the
    claim is written to a temporary file first and hard-linked to the name (which fails if the name exists), so a
    run killed at any moment never leaves an empty placeholder, which no later run could tell from a live one's;
    where the file system has no hard links, the name is created with ``O_EXCL`` and the claim written into it."""
    text = _CLAIM.format(pid=os.getpid()).encode("ascii")
    temp = temp_path_beside(placeholder)
    descriptor = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        try:
            os.write(descriptor, text)
        finally:
            os.close(descriptor)
        os.link(temp, placeholder)
        return True
    except FileExistsError:
        return False
    except OSError:  # no hard links here (EPERM, ENOTSUP, ENOSYS on FUSE, EINVAL on FAT, ...): O_EXCL says the rest
        pass
    finally:
        os.unlink(temp)
    try:
        descriptor = os.open(placeholder, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    except FileExistsError:
        return False
    try:
        os.write(descriptor, text)
    finally:
        os.close(descriptor)
    return True


def _run_folders(root: str) -> List[str]:
    """The ``{ts}[_n]`` run folders under ``root`` (where killed runs may have left temporary files)."""
    try:
        names = os.listdir(root)
    except OSError:
        return []
    return [os.path.join(root, name) for name in names
            if _RUN_FOLDER.fullmatch(name) and os.path.isdir(os.path.join(root, name))]


def remove_stale_temp_files(folder: str) -> List[str]:
    """Remove the temporary files (``.precision_tool-{PID}-{hex}.tmp``, made by
    :func:`~precision_tool.fileio.atomic_write`) and result name placeholders (``result_{ts}.jsonl`` holding
    only the claim of :func:`take_result_name`) that runs killed while writing left in ``folder``; returns
    the paths removed.

    A file is stale when its process is gone: ``os.kill(PID, 0)`` raises ``ProcessLookupError``. A live
    process's file -- another run writing right now, or this one -- is never touched, nor one whose PID
    cannot be checked (owned by another user: ``PermissionError``; PID 0 or beyond 2**31; not a POSIX
    system). PIDs are this machine's: a folder shared with another machine may hold a live process's file
    under a PID that is free here. Files that cannot be removed stay; nothing is raised.
    """
    removed: List[str] = []
    try:
        names = os.listdir(folder)
    except OSError:
        return removed
    for name in names:
        path = os.path.join(folder, name)
        match = _STALE_TEMP.fullmatch(name) or (_PLACEHOLDER_NAME.fullmatch(name) and _claim_of(path))
        if match and not _process_alive(int(match.group(1))):
            try:
                os.unlink(path)
            except OSError:  # removed meanwhile, or not ours to remove
                continue
            removed.append(path)
    return removed


def _claim_of(path: str):
    """The claim in a result name's placeholder (:func:`take_result_name`; group 1 the PID), or ``None`` for
    anything else -- a complete lossless file is never mistaken for one (it starts with ``{``)."""
    try:
        if os.path.getsize(path) > 80:
            return None
        with open(path, "rb") as handle:
            return _CLAIM_PATTERN.fullmatch(handle.read(81).decode("ascii", "replace"))
    except OSError:
        return None


def _process_alive(pid: int) -> bool:
    """False only when process ``pid`` surely does not exist (see :func:`remove_stale_temp_files`)."""
    if os.name != "posix" or not 0 < pid < 2 ** 31:  # kill(0) would signal our own group; Windows differs
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # PermissionError: alive, another user's
        return True
    return True


def write_outputs(result: ComparisonResult, paths: OutputPaths, *, total_s: Optional[float] = None,
                  verdict: Optional[Dict[str, Any]] = None, exit_code: Optional[int] = None) -> Dict[str, Any]:
    """Write every output of ``result`` in the order of the module docstring; returns the summary written.
    ``verdict`` and ``exit_code``: ``ac``'s, when it wrote the run (the summary keeps them for ``vcs``, ``ni`` and
    ``report``); default the comparison's own.

    The lossless file is written first, so the CSV and the summary are written only once it is complete.

    Raises :class:`WorkspaceError` when a file cannot be written (a full disk, a read-only folder); the name
    :func:`plan_outputs` took is given back when its lossless file could not be written.
    """
    from precision_tool.reports.result_csv import result_csv_text
    from precision_tool.reports.summary import build_summary, run_exit_code, summary_text

    try:
        _write_results_file(paths, result)
        summary = build_summary(result, result_csv=paths.csv,
                                exit_code=run_exit_code(result) if exit_code is None else exit_code,
                                total_s=total_s, verdict=verdict)
        write_text_atomic(paths.csv, result_csv_text(result.results, npu_vs_npu=result.npu_vs_npu))
        if paths.junit:
            _write_junit(paths.junit, result)
        write_text_atomic(paths.summary, summary_text(summary))
    except OSError as error:
        raise WorkspaceError(f"{paths.folder}: cannot write results ({error.strerror or error})") from None
    return summary


def _write_junit(path: str, result: ComparisonResult) -> None:
    from precision_tool.reports.junit import write_junit  # here: xml.etree only when asked for

    try:
        write_junit(path, result)
    except OSError as error:
        raise WorkspaceError(f"{path}: cannot write the JUnit report ({error.strerror or error})") from None


def _write_results_file(paths: OutputPaths, result: ComparisonResult) -> None:
    """The lossless file, written atomically over the name's placeholder. On any failure (or Ctrl-C) the name's
    placeholder is removed if it still holds this run's claim, so the name is free again."""
    from precision_tool.reports.result_store import write_results_file

    try:
        write_results_file(paths.results, result, paths.csv)
    except BaseException:
        claim = _claim_of(paths.results)
        if claim is not None and int(claim.group(1)) == os.getpid():
            try:
                os.unlink(paths.results)
            except OSError:
                pass
        raise
