"""Which Build graph a ``DUMP_GRAPH_PATH`` folder gives: flat (CANN <= 7.0), ``{pid}_{device}/`` (CANN 8.0) and
``pid_{pid}_deviceid_{device}/`` (CANN 8.5+), chosen by the dump's device, then by write time, with a note.

Every tree is built by hand here, and each expected choice is worked out in the test from the rule of
:mod:`precision_tool.formats.ge_graph_folders` (device first, then the newest; one note when not clear-cut).
"""
import errno
import os
import shutil
from pathlib import Path

import pytest

from precision_tool.errors import WorkspaceError
from precision_tool.formats import ge_graph_folders
from precision_tool.formats.ge_graph import Graph, GraphModel, OpNode
from precision_tool.formats.ge_graph_folders import (FOLDER_FORMS, choose_build_graph, dump_device_id, dump_device_ids,
                                                     scan_graph_folders)
from precision_tool.formats.ge_io import build_graph_files, find_build_graph, ge_graph_to_text, read_ge_graph

pytestmark = pytest.mark.compat

REAL_GRAPHS = Path(__file__).resolve().parents[3] / "shared" / "real-world" / "graph"


def _build(folder, index=1, graph_name="g", mtime=1000):
    """``folder/ge_proto_{index:08d}_Build.txt`` holding one graph called ``graph_name``, written at ``mtime``."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"ge_proto_{index:08d}_Build.txt"
    path.write_text(ge_graph_to_text(GraphModel((Graph(graph_name, (OpNode("x", "Data"),)),), name=graph_name)))
    os.utime(path, (mtime, mtime))
    return path


# ------------------------------------------------------------------------------------------ layouts
def test_a_flat_folder_is_read_as_before_without_a_note(tmp_path):
    _build(tmp_path, 9, mtime=1000)
    newest = _build(tmp_path, 2, mtime=2000)  # a later run restarted the index
    choice = choose_build_graph(tmp_path)
    assert choice.path == newest == find_build_graph(tmp_path)
    assert choice.folder.is_flat and choice.notes == () and choice.others == ()
    assert choose_build_graph(tmp_path, device_id=3).notes == ()  # a device means nothing to a flat folder


def test_a_folder_given_as_a_relative_path_with_a_leading_dot_is_read(tmp_path, monkeypatch):
    """``precision_tool -d . ac`` ended in a KeyError: the found paths had lost their ``./``, the names had not."""
    _build(tmp_path / "graph", 1, mtime=1000)
    monkeypatch.chdir(tmp_path)
    assert os.fspath(choose_build_graph("./graph").path) == os.path.join("graph", "ge_proto_00000001_Build.txt")


@pytest.mark.parametrize("name, pid, device", [("pid_1234_deviceid_0", 1234, 0),   # CANN 8.5+ and current code
                                               ("1234_0", 1234, 0),                # CANN 8.0.RC1 / 8.0.0
                                               ("pid_77_deviceid_12", 77, 12)])
def test_one_per_process_folder_of_either_spelling_is_used(tmp_path, name, pid, device):
    path = _build(tmp_path / name)
    choice = choose_build_graph(tmp_path)
    assert (choice.path, choice.folder.pid, choice.folder.device_id) == (path, pid, device)
    assert choice.notes == ()
    assert choose_build_graph(tmp_path, device_id=device).notes == ()


def test_the_dump_device_picks_the_folder_even_when_another_is_newer(tmp_path):
    old = _build(tmp_path / "pid_101_deviceid_1", graph_name="dev1", mtime=1000)
    new = _build(tmp_path / "pid_100_deviceid_0", graph_name="dev0", mtime=2000)
    assert choose_build_graph(tmp_path, device_id=1).path == old
    assert choose_build_graph(tmp_path, device_id=1).notes == ()  # the device made it clear-cut
    assert choose_build_graph(tmp_path, device_id=0).path == new


def test_without_the_device_the_newest_folder_is_used_and_the_note_names_the_others(tmp_path):
    _build(tmp_path / "pid_101_deviceid_1", mtime=1000)
    new = _build(tmp_path / "pid_100_deviceid_0", mtime=2000)
    choice = choose_build_graph(tmp_path)
    assert choice.path == new
    assert choice.notes == (f"Build graph of {tmp_path}: used pid_100_deviceid_0 (the newest of 2 folders); "
                            "also there: pid_101_deviceid_1",)
    assert [folder.label for folder in choice.others] == ["pid_101_deviceid_1"]


def test_two_processes_on_the_dump_device_take_the_newest_and_say_so(tmp_path):
    _build(tmp_path / "pid_100_deviceid_0", mtime=1000)
    newer = _build(tmp_path / "pid_200_deviceid_0", mtime=3000)
    _build(tmp_path / "pid_300_deviceid_1", mtime=5000)  # newest of all, but another device
    choice = choose_build_graph(tmp_path, device_id=0)
    assert choice.path == newer
    assert choice.notes == (f"Build graph of {tmp_path}: used pid_200_deviceid_0 (the newest of 2 folders of "
                            "device 0); also there: pid_100_deviceid_0, pid_300_deviceid_1",)


def test_equal_write_times_take_the_last_folder_by_name(tmp_path):
    _build(tmp_path / "pid_100_deviceid_0", mtime=1000)
    last = _build(tmp_path / "pid_200_deviceid_0", mtime=1000)
    assert choose_build_graph(tmp_path, device_id=0).path == last


def test_no_folder_of_the_dump_device_uses_the_rule_and_says_the_device_is_missing(tmp_path):
    only = _build(tmp_path / "pid_5_deviceid_1")
    choice = choose_build_graph(tmp_path, device_id=0)
    assert choice.path == only
    assert choice.notes == (f"Build graph of {tmp_path}: used pid_5_deviceid_1 (the only candidate; no graph "
                            "folder of the dump's device 0)",)


def test_inside_the_chosen_folder_the_newest_file_is_taken_as_in_a_flat_folder(tmp_path):
    folder = tmp_path / "pid_1_deviceid_0"
    _build(folder, 1, mtime=1000)
    _build(folder, 3, mtime=2000)
    latest = _build(folder, 2, mtime=3000)
    assert choose_build_graph(tmp_path, device_id=0).path == latest == find_build_graph(folder)


# ------------------------------------------------------------------------------------------ by graph name
def test_a_graph_name_chooses_among_all_folders_then_the_device_rule_applies(tmp_path):
    _build(tmp_path / "pid_1_deviceid_0", 1, graph_name="init", mtime=3000)
    train0 = _build(tmp_path / "pid_1_deviceid_0", 2, graph_name="train", mtime=1000)  # not the newest file there
    _build(tmp_path / "pid_2_deviceid_1", 1, graph_name="eval", mtime=2000)
    assert choose_build_graph(tmp_path, "train").path == train0
    assert choose_build_graph(tmp_path, "train").notes == ()  # only one folder holds it
    # only device 1's folder holds "eval": it is used, and the note says the dump's device had none
    choice = choose_build_graph(tmp_path, "eval", device_id=0)
    assert choice.folder.label == "pid_2_deviceid_1"
    assert choice.notes == (f"graph 'eval' of {tmp_path}: used pid_2_deviceid_1 (the only candidate; no graph "
                            "folder of the dump's device 0); also there: pid_1_deviceid_0",)


def test_an_unknown_graph_name_lists_what_each_folder_holds(tmp_path):
    _build(tmp_path / "pid_1_deviceid_0", 1, graph_name="init")
    _build(tmp_path / "7_1", 4, graph_name="train")
    with pytest.raises(WorkspaceError, match=r"no Build graph in .* has a root graph called 'other' \(found "
                                             r"7_1/ge_proto_00000004_Build.txt: train; "  # folders by name
                                             r"pid_1_deviceid_0/ge_proto_00000001_Build.txt: init\)"):
        choose_build_graph(tmp_path, "other")


# ------------------------------------------------------------------------------------------ nothing to read
def test_no_build_graph_anywhere_names_the_per_process_folders_looked_in(tmp_path):
    (tmp_path / "pid_1_deviceid_0").mkdir()
    (tmp_path / "pid_1_deviceid_0" / "ge_onnx_00000001_graph_1_PreRunAfterBuild.pbtxt").write_text("")  # not Build
    with pytest.raises(WorkspaceError, match=r"no GE Build graph \(ge_proto_\*_Build\.txt or ge_onnx_\*_Build\.pbtxt\) "
                                             r"in .* or its per-process folders \(pid_1_deviceid_0\) "
                                             r"\(GE writes it when"):
        choose_build_graph(tmp_path)
    with pytest.raises(WorkspaceError, match="no such folder"):
        choose_build_graph(tmp_path / "missing")


# ------------------------------------------------------------------------------------------ bad entries
def test_unusable_entries_get_one_line_each_and_the_rest_is_still_searched(tmp_path):
    good = _build(tmp_path / "pid_10_deviceid_0")
    _build(tmp_path / "pid_x_deviceid_", mtime=9000)  # newest, but not a graph folder name
    os.mkfifo(str(tmp_path / "pid_11_deviceid_0"))
    os.symlink("pid_12_deviceid_0", str(tmp_path / "pid_12_deviceid_0"))  # a symlink loop
    os.symlink("nowhere", str(tmp_path / "13_0"))
    (tmp_path / "pid_notes.txt").write_text("a plain file: not reported")
    (tmp_path / "tf_graphs").mkdir()  # unrelated folder: not reported
    choice = choose_build_graph(tmp_path, device_id=0)
    assert choice.path == good
    assert choice.notes == (f"{tmp_path / '13_0'}: skipped, dangling symlink",
                            f"{tmp_path / 'pid_11_deviceid_0'}: skipped, a FIFO where a graph folder should be",
                            f"{tmp_path / 'pid_12_deviceid_0'}: skipped, symlink loop",
                            f"{tmp_path / 'pid_x_deviceid_'}: skipped, the name is not {FOLDER_FORMS}")
    assert all("\n" not in note for note in choice.notes)


def test_a_folder_that_cannot_be_listed_is_skipped_with_its_reason(tmp_path, monkeypatch):
    _build(tmp_path / "pid_1_deviceid_0", mtime=1000)
    locked = tmp_path / "pid_2_deviceid_0"
    _build(locked, mtime=2000)
    real_scandir = os.scandir

    def scandir(path="."):
        if os.fspath(path) == str(locked):
            raise PermissionError(errno.EACCES, "Permission denied", str(path))
        return real_scandir(path)

    monkeypatch.setattr(ge_graph_folders.os, "scandir", scandir)
    choice = choose_build_graph(tmp_path, device_id=0)
    assert choice.folder.label == "pid_1_deviceid_0"
    assert choice.notes == (f"{locked}: cannot be listed (Permission denied), skipped",)


def test_a_build_file_that_is_a_symlink_loop_is_skipped_with_a_note(tmp_path):
    folder = tmp_path / "pid_1_deviceid_0"
    good = _build(folder, 1)
    os.symlink("ge_proto_00000002_Build.txt", str(folder / "ge_proto_00000002_Build.txt"))
    choice = choose_build_graph(tmp_path)
    assert choice.path == good
    assert choice.notes == (f"{folder / 'ge_proto_00000002_Build.txt'}: skipped, symlink loop",)
    assert build_graph_files(folder) == [good]


def test_only_unusable_entries_is_an_error_that_names_them(tmp_path):
    os.mkfifo(str(tmp_path / "pid_1_deviceid_0"))
    with pytest.raises(WorkspaceError, match=r"no GE Build graph .* a FIFO where a graph folder should be\)$"):
        choose_build_graph(tmp_path)


def test_a_fifo_or_a_file_given_as_the_graph_folder_is_a_workspace_error(tmp_path):
    os.mkfifo(str(tmp_path / "fifo"))
    with pytest.raises(WorkspaceError, match="fifo: not a folder"):
        choose_build_graph(tmp_path / "fifo")


def test_a_folder_reached_twice_through_a_symlink_counts_once(tmp_path):
    real = _build(tmp_path / "pid_8_deviceid_0", mtime=1000)
    os.symlink("pid_8_deviceid_0", str(tmp_path / "pid_9_deviceid_0"))
    scan = scan_graph_folders(tmp_path)
    assert [folder.label for folder in scan.folders] == ["pid_8_deviceid_0"]
    choice = choose_build_graph(tmp_path, device_id=0)
    assert choice.path == real and choice.notes == ()


# ------------------------------------------------------------------------------------------ the dump's device
def _dump_tree(root, *levels, empty=()):
    for time, device in levels:
        step = Path(root) / time / device / "ge_default_1" / "1" / "0"
        step.mkdir(parents=True)
        if (time, device) not in empty:
            (step / "Conv2D.conv.1.2.1700000000000000").write_bytes(b"")
    return root


def test_the_dump_device_is_the_device_level_of_the_dump_tree(tmp_path):
    one = _dump_tree(tmp_path / "one", ("20240101000000", "0"), ("20240101000100", "0"))  # two sessions, one device
    assert dump_device_ids(one) == (0,) and dump_device_id(one) == 0
    both = _dump_tree(tmp_path / "both", ("20240101000000", "0"), ("20240101000001", "1"))  # 2 processes
    assert dump_device_ids(both) == (0, 1) and dump_device_id(both) == 0  # the lowest: the device a scan reads
    assert dump_device_id(both, 1) == 1  # --device 1: its graph is read with its dumps
    assert dump_device_id(both, 7) == 0  # a device the tree lacks: the scan's own error says so
    assert dump_device_id(both / "20240101000001") == 1  # a {time} folder
    assert dump_device_id(both / "20240101000001" / "1" / "ge_default_1" / "1") == 1  # inside a device folder
    assert dump_device_ids(tmp_path / "missing") == () and dump_device_id(None) is None
    # found in review: an empty device 0 beside device 1's dumps -- the scan reads device 1, so must the graph
    lone = _dump_tree(tmp_path / "lone", ("20240101000000", "0"), ("20240101000001", "1"),
                      empty=[("20240101000000", "0")])
    assert dump_device_ids(lone) == (1,) and dump_device_id(lone) == 1
    flat = tmp_path / "flat"
    flat.mkdir()
    (flat / "Conv2D.conv.1.2.1700000000000000").write_bytes(b"")
    assert dump_device_id(flat) is None


# ------------------------------------------------------------------------------------------ real CANN output
@pytest.mark.skipif(not REAL_GRAPHS.is_dir(), reason=f"{REAL_GRAPHS} is absent (real artifacts live beside the "
                                                     "project, in ../shared/real-world)")
def test_a_real_cann_graph_folder_in_its_pid_device_layout(tmp_path):
    # oam-tools' msaicerr test data: CANN wrote these two Build graphs into DUMP_GRAPH_PATH/370_0/.
    folder = tmp_path / "graph" / "370_0"
    folder.mkdir(parents=True)
    for index in (0, 1):
        target = folder / f"ge_proto_{index:08d}_Build.txt"
        shutil.copyfile(str(REAL_GRAPHS / f"oam_370_0_ge_proto_{index:08d}_Build.txt"), str(target))
        os.utime(str(target), (1000, 1000))
    shutil.copyfile(str(REAL_GRAPHS / "oam_370_0_ge_onnx_00000001_graph_11_Build.pbtxt"),
                    str(folder / "ge_onnx_00000001_graph_11_Build.pbtxt"))  # beside: the ge_proto of index 1 wins
    choice = choose_build_graph(tmp_path / "graph", device_id=0)
    assert (choice.folder.pid, choice.folder.device_id, choice.notes) == (370, 0, ())
    assert choice.path.name == "ge_proto_00000001_Build.txt"  # equal times: the larger index
    assert read_ge_graph(choice.path).root.name == "ge_default_20230713074125_11"
    named = choose_build_graph(tmp_path / "graph", "ge_default_20230713074122_1", device_id=0)
    assert named.path.name == "ge_proto_00000000_Build.txt"
