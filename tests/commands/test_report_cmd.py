"""``report`` from the command line: where it reads and writes, exit codes, one-line errors."""
import json
import os
import shutil
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), os.pardir, "reports"))

from html_builders import CNN, RES_CONV, chain, sample_result, tensor, write_synthetic_result
from precision_tool.cli import main
from sample_counts import dumped_tensors
from precision_tool.reports.html.browser import find_chromium


def run(capsys, *argv):
    code = main(list(map(str, argv)))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.fixture(scope="module")
def sample_csv(tmp_path_factory):
    return sample_result(tmp_path_factory.mktemp("sample_out"))


def test_no_result_yet_tells_to_run_ac_or_compare(tmp_path, capsys):
    code, out, err = run(capsys, "-d", tmp_path, "report")
    assert code == 2 and out == ""
    folder = tmp_path / "temp" / "vector_compare"
    assert err == (f"precision_tool: error: no compare result in {tmp_path} yet ({folder} is missing) "
                   f"(run 'precision_tool -d {tmp_path} ac -c' or 'compare' first, or give -f RESULT)\n")


@pytest.mark.parametrize("make, message", [
    (lambda p: p / "missing.csv", "missing.csv: no such file or folder"),
    (lambda p: p, "no result_*.csv under"),
])
def test_bad_result_paths_are_one_line_errors(tmp_path, capsys, make, message):
    code, _out, err = run(capsys, "report", "-f", make(tmp_path))
    assert code == 2 and message in err and err.count("\n") == 1
    assert "ac -c" in err


def test_a_csv_that_is_not_a_result_is_refused(tmp_path, capsys):
    bad = tmp_path / "result_20260101000000.csv"
    bad.write_text("a,b\n1,2\n")
    code, _out, err = run(capsys, "report", "-f", bad)
    assert code == 2 and "header lacks Index" in err and err.count("\n") == 1
    assert list(tmp_path.iterdir()) == [bad]  # nothing written


def test_default_page_goes_beside_the_csv_and_exit_1_when_a_tensor_fails(sample_csv, capsys):
    code, out, _err = run(capsys, "-d", CNN, "report", "-f", sample_csv.parent)
    expected = sample_csv.parent / sample_csv.name.replace("result_", "report_").replace(".csv", ".html")
    assert code == 1
    assert f"Report: {expected} (" in out
    assert f"Most likely culprit: {RES_CONV} (Conv2D), by local error (replay)." in out
    assert expected.read_text(encoding="utf-8").count(f'data-op="{RES_CONV}"') >= 3  # marker, rows, detail


def test_all_passing_result_exits_0(tmp_path, capsys):
    # b at cosine 0.9999999 is 0.045% from the reference (RED of equal norms), within float16's floor: no culprit
    # (at 0.999, 4.5% on exact inputs, its error jump would name it)
    rows, edges = chain(("a", 1.0), ("b", 0.9999999))
    csv = write_synthetic_result(tmp_path / "out", rows, edges=edges)
    code, out, _err = run(capsys, "report", "-f", csv, "-o", tmp_path / "page.html")
    assert code == 0 and "No culprit found." in out
    assert (tmp_path / "page.html").is_file()


def test_threshold_flag_changes_the_verdicts(tmp_path, capsys):
    rows, edges = chain(("a", 1.0), ("b", 0.995))
    csv = write_synthetic_result(tmp_path / "out", rows, edges=edges)
    code, out, _err = run(capsys, "--json", "report", "-f", csv, "-c", "0.999", "-o", tmp_path / "p.html")
    data = json.loads(out)
    assert code == 1 and data["data"]["failing"] == 1 and data["data"]["first_divergence"] == "b"


def test_json_gives_paths_and_the_verdict(sample_csv, tmp_path, capsys):
    code, out, _err = run(capsys, "-d", CNN, "--json", "report", "-f", sample_csv, "-o", tmp_path / "r.html")
    data = json.loads(out)["data"]
    assert code == 1 and data["html"] == str(tmp_path / "r.html")
    # the culprit's output fails, and so do the Cast carrying it to the float32 Add and the Add's input
    assert data["compared"] == dumped_tensors() and data["failing"] == 4 and data["first_divergence"] == RES_CONV
    assert data["verdict"]["culprit"]["op_name"] == RES_CONV


def test_no_checks_leaves_out_the_overflow_and_fusion_sections(sample_csv, tmp_path, capsys):
    code, out, _err = run(capsys, "-d", CNN, "--json", "report", "-f", sample_csv, "-o", tmp_path / "r.html",
                          "--no-checks")
    assert code == 1 and json.loads(out)["data"]["verdict"] is None
    page = (tmp_path / "r.html").read_text(encoding="utf-8")
    assert 'id="checks"' not in page and f"First divergence: {RES_CONV}" in page


