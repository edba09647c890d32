"""Steps and devices of an Ascend dump tree: which folders a scan may mix.

GE writes ``{dump_path}/{time}/{device_id}/{model_name}/{model_id}/{step}/{files}``. A scan never mixes steps,
devices or GE models (:func:`choose`): it keeps the step and device of its :class:`DumpSelection` (the command's
``--step``/``--device``, handed explicitly), else the newest step of the lowest device, and of each device the model
holding the most dump files. A reference tree follows the compared run (:func:`following`). A selection may carry a
:class:`ChoiceLog`, where every scan given it records what it chose, for the command's ``NPU dumps:`` line.
See docs/internals/formats.md#dump_tree.
"""
from __future__ import annotations

import dataclasses
import os
import re
from dataclasses import dataclass, field
from typing import Dict, Iterable, List, Mapping, Optional, Sequence, Tuple

from precision_tool.errors import WorkspaceError

_TIME = re.compile(r"^\d{14}$")
_NUMBER = re.compile(r"^\d{1,9}$")
PICK_HINT = "pick with --step N --device N"


@dataclass(frozen=True)
class TreePosition:
    """Where a dump folder sits in GE's tree: ``{time}/{device}/{model}/{model_id}/{step}``."""

    time: str
    device: int
    model: str
    model_id: int
    step: int

    @property
    def model_folder(self) -> str:
        """``{time}/{device}/{model}/{model_id}``: which model of which session, as a path below the tree's root."""
        return "/".join((self.time, str(self.device), self.model, str(self.model_id)))


@dataclass(frozen=True)
class DumpSelection:
    """A requested step and/or device (``None``: the default rule).

    ``follow``: the selection of a reference tree following the compared run's step and device -- taken when
    the tree holds them, else its only step (device), else an error (see the module docstring). ``why``: what the
    note says of a choice made for the user rather than asked by them (``""``: the note's usual words).
    """

    step: Optional[int] = None
    device: Optional[int] = None
    follow: bool = False
    why: str = ""
    log: Optional["ChoiceLog"] = field(default=None, compare=False, hash=False, repr=False)
    """Where the scans given this selection record their choices (``None``: nowhere); not part of its value."""

    @property
    def empty(self) -> bool:
        """Neither a step nor a device asked for."""
        return self.step is None and self.device is None

    def record(self, root: str, choice: "Choice") -> None:
        """Record a scan's choice in :attr:`log` (nothing without a log, or without a note)."""
        if self.log is not None:
            self.log.add(root, choice)

    def unlogged(self) -> "DumpSelection":
        """This selection for a look-ahead scan, whose choices are not the command's."""
        return dataclasses.replace(self, log=None)

    def at(self, step: Optional[int], device: Optional[int], why: str = "") -> "DumpSelection":
        """Another step and device, read into the same log."""
        return DumpSelection(step, device, why=why, log=self.log)


@dataclass(frozen=True)
class Choice:
    """The step and device a scan keeps (``None`` when the tree has no positions), and a note saying what was
    chosen and what else the tree holds (``""`` when there was nothing to choose from and nothing was asked).

    ``held``: every ``(device, step)`` of the tree's read models, sorted (``()`` for a flat folder). ``models``: the
    :attr:`TreePosition.model_folder` read of each device, ``(device, folder)`` by device (see the module
    docstring). ``empty_devices``: ``(device, folder)`` of the ``{time}/{device}`` folders holding no dump file
    (a card that dumped nothing), which the note names too (:func:`with_empty_devices`).
    """

    step: Optional[int]
    device: Optional[int]
    note: str = ""
    held: Tuple[Tuple[int, int], ...] = ()
    models: Tuple[Tuple[int, str], ...] = ()
    empty_devices: Tuple[Tuple[int, str], ...] = ()

    def keeps(self, position: Optional[TreePosition]) -> bool:
        return position is None or self.step is None or (
            position.step == self.step and position.device == self.device
            and (not self.models or (position.device, position.model_folder) in self.models))

    @property
    def devices(self) -> Tuple[int, ...]:
        """The devices of the tree, lowest first."""
        return tuple(sorted({device for device, _ in self.held}))

    def steps_of(self, device: int) -> Tuple[int, ...]:
        """The steps dumped on ``device``, oldest first (``()`` for a device the tree lacks)."""
        return tuple(step for held_device, step in self.held if held_device == device)


#: No step or device asked for: the newest step of the lowest device, noted nowhere.
DEFAULT_SELECTION = DumpSelection()


class ChoiceLog:
    """The choices of the scans of one command, in order: ``(root, choice)`` of each scan with a note, once."""

    def __init__(self) -> None:
        self.choices: List[Tuple[str, Choice]] = []

    def add(self, root: str, choice: Choice) -> None:
        if choice.note and (root, choice) not in self.choices:
            self.choices.append((root, choice))


