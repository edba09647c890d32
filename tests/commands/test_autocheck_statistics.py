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
    assert f"Verdict: Suspect by statistics, to confirm with a full dump of it (below): {PLANTED} (Conv2D)." in out
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
    assert code == 2 and "holds statistics (dump_data=\"stats\") and 'ac -c' has not judged them yet" in err
    code, out, _ = run(capsys, "-d", fresh, "ac", "-c")
    stored = next(line.split(": ", 1)[1] for line in out.splitlines() if line.startswith("Judgment: "))
    assert os.path.isfile(stored) and os.path.basename(stored).startswith("statistics_")
    for command in (["vcs"], ["report"], ["vcs", "-f", stored]):
        code, shown, _ = run(capsys, "-d", fresh, *command)
        assert code == 1 and f"Verdict: Suspect by statistics, to confirm with a full dump of it (below): {PLANTED}" \
            in shown, command
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
