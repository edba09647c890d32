"""``compare``, ``ac -c`` and ``vc`` on a Dask cluster (issue 43): a scheduler and 3 worker processes started apart
from the test (a LocalCluster in a child process: the workers are processes, not threads of the test), then the
same commands with and without ``--cluster``. The rows must not depend on where they were made: the CSV and the
lossless result file are compared byte for byte, on the sample workspace and on a 4-device, 2-step tree of emulated
dumps. Faults are real: a worker process that dies mid-run (it kills itself with SIGKILL when it is given a chosen
pair: deterministic, where a kill from outside depends on timing), Ctrl-C, a worker that cannot see the workspace
(its own mount namespace), a TLS scheduler. And without ``--cluster`` no Dask module is imported."""
import dataclasses
import filecmp
import json
import os
import shutil
import signal
import subprocess
import sys
import time
import types
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
CNN = REPO / "sample_dumps" / "cnn_workspace"
CNN_SCRIPT = REPO / "sample_dumps" / "models" / "cnn.py"
PLANTED = "small_cnn_1/res_conv_1/convolution"
SCHEDULER = """
import sys
from distributed import LocalCluster
if __name__ == "__main__":
    cluster = LocalCluster(n_workers=3, threads_per_worker=1, processes=True, dashboard_address=None,
                           preload=[sys.argv[1]])
    print(cluster.scheduler_address, flush=True)
    sys.stdin.read()  # until the test closes it
    cluster.close()
"""
# A worker's faults, read from the control file at each task: the real comparison after an optional pause, or the
# worker process killing itself (SIGKILL) when its span holds the pair named -- once, or every time.
PRELOAD = """
import json, os, signal, time
from precision_tool.comparison import cluster

_compare_span = getattr(cluster, "untouched_compare_span", cluster.compare_span)  # Dask may run a preload twice
cluster.untouched_compare_span = _compare_span


def compare_span(tasks, cosine_threshold, *versions):
    control_file = os.environ["PT_TEST_CLUSTER_CONTROL"]
    control = json.load(open(control_file)) if os.path.exists(control_file) else {}
    with open(control_file + ".log", "a") as log:
        log.write(tasks[0].pair.npu.tensor_id + "\\n")
    time.sleep(control.get("pause", 0))
    if any(task.pair.npu.tensor_id == control.get("die_on") for task in tasks):
        if control.get("always") or not os.path.exists(control["marker"]):
            open(control["marker"], "a").close()
            os.kill(os.getpid(), signal.SIGKILL)
    outcomes = _compare_span(tasks, cosine_threshold, *versions)
    return outcomes[:-1] if control.get("drop_a_row") else outcomes


cluster.compare_span = compare_span
"""


def start_cluster(folder, script=SCHEDULER, *args, env=None):
    """A child process running ``script`` (a LocalCluster); yields its scheduler's address, then closes it."""
    pytest.importorskip("distributed", reason="the cluster extra (precision_tool[cluster]) is not installed")
    (folder / "scheduler.py").write_text(script)
    child = subprocess.Popen([sys.executable, str(folder / "scheduler.py"), *map(str, args)], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, universal_newlines=True, cwd=REPO,
                             env={**os.environ, "PYTHONPATH": str(REPO), **(env or {})})
    address = child.stdout.readline().strip()
    assert address.startswith(("tcp://", "tls://")), address
    try:
        yield address
    finally:
        child.stdin.close()
        try:
            child.wait(timeout=30)
        except subprocess.TimeoutExpired:
            child.kill()


class Control:
    """The control file the workers read: what the next tasks do (nothing unless told)."""

    def __init__(self, path):
        self.path = path

    def set(self, **control):
        self.path.write_text(json.dumps({"marker": str(self.path) + f".died{time.monotonic_ns()}", **control}))
        Path(str(self.path) + ".log").write_text("")

    def started(self):
        return Path(str(self.path) + ".log").read_text().splitlines()

    def wait_until_started(self, seconds=60):
        """Until a worker has begun a chunk (a run is under way)."""
        deadline = time.monotonic() + seconds
        while not self.started() and time.monotonic() < deadline:
            time.sleep(0.05)


@pytest.fixture(scope="module")
def control(tmp_path_factory):
    return Control(tmp_path_factory.mktemp("control") / "control.json")


@pytest.fixture(scope="module")
def scheduler(tmp_path_factory, control):
    folder = tmp_path_factory.mktemp("cluster")
    (folder / "preload.py").write_text(PRELOAD)
    control.set()
    yield from start_cluster(folder, SCHEDULER, folder / "preload.py",
                             env={"PT_TEST_CLUSTER_CONTROL": str(control.path)})


@pytest.fixture
def calm(control):
    """The workers as they are, after the test too."""
    control.set()
    yield control
    control.set()


