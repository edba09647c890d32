"""``compare --steps all`` / ``compare --device all``: an NPU dump tree compared one step or device at a time.

Each step of the device, each device, or both, is compared with the reference by the one compare job
(:func:`~precision_tool.commands.compare_run.execute`), its scans keeping that step and device
(:func:`~precision_tool.comparison.tree_runs.compare_each`), each run writing into ``OUT/step_N``, ``OUT/device_N``
or ``OUT/device_N/step_M``. The report: a table of the runs, the first diverging step (per device) and, with
``--device all``, the replicas whose results differ (:func:`~precision_tool.comparison.tree_runs.replicas_differ`).
Exit code 1 when a run fails, else 2 when one could not be used, else 0. See docs/compare.md#every-step-every-device.
"""
from __future__ import annotations

import os
import time
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Sequence, Tuple

from precision_tool.commands.compare_run import CompareRequest, execute, run_compare
from precision_tool.commands.options import ALL
from precision_tool.errors import EXIT_FAILED_CHECK, EXIT_UNUSABLE_INPUT, PrecisionToolError, UsageError
from precision_tool.formats.dump_tree import DumpSelection, each_selection, numbers_text
from precision_tool.reports.report import Report, Text
from precision_tool.reports.result_outputs import take_run_folder
from precision_tool.reports.format import counted, exit_line

if TYPE_CHECKING:  # imported where used: a plain compare (one step, one device) never loads tree_runs
    from precision_tool.comparison.tree_runs import StepRun

#: ``(line, data)``: a line of the report and its ``--json`` entry (``None``: the line has none).
Findings = List[Tuple[str, Optional[Dict[str, Any]]]]


def wants_each(args) -> bool:
    """``--steps all`` or ``--device all`` was given."""
    return ALL in (args.dump_step, args.dump_device)


def run_compare_each(request: CompareRequest, args, default_root: str, folders: Sequence[str]) -> Report:
    """``compare`` with ``--steps all`` and/or ``--device all`` (see the module docstring).

    Raises :class:`UsageError` with ``--junit`` or ``--html`` (one run's outputs), and the typed error of a
    missing folder, of a device asked for that the tree lacks, or of the first run when every run failed.
    """
    from precision_tool.comparison.tree_runs import StepRun, compare_each, tree_of

    from precision_tool.comparison.pipeline import check_request

    every_step, every_device = args.dump_step == ALL, args.dump_device == ALL
    if args.junit or args.html:
        raise UsageError(f"compare: {'--junit' if args.junit else '--html'} writes one run's result, not one per "
                         f"{'step' if every_step else 'device'}", "compare one with --step N --device N")
    check_request(request)
    tree = tree_of(request.npu_dir)
    if not tree.held:
        return _one_step(request, args, default_root, folders, every_step)
    wanted = request.selection or DumpSelection()
    selections = each_selection(request.npu_dir, tree, every_step=every_step, every_device=every_device,
                                wanted=wanted)
    started = time.perf_counter()
    base = args.out_dir or take_run_folder(default_root, request.input_paths, folders)
    try:
        runs = compare_each(selections, lambda selection: _run_one(request, selection, base, default_root,
                                                                     folders, (every_step, every_device)))
    except PrecisionToolError:
        if not args.out_dir:
            _remove_if_empty(base)
        raise
    if every_device:  # a card that dumped nothing is a row too, not left out
        runs = list(runs) + [StepRun(device, None, exit_code=EXIT_UNUSABLE_INPUT,
                                     error=f"{os.path.join(request.npu_dir, folder)}: no dump files")
                             for device, folder in tree.empty_devices]
    return _report(runs, _what(every_step, every_device, selections, wanted), every_step, every_device, base,
                   time.perf_counter() - started)


def _what(every_step: bool, every_device: bool, selections: Sequence[DumpSelection], wanted: DumpSelection) -> str:
    """What was compared, for the title: ``every step of device 1``, ``every device (step 5)`` ..."""
    if every_step and every_device:
        return "every step of every device"
    if every_step:
        return f"every step of device {selections[0].device}"
    return f"every device ({'its newest step' if wanted.step is None else f'step {wanted.step}'})"


def _one_step(request: CompareRequest, args, default_root: str, folders: Sequence[str], every_step: bool) -> Report:
    """A folder that is no tree: ``compare`` itself, with one line first saying there is one step (device)."""
    report = run_compare(request, args.out_dir, default_root, folders=folders)
    what = "one step" if every_step else "one device"
    line = (f"{request.npu_dir} holds no step folders ({{time}}/{{device}}/{{model}}/{{model_id}}/{{step}}): {what}, "
            "compared as such")
    report.blocks.insert(0, Text([line]))
    report.data["dump_choice"] = [line]
    return report


def _sub_folder(selection: DumpSelection, every_step: bool, every_device: bool) -> str:
    """``step_N`` (``--steps all``), ``device_N`` (``--device all``) or ``device_N/step_M`` (both): where one
    run's outputs go under the base folder."""
    step, device = f"step_{selection.step}", f"device_{selection.device}"
    if every_step and every_device:
        return os.path.join(device, step)
    return step if every_step else device


