"""Several steps and devices in one NPU dump tree (issue 17): a scan never mixes them. By default the newest step of
the lowest device is compared, and the output says so and what else the tree holds; ``--step``/``--device`` pick
exactly one -- before the command, or after it (which wins); a step or device the tree lacks is an error listing
those it has. ``compare --steps all`` compares every step of a device and names the first diverging one;
``--device all`` compares every device and flags the replicas that differ; each run's outputs go apart.

The tree is GE's ``{time}/{device}/{model}/{model_id}/{step}`` (../shared/docs/ascend-dump-trees.md): two devices
(two ``{time}`` folders, one per process), steps 0 and 5 each; only step 5 of device 1 carries an error (op2's
output is off by noise of 2.0), written by the test's own chain builder."""
import os
import shutil
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), os.pardir, "comparison"))

from cmp_builders import TREE_TIMES, chain_dump_tree
from precision_tool.cli import main
from precision_tool.formats.dump_tree import DumpSelection, choose, position_of

pytestmark = pytest.mark.compat
TIMES = TREE_TIMES
TENSORS = 4 * 2  # what one step of one device holds: the chain's ops op0 .. op3, input 0 and output 0 each


@pytest.fixture
def tree(tmp_path):
    root = tmp_path / "dump"
    clean = chain_dump_tree(tmp_path, root, broken=(1, 5))
    return clean, root


def compare(case, root, out, *selection):
    return main([*selection, "compare", "-m", str(root), "-g", case.ref, "-f", case.graph, "-out", str(out)])


def test_by_default_the_newest_step_of_the_lowest_device_is_compared_and_named(tree, tmp_path, capsys):
    case, root = tree
    assert compare(case, root, tmp_path / "out") == 0  # device 0, step 5: clean (not mixed with device 1)
    out = capsys.readouterr().out
    assert f"Compared {TENSORS} tensors" in out  # one step of one device: each op once
    assert ("NPU dumps: dumps of step 5 on device 0 (the newest step of the lowest device); also in the tree: "
            "step 0 of device 0 and device 1 (pick with --step N --device N)") in out


@pytest.mark.parametrize("selection, code", [(["--device", "1", "--step", "5"], 1),
                                             (["--device", "1", "--step", "0"], 0),
                                             (["--device", "1"], 1),  # its newest step: 5
                                             (["--step", "0"], 0)])
def test_step_and_device_pick_exactly_one_folder(tree, tmp_path, capsys, selection, code):
    case, root = tree
    assert compare(case, root, tmp_path / "out", *selection) == code
    out = capsys.readouterr().out
    assert f"Compared {TENSORS} tensors" in out
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


# ------------------------------------------------------------------------------------ after the command (issue 17)
def compare_after(case, root, out, *flags, json=False):
    """``compare`` with the step/device flags after the command name."""
    return main([*(["--json"] if json else []), "compare", "-m", str(root), "-g", case.ref, "-f", case.graph,
                 "-out", str(out), *flags])


def summary_of(folder):
    import json

    with open(os.path.join(str(folder), "summary.json"), encoding="utf-8") as handle:
        return json.load(handle)


@pytest.mark.parametrize("flags, code, note", [
    (["--device", "1", "--step", "5"], 1, "dumps of step 5 on device 1 (as asked); also in the tree: step 0 of "
                                          "device 1 and device 0"),
    (["--step", "5", "--device", "1"], 1, "dumps of step 5 on device 1 (as asked); also in the tree: step 0 of "
                                          "device 1 and device 0"),
    (["--device", "1", "--step", "0"], 0, "dumps of step 0 on device 1 (as asked); also in the tree: step 5 of "
                                          "device 1 and device 0"),
    (["--device", "1"], 1, "dumps of step 5 on device 1 (as asked, newest step); also in the tree: step 0 of device 1 "
                           "and device 0"),
    (["--step", "0"], 0, "dumps of step 0 on device 0 (as asked, lowest device); also in the tree: step 5 of device 0 "
                         "and device 1"),
])
def test_step_and_device_after_the_command_pick_exactly_one_folder(tree, tmp_path, capsys, flags, code, note):
    case, root = tree
    assert compare_after(case, root, tmp_path / "out", *flags) == code
    out = capsys.readouterr().out
    assert f"Compared {TENSORS} tensors" in out  # one step of one device: each of the 4 ops' input and output once
    assert f"NPU dumps: {note} (pick with --step N --device N)" in out
    summary = summary_of(tmp_path / "out")
    assert summary["coverage"]["dump_choice"].startswith(note)
    assert summary["counts"]["failed"] == (3 if code else 0)  # op2's output, op3's input (the same bytes), op3's


