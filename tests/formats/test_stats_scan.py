"""Statistics CSVs found by the one dump scan (issue 42): same tree, steps, devices and mapping.csv as tensor dumps.
Files are written by hand: GE names each ``{dump file path}.csv`` (``../shared/docs/ascend-dump-trees.md`` §2)."""
from precision_tool.formats.dump_names import scan_dump_folder
from precision_tool.formats.dump_tree import DumpSelection
from precision_tool.formats.stats_csv import read_stats_csv

HEADER = ("Input/Output,Index,Data Size,Data Type,Format,Shape,Max Value,Min Value,Avg Value,Count,Nan Count,"
          "Negative Inf Count,Positive Inf Count\n")


def _stats(folder, name, maximum):
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{name}.csv").write_text(HEADER + f"Output,0,8,DT_FLOAT16,ND,2x2,{maximum},0,1,4,0,0,0\n")


def test_a_stats_only_tree_is_scanned_by_step_and_device_with_hashed_names_resolved(tmp_path):
    root = tmp_path / "dump"
    model = root / "20240613143502" / "0" / "ge_default_20240613143502_1" / "1"
    for step, maximum in ((0, 1.5), (5, 2.5)):
        _stats(model / str(step), "Conv2D.conv1.3.2.1700000000000001", maximum)
        _stats(model / str(step), "Relu.relu1.4.2.1700000000000002", maximum)
    # a name GE stored under a hash: the dump's hashed name + ".csv", resolved by the folder's mapping.csv
    long_name = "MatMul." + "scope_" * 50 + "dense.7.2.1700000000000003"
    _stats(model / "5", "3827161982", 9.0)
    (model / "5" / "mapping.csv").write_text(f"3827161982,{long_name}\n")
    (model / "5" / "statistic.csv").write_text(HEADER)  # a merged file: not a per-op CSV
    (model / "5" / "result_20240613143502.csv").write_text("x\n")

    scan = scan_dump_folder(root)
    assert scan.ops == () and scan.unrecognised == ()  # no tensor dump; every CSV is a side file or stats
    assert (scan.choice.step, scan.choice.device) == (5, 0)  # the newest step, as for tensor dumps
    assert [op.op_name for op in scan.stats] == ["conv1", "relu1", "scope_" * 50 + "dense"]
    hashed = scan.stats[2].latest
    assert hashed.stored_name == "3827161982.csv" and hashed.name.op_type == "MatMul"
    assert read_stats_csv(hashed.path).rows[0].max == 9.0
    assert read_stats_csv(scan.stats[0].latest.path).rows[0].max == 2.5  # step 5's file

    step0 = scan_dump_folder(root, DumpSelection(step=0))
    assert [op.op_name for op in step0.stats] == ["conv1", "relu1"]
    assert read_stats_csv(step0.stats[0].latest.path).rows[0].max == 1.5


def test_tensor_dumps_and_their_stats_side_by_side_are_both_found(tmp_path):
    """A run with both (a full dump of a few layers beside statistics): each kind is listed apart."""
    folder = tmp_path / "flat"
    _stats(folder, "Conv2D.conv1.3.2.1700000000000001", 1.0)
    (folder / "Conv2D.conv1.3.2.1700000000000001").write_bytes(b"")  # the tensor dump itself
    scan = scan_dump_folder(folder)
    assert [op.op_name for op in scan.ops] == ["conv1"] and [op.op_name for op in scan.stats] == ["conv1"]
    assert scan.stats[0].latest.path.endswith(".csv") and not scan.ops[0].latest.path.endswith(".csv")


def test_compare_on_statistics_only_says_so_in_one_line_and_exits_2(tmp_path, capsys):
    """Until statistics are compared (issue 42), a statistics-only run is named as such, not "nothing compared"."""
    import numpy as np

    from precision_tool.cli import main

    dump = tmp_path / "ws" / "npu" / "debug_0" / "dump"
    _stats(dump, "Conv2D.conv1.3.2.1700000000000001", 1.0)
    reference = tmp_path / "ws" / "tf" / "dump"
    reference.mkdir(parents=True)
    np.save(reference / "conv1.0.1700000000000001.npy", np.ones((2, 2), np.float32))
    assert main(["-d", str(tmp_path / "ws"), "compare", "-o", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert f"{dump}: holds statistics dumps only (1 .csv file of dump_data=\"stats\"), no tensor dump" in err
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())
