"""The fuzz campaign of issue 14 in the test suite, and tests of the harness itself.

* ``test_ci_campaign`` (marked ``fuzz``): a derandomised CI-sized run -- seed 14, one mutated file per format
  plus every format's baseline, every command that reads it (TensorFlow replay only for the TF graph formats)
  -- asserting zero failures. Deselect with ``-m "not fuzz"``.
* ``test_long_campaign`` (marked ``fuzz``, opt-in): ``PRECISION_TOOL_FUZZ_FILES=2000`` runs the issue's
  2,000-file campaign (about an hour on 2 cores); ``PRECISION_TOOL_FUZZ_SEED`` picks other files,
  ``PRECISION_TOOL_FUZZ_OUT`` keeps the cases and the report in a folder of your choice. Or run
  ``python tests/fuzz/campaign.py --files 2000 --out DIR`` directly.

The harness tests check that a failure the campaign reports is a real one: the classification of each outcome
on processes that really hang, run out of memory, crash or print a traceback, the file-type swaps, and every
mutator on every seed.
"""
from __future__ import annotations

import importlib.util
import os
import random
import stat
import sys

import pytest

import campaign
import mutate
import seeds as seedlib

CI_SEED = 14
HAVE_TF = importlib.util.find_spec("tensorflow") is not None


@pytest.fixture(scope="module")
def workspace(tmp_path_factory):
    root = tmp_path_factory.mktemp("fuzz") / "base"
    return root, {s.name: s for s in seedlib.build_workspace(root)}


# ------------------------------------------------------------------------------------------ the harness
def python(code: str):
    return [sys.executable, "-c", code]


def test_classify_a_hang(tmp_path):
    code, out, err, timed_out, seconds = campaign.run_limited(python("import time; time.sleep(60)"), tmp_path, 1.0)
    assert timed_out and seconds < 30
    assert campaign.classify(code, out, err, timed_out, 1.0)[0] == "hang"


def test_classify_a_memory_blow_up(tmp_path):
    result = campaign.run_limited(python("b = bytearray(8 << 30)"), tmp_path, 30, 1 << 30)
    assert campaign.classify(*result[:4])[0] == "memory"


def test_classify_a_traceback_and_a_crash(tmp_path):
    result = campaign.run_limited(python("import sys; sys.exit(2) if 0 else int('x')"), tmp_path)
    assert campaign.classify(*result[:4]) == ("traceback", "ValueError: invalid literal for int() with base 10: 'x'")
    result = campaign.run_limited(python("import os, signal; os.kill(os.getpid(), signal.SIGSEGV)"), tmp_path)
    assert campaign.classify(*result[:4]) == ("crash", "killed by SIGSEGV")


def test_classify_exit_codes_control_characters_and_silent_success():
    assert campaign.classify(2, "", "precision_tool: error: x: bad", False) == ("ok", "exit 2")
    assert campaign.classify(3, "", "boom", False)[0] == "bad-exit"
    assert campaign.classify(0, "op \x1b[31mred", "", False)[0] == "control-chars"
    assert campaign.classify(0, "op \\x1b[31mred", "", False)[0] == "ok"  # escaped, as terminal_safe shows it
    assert campaign.classify(0, "", "", False, swap="fifo", must_read=seedlib.SCANNED)[0] == "silent-success"
    assert campaign.classify(0, "", "", False, swap="folder", must_read=seedlib.SCANNED)[0] == "ok"
    assert campaign.classify(1, "", "", False, swap="fifo", must_read=seedlib.SCANNED)[0] == "ok"
    assert campaign.classify(2, "", "", False, baseline=True)[0] == "seed-rejected"


def test_stdin_is_closed_and_the_checkout_is_imported(tmp_path):
    code, out, err, _, _ = campaign.run_limited(
        python("import sys, precision_tool; print(sys.stdin.read() == '', precision_tool.__file__)"), tmp_path)
    assert code == 0, err
    flag, path = out.split()
    assert flag == "True" and path.startswith(str(seedlib.REPO / "precision_tool"))


