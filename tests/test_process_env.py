"""Process-wide settings: one OpenBLAS thread for the command line (the user's programs never see it), and the
garbage collector paused for a job and back on after it, also when TensorFlow's import outlives the job."""
import gc
import os
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest

from precision_tool import process_env
from precision_tool.process_env import collection_paused, hold_collection, release_collection

REPO = Path(__file__).resolve().parents[1]


def _python(code: str, **env: str) -> str:
    clean = {k: v for k, v in os.environ.items() if k != process_env.VARIABLE}
    clean.update(env, PYTHONPATH=str(REPO))
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=clean, stdout=subprocess.PIPE,
                          universal_newlines=True, check=True).stdout.strip()


THREADS_AFTER_NUMPY = """
    import os, sys
    from precision_tool.process_env import one_blas_thread
    if sys.argv[-1:] != ["plain"]:
        print(one_blas_thread(), end=" ")
    import numpy
    print(len(os.listdir("/proc/self/task")))
"""


@pytest.mark.skipif(not os.path.isdir("/proc/self/task"), reason="counts threads in /proc (Linux)")
def test_numpy_starts_no_blas_thread_once_one_is_asked_for():
    """The kernel's own thread count, not our variable: OpenBLAS started no thread (numpy's import alone
    started one per further CPU, each spinning for 0.1 s)."""
    assert _python(THREADS_AFTER_NUMPY) == "True 1"
    if (os.cpu_count() or 1) > 1:
        plain = subprocess.run([sys.executable, "-c", textwrap.dedent(THREADS_AFTER_NUMPY), "plain"],
                               env={k: v for k, v in os.environ.items() if k != process_env.VARIABLE},
                               stdout=subprocess.PIPE, universal_newlines=True, check=True).stdout.split()
        assert int(plain[-1]) > 1  # the contrast: without it, OpenBLAS started threads


def test_a_users_own_setting_is_kept_and_too_late_is_left_alone():
    assert _python("""
        import os
        from precision_tool.process_env import one_blas_thread, user_environment
        print(one_blas_thread(), os.environ["OPENBLAS_NUM_THREADS"], user_environment()["OPENBLAS_NUM_THREADS"])
    """, OPENBLAS_NUM_THREADS="4") == "False 4 4"
    assert _python("""
        import os, numpy
        from precision_tool.process_env import one_blas_thread
        print(one_blas_thread(), "OPENBLAS_NUM_THREADS" in os.environ)
    """) == "False False"


def test_run_gives_the_users_command_the_environment_it_had():
    """`run` starts the user's shell command: numpy there keeps all its BLAS threads."""
    out = subprocess.run([sys.executable, "-m", "precision_tool", "run", 'echo "[$OPENBLAS_NUM_THREADS] $EXTRA"'],
                         env=dict({k: v for k, v in os.environ.items() if k != process_env.VARIABLE},
                                  EXTRA="kept", PYTHONPATH=str(REPO)),
                         stdout=subprocess.PIPE, universal_newlines=True, check=True).stdout
    assert out.splitlines()[0] == "[] kept"


@pytest.fixture
def collector_on():
    was = gc.isenabled()
    gc.enable()
    yield
    (gc.enable if was else gc.disable)()


def test_the_collector_is_off_in_a_pause_and_back_on_after_it(collector_on):
    with collection_paused():
        assert not gc.isenabled()
        with collection_paused():  # nested: the outer pause still holds it
            pass
        assert not gc.isenabled()
    assert gc.isenabled()


def test_a_pause_leaves_an_off_collector_off():
    was = gc.isenabled()
    gc.disable()
    try:
        with collection_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()
    finally:
        (gc.enable if was else gc.disable)()


def test_a_hold_that_outlives_the_pause_keeps_it_off_until_released_in_its_thread(collector_on):
    """TensorFlow's background import starts during the comparison and ends after it, in its own thread."""
    released = threading.Event()
    with collection_paused():
        hold_collection()  # BackgroundImport.start
    assert not gc.isenabled()  # the pause ended, the import goes on
    threading.Thread(target=lambda: (release_collection(), released.set())).start()
    assert released.wait(5)
    assert gc.isenabled()


def test_a_compare_leaves_the_collector_on_and_its_workers_collect(tmp_path, collector_on, monkeypatch):
    """The comparison pauses the collector in this process; its forked workers turn it back on, with what they
    inherited frozen (a worker that found it off, or nothing frozen, would die here, and the run would raise
    WorkerError)."""
    from precision_tool.comparison import processes, worker
    from precision_tool.comparison.pipeline import CompareRequest, run_comparison
    from tests.comparison.cmp_builders import chain_case

    def init(*args, **kwargs):
        worker.init_pool_worker(*args, **kwargs)
        if not gc.isenabled() or gc.get_freeze_count() == 0:
            os._exit(3)

    case = chain_case(str(tmp_path), names=[f"op{i}" for i in range(40)])
    monkeypatch.setattr(processes, "init_pool_worker", init)
    with collection_paused():  # as ac's section holds it while replay's import may run
        result = run_comparison(CompareRequest(case.npu, case.ref, graph=case.graph, workers=2))
        assert not gc.isenabled()
    assert result.timing.workers == 2 and len(result.compared) > 40
    assert gc.isenabled()