def following(selection: DumpSelection) -> DumpSelection:
    """The selection of another run of the same job (a reference tree, the overflow run): ``selection``'s step and
    device when it holds them, else its only ones (:attr:`DumpSelection.follow`); same log."""
    return DumpSelection(selection.step, selection.device, follow=True, log=selection.log)


def device_folder_of(folder: str) -> Optional[int]:
    """The device of a ``{time}/{device}`` folder (its last two path components), or ``None``."""
    parts = os.path.normpath(os.path.abspath(folder)).split(os.sep)
    if len(parts) < 2 or not (_TIME.match(parts[-2]) and _NUMBER.match(parts[-1])):
        return None
    return int(parts[-1])


def with_empty_devices(choice: Choice, empty: Sequence[Tuple[int, str]]) -> Choice:
    """``choice`` knowing the device folders that hold no dump file, ``(device, folder)``: kept in
    :attr:`Choice.empty_devices` and named at the end of the note (a tree's choice only: a flat folder has no
    devices)."""
    if not empty or choice.step is None:
        return choice
    listed = ", ".join(f"device {device} ({folder})" for device, folder in sorted(empty))
    note = choice.note or f"dumps of step {choice.step} on device {choice.device}"
    return dataclasses.replace(choice, note=f"{note}; no dump files for {listed}", empty_devices=tuple(sorted(empty)))


def position_of(folder: str) -> Optional[TreePosition]:
    """The :class:`TreePosition` of a folder from its last five path components, or ``None``."""
    parts = os.path.normpath(os.path.abspath(folder)).split(os.sep)
    if len(parts) < 5:
        return None
    time, device, model, model_id, step = parts[-5:]
    if not (_TIME.match(time) and _NUMBER.match(device) and _NUMBER.match(model_id) and _NUMBER.match(step)):
        return None
    return TreePosition(time, int(device), model, int(model_id), int(step))


def numbers_text(values: Iterable[int]) -> str:
    """``"0, 5, 10"``: the distinct values, sorted."""
    return ", ".join(str(v) for v in sorted(set(values)))


def _pick(values: Sequence[int], wanted: Optional[int], follow: bool, default: int) -> Optional[int]:
    """``wanted`` when among ``values``; else, following, the only value; else ``default`` when nothing was
    wanted; ``None`` when the wanted value is missing (the caller's error)."""
    if wanted is None:
        return default
    if wanted in values:
        return wanted
    return values[0] if follow and len(values) == 1 else None


def read_models(positions: Sequence[TreePosition],
                files: Optional[Mapping[TreePosition, int]] = None) -> Tuple[Dict[int, str], Dict[int, List[str]]]:
    """``({device: model folder read}, {device: the other model folders, in the order ranked})``: of each device the
    model holding the most dump files (``files``: per position; without it, the most step folders), ties to the
    newest session (``{time}``), then the name (module docstring)."""
    weight: Dict[Tuple[int, str], int] = {}
    for position in positions:
        key = (position.device, position.model_folder)
        weight[key] = weight.get(key, 0) + (1 if files is None else files.get(position, 0))
    ranked: Dict[int, List[str]] = {}
    for (device, folder), _ in sorted(weight.items(), key=lambda item: (-item[1], _newest_first(item[0][1]))):
        ranked.setdefault(device, []).append(folder)
    return {device: folders[0] for device, folders in ranked.items()}, {
        device: folders[1:] for device, folders in ranked.items() if len(folders) > 1}


def _newest_first(model_folder: str) -> Tuple[int, str]:
    """Sort key: a later ``{time}`` (14 digits) first, then the folder by name."""
    time = model_folder.split("/", 1)[0]
    return (-int(time) if time.isdigit() else 0, model_folder)


def choose(root: str, positions: Sequence[TreePosition], wanted: Optional[DumpSelection] = None,
           files: Optional[Mapping[TreePosition, int]] = None) -> Choice:
    """The step and device to keep among ``positions``, and of each device one model (:func:`read_models`; ``files``:
    dump files per position); see the module docstring.

    Raises
    ------
    WorkspaceError
        a requested device or step the tree does not hold (the error lists those it holds); a step or device
        asked of a folder that is no tree.
    """
    wanted = DumpSelection() if wanted is None else wanted
    if wanted.follow and wanted.empty:  # following a run that is no tree: the default rule
        wanted = DumpSelection()
    read, others = read_models(positions, files)
    held = tuple(sorted({(p.device, p.step) for p in positions if read[p.device] == p.model_folder}))
    if not held:
        if not wanted.empty and not wanted.follow:
            raise WorkspaceError(f"{root}: --step/--device: the dumps are not in step folders "
                                 "({time}/{device}/{model}/{model_id}/{step})", "leave out --step and --device")
        return Choice(None, None)
    devices = sorted({device for device, _ in held})
    device = _pick(devices, wanted.device, wanted.follow, devices[0])
    if device is None:
        raise WorkspaceError(f"{root}: no dumps of device {wanted.device} (devices: {numbers_text(devices)})")
    steps = [step for held_device, step in held if held_device == device]
    step = _pick(steps, wanted.step, wanted.follow, steps[-1])
    if step is None:
        raise WorkspaceError(f"{root}: no dumps of step {wanted.step} on device {device} "
                             f"(steps: {numbers_text(steps)})")
    return Choice(step, device, _note(wanted, step, device, devices, steps, read[device], others.get(device, ())),
                  held, tuple(sorted(read.items())))


