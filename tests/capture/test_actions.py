"""The action table, without TensorFlow: parsing, conflicts, parameters per action, settings, notices.

Expected parameters are written out by hand from the original precision_tool's ``update_custom_op``
(``debug_dir`` always ``npu/debug_0``; ``dump`` also sets ``op_debug_level`` 4; fusion actions keep
``npu/debug_0``), not read from the implementation's table.
"""
import json
import os

import pytest

from precision_tool.capture.actions import ACTIONS, build_plan, parse_actions
from precision_tool.capture.fusion_files import FUSION_OFF_FILE
from precision_tool.capture.settings import CaptureSettings, action_from_env
from precision_tool.errors import CaptureError

pytestmark = pytest.mark.compat

ROOT = "/ws"
GRAPH_ENV = {"DUMP_GE_GRAPH": "2", "DUMP_GRAPH_LEVEL": "3", "DUMP_GRAPH_PATH": "/ws/npu/debug_0/graph"}


def settings(**kw):
    return CaptureSettings(data_dir=ROOT, **kw)


def test_actions_combine_with_bar_and_ignore_blanks():
    assert parse_actions("dump|fusion_off") == {"dump", "fusion_off"}
    assert parse_actions(" prof | overflow |") == {"prof", "overflow"}
    assert parse_actions(["dump", "prof"]) == {"dump", "prof"}
    assert parse_actions("") == frozenset()


def test_unknown_action_lists_the_valid_ones():
    with pytest.raises(CaptureError) as info:
        parse_actions("dump|fusionoff")
    assert str(info.value) == ("unknown action 'fusionoff' in 'dump|fusionoff' (valid actions: dump, overflow, "
                               "fusion_off, fusion_switch, prof; combine them with '|', e.g. 'dump|fusion_off')")


@pytest.mark.parametrize("spec, pair", [("overflow|dump", "'dump' and 'overflow'"),
                                        ("fusion_switch|fusion_off", "'fusion_off' and 'fusion_switch'")])
def test_conflicting_actions_are_refused(spec, pair):
    with pytest.raises(CaptureError, match=f"actions {pair} cannot be combined"):
        parse_actions(spec)


def test_action_must_be_text():
    with pytest.raises(CaptureError, match="got int"):
        parse_actions(3)


def test_none_reads_the_environment_then_the_legacy_flags():
    assert parse_actions(None, {"PRECISION_TOOL_ACTION": "overflow|fusion_off"}) == {"overflow", "fusion_off"}
    assert parse_actions(None, {"PRECISION_TOOL_DUMP": "True"}) == {"dump"}
    assert action_from_env({"PRECISION_TOOL_OVERFLOW": "true", "PRECISION_TOOL_DUMP": "False"}) == "overflow"
    assert parse_actions(None, {}) == frozenset()


def test_dump_parameters_are_the_original_ones():
    plan = build_plan("dump", settings(dump_step="0|5|10"))
    assert plan.values() == {"debug_dir": "/ws/npu/debug_0", "enable_dump": True, "dump_path": "/ws/npu/debug_0/dump",
                             "dump_step": "0|5|10", "dump_mode": "all", "op_debug_level": 4}
    assert [p.kind for p in plan.params] == ["s", "b", "s", "s", "s", "i"]
    assert dict(plan.graph_env) == GRAPH_ENV
    assert plan.folders == ("/ws/npu/debug_0", "/ws/npu/debug_0/dump", "/ws/npu/debug_0/graph")
    assert plan.cleared == ("enable_dump_debug",) and plan.notices == ()


def test_overflow_parameters_are_the_original_ones():
    plan = build_plan("overflow", settings(op_debug_level=2))
    assert plan.values() == {"debug_dir": "/ws/npu/debug_0", "enable_dump_debug": True,
                             "dump_path": "/ws/overflow/dump", "dump_debug_mode": "all", "op_debug_level": 2}
    assert [p.kind for p in plan.params][-1] == "i"
    assert dict(plan.graph_env) == GRAPH_ENV
    assert plan.cleared == ("enable_dump",)


