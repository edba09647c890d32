"""Process set-up without TensorFlow: oneDNN variable, workspace folders, GE variables, fusion switch files."""
import json
import os
import subprocess
import sys
import warnings

import pytest

from precision_tool.capture.actions import build_plan
from precision_tool.capture.environment import disable_onednn_before_tensorflow, prepare_workspace
from precision_tool.capture.fusion_files import FUSION_OFF_FILE, FUSION_SWITCH_TEMPLATE
from precision_tool.capture.settings import CaptureWarning
from precision_tool.errors import CaptureError, FusionFormatError
from precision_tool.formats.fusion_result import read_fusion_switches

pytestmark = pytest.mark.compat


def test_onednn_set_to_0_before_tensorflow_is_imported():
    env = {}
    assert disable_onednn_before_tensorflow(modules={}, environ=env) is None
    assert env == {"TF_ENABLE_ONEDNN_OPTS": "0"}


def test_onednn_warns_when_tensorflow_came_first(capsys):
    env = {}
    with pytest.warns(CaptureWarning, match="TensorFlow was imported before precision_tool.tf_config with "
                                            "TF_ENABLE_ONEDNN_OPTS unset"):
        message = disable_onednn_before_tensorflow(modules={"tensorflow": object()}, environ=env)
    assert env == {} and "set TF_ENABLE_ONEDNN_OPTS=0" in message
    assert capsys.readouterr().err.startswith("[precision_tool] WARNING: TensorFlow was imported before")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert disable_onednn_before_tensorflow(modules={"tensorflow": object()},
                                                environ={"TF_ENABLE_ONEDNN_OPTS": "0"}) is None


def test_onednn_explicitly_on_is_kept_but_warned():
    env = {"TF_ENABLE_ONEDNN_OPTS": "1"}
    with pytest.warns(CaptureWarning, match="TF_ENABLE_ONEDNN_OPTS='1' keeps oneDNN fusions on"):
        disable_onednn_before_tensorflow(modules={}, environ=env)
    assert env == {"TF_ENABLE_ONEDNN_OPTS": "1"}


def _run_python(code, env_extra=None):
    env = {k: v for k, v in os.environ.items() if k != "TF_ENABLE_ONEDNN_OPTS"}
    env.update(env_extra or {})
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)


def test_importing_tf_config_does_not_import_tensorflow_and_sets_onednn_off():
    result = _run_python("import sys, os, json, precision_tool.tf_config as t\n"
                         "print(json.dumps(['tensorflow' in sys.modules, 'keras' in sys.modules,"
                         " os.environ.get('TF_ENABLE_ONEDNN_OPTS'), t.ONEDNN_WARNING]))")
    assert json.loads(result.stdout) == [False, False, "0", None]


def test_importing_tf_config_after_tensorflow_warns_on_stderr():
    result = _run_python("import sys, types\nsys.modules['tensorflow'] = types.ModuleType('tensorflow')\n"
                         "import precision_tool.tf_config")
    lines = [line for line in result.stderr.splitlines() if line.startswith("[precision_tool]")]
    assert len(lines) == 1 and "TensorFlow was imported before precision_tool.tf_config" in lines[0]


def test_prepare_creates_folders_and_sets_graph_variables(workspace, npu_machine):
    plan = build_plan("dump")
    prepare_workspace(plan)
    assert (workspace / "npu" / "debug_0" / "dump").is_dir() and (workspace / "npu" / "debug_0" / "graph").is_dir()
    assert os.environ["DUMP_GE_GRAPH"] == "2" and os.environ["DUMP_GRAPH_LEVEL"] == "3"
    assert os.environ["DUMP_GRAPH_PATH"] == str(workspace / "npu" / "debug_0" / "graph")


