"""Regenerate the pictures of docs/user-guide.md from sample_dumps/cnn_workspace.

    .venv/bin/python docs/make_screenshots.py

Needs Chromium (apt-get install chromium) and tmux. The sample is copied to /tmp/cnn_workspace first, as the
guide does (``ac -c`` writes its results into the workspace's ``temp/``), so nothing is written into
sample_dumps/; a /tmp/cnn_workspace this script did not make is left alone. Writes
docs/images/report.png (the top of the HTML report), docs/images/accuracy_plot.png (``report --plots``) and
docs/images/shell.png (the interactive shell in tmux: ``vcs -c 0.98 -l 10`` then ``ni OP``).
"""
from __future__ import annotations

import html
import os
import shutil
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
IMAGES = os.path.join(REPO, "docs", "images")
TOOL = os.path.join(REPO, ".venv", "bin", "precision_tool")
OP = "small_cnn_1/res_conv_1/convolution"
SHELL_WIDTH = 190
WORKSPACE = "/tmp/cnn_workspace"
MARKER = ".made_by_make_screenshots"


def run(*argv: str) -> str:
    done = subprocess.run([TOOL, *argv], capture_output=True, text=True)
    if done.returncode not in (0, 1):
        sys.exit(f"{' '.join(argv)} failed: {done.stderr}")
    return done.stdout


def shell_transcript(workspace: str) -> str:
    """The shell's screen after two commands, captured from tmux."""
    session = f"precision-tool-docs-{os.getpid()}"
    subprocess.run(["tmux", "new-session", "-d", "-s", session, "-x", str(SHELL_WIDTH), "-y", "80",
                    f"{TOOL} -d {workspace}"], check=True)
    try:
        time.sleep(3)
        for line in ("vcs -c 0.98 -l 10", f"ni {OP}"):
            subprocess.run(["tmux", "send-keys", "-t", session, line, "Enter"], check=True)
            time.sleep(2)
        screen = subprocess.run(["tmux", "capture-pane", "-p", "-t", session, "-S", "-200"], check=True,
                                capture_output=True, text=True).stdout
    finally:
        subprocess.run(["tmux", "kill-session", "-t", session])
    return screen.rstrip() + "\n"


def terminal_page(transcript: str, path: str) -> int:
    """``transcript`` as a dark terminal-looking HTML page; returns its number of lines."""
    body = html.escape(transcript)
    page = ("<!DOCTYPE html><meta charset='utf-8'><style>body{margin:0;background:#0f172a}"
            "pre{margin:0;padding:14px 18px;color:#e2e8f0;font:13px/17px 'DejaVu Sans Mono',monospace}"
            "</style><pre>" + body + "</pre>")
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(page)
    return transcript.count("\n")


def main() -> None:
    sys.path.insert(0, REPO)
    from precision_tool.reports.html.browser import file_url, find_chromium, screenshot

    if find_chromium() is None or shutil.which("tmux") is None:
        sys.exit("needs chromium and tmux (apt-get install chromium tmux)")
    os.makedirs(IMAGES, exist_ok=True)
    workspace = WORKSPACE
    if os.path.exists(workspace):
        if not os.path.exists(os.path.join(workspace, MARKER)):
            sys.exit(f"{workspace} exists and is not this script's copy: move it away first")
        shutil.rmtree(workspace)
    shutil.copytree(os.path.join(REPO, "sample_dumps", "cnn_workspace"), workspace)
    open(os.path.join(workspace, MARKER), "w").close()
    with tempfile.TemporaryDirectory() as scratch:
        run("-d", workspace, "ac", "-c")
        page, plots = os.path.join(scratch, "report.html"), os.path.join(scratch, "plots")
        run("-d", workspace, "report", "-o", page, "--plots", plots)
        screenshot(file_url(page), os.path.join(IMAGES, "report.png"), 1280, 1500)
        shutil.copy(os.path.join(plots, "accuracy_plot.png"), os.path.join(IMAGES, "accuracy_plot.png"))
        transcript = shell_transcript(workspace)
        terminal = os.path.join(scratch, "shell.html")
        lines = terminal_page(transcript, terminal)
        screenshot(file_url(terminal), os.path.join(IMAGES, "shell.png"), SHELL_WIDTH * 8 + 40, lines * 17 + 30)
    for name in ("report.png", "accuracy_plot.png", "shell.png"):
        print(f"{os.path.join(IMAGES, name)}: {os.path.getsize(os.path.join(IMAGES, name)) // 1024} KB")


if __name__ == "__main__":
    main()
