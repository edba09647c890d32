"""The real shell in a pseudo-terminal (pexpect): what a user types, what they see.

``python -m precision_tool -d WORKSPACE`` runs with a fixed 40x160 xterm, HOME and XDG_STATE_HOME under
tmp_path (the history file), and prompt_toolkit's cursor-position requests off (pexpect does not answer
them). Each step waits for its output and then for the next prompt.
"""
import os
import shutil
import sys
import time
from pathlib import Path

import pexpect
import pytest

from precision_tool.commands import build_registry

PROMPT = "PrecisionTool >"
REPO = Path(__file__).resolve().parent.parent.parent
SAMPLE = REPO / "sample_dumps" / "cnn_workspace"
PLANTED = "small_cnn_1/res_conv_1/convolution"


class ShellSession:
    """One shell process; ``run(line, *expected)`` types a line and waits for each expected text in order."""

    def __init__(self, workspace, home: Path, cwd=None):
        env = dict(os.environ, TERM="xterm", HOME=str(home), XDG_STATE_HOME=str(home / "state"),
                   PROMPT_TOOLKIT_NO_CPR="1", COLUMNS="160", LINES="40")
        env.pop("PRECISION_TOOL_DATA", None)
        started = time.perf_counter()
        self.child = pexpect.spawn(sys.executable, ["-m", "precision_tool", "-d", str(workspace)], env=env,
                                   cwd=str(cwd or home), dimensions=(40, 160), encoding="utf-8", timeout=20)
        self.child.expect_exact(PROMPT)
        self.startup_seconds = time.perf_counter() - started

    def type(self, keys: str, shown: str) -> None:
        """Type ``keys`` without Enter; wait until the line shows ``shown``."""
        self.child.send(keys)
        self.child.expect_exact(shown)

    def recall_previous_line(self, line: str, attempts: int = 10) -> None:
        """Press Up until ``line`` is shown: prompt_toolkit loads the history file in a thread, and an Up
        pressed before it is loaded does nothing (pressing again is harmless: ``line`` is the oldest entry)."""
        for _ in range(attempts):
            self.child.send("\x1b[A")
            if self.child.expect_exact([line, pexpect.TIMEOUT], timeout=2) == 0:
                return
        raise AssertionError(f"Up never recalled {line!r}")

    def run(self, line: str, *expected: str) -> str:
        self.child.sendline(line)
        for text in expected:
            self.child.expect_exact(text)
        self.child.expect_exact(PROMPT)
        return self.child.before

    def close(self):
        if self.child.isalive():
            self.child.terminate(force=True)


@pytest.fixture()
def home(tmp_path):
    path = tmp_path / "home"
    path.mkdir()
    return path


def test_a_session(inspect_workspace, home):
    shell = ShellSession(inspect_workspace, home)
    try:
        shell.run("ls", "5 ops of graph ge_default_1", "Conv2D")
        shell.run("ni out/Add", "out/Add  (type Add, id 4", "Kernel:          te_add_123")
        shell.run("pt relu1/Relu:output:0[0, 0, :2]", "relu1/Relu:output:0[0, 0, :2]: float16 [2, 3]")
        shell.run("cp out/Add:output:0 out/Add:0 -p 2 -al 1e-3 -rl 1e-3", "Largest 2 absolute errors", "failed")
        shell.run("bogus", "error: unknown command 'bogus' (type 'help' for the list of commands)")
        shell.run("ni -s", "error: ni: argument -s/--subgraph: expected one argument")
        # Tab completes the op name: the command only succeeds with the full name. The completer runs in a
        # thread, so wait until the completed text is drawn before pressing Enter (it would run "ni relu1/R").
        shell.type("ni relu1/R", shown="relu1/R")
        shell.type("\t", shown="elu")  # only the completion can draw "elu" now: "relu1/R" was read above
        shell.run("", "relu1/Relu  (type Relu, id 3")
        shell.run("help", "Commands", "ni         node_info")
        shell.run("run echo hi the''re", "hi there")  # quotes keep the echo of the typed line from matching
        # Ctrl-C cancels the running command, not the shell
        # Interrupt once the command's own output is seen: "sleeping" comes from printf, so sh runs and the
        # shell waits on it (the typed line echoes 'sleep%s\\n' ing, which does not match). No sleep: a
        # SIGINT any time after this reaches sh, its child and the shell alike (one foreground group).
        shell.child.sendline("run printf 'sleep%s\\n' ing; sleep 30")
        shell.child.expect_exact("sleeping")
        shell.child.sendintr()
        shell.child.expect_exact("cancelled")
        shell.child.expect_exact(PROMPT)
        # Ctrl-C at the prompt clears the line
        shell.child.send("ls -n half-typed")
        shell.child.sendintr()
        shell.run("ls -t relu", "1 of 5 ops", "relu1/Relu")
        shell.child.sendline("exit")
        shell.child.expect(pexpect.EOF)
        shell.child.close()
        assert shell.child.exitstatus == 0
    finally:
        shell.close()
    history = (home / "state" / "precision_tool" / "history").read_text()
    assert "+ni out/Add\n" in history and "+ls -t relu\n" in history
    print(f"\nshell ready in {shell.startup_seconds:.2f} s")


def test_history_is_kept_across_sessions_and_ctrl_d_leaves(inspect_workspace, home):
    first = ShellSession(inspect_workspace, home)
    try:
        first.run("ni relu1/Relu", "relu1/Relu  (type Relu")
        first.child.sendcontrol("d")
        first.child.expect(pexpect.EOF)
    finally:
        first.close()
    second = ShellSession(inspect_workspace, home)
    try:
        second.recall_previous_line("ni relu1/Relu")  # Up: the last command of the previous session
        second.run("", "relu1/Relu  (type Relu")
        second.child.sendcontrol("d")
        second.child.expect(pexpect.EOF)
    finally:
        second.close()


@pytest.mark.skipif(not SAMPLE.is_dir(), reason="sample_dumps/cnn_workspace not generated")
def test_sample_workspace_finds_the_planted_op(tmp_path, home):
    workspace = tmp_path / "cnn_workspace"
    shutil.copytree(SAMPLE, workspace)  # commands write into WORKSPACE/temp
    shell = ShellSession(workspace, home, cwd=workspace)
    try:
        names = build_registry().names()
        if "ac" in names:
            shell.run("ac -c")
        shell.run("vc -lt npu/debug_0/dump -rt tf/dump -g npu/debug_0/graph", "result_")
        shell.run("vcs -c 0.98 -l 10", f"{PLANTED}:output:0")
        shell.run(f"ni {PLANTED}", "Comparison result", f"{PLANTED}:output:0", "fail")
        shell.run(f"pt {PLANTED}:output:0[0, 0, 0, :4]", f"{PLANTED}:output:0[0, 0, 0, :4]: float16 [4]")
        shell.child.sendline("quit")
        shell.child.expect(pexpect.EOF)
    finally:
        shell.close()
