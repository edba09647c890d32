"""``--step N`` / ``--device N`` after the inspection commands (``ls``, ``ni``, ``pt``, ``ov``, ``dc``), and the
``NPU dumps: ...`` line they print when the tree held several steps or devices -- only then (issue 17).

The workspace is ``inspect_builders``' (its dumps in ``.../20240101000000/0/ge_default_1/1/0``) with the step folder
copied to step 3 of device 0 and to step 3 of device 1, where ``out/Add``'s dump is left out: an op dumped in every
folder but that one tells which folder a command read (``inspect_builders.add_steps_and_devices``)."""
import json
import os

import pytest
from inspect_builders import add_steps_and_devices, write_inspect_workspace

from precision_tool.cli import main


pytestmark = pytest.mark.compat
DEFAULT_NOTE = ("NPU dumps: dumps of step 3 on device 0 (the newest step of the lowest device); also in the tree: "
                "step 0 of device 0 and device 1 (pick with --step N --device N)")
DEVICE_1_NOTE = ("NPU dumps: dumps of step 3 on device 1 (as asked, newest step); also in the tree: device 0 "
                 "(pick with --step N --device N)")


@pytest.fixture(scope="module")
def plain(tmp_path_factory):
    return write_inspect_workspace(tmp_path_factory.mktemp("plain"))


@pytest.fixture(scope="module")
def steps(tmp_path_factory):
    return add_steps_and_devices(write_inspect_workspace(tmp_path_factory.mktemp("steps")))


def run(capsys, workspace, *argv):
    code = main(["-d", workspace, *argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def dumped_column(out: str) -> str:
    (row,) = [line.split() for line in out.splitlines() if line.startswith("4 ")]
    return row[-1]


@pytest.mark.parametrize("argv", [["ls", "-n", "Add"], ["ni", "out/Add"], ["pt", "relu1/Relu:output:0[0, 0, :2]"],
                                  ["ov"]])
def test_the_inspection_commands_say_which_step_and_device_they_read(steps, plain, capsys, argv):
    code, out, _ = run(capsys, steps, *argv)
    assert out.splitlines().count(DEFAULT_NOTE) == 1
    code, out, _ = run(capsys, plain, *argv)  # one step of one device: nothing to say
    assert "NPU dumps:" not in out


def test_ls_after_the_command_reads_exactly_the_device_asked_for(steps, capsys):
    code, out, _ = run(capsys, steps, "ls", "-n", "Add")
    assert code == 0 and dumped_column(out) == "yes"  # default: device 0, step 3
    code, out, _ = run(capsys, steps, "ls", "-n", "Add", "--device", "1")
    assert dumped_column(out) == "-" and DEVICE_1_NOTE in out.splitlines()
    code, out, _ = run(capsys, steps, "ls", "-n", "Add", "--device", "1", "--step", "3")
    assert dumped_column(out) == "-"
    code, out, _ = run(capsys, steps, "--device", "1", "ls", "-n", "Add", "--device", "0")  # after wins
    assert dumped_column(out) == "yes" and "dumps of step 3 on device 0 (as asked, newest step)" in out


def test_pt_and_ni_read_the_device_asked_for(steps, capsys):
    code, out, _ = run(capsys, steps, "pt", "out/Add:output:0[0, 0, :2]")
    assert code == 0 and DEFAULT_NOTE in out.splitlines()
    code, _, err = run(capsys, steps, "pt", "out/Add:output:0", "--device", "1")
    assert code == 2 and "graph op 'out/Add' (Add) has no dump file under" in err
    code, out, _ = run(capsys, steps, "ni", "out/Add", "--device", "1", "--step", "3")
    assert "NPU dump: none" in out and "NPU dumps: dumps of step 3 on device 1 (as asked)" in out
    code, _, err = run(capsys, steps, "ni", "out/Add", "--step", "9")
    assert code == 2 and err.strip().endswith("no dumps of step 9 on device 0 (steps: 0, 3)")


def test_dc_converts_the_files_of_the_step_and_device_asked_for(steps, tmp_path, capsys):
    dump = os.path.join(steps, "npu", "debug_0", "dump")
    code, out, _ = run(capsys, steps, "--json", "dc", dump, "-o", str(tmp_path / "d0"))
    data = json.loads(out)["data"]
    assert code == 0 and data["files"] == 3 and data["dump_choice"] == [DEFAULT_NOTE]  # Conv2D, Relu, Add
    code, out, _ = run(capsys, steps, "--json", "dc", dump, "-o", str(tmp_path / "d1"), "--device", "1")
    data = json.loads(out)["data"]
    assert code == 0 and data["files"] == 2 and data["dump_choice"] == [DEVICE_1_NOTE]
    assert not any(name.startswith("Add.") for name in os.listdir(str(tmp_path / "d1")))


def test_emulate_keeps_its_own_step(capsys):
    from precision_tool.commands import build_registry

    registry = build_registry()
    emulate = registry.resolve("emulate").build_parser()
    assert emulate.parse_args(["m.py", "-o", "ws", "--step", "2"]).step == 2  # the training step
    assert not hasattr(emulate.parse_args(["m.py", "-o", "ws"]), "dump_device")
    assert "--device" not in registry.resolve("tf_dump").build_parser().format_help()  # TF: no NPU steps
    assert "--steps N|all" in registry.resolve("compare").build_parser().format_help()
    assert "--steps" not in registry.resolve("vc").build_parser().format_help()
