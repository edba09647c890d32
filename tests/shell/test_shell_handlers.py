"""The shell without a terminal: ``Shell.execute`` runs a line and returns what would be printed."""
import os

import pytest

from precision_tool.commands.command_registry import Command, CommandRegistry, Context
from precision_tool.reports.report import Report
from precision_tool.shell.app import Shell, history_path

SIZE = (120, 40)


@pytest.fixture()
def shell(inspect_workspace):
    return Shell(Context(data_dir=inspect_workspace))


def test_commands_print_their_report(shell):
    result = shell.execute("ni relu1/Relu", SIZE)
    assert result.text.startswith("relu1/Relu  (type Relu, id 3, graph ge_default_1, npu/debug_0)")
    assert result.exit_code == 0 and not result.leave


def test_slice_syntax_reaches_pt(shell):
    result = shell.execute("pt relu1/Relu:output:0[0, 0, :2]", SIZE)
    assert "relu1/Relu:output:0[0, 0, :2]: float16 [2, 3]" in result.text


def test_user_errors_are_one_line_and_the_shell_stays(shell):
    for line, expected in [("bogus", "error: unknown command 'bogus' (type 'help' for the list of commands)"),
                           ("ls --nope", "error: ls: unrecognized arguments: --nope (see 'ls -h')"),
                           ("ni no/such/op", "error: no op 'no/such/op' in graph ge_default_1 of npu/debug_0 "
                                             "(list ops with 'ls -n PATTERN')"),
                           ("pt 'x", "error: unterminated quote ' in: pt 'x")]:
        result = shell.execute(line, SIZE)
        assert result.text == expected and not result.leave and result.exit_code == 2


def test_exit_quit_and_blank_lines(shell):
    assert shell.execute("exit", SIZE).leave and shell.execute("  quit ", SIZE).leave
    assert shell.execute("", SIZE).text == "" and shell.execute("# a comment", SIZE).text == ""


def test_help_and_help_command(shell):
    assert "ni         node_info" in shell.execute("help", SIZE).text
    assert "exit       quit             Leave the shell (also Ctrl-D)." in shell.execute("help", SIZE).text
    assert shell.execute("help pt", SIZE).text.startswith("usage: pt")


def test_terminal_height_cuts_tables_with_a_note(shell):
    text = shell.execute("ls -n .", (120, 12)).text   # 5 ops, room for the minimum of 10 rows
    assert "more rows not shown" not in text
    rows = 50
    many = Shell(Context(data_dir=shell.ctx.data_dir), registry=_toy_registry(rows=rows))
    text = many.execute("toy", (120, 24)).text
    # 24 lines, 12 of them kept for the title, headers, notes and the prompt: 12 rows shown
    assert f"... {rows - (24 - 12)} more rows not shown" in text and "add '> FILE' to save everything" in text


def test_redirect_writes_everything(shell, tmp_path):
    rows = 50
    many = Shell(shell.ctx, registry=_toy_registry(rows=rows))
    target = tmp_path / "out.txt"
    result = many.execute(f"toy > {target}", (120, 24))
    assert result.text == f"wrote {4 + rows} lines to {target}"  # the title, a blank line, the header and its rule
    assert target.read_text().count("row") == rows


def test_run_executes_a_shell_command(shell, capfd):
    result = shell.execute("run echo hi | tr a-z A-Z", SIZE)
    assert capfd.readouterr().out == "HI\n" and result.exit_code == 0
    assert shell.execute("run exit 3", SIZE).text == "exit status 3"
    assert shell.execute("run", SIZE).text == "error: run what? run CMD, e.g. run ls temp"


def test_a_bug_shows_its_traceback_and_the_shell_stays(inspect_workspace):
    def broken(args, ctx):
        raise ZeroDivisionError("boom")
    registry = CommandRegistry([Command("broken", "raises", lambda p: None, broken)])
    result = Shell(Context(data_dir=inspect_workspace), registry=registry).execute("broken", SIZE)
    assert result.text.startswith("internal error (a bug in precision_tool; please report it):")
    assert "ZeroDivisionError: boom" in result.text and not result.leave


def test_the_terminal_size_reaches_the_handlers(shell):
    shell.execute("ls", (77, 33))
    assert shell.ctx.session.terminal_size == (77, 33) and shell.ctx.interactive


def test_shell_keeps_one_workspace_lookup_per_session(shell):
    shell.execute("ni relu1/Relu", SIZE)
    shell.execute("ls", SIZE)
    assert len(shell.ctx.session.lookups) == 1


def test_run_script_runs_every_line(shell, capsys):
    import io
    code = shell.run_script(io.StringIO("ls -t relu\nbogus\n"))
    out = capsys.readouterr().out
    assert "relu1/Relu" in out and "error: unknown command 'bogus'" in out and code == 2


def test_a_script_exits_with_its_worst_line(shell, capsys):
    """Piped lines end with the worst exit code of them all, so a CI step fails when any line does."""
    import io
    assert shell.run_script(io.StringIO("bogus\nls -t relu\nexit\n")) == 2
    assert shell.run_script(io.StringIO("ls -t relu\nexit\n")) == 0


def test_history_path_follows_xdg():
    assert history_path({"XDG_STATE_HOME": "/s"}) == "/s/precision_tool/history"
    assert history_path({}) == os.path.join(os.path.expanduser("~"), ".local", "state", "precision_tool", "history")


def _toy_registry(rows: int) -> CommandRegistry:
    def handler(args, ctx):
        return Report(title="Toy").add_table(["n", "what"], [[k, "row"] for k in range(rows)])
    return CommandRegistry([Command("toy", "a long table", lambda parser: None, handler)])


def test_session_is_built_like_pgcli(shell):
    from prompt_toolkit.auto_suggest import AutoSuggestFromHistory
    from prompt_toolkit.completion import ThreadedCompleter
    from prompt_toolkit.history import InMemoryHistory
    from prompt_toolkit.input import create_pipe_input
    from prompt_toolkit.output import DummyOutput

    history = InMemoryHistory()
    with create_pipe_input() as pipe:
        session = shell._build_session(history, input=pipe, output=DummyOutput())
        assert isinstance(session.completer, ThreadedCompleter)
        assert isinstance(session.auto_suggest, AutoSuggestFromHistory) and session.history is history
        assert session.message == "PrecisionTool > "
        pipe.send_text("ni relu1/Relu\r")
        assert session.prompt() == "ni relu1/Relu"


def test_banner_names_the_workspace(tmp_path):
    missing = Shell(Context(data_dir=str(tmp_path / "nope"))).banner()
    assert f"workspace {tmp_path / 'nope'} (missing: give -d DIR or $PRECISION_TOOL_DATA)" in missing
