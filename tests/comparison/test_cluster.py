"""``compare``, ``ac -c`` and ``vc`` on a Dask cluster (issue 43, first part): a scheduler and 3 worker processes
started apart from the test (a LocalCluster in a child process: the workers are processes, not threads of the
test), then the same commands with and without ``--cluster`` on copies of the sample workspace. The rows must not
depend on where they were made: the CSV and the lossless result file are compared byte for byte. And without
``--cluster`` no Dask module is imported."""
import dataclasses
import filecmp
import json
import os
import shutil
import subprocess
import sys
import time
import types
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
CNN = REPO / "sample_dumps" / "cnn_workspace"
SCHEDULER = """
import sys, time
from distributed import LocalCluster
if __name__ == "__main__":
    cluster = LocalCluster(n_workers=3, threads_per_worker=1, processes=True, dashboard_address=None)
    print(cluster.scheduler_address, flush=True)
    sys.stdin.read()  # until the test closes it
    cluster.close()
"""


@pytest.fixture(scope="module")
def scheduler(tmp_path_factory):
    pytest.importorskip("distributed", reason="the cluster extra (precision_tool[cluster]) is not installed")
    script = tmp_path_factory.mktemp("cluster") / "scheduler.py"
    script.write_text(SCHEDULER)
    child = subprocess.Popen([sys.executable, str(script)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             stderr=subprocess.DEVNULL, universal_newlines=True, cwd=REPO,
                             env={**os.environ, "PYTHONPATH": str(REPO)})
    address = child.stdout.readline().strip()
    assert address.startswith("tcp://"), address
    yield address
    child.stdin.close()
    try:
        child.wait(timeout=30)
    except subprocess.TimeoutExpired:
        child.kill()


def cli(*args):
    return subprocess.run([sys.executable, "-m", "precision_tool", *map(str, args)], cwd=REPO,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": str(REPO)})


def results(folder):
    (csv,) = Path(folder).glob("result_*.csv")
    (lossless,) = Path(folder).glob("result_*.jsonl")
    return csv, lossless


def same_lossless_file(mine, theirs):
    """Every row byte for byte; the header too, but for what differs between any two runs: the times taken and
    the result's own file name (its timestamp)."""
    ours, others = mine.read_text().splitlines(), theirs.read_text().splitlines()
    assert ours[1:] == others[1:] and len(ours) > 10

    def steady(line):
        header = json.loads(line)
        header.pop("result_csv", None)
        header.pop("timing", None)
        return header

    assert steady(ours[0]) == steady(others[0])


def test_compare_on_the_cluster_writes_the_local_run_s_files_byte_for_byte(scheduler, tmp_path):
    workspace = tmp_path / "ws"
    shutil.copytree(CNN, workspace)
    local = cli("-d", workspace, "compare", "-o", tmp_path / "local", "--workers", "2")
    remote = cli("-d", workspace, "compare", "-o", tmp_path / "cluster", "--cluster", scheduler)
    assert local.returncode == remote.returncode == 1, remote.stderr  # the sample's planted fault fails
    (csv, lossless), (their_csv, their_lossless) = results(tmp_path / "local"), results(tmp_path / "cluster")
    assert filecmp.cmp(csv, their_csv, shallow=False)
    same_lossless_file(lossless, their_lossless)


def test_ac_c_on_the_cluster_decides_as_the_local_run(scheduler, tmp_path):
    workspace = tmp_path / "ws"
    shutil.copytree(CNN, workspace)
    local = cli("-d", workspace, "--json", "ac", "-c", "-o", tmp_path / "local", "--no-replay")
    remote = cli("-d", workspace, "--json", "ac", "-c", "-o", tmp_path / "cluster", "--no-replay",
                 "--cluster", scheduler)
    assert local.returncode == remote.returncode == 1, remote.stderr
    verdicts = [json.loads(run.stdout)["data"]["verdict"] for run in (local, remote)]
    # the same decision; the next commands differ only by the -o folder they name
    decided = [(v["headline"], v["culprit"]["evidence"], v["culprit"]["reasons"], v["also"]) for v in verdicts]
    assert decided[0] == decided[1]
    assert verdicts[0]["culprit"]["op_name"] == "small_cnn_1/res_conv_1/convolution"
    assert filecmp.cmp(results(tmp_path / "local")[0], results(tmp_path / "cluster")[0], shallow=False)


def test_the_environment_names_the_cluster_and_a_bad_address_is_one_line(scheduler, tmp_path):
    workspace = tmp_path / "ws"
    shutil.copytree(CNN, workspace)
    done = subprocess.run([sys.executable, "-m", "precision_tool", "-d", str(workspace), "vc", "-lt",
                           str(workspace / "npu" / "debug_0" / "dump"), "-rt", str(workspace / "tf" / "dump")],
                          cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True,
                          env={**os.environ, "PYTHONPATH": str(REPO), "PRECISION_TOOL_CLUSTER": scheduler})
    assert done.returncode == 1, done.stderr
    bad = cli("-d", workspace, "compare", "--cluster", "localhost:8786")
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1
    assert "--cluster 'localhost:8786' is not a Dask scheduler address" in bad.stderr
    started = time.monotonic()
    gone = cli("-d", workspace, "compare", "--cluster", "tcp://127.0.0.1:9", "-o", tmp_path / "none")
    assert gone.returncode == 2 and "cannot reach the Dask scheduler at tcp://127.0.0.1:9" in gone.stderr
    assert time.monotonic() - started < 60


def test_without_cluster_no_dask_module_is_imported(tmp_path):
    workspace = tmp_path / "ws"
    shutil.copytree(CNN, workspace)
    code = ("import sys, contextlib, io\n"
            "from precision_tool.cli import main\n"
            f"with contextlib.redirect_stdout(io.StringIO()):\n"
            f"    main(['-d', {str(workspace)!r}, 'compare', '-o', {str(tmp_path / 'out')!r}])\n"
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('dask', 'distributed')))\n")
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, stdout=subprocess.PIPE, universal_newlines=True,
                          env={**os.environ, "PYTHONPATH": str(REPO)})
    assert done.stdout.strip().splitlines()[-1] == "[]"


