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
    paths, problem = graph_files(str(tmp_path))
    assert paths == [str(tmp_path / "graph_r_cpu_2.pb"), str(tmp_path / "graph_r_cpu_10.pb")]
    assert problem.startswith(str(tmp_path / "index.json")) and problem.endswith("graphs of other runs too")


def test_a_readable_index_is_no_problem_and_an_absent_one_neither(tmp_path):
    (tmp_path / "graph_r_cpu_3.pb").write_bytes(b"")
    assert graph_files(str(tmp_path)) == ([str(tmp_path / "graph_r_cpu_3.pb")], "")
    (tmp_path / "index.json").write_text('{"graphs": [{"file": "graph_r_cpu_3.pb"}]}')
    assert graph_files(str(tmp_path)) == ([str(tmp_path / "graph_r_cpu_3.pb")], "")


def test_a_name_with_a_5000_digit_run_sorts_as_a_large_number():
    """The campaign's index naming graph_reference_cpu_888...8 (5,000 digits) raised int()'s ValueError."""
    from precision_tool.formats.tf_graph import natural_key

    names = ["graph_r_cpu_" + "8" * 5000 + ".pb", "graph_r_cpu_10.pb", "graph_r_cpu_2.pb", "graph_r_cpu_0010x.pb"]
    assert sorted(names, key=natural_key) == [names[2], names[1], names[3], names[0]]


def test_an_index_naming_a_file_longer_than_any_file_name_is_unreadable(tmp_path):
    (tmp_path / "graph_r_cpu_1.pb").write_bytes(b"")
    (tmp_path / "index.json").write_text('{"graphs": [{"file": "graph_%s.pb"}]}' % ("8" * 5000))
    paths, problem = graph_files(str(tmp_path))
    assert paths == [str(tmp_path / "graph_r_cpu_1.pb")]
    assert problem.startswith(f"{tmp_path / 'index.json'}: lists a file name of 5009 bytes") and len(problem) < 400