def cli(*args, env=None):
    return subprocess.run([sys.executable, "-m", "precision_tool", *map(str, args)], cwd=REPO,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": str(REPO), **(env or {})})


def cli_started(*args, env=None):
    """``precision_tool ARGS`` started, not waited for (to interrupt it, or to break its cluster under it)."""
    return subprocess.Popen([sys.executable, "-m", "precision_tool", *map(str, args)], cwd=REPO,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True,
                            env={**os.environ, "PYTHONPATH": str(REPO), **(env or {})})


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


def test_a_workspace_given_relative_to_this_folder_is_read_by_workers_elsewhere(scheduler, tmp_path):
    """The workers' working folder is the repository's; this run's is ``tmp_path``, the workspace ``ws`` in it. The
    rows still spell the paths as given (relative), byte for byte as the local run's."""
    shutil.copytree(CNN, tmp_path / "ws")

    def run(*args):
        return subprocess.run([sys.executable, "-m", "precision_tool", "-d", "ws", "compare", *args], cwd=tmp_path,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True,
                              env={**os.environ, "PYTHONPATH": str(REPO)}, timeout=300)

    local, remote = run("-o", "local"), run("-o", "cluster", "--cluster", scheduler)
    assert local.returncode == remote.returncode == 1, remote.stderr
    (csv, lossless), (their_csv, their_lossless) = results(tmp_path / "local"), results(tmp_path / "cluster")
    assert filecmp.cmp(csv, their_csv, shallow=False)
    same_lossless_file(lossless, their_lossless)
    assert '"npu_dump": "ws/npu/debug_0/dump/' in their_lossless.read_text()


# ------------------------------------------------------------------------- a data-parallel tree: 4 devices x 2 steps
DEVICES, STEPS, FAULTY = 4, 2, (2, 1)  # only device 2's step 1 ran the imprecise kernel


@pytest.fixture(scope="module")
def tree(tmp_path_factory):
    """A workspace whose NPU dump is GE's ``{time}/{device}/{model}/{model_id}/{step}`` tree of 4 devices and 2
    steps, each emulated from the sample CNN (same seed, so one reference): clean, but for device 2's step 1, where
    noise of 0.5 was planted on res_conv's Conv2D."""
    pytest.importorskip("tensorflow", reason="emulating the tree needs TensorFlow")
    folder = tmp_path_factory.mktemp("tree")
    for name, fault in (("clean", []), ("faulty", ["--perturb", f"{PLANTED}=0.5"])):
        done = cli("emulate", CNN_SCRIPT, "-o", folder / name, "--fusion", "on", *fault)
        assert done.returncode == 0, done.stderr
    workspace = folder / "ws"
    shutil.copytree(folder / "clean" / "tf", workspace / "tf")
    shutil.copytree(folder / "clean" / "npu" / "debug_0" / "graph", workspace / "npu" / "debug_0" / "graph")
    for device in range(DEVICES):
        for step in range(STEPS):
            source = folder / ("faulty" if (device, step) == FAULTY else "clean")
            (dump,) = (source / "npu" / "debug_0" / "dump").glob("*/*/*/*/*")
            shutil.copytree(dump, workspace / "npu" / "debug_0" / "dump" / f"2024111907064{device}" / str(device)
                            / dump.parts[-3] / "1" / str(step))
    return workspace


def test_every_step_of_every_device_on_the_cluster_is_the_local_run_byte_for_byte(scheduler, tree, tmp_path):
    local = cli("-d", tree, "compare", "--device", "all", "--steps", "all", "-o", tmp_path / "local")
    remote = cli("-d", tree, "compare", "--device", "all", "--steps", "all", "-o", tmp_path / "cluster",
                 "--cluster", scheduler)
    assert local.returncode == remote.returncode == 1, remote.stderr
    assert "First diverging step of device 2: 1" in remote.stdout and "No step of device 0 diverges" in remote.stdout
    runs = sorted(str(path.relative_to(tmp_path / "local")) for path in (tmp_path / "local").glob("device_*/step_*"))
    assert runs == [f"device_{d}/step_{s}" for d in range(DEVICES) for s in range(STEPS)]
    for run in runs:
        (csv, lossless), (their_csv, their_lossless) = (results(tmp_path / "local" / run),
                                                         results(tmp_path / "cluster" / run))
        assert filecmp.cmp(csv, their_csv, shallow=False), run
        same_lossless_file(lossless, their_lossless)


def test_ac_c_on_the_cluster_walks_the_faulty_device_s_steps_as_the_local_run(scheduler, tree, tmp_path):
    local = cli("--device", "2", "-d", tree, "--json", "ac", "-c", "--no-replay", "-o", tmp_path / "local")
    remote = cli("--device", "2", "-d", tree, "--json", "ac", "-c", "--no-replay", "-o", tmp_path / "cluster",
                 "--cluster", scheduler)
    assert local.returncode == remote.returncode == 1, remote.stderr
    verdicts = [json.loads(run.stdout)["data"]["verdict"] for run in (local, remote)]
    decided = [(v["headline"], v["culprit"]["op_name"], v["culprit"]["evidence"], v["also"]) for v in verdicts]
    assert decided[0] == decided[1] and decided[0][1] == PLANTED
    for mine, theirs in zip(sorted((tmp_path / "local").rglob("result_*.csv")),
                            sorted((tmp_path / "cluster").rglob("result_*.csv"))):
        assert mine.relative_to(tmp_path / "local").parent == theirs.relative_to(tmp_path / "cluster").parent
        assert filecmp.cmp(mine, theirs, shallow=False)


# ------------------------------------------------------------------------------------------------------- faults
def test_a_worker_killed_mid_run_has_its_pairs_run_again_elsewhere(scheduler, calm, tmp_path):
    workspace = tmp_path / "ws"
    shutil.copytree(CNN, workspace)
    local = cli("-d", workspace, "compare", "-o", tmp_path / "local")
    calm.set(die_on=f"{PLANTED}:output:0")
    remote = cli("-d", workspace, "compare", "-o", tmp_path / "cluster", "--cluster", scheduler)
    assert Path(json.loads(calm.path.read_text())["marker"]).exists()  # a worker did die
    assert local.returncode == remote.returncode == 1, remote.stderr
    assert filecmp.cmp(results(tmp_path / "local")[0], results(tmp_path / "cluster")[0], shallow=False)


def test_a_span_that_kills_every_worker_it_runs_on_is_error_rows_naming_the_last(scheduler, calm, tmp_path):
    workspace = tmp_path / "ws"
    shutil.copytree(CNN, workspace)
    assert cli("-d", workspace, "--json", "compare", "-o", tmp_path / "local").returncode == 1
    calm.set(die_on=f"{PLANTED}:output:0", always=True)
    remote = cli("-d", workspace, "--json", "compare", "-o", tmp_path / "cluster", "--cluster", scheduler)
    assert remote.returncode == 1, remote.stderr
    rows = results(tmp_path / "local")[1].read_text().splitlines()[1:]
    mine = {row["tensor_id"]: row for row in map(json.loads, rows)}
    theirs = list(map(json.loads, results(tmp_path / "cluster")[1].read_text().splitlines()[1:]))
    assert sorted(row["tensor_id"] for row in theirs) == sorted(mine)  # every pair: compared, or an ERROR row
    lost = [row for row in theirs if row["reason"].startswith("lost worker tcp://127.0.0.1:")]
    assert f"{PLANTED}:output:0" in {row["tensor_id"] for row in lost}
    assert all(row["status"] == "ERROR" for row in lost) and len(lost) < len(theirs)
    assert "workers died 4 times running pairs" in lost[0]["reason"]  # Dask's default allowed-failures: 3
    assert "(the scheduler's allowed-failures: 3); not compared" in lost[0]["reason"]
    for row in theirs:
        if row not in lost:  # what the other workers compared is the local run's
            assert row["metrics"] == mine[row["tensor_id"]]["metrics"]
            assert row["status"] == mine[row["tensor_id"]]["status"]


def test_ctrl_c_cancels_the_run_s_tasks_on_the_cluster(scheduler, calm, tmp_path):
    workspace = tmp_path / "ws"
    shutil.copytree(CNN, workspace)
    calm.set(pause=1.0)
    run = cli_started("-d", workspace, "compare", "-o", tmp_path / "out", "--cluster", scheduler)
    calm.wait_until_started()
    run.send_signal(signal.SIGINT)
    _, err = run.communicate(timeout=60)
    assert run.returncode == 130 and err.count("\n") == 1, err
    started = len(calm.started())
    time.sleep(3)  # what was cancelled never starts
    assert len(calm.started()) == started and started < 10  # of the run's 23 spans
    from distributed import Client

    with Client(scheduler, set_as_default=False) as client:
        left = client.run_on_scheduler(lambda dask_scheduler: [str(key) for key in dask_scheduler.tasks])
    assert not [key for key in left if key.startswith("precision_tool-")]


def cli_cluster(folder, *worker_wrappers, env=None, worker_args=()):
    """``dask scheduler`` and one ``dask worker --no-nanny`` per item of ``worker_wrappers`` (a list of words its
    command is put after, e.g. ``["unshare", ...]``, or ``[]``), processes apart from the test; yields the
    scheduler's address and the worker processes, then ends them all."""
    pytest.importorskip("distributed", reason="the cluster extra (precision_tool[cluster]) is not installed")
    env = {**os.environ, "PYTHONPATH": str(REPO), **(env or {})}
    scheduler_file = folder / "scheduler.json"
    processes = [subprocess.Popen([sys.executable, "-m", "distributed.cli.dask_scheduler", "--host", "127.0.0.1",
                                   "--port", "0", "--no-dashboard", "--scheduler-file", str(scheduler_file)],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)]
    try:
        deadline = time.monotonic() + 60
        while not scheduler_file.exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        address = json.loads(scheduler_file.read_text())["address"]
        workers = [subprocess.Popen([*wrapper, sys.executable, "-m", "distributed.cli.dask_worker", address,
                                     "--nthreads", "1", "--no-nanny", "--no-dashboard", *worker_args],
                                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
                   for wrapper in worker_wrappers]
        processes += workers
        yield address, workers
    finally:
        for process in reversed(processes):
            process.kill()
            process.wait(timeout=30)


def test_a_worker_that_cannot_see_the_workspace_is_one_line_naming_it_and_the_path(tmp_path):
    """The worker runs in a mount namespace of its own where the workspace's folder is an empty file system -- a
    node without the shared mount."""
    workspace = tmp_path / "ws"
    shutil.copytree(CNN, workspace)
    probe = subprocess.run(["unshare", "-Urm", "sh", "-c", f"mount -t tmpfs none {workspace}"],
                           stderr=subprocess.PIPE, universal_newlines=True)
    if probe.returncode:
        pytest.skip(f"no mount namespace for a user here: {probe.stderr.strip()}")
    without_mount = ["unshare", "-Urm", "sh", "-c", f'mount -t tmpfs none {workspace} && exec "$0" "$@"']
    for address, _ in cli_cluster(tmp_path, without_mount):
        done = cli("-d", workspace, "compare", "-o", tmp_path / "out", "--cluster", address)  # waits for the worker
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    assert "error: Dask worker tcp://127.0.0.1:" in done.stderr
    assert f"cannot read {workspace}/npu/debug_0/dump/" in done.stderr and "(no such file), which this machine " \
        "reads" in done.stderr


def test_when_every_worker_is_lost_the_pairs_left_are_error_rows_naming_them(calm, tmp_path):
    """One worker, no nanny to bring it back, killed once it has started comparing (each span takes a second)."""
    workspace = tmp_path / "ws"
    shutil.copytree(CNN, workspace)
    (tmp_path / "preload.py").write_text(PRELOAD)
    calm.set(pause=1.0)
    for address, (worker,) in cli_cluster(tmp_path, [], env={"PT_TEST_CLUSTER_CONTROL": str(calm.path)},
                                          worker_args=["--preload", str(tmp_path / "preload.py")]):
        run = cli_started("-d", workspace, "--json", "compare", "-o", tmp_path / "out", "--cluster", address,
                          env={"PRECISION_TOOL_CLUSTER_WAIT": "5"})
        calm.wait_until_started()
        worker.kill()
        _, err = run.communicate(timeout=120)
    assert run.returncode == 1, err
    rows = [json.loads(line) for line in results(tmp_path / "out")[1].read_text().splitlines()[1:]]
    local = cli("-d", workspace, "compare", "-o", tmp_path / "local")
    assert local.returncode == 1 and len(rows) == len(results(tmp_path / "local")[1].read_text().splitlines()) - 1
    lost = [row for row in rows if row["reason"].startswith("lost every worker of the cluster (tcp://127.0.0.1:")]
    assert lost and all(row["status"] == "ERROR" for row in lost)
    assert "none back within 5 s, with pairs 1-" in lost[0]["reason"]


def test_a_worker_that_sends_back_a_row_too_few_makes_error_rows_not_a_gap(scheduler, calm, tmp_path):
    workspace = tmp_path / "ws"
    shutil.copytree(CNN, workspace)
    calm.set(drop_a_row=True)
    done = cli("-d", workspace, "compare", "-o", tmp_path / "out", "--cluster", scheduler)
    local = cli("-d", workspace, "compare", "-o", tmp_path / "local")
    assert done.returncode == local.returncode == 1
    rows = results(tmp_path / "out")[1].read_text().splitlines()[1:]
    assert len(rows) == len(results(tmp_path / "local")[1].read_text().splitlines()) - 1
    assert all("rows for pairs" in json.loads(row)["reason"] and "not one per pair" in json.loads(row)["reason"]
               for row in rows)


def test_a_reference_replaced_between_two_runs_is_read_anew(tmp_path):
    """A worker lives across runs: what it read for the first must not answer the second. One pair (the sample's
    residual Add against its reference), one worker of one thread, so the same thread compares it both times."""
    import numpy

    npu, reference_dir = tmp_path / "npu", tmp_path / "tf"
    npu.mkdir()
    reference_dir.mkdir()
    (dump,) = (CNN / "npu" / "debug_0" / "dump").glob("*/*/*/*/*/Add.small_cnn_1_res_add_1_Add.*")
    (reference,) = (CNN / "tf" / "dump").glob("small_cnn_1_res_add_1_Add.*.npy")
    shutil.copy(str(dump), str(npu))
    shutil.copy(str(reference), str(reference_dir))
    reference = reference_dir / reference.name

    def vc(workspace, *cluster):  # vc writes into WORKSPACE/temp/vector_compare/{timestamp}
        return cli("-d", tmp_path / workspace, "vc", "-lt", npu, "-rt", reference_dir, *cluster)

    def csv(workspace):
        (folder,) = (tmp_path / workspace / "temp" / "vector_compare").glob("*")
        return results(folder)[0]

    (tmp_path / "preload.py").write_text("")
    for address in start_cluster(tmp_path, SCHEDULER.replace("n_workers=3", "n_workers=1"), tmp_path / "preload.py"):
        first = vc("first", "--cluster", address)
        numpy.save(str(tmp_path / "new.npy"), 3 - numpy.load(str(reference)))
        os.replace(str(tmp_path / "new.npy"), str(reference))  # a new file at the same path
        second = vc("second", "--cluster", address)
    local = vc("local")
    assert (first.returncode, second.returncode, local.returncode) == (0, 1, 1), second.stdout
    assert filecmp.cmp(csv("second"), csv("local"), shallow=False)


@pytest.mark.parametrize("preload, message", [
    ("import precision_tool\nprecision_tool.__version__ = '0.0.9'\n",
     "runs precision_tool 0.0.9 with numpy {numpy}, this machine precision_tool {ours} with numpy {numpy}"),
    ("import sys\nsys.modules['precision_tool'] = None  # as if not installed there\n",
     "runs no precision_tool or numpy (ModuleNotFoundError: import of precision_tool halted"),
])
def test_a_worker_running_another_version_or_none_is_one_line_before_any_pair(tmp_path, preload, message):
    import numpy

    import precision_tool

    (tmp_path / "preload.py").write_text(preload)
    one_worker = SCHEDULER.replace("n_workers=3", "n_workers=1")
    for address in start_cluster(tmp_path, one_worker, tmp_path / "preload.py"):
        done = cli("-d", CNN, "compare", "-o", tmp_path / "out", "--cluster", address)
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    assert "error: Dask worker tcp://127.0.0.1:" in done.stderr
    assert message.format(numpy=numpy.__version__, ours=precision_tool.__version__) in done.stderr
    assert not (tmp_path / "out").exists() or not list((tmp_path / "out").glob("result_*"))


def test_a_scheduler_without_workers_is_one_line_not_a_wait_for_ever(tmp_path):
    for address in start_cluster(tmp_path, SCHEDULER.replace("n_workers=3", "n_workers=0"), tmp_path / "none.py"):
        done = cli("-d", CNN, "compare", "-o", tmp_path / "out", "--cluster", address,
                   env={"PRECISION_TOOL_CLUSTER_WAIT": "3"})
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    assert f"error: the Dask scheduler at {address} has no workers (waited 3 s for one) (start some" in done.stderr


ADAPTIVE = """
import sys
from distributed import LocalCluster
if __name__ == "__main__":
    cluster = LocalCluster(n_workers=0, threads_per_worker=1, processes=True, dashboard_address=None)
    cluster.adapt(minimum=0, maximum=2)  # workers only for queued tasks
    print(cluster.scheduler_address, flush=True)
    sys.stdin.read()
    cluster.close()
"""


def test_an_adaptive_cluster_starts_its_workers_for_the_run_s_tasks(tmp_path):
    for address in start_cluster(tmp_path, ADAPTIVE):
        done = cli("-d", CNN, "compare", "-o", tmp_path / "cluster", "--cluster", address)
    local = cli("-d", CNN, "compare", "-o", tmp_path / "local")
    assert done.returncode == local.returncode == 1, done.stderr
    assert filecmp.cmp(results(tmp_path / "cluster")[0], results(tmp_path / "local")[0], shallow=False)


@pytest.mark.parametrize("workers", [3, 0], ids=["mid-run", "while waiting for a worker"])
def test_a_scheduler_lost_is_one_line(calm, tmp_path, workers):
    """The scheduler's process killed once a worker has begun a chunk (each takes a second), or, with no worker,
    once the run has queued its tasks and waits."""
    pytest.importorskip("distributed", reason="the cluster extra (precision_tool[cluster]) is not installed")
    (tmp_path / "scheduler.py").write_text(SCHEDULER.replace("n_workers=3", f"n_workers={workers}"))
    (tmp_path / "preload.py").write_text(PRELOAD)
    calm.set(pause=1.0)
    child = subprocess.Popen([sys.executable, str(tmp_path / "scheduler.py"), str(tmp_path / "preload.py")],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                             universal_newlines=True, env={**os.environ, "PYTHONPATH": str(REPO),
                                                           "PT_TEST_CLUSTER_CONTROL": str(calm.path)})
    try:
        address = child.stdout.readline().strip()
        run = cli_started("-d", CNN, "compare", "-o", tmp_path / "out", "--cluster", address)
        if workers:
            calm.wait_until_started()
        else:
            time.sleep(3)  # connected, tasks queued, waiting for a worker
        child.kill()  # the scheduler's process; its workers' nannies follow
        _, err = run.communicate(timeout=120)
    finally:
        child.kill()
        child.wait()
    assert run.returncode == 2 and err.count("\n") == 1, err
    assert f"error: lost the Dask scheduler at {address} during the comparison" in err


TLS_SCHEDULER = """
import sys
from distributed import LocalCluster
from distributed.security import Security
if __name__ == "__main__":
    ca, cert, key = sys.argv[1:4]
    security = Security(tls_ca_file=ca, tls_scheduler_cert=cert, tls_scheduler_key=key, tls_worker_cert=cert,
                        tls_worker_key=key, tls_client_cert=cert, tls_client_key=key, require_encryption=True)
    cluster = LocalCluster(n_workers=1, threads_per_worker=2, processes=True, dashboard_address=None,
                           protocol="tls", security=security)  # a worker of two threads, as dask worker's default
    print(cluster.scheduler_address, flush=True)
    sys.stdin.read()
    cluster.close()
"""


def certificates(folder, name):
    """A CA of its own and a certificate it signs, by the openssl command (``name.pem``, ``name.key``)."""
    def openssl(*args):
        subprocess.run(["openssl", *args], cwd=folder, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)

    openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", f"{name}-ca.key", "-out", f"{name}-ca.pem",
            "-days", "2", "-subj", f"/CN={name} CA")
    openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", f"{name}.key", "-out", f"{name}.csr", "-subj",
            "/CN=localhost")
    openssl("x509", "-req", "-in", f"{name}.csr", "-CA", f"{name}-ca.pem", "-CAkey", f"{name}-ca.key",
            "-CAcreateserial", "-out", f"{name}.pem", "-days", "2")
    return {"DASK_DISTRIBUTED__COMM__TLS__CA_FILE": str(folder / f"{name}-ca.pem"),
            "DASK_DISTRIBUTED__COMM__TLS__CLIENT__CERT": str(folder / f"{name}.pem"),
            "DASK_DISTRIBUTED__COMM__TLS__CLIENT__KEY": str(folder / f"{name}.key")}


