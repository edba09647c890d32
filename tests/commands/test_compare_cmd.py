"""``compare`` and ``vc``: exit codes for CI, outputs where users and ``vcs`` expect them, inputs never written."""
import json
import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), os.pardir, "comparison"))

from cmp_builders import chain_case, tree_listing, workspace_case
from precision_tool.cli import main
from precision_tool.reports.result_csv import read_result_csv

REPO = Path(__file__).resolve().parents[2]


def compare(case, out, *extra):
    return main(["compare", "-m", case.npu, "-g", case.ref, "-f", case.graph, "-out", str(out), *extra])


def only_csv(folder):
    found = [name for name in os.listdir(folder) if name.startswith("result_") and name.endswith(".csv")]
    assert len(found) == 1, found
    return os.path.join(folder, found[0])


def test_clean_run_exits_0_and_writes_csv_summary_and_junit(tmp_path, capsys):
    names = ["op0", "op1", "op2", "op3"]
    case = chain_case(tmp_path / "case", names, json_graph=True, graph_layout="file")
    assert compare(case, tmp_path / "out", "--junit", str(tmp_path / "ci" / "junit.xml"), "--workers", "2") == 0
    out = capsys.readouterr().out
    tensors = 2 * len(names)  # each op's input 0 and output 0
    assert f"Compared {tensors} tensors (cosine >= 0.99): {tensors} passed, 0 failed" in out
    table = read_result_csv(only_csv(tmp_path / "out"))
    assert len(table.rows) == tensors and all(row.status.verdict == "pass" for row in table.rows)
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["exit_code"] == 0 and summary["result_csv"] == os.path.basename(only_csv(tmp_path / "out"))
    assert (tmp_path / "ci" / "junit.xml").is_file()


def _never_compared(monkeypatch):
    from precision_tool.comparison import engine

    monkeypatch.setattr(engine, "compare_alignment", lambda *a, **k: pytest.fail("compared before the outputs were "
                                                                                  "checked"))


def test_a_junit_path_that_is_a_folder_is_refused_before_comparing(tmp_path, capsys, monkeypatch):
    case = chain_case(tmp_path / "case")
    (tmp_path / "ci").mkdir()
    _never_compared(monkeypatch)
    assert compare(case, tmp_path / "out", "--junit", str(tmp_path / "ci")) == 2
    assert capsys.readouterr().err == (f"precision_tool: error: {tmp_path / 'ci'}: is a folder (--junit takes the "
                                       f"path of the XML file to write)\n")
    assert not (tmp_path / "out").exists() or os.listdir(tmp_path / "out") == []


def test_a_read_only_output_folder_is_refused_before_comparing(tmp_path, capsys, monkeypatch):
    """(As root, permissions do not stop a write, so the read-only answer is given here by os.access; a read-only
    mount gives it to root too.)"""
    case = chain_case(tmp_path / "case")
    out = tmp_path / "out"
    out.mkdir()
    access = os.access
    monkeypatch.setattr(os, "access", lambda path, mode, **k: False if os.path.realpath(path) == str(out.resolve())
                        else access(path, mode, **k))
    _never_compared(monkeypatch)
    assert compare(case, out) == 2
    assert capsys.readouterr().err == (f"precision_tool: error: {out}: cannot write into {out.resolve()} (read-only) "
                                       f"(choose another output folder)\n")
    assert os.listdir(out) == []


def test_a_junit_report_that_cannot_be_written_is_named(tmp_path, capsys, monkeypatch):
    from precision_tool.reports import junit

    def read_only(path, _result):
        raise OSError(30, "Read-only file system", path)

    monkeypatch.setattr(junit, "write_junit", read_only)
    case = chain_case(tmp_path / "case")
    assert compare(case, tmp_path / "out", "--junit", str(tmp_path / "ci" / "junit.xml")) == 2
    assert capsys.readouterr().err == (f"precision_tool: error: {tmp_path / 'ci' / 'junit.xml'}: cannot write the "
                                       f"JUnit report (Read-only file system)\n")


def test_an_empty_input_folder_is_named_as_the_reason_nothing_was_compared(tmp_path, capsys):
    case = chain_case(tmp_path / "case")
    empty = tmp_path / "empty"
    empty.mkdir()
    assert main(["compare", "-m", str(empty), "-g", case.ref, "-f", case.graph, "-out", str(tmp_path / "a")]) == 2
    out = capsys.readouterr().out
    assert out.startswith(f"Nothing could be compared: 0 NPU tensors, none aligned: no dump file in {empty}\n")
    assert "fused into another op" not in out  # every reference is left over because there is no NPU tensor
    for mode, cause in (("auto", f"neither reference .npy files ({{op}}.{{output}}.{{timestamp}}.npy) nor dump "
                                 f"files in {empty}"),
                        ("npu_vs_tf", f"no reference .npy file in {empty} (named "
                                      f"{{op}}.{{output}}.{{timestamp}}.npy)")):
        assert main(["compare", "-m", case.npu, "-g", str(empty), "-f", case.graph, "--mode", mode, "-out",
                     str(tmp_path / mode)]) == 2
        assert capsys.readouterr().out.startswith(f"Nothing could be compared: 8 NPU tensors, none aligned: {cause}\n")


