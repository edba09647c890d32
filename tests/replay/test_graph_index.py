"""tf/graph/index.json is a hint: when it cannot be read, every *.pb of the folder is the list (issue 14's
campaign found a FIFO there hanging replay, /dev/zero exhausting memory and deep nesting raising RecursionError)."""
import os

import pytest

from precision_tool.replay.reference_graph import graph_files


@pytest.mark.parametrize("make", [
    lambda p: os.mkfifo(str(p)),
    lambda p: os.symlink("/dev/zero", str(p)),
    lambda p: os.symlink(str(p), str(p)),
    lambda p: p.write_text('{"graphs": [{"file": "a.pb", "source": ' + "[" * 100_000 + "]" * 100_000 + "}]}"),
    lambda p: p.write_text('{"graphs": [{"file": "a.pb", "nodes": 1' + "0" * 5_000 + "}]}"),
])
def test_an_unreadable_index_falls_back_to_every_graph_file(tmp_path, make):
    for name in ("graph_r_cpu_10.pb", "graph_r_cpu_2.pb"):
        (tmp_path / name).write_bytes(b"")
    make(tmp_path / "index.json")
    assert graph_files(str(tmp_path)) == [str(tmp_path / "graph_r_cpu_2.pb"), str(tmp_path / "graph_r_cpu_10.pb")]
