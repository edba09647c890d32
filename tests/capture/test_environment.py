"""Process set-up without TensorFlow: oneDNN variable, workspace folders, GE variables, fusion files."""
import json
import os
import subprocess
import sys
import warnings

import pytest

from precision_tool.capture.actions import build_plan
from precision_tool.capture.environment import disable_onednn_before_tensorflow, prepare_workspace
from precision_tool.capture.fusion_files import FUSION_OFF_FILE, FUSION_SWITCH_FILE
from precision_tool.capture.settings import CaptureWarning
from precision_tool.errors import FusionFormatError
from precision_tool.formats.fusion_result import read_fusion_switches


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


def test_prepare_creates_folders_and_sets_graph_variables(workspace):
    plan = build_plan("dump")
    prepare_workspace(plan)
    assert (workspace / "npu" / "debug_0" / "dump").is_dir() and (workspace / "npu" / "debug_0" / "graph").is_dir()
    assert os.environ["DUMP_GE_GRAPH"] == "2" and os.environ["DUMP_GRAPH_LEVEL"] == "3"
    assert os.environ["DUMP_GRAPH_PATH"] == str(workspace / "npu" / "debug_0" / "graph")


def test_prepare_keeps_the_users_graph_variables(workspace, monkeypatch, capsys):
    monkeypatch.setenv("DUMP_GE_GRAPH", "1")
    monkeypatch.setenv("DUMP_GRAPH_PATH", "/elsewhere")
    done = prepare_workspace(build_plan("overflow"))
    assert os.environ["DUMP_GE_GRAPH"] == "1" and os.environ["DUMP_GRAPH_PATH"] == "/elsewhere"
    assert os.environ["DUMP_GRAPH_LEVEL"] == "3"
    assert "kept your DUMP_GE_GRAPH=1 (precision_tool would use 2)" in done
    assert f"kept your DUMP_GRAPH_PATH=/elsewhere (precision_tool would use {workspace}/npu/debug_0/graph)" in done
    assert "[precision_tool] kept your DUMP_GE_GRAPH=1" in capsys.readouterr().err


def test_fusion_actions_do_not_touch_graph_variables(workspace):
    prepare_workspace(build_plan("fusion_off"))
    assert "DUMP_GE_GRAPH" not in os.environ and not (workspace / "npu").exists()


def test_shipped_fusion_files():
    assert read_fusion_switches(FUSION_OFF_FILE).fusion_off
    with open(FUSION_OFF_FILE) as handle:
        assert json.load(handle) == {"Switch": {"GraphFusion": {"ALL": "off"}, "UBFusion": {"ALL": "off"}}}
    template = read_fusion_switches(FUSION_SWITCH_FILE)
    assert not template.fusion_off and template.is_enabled("AnyPass", "graph_fusion")


def test_fusion_switch_is_copied_once_and_the_users_copy_is_kept(workspace, capsys):
    plan = build_plan("fusion_switch")
    prepare_workspace(plan)
    copy = workspace / "fusion" / "fusion_switch.cfg"
    assert copy.read_text() == open(FUSION_SWITCH_FILE).read()
    assert f"created {copy} from the shipped template" in capsys.readouterr().err
    copy.write_text('{"Switch": {"GraphFusion": {"ConvBiasFusionPass": "off"}}}')
    prepare_workspace(plan)
    assert "ConvBiasFusionPass" in copy.read_text()
    assert "created" not in capsys.readouterr().err


def test_a_broken_fusion_switch_copy_fails_in_one_line(workspace):
    copy = workspace / "fusion" / "fusion_switch.cfg"
    copy.parent.mkdir(parents=True)
    copy.write_text('{"Switch": {"GraphFusion": {"APass": "of"}}}')
    with pytest.raises(FusionFormatError, match=r"fusion_switch.cfg: Switch.GraphFusion.APass: expected 'on' or 'off'"):
        prepare_workspace(build_plan("fusion_switch"))