def test_a_failing_tensor_exits_1_and_names_the_first_divergence(tmp_path, capsys):
    case = chain_case(tmp_path / "case", break_at="op1")
    assert compare(case, tmp_path / "out", "-c", "0.99") == 1
    out = capsys.readouterr().out
    assert "First divergence: op1 (outputs [0] fail on good inputs)" in out
    assert main(["--json", "compare", "-m", case.npu, "-g", case.ref, "-f", case.graph, "-out",
                 str(tmp_path / "out2"), "--cosine", "-1"]) == 1
    data = json.loads(capsys.readouterr().out)
    # the gate is the user's: nothing fails at -1; the judgment is not -- op1's error jumps above its inputs', and a
    # culprit found by any method exits 1 (comparison.judgment.exit_code)
    assert data["exit_code"] == 1 and data["data"]["cosine_threshold"] == -1.0
    assert data["data"]["counts"]["failed"] == 0
    assert data["data"]["judgment"]["culprit"]["op_name"] == "op1"
    assert data["data"]["judgment"]["culprit"]["evidence"] == "local error (error jump)"


def test_missing_dumps_and_references_are_coverage_not_failure(tmp_path, capsys):
    case = chain_case(tmp_path / "case", names=["op0", "op1", "op2", "op3"], no_dump=["op2"], no_ref=["op0"])
    assert compare(case, tmp_path / "out") == 0
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["coverage"]["graph_ops_without_dump"] == ["op2"]
    assert [item[0] for item in summary["coverage"]["unaligned"]] == ["op0:output:0", "op1:input:0"]
    rows = {row.tensor_id or row.op_name: row for row in read_result_csv(only_csv(tmp_path / "out")).rows}
    assert rows["op2"].status == "NO_DUMP" and rows["op0:output:0"].status == "NOT_COMPARED"
    assert "1 graph op without a dump file" in capsys.readouterr().out


def test_an_unreadable_dump_file_is_unreadable_not_missing(tmp_path, capsys):
    """The op's file is there: it is reported once, as unreadable -- not also as a graph op without a dump file,
    nor counted among the NPU tensors without a reference."""
    case = chain_case(tmp_path / "case", names=["op0", "op1", "op2", "op3"])
    (damaged,) = [name for name in os.listdir(case.npu) if ".op2." in name]
    with open(os.path.join(case.npu, damaged), "r+b") as handle:
        handle.truncate(20)
    assert compare(case, tmp_path / "out") == 2
    out = capsys.readouterr().out
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["coverage"]["graph_ops_without_dump"] == []
    assert [path for path, _ in summary["coverage"]["unreadable"]] == [os.path.join(case.npu, damaged)]
    statuses = [row.status for row in read_result_csv(only_csv(tmp_path / "out")).rows]
    assert "NO_DUMP" not in statuses and statuses.count("NOT_COMPARED") == 1
    assert f"unreadable, not compared: {os.path.join(case.npu, damaged)}: " in out
    assert "without a dump file" not in out and "have no reference" not in out
    assert summary["counts"]["not_compared"] == 0 and summary["counts"]["unusable_inputs"] == 1
    assert main(["vcs", "-f", str(tmp_path / "out")]) == 2
    shown = capsys.readouterr().out
    assert "were not compared" not in shown and "could not be read" in shown


def test_a_threshold_finer_than_six_digits_is_shown_as_given(tmp_path, capsys):
    """-c 0.9999999 was shown as 'cosine 1', a gate no cosine can pass, in the title and every reason."""
    case = chain_case(tmp_path / "case", break_at="op1")
    assert compare(case, tmp_path / "out", "-c", "0.9999999") == 1
    out = capsys.readouterr().out
    assert "(cosine >= 0.9999999)" in out and "< 0.9999999" in out and "< 1\n" not in out
    assert main(["vcs", "-f", str(tmp_path / "out"), "-c", "0.9999999"]) == 1
    assert "below cosine 0.9999999 or failing" in capsys.readouterr().out


def test_unusable_input_exits_2(tmp_path, capsys):
    case = chain_case(tmp_path / "case")
    assert main(["compare", "-m", str(tmp_path / "nope"), "-g", case.ref, "-out", str(tmp_path / "o")]) == 2
    assert "nope: no such folder" in capsys.readouterr().err
    bad_graph = tmp_path / "bad.txt"
    bad_graph.write_text("graph { op { name: \n")
    assert main(["compare", "-m", case.npu, "-g", case.ref, "-f", str(bad_graph), "-out", str(tmp_path / "o")]) == 2
    assert capsys.readouterr().err.startswith(f"precision_tool: error: {bad_graph}")
    unrelated = chain_case(tmp_path / "other", names=["a0", "a1"])
    assert main(["compare", "-m", case.npu, "-g", unrelated.ref, "-out", str(tmp_path / "o3")]) == 2
    assert "Nothing could be compared: 8 NPU tensors, none aligned" in capsys.readouterr().out
    assert not (tmp_path / "o").exists()  # nothing written when the inputs are unusable


