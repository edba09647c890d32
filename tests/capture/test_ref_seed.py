"""Seeding at ``import precision_tool.tf_config`` (capture/import_seed.py) and ``seed_everything`` on every TF.

In-process tests use stand-in modules and a private ``meta_path`` list (no TensorFlow). The subprocess tests
run ``scripts/seeded_weights.py`` with the TensorFlow of the interpreter running pytest (1.15, 2.6 or 2.21):
a script that never seeds gets the same weights twice, the same as when it seeds by hand with TensorFlow's
own calls, and different ones with ``PRECISION_TOOL_SEED=off``.
"""
import json
import os
import random
import subprocess
import sys
import types
from pathlib import Path

import numpy as np
import pytest

from precision_tool.capture import import_seed
from precision_tool.capture.determinism import DEFAULT_SEED, seed_setting, seed_tensorflow
from precision_tool.capture.import_seed import AfterImportHook, install_after_import_hook, seed_at_import
from precision_tool.errors import CaptureError

pytestmark = pytest.mark.compat

REPO = Path(__file__).resolve().parents[2]
SCRIPT = Path(__file__).resolve().parent / "scripts" / "seeded_weights.py"
NOTICE = "[precision_tool] import seed"


@pytest.fixture
def global_generators():
    """Put Python's and numpy's global generators back as they were."""
    state = random.getstate(), np.random.get_state()
    yield
    random.setstate(state[0])
    np.random.set_state(state[1])


def first_draws(seed):
    """What Python's and numpy's global generators give first after seeding with ``seed`` (computed here)."""
    return random.Random(seed).random(), float(np.random.RandomState(seed).rand())


# -- PRECISION_TOOL_SEED ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("value, seed", [(None, 2022), ("", 2022), (" 7 ", 7), ("0", 0), ("off", None),
                                         ("OFF", None), ("4294967295", 4294967295)])
def test_seed_setting(value, seed):
    assert seed_setting({} if value is None else {"PRECISION_TOOL_SEED": value}) == seed
    assert DEFAULT_SEED == 2022  # the original tool's last default


@pytest.mark.parametrize("value", ["abc", "-1", "4294967296", "1.5", "no"])
def test_a_bad_seed_setting_is_one_line(value):
    with pytest.raises(CaptureError, match=rf"PRECISION_TOOL_SEED='{value}' is not a seed \(use a whole number "
                                           r"from 0 to 4294967295, or 'off' for no seeding at import\)"):
        seed_setting({"PRECISION_TOOL_SEED": value})


# -- seed_at_import with stand-ins -----------------------------------------------------------------------------
class FakeTensorFlow(types.ModuleType):
    """Records seeding calls the way TF 1.15 (``tf.compat.v1.set_random_seed`` only) answers them."""

    def __init__(self, version="1.15.0"):
        super().__init__("tensorflow")
        self.__version__ = version
        self.calls = []
        v1 = types.SimpleNamespace(set_random_seed=lambda seed: self.calls.append(("set_random_seed", seed)))
        self.compat = types.SimpleNamespace(v1=v1)
        self.random = types.SimpleNamespace()
        self.executing_eagerly = lambda: False


def test_seeds_python_and_numpy_now_and_waits_for_tensorflow(global_generators, capsys):
    meta_path = []
    assert seed_at_import({"PRECISION_TOOL_SEED": "7"}, modules={}, meta_path=meta_path) == 7
    assert (random.random(), float(np.random.rand())) == first_draws(7)
    (hook,) = meta_path
    assert isinstance(hook, AfterImportHook) and hook.name == "tensorflow"
    assert capsys.readouterr().err == ""  # the one line comes when TensorFlow is seeded
    random.random()
    tf = FakeTensorFlow()
    hook.callback(tf)  # what the hook does once `import tensorflow` has run
    assert tf.calls == [("set_random_seed", 7)]
    assert (random.random(), float(np.random.rand())) == first_draws(7)  # seeded again, after TF's import
    assert capsys.readouterr().err == (
        "[precision_tool] import seed 7 (PRECISION_TOOL_SEED=<n>|off changes it): Python random, numpy and "
        "TensorFlow 1.15.0 seeded right after TensorFlow's import (tf.compat.v1.set_random_seed on the default "
        "graph)\n")


