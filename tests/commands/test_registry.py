"""The command registry, tested with toy handlers (no workspace, no UI)."""
import pytest

from precision_tool.commands.command_registry import Command, CommandRegistry, Context
from precision_tool.errors import UsageError
from precision_tool.reports.report import Report

CTX = Context(data_dir="/nonexistent")


def _echo_args(parser):
    parser.add_argument("words", nargs="*")
    parser.add_argument("-n", "--count", type=int, default=1)


def _echo(args, ctx):
    return Report(title="echo").add_text(" ".join(args.words) * args.count)


ECHO = Command("echo", "Repeat words.", _echo_args, _echo, aliases=("e",))


def test_dispatch_by_name_and_alias():
    registry = CommandRegistry([ECHO])
    assert registry.dispatch(["echo", "hi", "-n", "2"], CTX).blocks[0].lines == ["hihi"]
    assert registry.dispatch(["e", "yo"], CTX).blocks[0].lines == ["yo"]


@pytest.mark.parametrize("clash", [
    Command("echo", "dup", _echo_args, _echo),
    Command("other", "alias clash", _echo_args, _echo, aliases=("e",)),
    Command("e", "name clashes with alias", _echo_args, _echo),
    Command("help", "help is built in", _echo_args, _echo),
])
def test_register_rejects_clashes(clash):
    registry = CommandRegistry([ECHO])
    with pytest.raises(ValueError, match="clashes with existing names or aliases"):
        registry.register(clash)


def test_register_rejects_bad_names_and_handlers():
    registry = CommandRegistry()
    with pytest.raises(ValueError, match="empty or has white space"):
        registry.register(Command("two words", "x", _echo_args, _echo))
    with pytest.raises(ValueError, match="must be callable"):
        registry.register(Command("bad", "x", _echo_args, "not callable"))
    with pytest.raises(ValueError, match="repeats a name"):
        registry.register(Command("rep", "x", _echo_args, _echo, aliases=("rep",)))


def test_bad_flag_is_a_usage_error_not_an_exit():
    registry = CommandRegistry([ECHO])
    with pytest.raises(UsageError, match=r"echo: argument -n/--count: invalid int value: 'x' \(see 'echo -h'\)"):
        registry.dispatch(["echo", "-n", "x"], CTX)
    with pytest.raises(UsageError, match="unrecognized arguments: --bogus"):
        registry.dispatch(["echo", "--bogus"], CTX)


def test_dash_h_returns_the_parsers_help():
    registry = CommandRegistry([ECHO])
    report = registry.dispatch(["echo", "-h"], CTX)
    text = "\n".join(report.blocks[0].lines)
    assert text.startswith("usage: echo")
    assert "Repeat words." in text and "--count" in text


def test_help_lists_commands_and_shows_one():
    registry = CommandRegistry([ECHO])
    listing = registry.dispatch(["help"], CTX).blocks[0]
    assert [row[0] for row in listing.rows] == ["echo", "help"]
    assert listing.rows[0][1] == "e"
    one = registry.dispatch(["help", "e"], CTX).blocks[0].lines[0]
    assert one.startswith("usage: echo")


def test_unknown_and_empty_commands():
    registry = CommandRegistry([ECHO])
    with pytest.raises(UsageError, match="unknown command 'ech'"):
        registry.dispatch(["ech"], CTX)
    with pytest.raises(UsageError, match="no command given"):
        registry.dispatch([], CTX)


def test_handler_must_return_a_report():
    registry = CommandRegistry([Command("bad", "returns text", _echo_args, lambda a, c: "text")])
    with pytest.raises(TypeError, match="returned str, not Report"):
        registry.dispatch(["bad"], CTX)


def test_names_for_completion_include_aliases_and_help():
    assert CommandRegistry([ECHO]).names() == ["e", "echo", "help"]
