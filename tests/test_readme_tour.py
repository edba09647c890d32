"""The README's short tour runs verbatim: every command line of its code block, from a fresh clone of this
checkout, in order, exits 0 or 1 with no traceback (issue 18). And where no workspace exists, the commands that
need one exit 2 with one line."""
from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import List, Tuple

import pytest

REPO = Path(__file__).resolve().parent.parent
BIN = os.path.dirname(sys.executable)


def tour_lines(readme: str) -> List[str]:
    """The command lines of the first ``sh`` block after "## A short tour", comments dropped."""
    section = readme[readme.index("## A short tour"):]
    block = re.search(r"```sh\n(.*?)```", section, re.S)
    assert block, "the tour has no ```sh block"
    lines = []
    for line in block.group(1).splitlines():
        words = shlex.split(line, comments=True)
        if words:
            lines.append(shlex.join(words) if hasattr(shlex, "join") else " ".join(map(shlex.quote, words)))
    return lines


def _run(command: str, cwd: Path, env: dict) -> Tuple[int, str]:
    done = subprocess.run(["bash", "-c", command], cwd=str(cwd), env=env, stdin=subprocess.DEVNULL,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=600)
    return done.returncode, done.stdout.decode(errors="replace")


@pytest.fixture(scope="module")
def clone(tmp_path_factory):
    if shutil.which("git") is None or not (REPO / ".git").exists():
        pytest.skip("needs git and a git checkout to clone")
    target = tmp_path_factory.mktemp("tour") / "precision_tool"
    subprocess.run(["git", "clone", "-q", str(REPO), str(target)], check=True)
    return target


def _tour_env() -> dict:
    env = dict(os.environ)
    env["PATH"] = BIN + os.pathsep + env.get("PATH", "")  # what ". .venv/bin/activate" gives
    env.pop("PRECISION_TOOL_DATA", None)
    env["COLUMNS"] = "120"
    return env


@pytest.mark.tf  # the tour replays ops and emulates a model: TensorFlow
def test_every_tour_line_runs_from_a_fresh_clone(clone):
    lines = tour_lines((clone / "README.md").read_text())
    assert any(line.startswith("precision_tool ac") for line in lines) and len(lines) >= 10
    env = _tour_env()
    ran = []
    for line in lines:
        if line.startswith(". ") or line.startswith("source "):
            continue  # the venv: PATH above
        if line.startswith("export "):
            name, _, value = line[len("export "):].partition("=")
            env[name] = value
            continue
        assert line.startswith("precision_tool"), f"a tour line that is not a precision_tool command: {line}"
        code, output = _run(line, clone, env)
        assert code in (0, 1), f"{line!r} exited {code}:\n{output[-2000:]}"
        assert "Traceback" not in output, f"{line!r} printed a traceback:\n{output[-3000:]}"
        ran.append(line)
    assert (clone / "out" / "report.html").is_file() and (clone / "out" / "ws" / "manifest.json").is_file()
    status = subprocess.run(["git", "status", "--porcelain"], cwd=str(clone), stdout=subprocess.PIPE, check=True)
    assert status.stdout.decode() == "", "the tour wrote into the checkout outside out/:\n" + status.stdout.decode()
    assert len(ran) >= 10


@pytest.mark.parametrize("command", ["ac", "ac -c", "ov", "fusion", "vcs", "ni conv1", "pt conv1:output:0", "ls",
                                     "compare", "vc", "report", "replay conv1", "tf_dump --list", "ls -r 3",
                                     "ov -d nowhere", "fusion -d nowhere", "dc nowhere", "emulate nowhere.py",
                                     "cp a b", "report -f nowhere"])
def test_without_a_workspace_every_command_exits_2_with_one_line(tmp_path, command):
    env = _tour_env()
    done = subprocess.run([sys.executable, "-m", "precision_tool", *command.split()], cwd=str(tmp_path), env=env,
                          stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120)
    errors = done.stderr.decode().strip().splitlines()
    assert done.returncode == 2, (command, done.stdout.decode()[-500:], errors)
    assert len(errors) == 1 and errors[0].startswith("precision_tool: error: "), errors
    assert "Traceback" not in done.stderr.decode()
    assert not os.listdir(str(tmp_path)), "nothing is written where there is no workspace"