def test_fusion_actions_keep_npu_debug_0_like_the_original():
    off = build_plan("fusion_off", settings())
    assert off.values() == {"debug_dir": "/ws/npu/debug_0", "fusion_switch_file": FUSION_OFF_FILE}
    assert off.npu_run == 0 and dict(off.graph_env) == GRAPH_ENV
    switch = build_plan("fusion_switch", settings())
    assert switch.values() == {"debug_dir": "/ws/npu/debug_0", "fusion_switch_file": "/ws/fusion/fusion_switch.cfg"}
    assert switch.fusion_switch_file == "/ws/fusion/fusion_switch.cfg" and switch.fusion_switch_from_template
    dump_off = build_plan("dump|fusion_off", settings())
    assert dump_off.values()["dump_path"] == "/ws/npu/debug_0/dump"
    (notice,) = dump_off.notices
    assert notice.startswith("this 'dump|fusion_off' run dumps into /ws/npu/debug_0/dump, as the original tool did")
    assert "PRECISION_TOOL_NPU_RUN=1" in notice


def test_the_npu_run_setting_moves_every_run_folder():
    plan = build_plan("dump|fusion_off", settings(npu_run=3))
    assert plan.values()["dump_path"] == "/ws/npu/debug_3/dump" and plan.values()["debug_dir"] == "/ws/npu/debug_3"
    assert dict(plan.graph_env)["DUMP_GRAPH_PATH"] == "/ws/npu/debug_3/graph" and plan.notices == ()


def test_prof_parameters():
    plan = build_plan("prof", settings())
    values = plan.values()
    assert set(values) == {"debug_dir", "profiling_mode", "profiling_options"} and values["profiling_mode"] is True
    assert json.loads(values["profiling_options"]) == {
        "output": "/ws/profiling", "training_trace": "on", "task_trace": "on", "aicpu": "on",
        "fp_point": "", "bp_point": "", "aic_metrics": "PipeUtilization"}
    assert plan.folders == ("/ws/npu/debug_0", "/ws/profiling", "/ws/npu/debug_0/graph")


def test_every_action_and_its_combinations_follow_the_table_order():
    plan = build_plan("prof|fusion_switch|overflow", settings())
    assert [p.name for p in plan.params] == ["debug_dir", "enable_dump_debug", "dump_path", "dump_debug_mode",
                                             "op_debug_level", "fusion_switch_file", "profiling_mode",
                                             "profiling_options"]
    assert set(ACTIONS) == {"dump", "overflow", "fusion_off", "fusion_switch", "prof"}


def test_no_action_sets_only_debug_dir_and_says_so():
    plan = build_plan("", settings())
    assert plan.values() == {"debug_dir": "/ws/npu/debug_0"} and plan.graph_env == ()
    assert plan.notices == ("no capture action (action=''): only debug_dir is set, nothing is dumped, and the GE "
                            "graph variables are left alone (the original tool set them on every call)",)
    assert "action=None and PRECISION_TOOL_ACTION unset" in build_plan(None, settings(), environ={}).notices[0]


# -- the user's own values ------------------------------------------------------------------------------------
def test_values_the_user_set_are_reported_when_replaced_or_removed():
    users = {"enable_dump": True, "dump_path": "/mine", "dump_mode": "all", "precision_mode": "force_fp32",
             "op_debug_level": 4}
    plan = build_plan("overflow", settings(), current=users)
    assert plan.notices == (
        "your dump_path '/mine' is replaced by '/ws/overflow/dump' for this run ('overflow')",
        "your enable_dump is removed for this run: it cannot be on with 'overflow'")
    assert build_plan("overflow", settings(), current={"enable_dump": False}).notices == ()


def test_fusion_switch_honours_the_users_own_file():
    plan = build_plan("fusion_switch", settings(), current={"fusion_switch_file": "/my/switch.cfg"})
    assert plan.values()["fusion_switch_file"] == "/my/switch.cfg"
    assert plan.fusion_switch_file == "/my/switch.cfg" and not plan.fusion_switch_from_template
    assert plan.notices == ("fusion_switch: the NPU reads your own fusion_switch_file /my/switch.cfg (kept as it is; "
                            "the original tool replaced it with its own)",)


