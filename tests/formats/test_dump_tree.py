"""``formats/dump_tree.py``: the choice among steps and devices, a reference tree following it, the selections of
``compare --steps all`` / ``--device all``, and the choice log a selection carries (issue 17, issue 41)."""
import pytest

from precision_tool.errors import WorkspaceError
from precision_tool.formats.dump_tree import (Choice, ChoiceLog, DumpSelection, TreePosition, choose, each_selection,
                                              following)

pytestmark = pytest.mark.compat


def tree(*held):
    """Positions for ``(device, step)`` pairs, one model."""
    return [TreePosition("20240613143502", device, "ge_a", 1, step) for device, step in held]


TWO_BY_TWO = tree((0, 0), (0, 5), (1, 0), (1, 5))


@pytest.mark.parametrize("wanted, step, device, note", [
    (DumpSelection(), 5, 0, "dumps of step 5 on device 0 (the newest step of the lowest device); also in the tree: "
                            "step 0 of device 0 and device 1 (pick with --step N --device N)"),
    (DumpSelection(step=0), 0, 0, "dumps of step 0 on device 0 (as asked, lowest device); also in the tree: "
                                  "step 5 of device 0 and device 1 (pick with --step N --device N)"),
    (DumpSelection(device=1), 5, 1, "dumps of step 5 on device 1 (as asked, newest step); also in the tree: "
                                    "step 0 of device 1 and device 0 (pick with --step N --device N)"),
    (DumpSelection(0, 1), 0, 1, "dumps of step 0 on device 1 (as asked); also in the tree: step 5 of device 1 and "
                                "device 0 (pick with --step N --device N)"),
])
def test_the_choice_and_its_note(wanted, step, device, note):
    choice = choose("/r", TWO_BY_TWO, wanted)
    assert (choice.step, choice.device, choice.note) == (step, device, note)
    assert choice.held == ((0, 0), (0, 5), (1, 0), (1, 5)) and choice.devices == (0, 1)
    assert choice.steps_of(1) == (0, 5) and choice.steps_of(9) == ()


def test_one_model_of_each_device_is_read_the_one_with_most_dump_files_and_the_others_are_named():
    """A device holds a model per loaded graph (the training graph, and helpers whose generated op names repeat)
    and a folder per session: their dumps are never mixed. Found by a user walk: a helper model's one file, newer,
    had replaced the training graph's op of the same name, and its step 7 had been taken as the newest."""
    training = [TreePosition("20241119070640", 0, "ge_default_1", 11, step) for step in (0, 5)]
    helper = TreePosition("20241119070640", 0, "ge_default_2", 3, 7)
    other_device = TreePosition("20241119070702", 1, "ge_default_1", 11, 5)
    files = {training[0]: 52, training[1]: 52, helper: 1, other_device: 52}
    choice = choose("/r", training + [helper, other_device], DumpSelection(), files)
    assert (choice.step, choice.device, choice.held) == (5, 0, ((0, 0), (0, 5), (1, 5)))
    assert choice.models == ((0, "20241119070640/0/ge_default_1/11"), (1, "20241119070702/1/ge_default_1/11"))
    assert choice.note == (
        "dumps of step 5 on device 0 (the newest step of the lowest device), model 20241119070640/0/ge_default_1/11 "
        "(most dump files); also in the tree: step 0 of device 0 and device 1 (pick with --step N --device N); other "
        "models of device 0, not read (give one's folder to read it): 20241119070640/0/ge_default_2/3")
    assert choice.keeps(training[1]) and not choice.keeps(helper) and not choice.keeps(other_device)
    with pytest.raises(WorkspaceError, match=r"no dumps of step 7 on device 0 \(steps: 0, 5\)"):
        choose("/r", training + [helper], DumpSelection(step=7), files)  # the helper's step is not the device's
    # Two sessions of one device, the same files each: the newer session is read, the older named.
    older = TreePosition("20241119060000", 0, "ge_default_1", 11, 5)
    choice = choose("/r", [older, training[1]], DumpSelection(), {older: 52, training[1]: 52})
    assert choice.models == ((0, "20241119070640/0/ge_default_1/11"),) and not choice.keeps(older)
    assert choice.note.endswith("not read (give one's folder to read it): 20241119060000/0/ge_default_1/11")
    # Without file counts, the model with the most step folders.
    assert choose("/r", training + [helper]).models == ((0, "20241119070640/0/ge_default_1/11"),)