def test_without_an_npu_nothing_is_created_and_the_notice_says_nothing_will_be_dumped(workspace, capsys):
    """Issue 39: on a CPU-only machine (no npu_bridge, as here) the user saw "NPU capture 'dump' -> ..." and empty NPU
    folders. The config is still made (the script is the one that runs on the NPU), but the notice says plainly that
    nothing is dumped, and no folder is created."""
    done = prepare_workspace(build_plan("dump"))
    assert not (workspace / "npu").exists()
    assert done == [f"no NPU on this machine (npu_bridge, Huawei's TF adapter, is not installed): the config asks for "
                    f"'dump' -> {workspace}/npu/debug_0/dump on an Ascend NPU, but TensorFlow runs this graph on "
                    "CPU/GPU and nothing is dumped there"]
    assert capsys.readouterr().err == f"[precision_tool] {done[0]}\n"


def test_prepare_keeps_the_users_graph_variables(workspace, monkeypatch, capsys):
    monkeypatch.setenv("DUMP_GE_GRAPH", "1")
    monkeypatch.setenv("DUMP_GRAPH_PATH", "/elsewhere")
    done = prepare_workspace(build_plan("overflow"))
    assert os.environ["DUMP_GE_GRAPH"] == "1" and os.environ["DUMP_GRAPH_PATH"] == "/elsewhere"
    assert os.environ["DUMP_GRAPH_LEVEL"] == "3"
    assert "kept your DUMP_GE_GRAPH=1 (precision_tool would use 2)" in done
    assert f"kept your DUMP_GRAPH_PATH=/elsewhere (precision_tool would use {workspace}/npu/debug_0/graph)" in done
    assert "[precision_tool] kept your DUMP_GE_GRAPH=1" in capsys.readouterr().err


@pytest.mark.compat
def test_a_graph_path_precision_tool_set_itself_follows_a_second_run(workspace, monkeypatch):
    prepare_workspace(build_plan("dump"))
    assert os.environ["DUMP_GRAPH_PATH"] == str(workspace / "npu" / "debug_0" / "graph")
    monkeypatch.setenv("PRECISION_TOOL_NPU_RUN", "1")
    done = prepare_workspace(build_plan("dump|fusion_off"))
    assert os.environ["DUMP_GRAPH_PATH"] == str(workspace / "npu" / "debug_1" / "graph")  # ours: updated
    assert not any("kept your" in line for line in done)
    monkeypatch.setenv("DUMP_GRAPH_PATH", "/mine")  # the user's own value from now on: kept
    monkeypatch.setenv("PRECISION_TOOL_NPU_RUN", "0")
    prepare_workspace(build_plan("dump"))
    assert os.environ["DUMP_GRAPH_PATH"] == "/mine"


def test_fusion_actions_set_graph_variables_like_the_original(workspace, npu_machine):
    prepare_workspace(build_plan("fusion_off"))
    assert os.environ["DUMP_GRAPH_PATH"] == str(workspace / "npu" / "debug_0" / "graph")
    assert (workspace / "npu" / "debug_0").is_dir() and not (workspace / "npu" / "debug_1").exists()


def test_no_action_leaves_graph_variables_alone_and_says_so(workspace, capsys, npu_machine):
    done = prepare_workspace(build_plan(""))
    assert "DUMP_GE_GRAPH" not in os.environ and (workspace / "npu" / "debug_0").is_dir()
    assert done[0].startswith("no capture action (action='')")
    assert capsys.readouterr().err.startswith("[precision_tool] no capture action")


def test_shipped_fusion_files():
    assert read_fusion_switches(FUSION_OFF_FILE).fusion_off
    with open(FUSION_OFF_FILE) as handle:
        assert json.load(handle) == {"Switch": {"GraphFusion": {"ALL": "off"}, "UBFusion": {"ALL": "off"}}}
    template = read_fusion_switches(FUSION_SWITCH_TEMPLATE)
    assert not template.fusion_off and template.is_enabled("AnyPass", "graph_fusion")


def test_fusion_switch_file_is_created_once_and_every_edit_counts(workspace, capsys):
    prepare_workspace(build_plan("fusion_switch"))
    switch = workspace / "fusion" / "fusion_switch.cfg"
    assert switch.read_text() == open(FUSION_SWITCH_TEMPLATE).read()
    assert f"created {switch} from the shipped template" in capsys.readouterr().err
    switch.write_text('{"Switch": {"GraphFusion": {"ConvBiasFusionPass": "off"}}}')
    prepare_workspace(build_plan("fusion_switch"))
    assert "ConvBiasFusionPass" in switch.read_text() and "created" not in capsys.readouterr().err
    switch.write_text('{"Switch": {"GraphFusion": {"ConvBiasFusionPass": "of"}}}')  # a later typo is caught too
    with pytest.raises(FusionFormatError, match="ConvBiasFusionPass: expected 'on' or 'off', got 'of'"):
        prepare_workspace(build_plan("fusion_switch"))


