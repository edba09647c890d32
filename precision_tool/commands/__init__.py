"""The commands shared by the batch CLI and the shell; :func:`build_registry` lists them all."""
from __future__ import annotations

import importlib

from precision_tool.commands.registry import CommandRegistry

# Each module defines COMMAND = Command(...). Order does not matter; help sorts by name.
COMMAND_MODULES = (
    "compare",
    "dump_convert",
    "emulate",
    "ge2json",
    "tf_dump",
    "list_ops",
    "node_info",
    "print_tensor",
    "compare_tensors",
    "run_command",
    "vector_compare",
    "vector_summary",
    "autocheck",
    "overflow",
    "fusion",
    "report",
)


def build_registry() -> CommandRegistry:
    """Every command, registered once (importing a command module is cheap: no TensorFlow)."""
    registry = CommandRegistry()
    for name in COMMAND_MODULES:
        registry.register(importlib.import_module(f"precision_tool.commands.{name}").COMMAND)
    return registry
