"""Mapped reads (precision_tool.fileio, precision_tool._mapguard): a file cut short while mapped reads as zeros
past its new end and is reported, instead of killing the process with SIGBUS -- and only our own maps are
treated so. Each case runs in a child Python (the guard is a process-wide signal handler), and each is checked
against what the kernel does without the guard: the same script without it dies of SIGBUS."""
import os
import signal
import subprocess
import sys
import textwrap

import pytest

from precision_tool import fileio

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the SIGBUS guard is Linux only")
needs_guard = pytest.mark.skipif(fileio._mapguard is None, reason="the guard is not built (no C compiler at install)")
HERE = os.path.dirname(os.path.abspath(__file__))
PAGES = 16


def _run(code: str, *args: str, **extra_env: str) -> subprocess.CompletedProcess:
    path = os.pathsep.join([os.path.dirname(HERE), os.path.join(HERE, "comparison")])
    env = dict(os.environ, PYTHONPATH=path)
    env.pop("PYTHONFAULTHANDLER", None)
    env.update(extra_env)
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code), *args], env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, universal_newlines=True, timeout=120)


CUT_SHORT = """
    import os, sys, mmap
    import numpy as np
    from precision_tool import fileio
    path, how = sys.argv[1], sys.argv[2]
    with open(path, "wb") as handle:
        handle.write(b"\\x01" * (mmap.PAGESIZE * %d))
    if how != "unguarded":
        assert fileio.allow_mapped_reads()
    with fileio.open_input(path) as handle:
        if how == "foreign":  # a map that is not ours, in a guarded process
            data = np.frombuffer(mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_COPY), np.uint8)
        else:
            fileio._mapping = True if how == "unguarded" else fileio._mapping
            data = np.frombuffer(mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_COPY), np.uint8) \\
                if how == "unguarded" else fileio.map_bytes(handle, path, 0, os.fstat(handle.fileno()).st_size)
    os.truncate(path, 100)
    total = int(data.sum())
    if how == "freed":  # the map is gone before anyone asks: its fault must still be reported
        del data
    print(total, fileio.shrunk_while_mapped(), fileio.shrunk_while_mapped())
""" % PAGES


@needs_guard
@pytest.mark.parametrize("how", ["guarded", "freed"])
@pytest.mark.parametrize("faulthandler", [False, True])
def test_a_mapped_file_cut_short_reads_zeros_past_its_end_and_is_named(tmp_path, how, faulthandler):
    """Also with Python's faulthandler on (pytest turns it on, so do some users): the guard comes first."""
    path = str(tmp_path / "dump.bin")
    done = _run(CUT_SHORT, path, how, **({"PYTHONFAULTHANDLER": "1"} if faulthandler else {}))
    assert done.returncode == 0, done.stderr
    # 100 bytes of ones are left; the rest of the first page is zeros (the kernel's), the other pages ours
    assert done.stdout.split(None, 1) == ["100", f"[{path!r}] []\n"]


@needs_guard
@pytest.mark.parametrize("how", ["unguarded", "foreign"])
@pytest.mark.parametrize("faulthandler", [False, True])
def test_without_the_guard_or_outside_our_maps_the_kernel_s_sigbus_still_kills(tmp_path, how, faulthandler):
    """With faulthandler on, its report comes first (the fault is handed on to it), then the same death."""
    done = _run(CUT_SHORT, str(tmp_path / "dump.bin"), how, **({"PYTHONFAULTHANDLER": "1"} if faulthandler else {}))
    assert done.returncode == -signal.SIGBUS, (done.returncode, done.stdout, done.stderr)
    assert ("Fatal Python error: Bus error" in done.stderr) == faulthandler


@needs_guard
def test_a_sigbus_sent_by_a_process_is_not_swallowed():
    done = _run("""
        import os, signal
        from precision_tool import fileio
        assert fileio.allow_mapped_reads()
        os.kill(os.getpid(), signal.SIGBUS)
        print("survived")
    """)
    assert done.returncode == -signal.SIGBUS and "survived" not in done.stdout