def test_a_broken_fusion_switch_file_fails_in_one_line_before_anything_is_made(workspace):
    switch = workspace / "fusion" / "fusion_switch.cfg"
    switch.parent.mkdir(parents=True)
    switch.write_text('{"Switch": {"GraphFusion": {"APass": "of"}}}')
    with pytest.raises(FusionFormatError, match=r"fusion_switch.cfg: Switch.GraphFusion.APass: expected 'on' or 'off'"):
        prepare_workspace(build_plan("dump|fusion_switch"))
    assert not (workspace / "npu").exists() and "DUMP_GE_GRAPH" not in os.environ


def test_the_users_own_fusion_switch_file_is_checked_never_created(workspace, tmp_path):
    mine = tmp_path / "my_switch.cfg"
    plan = build_plan("fusion_switch", current={"fusion_switch_file": str(mine)})
    with pytest.raises(CaptureError, match=f"{mine}: your fusion_switch_file does not exist"):
        prepare_workspace(plan)
    assert not mine.exists() and not (workspace / "fusion").exists()
    mine.write_text("ConvBiasFusionPass:off\n")
    prepare_workspace(plan)
    assert mine.read_text() == "ConvBiasFusionPass:off\n" and not (workspace / "fusion").exists()
    mine.write_text("ConvBiasFusionPass:maybe\n")
    with pytest.raises(FusionFormatError, match="line 1: expected 'on' or 'off'"):
        prepare_workspace(plan)


def test_fusion_switch_file_name_follows_the_environment(workspace, monkeypatch, tmp_path, capsys):
    import precision_tool.tf_config as npu_tf_config

    path = npu_tf_config.FUSION_SWITCH_FILE
    assert path == str(workspace / "fusion" / "fusion_switch.cfg") and os.path.isfile(path)
    assert f"created {path}" in capsys.readouterr().err
    assert npu_tf_config.FUSION_SWITCH_TEMPLATE == FUSION_SWITCH_TEMPLATE != path
    assert npu_tf_config.DEFAULT_OP_DEBUG_DIR == npu_tf_config.OP_DEBUG_DIR == str(workspace / "npu" / "debug_0")
    other = tmp_path / "other_ws"
    monkeypatch.setenv("PRECISION_TOOL_DATA", str(other))
    monkeypatch.setenv("PRECISION_TOOL_NPU_RUN", "1")
    assert npu_tf_config.FUSION_SWITCH_FILE == str(other / "fusion" / "fusion_switch.cfg")
    assert npu_tf_config.OP_DEBUG_DIR == str(other / "npu" / "debug_1")
    assert getattr(npu_tf_config, "NO_SUCH_NAME", None) is None
    with pytest.raises(AttributeError, match="module 'precision_tool.tf_config' has no attribute 'NO_SUCH_NAME'"):
        npu_tf_config.NO_SUCH_NAME  # noqa: B018


def test_the_original_config_names_point_at_the_workspace(tmp_path, monkeypatch):
    import precision_tool.config as cfg

    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("PRECISION_TOOL_DATA", raising=False)
    # the original: ROOT_DIR = '' and DATA_ROOT_DIR = os.path.join(ROOT_DIR, 'precision_data'), i.e. ./precision_data
    assert os.path.join(cfg.ROOT_DIR, "precision_data") == cfg.DATA_ROOT_DIR == str(tmp_path / "precision_data")
    monkeypatch.setenv("PRECISION_TOOL_DATA", str(tmp_path / "runs" / "ws"))
    assert (cfg.ROOT_DIR, cfg.DATA_ROOT_DIR) == (str(tmp_path / "runs"), str(tmp_path / "runs" / "ws"))
    with pytest.raises(AttributeError):
        cfg.NOT_A_NAME  # noqa: B018
