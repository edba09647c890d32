"""``ac -c`` on a statistics run, without TensorFlow: the sample CNN workspace (50% noise planted on res_conv_1,
which ``ac -c`` names by replay) turned into a ``dump_data="stats"`` run. Each dump file is replaced by the CSV GE
would write beside it, written here by hand in the facts' default form (ascend-dump-trees.md section 2) from numpy's
statistics of the stored tensor; nothing of precision_tool's statistics writer is used."""
import glob
import json
import os

import numpy as np
import pytest

from precision_tool.cli import main
from precision_tool.formats.dump_file import read_dump_header, read_tensor
from tests.checks.checks_builders import copy_cnn_workspace

PLANTED = "small_cnn_1/res_conv_1/convolution"
HEADER = ("Input/Output,Index,Data Size,Data Type,Format,Shape,Max Value,Min Value,Avg Value,Count,Nan Count,"
          "Negative Inf Count,Positive Inf Count")


def statistics_row(kind, entry, stored):
    values = stored.astype(np.float64)
    good = values[np.isfinite(values)]
    cells = [kind, entry.index, entry.nbytes, entry.dtype_name,
             entry.format_name, "x".join(map(str, entry.shape)) or "-", repr(float(good.max())),
             repr(float(good.min())), repr(float(good.mean())), values.size, int(np.isnan(values).sum()),
             int(np.isneginf(values).sum()), int(np.isposinf(values).sum())]
    return ",".join(map(str, cells))


@pytest.fixture(scope="module")
def statistics_run(tmp_path_factory):
    workspace = copy_cnn_workspace(tmp_path_factory.mktemp("stats"))
    dumps = [path for path in glob.glob(str(workspace / "npu" / "debug_0" / "dump" / "**" / "*"), recursive=True)
             if os.path.isfile(path) and os.path.basename(path).count(".") >= 4 and not path.endswith(".csv")]
    assert len(dumps) > 10
    for path in dumps:
        header = read_dump_header(path)
        rows = [statistics_row(kind, entry, read_tensor(header, entry))
                for kind, entries in (("Input", header.inputs), ("Output", header.outputs)) for entry in entries]
        with open(path + ".csv", "w") as handle:
            handle.write("\n".join([HEADER, *rows]) + "\n")
        os.remove(path)
    return workspace


def run(capsys, *argv):
    code = main(list(map(str, argv)))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_ac_on_statistics_names_the_planted_op_and_the_ops_to_dump_in_full(statistics_run, capsys):
    code, out, _ = run(capsys, "-d", statistics_run, "ac", "-c")
    assert code == 1
    headline = "Verdict: Suspect by statistics, to confirm with a full dump of it (the dump_layer line): "
    assert f"{headline}{PLANTED} (Conv2D)." in out
    assert "Statistics prove a tensor wrong, never right" in out
    layer = next(line for line in out.splitlines() if "session_dump_config(config, action='dump', dump_layer=" in line)
    assert PLANTED in layer
    assert "then run 'ac -c' on that run's workspace" in out


def test_ac_json_on_statistics_carries_the_judgment_and_the_plan(statistics_run, capsys):
    code, out, _ = run(capsys, "-d", statistics_run, "--json", "ac", "-c", "--dump-budget", "1K")
    data = json.loads(out)["data"]
    judgment, plan = data["statistics"]["judgment"], data["statistics"]["dump_layer"]
    assert code == 1 and data["compare"] is None
    assert judgment["suspects"][0]["op_name"] == PLANTED and judgment["suspects"][0]["jump"] >= 10
    assert plan["ops"][0] == PLANTED and plan["budget"] == 1024
    # the first suspect is named whatever the budget; everything else that did not fit is listed
    assert plan["ops"] == [PLANTED] or plan["bytes"] <= 1024
    assert data["verdict"]["culprit"]["evidence"] == "statistics"


def test_compare_needs_tensors_and_says_ac_judges_statistics(statistics_run, capsys, tmp_path):
    code, out, err = run(capsys, "-d", statistics_run, "compare", "-o", tmp_path / "out")
    assert code == 2 and out == "" and err.count("\n") == 1
    assert "holds statistics dumps only" in err and "'ac -c' judges statistics" in err


