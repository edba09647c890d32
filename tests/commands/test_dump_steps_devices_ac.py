"""``ac -c`` on a dump tree holding several steps (issue 17): the newest step is detailed, the other steps of the
device are compared too and the first diverging step is named; ``--step N`` compares that step alone.

Workspace: the chain of ``cmp_builders`` (4 Add ops, 8 tensors) dumped at steps 0 and 5 of devices 0 and 1; only
step 0 of device 0 carries an error (op2's output off by noise of 2.0: op2's output, op3's input -- the same bytes
-- and op3's output fail)."""
import json
import os
import shutil
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), os.pardir, "comparison"))

from cmp_builders import chain_dump_tree
from precision_tool.cli import main
from precision_tool.formats.dump_tree import DumpSelection, request

pytestmark = pytest.mark.compat


@pytest.fixture
def workspace(tmp_path):
    ws = tmp_path / "ws"
    clean = chain_dump_tree(tmp_path, ws / "npu" / "debug_0" / "dump", broken=(0, 0))
    shutil.copytree(clean.graph, ws / "npu" / "debug_0" / "graph")
    shutil.copytree(clean.ref, ws / "tf" / "dump")
    yield ws
    request(DumpSelection())


def autocheck(capsys, ws, *flags):
    code = main(["-d", str(ws), "--json", "ac", "-c", "--no-replay", "-o", str(ws.parent / "out"), *flags])
    return code, json.loads(capsys.readouterr().out)


def test_ac_names_an_earlier_diverging_step_than_the_one_it_details(workspace, capsys):
    code, report = autocheck(capsys, workspace)
    compare = report["data"]["compare"]
    assert compare["counts"]["failed"] == 0  # the newest step, 5, is detailed: clean
    assert [(run["step"], run["device"], run["failed"], run["first_divergence"]) for run in compare["steps"]] == [
        (0, 0, 3, "op2"), (5, 0, 0, None)]
    assert code == 1 and report["exit_code"] == 1  # a step fails: the check fails
    code = main(["-d", str(workspace), "ac", "-c", "--no-replay", "-o", str(workspace.parent / "out2")])
    lines = capsys.readouterr().out.splitlines()
    assert "First diverging step: 0 (op2; 3 of 8 tensors fail); steps 0, 5 of device 0 compared." in lines
    assert ("  - step 0 diverges first, before the step 5 detailed here (first divergence op2, 3 tensor(s) fail): "
            "detail it with ac -c --step 0") in lines
    assert os.listdir(str(workspace.parent / "out2")) != [] and not (workspace.parent / "out2" / "step_0").exists()


def test_ac_with_a_step_compares_that_step_alone(workspace, capsys):
    code, report = autocheck(capsys, workspace, "--step", "5")
    assert code == 0 and "steps" not in report["data"]["compare"]
    code, report = autocheck(capsys, workspace, "--step", "0")
    assert code == 1 and report["data"]["compare"]["divergence"]["first"]["op_name"] == "op2"


def test_ac_on_a_device_whose_steps_all_pass_says_no_step_diverges(workspace, capsys):
    code = main(["-d", str(workspace), "ac", "-c", "--no-replay", "-o", str(workspace.parent / "out"),
                 "--device", "1"])
    assert code == 0
    assert "No step diverges: steps 0, 5 of device 1 compared." in capsys.readouterr().out.splitlines()
