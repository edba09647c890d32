"""Batch entry point: ``precision_tool [-d DATA_DIR] [--json] [--step N] [--device N] COMMAND [ARGS]``.

Dispatches through the same registry the interactive shell uses. User errors print one line to
stderr and exit with their code (2 = unusable input); a command's report sets the exit code
otherwise (0 ok, 1 a check failed). Bugs are not caught: they keep their traceback.
"""
from __future__ import annotations

import argparse
import gc
import os
import sys
from typing import List, Optional, Sequence

from precision_tool import __version__
from precision_tool.commands import build_registry
from precision_tool.commands.options import add_dump_selection_options
from precision_tool.commands.command_registry import Context
from precision_tool.config import ENV_DATA_DIR, default_data_dir
from precision_tool.errors import EXIT_INTERRUPTED, PrecisionToolError, UsageError
from precision_tool.formats.dump_tree import DumpSelection
from precision_tool.process_env import one_blas_thread, process_symbols, quiet_tensorflow_logs
from precision_tool.reports.format import format_report, report_to_json, terminal_safe


class _GlobalParser(argparse.ArgumentParser):
    """The options before the command: a bad one is one line, as a command's are (not argparse's usage block)."""

    def error(self, message: str):
        self.exit(2, f"{self.prog}: error: {message} (see '{self.prog} -h')\n")


def _global_parser() -> argparse.ArgumentParser:
    parser = _GlobalParser(
        prog="precision_tool",
        description="Find which op loses accuracy on an Ascend NPU, and why.",
        epilog=f"Workspace: -d DIR, else ${ENV_DATA_DIR}, else ./precision_data. "
               "Run 'precision_tool help' for the commands, 'precision_tool COMMAND -h' for one.",
    )
    parser.add_argument("-d", "--data-dir", default=None, help="workspace folder (precision_data)")
    add_dump_selection_options(parser, global_options=True)  # every command's; after the command, for it alone
    parser.add_argument("--json", action="store_true", help="print the report as JSON for scripts")
    parser.add_argument("--version", action="version", version=f"precision_tool {__version__}")
    parser.add_argument("command", nargs="?", help="command to run (default: the interactive shell)")
    parser.add_argument("args", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)
    return parser


def _spare_the_final_collection() -> None:
    """Skip the interpreter's last garbage collection at exit, which walks every object alive to find none worth
    collecting: 15 ms of a 0.2 s ``compare`` with numpy and our modules loaded, about a second once TensorFlow is
    imported (replay, emulate, tf_dump). ``gc.freeze()`` moves every object alive now out of the collector's
    sight; reference counting still frees them and ``atexit`` handlers still run. Only for the process's own
    command line (``main()`` without ``argv``): a caller's process is left alone."""
    gc.freeze()


def main(argv: Optional[Sequence[str]] = None) -> int:
    if argv is not None:
        return _main(list(argv))
    one_blas_thread()  # before numpy is loaded (precision_tool.process_env)
    quiet_tensorflow_logs()  # before TensorFlow is: replay and emulate import it in this process
    try:
        return _main(sys.argv[1:])
    finally:
        _spare_the_final_collection()


def console_main() -> None:
    """The ``precision_tool`` console script and ``python -m precision_tool``: :func:`main`, then the end of the
    process (:func:`leave`). A Ctrl-C before a command has started (while its modules load) ends it as one does
    during the command: one line, exit 130."""
    try:
        code = main()
    except KeyboardInterrupt:
        code = _interrupted()
    leave(code)


def _interrupted() -> int:
    print("precision_tool: interrupted", file=sys.stderr)
    return EXIT_INTERRUPTED


