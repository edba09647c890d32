"""Counts of a committed sample workspace, taken from its files (not from the tool's comparison of them): what a
test of the sample compares its figures with, so that regenerating the sample does not need new constants."""
from __future__ import annotations

import json
import re
from pathlib import Path

from precision_tool.formats.dump_file import read_dump_header

REPO = Path(__file__).resolve().parents[1]
CNN = REPO / "sample_dumps" / "cnn_workspace"
MOBILENET = REPO / "sample_dumps" / "mobilenet_workspace"
CNN_MODEL = REPO / "sample_dumps" / "models" / "cnn.py"


def dumped_tensors(workspace: Path = CNN, run: int = 0) -> int:
    """Inputs and outputs of every dump file of ``npu/debug_RUN`` (every one is compared)."""
    folder = workspace / "npu" / f"debug_{run}" / "dump"
    return sum(len(header.inputs) + len(header.outputs)
               for header in (read_dump_header(path) for path in sorted(folder.rglob("*.*.*.*.*"))))


def executed_ops(workspace: Path = CNN, run: int = 0) -> int:
    """The ops the emulation executed in ``npu/debug_RUN`` (its manifest)."""
    return json.loads((workspace / "manifest.json").read_text())["runs"][run]["executed_ops"]


def graph_ops(workspace: Path = CNN, run: int = 0) -> int:
    """The ops of the Build graph's text (``op {`` blocks at the graph's top level)."""
    text = (workspace / "npu" / f"debug_{run}" / "graph" / "ge_proto_00000001_Build.txt").read_text()
    return sum(1 for line in text.splitlines() if line.startswith("  op {"))


def dump_files(pattern: str, workspace: Path = CNN, run: int = 0) -> int:
    """Dump files of ``npu/debug_RUN`` whose name matches the glob ``pattern`` (names only: nothing is read)."""
    return sum(1 for path in (workspace / "npu" / f"debug_{run}" / "dump").rglob(pattern) if path.is_file())


def model_layers(*kinds: str, script: Path = CNN_MODEL) -> int:
    """The ``keras.layers.KIND(...)`` layers a sample model's script builds, counted in its text."""
    text = script.read_text()
    return sum(len(re.findall(rf"\bkeras\.layers\.{kind}\(", text)) for kind in kinds)