def test_a_bad_budget_is_a_one_line_usage_error_and_needs_c(statistics_run, capsys):
    code, _, err = run(capsys, "-d", statistics_run, "ac", "-c", "--dump-budget", "lots")
    assert code == 2 and "--dump-budget 'lots' is not a size" in err and err.count("\n") <= 2
    code, _, err = run(capsys, "-d", statistics_run, "ac", "--dump-budget", "1G")
    assert code == 2 and "--dump-budget applies to the comparison" in err


def test_vcs_ni_and_report_read_the_judgment_ac_stored(statistics_run, capsys, tmp_path):
    import shutil

    fresh = tmp_path / "fresh"
    shutil.copytree(statistics_run, fresh)
    shutil.rmtree(fresh / "temp", ignore_errors=True)
    code, _, err = run(capsys, "-d", fresh, "vcs")  # not judged yet: say what to run
    assert code == 2 and "holds statistics (dump_data=\"stats\") and no judgment of them is under" in err
    code, out, _ = run(capsys, "-d", fresh, "ac", "-c")
    stored = next(line.split(": ", 1)[1] for line in out.splitlines() if line.startswith("Judgment: "))
    assert os.path.isfile(stored) and os.path.basename(stored).startswith("statistics_")
    for command in (["vcs"], ["report"], ["vcs", "-f", stored]):
        code, shown, _ = run(capsys, "-d", fresh, *command)
        assert code == 1 and "Suspect by statistics, to confirm with a full dump of it (the dump_layer line): " \
            f"{PLANTED}" in shown, command
        assert "Also:" in shown and "overflow record: " in shown  # the whole verdict, as ac printed it
    assert "No HTML report of a statistics run" in run(capsys, "-d", fresh, "report")[1]
    code, shown, _ = run(capsys, "-d", fresh, "ni", PLANTED)
    assert code == 0 and f"Statistics ('ac -c', {stored}): a suspect: its outputs' statistics prove RED >=" in shown
    code, shown, _ = run(capsys, "-d", fresh, "ni", "small_cnn_1/conv1_1/convolution")
    assert "): not a suspect: its outputs prove RED >=" in shown and "statistics clear no op" in shown


def test_a_damaged_judgment_is_named_in_one_line(statistics_run, capsys, tmp_path):
    bad = tmp_path / "statistics_1.json"
    bad.write_text('{"format": "precision_tool statistics judgment 1", "statistics": {}}')
    code, _, err = run(capsys, "-d", statistics_run, "vcs", "-f", bad)
    assert code == 2 and err.count("\n") <= 2 and f"{bad}: cannot read the statistics judgment" in err


# -- what the fresh-eyes review found (issue 42) ------------------------------------------------------------------
def _copy(statistics_run, tmp_path):
    import shutil

    target = tmp_path / "ws"
    shutil.copytree(statistics_run, target)
    shutil.rmtree(target / "temp", ignore_errors=True)
    return target


def _csv_of(workspace, sanitized):
    (path,) = glob.glob(str(workspace / "npu" / "debug_0" / "dump" / "**" / f"*.{sanitized}.*.csv"), recursive=True)
    return path


def test_a_statistics_file_that_cannot_be_read_is_named_and_no_clean_exit(statistics_run, capsys, tmp_path):
    workspace = _copy(statistics_run, tmp_path)
    damaged = _csv_of(workspace, "small_cnn_1_res_conv_1_convolution")
    open(damaged, "w").close()  # an empty file where the planted op's statistics were
    code, out, _ = run(capsys, "-d", workspace, "ac", "-c")
    assert code in (1, 2) and f"Statistics not used: {damaged}" in out
    assert f"(the dump_layer line): {PLANTED}" not in out  # not judged: its file is gone
    code, data = run(capsys, "-d", workspace, "--json", "ac", "-c")[:2]
    data = json.loads(data)["data"]
    assert any(line.startswith(damaged) for line in data["statistics"]["judgment"]["unread"])


def test_a_row_cut_short_is_a_note_and_no_clean_exit(statistics_run, capsys, tmp_path):
    workspace = _copy(statistics_run, tmp_path)
    path = _csv_of(workspace, "small_cnn_1_conv1_1_convolution")
    lines = open(path).read().splitlines()
    lines[-1] = ",".join(lines[-1].split(",")[:9])
    open(path, "w").write("\n".join(lines) + "\n")
    code, out, _ = run(capsys, "-d", workspace, "ac", "-c")
    assert code == 1 and f"Statistics not used: {path}: line {len(lines)}: 9 cells where the header has 13" in out