def test_a_tls_scheduler_with_the_user_s_certificates(tmp_path):
    """The cluster's own CA signs its nodes' certificate; the client gives its certificates in Dask's configuration
    (here its environment variables). Without them, or with another CA's, it is one line."""
    if shutil.which("openssl") is None:
        pytest.skip("no openssl command to make certificates with")
    ours, theirs = certificates(tmp_path, "cluster"), certificates(tmp_path, "stranger")
    workspace = tmp_path / "ws"
    shutil.copytree(CNN, workspace)

    def run(out, environment):
        env = {key: value for key, value in os.environ.items() if not key.startswith("DASK_")}
        return subprocess.run([sys.executable, "-m", "precision_tool", "-d", str(workspace), "compare", "-o",
                               str(tmp_path / out), "--cluster", address], cwd=REPO, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, universal_newlines=True, timeout=300,
                              env={**env, "PYTHONPATH": str(REPO), **environment})

    local = cli("-d", workspace, "compare", "-o", tmp_path / "local")
    for address in start_cluster(tmp_path, TLS_SCHEDULER, *(tmp_path / name for name in (
            "cluster-ca.pem", "cluster.pem", "cluster.key"))):
        assert address.startswith("tls://")
        secure, bare, stranger = run("cluster", ours), run("bare", {}), run("stranger", theirs)
        (tmp_path / "junk.pem").write_text("not a certificate\n")
        folder = run("folder", {**ours, "DASK_DISTRIBUTED__COMM__TLS__CA_FILE": str(tmp_path)})
        junk = run("junk", {**ours, "DASK_DISTRIBUTED__COMM__TLS__CA_FILE": str(tmp_path / "junk.pem")})
    assert local.returncode == secure.returncode == 1, secure.stderr
    assert filecmp.cmp(results(tmp_path / "local")[0], results(tmp_path / "cluster")[0], shallow=False)
    assert bare.returncode == 2 and bare.stderr.count("\n") == 1
    assert "Dask's configuration names no distributed.comm.tls.ca-file" in bare.stderr
    assert stranger.returncode == 2 and stranger.stderr.count("\n") == 1
    assert f"cannot reach the Dask scheduler at {address} (TLS certificate does not match" in stranger.stderr
    assert folder.returncode == 2 and f"distributed.comm.tls.ca-file {tmp_path}: is a folder" in folder.stderr
    assert junk.returncode == 2 and junk.stderr.count("\n") == 1
    assert f"the TLS files of Dask's configuration ({tmp_path / 'junk.pem'}, " in junk.stderr


