"""The batch CLI: exit codes, one-line errors, and no TensorFlow on the analysis path."""
import json
import os
import subprocess
import sys

import pytest

from precision_tool.cli import main
from precision_tool.commands import build_registry


def test_unknown_command_is_one_line_and_exit_2(capsys):
    assert main(["no_such_command"]) == 2
    err = capsys.readouterr().err
    assert err == "precision_tool: error: unknown command 'no_such_command' (type 'help' for the list of commands)\n"


def test_help_lists_every_registered_command(capsys):
    assert main(["help"]) == 0
    out = capsys.readouterr().out
    for command in build_registry().commands:
        assert command.name in out


def test_json_output(capsys):
    assert main(["--json", "help"]) == 0
    assert json.loads(capsys.readouterr().out)["title"] == "Commands"


@pytest.mark.parametrize("name", [c.name for c in build_registry().commands])
def test_every_command_has_working_dash_h(name, capsys):
    assert main([name, "-h"]) == 0
    assert capsys.readouterr().out.startswith(f"usage: {name}")


def _modules_after(code: str) -> set:
    out = subprocess.run([sys.executable, "-c", code + "\nimport sys, json; print(json.dumps(sorted(sys.modules)))"],
                         capture_output=True, text=True, check=True).stdout
    return set(json.loads(out.splitlines()[-1]))


def test_analysis_path_does_not_import_tensorflow():
    """Polygraphy-style guard: importing every analysis module and listing commands leaves TF out."""
    code = (
        "import pkgutil, importlib, precision_tool\n"
        "for m in pkgutil.walk_packages(precision_tool.__path__, 'precision_tool.'):\n"
        "    if not m.name.startswith(('precision_tool.capture', 'precision_tool.tf_config',\n"
        "                              'precision_tool.__main__')):\n"
        "        importlib.import_module(m.name)\n"
        "from precision_tool.cli import main\n"
        "import contextlib, io\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    main(['help'])\n"
    )
    modules = _modules_after(code)
    assert "precision_tool.formats" in modules
    assert not {m for m in modules if m == "tensorflow" or m.startswith(("tensorflow.", "keras"))}
    assert "precision_tool.comparison.cluster" in modules  # imported, and Dask not with it (issue 43)
    assert not {m for m in modules if m.split(".")[0] in ("dask", "distributed")}


def test_python_dash_m_entry_point():
    result = subprocess.run([sys.executable, "-m", "precision_tool", "--version"], capture_output=True, text=True)
    assert result.returncode == 0 and result.stdout.startswith("precision_tool ")


def test_command_table_matches_what_each_module_declares():
    import importlib

    from precision_tool.commands import COMMAND_TABLE

    for name, (module, aliases) in COMMAND_TABLE.items():
        command = importlib.import_module(f"precision_tool.commands.{module}").COMMAND
        assert (command.name, tuple(command.aliases)) == (name, aliases), module


def test_a_batch_command_loads_only_its_own_module():
    modules = _modules_after("from precision_tool.commands import build_registry\n"
                             "registry = build_registry(only='dump_convert')\n"
                             "assert [c.name for c in registry.commands] == ['dc']\n")
    assert "precision_tool.commands.dump_convert" in modules
    assert "precision_tool.commands.autocheck_command" not in modules and "precision_tool.reports.html" not in modules


def test_no_command_opens_the_shell_on_the_workspace(monkeypatch, tmp_path):
    import precision_tool.shell.app

    opened = []
    monkeypatch.setattr(precision_tool.shell.app, "run_shell", lambda ctx: opened.append(ctx.data_dir) or 0)
    assert main(["-d", str(tmp_path)]) == 0
    assert opened == [str(tmp_path)]


def _run_without(module: str, argv: list) -> subprocess.CompletedProcess:
    """``precision_tool ARGV`` in a fresh interpreter where importing ``module`` fails."""
    code = (f"import sys; sys.modules[{module!r}] = None\n"  # a None entry makes `import module` raise ImportError
            f"from precision_tool.cli import main\nsys.exit(main({argv!r}))\n")
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, stdin=subprocess.DEVNULL)


@pytest.mark.parametrize("module", ["prompt_toolkit", "precision_tool.shell.completer"])
def test_a_shell_that_cannot_be_imported_is_a_traceback_not_the_help_text(module, tmp_path):
    """prompt_toolkit is a hard dependency (setup.cfg): an ImportError behind the shell is a broken install
    or a bug, and must not pass for success by printing the help and exiting 0 (as it once did)."""
    result = _run_without(module, ["-d", str(tmp_path)])
    assert result.returncode == 1 and result.stdout == ""
    assert "Traceback" in result.stderr and result.stderr.rstrip().splitlines()[-1].startswith(
        ("ImportError", "ModuleNotFoundError"))
    assert module in result.stderr


def test_batch_commands_run_without_the_shell_dependencies(tmp_path):
    result = _run_without("prompt_toolkit", ["help"])
    assert result.returncode == 0 and "Commands" in result.stdout, result.stderr


def test_only_the_command_line_freezes_the_objects_for_the_exit(monkeypatch, capsys):
    """The process's own command line skips the exit collection (over TensorFlow's objects a second, over
    numpy's and ours 15 ms); a caller's process (a test, a script calling main(argv)) keeps its garbage collector
    as it was."""
    import gc

    before = gc.get_freeze_count()
    try:
        assert main(["help"]) == 0 and gc.get_freeze_count() == before
        monkeypatch.setattr(sys, "argv", ["precision_tool", "help"])
        assert main() == 0 and gc.get_freeze_count() > before
    finally:
        gc.unfreeze()
    capsys.readouterr()


SAMPLE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "sample_dumps", "cnn_workspace")


