"""``ac``'s orchestration and verdict on copies of the sample workspace with planted faults."""
import shutil

import numpy as np
import pytest

from checks_builders import (CNN, CONV2, CONV3, RES_CONV, copy_cnn_workspace, dump_file_of, perturb_output,
                             set_npu_to_reference)
from precision_tool.checks.autocheck import AutocheckOptions, run_autocheck
from precision_tool.checks.run_verdict import DUMP_SCAN, FIRST_DIVERGENCE, FUSION, LOCAL_ERROR, OVERFLOW_RECORD
from precision_tool.errors import WorkspaceError
from precision_tool.formats.dump_file import read_dump_header, read_tensor
from sample_counts import MOBILENET, dump_files

WITH_COMPARE = AutocheckOptions(compare=True, workers=1)
WITHOUT_REPLAY = AutocheckOptions(compare=True, workers=1, replay=False)
BY_REPLAY = f"{LOCAL_ERROR} (replay)"


def test_without_compare_the_planted_overflow_is_the_culprit():
    result = run_autocheck(str(CNN))
    culprit = result.verdict.culprit
    assert (culprit.op_name, culprit.evidence) == (CONV3, OVERFLOW_RECORD)
    assert "overflow converting fp32→fp16" in culprit.reasons[0]
    assert culprit.next_commands[0] == f"ni {CONV3}" and culprit.next_commands[1].startswith("pt ")
    assert result.verdict.next_commands[-1] == "ac -c" and result.compare is None
    assert any(reason.startswith("not checked against the reference") for reason in culprit.reasons)


@pytest.mark.tf
def test_with_compare_the_planted_imprecise_op_is_the_culprit_and_fusion_is_cleared():
    result = run_autocheck(str(CNN), WITH_COMPARE)
    verdict = result.verdict
    assert (verdict.culprit.op_name, verdict.culprit.evidence) == (RES_CONV, BY_REPLAY)
    # the sample plants x * (1 + 0.5 z), z standard normal: RED(planted, clean) = 0.5 * rms(x z) / rms(x) ~ 0.5
    measured = result.compare.attribution.culprit
    assert 0.45 < measured.local < 0.55 and measured.inherited < 0.002
    assert measured.precision == "float32"  # a float16 output: float32 is 2^13 finer than what is measured
    reasons = " | ".join(verdict.culprit.reasons)
    assert "not fusion: fused by ConvBiasaddFusionPass (graph), but the fusion-off run computes the same" in reasons
    assert "the kernel itself loses accuracy" in reasons
    assert verdict.culprit.next_commands[:2] == (f"ni {RES_CONV}", f"pt {RES_CONV}:output:0")
    (overflow_line,) = [line for line in verdict.also if line.startswith("overflow run")]
    assert CONV3 in overflow_line and "cost no accuracy" in overflow_line


def test_the_clean_mobilenet_sample_passes_every_tensor_batch_norm_parameters_included():
    result = run_autocheck(str(CNN.parent / "mobilenet_workspace"), WITH_COMPARE)
    compared = result.compare.result
    dumps = (CNN.parent / "mobilenet_workspace" / "npu" / "debug_0" / "dump").rglob("*.*.*")
    inputs_and_outputs = sum(len(read_dump_header(path).inputs) + len(read_dump_header(path).outputs)
                             for path in dumps)  # every dumped tensor compared
    assert compared.counts()["compared"] == inputs_and_outputs
    assert not compared.failing and result.verdict.culprit is None
    # vcs would list nothing: the next step offered is the page that shows where drift grows
    assert result.verdict.next_commands[-1].startswith("report ") and "vcs" not in " ".join(
        result.verdict.next_commands)
    # the fused conv+BN op's scale and offset inputs are float32 (Ascend's BN family), not fp16 subnormals
    bn = [r for r in compared.compared if r.op_name.endswith("expand_1/convolution") and r.tensor_index in (2, 3)
          and r.kind == "input"]
    # two per expanding block's fused conv+BN (block_1 .. block_16 of MobileNetV2), its dump files counted by name
    expand_convs = dump_files("*_expand_1_convolution.*", MOBILENET)
    assert len(bn) == 2 * expand_convs and {r.npu_dtype for r in bn} == {"float32"}


def test_a_fault_on_a_fused_op_is_blamed_on_its_passes(tmp_path):
    workspace = copy_cnn_workspace(tmp_path)
    perturb_output(dump_file_of(workspace, 0, "small_cnn_1_conv2_1_convolution"), rel=0.3)
    alone = run_autocheck(str(workspace)).verdict.culprit
    assert (alone.op_name, alone.evidence) == (CONV2, FUSION)
    assert alone.passes == ("ConvBiasaddFusionPass", "TbeConvElemwiseFusionPass")
    assert "ls -f ConvBiasaddFusionPass" in alone.next_commands
    assert alone.next_commands[-1].startswith("bisect fusion -- YOUR_NPU_RUN")  # a copy of a workspace: no manifest
    compared = run_autocheck(str(workspace), WITH_COMPARE).verdict.culprit
    assert (compared.op_name, compared.evidence) == (CONV2, f"{BY_REPLAY} and {FUSION}")
    assert any(reason.startswith("fusion: it differs from its unfused TF ops") for reason in compared.reasons)