def test_without_cluster_no_command_imports_dask(tmp_path):
    """The commands a user runs on a workspace, one after another in one process, as the shell does."""
    workspace = tmp_path / "ws"
    shutil.copytree(CNN, workspace)
    commands = [["compare"], ["ac", "-c", "--no-replay"],
                ["vcs"], ["ni", PLANTED], ["ls"], ["report"], ["vc", "-lt", str(workspace / "npu" / "debug_0" / "dump"),
                                                               "-rt", str(workspace / "tf" / "dump")]]
    code = ("import sys, contextlib, io, json\n"
            "from precision_tool.cli import main\n"
            "codes = []\n"
            f"for command in {commands!r}:\n"
            "    with contextlib.redirect_stdout(io.StringIO()):\n"
            f"        codes.append(main(['-d', {str(workspace)!r}, *command]))\n"
            "taken = sorted(m for m in sys.modules if m.split('.')[0] in ('dask', 'distributed'))\n"
            "print(json.dumps([codes, taken]))\n")
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, stdout=subprocess.PIPE, universal_newlines=True,
                          env={**os.environ, "PYTHONPATH": str(REPO)})
    codes, dask_modules = json.loads(done.stdout.strip().splitlines()[-1])
    assert codes == [1, 1, 1, 0, 0, 1, 1] and dask_modules == []  # each ran (the sample's fault fails), none took Dask


