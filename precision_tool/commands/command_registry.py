"""One command registry for the batch CLI and the interactive shell.

A :class:`Command` is a name, aliases, a summary, a parser builder and a handler ``(args, ctx) -> Report``; the
registry checks them when registered (tfdbg's ``CommandHandlerRegistry``) and turns argparse's exits into
:class:`~precision_tool.errors.UsageError` or a help report. It also owns ``--step``/``--device``: a handler runs with
the selection in :attr:`Context.selection`, and its report gets the ``NPU dumps:`` line of each tree it read.
See docs/internals/commands.md#registry.
"""
from __future__ import annotations

import argparse
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable, Dict, Iterable, List, Optional, Sequence, Tuple

from precision_tool.commands.options import EVERY_STEP, NO_DUMPS, ONE_STEP, add_dump_selection_options
from precision_tool.errors import UsageError
from precision_tool.formats.dump_tree import DumpSelection
from precision_tool.reports.report import Report

if TYPE_CHECKING:  # the lookup module reads graphs and dumps; the registry must stay cheap to import
    from precision_tool.alignment.workspace_lookup import WorkspaceLookup


class _HelpShown(Exception):
    def __init__(self, text: str):
        super().__init__(text)
        self.text = text


class CommandParser(argparse.ArgumentParser):
    """An ArgumentParser that raises instead of printing and exiting. ``unrecognized_hint``, when a command sets
    it, turns the arguments argparse did not recognise into a better hint than ``see 'CMD -h'`` (or None)."""

    unrecognized_hint: Optional[Callable[[List[str]], Optional[str]]] = None

    def error(self, message):
        prefix = "unrecognized arguments: "
        hint = None
        if message.startswith(prefix) and self.unrecognized_hint is not None:
            hint = self.unrecognized_hint(message[len(prefix):].split())
        raise UsageError(f"{self.prog}: {message}", hint or f"see '{self.prog} -h'")

    def exit(self, status=0, message=None):
        if status:
            raise UsageError(f"{self.prog}: {message or 'bad arguments'}", f"see '{self.prog} -h'")
        raise _HelpShown(message or "")

    def print_help(self, file=None):
        raise _HelpShown(self.format_help())


@dataclass
class Session:
    """The state that outlives one command, so the shell can keep it between lines; mutable on purpose.

    A batch run makes one :class:`Context`, hence one fresh ``Session``, per command; the shell keeps its
    context, hence its ``Session``, for the whole session. Handlers read it; only its owners write it:

    - ``terminal_size``: ``(columns, lines)`` of the terminal the shell is drawing in, set before each line
      (:meth:`precision_tool.shell.app.Shell.execute`); ``None`` outside the shell, where
      :func:`precision_tool.commands.terminal_text.terminal_size` asks the terminal itself.
    - ``lookups``: one :class:`~precision_tool.alignment.workspace_lookup.WorkspaceLookup` per
      ``(absolute workspace folder, NPU run)``, so graphs and dump scans are parsed once per session
      (:func:`precision_tool.commands.lookups.lookup_for` fills it).
    """

    terminal_size: Optional[Tuple[int, int]] = None
    lookups: Dict[Tuple[str, int], "WorkspaceLookup"] = field(default_factory=dict)


@dataclass(frozen=True)
class Context:
    """What a handler may use besides its arguments: the workspace folder, whether a person is typing
    (``interactive``: the shell, or ``ac`` run from a terminal), the :class:`Session` state, and the dump step and
    device asked for (``selection``: the global ``--step``/``--device``; within a handler, its own over them, with
    the log that collects what each scan chose).

    The context itself never changes; what does change between commands lives in ``session``, which
    ``dataclasses.replace`` shares (the shell's ``replace(ctx, interactive=True)`` keeps the caller's
    session). Two contexts are equal when folder and mode are; their sessions are not compared.
    """

    data_dir: str
    interactive: bool = False
    session: Session = field(default_factory=Session, compare=False, hash=False)
    selection: DumpSelection = DumpSelection()


Handler = Callable[[argparse.Namespace, Context], Report]
DUMPS_VALUES = (NO_DUMPS, ONE_STEP, EVERY_STEP)


@dataclass(frozen=True)
class Command:
    """One command. ``dumps``: whether it reads NPU dumps -- ``""`` no, ``"one"`` one step of one device
    (``--step N --device N``), ``"every"`` also every step or device (``compare --steps all``, ``--device all``);
    the constants of :mod:`~precision_tool.commands.options`."""

    name: str
    summary: str
    add_arguments: Callable[[argparse.ArgumentParser], None]
    handler: Handler
    aliases: Tuple[str, ...] = ()
    epilog: str = ""
    dumps: str = ""

    def build_parser(self) -> CommandParser:
        parser = CommandParser(prog=self.name, description=self.summary, epilog=self.epilog or None,
                               formatter_class=argparse.RawDescriptionHelpFormatter)
        self.add_arguments(parser)
        if self.dumps:
            add_dump_selection_options(parser, every=self.dumps == EVERY_STEP)
        return parser