def test_an_imported_tensorflow_is_seeded_at_once(global_generators, capsys):
    tf, meta_path = FakeTensorFlow(), []
    assert seed_at_import({}, modules={"tensorflow": tf}, meta_path=meta_path) == 2022
    assert tf.calls == [("set_random_seed", 2022)] and meta_path == []
    assert capsys.readouterr().err.startswith("[precision_tool] import seed 2022 ")


def test_a_stand_in_without_version_is_not_seeded(global_generators, capsys):
    """tests/capture/test_environment.py puts a bare module there; only a finished TensorFlow import counts."""
    meta_path = []
    seed_at_import({}, modules={"tensorflow": types.ModuleType("tensorflow")}, meta_path=meta_path)
    assert [type(f) for f in meta_path] == [AfterImportHook] and capsys.readouterr().err == ""


def test_off_seeds_nothing(global_generators, capsys):
    before = random.getstate(), np.random.get_state()[1].tolist()
    meta_path = []
    assert seed_at_import({"PRECISION_TOOL_SEED": "off"}, modules={"tensorflow": FakeTensorFlow()},
                          meta_path=meta_path) is None
    assert (random.getstate(), np.random.get_state()[1].tolist()) == before
    assert meta_path == [] and capsys.readouterr().err == ""


def test_a_tensorflow_that_cannot_be_seeded_warns_but_never_raises(global_generators, capsys):
    tf = FakeTensorFlow()
    tf.compat = types.SimpleNamespace()  # no v1
    with pytest.warns(UserWarning, match=r"could not seed TensorFlow 1.15.0 with 2022 at import \(AttributeError"):
        assert import_seed.seed_imported_tensorflow(tf, 2022) is None
    assert "call npu_tf_config.seed_everything() before building the model" in capsys.readouterr().err


def test_seed_tensorflow_per_version():
    tf1 = FakeTensorFlow()
    assert seed_tensorflow(tf1, 3) == "tf.compat.v1.set_random_seed on the default graph"
    graph = types.SimpleNamespace(seed=None)
    calls = []
    tf2 = types.SimpleNamespace(
        random=types.SimpleNamespace(set_seed=calls.append), executing_eagerly=lambda: True,
        compat=types.SimpleNamespace(v1=types.SimpleNamespace(get_default_graph=lambda: graph)))
    assert seed_tensorflow(tf2, 3) == "tf.random.set_seed, and the default graph's seed for tf.compat.v1 graph mode"
    assert calls == [3] and graph.seed == 3