def test_a_reference_tree_follows_the_step_and_device_else_takes_its_only_one():
    both = choose("/ref", TWO_BY_TWO, DumpSelection(0, 1, follow=True))
    assert (both.step, both.device) == (0, 1)
    assert both.note.startswith("dumps of step 0 on device 1 (the same step and device); also in the tree:")
    one_device = choose("/ref", tree((0, 0), (0, 5)), DumpSelection(5, 3, follow=True))
    assert (one_device.step, one_device.device) == (5, 0)
    assert one_device.note == ("dumps of step 5 on device 0 (its only device); also in the tree: step 0 of device 0 "
                               "(pick with --step N --device N)")
    only = choose("/ref", tree((0, 7)), DumpSelection(5, 3, follow=True))
    assert (only.step, only.device, only.note) == (7, 0, "dumps of step 7 on device 0 (its only step and device)")
    assert choose("/ref", tree((2, 7)), DumpSelection(7, 2, follow=True)).note == ""  # exactly it: nothing to say
    assert choose("/ref", [], DumpSelection(5, 1, follow=True)) == Choice(None, None)  # a flat folder is read
    with pytest.raises(WorkspaceError, match=r"^/ref: no dumps of step 3 on device 0 \(steps: 0, 5\)$"):
        choose("/ref", tree((0, 0), (0, 5)), DumpSelection(3, 0, follow=True))  # several steps, not that one


def test_selections_for_every_step_and_every_device():
    held = choose("/r", TWO_BY_TWO, DumpSelection())
    pairs = lambda selections: [(s.device, s.step) for s in selections]  # noqa: E731
    assert pairs(each_selection("/r", held, every_step=True, every_device=False, wanted=DumpSelection())) == [
        (0, 0), (0, 5)]
    assert pairs(each_selection("/r", held, every_step=True, every_device=False,
                                wanted=DumpSelection(device=1))) == [(1, 0), (1, 5)]
    assert pairs(each_selection("/r", held, every_step=False, every_device=True, wanted=DumpSelection())) == [
        (0, 5), (1, 5)]
    assert pairs(each_selection("/r", held, every_step=False, every_device=True,
                                wanted=DumpSelection(step=7))) == [(0, 7), (1, 7)]  # each run says it lacks it
    assert pairs(each_selection("/r", held, every_step=True, every_device=True, wanted=DumpSelection())) == [
        (0, 0), (0, 5), (1, 0), (1, 5)]
    with pytest.raises(WorkspaceError, match=r"^/r: no dumps of device 4 \(devices: 0, 1\)$"):
        each_selection("/r", held, every_step=True, every_device=False, wanted=DumpSelection(device=4))
    flat = Choice(None, None)
    assert each_selection("/f", flat, every_step=True, every_device=False, wanted=DumpSelection()) == [
        DumpSelection()]
    assert each_selection("/f", flat, every_step=True, every_device=False, wanted=DumpSelection(device=1)) == [
        DumpSelection(device=1)]  # asked of a folder that is no tree: its scan says so


def test_a_selection_s_log_collects_each_noted_choice_once_and_is_no_part_of_its_value():
    choice = choose("/r", TWO_BY_TWO, DumpSelection())
    assert choice.note  # the tree holds several steps and devices: there is something to say
    log = ChoiceLog()
    asked = DumpSelection(step=0, log=log)
    assert asked == DumpSelection(step=0) and hash(asked) == hash(DumpSelection(step=0))
    asked.record("/r", choice)
    asked.record("/r", choice)  # once
    asked.record("/s", Choice(0, 0))  # no note: nothing to say
    following(asked).record("/o", choice)  # another run of the job, read for the same command: same log
    asked.at(5, 1).record("/t", choice)
    asked.unlogged().record("/ahead", choice)  # a look ahead: not the command's
    DumpSelection(step=0).record("/nowhere", choice)  # no log: dropped
    assert log.choices == [("/r", choice), ("/o", choice), ("/t", choice)]


def test_a_device_folder_is_empty_only_when_no_dump_lies_in_or_below_it_and_the_device_has_none_elsewhere(tmp_path):
    """Names only (headers are not read by a scan). A review found dumps lying directly in ``{time}/1`` (no model
    or step folders) and a restarted device's empty second session both called "no dump files"."""
    from precision_tool.formats.dump_names import scan_dump_folder

    def touch(*parts):
        path = tmp_path.joinpath(*parts)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"")

    touch("20240613143502", "0", "ge_a", "1", "5", "Add.a.1.2.1700000000000001")
    touch("20240613143507", "1", "Add.a.1.2.1700000000000002")  # directly in the device folder
    (tmp_path / "20240613143599" / "0").mkdir(parents=True)  # device 0 again: dumped nothing this session
    (tmp_path / "20240613143512" / "2").mkdir(parents=True)  # device 2: nothing anywhere
    choice = scan_dump_folder(str(tmp_path), DumpSelection()).choice
    assert choice.empty_devices == ((2, "20240613143512/2"),)
    assert choice.note.endswith("; no dump files for device 2 (20240613143512/2)")
