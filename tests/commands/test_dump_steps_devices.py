"""Several steps and devices in one NPU dump tree (issue 17): a scan never mixes them. By default the newest step of
the lowest device is compared, and the output says so and what else the tree holds; ``--step``/``--device`` pick
exactly one; a step or device the tree lacks is an error listing those it has.

The tree is GE's ``{time}/{device}/{model}/{model_id}/{step}`` (../shared/docs/ascend-dump-trees.md): two devices
(two ``{time}`` folders, one per process), steps 0 and 5 each; only step 5 of device 1 carries an error (op2's
output is off by noise of 2.0), written by the test's own chain builder."""
import os
import shutil
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), os.pardir, "comparison"))

from cmp_builders import chain_case
from precision_tool.cli import main
from precision_tool.formats.dump_tree import DumpSelection, choose, position_of, request

pytestmark = pytest.mark.compat
TIMES = {0: "20240613143502", 1: "20240613143507"}


@pytest.fixture
def tree(tmp_path):
    clean = chain_case(tmp_path / "clean")
    broken = chain_case(tmp_path / "broken", break_at="op2")  # same seed: the same reference
    root = tmp_path / "dump"
    for device in (0, 1):
        for step in (0, 5):
            source = broken if (device, step) == (1, 5) else clean
            shutil.copytree(source.npu, root / TIMES[device] / str(device) / "ge_default_cmp" / "1" / str(step))
    yield clean, root
    request(DumpSelection())  # the CLI sets it per command; leave none behind for other tests


def compare(case, root, out, *selection):
    return main([*selection, "compare", "-m", str(root), "-g", case.ref, "-f", case.graph, "-out", str(out)])


def test_by_default_the_newest_step_of_the_lowest_device_is_compared_and_named(tree, tmp_path, capsys):
    case, root = tree
    assert compare(case, root, tmp_path / "out") == 0  # device 0, step 5: clean (not mixed with device 1)
    out = capsys.readouterr().out
    assert "Compared 8 tensors" in out  # one step of one device: each op once
    assert ("NPU dumps: dumps of step 5 on device 0 (the newest step of the lowest device); also in the tree: "
            "steps 0, devices 1 (pick with --step N --device N)") in out


@pytest.mark.parametrize("selection, code", [(["--device", "1", "--step", "5"], 1),
                                             (["--device", "1", "--step", "0"], 0),
                                             (["--device", "1"], 1),  # its newest step: 5
                                             (["--step", "0"], 0)])
def test_step_and_device_pick_exactly_one_folder(tree, tmp_path, capsys, selection, code):
    case, root = tree
    assert compare(case, root, tmp_path / "out", *selection) == code
    out = capsys.readouterr().out
    assert "Compared 8 tensors" in out
    if code == 1:
        assert "op2" in out.split("First divergence:")[1].splitlines()[0]


@pytest.mark.parametrize("selection, message", [
    (["--device", "2"], "no dumps of device 2 (devices: 0, 1)"),
    (["--device", "0", "--step", "7"], "no dumps of step 7 on device 0 (steps: 0, 5)"),
])
def test_a_step_or_device_the_tree_lacks_is_one_error_listing_what_it_has(tree, tmp_path, capsys, selection,
                                                                          message):
    case, root = tree
    assert compare(case, root, tmp_path / "out", *selection) == 2
    err = capsys.readouterr().err.strip()
    assert err == f"precision_tool: error: {root}: {message}"


def test_positions_are_read_from_the_last_five_folders_only():
    assert position_of("/x/20240613143502/3/ge_default_1/11/20").device == 3
    assert position_of("/x/20240613143502/3/ge_default_1/11/20").step == 20
    assert position_of("/x/dump/files") is None  # a flat folder of copied dumps
    assert position_of("/x/2024061314350/3/m/11/20") is None  # 13 digits: not GE's time folder
    assert choose("/r", []).step is None  # nothing to choose: no note
    with pytest.raises(Exception, match="not in step folders"):
        choose("/r", [], DumpSelection(step=1))
