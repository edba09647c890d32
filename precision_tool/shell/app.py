"""The interactive shell: ``precision_tool`` with no command opens ``PrecisionTool >`` over the workspace.

The loop follows pgcli's ``run_cli``: read a line (prompt_toolkit, set up once in :meth:`Shell._build_session`),
split it (:mod:`.command_line`), dispatch it through the same registry as the batch CLI, format the report for the
terminal and print it. Everything printed goes through :func:`~precision_tool.reports.format.terminal_safe`, so
names in the workspace cannot drive the terminal. A user error prints one line ``error: ...``, a bug its traceback;
either way the shell stays. Nothing of the workspace is read at start-up. What the user sees (long tables,
``> FILE``, Ctrl-C, history, piped input): docs/commands.md#the-shell; the rest: docs/internals/commands.md#the-shell.
"""
from __future__ import annotations

import dataclasses
import os
import shutil
import sys
import traceback
from dataclasses import dataclass
from typing import TYPE_CHECKING, Optional, Tuple

from precision_tool import __version__
from precision_tool.commands import build_registry
from precision_tool.commands.command_registry import Context
from precision_tool.commands.lookups import lookup_for
from precision_tool.errors import EXIT_OK, PrecisionToolError, UsageError, worst_exit_code
from precision_tool.reports.format import OutputSettings, format_report, terminal_safe
from precision_tool.reports.report import Table
from precision_tool.shell.command_line import parse_command_line
from precision_tool.shell.completer import PrecisionToolCompleter
from precision_tool.shell.keys import ShellState, shell_key_bindings
from precision_tool.shell.workspace_index import WorkspaceIndex

if TYPE_CHECKING:  # prompt_toolkit's session is only built by run(): a batch script never loads it
    from prompt_toolkit import PromptSession

PROMPT = "PrecisionTool > "
LEAVE_WORDS = ("exit", "quit")
MIN_TABLE_ROWS = 10
RESERVED_LINES = 12  # title, headers, notes and the next prompt around a table


def history_path(environ=None) -> str:
    """``$XDG_STATE_HOME/precision_tool/history``, with XDG's default ``~/.local/state``."""
    environ = os.environ if environ is None else environ
    state_home = environ.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"), ".local", "state")
    return os.path.join(state_home, "precision_tool", "history")


@dataclass(frozen=True)
class ShellResult:
    """What one line produced: text to print, whether to leave, and the command's exit code."""

    text: str = ""
    leave: bool = False
    exit_code: int = EXIT_OK