def _run_one(request: CompareRequest, selection: DumpSelection, base: str, default_root: str,
             folders: Sequence[str], every: Tuple[bool, bool]) -> StepRun:
    """Compare one step of one device into its own folder under ``base`` (``every``: ``--steps all``,
    ``--device all``)."""
    from precision_tool.comparison.tree_runs import StepRun

    label = f"compare device {selection.device} step {selection.step}"
    run = execute(replace(request, selection=selection), os.path.join(base, _sub_folder(selection, *every)),
                  default_root, progress_label=label, folders=folders)
    return StepRun.of(selection, run.result, run.paths.folder)


def _remove_if_empty(folder: str) -> None:
    try:
        os.rmdir(folder)
    except OSError:  # not empty, or gone: nothing to tidy
        pass


def _report(runs: Sequence[StepRun], what: str, every_step: bool, every_device: bool, base: str,
            seconds: float) -> Report:
    """The table, the first diverging step(s), the replicas that differ; ``data`` for ``--json``."""
    from precision_tool.comparison.tree_runs import REPLICA_COSINE_TOLERANCE, exit_code_of

    failing = sum(1 for run in runs if run.exit_code == EXIT_FAILED_CHECK)
    report = Report(title=f"Compared {what}, one run each: {counted(len(runs), 'run')}, {failing} fail")
    report.add_table(["device", "step", "compared", "failed", "first divergence", "exit", "result folder / error"],
                     [[run.device, run.step, run.compared if not run.error else "-",
                       len(run.failing) if not run.error else "-", run.first_divergence or "-", run.exit_code,
                       run.error or run.folder] for run in runs])
    diverging = _first_diverging(runs, every_step)
    replicas = _replica_findings(runs, every_step) if every_device else []
    lines = [f"device {run.device}, step {run.step}: {run.unreadable} dump file"
             f"{'' if run.unreadable == 1 else 's'} could not be read (each named in {run.folder or 'its result'})"
             for run in runs if run.unreadable]
    lines += [line for line, _ in diverging + replicas]
    if lines:
        report.add_text(*lines)
    exit_code = exit_code_of(runs)
    report.status = exit_line(exit_code, seconds, f"results under {base}")
    report.exit_code = exit_code
    report.data = {"runs": [run.to_dict() for run in runs],
                   "first_diverging": [data for _, data in diverging if data is not None],
                   "replicas_differ": [data for _, data in replicas if data is not None],
                   "replica_cosine_tolerance": REPLICA_COSINE_TOLERANCE, "output_folder": base,
                   "exit_code": exit_code}
    return report


def _by_device(runs: Sequence[StepRun]) -> Dict[int, List[StepRun]]:
    grouped: Dict[int, List[StepRun]] = {}
    for run in runs:
        grouped.setdefault(run.device if run.device is not None else -1, []).append(run)
    return grouped


def _first_diverging(runs: Sequence[StepRun], every_step: bool) -> Findings:
    """``(line, data)`` per device with ``--steps all``: ``First diverging step[ of device D]: S (OP ...)``, or
    that no step diverges; nothing without ``--steps all``."""
    from precision_tool.comparison.tree_runs import first_diverging

    if not every_step:
        return []
    grouped = _by_device(runs)
    found: Findings = []
    for device, device_runs in grouped.items():
        of = f" of device {device}" if len(grouped) > 1 else ""
        first = first_diverging(device_runs)
        if first is None:
            steps = numbers_text(run.step for run in device_runs if run.step is not None and not run.error)
            # a device none of whose steps could be compared is no pass (a user walk read it as one)
            found.append((f"No step{of} diverges (steps compared: {steps})." if steps else
                          f"No step{of} could be compared: {device_runs[0].error}.", None))
            continue
        found.append((f"First diverging step{of}: {first.step} ({first.first_divergence}: first divergence; "
                      f"{len(first.failing)} tensors fail of {first.compared}; {first.folder})",
                      {"device": first.device, "step": first.step, "first_divergence": first.first_divergence}))
    return found


def _replica_findings(runs: Sequence[StepRun], every_step: bool) -> Findings:
    """``(line, data)`` per device whose results differ from the other replicas' (compared per step with
    ``--steps all``): ``Replicas differ[ at step S]: device D (why)``; one line (data ``None``) that they agree
    when none differs."""
    from precision_tool.comparison.tree_runs import REPLICA_COSINE_TOLERANCE, replicas_differ

    groups: Dict[Optional[int], List[StepRun]] = {}
    for run in runs:
        groups.setdefault(run.step if every_step else None, []).append(run)
    found: Findings = []
    for step, replicas in groups.items():
        at = f" at step {step}" if every_step else ""
        differ = replicas_differ(replicas)
        found.extend((f"Replicas differ{at}: device {device} ({why})", {"step": step, "device": device, "why": why})
                     for device, why in differ.items())
        usable = [run for run in replicas if run.device is not None and not run.error]
        if not differ and len(usable) > 1:
            # on the tensors both compared: say when some were not (a user walk read "agree" as a clean bill)
            unreadable = "; ".join(f"device {run.device}: {counted(run.unreadable, 'unreadable dump file')}"
                                   for run in usable if run.unreadable)
            over = ""
            if len({run.compared for run in usable}) > 1 or unreadable:
                compared = ", ".join(f"device {run.device} {run.compared}" for run in usable)
                over = f"; but not over the same tensors: compared {compared}" + (f" ({unreadable})" if unreadable
                                                                                  else "")
            devices = numbers_text(run.device for run in usable if run.device is not None)
            found.append((f"Replicas agree{at}: devices {devices} (same failing tensors, cosines within "
                          f"{REPLICA_COSINE_TOLERANCE:g}{over})", None))
    return found