@needs_guard
@pytest.mark.parametrize("cut", [True, False])
def test_a_worker_reports_a_dump_cut_short_while_compared_and_compares_the_rest(tmp_path, cut):
    """The dump of op1 is cut short after the worker mapped it and before its passes read it: op1's output row is
    an ERROR naming the file (not metrics computed from zeros), and every other row is compared as usual."""
    done = _run("""
        import os, sys
        import numpy as np
        from cmp_builders import Step, write_chain
        from precision_tool.alignment import align, load_graph
        from precision_tool.comparison import engine, worker
        root = sys.argv[1]
        rng = np.random.default_rng(0)
        x = rng.standard_normal((64, 1024)).astype(np.float32)
        steps, previous = [], x
        for name in ("op0", "op1", "op2"):
            previous = (0.5 * previous + 0.25).astype(np.float32)
            steps.append(Step(name, previous.astype(np.float16), previous))
        case = write_chain(root, x, x.astype(np.float16), steps, json_graph=True)
        graph = load_graph(case.graph)
        alignment = align(case.npu, case.ref, graph)
        tasks = engine._tasks(alignment, engine._positions(alignment), engine._ground_truth_names(graph), False)
        worker.prepare_worker_process()
        judge = worker.judge_pair
        def judge_after_cutting(npu, reference, **options):
            if os.environ.get("CUT") and npu.size == 64 * 1024 and judge_after_cutting.cut is None:
                dump = [t.pair.npu.path for t in tasks if t.pair.npu.tensor_id == "op1:output:0"][0]
                os.truncate(dump, 200)
                judge_after_cutting.cut = dump
            return judge(npu, reference, **options)
        judge_after_cutting.cut = None
        worker.judge_pair = judge_after_cutting
        comparer = worker.PairComparer(0.99)
        wanted = [t for t in tasks if t.pair.npu.tensor_id in ("op1:output:0", "op2:output:0")]
        for row, _ in comparer.run_all(wanted):
            print(row.tensor_id, row.status.value, row.reason)
    """, str(tmp_path), CUT="1" if cut else "")
    assert done.returncode == 0, done.stderr
    op1, op2 = done.stdout.splitlines()
    dump = [name for name in os.listdir(tmp_path / "npu") if "op1" in name][0]
    if cut:
        assert op1.startswith("op1:output:0 ERROR ") and op1.endswith(
            f"{dump}: file shrank while being compared (cut short by another process?); not compared"), op1
    else:  # the same pair, left alone: compared
        assert op1.startswith("op1:output:0 PASS"), op1
    assert op2.startswith("op2:output:0 PASS"), op2


@needs_guard
@pytest.mark.parametrize("cut", [True, False])
def test_a_worker_reports_a_dump_cut_short_while_streamed_and_compares_the_rest(tmp_path, cut):
    """A pair compared in pieces (above STREAM_ABOVE) reads mapped windows: the dump is cut short while its first
    window is being summed. The row is an ERROR naming the file -- whether a window met the cut mapped (zeros, the
    guard's report) or a later one was read -- and the next pair is compared as usual."""
    done = _run("""
        import os, sys
        import numpy as np
        from precision_tool.alignment import AlignedPair, NpuTensorRef, NpyTensorRef
        from precision_tool.comparison import worker
        from precision_tool.formats.dump_writer import TensorSpec, write_dump
        root = sys.argv[1]
        reference = np.random.default_rng(5).standard_normal((30, 1001)).astype(np.float32)
        tasks = []
        for number, name in enumerate(("op1", "op2")):
            dump = os.path.join(root, f"Add.{name}.1.1.1")
            write_dump(dump, name, outputs=[TensorSpec(reference.astype(np.float16), "ND")])
            ref_path = os.path.join(root, f"{name}.0.1.npy")
            np.save(ref_path, reference)
            pair = AlignedPair(npu=NpuTensorRef(path=dump, op_name=name, op_type="Add", kind="output", index=0,
                                                dtype="float16", shape=reference.shape, origin_format="ND",
                                                origin_shape=reference.shape),
                               ref=NpyTensorRef(path=ref_path, op_name=name, output_index=0, dtype="<f4",
                                                shape=reference.shape), rule="test")
            tasks.append(worker.PairTask(pair, number, name))
        worker.prepare_worker_process()
        worker.STREAM_ABOVE, worker.CHUNK = 1000, 4096
        pieces, passes = worker.paired_pieces, []
        def cut_in_the_first_pass(xs, ys):  # op1's first pass: its second window is mapped, then the file is cut
            passes.append(len(passes))
            for number, pair in enumerate(pieces(xs, ys)):
                if number == 1 and passes == [0] and os.environ.get("CUT"):
                    os.truncate(tasks[0].pair.npu.path, 300)
                yield pair
        worker.paired_pieces = cut_in_the_first_pass
        for row, _ in worker.PairComparer(0.99).run_all(tasks):
            print(row.tensor_id, row.status.value, row.reason)
        print(len(passes))
    """, str(tmp_path), CUT="1" if cut else "")
    assert done.returncode == 0, done.stderr
    op1, op2, passes = done.stdout.splitlines()
    assert passes == ("3" if cut else "4")  # streamed: two passes a pair, but the pair cut short stops in its first
    if cut:
        assert op1.startswith("op1:output:0 ERROR ") and "Add.op1.1.1.1" in op1 and "file shrank while being" in op1
    else:
        assert op1.startswith("op1:output:0 PASS"), op1
    assert op2.startswith("op2:output:0 PASS"), op2


@pytest.mark.skipif(not os.environ.get("PRECISION_TOOL_EXPECT_C"),
                    reason="PRECISION_TOOL_EXPECT_C is not set (make test sets it for the main environment)")
def test_the_guard_is_built_from_the_current_source():
    """Optional at install like the C passes (without it the workers read): where make test built it, it must be
    there and newer than its source, or a C file that stopped compiling would go unnoticed."""
    assert fileio._mapguard is not None, "the guard did not build: pip install -e . shows the compiler's error"
    source = os.path.join(os.path.dirname(os.path.dirname(fileio.__file__)), "precision_tool", "_mapguard.c")
    assert os.path.getmtime(fileio._mapguard.__file__) >= os.path.getmtime(source), "the build is older than the source"
