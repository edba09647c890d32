"""``emulate --dump-data stats`` and ``--dump-layer`` (issue 42): the statistics CSVs state exactly what the tensor
dump of the same emulation holds, in GE's per-op form, and a layer dump holds the ops named and no other."""
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from precision_tool.formats.dump_file import read_dump_header, read_tensor
from precision_tool.formats.dump_names import scan_dump_folder
from precision_tool.formats.stats_csv import PER_OP, read_stats_csv
from precision_tool.formats.tensor_kind import INPUT, OUTPUT

pytestmark = pytest.mark.tf
REPO = Path(__file__).resolve().parents[2]
MODEL = REPO / "sample_dumps" / "models" / "cnn.py"
PLANTED = "small_cnn_1/res_conv_1/convolution"


def emulate(out, *extra):
    done = subprocess.run([sys.executable, "-m", "precision_tool", "emulate", str(MODEL), "-o", str(out), *extra],
                          cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True,
                          env={**os.environ, "PYTHONPATH": str(REPO)}, timeout=600)
    return done


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    pytest.importorskip("tensorflow")
    root = tmp_path_factory.mktemp("stats")
    for name, extra in (("tensor", ()), ("stats", ("--dump-data", "stats")),
                        ("layer", ("--dump-layer", "small_cnn_1/res_conv_1/convolution small_cnn_1/conv1_1/Relu")),
                        ("fault", ("--dump-data", "stats", "--perturb", f"{PLANTED}=0.5"))):
        done = emulate(root / name, *extra)
        assert done.returncode == 0, done.stderr
    return root


def test_each_statistics_csv_states_what_the_tensor_dump_holds(runs):
    tensors = scan_dump_folder(runs / "tensor" / "npu" / "debug_0" / "dump")
    stats = scan_dump_folder(runs / "stats" / "npu" / "debug_0" / "dump")
    assert stats.ops == () and [op.op_name for op in stats.stats] == [op.op_name for op in tensors.ops]
    for dumped, stated in zip(tensors.ops, stats.stats):
        header = read_dump_header(dumped.latest.path)
        table = read_stats_csv(stated.latest.path)
        assert table.form == PER_OP and table.notes == ()
        for kind, entries in ((INPUT, header.inputs), (OUTPUT, header.outputs)):
            for index, entry in enumerate(entries):
                stored = read_tensor(header, entry).astype(np.float64)  # the device buffer, as the dump holds it
                row = table.find(kind, index)
                assert (row.shape, row.count, row.data_size) == (tuple(entry.shape), stored.size, entry.nbytes)
                assert row.count == int(np.prod(row.shape))  # Count is the product of Shape (facts' example)
                good = stored[np.isfinite(stored)]
                assert (row.max, row.min) == (good.max(), good.min())
                assert row.mean == pytest.approx(good.mean(), rel=1e-12, abs=1e-12)
                assert row.nan == int(np.isnan(stored).sum())


def test_a_layer_dump_holds_the_ops_named_by_npu_or_tf_name_and_no_other(runs):
    scan = scan_dump_folder(runs / "layer" / "npu" / "debug_0" / "dump")
    # conv1_1/Relu is fused into the conv1_1 Conv2D NPU op (ConvBiasaddFusionPass and the Relu after it)
    assert sorted(op.op_name for op in scan.ops) == ["small_cnn_1_conv1_1_convolution",
                                                     "small_cnn_1_res_conv_1_convolution"]


def test_statistics_only_runs_are_named_by_compare(runs):
    done = subprocess.run([sys.executable, "-m", "precision_tool", "-d", str(runs / "stats"), "compare", "-o",
                           str(runs / "stats_out")], cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          universal_newlines=True, env={**os.environ, "PYTHONPATH": str(REPO)})
    assert done.returncode == 2 and done.stdout == "" and done.stderr.count("\n") == 1
    assert "/npu/debug_0/dump: holds statistics dumps only (23 .csv files" in done.stderr


def test_a_name_no_op_answers_to_is_refused_in_one_line(tmp_path):
    done = emulate(tmp_path / "bad", "--dump-layer", "small_cnn_1/nosuch/op")
    assert done.returncode == 2 and not (tmp_path / "bad").exists()
    assert done.stderr.splitlines()[-1].startswith("precision_tool: error: --dump-layer small_cnn_1/nosuch/op: no "
                                                   "executed op of the NPU graph is called so")


def test_bisect_repeats_a_statistics_or_layer_emulation_as_it_was(runs):
    """The manifest records the two options (only when not the default), and bisect's command line keeps them."""
    import json

    from precision_tool.commands.emulate import emulate_arguments

    stats = json.loads((runs / "stats" / "manifest.json").read_text())
    layer = json.loads((runs / "layer" / "manifest.json").read_text())
    plain = json.loads((runs / "tensor" / "manifest.json").read_text())
    assert emulate_arguments(stats)[-2:] == ["--dump-data", "stats"]
    assert emulate_arguments(layer)[-2:] == ["--dump-layer",
                                             "small_cnn_1/conv1_1/Relu small_cnn_1/res_conv_1/convolution"]
    assert "dump_data" not in plain and "dump_layer" not in plain


def _aligned(workspace, statistics):
    from precision_tool.alignment import load_graph
    from precision_tool.alignment.npu_vs_tf import align_npu_vs_tf

    return align_npu_vs_tf(workspace / "npu" / "debug_0" / "dump", workspace / "tf" / "dump",
                           load_graph(workspace / "npu" / "debug_0" / "graph"), statistics=statistics)


def test_statistics_align_as_the_tensor_dump_of_the_same_run_does(runs):
    def key(pair):
        return (pair.npu.op_name, pair.npu.kind, pair.npu.index, pair.npu.shape, pair.npu.origin_format,
                pair.npu.origin_shape, pair.ref.op_name, pair.ref.output_index, pair.rule)

    stats, tensors = _aligned(runs / "stats", True), _aligned(runs / "tensor", False)
    assert [key(p) for p in stats.pairs] == [key(p) for p in tensors.pairs]
    assert stats.coverage.aligned_count == stats.coverage.npu_tensors == len(tensors.pairs)


def test_the_planted_op_is_the_one_suspect_and_the_fault_is_what_makes_it_one(runs):
    """By intervention: the same model and inputs, with and without the fault on one op. With it, that op is the
    earliest suspect (its outputs' statistics prove far more error than its inputs'); without it, no op is."""
    from precision_tool.comparison.stats_evidence import judge_statistics, pair_evidence

    faulty = judge_statistics(pair_evidence(_aligned(runs / "fault", True)).pairs)
    clean = judge_statistics(pair_evidence(_aligned(runs / "stats", True)).pairs)
    first = faulty.suspects[0]
    # noise 0.5 makes RED about 50%: R is a lower bound on it (the extremes prove 6.8% of it here), 60 times its input's
    assert first.op_name == PLANTED and 0.03 < first.output < 0.5 and first.jump > 30
    assert clean.suspects == () and clean.measured == len(clean.ops)
    assert all(op.mismatch == "" for op in faulty.ops + clean.ops)  # no NaN/inf or count differs
