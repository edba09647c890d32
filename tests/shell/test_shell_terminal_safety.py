"""The shell on a hostile workspace (issue 14): what it prints holds no raw terminal control character --
reports, error lines and tracebacks alike -- and ``CMD > FILE`` never writes into a workspace input folder."""
import os

import pytest

from hostile_builders import EVIL, EVIL_SHOWN, listing, write_hostile_workspace
from precision_tool.commands.command_registry import Command, CommandRegistry, Context
from precision_tool.shell.app import Shell

SIZE = (120, 40)


def raw_controls(text: str) -> list:
    return [c for c in text if (ord(c) < 32 and c not in "\n\t") or 127 <= ord(c) < 160]


@pytest.fixture(scope="module")
def workspace(tmp_path_factory):
    return write_hostile_workspace(tmp_path_factory.mktemp("hostile") / "ws")


@pytest.fixture()
def shell(workspace):
    return Shell(Context(data_dir=workspace))


def test_reports_show_names_escaped(shell):
    for line in ("ls -n relu", f"ni '{EVIL}'", f"pt '{EVIL}:output:0'"):
        result = shell.execute(line, SIZE)
        assert result.exit_code == 0 and raw_controls(result.text) == [], line
        assert EVIL_SHOWN in result.text and "Traceback" not in result.text


def test_error_lines_are_escaped(shell, tmp_path):
    result = shell.execute(f"dc '{tmp_path}/no{EVIL}such'", SIZE)
    assert result.exit_code == 2 and "\n" not in result.text and raw_controls(result.text) == []
    assert result.text == f"error: {tmp_path}/no{EVIL_SHOWN}such: no such file or folder"


def test_a_bug_traceback_is_escaped_too(workspace):
    def broken(args, ctx):
        raise RuntimeError(f"bug about {EVIL}")

    registry = CommandRegistry([Command("boom", "raises", lambda parser: None, broken)])
    result = Shell(Context(data_dir=workspace), registry).execute("boom", SIZE)
    assert result.exit_code == 70 and result.text.startswith("internal error (a bug in precision_tool")
    assert raw_controls(result.text) == [] and f"RuntimeError: bug about {EVIL_SHOWN}" in result.text


@pytest.mark.parametrize("inside", [os.path.join("npu", "debug_0", "graph", "ops.txt"),
                                    os.path.join("npu", "debug_0", "dump", "new", "ops.txt"),
                                    os.path.join("tf", "dump", "ops.txt"),
                                    os.path.join("tf", "tf_debug", "ops.txt"),  # missing input folders too
                                    os.path.join("fusion", "ops.txt"),
                                    os.path.join("npu", "debug_3", "graph", "ops.txt")])
def test_redirect_into_a_workspace_input_folder_is_refused(shell, workspace, inside):
    before = listing(workspace)
    target = os.path.join(workspace, inside)
    result = shell.execute(f"ls > {target}", SIZE)
    assert result.exit_code == 2 and "\n" not in result.text and "Traceback" not in result.text
    assert result.text.startswith(f"error: {target}: output folder would be inside the input ")
    assert listing(workspace) == before


def test_redirect_elsewhere_writes_escaped_text(shell, workspace, tmp_path):
    target = tmp_path / "new" / "ops.txt"
    result = shell.execute(f"ls -n relu > {target}", SIZE)
    assert result.exit_code == 0 and result.text.startswith("wrote ")
    written = target.read_text(encoding="utf-8")
    assert EVIL_SHOWN in written and raw_controls(written) == []
    temp = os.path.join(workspace, "temp", "ls.txt")  # the workspace's own output folder is not an input
    assert shell.execute(f"ls > {temp}", SIZE).exit_code == 0 and os.path.isfile(temp)
