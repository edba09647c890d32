"""Steps and devices of an Ascend dump tree: which folders a scan may mix.

GE writes ``{dump_path}/{time}/{device_id}/{model_name}/{model_id}/{step}/{files}`` (``../shared/docs/
ascend-dump-trees.md``): one ``{time}`` folder per process (so per device in data-parallel training), one
``{step}`` folder per dumped step (``dump_step="0|5|10-20"``). A folder whose last five path components have
that shape (``{time}`` 14 digits, device, model id and step decimal numbers) has a :class:`TreePosition`; any
other folder holding dumps (a flat folder of copied files) has none.

Dumps of different steps or devices are different tensors of the same ops: a scan never mixes them
(:func:`choose`). Without a request it takes the **newest step of the lowest device** and says which, and what
else the tree holds; ``--step N`` / ``--device N`` pick one (:func:`requested`, set once per command by the
CLI). Folders without a position are always scanned.
"""
from __future__ import annotations

import contextvars
import os
import re
from dataclasses import dataclass
from typing import Iterable, List, Optional, Sequence, Tuple

from precision_tool.errors import WorkspaceError

_TIME = re.compile(r"^\d{14}$")
_NUMBER = re.compile(r"^\d{1,9}$")


@dataclass(frozen=True)
class TreePosition:
    """Where a dump folder sits in GE's tree: ``{time}/{device}/{model}/{model_id}/{step}``."""

    time: str
    device: int
    model: str
    model_id: int
    step: int


@dataclass(frozen=True)
class DumpSelection:
    """A requested step and/or device (``None``: the default rule)."""

    step: Optional[int] = None
    device: Optional[int] = None


@dataclass(frozen=True)
class Choice:
    """The step and device a scan keeps (``None`` when the tree has no positions), and a note saying what was
    chosen and what else the tree holds (``""`` when there was nothing to choose from and nothing was asked)."""

    step: Optional[int]
    device: Optional[int]
    note: str = ""

    def keeps(self, position: Optional[TreePosition]) -> bool:
        return position is None or self.step is None or (position.step == self.step
                                                         and position.device == self.device)


_REQUESTED: contextvars.ContextVar = contextvars.ContextVar("precision_tool_dump_selection", default=None)


def request(selection: DumpSelection) -> None:
    """Set the step/device the scans of this command keep (the CLI's ``--step``/``--device``)."""
    _REQUESTED.set(selection)


def requested() -> DumpSelection:
    return _REQUESTED.get() or DumpSelection()


def position_of(folder: str) -> Optional[TreePosition]:
    """The :class:`TreePosition` of a folder from its last five path components, or ``None``."""
    parts = os.path.normpath(os.path.abspath(folder)).split(os.sep)
    if len(parts) < 5:
        return None
    time, device, model, model_id, step = parts[-5:]
    if not (_TIME.match(time) and _NUMBER.match(device) and _NUMBER.match(model_id) and _NUMBER.match(step)):
        return None
    return TreePosition(time, int(device), model, int(model_id), int(step))


def _numbers(values: Iterable[int]) -> str:
    return ", ".join(str(v) for v in sorted(set(values)))


def choose(root: str, positions: Sequence[TreePosition], wanted: Optional[DumpSelection] = None) -> Choice:
    """The step and device to keep among ``positions`` (see the module docstring).

    Raises
    ------
    WorkspaceError
        a requested device or step the tree does not hold (the error lists those it holds).
    """
    wanted = requested() if wanted is None else wanted
    if not positions:
        if wanted.step is not None or wanted.device is not None:
            raise WorkspaceError(f"{root}: --step/--device: the dumps are not in step folders "
                                 "({time}/{device}/{model}/{model_id}/{step})", "leave out --step and --device")
        return Choice(None, None)
    devices = sorted({p.device for p in positions})
    if wanted.device is not None and wanted.device not in devices:
        raise WorkspaceError(f"{root}: no dumps of device {wanted.device} (devices: {_numbers(devices)})")
    device = devices[0] if wanted.device is None else wanted.device
    steps = sorted({p.step for p in positions if p.device == device})
    if wanted.step is not None and wanted.step not in steps:
        raise WorkspaceError(f"{root}: no dumps of step {wanted.step} on device {device} "
                             f"(steps: {_numbers(steps)})")
    step = steps[-1] if wanted.step is None else wanted.step
    others: List[str] = []
    if len(steps) > 1:
        others.append(f"steps {_numbers(s for s in steps if s != step)}")
    if len(devices) > 1:
        others.append(f"devices {_numbers(d for d in devices if d != device)}")
    if not others and wanted == DumpSelection():
        return Choice(step, device)
    how = ("as asked" if wanted.step is not None and (wanted.device is not None or len(devices) == 1)
           else "the newest step of the lowest device" if wanted == DumpSelection() else "as asked, newest step")
    also = f"; also in the tree: {', '.join(others)} (pick with --step N --device N)" if others else ""
    return Choice(step, device, f"dumps of step {step} on device {device} ({how}){also}")


def choose_folders(root: str, folders: Sequence[str],
                   wanted: Optional[DumpSelection] = None) -> Tuple[Choice, List[str]]:
    """``(choice, folders kept)`` among the dump-holding ``folders`` under ``root``."""
    positions = {folder: position_of(folder) for folder in folders}
    choice = choose(root, [p for p in positions.values() if p is not None], wanted)
    return choice, [folder for folder in folders if choice.keeps(positions[folder])]
