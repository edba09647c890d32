"""The garbage collector held off while TensorFlow imports in the background (counted holds, released in another
thread), and the comparison's forked workers."""
import contextlib
import gc
import os
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest

from precision_tool import collector
from precision_tool.collector import hold_collection, release_collection

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(autouse=True)
def collector_on():
    """Each test starts with the collector on and no hold, and leaves it so."""
    was = gc.isenabled()
    gc.enable()
    collector._holders, collector._resume = 0, False
    yield
    collector._holders, collector._resume = 0, False
    (gc.enable if was else gc.disable)()


@contextlib.contextmanager
def held():
    """A hold for the length of a block, as :class:`~precision_tool.tf_runtime.BackgroundImport` takes one."""
    hold_collection()
    try:
        yield
    finally:
        release_collection()


def test_the_collector_is_off_while_held_and_back_on_after_the_last_release():
    with held():
        assert not gc.isenabled()
        with held():  # nested: the outer hold still holds it
            pass
        assert not gc.isenabled()
    assert gc.isenabled()


def test_a_hold_leaves_an_off_collector_off():
    gc.disable()
    with held():
        assert not gc.isenabled()
    assert not gc.isenabled()


def test_a_release_without_a_hold_is_refused():
    with pytest.raises(RuntimeError, match="without hold_collection"):
        release_collection()
    gc.disable()
    with held():
        pass
    with pytest.raises(RuntimeError):
        release_collection()
    assert not gc.isenabled()  # a stray release does not turn on what the caller turned off


def test_a_hold_taken_in_one_thread_is_released_in_another():
    released = threading.Event()
    hold_collection()  # as BackgroundImport.start does
    assert not gc.isenabled()
    threading.Thread(target=lambda: (release_collection(), released.set())).start()
    assert released.wait(5)
    assert gc.isenabled()


def test_a_comparison_leaves_no_cyclic_garbage(tmp_path):
    """Every object of a comparison is freed by reference counting (the NPU run once held its own bound method, a
    cycle that kept the run's ops, headers and graph alive until a collection), so a comparison that runs while
    TensorFlow's background import holds the collector off holds no more memory for it."""
    from precision_tool.comparison.pipeline import CompareRequest, run_comparison
    from tests.comparison.cmp_builders import chain_case

    names = [f"op{i}" for i in range(30)]
    case = chain_case(str(tmp_path), names=names)
    request = CompareRequest(case.npu, case.ref, graph=case.graph, workers=1)
    run_comparison(request)  # caches and lazy imports filled first
    gc.collect()
    with held():
        result = run_comparison(request)
        assert len(result.compared) == 2 * len(names)  # each op of the chain: its input 0 and output 0
        del result
        assert gc.collect() == 0


def test_the_workers_collect_with_what_they_inherited_frozen(tmp_path, monkeypatch):
    """Workers forked while TensorFlow's background import holds the collector off turn it back on, with what they
    inherited frozen (a worker that found it off, or nothing frozen, would die here, and the run would raise
    WorkerError)."""
    from precision_tool.comparison import processes, worker
    from precision_tool.comparison.pipeline import CompareRequest, run_comparison
    from tests.comparison.cmp_builders import chain_case

    def init(*args, **kwargs):
        frozen_before = gc.get_freeze_count()
        worker.init_pool_worker(*args, **kwargs)
        if not gc.isenabled() or gc.get_freeze_count() <= frozen_before or collector._holders:
            os._exit(3)

    names = [f"op{i}" for i in range(40)]
    case = chain_case(str(tmp_path), names=names)
    monkeypatch.setattr(processes, "init_pool_worker", init)
    with held():  # as TensorFlow's background import may hold it
        result = run_comparison(CompareRequest(case.npu, case.ref, graph=case.graph, workers=2))
        assert not gc.isenabled()
    assert result.timing.workers == 2 and len(result.compared) == 2 * len(names)  # split over two: none lost
    assert gc.isenabled()


def test_tensorflows_import_started_in_a_hold_collects_first_and_holds_until_it_ends(tmp_path):
    """An import started while another hold keeps the collector off: garbage made before is collected, not frozen
    with TensorFlow's objects; the collector stays off until both the hold and the import have ended."""
    fake = tmp_path / "site" / "tensorflow"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text("import gc, time\nCOLLECTING = gc.isenabled()\ntime.sleep(0.3)\n")
    code = textwrap.dedent("""
        import gc, weakref
        from precision_tool.collector import hold_collection, release_collection
        from precision_tool.tf_runtime import BackgroundImport

        class Node:
            pass

        hold_collection()
        a, b = Node(), Node()
        a.other, b.other = b, a  # a cycle that is garbage once the names go
        probe = weakref.ref(a)
        del a, b
        started = BackgroundImport()
        started.start()
        release_collection()
        print("after pause", gc.isenabled())
        print(started.wait() or "ok", gc.isenabled())
        import tensorflow
        print("import ran collecting", tensorflow.COLLECTING)
        gc.collect()
        print("cycle gone", probe() is None)
    """)
    out = subprocess.run([sys.executable, "-c", code], env={"PYTHONPATH": f"{tmp_path / 'site'}:{REPO}"},
                         stdout=subprocess.PIPE, universal_newlines=True, check=True).stdout.splitlines()
    assert out == ["after pause False", "ok True", "import ran collecting False", "cycle gone True"]


def test_a_thread_that_cannot_start_gives_back_its_hold(monkeypatch):
    from precision_tool import tf_runtime

    monkeypatch.delitem(sys.modules, "tensorflow", raising=False)
    for variable in ("TF_ENABLE_ONEDNN_OPTS", "TF_CPP_MIN_LOG_LEVEL"):  # what start() sets, given back after
        monkeypatch.setenv(variable, os.environ.get(variable, "0"))

    def refuse(self):
        raise RuntimeError("can't start new thread")

    monkeypatch.setattr(threading.Thread, "start", refuse)
    with pytest.raises(RuntimeError, match="can't start new thread"):
        tf_runtime.BackgroundImport().start()
    assert gc.isenabled() and collector._holders == 0
