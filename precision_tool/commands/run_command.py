"""``run CMD``: run a shell command without leaving the precision_tool shell.

The command goes to ``/bin/sh -c`` as typed (pipes and redirections work) in the current folder, with the
terminal as its input and output, so pagers and editors work too; Ctrl-C stops it and returns to the prompt.
The shell passes the rest of the line untouched. From the batch CLI it is no more than ``sh -c`` and is
there only so every command behaves the same in both.
"""
from __future__ import annotations

import argparse
import subprocess

from precision_tool.commands.command_registry import Command, Context
from precision_tool.errors import EXIT_OK, EXIT_FAILED_CHECK, UsageError
from precision_tool.process_env import user_environment
from precision_tool.reports.report import Report


def add_arguments(parser):
    parser.add_argument("command", nargs=argparse.REMAINDER, help="the shell command and its arguments")


def handle(args, ctx: Context) -> Report:
    command = " ".join(args.command).strip()
    if not command:
        raise UsageError("run what? run CMD, e.g. run ls temp")
    try:
        completed = subprocess.run(command, shell=True, check=False, env=user_environment())
    except OSError as error:
        raise UsageError(f"cannot start /bin/sh: {error.strerror or error}") from None
    report = Report(status="" if completed.returncode == 0 else f"exit status {completed.returncode}")
    report.exit_code = EXIT_OK if completed.returncode == 0 else EXIT_FAILED_CHECK
    report.data = {"command": command, "returncode": completed.returncode}
    return report


COMMAND = Command(
    name="run",
    summary="Run a shell command (sh -c) without leaving the shell: run ls temp | head.",
    add_arguments=add_arguments,
    handler=handle,
    epilog="In the shell the rest of the line is passed as typed. Ctrl-C stops the command, not the shell.",
)