def test_after_the_command_wins_over_before_it_and_completes_it(tree, tmp_path, capsys):
    case, root = tree
    # before: step 0; after: device 1 -> step 0 of device 1 (clean)
    assert main(["--step", "0", "compare", "-m", str(root), "-g", case.ref, "-f", case.graph, "-out",
                 str(tmp_path / "a"), "--device", "1"]) == 0
    assert "dumps of step 0 on device 1 (as asked)" in capsys.readouterr().out
    # before: step 0 of device 0; after: step 5 of device 1 -> the broken one
    assert main(["--step", "0", "--device", "0", "compare", "-m", str(root), "-g", case.ref, "-f", case.graph,
                 "-out", str(tmp_path / "b"), "--step", "5", "--device", "1"]) == 1
    assert "dumps of step 5 on device 1 (as asked)" in capsys.readouterr().out


def test_a_bad_step_or_device_after_the_command_is_one_error(tree, tmp_path, capsys):
    case, root = tree
    assert compare_after(case, root, tmp_path / "out", "--device", "x") == 2
    assert capsys.readouterr().err.strip() == ("precision_tool: error: compare: argument --device: invalid step or "
                                               "device: 'x' (give 0, 1, ... or all) (see 'compare -h')")
    assert compare_after(case, root, tmp_path / "out", "--step", "\u0665") == 2  # ARABIC-INDIC FIVE: int() takes it
    assert "invalid step or device: '\u0665'" in capsys.readouterr().err
    assert compare_after(case, root, tmp_path / "out", "--device", "2") == 2
    assert capsys.readouterr().err.strip() == f"precision_tool: error: {root}: no dumps of device 2 (devices: 0, 1)"
    assert not (tmp_path / "out").exists()  # refused before anything was written


# ------------------------------------------------------------------------------------ compare --steps all
def test_steps_all_names_the_diverging_step_and_keeps_each_steps_outputs_apart(tree, tmp_path, capsys):
    case, root = tree
    before = sorted(str(p) for p in root.rglob("*"))
    out = tmp_path / "out"
    assert compare_after(case, root, out, "--steps", "all", "--device", "1") == 1
    text = capsys.readouterr().out
    assert text.startswith("Compared every step of device 1, one run each: 2 runs, 1 fail\n")
    rows = [line.split() for line in text.splitlines() if line.startswith("1  ")]
    assert rows == [["1", "0", str(TENSORS), "0", "-", "0", str(out / "step_0")],
                    ["1", "5", str(TENSORS), "3", "op2", "1", str(out / "step_5")]]
    assert (f"First diverging step: 5 (op2: first divergence; 3 tensors fail of {TENSORS}; {out / 'step_5'})"
            in text.splitlines())
    assert "NPU dumps:" not in text  # each run's choice is in its own summary, not repeated per step
    for step, failed in ((0, 0), (5, 3)):
        summary = summary_of(out / f"step_{step}")
        assert summary["counts"]["failed"] == failed
        assert summary["coverage"]["dump_choice"].startswith(f"dumps of step {step} on device 1 (as asked)")
    assert sorted(os.listdir(str(out))) == ["step_0", "step_5"]
    assert sorted(str(p) for p in root.rglob("*")) == before  # nothing written into the input tree


def test_steps_all_of_the_default_device_finds_no_diverging_step(tree, tmp_path, capsys):
    case, root = tree
    assert compare_after(case, root, tmp_path / "out", "--steps", "all") == 0
    text = capsys.readouterr().out
    assert text.startswith("Compared every step of device 0, one run each: 2 runs, 0 fail\n")
    assert "No step diverges (steps compared: 0, 5)." in text.splitlines()


def test_steps_all_json_lists_every_step(tree, tmp_path, capsys):
    import json

    case, root = tree
    assert compare_after(case, root, tmp_path / "out", "--step", "all", "--device", "1", json=True) == 1
    data = json.loads(capsys.readouterr().out)["data"]
    assert [(r["device"], r["step"], r["compared"], r["failed"], r["first_divergence"], r["exit_code"])
            for r in data["runs"]] == [(1, 0, TENSORS, 0, None, 0), (1, 5, TENSORS, 3, "op2", 1)]
    assert data["runs"][1]["failing"] == ["op2:output:0", "op3:input:0", "op3:output:0"]
    assert data["first_diverging"] == [{"device": 1, "step": 5, "first_divergence": "op2"}]
    assert data["exit_code"] == 1 and data["replicas_differ"] == []