def test_fusion_off_replaces_the_users_file_for_this_run_and_says_so():
    plan = build_plan("overflow|fusion_off", settings(), current={"fusion_switch_file": "/my/switch.cfg"})
    assert plan.values()["fusion_switch_file"] == FUSION_OFF_FILE and plan.fusion_switch_file is None
    assert plan.notices == (f"your fusion_switch_file '/my/switch.cfg' is replaced by '{FUSION_OFF_FILE}' for this "
                            "run ('overflow|fusion_off')",)


# -- dump_data / dump_layer (issue 42) ------------------------------------------------------------------------
def test_statistics_and_a_layer_add_the_adapters_two_keys_to_the_dump():
    """The facts' names and values (ascend-dump-trees.md section 1): dump_data 'stats', dump_layer names separated by
    spaces. The default adds neither key (an adapter before r1.11 does not know them)."""
    plan = build_plan("dump", settings(), dump_data="stats", dump_layer=["net/conv1/Conv2D", "net/fc/MatMul"])
    assert plan.values() == {"debug_dir": "/ws/npu/debug_0", "enable_dump": True, "dump_path": "/ws/npu/debug_0/dump",
                             "dump_step": "0", "dump_mode": "all", "op_debug_level": 4, "dump_data": "stats",
                             "dump_layer": "net/conv1/Conv2D net/fc/MatMul"}
    assert "dump_data" not in build_plan("dump", settings()).values()  # the default: no key an old adapter lacks
    given = build_plan("dump", settings(), current={"dump_data": "stats", "dump_layer": "a b"}, dump_data="tensor",
                       dump_layer="")  # given explicitly: set, and the user's values replaced, said
    assert (given.values()["dump_data"], given.values()["dump_layer"]) == ("tensor", "")
    assert "your dump_data 'stats' is replaced by 'tensor' for this run ('dump')" in given.notices
    from_env = CaptureSettings.from_env({"PRECISION_TOOL_DATA": ROOT, "PRECISION_TOOL_DUMP_DATA": "stats",
                                         "PRECISION_TOOL_DUMP_LAYER": " a  b "})
    assert (from_env.dump_data, from_env.dump_layer) == ("stats", "a b")
    assert build_plan("dump", from_env).values()["dump_layer"] == "a b"


@pytest.mark.parametrize("call, message", [
    (lambda: build_plan("dump", settings(), dump_data="full"),
     "dump_data='full' is not a valid dump_data: use one of tensor, stats"),
    (lambda: CaptureSettings.from_env({"PRECISION_TOOL_DUMP_DATA": "STATS"}),
     "PRECISION_TOOL_DUMP_DATA='STATS' is not a valid dump_data: use one of tensor, stats"),
    (lambda: build_plan("overflow", settings(), dump_data="stats"),
     "dump_data='stats' applies to a data dump, and the action is 'overflow'"),
    (lambda: build_plan("dump", settings(), dump_layer=["a b"]), "dump_layer name 'a b' holds whitespace"),
    (lambda: build_plan("dump", settings(), dump_layer=["a", ""]), "dump_layer holds an empty name"),
    (lambda: build_plan("dump", settings(), dump_layer=3), "dump_layer=3: give op names as text")])
def test_bad_statistics_settings_are_one_line_errors(call, message):
    with pytest.raises(CaptureError) as info:
        call()
    assert str(info.value).startswith(message) and "\n" not in str(info.value)


def test_the_users_own_statistics_settings_are_kept_and_said():
    plan = build_plan("dump", settings(), current={"dump_layer": "x", "dump_data": "stats"})
    assert "your dump_layer 'x' is kept: only those ops are dumped" in plan.notices
    assert "your dump_data 'stats' is kept: statistics, not tensors, are dumped" in plan.notices


# -- settings ---------------------------------------------------------------------------------------------------
def test_settings_from_environment(tmp_path):
    got = CaptureSettings.from_env({"PRECISION_TOOL_DATA": str(tmp_path / "ws"), "PRECISION_TOOL_DUMP_STEP": "0|3-5",
                                    "PRECISION_TOOL_OP_DEBUG_LEVEL": "0", "PRECISION_TOOL_NPU_RUN": "2"})
    assert got == CaptureSettings(str(tmp_path / "ws"), "0|3-5", 0, 2)
    default = CaptureSettings.from_env({})
    assert default.data_dir == os.path.abspath("precision_data") and default.dump_step == "0"
    assert default.op_debug_level == 4 and default.npu_run is None and default.run_index == 0