# -- the meta_path hook, on a real import ----------------------------------------------------------------------
def test_the_hook_fires_once_after_the_module_ran_and_leaves(tmp_path, monkeypatch):
    package = tmp_path / "pt_seed_probe"
    package.mkdir()
    (package / "__init__.py").write_text("import sys\nRAN = True\nLOADER_SEEN = type(__loader__).__name__\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "pt_seed_probe", raising=False)
    fired = []
    hook = install_after_import_hook("pt_seed_probe", lambda module: fired.append(module.RAN))
    try:
        assert sys.meta_path[0] is hook
        assert hook.find_spec("json") is None and hook in sys.meta_path  # other names pass through
        import pt_seed_probe
        assert fired == [True] and hook not in sys.meta_path
        # the module only ever saw its real loader
        assert pt_seed_probe.LOADER_SEEN == "SourceFileLoader"
        assert type(pt_seed_probe.__loader__).__name__ == "SourceFileLoader"
        assert pt_seed_probe.__spec__.loader is pt_seed_probe.__loader__
        del sys.modules["pt_seed_probe"]
        import pt_seed_probe  # a second import: the hook is gone
        assert fired == [True]
    finally:
        hook.remove()
        sys.modules.pop("pt_seed_probe", None)


def test_an_unknown_name_keeps_the_hook_and_a_reinstall_replaces_it():
    meta_path = list(sys.meta_path)
    first = install_after_import_hook("pt_no_such_module_anywhere", print, meta_path)
    assert first.find_spec("pt_no_such_module_anywhere") is None and first in meta_path
    second = install_after_import_hook("pt_no_such_module_anywhere", print, meta_path)
    assert first not in meta_path and meta_path[0] is second


# -- real TensorFlow, in subprocesses --------------------------------------------------------------------------
RUNS = {  # name: (mode, seeding, PRECISION_TOOL_SEED)
    "graph": ("graph", "auto", None), "graph again": ("graph", "auto", None),
    "graph by hand": ("graph", "explicit", "off"), "graph off": ("graph", "auto", "off"),
    "eager": ("eager", "auto", None), "eager by hand": ("eager", "explicit", "off"),
}


@pytest.fixture(scope="module")
def seeded_runs():
    """``{name: (printed json, stderr)}`` of every run of :data:`RUNS`, all started at once."""
    pytest.importorskip("tensorflow")
    processes = {}
    for name, (mode, seeding, setting) in RUNS.items():
        env = dict(os.environ, PYTHONPATH=str(REPO), TF_CPP_MIN_LOG_LEVEL="2")
        env.pop("PRECISION_TOOL_SEED", None)
        if setting is not None:
            env["PRECISION_TOOL_SEED"] = setting
        processes[name] = subprocess.Popen([sys.executable, str(SCRIPT), mode, seeding], env=env,
                                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True)
    results = {}
    for name, process in processes.items():
        out, err = process.communicate(timeout=300)
        assert process.returncode == 0, f"{name}: {err[-3000:]}"
        results[name] = json.loads(out.splitlines()[-1]), err
    return results


def test_two_runs_of_an_unseeded_script_build_the_same_weights(seeded_runs):
    first, err = seeded_runs["graph"]
    assert first == seeded_runs["graph again"][0] and first["import_seed"] == 2022
    assert [line for line in err.splitlines() if line.startswith(NOTICE)] == [
        f"{NOTICE} 2022 (PRECISION_TOOL_SEED=<n>|off changes it): Python random, numpy and TensorFlow "
        f"{first['tf_version']} seeded right after TensorFlow's import ("
        + ("tf.compat.v1.set_random_seed on the default graph)" if first["tf_version"].startswith("1.") else
           "tf.random.set_seed, and the default graph's seed for tf.compat.v1 graph mode)")]


def test_import_seeding_equals_seeding_by_hand_with_tensorflows_own_calls(seeded_runs):
    for mode in ("graph", "eager"):
        auto, by_hand = seeded_runs[mode][0], seeded_runs[f"{mode} by hand"][0]
        if "skipped" in auto:
            continue  # eager mode on TF 1.x (the script says so)
        assert auto["tf"] == by_hand["tf"], mode
        assert (auto["python"], auto["numpy"]) == (by_hand["python"], by_hand["numpy"]), mode
    graph = seeded_runs["graph"][0]
    assert (graph["python"], graph["numpy"]) == first_draws(2022)  # nothing drew after TF's import


def test_eager_weights_are_seeded_on_tf2(seeded_runs):
    eager = seeded_runs["eager"][0]
    if "skipped" in eager:
        pytest.skip(eager["skipped"])
    assert eager["import_seed"] == 2022 and eager["tf"] == seeded_runs["eager by hand"][0]["tf"]
    # the default graph's seed (for graph mode) changes no eager value, and its tf.data false alarm is filtered
    assert eager["outer_seed_warnings"] == 0


def test_off_does_not_seed(seeded_runs):
    off, err = seeded_runs["graph off"]
    seeded = seeded_runs["graph"][0]
    assert off["import_seed"] is None and NOTICE not in err
    assert (off["python"], off["numpy"]) != first_draws(2022)
    assert off["tf"][0] != seeded["tf"][0] and off["tf"][1] != seeded["tf"][1]