def test_steps_all_without_out_goes_into_one_new_workspace_folder(tree, tmp_path, capsys):
    case, root = tree
    workspace = tmp_path / "ws"
    workspace.mkdir()
    assert main(["-d", str(workspace), "compare", "-m", str(root), "-g", case.ref, "-f", case.graph,
                 "--steps", "all"]) == 0
    (run,) = os.listdir(str(workspace / "temp" / "vector_compare"))
    assert sorted(os.listdir(str(workspace / "temp" / "vector_compare" / run))) == ["step_0", "step_5"]


# ------------------------------------------------------------------------------------ compare --device all
def test_device_all_flags_the_device_whose_results_differ(tree, tmp_path, capsys):
    case, root = tree
    out = tmp_path / "out"
    assert compare_after(case, root, out, "--device", "all") == 1
    text = capsys.readouterr().out
    assert text.startswith("Compared every device (its newest step), one run each: 2 runs, 1 fail\n")
    rows = [line.split()[:6] for line in text.splitlines() if line[:1] in "01" and "out" in line]
    assert rows == [["0", "5", str(TENSORS), "0", "-", "0"], ["1", "5", str(TENSORS), "3", "op2", "1"]]
    assert ("Replicas differ: device 1 (fails op2:output:0, op3:input:0, op3:output:0 where device 0 passes)"
            in text.splitlines())
    assert sorted(os.listdir(str(out))) == ["device_0", "device_1"]


def test_device_all_at_a_clean_step_says_the_replicas_agree(tree, tmp_path, capsys):
    case, root = tree
    assert compare_after(case, root, tmp_path / "out", "--device", "all", "--step", "0") == 0
    text = capsys.readouterr().out
    assert text.startswith("Compared every device (step 0), one run each: 2 runs, 0 fail\n")
    assert "Replicas agree: devices 0, 1 (same failing tensors, cosines within 0.001)" in text.splitlines()


def test_every_step_of_every_device(tree, tmp_path, capsys):
    case, root = tree
    out = tmp_path / "out"
    assert compare_after(case, root, out, "--device", "all", "--steps", "all") == 1
    lines = capsys.readouterr().out.splitlines()
    assert "No step of device 0 diverges (steps compared: 0, 5)." in lines
    assert any(line.startswith("First diverging step of device 1: 5 (op2: first divergence;") for line in lines)
    assert "Replicas agree at step 0: devices 0, 1 (same failing tensors, cosines within 0.001)" in lines
    assert any(line.startswith("Replicas differ at step 5: device 1 (fails op2:output:0") for line in lines)
    assert sorted(str(p.relative_to(out)) for p in out.glob("*/*")) == [
        "device_0/step_0", "device_0/step_5", "device_1/step_0", "device_1/step_5"]


# ------------------------------------------------------------------------------------ bad input for the new forms
def test_steps_all_on_a_flat_folder_says_there_is_one_step_and_compares_it(tree, tmp_path, capsys):
    case, _ = tree
    assert compare_after(case, case.npu, tmp_path / "out", "--steps", "all") == 0
    text = capsys.readouterr().out
    assert text.startswith(f"Compared {TENSORS} tensors (cosine >= 0.99): {TENSORS} passed, 0 failed\n")
    assert (f"{case.npu} holds no step folders ({{time}}/{{device}}/{{model}}/{{model_id}}/{{step}}): one step, "
            "compared as such") in text.splitlines()


@pytest.mark.parametrize("flags, message", [
    (["--steps", "all", "--device", "2"], "{root}: no dumps of device 2 (devices: 0, 1)"),
    (["--device", "all", "--step", "7"], "{root}: no dumps of step 7 on device 0 (steps: 0, 5)"),  # none has it
    (["--steps", "all", "--junit", "j.xml"], "compare: --junit writes one run's result, not one per step (compare "
                                             "one with --step N --device N)"),
])
def test_a_step_or_device_the_tree_lacks_is_one_error_for_the_new_forms(tree, tmp_path, capsys, flags, message):
    case, root = tree
    out = tmp_path / "out"
    assert compare_after(case, root, out, *flags) == 2
    assert capsys.readouterr().err.strip() == "precision_tool: error: " + message.format(root=root)
    assert not out.exists()