class _Future:
    def __init__(self, outcome):
        self.outcome = outcome

    def release(self):
        self.released = True

    def result(self, timeout=None):
        if isinstance(self.outcome, BaseException):
            raise self.outcome
        return self.outcome


class _Cluster:
    """Stands in for a Dask client whose workers compare every span but the second, whose worker dies each time
    (Dask raises KilledWorker once its retries are spent): deterministic, where killing a real process mid-run
    depends on timing."""

    def __init__(self):
        self.cancelled, self.closed, self.submitted = [], False, 0

    id = "Client-stand-in"

    def nthreads(self):
        return {"tcp://10.0.0.6:40001": 2, "tcp://10.0.0.7:40001": 2}

    def get_events(self, topic):
        return ((0.0, {"action": "add-client", "client": self.id}),)

    def run(self, function, *args, **_):  # the workers' versions check: this machine's
        return {worker: function(*args) for worker in self.nthreads()}

    def submit(self, function, tasks, cosine, *rest, **_):
        from distributed import KilledWorker

        self.submitted += 1
        if self.submitted == 2:
            return _Future(KilledWorker("span-2", types.SimpleNamespace(address="tcp://10.0.0.7:40001"), 3))
        return _Future(function(tasks, cosine, *rest))  # compare_span itself: it changes nothing process-wide

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
    seen = []
    remote = compare_alignment(alignment, graph=graph, workers=2, cluster="tcp://stand-in:8786",
                               progress=lambda done, total: seen.append((done, total)))
    total = seen[0][1]  # progress as locally: from none to all, a step per span as it comes back, in order
    assert seen[0] == (0, total) and seen[-1] == (total, total) and len(seen) == fake.submitted + 1
    assert [done for done, _ in seen] == sorted(done for done, _ in seen)
    lost = [row for row in remote.results if row.reason.startswith("lost worker tcp://10.0.0.7:40001")]
    assert fake.submitted > 2 and fake.closed and lost  # the second span's pairs
    assert all(row.status is Status.ERROR for row in lost)
    assert "workers died 4 times running pairs" in lost[0].reason
    assert lost[0].reason.endswith("(the scheduler's allowed-failures: 3); not compared")
    kept = {row.tensor_id: row for row in local.results}
    for row in remote.results:  # every other row as the local run made it: no gap, nothing else changed
        if row not in lost:  # (an input whose producer was lost is compared on its own: no reused_from)
            assert dataclasses.replace(row, reused_from=kept[row.tensor_id].reused_from) == kept[row.tensor_id]
    assert len(remote.results) == len(local.results)


