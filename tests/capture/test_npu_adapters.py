"""npu_bridge (TF1 estimator) and npu_device (TF2) helpers, against stand-ins of the Ascend adapters.

Neither adapter can be installed off an Ascend host. The npu_bridge stand-in records the keyword arguments
of ``DumpConfig``, ``ProfilingConfig`` and ``NPURunConfig`` (all keyword-only classes there). The npu_device
stand-in behaves like npu_device's option objects: each option holds a default, an optional list of allowed
values and a value read back as text (``"1"``/``"0"`` for booleans); assigning a value outside the list, or
an option the config does not have, raises ``ValueError``. No TensorFlow needed.
"""
import json
import os
import sys
import types

import pytest

import precision_tool.tf_config as npu_tf_config
from precision_tool.errors import CaptureError

pytestmark = pytest.mark.compat


# -- npu_bridge ---------------------------------------------------------------------------------------------
class _Recorder:
    def __init__(self, **kwargs):
        self.kwargs = kwargs


@pytest.fixture
def fake_npu_bridge(monkeypatch):
    package, init = types.ModuleType("npu_bridge"), types.ModuleType("npu_bridge.npu_init")
    for name in ("DumpConfig", "ProfilingConfig", "NPURunConfig"):
        setattr(init, name, type(name, (_Recorder,), {}))
    package.npu_init = init
    monkeypatch.setitem(sys.modules, "npu_bridge", package)
    monkeypatch.setitem(sys.modules, "npu_bridge.npu_init", init)
    return init


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


def test_estimator_dump_config_into_npu_run_config(workspace, fake_npu_bridge):
    # The call site of Ascend ModelZoo estimator scripts.
    session_config = object()
    run_config = fake_npu_bridge.NPURunConfig(dump_config=npu_tf_config.estimator_dump_config(action="dump"),
                                              session_config=session_config, iterations_per_loop=1)
    dump = run_config.kwargs["dump_config"]
    assert type(dump).__name__ == "DumpConfig" and run_config.kwargs["session_config"] is session_config
    assert dump.kwargs == {"enable_dump": True, "dump_path": f"{workspace}/npu/debug_0/dump", "dump_step": "0",
                           "dump_mode": "all"}
    assert (workspace / "npu" / "debug_0" / "dump").is_dir()
    assert os.environ["DUMP_GRAPH_PATH"] == f"{workspace}/npu/debug_0/graph"
    overflow = npu_tf_config.estimator_dump_config("overflow")
    assert overflow.kwargs == {"enable_dump_debug": True, "dump_path": f"{workspace}/overflow/dump",
                               "dump_debug_mode": "all"}
    assert npu_tf_config.estimator_dump_config("").kwargs == {}  # no action: a default DumpConfig, as the original


def test_estimator_dump_config_reads_the_legacy_flag(workspace, fake_npu_bridge, monkeypatch):
    monkeypatch.setenv("PRECISION_TOOL_DUMP", "True")
    monkeypatch.setenv("PRECISION_TOOL_DUMP_STEP", "0|3-5")
    assert npu_tf_config.estimator_dump_config().kwargs["dump_step"] == "0|3-5"


def test_estimator_dump_config_refuses_what_a_dump_config_cannot_carry(workspace, fake_npu_bridge):
    with pytest.raises(CaptureError, match=r"cannot carry fusion_off \(use NPURunConfig\(\*\*npu_tf_config"
                                           r".npu_run_config_options\('dump\|fusion_off'\), \.\.\.\)\)"):
        npu_tf_config.estimator_dump_config("dump|fusion_off")
    assert not workspace.exists()


def test_npu_run_config_options(workspace, fake_npu_bridge):
    run_config = fake_npu_bridge.NPURunConfig(**npu_tf_config.npu_run_config_options("overflow|fusion_off|prof"))
    options = run_config.kwargs
    assert set(options) == {"dump_config", "op_debug_level", "debug_dir", "fusion_switch_file", "profiling_config"}
    assert options["op_debug_level"] == 4 and options["debug_dir"] == f"{workspace}/npu/debug_0"
    assert options["fusion_switch_file"] == npu_tf_config.FUSION_OFF_FILE
    assert options["profiling_config"].kwargs["enable_profiling"] is True
    assert json.loads(options["profiling_config"].kwargs["profiling_options"])["output"] == f"{workspace}/profiling"
    assert options["dump_config"].kwargs["dump_path"] == f"{workspace}/overflow/dump"
    assert npu_tf_config.npu_run_config_options("fusion_off") == {"debug_dir": f"{workspace}/npu/debug_0",
                                                                  "fusion_switch_file": npu_tf_config.FUSION_OFF_FILE}


