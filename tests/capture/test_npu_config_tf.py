"""NPU-side helpers with real TensorFlow 2.21 (eager stays on in this process; graph mode runs elsewhere).

Each expected parameter map is written out here by hand from the documented table
(docs/capture-custom-op.md), not taken from the implementation's table.
"""
import json
import os
import sys
import types

import pytest

import precision_tool.tf_config as npu_tf_config  # before TensorFlow: sets TF_ENABLE_ONEDNN_OPTS=0
from precision_tool.capture.npu_config import describe_custom_op
from precision_tool.errors import CaptureError

tf = pytest.importorskip("tensorflow")
RewriterConfig = pytest.importorskip("tensorflow.core.protobuf.rewriter_config_pb2").RewriterConfig

pytestmark = pytest.mark.tf


def expected(ws, action):
    """The documented parameters of each action, spelled out."""
    dump = {"enable_dump": True, "dump_step": "0", "dump_mode": "all"}
    overflow = {"enable_dump_debug": True, "dump_path": f"{ws}/overflow/dump", "dump_debug_mode": "all",
                "op_debug_level": 4, "debug_dir": f"{ws}/overflow"}
    prof = {"profiling_mode": True, "profiling_options": json.dumps(
        {"output": f"{ws}/profiling", "training_trace": "on", "task_trace": "on", "aicpu": "on", "fp_point": "",
         "bp_point": "", "aic_metrics": "PipeUtilization"}, separators=(",", ":"))}
    table = {
        "dump": {**dump, "dump_path": f"{ws}/npu/debug_0/dump"},
        "overflow": overflow,
        "fusion_off": {"fusion_switch_file": npu_tf_config.FUSION_OFF_FILE},
        "fusion_switch": {"fusion_switch_file": f"{ws}/fusion/fusion_switch.cfg"},
        "prof": prof,
        "dump|fusion_off": {**dump, "dump_path": f"{ws}/npu/debug_1/dump",
                            "fusion_switch_file": npu_tf_config.FUSION_OFF_FILE},
        "overflow|fusion_switch|prof": {**overflow, "fusion_switch_file": f"{ws}/fusion/fusion_switch.cfg", **prof},
        "dump|prof": {**dump, "dump_path": f"{ws}/npu/debug_0/dump", **prof},
        "": {},
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
    assert rewrite.remapping == RewriterConfig.OFF and rewrite.arithmetic_optimization == RewriterConfig.OFF
    assert rewrite.memory_optimization == RewriterConfig.NO_MEM_OPT != RewriterConfig.MANUAL
    assert not rewrite.disable_meta_optimizer  # the NpuOptimizer runs inside Grappler


def test_kinds_of_attr_values(workspace):
    (custom_op,) = npu_optimizers(npu_tf_config.session_dump_config(action="overflow|prof"))
    kinds = {key: value.WhichOneof("value") for key, value in custom_op.parameter_map.items()}
    assert kinds == {"use_off_line": "b", "enable_dump_debug": "b", "dump_path": "s", "dump_debug_mode": "s",
                     "op_debug_level": "i", "debug_dir": "s", "profiling_mode": "b", "profiling_options": "s"}


def test_users_config_and_npu_optimizer_are_kept_and_updated(workspace):
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
        "use_off_line": False, "precision_mode": "allow_mix_precision", **expected(workspace, "dump")}


def test_unknown_action_and_wrong_config_are_one_line_errors(workspace):
    with pytest.raises(CaptureError, match=r"unknown action 'dumb' in 'dumb' \(valid actions: dump, overflow"):
        npu_tf_config.session_dump_config(action="dumb")
    with pytest.raises(CaptureError, match="session_config must be a tf.compat.v1.ConfigProto, got dict"):
        npu_tf_config.session_dump_config({"enable_dump": True}, "dump")
    assert not workspace.exists()


def test_action_from_environment_and_folders(workspace, monkeypatch):
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


# -- npu_bridge / npu_device: absent here; a stand-in shows what the helpers pass ------------------------------
def test_npu_bridge_helpers_fail_in_one_sentence_without_npu_bridge(workspace, monkeypatch):
    monkeypatch.setitem(sys.modules, "npu_bridge", None)
    with pytest.raises(CaptureError) as info:
        npu_tf_config.estimator_dump_config("dump")
    assert str(info.value).startswith("estimator_dump_config needs npu_bridge, the TensorFlow adapter installed with "
                                      "CANN on an Ascend host, and it cannot be imported here (")
    assert str(info.value).endswith("; elsewhere use session_dump_config") and "\n" not in str(info.value)
    with pytest.raises(CaptureError, match="npu_run_config_options needs npu_bridge"):
        npu_tf_config.npu_run_config_options("dump")
    assert not workspace.exists()