def test_a_file_this_machine_cannot_read_either_is_compared_here_as_a_local_run_would(tmp_path):
    """A worker's :class:`UnreadableOnWorker` for a file gone on this machine too (deleted after the alignment):
    not the cluster's fault, so the span is compared here and its rows say what a local run says."""
    pytest.importorskip("distributed", reason="the cluster extra (precision_tool[cluster]) is not installed")
    from precision_tool.alignment import align, load_graph
    from precision_tool.comparison import cluster
    from precision_tool.comparison.engine import compare_alignment
    from precision_tool.status import Status

    workspace = tmp_path / "ws"
    shutil.copytree(CNN, workspace)
    graph = load_graph(workspace / "npu" / "debug_0" / "graph")
    alignment = align(workspace / "npu" / "debug_0" / "dump", workspace / "tf" / "dump", graph)
    (gone,) = (workspace / "tf" / "dump").glob("small_cnn_1_res_add_1_Add.*.npy")
    gone.unlink()
    local = compare_alignment(alignment, graph=graph, workers=1)

    class Unreadable(_Cluster):
        def submit(self, function, tasks, cosine, *rest, **_):
            paths = {path for task in tasks for path in cluster.files_read(task)}
            if str(gone) in paths:
                return _Future(cluster.UnreadableOnWorker("tcp://10.0.0.8:40001", str(gone), "no such file"))
            return super().submit(function, tasks, cosine, *rest)

    fake = Unreadable()
    fake.submitted = 5  # no lost worker here
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(cluster, "_connect", lambda address: fake)
        remote = compare_alignment(alignment, graph=graph, workers=1, cluster="tcp://stand-in:8786")
    assert remote.results == local.results
    assert any(row.status is Status.ERROR and str(gone) in row.reason for row in remote.results)