@pytest.mark.parametrize("args", [["ls", "-t", "Conv2D"], ["ov"]])
def test_workspace_and_json_given_after_the_command_mean_the_same(args, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # no ./precision_data here: only -d can find the workspace
    before = main(["-d", SAMPLE, "--json", *args]), capsys.readouterr()
    after = main([*args, "-d", SAMPLE, "--json"]), capsys.readouterr()
    glued = main([*args, f"--data-dir={SAMPLE}", "--json"]), capsys.readouterr()
    assert before[0] == after[0] == glued[0] and before[0] in (0, 1)

    def data(out):
        report = json.loads(out)
        report.pop("status", None)  # holds the time taken
        return report
    assert data(before[1].out) == data(after[1].out) == data(glued[1].out)
    assert main(["-d", str(tmp_path), *args, "-d", SAMPLE]) == 2
    assert capsys.readouterr().err == (f"precision_tool: error: two workspaces: -d {tmp_path} before the command and "
                                       f"-d {SAMPLE} after it\n")


def test_options_after_a_double_dash_or_in_another_programs_arguments_are_left_alone(capfd):
    from precision_tool.cli import _global_parser, _lift_global_options

    options = _global_parser().parse_args(["ls", "-n", "conv", "--", "-d", "x", "--json"])
    _lift_global_options(options)
    assert options.args == ["-n", "conv", "--", "-d", "x", "--json"] and options.data_dir is None
    assert not options.json
    assert main(["run", "echo", "-d", "x", "--json"]) == 0  # run's arguments are sh's
    assert capfd.readouterr().out == "-d x --json\n"


def test_a_command_whose_program_follows_a_double_dash_takes_global_options_before_it(tmp_path, capsys):
    """``bisect fusion -d WS -- CMD``: -d is the workspace (it was refused as an unknown argument of bisect); what
    follows ``--`` is the NPU run's, left alone."""
    missing = str(tmp_path / "no-workspace")
    assert main(["bisect", "fusion", "-d", missing, "--", "echo", "-d", "x"]) == 2
    err = capsys.readouterr().err
    assert missing in err and "unrecognized" not in err and err.count("\n") == 1


@pytest.mark.parametrize("typed, suggested", [("vsc", "vcs"), ("comprae", "compare"), ("rport", "report"),
                                              ("xyz", None), ("fusoin", "fusion")])
def test_an_unknown_command_suggests_the_closest(typed, suggested, capsys):
    assert main([typed]) == 2
    hint = f"; did you mean {suggested!r}?" if suggested else ""
    assert capsys.readouterr().err == (f"precision_tool: error: unknown command {typed!r}{hint} (type 'help' for the "
                                       f"list of commands)\n")


def _console(code: str) -> subprocess.CompletedProcess:
    """Run ``code`` (ending in ``cli.console_main()``) in a fresh interpreter, as the console script would."""
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}  # stdout block-buffered, as in a pipe
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, stdin=subprocess.DEVNULL,
                          env=dict(env, PYTHONPATH=repo), timeout=120)


def test_the_console_script_keeps_exit_code_output_and_exit_handlers():
    """console_main ends the process without the interpreter's teardown (os._exit), after what a user could lose:
    standard output flushed (the whole help text, even into a pipe), atexit handlers run, the exit code kept."""
    result = _console("import atexit, sys\nfrom precision_tool import cli\n"
                      "atexit.register(lambda: (sys.stderr.write('handler ran\\n'), print('handler printed')))\n"
                      "sys.stdout.write('unflushed ')\n"
                      "sys.argv = ['precision_tool', 'help']\ncli.console_main()\nprint('never here')")
    assert result.returncode == 0 and result.stdout.startswith("unflushed ") and "Commands" in result.stdout
    assert result.stdout.rstrip().endswith(main_help_tail() + "\nhandler printed") and "never here" not in result.stdout
    assert result.stderr == "handler ran\n"
    failed = _console("import sys\nfrom precision_tool import cli\n"
                      "sys.argv = ['precision_tool', '-d', '/nonexistent/ws', 'ov']\ncli.console_main()")
    assert failed.returncode == 2 and failed.stderr.startswith("precision_tool: error:"), failed.stderr


def test_ctrl_c_while_a_command_loads_is_one_line_and_exit_130():
    """A Ctrl-C while the command's modules are imported (before its own handling is in place) is no traceback."""
    result = _console("import sys\nfrom precision_tool import cli\n"
                      "def loading(*args, **kwargs):\n    raise KeyboardInterrupt\n"
                      "cli.build_registry = loading\n"
                      "sys.argv = ['precision_tool', 'ov']\ncli.console_main()")
    assert (result.returncode, result.stderr) == (130, "precision_tool: interrupted\n")


def main_help_tail() -> str:
    """The last line ``precision_tool help`` prints (run in this process)."""
    import contextlib
    import io

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        main(["help"])
    return out.getvalue().rstrip().splitlines()[-1]


def test_the_console_script_waits_for_a_running_thread():
    """A thread still running when the command ends would be cut off by os._exit: the ordinary exit waits for it."""
    result = _console("import sys, threading, time\nfrom precision_tool import cli\n"
                      "threading.Thread(target=lambda: (time.sleep(0.3), print('thread done', flush=True))).start()\n"
                      "sys.argv = ['precision_tool', 'help']\ncli.console_main()")
    assert result.returncode == 0 and "thread done" in result.stdout


def test_leave_exits_the_ordinary_way_once_tensorflow_is_loaded(monkeypatch):
    import precision_tool.cli as cli

    monkeypatch.setitem(sys.modules, "tensorflow", object())
    monkeypatch.setattr(os, "_exit", lambda code: pytest.fail("os._exit called"))
    with pytest.raises(SystemExit) as raised:
        cli.leave(3)
    assert raised.value.code == 3