class _Recorder:
    def __init__(self, **kwargs):
        self.kwargs = kwargs


@pytest.fixture
def fake_npu_bridge(monkeypatch):
    package, init = types.ModuleType("npu_bridge"), types.ModuleType("npu_bridge.npu_init")
    init.DumpConfig = type("DumpConfig", (_Recorder,), {})
    init.ProfilingConfig = type("ProfilingConfig", (_Recorder,), {})
    package.npu_init = init
    monkeypatch.setitem(sys.modules, "npu_bridge", package)
    monkeypatch.setitem(sys.modules, "npu_bridge.npu_init", init)
    return init


def test_estimator_dump_config_builds_a_dump_config(workspace, fake_npu_bridge):
    dump = npu_tf_config.estimator_dump_config("dump")
    assert type(dump).__name__ == "DumpConfig"
    assert dump.kwargs == {"enable_dump": True, "dump_path": f"{workspace}/npu/debug_0/dump", "dump_step": "0",
                           "dump_mode": "all"}
    overflow = npu_tf_config.estimator_dump_config("overflow")
    assert overflow.kwargs == {"enable_dump_debug": True, "dump_path": f"{workspace}/overflow/dump",
                               "dump_debug_mode": "all"}
    with pytest.raises(CaptureError, match=r"cannot carry fusion_off \(use NPURunConfig\(\*\*npu_tf_config"
                                           r".npu_run_config_options\('dump\|fusion_off'\), \.\.\.\)\)"):
        npu_tf_config.estimator_dump_config("dump|fusion_off")


def test_npu_run_config_options(workspace, fake_npu_bridge):
    options = npu_tf_config.npu_run_config_options("overflow|fusion_off|prof")
    assert set(options) == {"dump_config", "op_debug_level", "debug_dir", "fusion_switch_file", "profiling_config"}
    assert options["op_debug_level"] == 4 and options["fusion_switch_file"] == npu_tf_config.FUSION_OFF_FILE
    assert options["profiling_config"].kwargs == {"enable_profiling": True,
                                                  "profiling_options": expected(workspace, "prof")["profiling_options"]}
    assert options["dump_config"].kwargs["dump_path"] == f"{workspace}/overflow/dump"
    assert npu_tf_config.npu_run_config_options("fusion_off") == {"fusion_switch_file": npu_tf_config.FUSION_OFF_FILE}


def _fake_npu_device():
    dump_config = types.SimpleNamespace(enable_dump=False, dump_path=None, dump_step=None, dump_mode="output",
                                        enable_dump_debug=False, dump_debug_mode="all")
    profiling = types.SimpleNamespace(enable_profiling=False, profiling_options=None)
    options = types.SimpleNamespace(dump_config=dump_config, op_debug_level=0, debug_dir=None, fusion_switch_file=None,
                                    profiling_config=profiling)
    return types.SimpleNamespace(global_options=lambda: options), options


def test_npu_device_options_for_each_action(workspace):
    device, options = _fake_npu_device()
    assert npu_tf_config.npu_device_dump_config(device, "dump|fusion_off") is device
    assert vars(options.dump_config) == {"enable_dump": True, "dump_path": f"{workspace}/npu/debug_1/dump",
                                         "dump_step": "0", "dump_mode": "all", "enable_dump_debug": False,
                                         "dump_debug_mode": "all"}
    assert options.fusion_switch_file == npu_tf_config.FUSION_OFF_FILE and options.op_debug_level == 0
    device, options = _fake_npu_device()
    npu_tf_config.npu_device_dump_config(device, "overflow|prof")
    assert options.dump_config.enable_dump_debug is True and options.dump_config.enable_dump is False
    assert options.op_debug_level == 4 and options.debug_dir == f"{workspace}/overflow"
    assert options.profiling_config.enable_profiling is True
    assert json.loads(options.profiling_config.profiling_options)["output"] == f"{workspace}/profiling"


def test_npu_device_errors(workspace):
    with pytest.raises(CaptureError, match="expects the npu_device module .* got NoneType"):
        npu_tf_config.npu_device_dump_config(None, "dump")
    device = types.SimpleNamespace(global_options=lambda: types.SimpleNamespace(op_debug_level=0))
    with pytest.raises(CaptureError, match=r"npu_device.global_options\(\) has no 'dump_config.enable_dump'"):
        npu_tf_config.npu_device_dump_config(device, "dump")