@pytest.mark.parametrize("env, message", [
    ({"PRECISION_TOOL_DUMP_STEP": "0,5"}, "PRECISION_TOOL_DUMP_STEP='0,5': use step numbers and ranges joined by '|'"),
    ({"PRECISION_TOOL_DUMP_STEP": "5-3"}, "PRECISION_TOOL_DUMP_STEP='5-3': range 5-3 must go up"),
    ({"PRECISION_TOOL_OP_DEBUG_LEVEL": "7"},
     "PRECISION_TOOL_OP_DEBUG_LEVEL=7 is not a valid op_debug_level: use one of 0, 1, 2, 3, 4"),
    ({"PRECISION_TOOL_OP_DEBUG_LEVEL": "high"},
     "PRECISION_TOOL_OP_DEBUG_LEVEL='high' is not a valid op_debug_level: use one of 0, 1, 2, 3, 4"),
    ({"PRECISION_TOOL_OP_DEBUG_LEVEL": "-1"},
     "PRECISION_TOOL_OP_DEBUG_LEVEL=-1 is not a valid op_debug_level: use one of 0, 1, 2, 3, 4"),
    ({"PRECISION_TOOL_NPU_RUN": "x"}, "PRECISION_TOOL_NPU_RUN='x' is not an integer")])
def test_bad_settings_are_one_line_errors_naming_the_variable(env, message):
    with pytest.raises(CaptureError) as info:
        CaptureSettings.from_env(env)
    assert str(info.value).startswith(message) and "\n" not in str(info.value)


def test_settings_made_in_code_are_checked_too():
    with pytest.raises(CaptureError, match="op_debug_level=5 is not a valid op_debug_level"):
        settings(op_debug_level=5)
    with pytest.raises(CaptureError, match="op_debug_level=True is not a valid op_debug_level"):
        settings(op_debug_level=True)
    with pytest.raises(CaptureError, match=r"dump_step='0\|\|5': use step numbers"):
        settings(dump_step="0||5")


def test_the_switch_file_is_never_written_through_a_dangling_symlink(tmp_path):
    """The fuzz campaign found the template copied to wherever a dangling ``fusion_switch.cfg`` link pointed.
    A broken link is now an error naming it, and its target is not created."""
    from precision_tool.capture.fusion_files import ensure_fusion_switch_file

    target = tmp_path / "elsewhere" / "switch.cfg"
    target.parent.mkdir()
    link = tmp_path / "fusion_switch.cfg"
    os.symlink(target, link)
    with pytest.raises(CaptureError, match=r"fusion_switch\.cfg: a symlink to .*switch\.cfg.*which does not exist"):
        ensure_fusion_switch_file(str(link))
    assert not target.exists()
    created = ensure_fusion_switch_file(str(tmp_path / "new" / "fusion_switch.cfg"))  # no link: copied
    assert json.loads(open(created).read())["Switch"]


def test_a_customize_dtypes_file_in_the_workspace_is_handed_to_the_npu(tmp_path):
    """``bisect precision`` writes WORKSPACE/precision/customize_dtypes.cfg for each trial: any capture action of
    a run in that workspace points the NPU's customize_dtypes option at it (issue 20)."""
    ws = tmp_path / "ws"
    assert "customize_dtypes" not in build_plan("dump", CaptureSettings(data_dir=str(ws))).values()
    (ws / "precision").mkdir(parents=True)
    (ws / "precision" / "customize_dtypes.cfg").write_text("a/MatMul::InputDtype:float32,float32,OutputDtype:float32\n")
    plan = build_plan("dump|fusion_switch", CaptureSettings(data_dir=str(ws)))
    assert plan.values()["customize_dtypes"] == str(ws / "precision" / "customize_dtypes.cfg")
    assert any(notice.startswith("customize_dtypes: the NPU keeps the ops") for notice in plan.notices)
    assert "customize_dtypes" not in build_plan(None, CaptureSettings(data_dir=str(ws))).values()  # no action
