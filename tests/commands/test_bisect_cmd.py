"""``bisect fusion|precision -- precision_tool emulate ...`` on the sample CNN with faults only a config removes, and
the emulator honouring those configs (issue 20). Each trial is a real ``emulate`` process: about 45 s in all."""
import json
import math
import os
import sys
from pathlib import Path

import pytest

from precision_tool.cli import main
from precision_tool.formats.customize_dtypes import read_customize_dtypes
from precision_tool.formats.fusion_result import read_fusion_switches

pytestmark = pytest.mark.tf

REPO = Path(__file__).resolve().parent.parent.parent
CNN = str(REPO / "sample_dumps" / "models" / "cnn.py")
EMULATE = [sys.executable, "-m", "precision_tool", "emulate", CNN, "--numerics", "ideal"]
CONV2 = "small_cnn_1/conv2_1/convolution"
PASS_FAULT = ["--perturb-pass", "ConvBiasaddFusionPass=0.3"]
FP16_FAULT = ["--perturb", f"{CONV2}=bias:3@fp16"]


def emulate(workspace, *extra):
    """In a child process, as bisect runs it: emulate seeds and switches on TensorFlow's determinism for the
    process it runs in (TF_DETERMINISTIC_OPS too), which must not leak into the tests that follow."""
    import subprocess

    done = subprocess.run([*EMULATE, "-o", str(workspace), *extra], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    assert done.returncode == 0, done.stdout.decode(errors="replace")[-2000:]


def manifest(workspace):
    return json.loads((Path(workspace) / "manifest.json").read_text())


def bisect_json(capsys, workspace, *args):
    code = main(["-d", str(workspace), "--json", "bisect", *args])
    captured = capsys.readouterr()
    return code, json.loads(captured.out), captured.err


# --------------------------------------------------------------------------------------------- the emulator
def test_a_switch_file_turns_off_exactly_its_pass_and_stays_in_the_workspace(tmp_path, capsys):
    workspace = tmp_path / "ws"
    (workspace / "fusion").mkdir(parents=True)
    switch = workspace / "fusion" / "fusion_switch.cfg"
    switch.write_text('{"Switch": {"GraphFusion": {"MatMulBiasAddFusionPass": "off"}, "UBFusion": {}}}\n')
    emulate(workspace, "--fusion", "switch", "--perturb-pass", "MatMulBiasAddFusionPass=0.3",
            "--perturb-pass", "ConvBiasaddFusionPass=0.2")
    capsys.readouterr()
    record = manifest(workspace)
    passes = {name for group in record["fusion_groups"] for name in group["passes"]}
    assert "MatMulBiasAddFusionPass" not in passes and "ConvBiasaddFusionPass" in passes  # the file, as read
    landed = {fault["pass"]: fault["npu_ops"]["debug_0"] for fault in record["pass_faults"]}
    assert landed["MatMulBiasAddFusionPass"] == []  # its pass is off: the fault has nowhere to be
    assert CONV2 in landed["ConvBiasaddFusionPass"]
    assert read_fusion_switches(switch).is_enabled("MatMulBiasAddFusionPass", "graph_fusion") is False  # kept


def test_an_fp16_only_fault_is_gone_when_customize_dtypes_keeps_the_op_in_float32(tmp_path, capsys):
    faulty, kept = tmp_path / "faulty", tmp_path / "kept"
    emulate(faulty, *FP16_FAULT)
    (kept / "precision").mkdir(parents=True)
    (kept / "precision" / "customize_dtypes.cfg").write_text(
        f"{CONV2}::InputDtype:float32,float32,float32,OutputDtype:float32\n")
    emulate(kept, *FP16_FAULT)
    capsys.readouterr()
    assert manifest(kept)["keep_fp32"] == [CONV2]
    for workspace, code in ((faulty, 1), (kept, 0)):
        assert main(["-d", str(workspace), "compare", "-out", str(tmp_path / f"cmp_{workspace.name}")]) == code
    out = capsys.readouterr().out
    assert f"{CONV2}:output:0" in out  # named among the faulty run's failures


# --------------------------------------------------------------------------------------------- bisect
@pytest.fixture(scope="module")
def pass_fault_workspace(tmp_path_factory):
    workspace = tmp_path_factory.mktemp("bisect") / "ws"
    emulate(workspace, *PASS_FAULT)
    return workspace


def test_bisect_fusion_names_the_faulty_pass_and_proves_its_switch_file(pass_fault_workspace, capsys):
    command = [*EMULATE, "--fusion", "switch", *PASS_FAULT]
    code, report, err = bisect_json(capsys, pass_fault_workspace, "fusion", "--judge", "outputs", "-c", "0.999",
                                    "--", *command)
    data = report["data"]
    assert code == 0 and data["culprit_passes"] == ["ConvBiasaddFusionPass"]
    candidates = data["candidates"]
    assert "ConvBiasaddFusionPass" in candidates and len(candidates) >= 3
    assert len(data["runs"]) <= math.ceil(math.log2(len(candidates))) + 2
    switches = read_fusion_switches(data["config_file"])  # off: exactly the culprit
    assert [p for p in candidates if not switches.is_enabled(p, "graph_fusion")] == ["ConvBiasaddFusionPass"]
    assert data["before"]["restored"] is False and data["after"]["restored"] is True
    proof = [run for run in data["runs"] if run["changed"] == ["ConvBiasaddFusionPass"]]
    assert proof and proof[0]["restored"] and proof[0]["failing"] == 0  # the re-run with only that file
    assert err.count("bisect fusion: run ") == len(data["runs"])  # a progress line per run
    assert 'parameter_map["fusion_switch_file"]' in data["script_line"]
    for run in data["runs"]:  # every run kept apart, with its config and its log
        assert os.path.isfile(os.path.join(run["folder"], "fusion", "fusion_switch.cfg"))
        assert os.path.isfile(run["folder"] + ".log")

    code, again, err = bisect_json(capsys, pass_fault_workspace, "fusion", "--judge", "outputs", "-c", "0.999",
                                   "--resume", "--", *command)
    assert code == 0 and again["data"]["culprit_passes"] == ["ConvBiasaddFusionPass"]
    assert "run " not in err and again["data"]["runs"] == data["runs"]  # resumed: nothing ran again


def test_bisect_precision_names_the_op_whose_fp16_kernel_is_wrong(tmp_path, capsys):
    workspace = tmp_path / "ws"
    emulate(workspace, *FP16_FAULT)
    capsys.readouterr()
    code, report, _err = bisect_json(capsys, workspace, "precision", "--", *EMULATE, *FP16_FAULT)
    data = report["data"]
    assert code == 0 and data["culprit_ops"] == [CONV2]
    assert len(data["candidates"]) >= 8  # the fault fails everything after it: many candidates
    assert len(data["runs"]) <= math.ceil(math.log2(len(data["candidates"]))) + 2
    assert read_customize_dtypes(data["config_file"]).float32_ops() == frozenset([CONV2])
    assert data["after"]["failing"] == 0 and data["before"]["failing"] > 0


def test_bisect_without_a_fix_among_the_candidates_says_so_and_exits_1(pass_fault_workspace, capsys):
    """A precision bisection of a fusion fault: every failing op in float32 still carries the pass's error."""
    code, report, _err = bisect_json(capsys, pass_fault_workspace, "precision", "--judge", "outputs", "-c", "0.999",
                                     "--", *EMULATE, *PASS_FAULT)
    assert code == 1 and report["data"]["culprit_ops"] == [] and len(report["data"]["runs"]) == 1


def test_bisect_needs_a_command_and_a_failing_run(tmp_path, capsys):
    assert main(["-d", str(tmp_path), "bisect", "fusion"]) == 2
    assert "bisect needs the NPU run to repeat after --" in capsys.readouterr().err
    assert main(["-d", str(tmp_path), "bisect", "fusion", "--", "true"]) == 2
    assert "npu/debug_0/dump: no such folder" in capsys.readouterr().err


def test_after_ac_c_precision_candidates_are_ranked_by_local_error(tmp_path, capsys):
    """ac -c replays each op: the op whose own error is largest is tried first (here: the planted one)."""
    workspace = tmp_path / "ws"
    planted = "small_cnn_1/res_conv_1/convolution"
    fault = ["--perturb", f"{planted}=bias:3@fp16"]
    emulate(workspace, *fault)
    assert main(["-d", str(workspace), "ac", "-c"]) == 1
    capsys.readouterr()
    code, report, _err = bisect_json(capsys, workspace, "precision", "--", *EMULATE, *fault)
    data = report["data"]
    assert code == 0 and data["candidates"][0] == planted and data["culprit_ops"] == [planted]
    assert len(data["runs"]) <= math.ceil(math.log2(len(data["candidates"]))) + 2


def test_a_command_that_does_not_reproduce_the_failure_is_said_so(pass_fault_workspace, capsys):
    """Without the planted pass fault the command's run passes: no culprit may be named (review of issue 20)."""
    code, report, _err = bisect_json(capsys, pass_fault_workspace, "fusion", "--judge", "outputs", "-c", "0.999",
                                     "--", *EMULATE, "--fusion", "switch")
    assert code == 1 and report["data"]["culprit_passes"] == [] and len(report["data"]["runs"]) == 1
    assert report["data"]["runs"][0]["changed"] == [] and report["data"]["runs"][0]["restored"] is True


def test_a_run_that_ignores_the_switch_file_is_an_error_not_a_verdict(pass_fault_workspace, capsys):
    code = main(["-d", str(pass_fault_workspace), "bisect", "fusion", "--judge", "outputs", "-c", "0.999", "--",
                 *EMULATE, *PASS_FAULT])  # no --fusion switch: every pass still fires
    assert code == 2
    assert "the NPU run did not read the switch file: ConvBiasaddFusionPass" in capsys.readouterr().err


def test_an_interrupted_bisection_resumes_without_redoing_a_run(pass_fault_workspace, tmp_path, capsys, monkeypatch):
    """The second run of the command fails (as a Ctrl-C or a crash would leave it): exit 2 naming --resume; then
    --resume, from another folder with a relative workspace and a command that changes folder, finishes the
    search without running the first trial again."""
    counter, gate = tmp_path / "count", tmp_path / "fail"
    gate.touch()
    inner = " ".join([*EMULATE, "--fusion", "switch", *PASS_FAULT])
    script = (f'n=$(cat {counter} 2>/dev/null || echo 0); echo $((n + 1)) > {counter}; '
              f'if [ "$n" = 1 ] && [ -e {gate} ]; then exit 3; fi; cd / && exec {inner}')
    command = ["sh", "-c", script]
    args = ["fusion", "--judge", "outputs", "-c", "0.999", "--", *command]
    assert main(["-d", str(pass_fault_workspace), "bisect", *args]) == 2
    assert "--resume continues from there" in capsys.readouterr().err
    gate.unlink()
    monkeypatch.chdir(pass_fault_workspace.parent)  # a relative -d: each run still writes into its own folder
    code, report, err = bisect_json(capsys, pass_fault_workspace.name, *args[:-len(command) - 1], "--resume", "--",
                                    *command)
    data = report["data"]
    assert code == 0 and data["culprit_passes"] == ["ConvBiasaddFusionPass"]
    numbers = [run["run"] for run in data["runs"]]
    assert numbers == sorted(set(numbers)) and numbers[0] == 1  # the failed run's folder is skipped, none redone
    assert err.count("bisect fusion: run 1:") == 0


def test_all_off_but_one_pass_still_records_that_pass_and_force_keeps_the_switch_file(tmp_path, capsys):
    from precision_tool.formats.fusion_result import read_fusion_result

    workspace = tmp_path / "ws"
    (workspace / "fusion").mkdir(parents=True)
    switch = workspace / "fusion" / "fusion_switch.cfg"
    switch.write_text('{"Switch": {"GraphFusion": {"ALL": "off", "ConvBiasaddFusionPass": "on"}, '
                      '"UBFusion": {"ALL": "off"}}}\n')  # the documented "everything off except X"
    emulate(workspace, "--fusion", "switch")
    assert read_fusion_result(workspace / "fusion" / "fusion_result.json").effective_passes() == (
        "ConvBiasaddFusionPass",)
    emulate(workspace, "--fusion", "switch", "--force")  # replacing the emulation keeps the run's settings
    assert switch.read_text().startswith('{"Switch": {"GraphFusion": {"ALL": "off"')


def test_an_unreadable_dump_of_the_failing_run_is_named(tmp_path, capsys):
    workspace = tmp_path / "ws"
    emulate(workspace)
    dump = sorted((workspace / "npu" / "debug_0" / "dump").rglob("Add.*"))[0]
    dump.write_bytes(dump.read_bytes()[:50])  # truncated
    code, report, _err = bisect_json(capsys, workspace, "fusion", "--", *EMULATE, "--fusion", "switch")
    assert code == 0 and report["data"]["runs"] == []  # the rest passes: nothing to bisect, nothing run
    (line,) = report["data"]["unreadable"]
    assert line.startswith(str(dump)) and "truncated" in line


def test_an_unreadable_reference_file_of_the_failing_run_is_named_too(tmp_path, capsys):
    """bisect says what every report says (reports.summary.unusable_inputs): reference files count as well."""
    workspace = tmp_path / "ws"
    emulate(workspace)
    reference = sorted((workspace / "tf" / "dump").glob("*.npy"))[0]
    reference.write_bytes(reference.read_bytes()[:20])  # truncated
    code, report, _err = bisect_json(capsys, workspace, "fusion", "--", *EMULATE, "--fusion", "switch")
    assert code in (0, 1)
    assert [line for line in report["data"]["unreadable"] if line.startswith(str(reference))]