def test_output_inside_an_input_is_refused_before_anything_is_written(tmp_path, capsys):
    case = chain_case(tmp_path / "case")
    before = tree_listing(tmp_path / "case")
    assert compare(case, os.path.join(case.ref, "out")) == 2
    assert "output folder would be inside the input" in capsys.readouterr().err
    assert tree_listing(tmp_path / "case") == before


def test_workspace_defaults_write_under_temp_vector_compare_and_leave_inputs_alone(tmp_path, capsys):
    case = workspace_case(tmp_path / "ws", break_at="op2")
    before = {folder: tree_listing(folder) for folder in (case.npu, case.ref, case.graph)}
    assert main(["-d", case.root, "compare"]) == 1
    results = tmp_path / "ws" / "temp" / "vector_compare"
    (stamp,) = os.listdir(results)
    assert sorted(os.listdir(results / stamp)) == [f"result_{stamp}.csv", f"result_{stamp}.jsonl", "summary.json"]
    assert {folder: tree_listing(folder) for folder in before} == before
    # vc writes beside it, in its own timestamped folder, even within the same second
    assert main(["-d", case.root, "vc", "-lt", case.npu, "-rt", case.ref, "-g", case.graph]) == 1
    assert len(os.listdir(results)) == 2
    capsys.readouterr()


def test_formula_like_op_names_go_through_end_to_end(tmp_path, capsys):
    case = chain_case(tmp_path / "case", names=["-neg/Add", "=1+1", "@at", "+plus"], break_at="=1+1")
    assert compare(case, tmp_path / "out") == 1
    table = read_result_csv(only_csv(tmp_path / "out"))
    assert [row.op_name for row in table.rows][::2] == ["-neg/Add", "=1+1", "@at", "+plus"]
    assert main(["vcs", "-f", str(tmp_path / "out")]) == 1
    assert "=1+1:output:0" in capsys.readouterr().out


def test_every_option_has_the_msaccucmp_and_long_spelling(tmp_path):
    case = chain_case(tmp_path / "case", graph_layout="file")
    assert main(["compare", "--npu", case.npu, "--golden", case.ref, "--graph", case.graph, "--output",
                 str(tmp_path / "a"), "--cosine-threshold", "0.9"]) == 0
    assert main(["compare", "-m", case.npu, "--reference", case.ref, "-f", case.graph, "-o", str(tmp_path / "b"),
                 "--mode", "npu_vs_tf", "--workers", "1"]) == 0
    assert main(["compare", "-m", case.npu, "-g", case.ref, "-out", str(tmp_path / "c"), "-c", "2"]) == 2  # bad -c


def _sample_workspace(name):
    root = REPO / "sample_dumps" / name
    manifest = root / "manifest.json"
    if not manifest.is_file():
        pytest.skip(f"sample_dumps/{name} not generated (make sample-dumps)")
    return root, json.loads(manifest.read_text())


def test_planted_op_of_the_sample_workspace_is_the_first_divergence(tmp_path, capsys):
    root, manifest = _sample_workspace("cnn_workspace")
    planted = [item["npu_op"]["debug_0"] for item in manifest.get("perturbations", [])]
    if not planted:
        pytest.skip("the sample workspace plants nothing")
    run = root / "npu" / "debug_0"
    assert main(["compare", "-m", str(run / "dump"), "-g", str(root / "tf" / "dump"), "-f", str(run / "graph"),
                 "-out", str(tmp_path / "out")]) == 1
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["first_divergence"]["op_name"] == planted[0]
    assert summary["failing"][0]["tensor_id"].startswith(planted[0] + ":output:")
    capsys.readouterr()


def test_npu_vs_npu_writes_msaccucmps_second_address_column(tmp_path, capsys):
    fused, unfused = chain_case(tmp_path / "a"), chain_case(tmp_path / "b", break_at="op2")
    assert main(["compare", "-m", fused.npu, "-g", unfused.npu, "-f", fused.graph, "-rg", unfused.graph,
                 "-out", str(tmp_path / "out")]) == 1
    csv_path = only_csv(tmp_path / "out")
    with open(csv_path, newline="") as handle:
        assert handle.readline().startswith("Index,OpType,NPUDump,DataType,Address,GroundTruth,DataType,Address,"
                                            "TensorIndex,Shape,")
    table = read_result_csv(csv_path)
    assert table.npu_vs_npu and table.rows[0].ref_address == "0" and table.rows[0].ref_dtype == "float16"
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["mode"] == "npu_vs_npu" and summary["first_divergence"]["op_name"] == "op2"
    capsys.readouterr()
