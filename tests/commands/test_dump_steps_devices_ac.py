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
from precision_tool.formats.dump_tree import DumpSelection

pytestmark = pytest.mark.compat
TENSORS = 4 * 2  # one step of one device: the chain's ops op0 .. op3, input 0 and output 0 each


@pytest.fixture
def workspace(tmp_path):
    ws = tmp_path / "ws"
    clean = chain_dump_tree(tmp_path, ws / "npu" / "debug_0" / "dump", broken=(0, 0))
    shutil.copytree(clean.graph, ws / "npu" / "debug_0" / "graph")
    shutil.copytree(clean.ref, ws / "tf" / "dump")
    return ws


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
    assert f"First diverging step: 0 (op2; 3 of {TENSORS} tensors fail); steps 0, 5 of device 0 compared." in lines
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


def test_the_overflow_run_follows_the_step_asked_for_or_takes_its_only_one_and_never_stops_ac(workspace, capsys,
                                                                                            tmp_path):
    """The overflow run is another run, often of one step: ``ac --step 5`` or ``--device 1`` on the dump run must not
    fail on it (a user walk found exit 2, "no dumps of step 5", even from the step ``ac`` itself advised)."""
    step_0 = workspace / "npu" / "debug_0" / "dump" / "20240613143502" / "0" / "ge_default_cmp" / "1" / "0"
    overflow = workspace / "overflow" / "dump" / "20240613150000" / "0" / "ge_default_cmp" / "1"
    shutil.copytree(step_0, overflow / "0")
    for flags in (["--step", "5"], ["--device", "1"]):
        code = main(["-d", str(workspace), "ac", "-c", "--no-replay", "-o", str(tmp_path / "o" / flags[1]), *flags])
        out = capsys.readouterr().out
        assert code in (0, 1) and f"NPU dumps of {workspace / 'overflow' / 'dump'}: dumps of step 0 on device 0 (its " \
                                  f"only {'step' if flags[0] == '--step' else 'device'})" in out
    shutil.copytree(step_0, overflow / "3")  # two steps, neither 5: said, ac goes on, and it is no clean pass
    code = main(["-d", str(workspace), "ac", "-c", "--no-replay", "-o", str(tmp_path / "o" / "two"), "--step", "5"])
    out = capsys.readouterr().out
    assert code == 2  # step 5 compares clean, but the overflow records were not read (a review found exit 0)
    assert (f"Overflow run: its records were not read: {workspace / 'overflow' / 'dump'}: no dumps of step 5 on "
            "device 0 (steps: 0, 3).") in out.splitlines()
    assert main(["-d", str(workspace), "ov", "--step", "0"]) in (0, 1)  # the dump run's step 0: the overflow run's too


def test_npu_vs_npu_compares_like_with_like_when_the_other_run_holds_one_step(workspace, capsys, tmp_path):
    """A fusion-off run dumped at step 0 only, beside a dump run of steps 0 and 5: without --step, the dump run is
    read at step 0 too (at different steps the weights differ and every op would seem to; a user walk found ``ac``
    blaming a fusion pass on that)."""
    tree = workspace / "npu" / "debug_0" / "dump"
    other = tmp_path / "other" / "20240613150000" / "0" / "ge_default_cmp" / "1" / "0"
    shutil.copytree(tree / "20240613143502" / "0" / "ge_default_cmp" / "1" / "5", other)  # clean
    code = main(["compare", "-m", str(tree), "-g", str(tmp_path / "other"), "-out", str(tmp_path / "o1")])
    out = capsys.readouterr().out
    assert code == 1 and (f"NPU dumps: dumps of step 0 on device 0 (to match {tmp_path / 'other'}, which holds "
                          "only that step)") in out
    assert "op2" in out.split("First divergence:")[1].splitlines()[0]
    code = main(["compare", "--step", "5", "-m", str(tree), "-g", str(tmp_path / "other"), "-out",
                 str(tmp_path / "o2")])
    assert code == 0  # asked for: step 5 against the other run's only step, as asked