class CommandRegistry:
    """Commands by name and alias, with ``help`` built in."""

    def __init__(self, commands: Iterable[Command] = ()):
        self._commands: Dict[str, Command] = {}
        self._aliases: Dict[str, str] = {}
        self.extra_help_rows: List[Tuple[str, str, str]] = []  # (word, aliases, what it does): the shell's own words
        for command in commands:
            self.register(command)

    def register(self, command: Command) -> None:
        """Add ``command``; ``ValueError`` for an empty or clashing name/alias or a bad handler."""
        names = [command.name, *command.aliases]
        for name in names:
            if not name or not name.strip() or any(c.isspace() for c in name):
                raise ValueError(f"command name or alias {name!r} is empty or has white space")
            if name in self._aliases or name == "help":
                raise ValueError(f"command name or alias {name!r} clashes with existing names or aliases")
        if len(set(names)) != len(names):
            raise ValueError(f"command {command.name!r} repeats a name among its aliases")
        if not callable(command.handler) or not callable(command.add_arguments):
            raise ValueError(f"command {command.name!r}: handler and add_arguments must be callable")
        if command.dumps not in DUMPS_VALUES:
            raise ValueError(f"command {command.name!r}: dumps must be one of {DUMPS_VALUES}, not {command.dumps!r}")
        self._commands[command.name] = command
        for name in names:
            self._aliases[name] = command.name

    def resolve(self, name: str) -> Command:
        try:
            return self._commands[self._aliases[name]]
        except KeyError:
            raise UsageError(f"unknown command {name!r}{did_you_mean(name, self.names())}",
                             "type 'help' for the list of commands") from None

    @property
    def commands(self) -> List[Command]:
        return sorted(self._commands.values(), key=lambda c: c.name)

    def names(self) -> List[str]:
        """Every name and alias, for completion."""
        return sorted([*self._aliases, "help"])

    def help_report(self, name: str | None = None) -> Report:
        if name:
            return Report(blocks=[], status="").add_text(self.resolve(name).build_parser().format_help().rstrip())
        rows = [(c.name, ", ".join(c.aliases), c.summary) for c in self.commands]
        rows.append(("help", "", "List commands, or show one command's help: help COMMAND."))
        rows += self.extra_help_rows
        return Report(title="Commands").add_table(["command", "aliases", "what it does"], rows)

    def dispatch(self, argv: Sequence[str], ctx: Context) -> Report:
        """Run ``argv[0]`` with the rest as its arguments and return its report."""
        if not argv:
            raise UsageError("no command given", "type 'help' for the list of commands")
        name, rest = argv[0], list(argv[1:])
        if name == "help":
            if len(rest) > 1:
                raise UsageError("help takes at most one command name")
            return self.help_report(rest[0] if rest else None)
        command = self.resolve(name)
        parser = command.build_parser()
        try:
            args = parser.parse_args(rest)
        except _HelpShown as shown:
            return Report().add_text(shown.text.rstrip())
        return self._run(command, args, ctx)

    @staticmethod
    def _run(command: Command, args: argparse.Namespace, ctx: Context) -> Report:
        """The handler, reading the step and device asked for; its report with the ``NPU dumps:`` lines."""
        from dataclasses import replace

        from precision_tool.commands.options import dump_selection
        from precision_tool.formats.dump_tree import ChoiceLog
        from precision_tool.reports.dump_choice import add_dump_choices

        log = ChoiceLog()
        selection = replace(dump_selection(args, ctx.selection), log=log)
        report = command.handler(args, replace(ctx, selection=selection))
        if not isinstance(report, Report):
            raise TypeError(f"handler of {command.name!r} returned {type(report).__name__}, not Report")
        return add_dump_choices(report, log.choices)


def did_you_mean(word: str, choices: Sequence[str]) -> str:
    """``"; did you mean 'vcs'?"`` for the closest of ``choices`` -- the same letters in another order first (``vsc``
    is a slip for ``vcs``, not for ``vc``), else ``difflib``'s closest at a ratio of at least 0.6 -- or ``""``."""
    import difflib

    close = [choice for choice in choices if len(word) > 1 and sorted(choice) == sorted(word)][:1]
    close = close or difflib.get_close_matches(word, choices, n=1, cutoff=0.6)
    return f"; did you mean {close[0]!r}?" if close else ""
