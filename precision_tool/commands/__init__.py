"""The commands shared by the batch CLI and the shell.

:data:`COMMAND_TABLE` names each command, its aliases and the module that defines it (``COMMAND =
Command(...)``). The shell and ``help`` load every module (:func:`build_registry`); a batch run of one
command loads only that command's module (``build_registry(only=NAME)``), so ``precision_tool compare`` does
not pay for importing the HTML report, the checks and the shell. :data:`DUMP_READERS` names the commands the
registry gives ``--step N --device N`` (docs/internals/commands.md#the-command-table).
"""
from __future__ import annotations

import importlib
from dataclasses import replace
from typing import Dict, Optional, Tuple

from precision_tool.commands.options import EVERY_STEP, ONE_STEP
from precision_tool.commands.command_registry import CommandRegistry

# command name -> (module under precision_tool.commands, aliases). Order does not matter; help sorts by name.
COMMAND_TABLE: Dict[str, Tuple[str, Tuple[str, ...]]] = {
    "ac": ("autocheck_command", ("auto_check",)),
    "bisect": ("bisect_command", ()),
    "compare": ("compare", ()),
    "cp": ("compare_tensors", ("compare_tensors",)),
    "dc": ("dump_convert", ("dump_convert",)),
    "emulate": ("emulate", ()),
    "fusion": ("fusion_command", ("fu",)),
    "ge2json": ("ge2json", ()),
    "ls": ("list_ops", ("list_ops",)),
    "ni": ("node_info", ("node_info",)),
    "ov": ("overflow_command", ("overflow",)),
    "pt": ("print_tensor", ("print_tensor",)),
    "replay": ("replay", ()),
    "report": ("report_command", ("html",)),
    "run": ("run_command", ()),
    "tf_dump": ("tf_dump", ()),
    "vc": ("vector_compare", ("vector_compare",)),
    "vcs": ("vector_summary", ("vector_summary",)),
}
COMMAND_MODULES = tuple(module for module, _ in COMMAND_TABLE.values())
# command name -> what it reads of an NPU dump tree (Command.dumps): one step of one device, or, for compare,
# also every step / every device.
DUMP_READERS: Dict[str, str] = {**dict.fromkeys(("ac", "cp", "dc", "fusion", "ls", "ni", "ov", "pt", "replay", "report",
                                                 "vc", "vcs"), ONE_STEP), "compare": EVERY_STEP}


def module_of(name: str) -> Optional[str]:
    """The module defining the command called ``name`` (a name or an alias), or ``None``."""
    for command, (module, aliases) in COMMAND_TABLE.items():
        if name == command or name in aliases:
            return module
    return None


def build_registry(only: Optional[str] = None) -> CommandRegistry:
    """The registry: every command, or with ``only`` just the command of that name or alias (every command
    when ``only`` is unknown or ``help``, so the error or the listing is complete)."""
    module = module_of(only) if only else None
    modules = (module,) if module else COMMAND_MODULES
    registry = CommandRegistry()
    for name in modules:
        command = importlib.import_module(f"precision_tool.commands.{name}").COMMAND
        registry.register(replace(command, dumps=DUMP_READERS.get(command.name, command.dumps)))
    return registry
