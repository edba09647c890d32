"""The two-pass sums behind every metric (issue 17): the C passes, the numpy passes and the chunking agree with each
other and with plain float64 formulas written here (numpy whole-array operations), on every dtype the comparator
reads; float16 is decoded exactly (all 65,536 values against numpy's own conversion); the log the KL uses is within
1 ulp of numpy's; and the worker's piece-by-piece path gives the row the whole-tensor path gives."""
import math
import os

import numpy as np
import pytest

from precision_tool.metrics import ALL, compare_tensors
from precision_tool.metrics import pair_stats as ps

pytestmark = pytest.mark.compat
needs_c = pytest.mark.skipif(ps._pairstats is None, reason="the C extension is not built (no compiler at install)")
DTYPE_PAIRS = [(np.float16, np.float32), (np.float32, np.float32), (np.float64, np.float64), (np.float16, np.float16),
               (np.int32, np.float32), (np.float32, np.float64)]


ISAS = ps._pairstats.isas() if ps._pairstats is not None else ()


@pytest.fixture(params=ISAS)
def isa(request):
    """Each instruction-set version of the C passes this CPU runs (AVX-512, AVX2, baseline), in turn."""
    module = ps._pairstats  # kept: a test may set ps._pairstats to None
    before = module.use_isa(request.param)
    yield request.param
    module.use_isa(before)