# -- npu_device (TF2) ---------------------------------------------------------------------------------------
class _Option:
    """One npu_device option: a default, the allowed values (None: any), the value read back as text."""

    def __init__(self, default, allowed):
        self.default, self._allowed, self._value = default, allowed, default

    @property
    def value(self):
        if self._value is None:
            return None
        if isinstance(self._value, bool):
            return "1" if self._value else "0"
        return str(self._value)

    @value.setter
    def value(self, new):
        if self._allowed is not None and new not in self._allowed:
            raise ValueError(f"'{new}' not in optional list {self._allowed}")
        self._value = new


class _Options:
    """A group of options: assigning sets the option's value; an unknown name is a ValueError."""

    def __init__(self, **options):
        object.__setattr__(self, "_names", tuple(options))
        for name, option in options.items():
            object.__setattr__(self, name, option)

    def __setattr__(self, name, value):
        if name not in self._names:
            raise ValueError(f"{type(self).__name__} has no option {name}, all options {list(self._names)}")
        option = getattr(self, name)
        if isinstance(option, _Option):
            option.value = value
        else:
            object.__setattr__(self, name, value)


def _fake_npu_device(with_op_debug_level=True, with_dump_data=False):
    statistics = dict(dump_data=_Option("tensor", ["tensor", "stats"]), dump_layer=_Option(None, None)) \
        if with_dump_data else {}  # the adapter's dump_data/dump_layer, r1.11 and later
    dump_config = _Options(enable_dump=_Option(False, [True, False]), dump_path=_Option(None, None),
                           dump_step=_Option(None, None), dump_mode=_Option("output", ["input", "output", "all"]),
                           enable_dump_debug=_Option(False, [True, False]),
                           dump_debug_mode=_Option("all", ["aicore_overflow", "atomic_overflow", "all"]),
                           **statistics)
    profiling = _Options(enable_profiling=_Option(False, [True, False]),
                         profiling_options=_Option('{"output":"./"}', None))
    top = dict(dump_config=dump_config, debug_dir=_Option(None, None), fusion_switch_file=_Option(None, None),
               profiling_config=profiling, precision_mode=_Option(None, ["force_fp32", "allow_mix_precision"]))
    if with_op_debug_level:
        top["op_debug_level"] = _Option(None, [0, 1, 2, 3, 4])
    options = _Options(**top)
    return types.SimpleNamespace(global_options=lambda: options), options


def _dump_values(options):
    return {name: getattr(options.dump_config, name).value for name in options.dump_config._names}


def test_npu_device_options_for_dump_with_fusion_off(workspace):
    device, options = _fake_npu_device()
    options.precision_mode = "allow_mix_precision"  # the script's own setting, before ours
    assert npu_tf_config.npu_device_dump_config(device, "dump|fusion_off") is device
    assert _dump_values(options) == {"enable_dump": "1", "dump_path": f"{workspace}/npu/debug_0/dump",
                                     "dump_step": "0", "dump_mode": "all", "enable_dump_debug": "0",
                                     "dump_debug_mode": "all"}
    assert options.fusion_switch_file.value == npu_tf_config.FUSION_OFF_FILE
    assert options.op_debug_level.value == "4" and options.debug_dir.value == f"{workspace}/npu/debug_0"
    assert options.precision_mode.value == "allow_mix_precision"


def test_npu_device_options_for_overflow_and_prof(workspace):
    device, options = _fake_npu_device()
    npu_tf_config.npu_device_dump_config(device, "overflow|prof")
    assert options.dump_config.enable_dump_debug.value == "1" and options.dump_config.enable_dump.value == "0"
    assert options.dump_config.dump_path.value == f"{workspace}/overflow/dump"
    assert options.op_debug_level.value == "4" and options.debug_dir.value == f"{workspace}/npu/debug_0"
    assert options.profiling_config.enable_profiling.value == "1"
    assert json.loads(options.profiling_config.profiling_options.value)["output"] == f"{workspace}/profiling"


def test_npu_device_users_overflow_switch_is_turned_off_for_a_dump_and_reported(workspace, capsys):
    device, options = _fake_npu_device()
    options.dump_config.enable_dump_debug = True
    options.dump_config.dump_path = "/my/overflow"
    npu_tf_config.npu_device_dump_config(device, "dump")
    assert options.dump_config.enable_dump_debug.value == "0" and options.dump_config.enable_dump.value == "1"
    err = capsys.readouterr().err
    assert (f"[precision_tool] your dump_path '/my/overflow' is replaced by '{workspace}/npu/debug_0/dump' for this "
            "run ('dump')") in err
    assert "[precision_tool] your enable_dump_debug is removed for this run: it cannot be on with 'dump'" in err