@pytest.mark.parametrize("kind", mutate.SWAPS)
def test_swaps(workspace, tmp_path, kind):
    root, seeds = workspace
    item = seeds["npy"]
    ws = tmp_path / "ws"
    (ws / item.path).parent.mkdir(parents=True)
    (ws / item.path).write_bytes(item.data)
    target = mutate.apply(mutate.swap_mutator(kind)(item, random.Random(0)), item, ws)
    assert os.path.lexists(target) and target == ws / item.path
    check = {"fifo": lambda p: stat.S_ISFIFO(os.lstat(p).st_mode),
             "devzero": lambda p: os.readlink(p) == "/dev/zero",
             "loop": lambda p: os.path.islink(p) and not os.path.exists(p) and os.readlink(p) == p.name,
             "dangling": lambda p: os.path.islink(p) and not os.path.exists(os.readlink(p)),
             "folder": lambda p: p.is_dir() and not p.is_symlink()}[kind]
    assert check(target)


def test_each_command_gets_its_own_workspace_naming_itself(workspace, tmp_path):
    root, seeds = workspace
    runner = campaign.Runner(list(seeds.values()), root, tmp_path, sys.executable, CI_SEED, 30, 4 << 30)
    item = seeds["npy"]
    mutant = mutate.mutate(item, random.Random(0), mutate.truncate)
    for name in ("ws0", "ws1"):
        target = runner.workspace(tmp_path / name, mutant, item)
        assert target.read_bytes() == mutant.data
        summary = (tmp_path / name / seeds["summary_json"].path).read_text()
        assert str(tmp_path / name / "npu") in summary and seedlib.WS_TOKEN.decode() not in summary
    assert (root / item.path).read_bytes() == item.data  # the base is never touched


def test_every_mutator_on_every_seed_is_deterministic(workspace):
    _, seeds = workspace
    assert sorted(seeds) == sorted(seedlib.SEED_NAMES)
    for item in seeds.values():
        for mutator in mutate.mutators_for(item):
            first = mutate.mutate(item, random.Random(f"{item.name}:{mutator.__name__}"), mutator)
            again = mutate.mutate(item, random.Random(f"{item.name}:{mutator.__name__}"), mutator)
            assert first == again, (item.name, mutator.__name__)
            assert (first.data is None) == (first.swap is not None), (item.name, mutator.__name__)
            assert first.data != item.data or first.name, (item.name, mutator.__name__, first.mutation)


def test_the_plan_covers_swaps_bytes_and_format_mutators():
    items = [seedlib.Seed(name, "x", b"{}", "json", (), text=True) for name in ("a", "b", "c")]
    cases = [c for c in campaign.plan(items, 9, CI_SEED, 0) if c.index >= 0]
    assert len(cases) == 9 and campaign.plan(items, 9, CI_SEED, 0) == campaign.plan(items, 9, CI_SEED, 0)
    for name in ("a", "b", "c"):
        mine = [c.mutator for c in cases if c.fmt == name]
        assert any(m.startswith("swap_") for m in mine)
        assert any(m in {f.__name__ for f in mutate.BYTES} for m in mine)


# ------------------------------------------------------------------------------------------ the campaigns
def _formats():
    return [name for name in seedlib.SEED_NAMES if HAVE_TF or name not in campaign.REPLAY_FORMATS]


@pytest.mark.fuzz
def test_ci_campaign(tmp_path):
    formats = _formats()
    result = campaign.run_campaign(files=len(formats), seed=CI_SEED, out=tmp_path / "campaign", jobs=2,
                                   formats=formats, replay_every=0)
    print(result.report())
    assert result.records and not result.failures, result.report()


@pytest.mark.fuzz
@pytest.mark.skipif(not os.environ.get("PRECISION_TOOL_FUZZ_FILES"),
                    reason="opt-in: PRECISION_TOOL_FUZZ_FILES=2000 runs the long campaign")
def test_long_campaign(tmp_path):
    files = int(os.environ["PRECISION_TOOL_FUZZ_FILES"])
    seed = int(os.environ.get("PRECISION_TOOL_FUZZ_SEED", CI_SEED))
    out = os.environ.get("PRECISION_TOOL_FUZZ_OUT") or tmp_path / "campaign"
    result = campaign.run_campaign(files=files, seed=seed, out=out, jobs=2, formats=_formats())
    print(result.report())
    assert not result.failures, result.report()
