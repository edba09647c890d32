"""The NPU helpers at the call sites of real training scripts (original precision_tool users, Ascend ModelZoo).

Each test builds the config the way those scripts do -- their own ``NpuOptimizer`` and Grappler lines
first, then the one ``npu_tf_config`` line -- and checks what npu_bridge will read, what the user is told,
and that a session built with the config still runs a small graph on CPU (TensorFlow without the NPU
plug-in skips the unknown ``NpuOptimizer``). Runs with TF 2.21 here and TF 1.15 / 2.6 in the users'
environments.
"""
import numpy as np
import pytest

import precision_tool.tf_config as npu_tf_config  # before TensorFlow: sets TF_ENABLE_ONEDNN_OPTS=0
from precision_tool.capture import reference_dump as reference
from precision_tool.capture.npu_config import describe_custom_op, effective_npu_parameters
from precision_tool.errors import CaptureError, FusionFormatError

tf = pytest.importorskip("tensorflow")
RewriterConfig = pytest.importorskip("tensorflow.core.protobuf.rewriter_config_pb2").RewriterConfig

pytestmark = [pytest.mark.tf, pytest.mark.compat]


def modelzoo_config(**npu_params):
    """A ModelZoo-style session config: NpuOptimizer with its own parameters, remapping and memory passes off."""
    config = tf.compat.v1.ConfigProto(allow_soft_placement=True, log_device_placement=False)
    custom_op = config.graph_options.rewrite_options.custom_optimizers.add()
    custom_op.name = "NpuOptimizer"
    custom_op.parameter_map["use_off_line"].b = True
    custom_op.parameter_map["precision_mode"].s = b"allow_mix_precision"
    for key, value in npu_params.items():
        attr = custom_op.parameter_map[key]
        if isinstance(value, bool):
            attr.b = value
        elif isinstance(value, int):
            attr.i = value
        else:
            attr.s = value.encode()
    config.graph_options.rewrite_options.remapping = RewriterConfig.OFF
    config.graph_options.rewrite_options.memory_optimization = RewriterConfig.NO_MEM_OPT
    return config, custom_op


def run_small_graph(config):
    """relu(x @ w + b) in a session built with ``config``, on CPU; returns the result."""
    graph = tf.Graph()
    with graph.as_default():
        x = tf.compat.v1.placeholder(tf.float32, [2, 3], name="x")
        w = tf.constant([[1.0, -1.0], [0.5, 2.0], [-1.0, 0.0]], name="w")
        out = tf.nn.relu(tf.nn.bias_add(tf.matmul(x, w), tf.constant([0.1, -0.2])), name="out")
        with tf.compat.v1.Session(graph=graph, config=config) as sess:
            return sess.run(out, {x: [[1.0, 2.0, 3.0], [0.0, 1.0, 0.0]]})


EXPECTED_OUT = np.array([[0.0, 2.8], [0.6, 1.8]], dtype=np.float32)  # by hand: [1,2,3]@w = [-1, 3]


def notices(capsys):
    return [line for line in capsys.readouterr().err.splitlines() if line.startswith("[precision_tool]")]


def test_modelzoo_session_config_keeps_its_grappler_settings_and_runs(workspace, capsys, npu_machine):
    config, custom_op = modelzoo_config()
    config.graph_options.rewrite_options.arithmetic_optimization = RewriterConfig.ON
    config = npu_tf_config.session_dump_config(config, action="dump")
    rewrite = config.graph_options.rewrite_options
    assert rewrite.remapping == RewriterConfig.OFF and rewrite.memory_optimization == RewriterConfig.NO_MEM_OPT
    assert rewrite.arithmetic_optimization == RewriterConfig.ON and len(rewrite.custom_optimizers) == 1
    assert describe_custom_op(custom_op) == {
        "use_off_line": True, "precision_mode": "allow_mix_precision", "debug_dir": f"{workspace}/npu/debug_0",
        "enable_dump": True, "dump_path": f"{workspace}/npu/debug_0/dump", "dump_step": "0", "dump_mode": "all",
        "op_debug_level": 4}
    assert notices(capsys) == [f"[precision_tool] NPU capture 'dump' -> {workspace}/npu/debug_0/dump"]
    np.testing.assert_allclose(run_small_graph(config), EXPECTED_OUT, rtol=1e-6)


def test_remapping_the_user_turned_on_is_turned_off_with_a_notice(workspace, capsys):
    config, _ = modelzoo_config()
    config.graph_options.rewrite_options.remapping = RewriterConfig.ON
    npu_tf_config.session_dump_config(config, "overflow")
    assert config.graph_options.rewrite_options.remapping == RewriterConfig.OFF
    (line,) = [n for n in notices(capsys) if "Grappler" in n]
    assert line.startswith("[precision_tool] your Grappler remapping ON is replaced by OFF for this run")
    np.testing.assert_allclose(run_small_graph(config), EXPECTED_OUT, rtol=1e-6)