@pytest.mark.parametrize("address", ["tcp://127.0.0.1", "tcp://h:notaport", "tcp://127.0.0.1:8786/x",
                                     "inproc://10.0.0.5/1/2", "ucx://10.0.0.5:8786", "tcp://h:0", "tcp://h:70000",
                                     "tcp://:8786", "localhost:8786"])
def test_an_address_dask_cannot_use_from_here_is_one_usage_error(address):
    from precision_tool.comparison.cluster import cluster_address
    from precision_tool.errors import UsageError

    with pytest.raises(UsageError, match="is not a Dask scheduler address"):
        cluster_address(address)
    assert cluster_address(None, {"PRECISION_TOOL_CLUSTER": "tls://[fe80::1]:8786"}) == "tls://[fe80::1]:8786"
    assert cluster_address("ws://node-0.cluster.local:8786") == "ws://node-0.cluster.local:8786"


@pytest.mark.parametrize("value", ["0", "-3", "soon", "inf", "nan"])
def test_a_wait_that_is_no_positive_number_of_seconds_is_one_usage_error(value):
    from precision_tool.comparison.cluster import worker_wait
    from precision_tool.errors import UsageError

    with pytest.raises(UsageError, match="PRECISION_TOOL_CLUSTER_WAIT=.* is not a number of seconds"):
        worker_wait({"PRECISION_TOOL_CLUSTER_WAIT": value})
    assert worker_wait({}) == 30 and worker_wait({"PRECISION_TOOL_CLUSTER_WAIT": "120"}) == 120


class _Clock:
    """Time as the wait loop sees it: it moves only when a result is waited for."""

    def __init__(self):
        self.now = 0.0

    def monotonic(self):
        return self.now


class _SlowFuture(_Future):
    """A result that times out ``late`` times (each wait moving the clock by its timeout) before it comes."""

    def __init__(self, outcome, clock, late):
        super().__init__(outcome)
        self.clock, self.late = clock, late

    def result(self, timeout=None):
        if self.late:
            self.late -= 1
            self.clock.now += timeout
            raise TimeoutError()
        return super().result()