def test_device_all_with_a_step_one_device_lacks_compares_the_others(tree, tmp_path, capsys):
    case, root = tree
    shutil.rmtree(str(root / TIMES[1] / "1" / "ge_default_cmp" / "1" / "0"))  # device 1 dumped step 5 only
    assert compare_after(case, root, tmp_path / "out", "--device", "all", "--step", "0") == 2
    lines = capsys.readouterr().out.splitlines()
    assert any(line.split()[:6] == ["0", "0", str(TENSORS), "0", "-", "0"] for line in lines)
    assert any(line.startswith("1 ") and f"{root}: no dumps of step 0 on device 1 (steps: 5)" in line
               for line in lines)
    assert not any(line.startswith("Replicas") for line in lines)  # one replica compared: nothing to agree on


# ------------------------------------------------------------------------------------ an NPU reference tree follows
def test_a_reference_dump_tree_follows_the_step_and_falls_back_to_its_only_device(tree, tmp_path, capsys):
    case, root = tree
    reference = tmp_path / "other"  # another NPU run of device 0 only, steps 0 and 5, all clean
    for step in (0, 5):
        shutil.copytree(case.npu, reference / TIMES[0] / "0" / "ge_default_cmp" / "1" / str(step))
    out = tmp_path / "out"
    assert main(["compare", "-m", str(root), "-g", str(reference), "-f", case.graph, "-rg", case.graph,
                 "--mode", "npu_vs_npu", "-out", str(out), "--steps", "all", "--device", "1"]) == 1
    assert "First diverging step: 5 (op2" in capsys.readouterr().out
    for step in (0, 5):
        choice = summary_of(out / f"step_{step}")["coverage"]["dump_choice"]
        assert f"other run: dumps of step {step} on device 0 (its only device)" in choice


def test_steps_all_says_which_step_had_a_dump_file_it_could_not_read(tree, tmp_path, capsys):
    case, root = tree
    step_0 = root / TREE_TIMES[0] / "0" / "ge_default_cmp" / "1" / "0"
    victim = sorted(os.listdir(str(step_0)))[0]
    with open(str(step_0 / victim), "r+b") as handle:
        handle.truncate(40)  # shorter than its header says
    out = tmp_path / "out"
    assert compare_after(case, root, out, "--steps", "all") == 2  # nothing fails; an unread file is exit 2, as compare
    text = capsys.readouterr().out
    assert f"device 0, step 0: 1 dump file could not be read (each named in {out / 'step_0'})" in text
    assert "step 5: " not in text.split("First diverging")[0].split("could not be read")[-1]


def test_an_unreadable_name_in_another_step_does_not_fail_the_chosen_step(tree, tmp_path, capsys):
    """Found in review: files of another step whose names could not be resolved (a hashed name and a mapping.csv
    that cannot be read) were counted as unreadable inputs of the chosen step, which then exited 2."""
    case, root = tree
    step_0 = root / TREE_TIMES[0] / "0" / "ge_default_cmp" / "1" / "0"
    (step_0 / "1a2b3c4d5e6f").write_bytes(b"hashed")
    os.symlink(str(step_0 / "gone"), str(step_0 / "mapping.csv"))  # dangling: the mapping cannot be read
    assert compare_after(case, root, tmp_path / "out5", "--step", "5", "--device", "0") == 0
    assert "could not be read" not in capsys.readouterr().out
    assert compare_after(case, root, tmp_path / "out0", "--step", "0", "--device", "0") == 2  # its own step: said