def test_of_two_npu_optimizers_before_the_call_the_last_is_updated(workspace, capsys):
    config, first = modelzoo_config()
    second = config.graph_options.rewrite_options.custom_optimizers.add()
    second.name = "NpuOptimizer"
    second.parameter_map["iterations_per_loop"].i = 10
    npu_tf_config.session_dump_config(config, "dump")
    assert describe_custom_op(first) == {"use_off_line": True, "precision_mode": "allow_mix_precision"}
    assert describe_custom_op(second)["dump_path"] == f"{workspace}/npu/debug_0/dump"
    assert describe_custom_op(second)["iterations_per_loop"] == 10
    assert effective_npu_parameters(config)["enable_dump"] is True
    assert ("[precision_tool] your config has 2 NpuOptimizer entries: the last one gets the capture settings "
            "(npu_bridge reads them in order and the last one's keys win)") in notices(capsys)


def test_an_npu_optimizer_added_after_the_call_overrides_key_by_key(workspace):
    config = npu_tf_config.session_dump_config(tf.compat.v1.ConfigProto(), action="dump")
    later = config.graph_options.rewrite_options.custom_optimizers.add()  # the script's own, after our line
    later.name = "NpuOptimizer"
    later.parameter_map["precision_mode"].s = b"allow_fp32_to_fp16"
    later.parameter_map["dump_mode"].s = b"output"
    effective = effective_npu_parameters(config)
    assert effective["dump_mode"] == "output" and effective["precision_mode"] == "allow_fp32_to_fp16"
    assert effective["enable_dump"] is True and effective["dump_path"] == f"{workspace}/npu/debug_0/dump"
    np.testing.assert_allclose(run_small_graph(config), EXPECTED_OUT, rtol=1e-6)
    npu_tf_config.session_dump_config(config, action="dump")  # called again: the last one (the script's) is updated
    assert effective_npu_parameters(config)["dump_mode"] == "all"
    assert describe_custom_op(later)["precision_mode"] == "allow_fp32_to_fp16"


def test_update_custom_op_over_the_users_own_overflow_settings(workspace, capsys):
    # A ModelZoo script that already collects overflow data its own way, then adds the one line.
    config, custom_op = modelzoo_config(enable_dump_debug=True, dump_path="/home/me/overflow",
                                        dump_debug_mode="aicore_overflow", op_debug_level=0)
    assert npu_tf_config.update_custom_op(custom_op, action="overflow") is custom_op
    assert describe_custom_op(custom_op) == {
        "use_off_line": True, "precision_mode": "allow_mix_precision", "debug_dir": f"{workspace}/npu/debug_0",
        "enable_dump_debug": True, "dump_path": f"{workspace}/overflow/dump", "dump_debug_mode": "all",
        "op_debug_level": 4}
    assert notices(capsys)[1:] == [
        f"[precision_tool] your dump_path '/home/me/overflow' is replaced by '{workspace}/overflow/dump' for this run "
        "('overflow')",
        "[precision_tool] your dump_debug_mode 'aicore_overflow' is replaced by 'all' for this run ('overflow')",
        "[precision_tool] your op_debug_level '0' is replaced by '4' for this run ('overflow')"]
    npu_tf_config.update_custom_op(custom_op, action="dump")
    assert "enable_dump_debug" not in describe_custom_op(custom_op)
    assert ("[precision_tool] your enable_dump_debug is removed for this run: it cannot be on with 'dump'"
            in notices(capsys))
    assert config.graph_options.rewrite_options.memory_optimization == RewriterConfig.NO_MEM_OPT
    np.testing.assert_allclose(run_small_graph(config), EXPECTED_OUT, rtol=1e-6)


def test_overflow_with_fusion_off_replaces_the_users_switch_file_for_this_run(workspace, tmp_path, capsys):
    mine = tmp_path / "my_fusion_switch.cfg"
    mine.write_text('{"Switch": {"GraphFusion": {"ConvBiasFusionPass": "off"}}}')
    config, custom_op = modelzoo_config(fusion_switch_file=str(mine))
    npu_tf_config.session_dump_config(config, action="overflow|fusion_off")
    assert describe_custom_op(custom_op)["fusion_switch_file"] == npu_tf_config.FUSION_OFF_FILE
    assert (f"[precision_tool] your fusion_switch_file '{mine}' is replaced by '{npu_tf_config.FUSION_OFF_FILE}' "
            "for this run ('overflow|fusion_off')") in notices(capsys)
    np.testing.assert_allclose(run_small_graph(config), EXPECTED_OUT, rtol=1e-6)