def _note(wanted: DumpSelection, step: int, device: int, devices: Sequence[int], steps: Sequence[int],
          read_model: str = "", other_models: Sequence[str] = ()) -> str:
    """What :func:`choose` says about its choice: ``""`` when the tree held nothing else and the choice is what
    was asked (or nothing was asked). When the device holds other models, the one read and the others are named
    as folders below the tree's root (give one instead of the root to read it)."""
    others: List[str] = []  # "step 0 of device 0 and device 1": the steps are the chosen device's
    if len(steps) > 1:
        others.append(f"step{'s' if len(steps) > 2 else ''} {numbers_text(s for s in steps if s != step)} of "
                      f"device {device}")
    if len(devices) > 1:
        others.append(f"device{'s' if len(devices) > 2 else ''} {numbers_text(d for d in devices if d != device)}")
    exact = wanted.step in (None, step) and wanted.device in (None, device)
    if not others and not other_models and (wanted.empty or (wanted.follow and exact)):
        return ""
    if wanted.why:
        how = wanted.why
    elif wanted.follow:
        how = "the same step and device" if exact else (
            "its only step" if wanted.step not in (None, step) and wanted.device in (None, device)
            else "its only device" if wanted.step in (None, step) else "its only step and device")
    elif wanted.empty:
        how = "the newest step of the lowest device"
    elif wanted.step is not None and (wanted.device is not None or len(devices) == 1):
        how = "as asked"
    else:
        how = "as asked, newest step" if wanted.step is None else "as asked, lowest device"
    also = f"; also in the tree: {' and '.join(others)} ({PICK_HINT})" if others else ""
    model = f", model {read_model} (most dump files)" if other_models else ""
    not_read = (f"; other models of device {device}, not read (give one's folder to read it): "
                f"{', '.join(other_models)}") if other_models else ""
    return f"dumps of step {step} on device {device} ({how}){model}{also}{not_read}"


def choose_folders(root: str, folders: Sequence[str], wanted: Optional[DumpSelection] = None,
                   files: Optional[Mapping[str, int]] = None) -> Tuple[Choice, List[str]]:
    """``(choice, folders kept)`` among the dump-holding ``folders`` under ``root`` (``files``: dump files per
    folder, which decide the model read of each device)."""
    positions = {folder: position_of(folder) for folder in folders}
    counts = None if files is None else {p: files.get(f, 0) for f, p in positions.items() if p is not None}
    choice = choose(root, [p for p in positions.values() if p is not None], wanted, counts)
    return choice, [folder for folder in folders if choice.keeps(positions[folder])]


def each_selection(root: str, tree: Choice, *, every_step: bool, every_device: bool,
                   wanted: Optional[DumpSelection] = None) -> List[DumpSelection]:
    """The selections to compare one by one (``compare --steps all`` / ``--device all``), device then step.

    ``tree``: a :class:`Choice` of the tree (its :attr:`Choice.held`). Devices: every device with
    ``every_device``, else the one asked for (``wanted.device``), else the lowest. Steps of each device: all of
    them with ``every_step``, else the one asked for -- kept even for a device that lacks it, whose run then
    fails with the error listing its steps -- else its newest.

    Raises :class:`WorkspaceError` for a device asked for that the tree lacks. A flat folder (no
    positions) gives one selection, its one step: empty, but for a step or device asked for by number (whose
    scan then fails: the folder has no step folders).
    """
    wanted = DumpSelection() if wanted is None else wanted
    if not tree.held:
        return [DumpSelection(None if every_step else wanted.step, None if every_device else wanted.device)]
    if every_device:
        devices: Sequence[int] = tree.devices
    else:
        device = choose(root, _positions(tree), DumpSelection(device=wanted.device)).device
        devices = [device] if device is not None else []
    selections: List[DumpSelection] = []
    for device in devices:
        steps = tree.steps_of(device)
        chosen = steps if every_step else [steps[-1] if wanted.step is None else wanted.step]
        selections.extend(DumpSelection(step, device) for step in chosen)
    return selections


def _positions(tree: Choice) -> List[TreePosition]:
    return [TreePosition("", device, "", 0, step) for device, step in tree.held]