class _Future:
    def __init__(self, outcome):
        self.outcome = outcome

    def result(self):
        if isinstance(self.outcome, BaseException):
            raise self.outcome
        return self.outcome


class _Cluster:
    """Stands in for a Dask client whose workers compare every span but the second, whose worker dies each time
    (Dask raises KilledWorker once its retries are spent): deterministic, where killing a real process mid-run
    depends on timing."""

    def __init__(self):
        self.cancelled, self.closed, self.submitted = [], False, 0

    def submit(self, function, tasks, cosine, **_):
        from distributed import KilledWorker

        from precision_tool.comparison.worker import PairComparer

        self.submitted += 1
        if self.submitted == 2:
            return _Future(KilledWorker("span-2", types.SimpleNamespace(address="tcp://10.0.0.7:40001"), 2))
        # compare_span's comparer, without its process settings: this is the test's process, not a worker's
        return _Future(PairComparer(cosine).run_all(list(tasks)))

    def cancel(self, futures):
        self.cancelled.extend(futures)

    def close(self):
        self.closed = True


def test_a_lost_worker_s_pairs_are_error_rows_naming_it_and_the_rest_is_compared(monkeypatch):
    pytest.importorskip("distributed", reason="the cluster extra (precision_tool[cluster]) is not installed")
    from precision_tool.alignment import align, load_graph
    from precision_tool.comparison import cluster
    from precision_tool.comparison.engine import compare_alignment
    from precision_tool.status import Status

    fake = _Cluster()
    monkeypatch.setattr(cluster, "_connect", lambda address: fake)
    graph = load_graph(CNN / "npu" / "debug_0" / "graph")
    alignment = align(CNN / "npu" / "debug_0" / "dump", CNN / "tf" / "dump", graph)
    local = compare_alignment(alignment, graph=graph, workers=2)
    remote = compare_alignment(alignment, graph=graph, workers=2, cluster="tcp://stand-in:8786")
    lost = [row for row in remote.results if row.reason.startswith("lost worker tcp://10.0.0.7:40001")]
    assert fake.submitted > 2 and fake.closed and lost  # the second span's pairs
    assert all(row.status is Status.ERROR for row in lost)
    assert "died comparing pairs" in lost[0].reason and "3 times (the cluster's retries)" in lost[0].reason
    kept = {row.tensor_id: row for row in local.results}
    for row in remote.results:  # every other row as the local run made it: no gap, nothing else changed
        if row not in lost:  # (an input whose producer was lost is compared on its own: no reused_from)
            assert dataclasses.replace(row, reused_from=kept[row.tensor_id].reused_from) == kept[row.tensor_id]
    assert len(remote.results) == len(local.results)