def test_without_an_overflow_run_the_dumps_are_scanned(tmp_path):
    workspace = copy_cnn_workspace(tmp_path)
    shutil.rmtree(workspace / "overflow")
    path = dump_file_of(workspace, 0, "small_cnn_1_pool1_1_MaxPool2d")
    dump = read_dump_header(path)
    values = read_tensor(dump, dump.outputs[0]).copy()
    values.reshape(-1)[0] = np.inf
    with open(path, "r+b") as handle:
        handle.seek(dump.outputs[0].offset)
        handle.write(values.tobytes())
    result = run_autocheck(str(workspace))
    assert any(note.startswith("no overflow run") for note in result.overflow.notes)
    culprit = result.verdict.culprit
    assert (culprit.op_name, culprit.evidence) == ("small_cnn_1/pool1_1/MaxPool2d", DUMP_SCAN)
    assert "output 0 holds 1 inf" in culprit.reasons[0]


def test_missing_reference_keeps_the_other_sections(tmp_path):
    workspace = copy_cnn_workspace(tmp_path)
    shutil.rmtree(workspace / "tf")
    result = run_autocheck(str(workspace), WITH_COMPARE)
    assert result.compare.result is None and "no reference folder" in result.compare.error
    assert result.verdict.culprit.op_name == CONV3  # the overflow still names it
    assert any(line.startswith("comparison not run") for line in result.verdict.also)


def test_a_folder_that_is_not_a_workspace_is_a_one_line_error(tmp_path):
    with pytest.raises(WorkspaceError, match="neither npu/debug_0/dump nor overflow/dump"):
        run_autocheck(str(tmp_path))
    with pytest.raises(WorkspaceError, match="no such workspace folder"):
        run_autocheck(str(tmp_path / "missing"))


def _conv1_planted_without_image_reference(tmp_path):
    # a model input captured under another name (TF2's args_N) has no reference: nothing measured it
    workspace = copy_cnn_workspace(tmp_path)
    for path in (workspace / "tf" / "dump").glob("image.0.*.npy"):
        path.unlink()
    perturb_output(dump_file_of(workspace, 0, "small_cnn_1_conv1_1_convolution"), rel=0.3)
    return workspace


@pytest.mark.tf
def test_an_input_without_reference_is_replayed_from_the_dump_by_position(tmp_path):
    workspace = _conv1_planted_without_image_reference(tmp_path)
    result = run_autocheck(str(workspace), WITH_COMPARE)
    culprit = result.verdict.culprit
    assert culprit.op_name == "small_cnn_1/conv1_1/convolution" and culprit.evidence.startswith(BY_REPLAY)
    replay = result.compare.replay.op(culprit.op_name)
    assert replay.feeds[0] == "image:0 <- NPU small_cnn_1/conv1_1/convolution:input:0"
    assert 0.25 < result.compare.attribution.culprit.local < 0.35  # planted 0.3
    assert "inputs still match" not in " | ".join(culprit.reasons)


def test_without_replay_an_uncompared_input_is_named_not_assumed(tmp_path):
    workspace = _conv1_planted_without_image_reference(tmp_path)
    result = run_autocheck(str(workspace), WITHOUT_REPLAY)
    culprit = result.verdict.culprit
    assert culprit.op_name == "small_cnn_1/conv1_1/convolution"
    assert culprit.evidence == f"{FIRST_DIVERGENCE} and {FUSION}"  # no replay, no jump: its input 0 is unseen
    measured = result.compare.attribution.op(culprit.op_name)
    assert measured.method == "not measured" and measured.uncompared_inputs == (0,)
    reasons = " | ".join(culprit.reasons)
    assert "while its inputs still match" not in reasons and "on good inputs" not in reasons
    assert "while its compared inputs still match (input(s) [0] not compared: assumed right)" in reasons


def _without_the_planted_fault(tmp_path):
    """The sample with every compared NPU tensor of both runs set to its reference rounded to float16 (judged
    without replay, for which hand-set tensors are not consistent). What remains is conv3's overflow record
    (the overflow run is untouched), whose outputs now match. tests/replay checks the same on a clean
    emulation, with replay."""
    workspace = copy_cnn_workspace(tmp_path)
    for run in (0, 1):
        set_npu_to_reference(workspace, run)
    return workspace


@pytest.mark.compat
def test_a_harmless_overflow_is_no_culprit_when_its_outputs_match(tmp_path):
    # issue 13: never blame an overflow record for an op whose outputs match the reference
    workspace = _without_the_planted_fault(tmp_path)
    result = run_autocheck(str(workspace), WITHOUT_REPLAY)
    assert not result.compare.result.failing
    assert result.verdict.culprit is None and result.verdict.headline == "No culprit found."
    assert result.exit_code() == 0
    (overflow_line,) = [line for line in result.verdict.also if line.startswith("overflow run")]
    assert CONV3 in overflow_line and "cost no accuracy" in overflow_line


@pytest.mark.compat
def test_without_compare_a_harmless_overflow_is_named_but_said_unchecked(tmp_path):
    workspace = _without_the_planted_fault(tmp_path)
    culprit = run_autocheck(str(workspace)).verdict.culprit
    assert (culprit.op_name, culprit.evidence) == (CONV3, OVERFLOW_RECORD)
    assert culprit.reasons[1] == ("not checked against the reference: run ac -c to see whether the overflow "
                                  "costs accuracy")


@pytest.mark.compat
def test_an_overflow_op_without_compared_outputs_is_named_and_said_unchecked(tmp_path):
    workspace = _without_the_planted_fault(tmp_path)
    for path in (workspace / "tf" / "dump").glob("small_cnn_1_conv3_1_*.npy"):
        path.unlink()
    culprit = run_autocheck(str(workspace), WITHOUT_REPLAY).verdict.culprit
    assert (culprit.op_name, culprit.evidence) == (CONV3, OVERFLOW_RECORD)
    assert "not checked against the reference: none of its outputs was compared" in culprit.reasons[1]
