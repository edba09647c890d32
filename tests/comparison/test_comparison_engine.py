"""The comparator engine: verdicts per tensor, shared input results, coverage rows, workers, first divergence."""
import dataclasses
import os
import sys

import numpy as np
import pytest

from cmp_builders import SHAPE, TS, chain_case
from precision_tool.alignment import align, load_graph
from precision_tool.comparison import compare_alignment
from precision_tool.formats.dump_file import read_dump_header, read_tensor
from precision_tool.formats.dump_writer import TensorSpec, write_dump
from precision_tool.status import Status

ERROR, NO_DUMP, NOT_COMPARED = Status.ERROR, Status.NO_DUMP, Status.NOT_COMPARED


def run(case, **options):
    graph = load_graph(case.graph)
    return compare_alignment(align(case.npu, case.ref, graph), graph=graph, **options)


def by_id(result):
    return {row.tensor_id or row.op_name: row for row in result.results}


def test_a_broken_op_is_the_first_divergence_and_its_consumers_inherit(tmp_path):
    result = run(chain_case(tmp_path, break_at="op1"), workers=1)
    rows = by_id(result)
    assert [rows[t].status for t in ("op0:output:0", "op1:input:0", "op1:output:0", "op2:input:0")] == \
        ["PASS", "PASS", "FAIL", "FAIL"]
    assert rows["op1:output:0"].cosine < 0.99 and "cosine" in rows["op1:output:0"].reason
    assert result.divergence.first.op_name == "op1"
    assert [op.op_name for op in result.divergence.inherited] == ["op2", "op3"]
    counts = result.counts()
    # op0 .. op3, input 0 and output 0 each; failing: op1's output and every tensor after it (op2's and op3's input
    # and output)
    assert counts["compared"] == 4 * 2 and counts["failed"] == counts["compared"] - counts["passed"] == 1 + 2 * 2
    # execution order, inputs before outputs
    assert [row.tensor_id for row in result.results][:4] == ["op0:input:0", "op0:output:0", "op1:input:0",
                                                             "op1:output:0"]
    assert [row.index for row in result.results][:4] == [1, 1, 2, 2]


def test_identical_inputs_share_their_producers_result_and_values_equal_a_full_compare(tmp_path):
    case = chain_case(tmp_path, break_at="op2")
    shared, full = run(case, workers=1), run(case, workers=1, share_inputs=False)
    shared_rows, full_rows = by_id(shared), by_id(full)
    reused = {row.tensor_id: row.reused_from for row in shared.results if row.reused_from}
    assert reused == {"op1:input:0": "op0:output:0", "op2:input:0": "op1:output:0", "op3:input:0": "op2:output:0"}
    assert not any(row.reused_from for row in full.results)
    for tensor_id, row in shared_rows.items():
        assert row.status == full_rows[tensor_id].status
        assert row.metrics[:5] == pytest.approx(full_rows[tensor_id].metrics[:5], rel=1e-12), tensor_id
        assert (row.address, row.reference, row.rule) == (full_rows[tensor_id].address, full_rows[tensor_id].reference,
                                                          full_rows[tensor_id].rule)
    assert shared.counts()["reused_input_results"] == 3


def test_an_input_that_differs_from_its_producers_output_is_compared_on_its_own(tmp_path):
    case = chain_case(tmp_path)
    # rewrite op1's dump: its input is op0's output plus a small change (another dump step, say)
    op1 = [name for name in os.listdir(case.npu) if "op1" in name][0]
    dump = read_dump_header(os.path.join(case.npu, op1))
    changed = read_tensor(dump, dump.inputs[0]).copy()
    changed[0, 0] += np.float16(0.5)
    write_dump(os.path.join(case.npu, op1), "op1", dump_time=TS + 2,
               inputs=[TensorSpec(changed, original_shape=SHAPE)],
               outputs=[TensorSpec(read_tensor(dump, dump.outputs[0]), original_shape=SHAPE)])
    rows = by_id(run(case, workers=1))
    assert rows["op1:input:0"].reused_from == ""
    assert rows["op1:input:0"].metric("MaxAbsoluteError") > rows["op0:output:0"].metric("MaxAbsoluteError")
    assert rows["op2:input:0"].reused_from == "op1:output:0"


def test_one_and_two_workers_give_identical_rows(tmp_path):
    case = chain_case(tmp_path, names=[f"op{i}" for i in range(12)], break_at="op5", nan_at="op9")
    one, two = run(case, workers=1), run(case, workers=2)
    assert two.timing.workers == 2 and one.timing.workers == 1
    assert one.results == two.results
    assert one.divergence == two.divergence


def test_nan_fails_whatever_the_cosine_and_everything_is_explained(tmp_path):
    rows = by_id(run(chain_case(tmp_path, nan_at="op2"), workers=1))
    row = rows["op2:output:0"]
    assert row.status == "NAN_INF" and row.failed
    assert row.reason.startswith("NPU has 1 NaN, reference none")
    assert row.cosine > 0.99  # computed over the finite pairs: a high cosine does not hide the NaN