def test_npu_device_honours_the_users_fusion_switch_file(workspace, tmp_path, capsys):
    mine = tmp_path / "switch.cfg"
    mine.write_text('{"Switch": {"GraphFusion": {"ConvBiasFusionPass": "off"}}}')
    device, options = _fake_npu_device()
    options.fusion_switch_file = str(mine)
    npu_tf_config.npu_device_dump_config(device, "fusion_switch")
    assert options.fusion_switch_file.value == str(mine) and not (workspace / "fusion").exists()
    assert f"the NPU reads your own fusion_switch_file {mine}" in capsys.readouterr().err
    device, options = _fake_npu_device()
    options.fusion_switch_file = str(mine)
    npu_tf_config.npu_device_dump_config(device, "overflow|fusion_off")
    assert options.fusion_switch_file.value == npu_tf_config.FUSION_OFF_FILE
    assert (f"your fusion_switch_file '{mine}' is replaced by '{npu_tf_config.FUSION_OFF_FILE}' for this run "
            "('overflow|fusion_off')") in capsys.readouterr().err


def test_npu_device_bad_op_debug_level_is_a_capture_error_not_a_value_error(workspace, monkeypatch):
    monkeypatch.setenv("PRECISION_TOOL_OP_DEBUG_LEVEL", "7")
    device, options = _fake_npu_device()
    with pytest.raises(CaptureError, match=r"^PRECISION_TOOL_OP_DEBUG_LEVEL=7 is not a valid op_debug_level: "
                                           r"use one of 0, 1, 2, 3, 4$"):
        npu_tf_config.npu_device_dump_config(device, "overflow")
    assert options.op_debug_level.value is None and options.dump_config.enable_dump_debug.value == "0"
    assert not workspace.exists()


def test_npu_device_without_an_option_changes_nothing(workspace):
    device, options = _fake_npu_device(with_op_debug_level=False)
    with pytest.raises(CaptureError, match=r"npu_device.global_options\(\) has no 'op_debug_level' \(npu_device too "
                                           r"old or too new\?\)"):
        npu_tf_config.npu_device_dump_config(device, "dump")
    assert options.dump_config.enable_dump.value == "0" and not workspace.exists()


def test_npu_device_errors(workspace):
    with pytest.raises(CaptureError, match="expects the npu_device module .* got NoneType"):
        npu_tf_config.npu_device_dump_config(None, "dump")


def test_a_value_npu_device_refuses_is_a_capture_error_naming_the_option(workspace):
    device, options = _fake_npu_device()
    object.__setattr__(options.dump_config, "dump_mode", _Option("output", ["input", "output"]))  # an older list
    with pytest.raises(CaptureError, match=r"^npu_device refused dump_config.dump_mode='all' \('all' not in optional "
                                           r"list \['input', 'output'\]\)$"):
        npu_tf_config.npu_device_dump_config(device, "dump")


# -- dump_data / dump_layer (issue 42) ----------------------------------------------------------------------------
def test_statistics_and_a_layer_reach_the_estimator_dump_config(workspace, fake_npu_bridge):
    """DumpConfig takes dump_data and dump_layer as keywords (the facts' option list); names are joined by spaces."""
    dump = npu_tf_config.estimator_dump_config("dump", dump_data="stats", dump_layer=["net/conv1", "net/fc"])
    assert dump.kwargs == {"enable_dump": True, "dump_path": f"{workspace}/npu/debug_0/dump", "dump_step": "0",
                           "dump_mode": "all", "dump_data": "stats", "dump_layer": "net/conv1 net/fc"}
    options = npu_tf_config.npu_run_config_options("dump", dump_layer="net/conv1")
    kwargs = options["dump_config"].kwargs
    assert kwargs["dump_layer"] == "net/conv1" and "dump_data" not in kwargs


def test_statistics_reach_the_tf2_options_and_an_older_adapter_is_named(workspace):
    device, options = _fake_npu_device(with_dump_data=True)
    npu_tf_config.npu_device_dump_config(device, "dump", dump_data="stats", dump_layer="a b")
    assert options.dump_config.dump_data.value == "stats" and options.dump_config.dump_layer.value == "a b"
    older, _ = _fake_npu_device()
    npu_tf_config.npu_device_dump_config(older, "dump")  # the default sets no dump_data: an older adapter is fine
    with pytest.raises(CaptureError) as info:
        npu_tf_config.npu_device_dump_config(older, "dump", dump_data="stats")
    assert str(info.value) == ("npu_device.global_options() has no 'dump_config.dump_data' (npu_device too old or "
                               "too new?)")
