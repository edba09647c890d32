"""Element details of failing tensors: how many, and an honest note when the tensors cannot be loaded again."""
import contextlib
import io
import json
import shutil
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from html_builders import CNN, RES_ADD, RES_CONV, sample_result, tensor, write_synthetic_result
from precision_tool.cli import main
from precision_tool.reports.html import build_report, render_page
from precision_tool.reports.html.details import failing_details
from precision_tool.reports.result_store import load_result


def test_details_limit_keeps_the_first_divergence_first(tmp_path):
    rows = [tensor(0, "a"), tensor(1, "b", cosine=0.5, status="FAIL"), tensor(2, "c", cosine=0.6, status="FAIL")]
    csv = write_synthetic_result(tmp_path / "synthetic", rows)
    details = failing_details(load_result(str(csv)), limit=1, worst_count=3)
    assert [d.tensor_id for d in details.tensors] == ["b:output:0"] and details.skipped == 1
    assert [d.tensor_id for d in failing_details(load_result(str(csv)), limit=0).tensors] == ["b:output:0",
                                                                                            "c:output:0"]
    page = render_page(build_report(str(csv), run_checks=False, details=1))
    assert "1 more failing tensor(s) not detailed" in page


def test_an_input_that_is_its_producers_failing_output_shares_its_card(tmp_path):
    """The sample's four failing tensors are two sets of bytes: the culprit's float16 output and the input of the
    Cast that carries it to the float32 Add (allow_fp32_to_fp16); the Cast's output and the Add's input 1 (the
    result file says ``reused_from``). Two cards, each naming both; with a limit of 1 the second is skipped."""
    csv = sample_result(tmp_path / "out")
    details = failing_details(load_result(str(csv)), limit=1, worst_count=3)
    assert [d.tensor_id for d in details.tensors] == [f"{RES_CONV}:output:0"] and details.skipped == 1
    (cast,) = details.tensors[0].same_bytes_as
    assert cast.startswith("trans_Cast_") and cast.endswith(":input:0") and len(details.tensors[0].worst) == 3
    both = failing_details(load_result(str(csv)), limit=2, worst_count=3).tensors
    assert both[1].same_bytes_as == (f"{RES_ADD}:input:1",) and both[1].tensor_id == cast.replace("input", "output")


def test_moved_dump_folders_give_a_note_not_an_error(tmp_path):
    workspace = tmp_path / "ws"
    shutil.copytree(CNN, workspace)
    csv = sample_result_in(workspace, tmp_path / "out")
    shutil.rmtree(workspace / "npu" / "debug_0" / "dump")
    details = failing_details(load_result(str(csv)))
    assert "is gone: element errors need the run's dump folders" in details.note
    assert all(d.histogram is None and d.note == details.note for d in details.tensors)
    assert "Element errors not shown:" in render_page(build_report(str(csv), run_checks=False))


def sample_result_in(workspace, out):
    with contextlib.redirect_stdout(io.StringIO()):
        assert main(["-d", str(workspace), "ac", "-c", "-o", str(out), "--workers", "1"]) == 1
    (csv,) = Path(out).glob("result_*.csv")
    return csv


def test_without_summary_or_inputs_the_note_says_which(tmp_path):
    rows = [tensor(0, "a", cosine=0.5, status="FAIL")]
    bare = write_synthetic_result(tmp_path / "bare", rows, summary=False)
    assert "no summary.json beside the CSV" in failing_details(load_result(str(bare))).note
    ours = write_synthetic_result(tmp_path / "ours", rows)
    assert "names no NPU dump or reference folder" in failing_details(load_result(str(ours))).note
    summary = json.loads((tmp_path / "ours" / "summary.json").read_text())
    assert summary["inputs"] == {}


def test_nothing_failing_means_no_details_and_no_section(tmp_path):
    csv = write_synthetic_result(tmp_path / "out", [tensor(0, "a"), tensor(1, "b")])
    data = build_report(str(csv), run_checks=False)
    assert data.details.tensors == () and data.details.note == ""
    assert 'id="details"' not in render_page(data)


def test_report_modules_import_neither_tensorflow_nor_a_plotting_library():
    code = ("import sys, precision_tool.reports.html, precision_tool.reports.html.export, "
            "precision_tool.commands.report_command\n"
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('tensorflow', 'matplotlib', 'keras')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