class Shell:
    """One session over the workspace of ``ctx``; :meth:`execute` runs a line without any terminal."""

    def __init__(self, ctx: Context, registry=None):
        self.ctx = dataclasses.replace(ctx, interactive=True)
        self.registry = registry if registry is not None else build_registry()
        self.registry.extra_help_rows = [("exit", "quit", "Leave the shell (also Ctrl-D).")]
        self.index = WorkspaceIndex(lambda: lookup_for(self.ctx, 0))
        self.completer = PrecisionToolCompleter(self.registry, self.index)
        self.state = ShellState()
        self.prompt_session: Optional[PromptSession] = None  # made by run(); not the Context's Session

    # ------------------------------------------------------------------ one line
    def execute(self, line: str, size: Optional[Tuple[int, int]] = None) -> ShellResult:
        """Run one line; ``size`` is the terminal's ``(columns, lines)`` (default: the real one). The text is
        :func:`terminal_safe`, whatever produced it: a report, an error line or a traceback."""
        result = self._execute(line, size)
        return dataclasses.replace(result, text=terminal_safe(result.text))

    def _execute(self, line: str, size: Optional[Tuple[int, int]]) -> ShellResult:
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            return ShellResult()
        if stripped in LEAVE_WORDS:
            return ShellResult(leave=True)
        columns, lines = size or self._terminal_size()
        self.ctx.session.terminal_size = (columns, lines)
        try:
            parsed = parse_command_line(stripped)
            report = self.registry.dispatch(parsed.argv, self.ctx)
            if parsed.redirect:
                return ShellResult(self._write(report, parsed.redirect), exit_code=report.exit_code)
            max_rows = max(MIN_TABLE_ROWS, lines - RESERVED_LINES)
            text = format_report(report, OutputSettings(max_rows=max_rows))
            if any(isinstance(b, Table) and len(b.rows) > max_rows for b in report.blocks):
                text += f"\n(tables cut to {max_rows} rows to fit the terminal; add '> FILE' to save everything)"
            return ShellResult(text, exit_code=report.exit_code)
        except PrecisionToolError as error:
            return ShellResult(f"error: {error}", exit_code=error.exit_code)
        except Exception:  # noqa: BLE001 -- any other exception is a bug: show its traceback, keep the session
            return ShellResult("internal error (a bug in precision_tool; please report it):\n"
                               + traceback.format_exc().rstrip(), exit_code=70)

    def _write(self, report, target: str) -> str:
        """``CMD > target``: the whole report into ``target`` (its folder created), refused with a
        :class:`~precision_tool.errors.WorkspaceError` inside a workspace input folder."""
        from precision_tool.config import Workspace, ensure_output_file
        from precision_tool.fileio import atomic_write

        path = ensure_output_file(os.path.expanduser(target), folders=Workspace(self.ctx.data_dir).input_folders)
        text = format_report(report)
        try:
            with atomic_write(path, "w") as out:
                out.write(text + "\n")
        except OSError as error:
            raise UsageError(f"{target}: cannot write ({error.strerror or error})") from None
        return f"wrote {text.count(chr(10)) + 1} lines to {path}"

    def _terminal_size(self) -> Tuple[int, int]:
        if self.prompt_session is not None:
            screen = self.prompt_session.output.get_size()
            return screen.columns, screen.rows
        terminal = shutil.get_terminal_size((100, 40))
        return terminal.columns, terminal.lines

    # ------------------------------------------------------------------ the session
    def _build_session(self, history, input=None, output=None) -> PromptSession:
        """The prompt_toolkit session, set up in one place (pgcli's ``_build_cli``); ``input``/``output``
        are for tests (default: the terminal)."""
        from prompt_toolkit import PromptSession
        from prompt_toolkit.auto_suggest import AutoSuggestFromHistory
        from prompt_toolkit.completion import DynamicCompleter, ThreadedCompleter
        from prompt_toolkit.filters import Condition

        return PromptSession(
            message=PROMPT,
            completer=ThreadedCompleter(DynamicCompleter(lambda: self.completer)),
            complete_while_typing=Condition(lambda: self.state.complete_while_typing),
            history=history,
            auto_suggest=AutoSuggestFromHistory(),
            key_bindings=shell_key_bindings(self.state),
            input=input,
            output=output,
        )

    def banner(self) -> str:
        root = os.path.abspath(self.ctx.data_dir)
        where = f"workspace {root}" + ("" if os.path.isdir(root) else " (missing: give -d DIR or $PRECISION_TOOL_DATA)")
        return (f"precision_tool {__version__}: {where}\n"
                "Type 'help' for the commands, Tab to complete, 'exit' or Ctrl-D to leave.")

    def run(self) -> int:
        """The interactive loop; returns the exit status of the shell (0)."""
        prompt_session = self.prompt_session = self._build_session(_open_history())
        print(terminal_safe(self.banner()))
        while True:
            try:
                line = prompt_session.prompt()
            except KeyboardInterrupt:
                continue  # Ctrl-C at the prompt clears the line
            except EOFError:
                break
            try:
                result = self.execute(line)
            except KeyboardInterrupt:
                print("cancelled")
                continue
            if result.text:
                print(result.text)
            if result.leave:
                break
        return EXIT_OK

    def run_script(self, stream) -> int:
        """Run the lines of ``stream`` (stdin that is not a terminal); returns the worst exit code of them all
        (:func:`~precision_tool.errors.worst_exit_code`): a script any line of which failed fails, as a CI step
        must -- a last ``exit`` does not hide it."""
        codes = []
        for line in stream:
            result = self.execute(line)
            if result.text:
                print(result.text, flush=True)
            codes.append(result.exit_code)
            if result.leave:
                break
        return worst_exit_code(codes)


def _open_history():
    from prompt_toolkit.history import FileHistory, InMemoryHistory

    path = history_path()
    try:
        os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
        with open(path, "a", encoding="utf-8"):
            pass
    except OSError as error:
        print(f"note: history not saved ({path}: {error.strerror or error})", file=sys.stderr)
        return InMemoryHistory()
    return FileHistory(path)


def run_shell(ctx: Context) -> int:
    """Entry point used by ``precision_tool`` without a command."""
    shell = Shell(ctx)
    if not sys.stdin.isatty():
        return shell.run_script(sys.stdin)
    _let_ctrl_c_cancel()
    return shell.run()


def _let_ctrl_c_cancel() -> None:
    """Make Ctrl-C raise KeyboardInterrupt, so it cancels the running command (and ``run``'s child process).

    A process started in the background by a non-interactive shell (``cmd &``, some IDEs and CI runners)
    inherits SIGINT *ignored*, and Python then installs no handler: Ctrl-C at our prompt would do nothing.
    The interactive shell owns its terminal, so it takes SIGINT back.
    """
    import signal

    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
