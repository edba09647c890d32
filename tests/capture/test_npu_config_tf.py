"""NPU-side helpers with real TensorFlow protos (TF 2.21, and TF 1.15 / 2.6 in the users' environments).

Each expected parameter map is written out here by hand from the documented table
(docs/capture-custom-op.md), not taken from the implementation's table. Eager stays on in this process;
graphs run in an explicit ``tf.Graph``. npu_bridge / npu_device stand-ins: test_npu_adapters.py; the call
sites of real training scripts: test_npu_call_sites.py.
"""
import json
import os

import pytest

import precision_tool.tf_config as npu_tf_config  # before TensorFlow: sets TF_ENABLE_ONEDNN_OPTS=0
from precision_tool.capture.npu_config import describe_custom_op
from precision_tool.errors import CaptureError

tf = pytest.importorskip("tensorflow")
RewriterConfig = pytest.importorskip("tensorflow.core.protobuf.rewriter_config_pb2").RewriterConfig

pytestmark = [pytest.mark.tf, pytest.mark.compat]


def expected(ws, action):
    """The documented parameters of each action, spelled out (the original tool's table, absolute paths)."""
    debug = {"debug_dir": f"{ws}/npu/debug_0"}
    dump = {**debug, "enable_dump": True, "dump_path": f"{ws}/npu/debug_0/dump", "dump_step": "0",
            "dump_mode": "all", "op_debug_level": 4}
    overflow = {**debug, "enable_dump_debug": True, "dump_path": f"{ws}/overflow/dump", "dump_debug_mode": "all",
                "op_debug_level": 4}
    prof = {"profiling_mode": True, "profiling_options": json.dumps(
        {"output": f"{ws}/profiling", "training_trace": "on", "task_trace": "on", "aicpu": "on", "fp_point": "",
         "bp_point": "", "aic_metrics": "PipeUtilization"}, separators=(",", ":"))}
    table = {
        "dump": dump,
        "overflow": overflow,
        "fusion_off": {**debug, "fusion_switch_file": npu_tf_config.FUSION_OFF_FILE},
        "fusion_switch": {**debug, "fusion_switch_file": f"{ws}/fusion/fusion_switch.cfg"},
        "prof": {**debug, **prof},
        "dump|fusion_off": {**dump, "fusion_switch_file": npu_tf_config.FUSION_OFF_FILE},
        "overflow|fusion_switch|prof": {**overflow, "fusion_switch_file": f"{ws}/fusion/fusion_switch.cfg", **prof},
        "dump|prof": {**dump, **prof},
        "": debug,
    }
    return table[action]


def npu_optimizers(config):
    return [op for op in config.graph_options.rewrite_options.custom_optimizers if op.name == "NpuOptimizer"]


ACTIONS = ["dump", "overflow", "fusion_off", "fusion_switch", "prof", "dump|fusion_off",
           "overflow|fusion_switch|prof", "dump|prof", ""]


@pytest.mark.parametrize("action", ACTIONS)
def test_session_config_carries_exactly_the_documented_parameters(workspace, action):
    config = npu_tf_config.session_dump_config(action=action)
    assert isinstance(config, tf.compat.v1.ConfigProto)
    (custom_op,) = npu_optimizers(config)
    assert describe_custom_op(custom_op) == {"use_off_line": True, **expected(workspace, action)}
    rewrite = config.graph_options.rewrite_options
    assert rewrite.remapping == RewriterConfig.OFF  # as the original tool; nothing else in Grappler changes
    assert rewrite.arithmetic_optimization == rewrite.memory_optimization == RewriterConfig.DEFAULT
    assert not rewrite.disable_meta_optimizer  # the NpuOptimizer runs inside Grappler


def test_kinds_of_attr_values(workspace):
    (custom_op,) = npu_optimizers(npu_tf_config.session_dump_config(action="overflow|prof"))
    kinds = {key: value.WhichOneof("value") for key, value in custom_op.parameter_map.items()}
    assert kinds == {"use_off_line": "b", "enable_dump_debug": "b", "dump_path": "s", "dump_debug_mode": "s",
                     "op_debug_level": "i", "debug_dir": "s", "profiling_mode": "b", "profiling_options": "s"}
    (custom_op,) = npu_optimizers(npu_tf_config.session_dump_config(action="dump"))
    assert custom_op.parameter_map["op_debug_level"].WhichOneof("value") == "i"


def test_users_config_and_npu_optimizer_are_kept_and_updated(workspace, capsys):
    config = tf.compat.v1.ConfigProto(allow_soft_placement=True, log_device_placement=False)
    config.graph_options.rewrite_options.layout_optimizer = RewriterConfig.OFF
    other = config.graph_options.rewrite_options.custom_optimizers.add()
    other.name = "SomeOtherOptimizer"
    mine = config.graph_options.rewrite_options.custom_optimizers.add()
    mine.name = "NpuOptimizer"
    mine.parameter_map["use_off_line"].b = False
    mine.parameter_map["precision_mode"].s = b"allow_mix_precision"
    mine.parameter_map["enable_dump_debug"].b = True
    returned = npu_tf_config.session_dump_config(config, "dump")
    assert returned is config and config.allow_soft_placement
    assert config.graph_options.rewrite_options.layout_optimizer == RewriterConfig.OFF
    assert [op.name for op in config.graph_options.rewrite_options.custom_optimizers] == [
        "SomeOtherOptimizer", "NpuOptimizer"]
    assert describe_custom_op(npu_optimizers(config)[0]) == {
        "use_off_line": True, "precision_mode": "allow_mix_precision", **expected(workspace, "dump")}
    err = capsys.readouterr().err
    assert "[precision_tool] your use_off_line False is replaced by True for this run" in err
    assert "[precision_tool] your enable_dump_debug is removed for this run: it cannot be on with 'dump'" in err