def leave(code: int) -> None:
    """End the process with ``code`` once its output is out and its ``atexit`` handlers have run, without tearing
    the interpreter down (``os._exit``).

    The teardown frees every module and object one by one -- 10 ms of a 0.45 s ``compare`` -- for a process
    about to end. What a user could lose is written before: the ``atexit`` handlers (logging's flush, temporary
    folders' removal) run, then standard output and error and C's stdio buffers are flushed. Every file we write
    is closed by then (written through ``with``). Exits the ordinary way (``sys.exit``), teardown included, when
    another thread still runs (it would be cut off), when TensorFlow was loaded (its handlers expect a normal
    shutdown) or when this Python has no ``atexit._run_exitfuncs``.
    """
    import atexit
    import threading

    run_exit_handlers = getattr(atexit, "_run_exitfuncs", None)
    if run_exit_handlers is None or threading.active_count() > 1 or "tensorflow" in sys.modules:
        sys.exit(code)
    run_exit_handlers()
    for stream in (sys.stdout, sys.stderr):  # after the handlers, which may print
        try:
            stream.flush()
        except (AttributeError, OSError, ValueError):  # a closed pipe: nothing more can reach the reader
            pass
    try:
        process_symbols().fflush(None)  # C stdio buffers too (a native library's printf)
    except (OSError, AttributeError, TypeError):
        pass
    os._exit(code)


def _main(args: List[str]) -> int:
    options = _global_parser().parse_args(args)
    selection = DumpSelection(options.dump_step, options.dump_device)  # what the dump scans keep, unless overridden
    ctx = Context(data_dir=options.data_dir or default_data_dir(), selection=selection)
    if options.command is None:
        # Imported here so batch runs never load prompt_toolkit. It is a hard dependency (setup.cfg), so an
        # ImportError is a broken install or a bug and keeps its traceback: no quiet fallback to the help text.
        from precision_tool.shell.app import run_shell

        return run_shell(ctx)
    registry = build_registry(only=options.command)
    try:
        if not _passes_arguments_through(registry, options.command):
            _lift_global_options(options)
            ctx = Context(data_dir=options.data_dir or default_data_dir(), selection=selection)
        report = registry.dispatch([options.command, *options.args], ctx)
    except PrecisionToolError as error:
        print(f"precision_tool: error: {terminal_safe(str(error))}", file=sys.stderr)
        return error.exit_code
    except KeyboardInterrupt:
        return _interrupted()
    text = report_to_json(report) if options.json else format_report(report)
    if text:
        try:
            print(text, flush=True)
        except BrokenPipeError:  # `precision_tool ... | head`: the reader left; not an error of ours
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return report.exit_code


def _lift_global_options(options: argparse.Namespace) -> None:
    """``-d DIR``/``--data-dir DIR`` and ``--json`` are global options, written before the command; a user who
    writes them after it (``precision_tool ov -d WS``) means the same, so they are taken out of the command's
    arguments (none of which is called so) up to a ``--``, after which everything is the command's. A workspace
    given on both sides must agree, or it is a usage error."""
    args, kept, position = list(options.args), [], 0
    while position < len(args):
        token = args[position]
        if token == "--":
            kept += args[position:]
            break
        value: Optional[str] = None
        if token in ("-d", "--data-dir"):
            if position + 1 >= len(args):
                raise UsageError(f"argument {token}: expected one argument")
            value, position = args[position + 1], position + 2
        elif token.startswith("--data-dir="):
            value, position = token.split("=", 1)[1], position + 1
        elif token.startswith("-d") and len(token) > 2 and not token.startswith("--"):
            value, position = token[2:], position + 1
        elif token == "--json":
            options.json, position = True, position + 1
            continue
        else:
            kept.append(token)
            position += 1
            continue
        if options.data_dir is not None and options.data_dir != value:
            raise UsageError(f"two workspaces: -d {options.data_dir} before the command and -d {value} after it")
        options.data_dir = value
    options.args = kept


def _passes_arguments_through(registry, name: str) -> bool:
    """True for a command whose arguments are another program's from the first on (``run CMD ...``: its first
    positional takes the rest of the line): nothing is taken out of them. A command whose program comes after its
    own arguments and a ``--`` (``bisect fusion -d WS -- CMD``) has its options lifted up to the ``--``."""
    try:
        parser = registry.resolve(name).build_parser()
    except PrecisionToolError:
        return True  # an unknown command: the registry's error says so
    positionals = [action for action in parser._actions if not action.option_strings]
    return bool(positionals) and positionals[0].nargs == argparse.REMAINDER


if __name__ == "__main__":  # pragma: no cover
    console_main()