def test_vcs_ni_and_report_read_the_result_of_the_step_asked_for_and_say_which_they_read(workspace, capsys):
    """After ``compare --steps all`` the workspace holds a result per step. A user walk found ``ni --step 0`` showing
    step 5's passing row beside step 0's failing dump, and ``vcs`` passing on step 5 unasked and unsaid."""
    assert main(["-d", str(workspace), "compare", "--steps", "all"]) == 1  # step 0 diverges
    capsys.readouterr()
    code, out = main(["-d", str(workspace), "vcs", "--step", "0"]), capsys.readouterr().out
    assert code == 1 and f"(step 0 on device 0): {TENSORS} tensors compared, 3 below cosine" in out.splitlines()[0]
    code, out = main(["-d", str(workspace), "vcs"]), capsys.readouterr().out
    assert code == 0 and f"(step 5 on device 0): {TENSORS} tensors compared, 0 below" in out.splitlines()[0]
    assert main(["-d", str(workspace), "--step", "0", "vcs"]) == 1  # before the command too
    capsys.readouterr()
    assert main(["-d", str(workspace), "vcs", "--step", "3"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("precision_tool: error: no result of step 3 under ") and len(err.splitlines()) == 1
    assert "(results of: step 0 on device 0; step 5 on device 0)" in err
    main(["-d", str(workspace), "ni", "op2", "--step", "0"])
    out = capsys.readouterr().out
    result = out.split("Comparison result ")[1]
    assert result.startswith(f"{workspace / 'temp'}") and "(step 0 on device 0)" in result.splitlines()[0]
    assert "fail" in result.split("op2:output:0")[1].splitlines()[0]
    assert f"Local error: not measured in {os.path.basename(result.splitlines()[0].split()[0])}: that run replayed " \
           "nothing" in out  # a user walk read "ac -c replays each op when tf/graph ... are there" as missing inputs
    main(["-d", str(workspace), "ni", "op2", "--device", "1"])
    assert "Comparison result of step 5 on device 1: none under" in capsys.readouterr().out
    # A newer result of step 5 on device 1 is not shown beside device 0's step 5 dumps (a review found it was).
    assert main(["-d", str(workspace), "compare", "--step", "5", "--device", "1"]) == 0
    capsys.readouterr()
    main(["-d", str(workspace), "ni", "op2", "--step", "5"])
    out = capsys.readouterr().out
    assert "(step 5 on device 0)" in out.split("Comparison result ")[1].splitlines()[0]
    assert main(["-d", str(workspace), "vcs", "--step", "5"]) == 0 and "(step 5 on device 0)" in capsys.readouterr().out


def test_a_shared_out_folder_finds_each_steps_result_from_its_lossless_file(workspace, capsys, tmp_path):
    """Two runs into one -out folder keep one summary.json (the last): a review found the first run's step unknown,
    and 'vcs -f OUT --step 0' saying no result of step 0 was there."""
    out = str(tmp_path / "shared")
    assert main(["-d", str(workspace), "compare", "--step", "0", "-out", out]) == 1
    assert main(["-d", str(workspace), "compare", "--step", "5", "-out", out]) == 0
    capsys.readouterr()
    assert main(["-d", str(workspace), "vcs", "-f", out, "--step", "0"]) == 1
    assert f"(step 0 on device 0): {TENSORS} tensors compared, 3 below" in capsys.readouterr().out


def test_fusion_runs_read_at_different_steps_blame_no_op_on_fusion(workspace, tmp_path):
    """``--step 5`` of the fusion-on run against a fusion-off run of step 0 only: a user walk found ``ac`` blaming a
    fusion pass on what was the difference between two steps."""
    from precision_tool.checks.fusion_compare import compare_fusion_runs

    tree = workspace / "npu" / "debug_0" / "dump"
    other = tmp_path / "off" / "20240613150000" / "0" / "ge_default_cmp" / "1" / "0"
    shutil.copytree(tree / "20240613143502" / "0" / "ge_default_cmp" / "1" / "0", other)  # step 0: broken at op2
    graph = workspace / "npu" / "debug_0" / "graph"
    apart = compare_fusion_runs(str(tree), str(tmp_path / "off"), str(graph), str(graph),
                                selection=DumpSelection(step=5))
    assert apart.steps_differ.startswith("the fusion-on run was read at step 5, the fusion-off run at step 0 (its "
                                         "only one)")
    assert apart.culprits == () and apart.to_dict()["steps_differ"] == apart.steps_differ
    together = compare_fusion_runs(str(tree), str(tmp_path / "off"), str(graph), str(graph))  # both at step 0
    assert together.steps_differ == "" and "steps_differ" not in together.to_dict()


def test_ac_with_a_step_or_device_suggests_commands_that_keep_them(workspace, capsys, tmp_path):
    """A user walk found ``ac -c --device 1`` suggesting ``ni OP``, which shows device 0's dumps -- a pass beside a
    verdict that blames the op."""
    code = main(["-d", str(workspace), "ac", "-c", "--no-replay", "-o", str(tmp_path / "o"), "--step", "0",
                 "--device", "0"])
    lines = capsys.readouterr().out.splitlines()
    suggested = [line for line in lines[lines.index("Next:") + 1:] if line.startswith("  precision_tool ")]
    assert code == 1 and suggested and all(line.endswith(" --step 0 --device 0") for line in suggested
                                           if line.split()[3] in ("ni", "pt", "vcs", "ls", "ac", "report"))
    assert any(" ni " in line for line in suggested)


def test_ac_names_each_runs_folder_and_says_where_fusion_was_measured(workspace, capsys, tmp_path):
    """A user walk found two unlabelled, seemingly contradicting ``NPU dumps:`` lines (the comparison's step 5, the
    fusion check's step 0), a verdict on fusion measured at step 0 without saying so, and ``--json`` naming only
    step 0."""
    from precision_tool.checks.fusion_compare import compare_fusion_runs

    tree = workspace / "npu" / "debug_0" / "dump"
    off = workspace / "npu" / "debug_1" / "dump" / "20240613150000" / "0" / "ge_default_cmp" / "1" / "0"
    shutil.copytree(tree / "20240613143502" / "0" / "ge_default_cmp" / "1" / "0", off)
    code = main(["-d", str(workspace), "--json", "ac", "-c", "--no-replay", "-o", str(tmp_path / "j")])
    data = json.loads(capsys.readouterr().out)["data"]
    assert (data["compare"]["dump_step"], data["compare"]["dump_device"]) == (5, 0)
    assert main(["-d", str(workspace), "ac", "-c", "--no-replay", "-o", str(tmp_path / "t")]) == code
    lines = [line for line in capsys.readouterr().out.splitlines() if line.startswith("NPU dumps")]
    assert lines[0].startswith("NPU dumps: dumps of step 5 on device 0") and len(lines) > 1
    assert all(line.startswith("NPU dumps of ") for line in lines[1:])
    graph = workspace / "npu" / "debug_0" / "graph"
    fusion = compare_fusion_runs(str(tree), str(workspace / "npu" / "debug_1" / "dump"), str(graph), str(graph))
    assert fusion.read_at == "step 0" and fusion.steps_differ == ""