def _pair(rng, n, x_dtype, y_dtype, special=False):
    y = rng.standard_normal(n) * 3
    x = y + rng.standard_normal(n) * 0.05
    y[rng.choice(n, n // 50, replace=False)] = 0.0
    if special:  # NaN/inf where the dtype holds them
        where = rng.choice(n, 12, replace=False)
        x_float = np.dtype(x_dtype).kind == "f"
        y[where[:3]] = np.nan
        y[where[5:7]] = -np.inf
        if x_float:
            x[where[:3]], x[where[3:5]] = np.nan, np.inf
            x[where[7:9]], y[where[7:9]] = np.inf, np.inf
    return x.astype(x_dtype), y.astype(y_dtype)


def _fields(stats):
    return {name: getattr(stats, name) for name in ps.PairStats.__dataclass_fields__}


def _assert_same(a, b, rel=1e-12):
    for name, value in _fields(a).items():
        other = getattr(b, name)
        if isinstance(value, tuple) or isinstance(value, int):
            assert value == other, name
        else:
            assert value == pytest.approx(other, rel=rel, abs=1e-300, nan_ok=True), name


@needs_c
@pytest.mark.parametrize("x_dtype, y_dtype", DTYPE_PAIRS)
@pytest.mark.parametrize("shift", [1, 2, 3])
def test_the_c_passes_read_buffers_not_aligned_to_their_item_size(isa, x_dtype, y_dtype, shift):
    """A memory-mapped tensor sits at its file offset (a dump's payload starts wherever its header ends), so the
    passes meet float32 at odd addresses: the same sums as over aligned copies."""
    x, y = _pair(np.random.default_rng(5), 3001, x_dtype, y_dtype, special=True)

    def misaligned(array):
        raw = np.zeros(array.nbytes + 8, np.uint8)
        raw[shift:shift + array.nbytes] = array.view(np.uint8)
        view = np.frombuffer(raw.data, array.dtype, array.size, offset=shift)
        assert not view.flags.aligned or array.itemsize == 1 or shift % array.itemsize == 0
        return view

    moved = ps.gather(ps.array_chunks(misaligned(x), misaligned(y), 1024), 1e-3, 1e-3)
    _assert_same(moved, ps.gather(ps.array_chunks(x, y, 1024), 1e-3, 1e-3), rel=0)


@needs_c
@pytest.mark.parametrize("x_dtype, y_dtype", DTYPE_PAIRS)
@pytest.mark.parametrize("special", [False, True])
def test_c_and_numpy_passes_agree(monkeypatch, isa, x_dtype, y_dtype, special):
    x, y = _pair(np.random.default_rng(17), 20011, x_dtype, y_dtype, special)
    with_c = ps.gather(ps.array_chunks(x, y, 4096), 1e-3, 1e-3)
    monkeypatch.setattr(ps, "_pairstats", None)
    with_numpy = ps.gather(ps.array_chunks(x, y, 4096), 1e-3, 1e-3)
    _assert_same(with_c, with_numpy)


@pytest.mark.parametrize("x_dtype, y_dtype", DTYPE_PAIRS)
def test_metrics_equal_plain_float64_formulas(x_dtype, y_dtype):
    x, y = _pair(np.random.default_rng(3), 5003, x_dtype, y_dtype)
    result = compare_tensors(x, y, cosine_threshold=None)
    a, b = x.astype(np.float64), y.astype(np.float64)
    d = np.abs(a - b)
    nonzero = np.abs(b) > 2.220446049250313e-16
    r = d[nonzero] / np.abs(b[nonzero])

    def profile(v):
        p = np.maximum((v - v.min()) / (v.max() - v.min()), np.finfo(np.float32).eps)
        return p / p.sum()

    expected = {
        "CosineSimilarity": a @ b / (np.linalg.norm(a) * np.linalg.norm(b)), "MaxAbsoluteError": d.max(),
        "AccumulatedRelativeError": r.sum(), "RelativeEuclideanDistance": np.linalg.norm(a - b) / np.linalg.norm(b),
        "KullbackLeiblerDivergence": np.sum(profile(a) * np.log(profile(a) / profile(b))),
        "MeanAbsoluteError": d.mean(),
        "RootMeanSquareError": math.sqrt(np.mean((a - b) ** 2)), "MaxRelativeError": r.max(),
        "MeanRelativeError": r.sum() / a.size}
    for name, value in expected.items():
        assert result.value(name) == pytest.approx(value, rel=1e-11), name
    assert tuple(result.value("StandardDeviation")) == pytest.approx((a.mean(), a.std(), b.mean(), b.std()), rel=1e-12)
    assert result.worst.flat_index == int(np.argmax(d))
    assert result.allclose_ratio == np.isclose(a, b, rtol=result.tolerance.rtol, atol=result.tolerance.atol).mean()


@pytest.mark.skipif(not os.environ.get("PRECISION_TOOL_EXPECT_C"),
                    reason="PRECISION_TOOL_EXPECT_C is not set (make test sets it for the main environment)")
def test_the_c_passes_are_built_from_the_current_source():
    """The extension is optional at install (no compiler: the numpy passes), so a C file that stops compiling would
    leave the numpy passes -- or, in a checkout, the last good build -- in use without a word. Where make test
    built it, it must be there and newer than its source."""
    assert ps._pairstats is not None, "the C passes did not build: pip install -e . shows the compiler's error"
    source = os.path.join(os.path.dirname(ps.__file__), "_pairstats.c")
    assert os.path.getmtime(ps._pairstats.__file__) >= os.path.getmtime(source), "the build is older than the source"


@needs_c
def test_an_unknown_instruction_set_is_refused():
    with pytest.raises(ValueError, match="sse9"):
        ps._pairstats.use_isa("sse9")
    assert ps._pairstats.isas()[-1] == "baseline" and ps.KERNEL == f"C ({ps._pairstats.isas()[0]})"


@pytest.mark.parametrize("size", [1, 7, 256, 257, 4999])
def test_chunked_equals_whole_and_the_first_worst_element_wins(size):
    x = np.zeros(5000, np.float32)
    y = np.zeros(5000, np.float32)
    x[[300, 2600, 4100]] = 2.0  # three elements share the largest error: the first is the worst
    y[:] = 1.0
    whole = ps.gather(ps.array_chunks(x, y, 1 << 20))
    chunked = ps.gather(ps.array_chunks(x, y, size))
    _assert_same(whole, chunked)
    assert chunked.worst == 0 and chunked.max_ad == 1.0  # |0 - 1| = 1 from element 0, |2 - 1| = 1 later
    x[0] = 0.5
    assert ps.gather(ps.array_chunks(x, y, size)).worst == 1


@needs_c
def test_every_float16_value_is_decoded_exactly(isa):
    halves = np.arange(65536, dtype=np.uint16).view(np.float16)
    stats = ps.gather(ps.array_chunks(halves, halves.astype(np.float64), 1 << 20))
    finite = np.isfinite(halves)
    # IEEE half: exponent all ones (2 signs x 2^10 mantissas) is non-finite: 2 infinities, the rest NaN
    non_finite = 2 * 2 ** 10
    assert stats.n == int(finite.sum()) == 2 ** 16 - non_finite and stats.max_ad == 0.0
    assert stats.classes[4 * ps.NAN + ps.NAN] == non_finite - 2 and stats.nonfinite_close == non_finite
    assert (stats.min_x, stats.max_x) == (-65504.0, 65504.0) and stats.nonzero_x == stats.n - 2  # +0 and -0


@needs_c
def test_the_kl_log_is_within_one_ulp_of_numpy(isa):
    rng = np.random.default_rng(5)
    values = np.concatenate([rng.uniform(0.5, 2.0, 100000), 10.0 ** rng.uniform(-300, 300, 100000), [1.0]])
    logs = values.copy()
    ps._pairstats.log_each(logs)
    assert np.all(np.abs(logs - np.log(values)) <= np.spacing(np.abs(np.log(values))) + 1e-300)
    assert logs[-1] == 0.0


@needs_c
@pytest.mark.parametrize("spread", [0.005, 0.03, 0.5])
def test_the_kl_sum_near_and_far_from_equal_profiles(isa, spread):
    """Pass 2 takes ln(p/q) from a series in u = (p - q) / q where every ratio of a 256-pair block is within 2**-5
    of 1 (to u**8 within 2**-7, else to u**12), else from its log of p / q: either way each term is within a few
    ulps of numpy's log1p/log, so the sum agrees with math.fsum of numpy's terms to 1e-13 (p = x, q = y: lo 0,
    scale 1)."""
    rng = np.random.default_rng(11)
    y = rng.uniform(0.1, 1.0, 5000)
    x = y * (1.0 + rng.uniform(-spread, spread, y.size))
    dxx, dyy, kl, tp, tq = ps._pairstats.pass2(x, y, 0.0, 0.0, 0.0, 1.0, 0.0, 1.0, 1e-300)
    u = (x - y) / y
    terms = x * np.where(np.abs(u) <= 2.0 ** -5, np.log1p(u), np.log(x / y))
    assert kl == pytest.approx(math.fsum(terms), rel=1e-13)
    assert (tp, tq, dxx) == (pytest.approx(math.fsum(x), rel=1e-15), pytest.approx(math.fsum(y), rel=1e-15),
                             pytest.approx(math.fsum(x * x), rel=1e-14))


def write_pair(folder, stored, reference, device="ND", origin_format="ND", op_type="Add"):
    """A dump ``{op_type}.op.1.1.1`` holding ``stored`` as its output (in ``device`` layout, with the reference's
    shape as its original shape) and the reference ``op.0.1.npy`` in ``folder``; the aligned pair of the two."""
    from precision_tool.alignment import AlignedPair, NpuTensorRef, NpyTensorRef
    from precision_tool.formats.dump_writer import TensorSpec, write_dump

    dump = os.path.join(str(folder), f"{op_type}.op.1.1.1")
    write_dump(dump, "op", outputs=[TensorSpec(stored, device, original_shape=list(reference.shape))])
    ref_path = os.path.join(str(folder), "op.0.1.npy")
    np.save(ref_path, reference)
    return AlignedPair(npu=NpuTensorRef(path=dump, op_name="op", op_type=op_type, kind="output", index=0,
                                        dtype=str(stored.dtype), shape=stored.shape, origin_format=origin_format,
                                        origin_shape=tuple(reference.shape)),
                       ref=NpyTensorRef(path=ref_path, op_name="op", output_index=0, dtype="<f4",
                                        shape=tuple(reference.shape)), rule="test")


def test_the_worker_reads_a_large_pair_in_pieces_with_the_same_result(tmp_path, monkeypatch, reads):
    from precision_tool.comparison import worker

    rng = np.random.default_rng(9)
    reference = rng.standard_normal((30, 1001)).astype(np.float32)
    npu = (reference + rng.standard_normal(reference.shape).astype(np.float32) * 0.01).astype(np.float16)
    npu[3, 5] = np.nan
    pair = write_pair(tmp_path, npu, reference)
    task = worker.PairTask(pair, 0, "op")
    whole, _ = worker.PairComparer(0.99).run(task)
    monkeypatch.setattr(worker, "STREAM_ABOVE", 1000)
    monkeypatch.setattr(worker, "CHUNK", 777)
    comparer = worker.PairComparer(0.99)
    assert comparer.streamed(pair) is not None
    pieces, _ = comparer.run(task)
    assert (pieces.status, pieces.shape, pieces.notes) == (whole.status, whole.shape, whole.notes)
    assert pieces.metrics[1:5] == pytest.approx(whole.metrics[1:5], rel=1e-12)
    assert pieces.metrics[0] == pytest.approx(whole.metrics[0], rel=1e-12)
    assert len(pieces.metrics) == len(ALL) and pieces.metric("CosineSimilarity") < 1.0


@pytest.mark.parametrize("origin, device, shape", [
    ("NHWC", "NC1HWC0", (2, 9, 7, 19)), ("NCHW", "NC1HWC0", (2, 19, 9, 7)), ("NDHWC", "NDC1HWC0", (1, 3, 5, 7, 17)),
    ("ND", "FRACTAL_NZ", (2, 53, 37))])
def test_a_large_device_layout_tensor_is_compared_slab_by_slab_with_the_whole_tensors_result(tmp_path, monkeypatch,
                                                                                          origin, device, shape, reads):
    """Above STREAM_ABOVE a device-layout tensor is converted a slab at a time (issue 17: any size in fixed memory):
    the row equals the whole-tensor row -- status, shape, every metric, and the worst element's position."""
    from precision_tool.comparison import worker
    from precision_tool.formats.layouts import to_device

    rng = np.random.default_rng(4)
    reference = rng.standard_normal(shape).astype(np.float32)
    npu = (reference + rng.standard_normal(shape).astype(np.float32) * 0.01).astype(np.float16)
    npu.flat[npu.size * 2 // 3] += 5  # the worst element, deep inside
    pair = write_pair(tmp_path, to_device(npu, origin, device), reference, device, origin, "Conv2D")
    task = worker.PairTask(pair, 0, "op")
    whole, _ = worker.PairComparer(0.99).run(task)
    monkeypatch.setattr(worker, "STREAM_ABOVE", 100)
    monkeypatch.setattr(worker, "CHUNK", 333)
    comparer = worker.PairComparer(0.99)
    streamed = comparer.streamed(pair)
    assert streamed is not None and streamed[0].worst.flat_index == npu.size * 2 // 3
    pieces, _ = comparer.run(task)
    assert (pieces.status, pieces.shape, pieces.notes, pieces.reason) == (whole.status, whole.shape, whole.notes,
                                                                          whole.reason)
    for got, expected in zip(pieces.metrics, whole.metrics):  # StandardDeviation is a tuple of four
        assert tuple(np.ravel(got)) == pytest.approx(tuple(np.ravel(expected)), rel=1e-12)
    assert whole.metric("MaxAbsoluteError") == pytest.approx(5.0, abs=0.1)


@pytest.mark.parametrize("case", ["no header shape, graph shape", "empty header shape", "fortran reference"])
def test_the_pieces_path_decodes_the_shape_as_the_whole_path_does(tmp_path, monkeypatch, case, reads):
    """Found in review: the piece-by-piece path ignored the graph's shape when the header had none, took a header
    shape of [] as a scalar, and could not read a Fortran-ordered reference -- SHAPE_MISMATCH, COUNT_MISMATCH and
    ERROR where the whole-tensor path passes. Each row must be the whole path's."""
    from precision_tool.alignment import AlignedPair, NpuTensorRef, NpyTensorRef
    from precision_tool.comparison import worker
    from precision_tool.formats.dump_writer import TensorSpec, write_dump

    reference = np.random.default_rng(3).standard_normal((40, 50)).astype(np.float32)
    npu = reference.astype(np.float16)
    header_shape = {"no header shape, graph shape": None, "empty header shape": [],
                    "fortran reference": list(npu.shape)}[case]
    stored = npu.reshape(-1) if case != "fortran reference" else npu  # ND, flat: only a shape makes it 40 x 50
    dump = str(tmp_path / "Add.op.1.1.1")
    write_dump(dump, "op", outputs=[TensorSpec(stored, "ND", original_shape=header_shape)])
    ref_path = str(tmp_path / "op.0.1.npy")
    np.save(ref_path, np.asfortranarray(reference) if case == "fortran reference" else reference.reshape(-1)
            if case == "empty header shape" else reference)
    ref_shape = reference.shape if case != "empty header shape" else (reference.size,)
    pair = AlignedPair(npu=NpuTensorRef(path=dump, op_name="op", op_type="Add", kind="output", index=0,
                                        dtype="float16", shape=stored.shape, origin_format="ND",
                                        origin_shape=reference.shape if case.startswith("no header") else None),
                       ref=NpyTensorRef(path=ref_path, op_name="op", output_index=0, dtype="<f4", shape=ref_shape),
                       rule="test")
    task = worker.PairTask(pair, 0, "op")
    whole, _ = worker.PairComparer(0.99).run(task)
    assert whole.status.value == "PASS", whole.reason
    monkeypatch.setattr(worker, "STREAM_ABOVE", 100)
    monkeypatch.setattr(worker, "CHUNK", 333)
    pieces, _ = worker.PairComparer(0.99).run(task)
    assert (pieces.status, pieces.shape, pieces.reason) == (whole.status, whole.shape, whole.reason)
    assert pieces.metrics[0] == pytest.approx(whole.metrics[0], rel=1e-12)


@pytest.mark.parametrize("device", ["ND", "NC1HWC0"])
def test_a_dump_rewritten_while_its_pair_is_streamed_is_an_error_not_a_mix(tmp_path, monkeypatch, reads, device):
    """Found in review: once pieces were mapped, a dump rewritten in place (same size, new values) while its pair was
    streamed -- here while its last piece is used -- was compared as a mix of both versions: a PASS. The row is an
    ERROR naming the file (the worker checks every file a pair read, once compared, against what it was before)."""
    from precision_tool.comparison import worker
    from precision_tool.formats.dump_file import read_dump_header
    from precision_tool.formats.layouts import to_device

    reference = np.random.default_rng(6).standard_normal((2, 19, 9, 32)).astype(np.float32)  # NHWC
    stored = reference.astype(np.float16) if device == "ND" else to_device(reference.astype(np.float16), "NHWC", device)
    pair = write_pair(tmp_path, stored, reference, device, "NHWC" if device != "ND" else "ND")
    dump = pair.npu.path
    offset = read_dump_header(dump).tensor("output", 0).offset
    monkeypatch.setattr(worker, "STREAM_ABOVE", 100)
    monkeypatch.setattr(worker, "CHUNK", 1000)
    pieces, passes = worker.paired_pieces, []

    def rewrite_in_the_second_pass(xs, ys):  # while its last piece is used, after which nothing is read again
        passes.append(0)
        for number, piece in enumerate(pieces(xs, ys)):
            passes[-1] += 1
            if len(passes) == 2 and number == passes[0] - 1:  # another process writes new values over it, later
                with open(dump, "r+b") as handle:
                    handle.seek(offset)
                    handle.write((-stored).tobytes())
                later = os.stat(dump).st_mtime_ns + 10 ** 9
                os.utime(dump, ns=(later, later))
            yield piece

    monkeypatch.setattr(worker, "paired_pieces", rewrite_in_the_second_pass)
    row, _ = worker.PairComparer(0.99).run(worker.PairTask(pair, 0, "op"))
    assert len(passes) == 2 and passes[0] > 2 and row.status.value == "ERROR", (passes, row.status, row.reason)
    assert row.reason == f"{dump}: changed on disk while being compared (rewritten by another process?); not compared"


@pytest.mark.parametrize("rewritten", ["dump", "reference"])
def test_a_file_rewritten_while_its_pair_is_compared_whole_is_an_error(tmp_path, monkeypatch, reads, rewritten):
    """A pair read whole (mapped in a worker, where the map shows another process's writes as they happen) whose
    dump or reference is rewritten in place while it is compared: the row is an ERROR naming that file, and the next
    pair -- the same files, read again -- is compared."""
    from precision_tool.comparison import worker

    reference = np.random.default_rng(7).standard_normal((64, 100)).astype(np.float32)
    pair = write_pair(tmp_path, reference.astype(np.float16), reference)
    judge, target = worker.judge_pair, {"dump": pair.npu.path, "reference": pair.ref.path}[rewritten]

    def judge_while_rewriting(*args, **options):
        if not judge_while_rewriting.done:  # the same bytes written again, later: what matters is that it changed
            with open(target, "r+b") as handle:
                data = handle.read()
                handle.seek(0)
                handle.write(data)
            later = os.stat(target).st_mtime_ns + 10 ** 9
            os.utime(target, ns=(later, later))
            judge_while_rewriting.done = True
        return judge(*args, **options)

    judge_while_rewriting.done = False
    monkeypatch.setattr(worker, "judge_pair", judge_while_rewriting)
    comparer = worker.PairComparer(0.99)
    first, second = (row for row, _ in comparer.run_all([worker.PairTask(pair, k, "op") for k in (0, 1)]))
    assert first.status.value == "ERROR" and first.reason == (
        f"{target}: changed on disk while being compared (rewritten by another process?); not compared")
    assert second.status.value == "PASS", second.reason