@pytest.mark.parametrize("workers_by_second, lost", [
    ([1] * 40, False),  # busy for 40 s but there: never lost
    ([1, 1, 0, 0, 0, 0, 1] + [1] * 40, False),  # gone 4 s, back within the 5 s wait
    ([1, 1, 0, 0, 0, 0, 0, 0, 0, 0] + [0] * 40, True),  # gone for good: lost after 5 s without one
])
def test_only_a_cluster_empty_for_the_whole_wait_loses_the_pairs_left(monkeypatch, workers_by_second, lost):
    pytest.importorskip("distributed", reason="the cluster extra (precision_tool[cluster]) is not installed")
    from precision_tool.alignment import align, load_graph
    from precision_tool.comparison import cluster
    from precision_tool.comparison.engine import compare_alignment
    from precision_tool.status import Status

    clock = _Clock()

    class Slow(_Cluster):
        def nthreads(self):
            second = min(int(clock.now), len(workers_by_second) - 1)
            return {"tcp://10.0.0.6:40001": 1} if workers_by_second[second] else {}

        def submit(self, function, tasks, cosine, *rest, **_):
            self.submitted += 1
            late = 30 if self.submitted == 1 else 0  # the first span takes 30 s
            return _SlowFuture(function(tasks, cosine, *rest), clock, late)

    monkeypatch.setenv("PRECISION_TOOL_CLUSTER_WAIT", "5")
    monkeypatch.setattr(cluster, "time", types.SimpleNamespace(monotonic=clock.monotonic, sleep=lambda _: None))
    monkeypatch.setattr(cluster, "_connect", lambda address: Slow())
    graph = load_graph(CNN / "npu" / "debug_0" / "graph")
    alignment = align(CNN / "npu" / "debug_0" / "dump", CNN / "tf" / "dump", graph)
    rows = compare_alignment(alignment, graph=graph, workers=2, cluster="tcp://stand-in:8786").results
    gone = [row for row in rows if row.reason.startswith("lost every worker of the cluster (tcp://10.0.0.6:40001)")]
    if lost:
        assert len(gone) == len(rows) and all(row.status is Status.ERROR for row in gone)
        assert "none back within 5 s, with pairs 1-" in gone[0].reason
        assert 6 <= clock.now <= 8  # lost 2 s in, given up 5 s later (checked once a second)
    else:
        assert not gone and clock.now == 30


def test_a_worker_of_another_version_that_joins_later_is_refused_by_its_first_task(monkeypatch):
    pytest.importorskip("distributed", reason="the cluster extra (precision_tool[cluster]) is not installed")
    from precision_tool.alignment import align, load_graph
    from precision_tool.comparison import cluster
    from precision_tool.comparison.engine import compare_alignment
    from precision_tool.errors import UsageError

    graph = load_graph(CNN / "npu" / "debug_0" / "graph")
    alignment = align(CNN / "npu" / "debug_0" / "dump", CNN / "tf" / "dump", graph)
    with pytest.raises(cluster.UnfitWorker) as refused:  # what the task does there
        cluster.compare_span([], 0.99, ("0.0.9", "1.16.0"))
    assert refused.value.args[1].startswith("precision_tool ")

    class Joined(_Cluster):
        def submit(self, function, tasks, cosine, *rest, **_):
            return _Future(cluster.UnfitWorker("tcp://10.0.0.9:40001", "precision_tool 0.0.9 with numpy 1.16.0"))

    fake = Joined()
    monkeypatch.setattr(cluster, "_connect", lambda address: fake)
    with pytest.raises(UsageError, match=r"^Dask worker tcp://10.0.0.9:40001 runs precision_tool 0.0.9 with numpy "
                                         r"1.16.0, this machine precision_tool "):
        compare_alignment(alignment, graph=graph, workers=2, cluster="tcp://stand-in:8786")
    assert fake.closed


def test_a_worker_that_joined_and_died_between_two_looks_is_named_from_the_scheduler_s_log(monkeypatch):
    """The run never saw a worker (none at the start, none at any look), but the scheduler's event log says one
    joined after this client connected: its pairs are lost to it, not to a cluster without workers (the race the
    real-process test of an emptied cluster met once in make test)."""
    pytest.importorskip("distributed", reason="the cluster extra (precision_tool[cluster]) is not installed")
    from precision_tool.alignment import align, load_graph
    from precision_tool.comparison import cluster
    from precision_tool.comparison.engine import compare_alignment

    clock = _Clock()

    class Brief(_Cluster):
        def nthreads(self):
            return {}

        def get_events(self, topic):
            return ((1.0, {"action": "add-worker", "worker": "tcp://10.0.0.4:40001"}),  # before us: not ours
                    (2.0, {"action": "add-client", "client": self.id}),
                    (3.0, {"action": "add-worker", "worker": "tcp://10.0.0.5:40001"}),
                    (3.5, {"action": "remove-worker", "worker": "tcp://10.0.0.5:40001"}))

        def submit(self, function, tasks, cosine, *rest, **_):
            return _SlowFuture([], clock, 100)

    monkeypatch.setenv("PRECISION_TOOL_CLUSTER_WAIT", "5")
    monkeypatch.setattr(cluster, "time", types.SimpleNamespace(monotonic=clock.monotonic, sleep=lambda _: None))
    monkeypatch.setattr(cluster, "_connect", lambda address: Brief())
    graph = load_graph(CNN / "npu" / "debug_0" / "graph")
    alignment = align(CNN / "npu" / "debug_0" / "dump", CNN / "tf" / "dump", graph)
    rows = compare_alignment(alignment, graph=graph, workers=2, cluster="tcp://stand-in:8786").results
    assert rows and all(row.reason.startswith("lost every worker of the cluster (tcp://10.0.0.5:40001), none back "
                                              "within 5 s") for row in rows)