def test_fusion_switch_keeps_the_users_own_file_and_checks_it(workspace, tmp_path, capsys):
    mine = tmp_path / "my_fusion_switch.cfg"
    mine.write_text('{"Switch": {"UBFusion": {"TbeEltwiseFusionPass": "off"}}}')
    config, custom_op = modelzoo_config(fusion_switch_file=str(mine))
    npu_tf_config.session_dump_config(config, action="dump|fusion_switch")
    assert describe_custom_op(custom_op)["fusion_switch_file"] == str(mine)
    assert any(f"the NPU reads your own fusion_switch_file {mine}" in n for n in notices(capsys))
    mine.write_text('{"Switch": {"UBFusion": {"TbeEltwiseFusionPass": "disabled"}}}')
    before = config.SerializeToString()
    with pytest.raises(FusionFormatError, match="TbeEltwiseFusionPass: expected 'on' or 'off', got 'disabled'"):
        npu_tf_config.session_dump_config(config, action="dump|fusion_switch")
    assert config.SerializeToString() == before  # nothing changed


def test_fusion_switch_reads_the_workspace_file_the_user_edits(workspace, capsys):
    config = npu_tf_config.session_dump_config(action="fusion_switch")
    (custom_op,) = config.graph_options.rewrite_options.custom_optimizers
    path = describe_custom_op(custom_op)["fusion_switch_file"]
    assert path == npu_tf_config.FUSION_SWITCH_FILE == str(workspace / "fusion" / "fusion_switch.cfg")
    with open(path, "w") as handle:
        handle.write("ConvBiasFusionPass:typo\n")
    with pytest.raises(FusionFormatError, match="fusion_switch.cfg: line 1: expected 'on' or 'off'"):
        npu_tf_config.update_custom_op(custom_op, "fusion_switch")
    assert npu_tf_config.FUSION_SWITCH_FILE == path  # reading the name only names it: the helper checks it


@pytest.mark.compat
def test_import_star_and_the_reference_side_ignore_npu_only_settings(workspace, tmp_path, monkeypatch):
    # one launch script often exports the NPU run's variables for the CPU reference run too
    monkeypatch.setenv("PRECISION_TOOL_DUMP_STEP", "5-3")
    monkeypatch.setenv("PRECISION_TOOL_OP_DEBUG_LEVEL", "7")
    namespace = {}
    exec("from precision_tool.tf_config import *", namespace)  # what a script does
    assert "FUSION_SWITCH_FILE" not in namespace and "session_dump_config" in namespace
    assert not workspace.exists()  # import * wrote nothing
    assert npu_tf_config.OP_DEBUG_DIR == str(workspace / "npu" / "debug_0")
    assert reference.new_capture_dir().startswith(str(workspace / "tf" / "tf_debug"))
    monkeypatch.setenv("PRECISION_TOOL_NPU_RUN", "-1")
    with pytest.raises(CaptureError, match=r"^PRECISION_TOOL_NPU_RUN=-1 is negative"):
        npu_tf_config.OP_DEBUG_DIR  # noqa: B018


def test_dump_step_and_op_debug_level_from_the_environment_are_checked(workspace, monkeypatch):
    config, custom_op = modelzoo_config()
    monkeypatch.setenv("PRECISION_TOOL_DUMP_STEP", "0|10-5")
    with pytest.raises(CaptureError, match=r"^PRECISION_TOOL_DUMP_STEP='0\|10-5': range 10-5 must go up"):
        npu_tf_config.session_dump_config(config, "dump")
    monkeypatch.setenv("PRECISION_TOOL_DUMP_STEP", "0|5|10")
    monkeypatch.setenv("PRECISION_TOOL_OP_DEBUG_LEVEL", "7")
    with pytest.raises(CaptureError, match="PRECISION_TOOL_OP_DEBUG_LEVEL=7 is not a valid op_debug_level"):
        npu_tf_config.update_custom_op(custom_op, "overflow")
    assert describe_custom_op(custom_op) == {"use_off_line": True, "precision_mode": "allow_mix_precision"}
    assert not workspace.exists()


@pytest.mark.parametrize("action", ["dump", "overflow", "dump|fusion_off", "prof", ""])
def test_a_fresh_config_runs_on_cpu(workspace, action):
    config = npu_tf_config.session_dump_config(action=action)
    np.testing.assert_allclose(run_small_graph(config), EXPECTED_OUT, rtol=1e-6)