def test_other_models_and_sessions_of_a_device_are_named_not_mixed(tree, tmp_path, capsys):
    """A device holds a folder per loaded graph and per session. A helper graph's dump of an op of the same name
    (GE's generated names repeat across graphs), newer and at a step of its own, and an older session's copy of
    step 5: neither is compared, nor taken as the newest step; the note names both folders (a user walk found the
    helper's op compared in the training graph's place, and its step 7 taken as the device's newest)."""
    case, root = tree
    chain_dump_tree(tmp_path / "b", tmp_path / "b" / "dump", broken=(0, 5))
    faulty_step = tmp_path / "b" / "dump" / TIMES[0] / "0" / "ge_default_cmp" / "1" / "5"
    op2 = [name for name in os.listdir(faulty_step) if ".op2." in name]
    helper = root / TIMES[0] / "0" / "ge_default_helper" / "3" / "7"
    helper.mkdir(parents=True)
    shutil.copy(faulty_step / op2[0], helper / op2[0])
    older_session = root / "20240613120000" / "0" / "ge_default_cmp" / "1" / "5"
    shutil.copytree(faulty_step, older_session)
    assert compare(case, root, tmp_path / "out") == 0  # step 5 of the training graph's newest session: clean
    out = capsys.readouterr().out
    assert f"Compared {TENSORS} tensors" in out
    note = out.split("NPU dumps: ")[1].splitlines()[0]
    assert note.startswith(f"dumps of step 5 on device 0 (the newest step of the lowest device), model "
                           f"{TIMES[0]}/0/ge_default_cmp/1 (most dump files)")
    assert note.endswith("other models of device 0, not read (give one's folder to read it): "
                         f"20240613120000/0/ge_default_cmp/1, {TIMES[0]}/0/ge_default_helper/3")
    # The helper's folder, given as the root, is read: its one op, broken.
    assert main(["compare", "-m", str(root / TIMES[0] / "0" / "ge_default_helper"), "-g", case.ref, "-f",
                 case.graph, "-out", str(tmp_path / "helper")]) == 1


def test_a_device_folder_without_dump_files_is_named_and_is_a_row_of_device_all(tree, tmp_path, capsys):
    """A card that dumped nothing: its ``{time}/{device}`` folder is there, empty. A user walk found it left out of
    ``--device all`` and of the note without a word."""
    case, root = tree
    (root / "20240613143512" / "2").mkdir(parents=True)
    (root / "20240613143520" / "0").mkdir(parents=True)  # device 0 restarted, dumped nothing: it has dumps elsewhere
    assert compare(case, root, tmp_path / "one") == 0
    note = capsys.readouterr().out.split("NPU dumps: ")[1].splitlines()[0]
    assert note.endswith("; no dump files for device 2 (20240613143512/2)")  # not device 0 (a review found it)
    every = ["compare", "--device", "all", "-m", str(root), "-g", case.ref, "-f", case.graph, "-out"]
    assert main([*every, str(tmp_path / "all")]) == 1  # device 1's step 5 fails
    out = capsys.readouterr().out
    (row,) = [line for line in out.splitlines() if line.startswith("2 ")]
    assert row.split()[-1] == "files" and f"{root}/20240613143512/2: no dump files" in row
    assert main(["compare", "--steps", "all", "--device", "all", "-m", str(root), "-g", case.ref, "-f", case.graph,
                 "-out", str(tmp_path / "both")]) == 1
    assert (f"No step of device 2 could be compared: {root}/20240613143512/2: no dump files."
            in capsys.readouterr().out.splitlines())  # a user walk read "No step diverges (compared: none)" as a pass
    shutil.rmtree(root / TIMES[1])  # device 1 gone: nothing fails, the empty card makes it exit 2
    assert main([*every, str(tmp_path / "all2")]) == 2


@pytest.mark.parametrize("value, message", [
    ("abc", "argument --step: invalid step or device number: 'abc' (give 0, 1, ...)"),
    ("all", "argument --step: 'all' goes after the command, for that command alone (compare --steps all, compare "
            "--device all)"),
])
def test_a_bad_step_before_the_command_is_one_line_too(capsys, value, message):
    """A user walk found argparse's three-line usage block before the command, one line after it."""
    with pytest.raises(SystemExit) as exited:
        main(["--step", value, "ls"])
    assert exited.value.code == 2
    assert capsys.readouterr().err == f"precision_tool: error: {message} (see 'precision_tool -h')\n"


def test_a_step_or_device_given_twice_with_two_values_is_one_error_not_the_last_winning(capsys):
    with pytest.raises(SystemExit):
        main(["--device", "1", "--device", "0", "ls"])
    assert "argument --device: given twice, as 1 and 0: give one" in capsys.readouterr().err
    assert main(["compare", "--step", "5", "--steps", "all"]) == 2
    assert capsys.readouterr().err.strip() == ("precision_tool: error: compare: argument --step/--steps: given twice, "
                                               "as 5 and all: give one (see 'compare -h')")