def test_unknown_action_and_wrong_config_are_one_line_errors(workspace):
    with pytest.raises(CaptureError, match=r"unknown action 'dumb' in 'dumb' \(valid actions: dump, overflow"):
        npu_tf_config.session_dump_config(action="dumb")
    with pytest.raises(CaptureError, match="session_config must be a tf.compat.v1.ConfigProto, got dict"):
        npu_tf_config.session_dump_config({"enable_dump": True}, "dump")
    assert not workspace.exists()


def test_action_from_environment_and_folders(workspace, monkeypatch, npu_machine):
    monkeypatch.setenv("PRECISION_TOOL_ACTION", "dump")
    monkeypatch.setenv("PRECISION_TOOL_DUMP_STEP", "0|5|10")
    (custom_op,) = npu_optimizers(npu_tf_config.session_dump_config())
    assert describe_custom_op(custom_op)["dump_step"] == "0|5|10"
    assert (workspace / "npu" / "debug_0" / "dump").is_dir() and (workspace / "npu" / "debug_0" / "graph").is_dir()
    assert os.environ["DUMP_GRAPH_PATH"] == str(workspace / "npu" / "debug_0" / "graph")


@pytest.mark.parametrize("action", ACTIONS)
def test_update_custom_op_sets_exactly_the_documented_parameters(workspace, action):
    config = tf.compat.v1.ConfigProto()
    custom_op = config.graph_options.rewrite_options.custom_optimizers.add()
    custom_op.name = "NpuOptimizer"
    custom_op.parameter_map["precision_mode"].s = b"force_fp32"
    assert npu_tf_config.update_custom_op(custom_op, action) is custom_op
    assert describe_custom_op(custom_op) == {"precision_mode": "force_fp32", **expected(workspace, action)}
    assert config.graph_options.rewrite_options.remapping == RewriterConfig.DEFAULT  # the script's own business
    assert custom_op.name == "NpuOptimizer"


def test_update_custom_op_errors(workspace):
    config = tf.compat.v1.ConfigProto()
    other = config.graph_options.rewrite_options.custom_optimizers.add()
    other.name = "Another"
    with pytest.raises(CaptureError, match="this custom optimizer is 'Another', not 'NpuOptimizer'"):
        npu_tf_config.update_custom_op(other, "dump")
    with pytest.raises(CaptureError, match="expects a custom optimizer"):
        npu_tf_config.update_custom_op(config, "dump")


def test_reference_session_config_turns_grappler_off_and_keeps_the_rest():
    config = tf.compat.v1.ConfigProto(intra_op_parallelism_threads=3)
    reference = npu_tf_config.reference_session_config(config)
    assert reference is not config and not config.graph_options.rewrite_options.disable_meta_optimizer
    assert reference.graph_options.rewrite_options.disable_meta_optimizer
    assert reference.graph_options.optimizer_options.opt_level == tf.compat.v1.OptimizerOptions.L0
    assert reference.intra_op_parallelism_threads == 3


def test_sess_dump_refuses_what_is_not_a_v1_session():
    with pytest.raises(CaptureError, match=r"sess_dump wraps a tf.compat.v1.Session, got object \(for Monitored"
                                           r"TrainingSession pass hooks=\[npu_tf_config.estimator_dump\(\)\]\)"):
        npu_tf_config.sess_dump(object())


def test_capture_folders_must_be_new_or_empty(tmp_path):
    (tmp_path / "old_run").mkdir()
    with pytest.raises(CaptureError, match=f"{tmp_path}: tfdbg needs a new or empty folder"):
        npu_tf_config.estimator_dump(dump_root=str(tmp_path))
    session = tf.compat.v1.Session()
    with pytest.raises(CaptureError, match="tfdbg needs a new or empty folder"):
        npu_tf_config.sess_dump(session, dump_root=str(tmp_path))
    session.close()


def test_each_capture_gets_its_own_folder(workspace):
    first, second = npu_tf_config.estimator_dump(), npu_tf_config.estimator_dump()
    root = workspace / "tf" / "tf_debug"
    assert sorted(os.listdir(root)) == sorted({first._session_root.rsplit("/", 1)[1],
                                               second._session_root.rsplit("/", 1)[1]})
    assert len(os.listdir(root)) == 2 and type(first).__name__ == "ReferenceDumpHook"


def test_a_statistics_dump_of_named_ops_in_the_session_config(workspace):
    """Issue 42: dump_data and dump_layer go into the NpuOptimizer's parameter_map as strings, under the adapter's
    own key names (ascend-dump-trees.md section 1), the rest of the dump as for 'dump'."""
    config = npu_tf_config.session_dump_config(tf.compat.v1.ConfigProto(), action="dump", dump_data="stats",
                                               dump_layer="net/conv1/Conv2D net/fc/MatMul")
    (custom_op,) = npu_optimizers(config)
    assert custom_op.parameter_map["dump_data"].s == b"stats"
    assert custom_op.parameter_map["dump_layer"].s == b"net/conv1/Conv2D net/fc/MatMul"
    assert describe_custom_op(custom_op) == {"use_off_line": True, **expected(workspace, "dump"),
                                             "dump_data": "stats", "dump_layer": "net/conv1/Conv2D net/fc/MatMul"}
    with pytest.raises(CaptureError, match="dump_data='stats' applies to a data dump"):
        npu_tf_config.session_dump_config(action="overflow", dump_data="stats")