def test_workspace_found_from_the_summary_when_d_is_not_one(sample_csv, tmp_path, capsys):
    code, out, _err = run(capsys, "-d", tmp_path / "not_a_workspace", "report", "-f", sample_csv,
                          "-o", tmp_path / "r.html")
    assert code == 1 and "by local error (replay)" in out  # ac's verdict: the workspace came from summary.json


def test_page_is_never_written_into_the_run_inputs(sample_csv, tmp_path, capsys):
    workspace = tmp_path / "ws"
    shutil.copytree(CNN, workspace)
    code, _out, _err = run(capsys, "-d", workspace, "ac", "-c", "--workers", "1")
    assert code == 1
    inside = workspace / "npu" / "debug_0" / "dump" / "report.html"
    code, _out, err = run(capsys, "-d", workspace, "report", "-o", inside)
    assert code == 2 and "output folder would be inside the input" in err
    assert not inside.exists()


def test_default_reads_the_latest_workspace_result(tmp_path, capsys):
    workspace = tmp_path / "ws"
    shutil.copytree(CNN, workspace)
    assert run(capsys, "-d", workspace, "ac", "-c", "--workers", "1")[0] == 1
    code, out, _err = run(capsys, "-d", workspace, "report")
    (folder,) = (workspace / "temp" / "vector_compare").iterdir()
    (page,) = folder.glob("report_*.html")
    assert code == 1 and f"Report: {page}" in out


def test_plots_are_written_as_svg_and_png_when_chromium_is_there(sample_csv, tmp_path, capsys):
    code, out, _err = run(capsys, "-d", CNN, "report", "-f", sample_csv, "-o", tmp_path / "r.html",
                          "--plots", tmp_path / "plots", "--no-checks")
    names = sorted(p.name for p in (tmp_path / "plots").iterdir())
    assert code == 1
    assert "accuracy_plot.svg" in names
    # two histograms: the sample's four failing tensors are two sets of bytes (the culprit's float16 output and the
    # Cast's input; the Cast's float32 output and the Add's input)
    assert sum(name.startswith("error_histogram_") and name.endswith(".svg") for name in names) == 2
    root = ET.parse(tmp_path / "plots" / "accuracy_plot.svg").getroot()
    assert root.get("data-points") == str(dumped_tensors())
    if find_chromium() is None:
        assert "PNG needs Chromium" in out and not any(name.endswith(".png") for name in names)
    else:
        pngs = [name for name in names if name.endswith(".png")]
        assert len(pngs) == 3  # the plot and the two histograms
        assert (tmp_path / "plots" / "accuracy_plot.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_msaccucmp_csv_without_summary_still_gives_a_page(tmp_path, capsys):
    rows = [tensor(0, "a", cosine=1.0), tensor(1, "b", cosine=0.5, status="FAIL"), tensor(2, "c", status="NOT_COMPARED",
                                                                                       cosine=None)]
    csv = write_synthetic_result(tmp_path / "out", rows, summary=False)
    code, out, _err = run(capsys, "report", "-f", csv)
    page = Path(str(csv).replace("result_", "report_").replace(".csv", ".html")).read_text(encoding="utf-8")
    assert code == 1 and "Culprit: b, by first divergence." in out
    assert "No summary.json for this CSV" in page and 'data-points="2"' in page


def test_ac_compare_writes_the_page_on_request(tmp_path, capsys):
    code, out, _err = run(capsys, "-d", CNN, "ac", "-c", "-o", tmp_path / "out", "--workers", "1",
                          "--html", tmp_path / "ac.html")
    page = (tmp_path / "ac.html").read_text(encoding="utf-8")
    assert code == 1 and f"HTML report: {tmp_path / 'ac.html'}" in out
    assert f'<g id="first-divergence" data-op="{RES_CONV}">' in page and 'id="checks"' in page
    code, _out, err = run(capsys, "-d", CNN, "ac", "--html", tmp_path / "no.html")
    assert code == 2 and "ac: --html applies to the comparison, which ac runs only with -c" in err
    assert not (tmp_path / "no.html").exists()


def test_compare_writes_the_page_on_request(tmp_path, capsys):
    code, out, _err = run(capsys, "-d", CNN, "compare", "-o", tmp_path / "out", "--workers", "1",
                          "--html", tmp_path / "compare.html")
    page = (tmp_path / "compare.html").read_text(encoding="utf-8")
    assert code == 1 and f"HTML report: {tmp_path / 'compare.html'}" in out
    assert f'<g id="first-divergence" data-op="{RES_CONV}">' in page and 'id="checks"' not in page