def test_nothing_measured_is_exit_2_not_a_clean_pass(statistics_run, capsys, tmp_path):
    workspace = _copy(statistics_run, tmp_path)
    for path in glob.glob(str(workspace / "npu" / "debug_0" / "dump" / "**" / "*.csv"), recursive=True):
        rows = open(path).read().splitlines()
        cut = [",".join(row.split(",")[:6] + ["NA"] * 7) for row in rows[1:]]
        open(path, "w").write("\n".join([rows[0], *cut]) + "\n")
    shutil_rm_overflow(workspace)
    code, out, _ = run(capsys, "-d", workspace, "ac", "-c")
    assert code == 2 and "0 ops measured" in out


def shutil_rm_overflow(workspace):
    import shutil

    shutil.rmtree(workspace / "overflow", ignore_errors=True)  # its records would be a finding of their own


def test_an_input_without_a_reference_leaves_its_op_unmeasured(statistics_run, capsys, tmp_path):
    """The review's case: the Add's reference removed, the Relu after it has an input with nothing to compare; it is
    not judged against the floor alone (it was a false suspect, jump 94.8)."""
    workspace = _copy(statistics_run, tmp_path)
    for path in glob.glob(str(workspace / "tf" / "dump" / "small_cnn_1_res_add_1_Add.*.npy")):
        os.remove(path)
    code, out, _ = run(capsys, "-d", workspace, "--json", "ac", "-c")
    ops = {op["op_name"]: op for op in json.loads(out)["data"]["statistics"]["judgment"]["ops"]}
    relu = next(op for name, op in ops.items() if name.endswith("res_relu_1/Relu") or "Relu" in op["op_type"]
                and "res" in name)
    assert relu["jump"] is None and relu["suspect"] is False


def test_the_overflow_lead_is_kept_beside_the_statistics(statistics_run, capsys):
    code, out, _ = run(capsys, "-d", statistics_run, "ac")
    assert code == 1 and "by overflow record" in out  # the sample's overflow run: a lead without -c
    code, out, _ = run(capsys, "-d", statistics_run, "ac", "-c")
    assert code == 1 and "Also:" in out and "overflow record: " in out


def test_vcs_shows_a_failed_judgment_not_an_older_one(statistics_run, capsys, tmp_path):
    import shutil

    workspace = _copy(statistics_run, tmp_path)
    shutil_rm_overflow(workspace)  # its lead would be a finding of its own
    assert run(capsys, "-d", workspace, "ac", "-c")[0] == 1
    shutil.rmtree(workspace / "tf" / "dump")
    assert run(capsys, "-d", workspace, "ac", "-c")[0] == 2
    code, out, _ = run(capsys, "-d", workspace, "vcs")
    assert code == 2 and "Statistics comparison not run: no reference folder" in out
    assert "Suspect by statistics" not in out  # not the older judgment


def test_a_judgment_with_figures_of_the_wrong_type_is_one_line(statistics_run, capsys, tmp_path):
    workspace = _copy(statistics_run, tmp_path)
    run(capsys, "-d", workspace, "ac", "-c")
    (stored,) = glob.glob(str(workspace / "temp" / "vector_compare" / "*" / "statistics_*.json"))
    data = json.load(open(stored))
    data["statistics"]["judgment"]["ops"][0]["output"] = "big"
    json.dump(data, open(stored, "w"))
    code, _, err = run(capsys, "-d", workspace, "vcs")
    assert code == 2 and err.count("\n") <= 2 and f"{stored}: cannot read the statistics judgment ('big' is not" in err
    code, out, _ = run(capsys, "-d", workspace, "ni", PLANTED, "-a")
    assert code == 0 and f"Statistics: {stored}: cannot read the statistics judgment" in out
    assert "Attributes" in out or "attribute" in out.lower()  # -a still shows the op's attributes


def test_ni_on_a_statistics_run_not_judged_yet_still_describes_the_op(statistics_run, capsys, tmp_path):
    workspace = _copy(statistics_run, tmp_path)
    code, out, _ = run(capsys, "-d", workspace, "ni", PLANTED)
    assert code == 0 and "Original TF ops:" in out or "Inputs" in out
    assert "and no judgment of them is under" in out