def test_missing_references_and_dumps_are_coverage_rows(tmp_path):
    result = run(chain_case(tmp_path, names=["op0", "op1", "op2", "op3", "op4"], no_ref=["op1"], no_dump=["op3"]),
                 workers=1)
    rows = by_id(result)
    assert rows["op1:output:0"].status == NOT_COMPARED and "no reference file for op1:0" in rows["op1:output:0"].reason
    assert rows["op2:input:0"].status == NOT_COMPARED  # it wants op1's reference too
    assert rows["op3"].status == NO_DUMP and rows["op3"].tensor_id == "" and rows["op3"].op_type == "Add"
    assert not rows["op1:output:0"].failed and not rows["op3"].failed
    assert result.failing == ()
    assert result.counts()["not_compared"] == 2 and result.counts()["ops_without_dump"] == 1
    order = [row.tensor_id or row.op_name for row in result.results]
    assert order.index("op3") == order.index("op2:output:0") + 1  # the NO_DUMP row sits at the op's place


def test_a_dump_that_cannot_be_read_after_aligning_is_an_error_row(tmp_path):
    case = chain_case(tmp_path)
    graph = load_graph(case.graph)
    alignment = align(case.npu, case.ref, graph)
    op2 = [name for name in os.listdir(case.npu) if "op2" in name][0]
    with open(os.path.join(case.npu, op2), "r+b") as handle:
        handle.truncate(64)
    result = compare_alignment(alignment, graph=graph, workers=1)
    rows = by_id(result)
    assert rows["op2:output:0"].status == ERROR and op2 in rows["op2:output:0"].reason
    assert rows["op2:output:0"].failed and rows["op2:output:0"] in result.failing
    assert ("op2", "output", 0) not in result.verdicts()
    assert rows["op3:input:0"].status == "PASS"  # its own file is fine


def test_progress_is_reported_up_to_the_total(tmp_path):
    calls = []
    run(chain_case(tmp_path), workers=2, progress=lambda done, total: calls.append((done, total)))
    total = 4 * 2  # the default chain: op0 .. op3, input 0 and output 0 each
    assert calls[0] == (0, total) and calls[-1] == (total, total)
    assert [done for done, _ in calls] == sorted(done for done, _ in calls)


def test_ground_truth_names_come_from_the_graph(tmp_path):
    result = run(chain_case(tmp_path), workers=1)
    rows = by_id(result)
    assert rows["op1:input:0"].ground_truth == "op1"  # the op's own TF ops, as msaccucmp writes it
    assert rows["op1:input:0"].reference == "op0:output:0"  # what it was really compared with
    assert rows["op1:input:0"].rule == "origin_name"
    assert rows["op1:output:0"].npu_dtype == "float16" and rows["op1:output:0"].ref_dtype == "float32"
    assert rows["op1:output:0"].shape == SHAPE


def test_rows_are_small_frozen_records(tmp_path):
    row = run(chain_case(tmp_path), workers=1).results[0]
    with pytest.raises(dataclasses.FrozenInstanceError):
        row.status = "PASS"
    assert not any(isinstance(value, np.ndarray) for value in dataclasses.astuple(row))


def test_workers_started_is_called_once_after_the_workers_exist(tmp_path):
    """A caller's thread (replay's TensorFlow import) may start only once no process will fork any more."""
    from tests.comparison.test_processes import _children

    case = chain_case(tmp_path, names=[f"op{i}" for i in range(12)])
    seen = []
    run(case, workers=2, workers_started=lambda: seen.append(len(_children())))
    assert seen == [2]
    from precision_tool.comparison.engine import _run

    seen.clear()  # too little to split: compared in this process, called before comparing, nothing forked
    assert _run([], 0.99, 2, None, lambda: seen.append(len(_children()))) == ([], 1)
    assert seen == [0]


def _alive(pid):
    """True while ``pid`` runs (a zombie waiting for its reaper counts as gone)."""
    try:
        with open(f"/proc/{pid}/status") as handle:
            return not any(line.startswith("State:") and "Z" in line.split()[1] for line in handle)
    except OSError:
        return False


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="prctl(PR_SET_PDEATHSIG) is Linux's")
def test_a_busy_worker_dies_when_the_comparing_process_is_killed(tmp_path):
    """A pool worker ends at its queue's end-of-file only after its current chunk (a large tensor: seconds or
    more). die_with_parent ends it at once: here a 'worker' busy for a minute, whose parent is SIGKILLed."""
    import subprocess
    import time

    pid_file = tmp_path / "worker.pid"
    script = (
        "import os, signal, sys, time\n"
        "from precision_tool.process_env import die_with_parent\n"
        "parent = os.getpid()\n"
        "if os.fork() == 0:\n"
        "    assert die_with_parent(parent)\n"
        f"    open({str(pid_file)!r}, 'w').write(str(os.getpid()))\n"
        "    time.sleep(60)\n"
        "    os._exit(0)\n"
        f"while not os.path.exists({str(pid_file)!r}):\n"
        "    time.sleep(0.01)\n"
        "os.kill(parent, signal.SIGKILL)\n")
    repo = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
    done = subprocess.run([sys.executable, "-c", script], env=dict(os.environ, PYTHONPATH=repo), timeout=60)
    assert done.returncode == -9
    worker = int(pid_file.read_text())
    deadline = time.monotonic() + 10
    while _alive(worker) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(worker)
