"""``compare``'s outputs under faults and concurrency (issue 14): a unique result name per run, even for runs in
parallel into one folder; ``summary.json`` written after the rows it names; temporary files of killed runs
removed, a live process's kept; unreadable input files make "all passed" exit 2, and are counted."""
import json
import os
import subprocess
import sys
import threading

import pytest


sys.path.insert(0, os.path.join(os.path.dirname(__file__), os.pardir, "comparison"))

from cmp_builders import chain_case, workspace_case
from precision_tool.cli import main
from precision_tool.comparison.result import TensorResult
from precision_tool.fileio import TEMP_PREFIX
from precision_tool.reports import result_outputs as result_outputs_module
from precision_tool.reports import result_store as result_store_module
from precision_tool.reports.result_csv import read_result_csv
from precision_tool.reports.result_outputs import remove_stale_temp_files, take_result_name
from precision_tool.reports.result_store import read_results_file

STAMP = "20260101000000"


def compare_argv(case, out, *extra):
    return ["compare", "-m", case.npu, "-g", case.ref, "-f", case.graph, "-out", str(out), *extra]


def result_names(folder, ext=".csv"):
    return sorted(name for name in os.listdir(folder) if name.startswith("result_") and name.endswith(ext))


# --------------------------------------------------------------------------------------------- unique names
def test_names_taken_at_once_by_many_threads_are_all_different(tmp_path):
    taken, barrier = [], threading.Barrier(16)

    def take():
        barrier.wait()
        taken.append(os.path.basename(take_result_name(str(tmp_path), STAMP)))

    threads = [threading.Thread(target=take) for _ in range(16)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    expected = [f"result_{STAMP}.csv"] + [f"result_{STAMP}_{n}.csv" for n in range(1, 16)]
    assert sorted(taken) == sorted(expected)
    # each name is held by its lossless file, holding only the claim (this process's PID) until the run writes
    # it; no CSV exists yet
    assert result_names(tmp_path, ".jsonl") == sorted(name[:-4] + ".jsonl" for name in expected)
    claim = f"precision_tool result name claimed by pid {os.getpid()}\n".encode()
    assert result_names(tmp_path) == [] and all((tmp_path / name).read_bytes() == claim
                                                for name in os.listdir(tmp_path))


def test_a_name_is_never_taken_by_an_empty_placeholder(tmp_path, monkeypatch):
    """The claim is written before the name exists (a temporary file hard-linked to it): a run killed while
    writing it leaves no placeholder that no later run could tell from a live run's."""
    def killed(*_args):
        raise KeyboardInterrupt

    monkeypatch.setattr(os, "write", killed)
    with pytest.raises(KeyboardInterrupt):
        take_result_name(str(tmp_path), STAMP)
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize("refusal", [PermissionError(1, "Operation not permitted"),  # vfat
                                     OSError(38, "Function not implemented"),  # FUSE mounts without links
                                     OSError(22, "Invalid argument"),  # FAT drives on Windows
                                     PermissionError(13, "Permission denied")])  # some network shares
def test_without_hard_links_the_name_is_still_taken_with_its_claim(tmp_path, monkeypatch, refusal):
    def no_links(*_args):
        raise refusal

    monkeypatch.setattr(os, "link", no_links)
    first, second = take_result_name(str(tmp_path), STAMP), take_result_name(str(tmp_path), STAMP)
    assert (os.path.basename(first), os.path.basename(second)) == (f"result_{STAMP}.csv", f"result_{STAMP}_1.csv")
    claim = f"precision_tool result name claimed by pid {os.getpid()}\n".encode()
    assert sorted(os.listdir(tmp_path)) == [f"result_{STAMP}.jsonl", f"result_{STAMP}_1.jsonl"]
    assert all((tmp_path / name).read_bytes() == claim for name in os.listdir(tmp_path))


def test_a_name_whose_csv_exists_already_is_skipped_and_given_back(tmp_path):
    (tmp_path / f"result_{STAMP}.csv").write_bytes(b"msaccucmp's\r\n")
    assert os.path.basename(take_result_name(str(tmp_path), STAMP)) == f"result_{STAMP}_1.csv"
    assert sorted(os.listdir(tmp_path)) == [f"result_{STAMP}.csv", f"result_{STAMP}_1.jsonl"]
    assert (tmp_path / f"result_{STAMP}.csv").read_bytes() == b"msaccucmp's\r\n"


def _compare_process(case, out):
    return subprocess.Popen([sys.executable, "-m", "precision_tool", *compare_argv(case, out, "--workers", "1")],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def test_two_compares_in_parallel_into_one_folder_keep_both_results(tmp_path):
    # different chains, so each result file can only hold its own run's rows (2 ops -> 4 rows, 3 ops -> 6 rows)
    small = chain_case(tmp_path / "small", names=["a0", "a1"])
    large = chain_case(tmp_path / "large", names=["b0", "b1", "b2"], break_at="b1")
    out = tmp_path / "out"
    runs = []
    for _ in range(3):  # three pairs started together: most land in the same second
        pair = [_compare_process(small, out), _compare_process(large, out)]
        runs += [(process, process.communicate(timeout=120)) for process in pair]
    assert [process.returncode for process, _ in runs] == [0, 1] * 3, [err for _, (_, err) in runs]
    names = result_names(out)
    assert len(names) == len(runs) and result_names(out, ".jsonl") == [name[:-4] + ".jsonl" for name in names]
    printed = sorted(line.split("Result: ", 1)[1] for _, (stdout, _) in runs for line in stdout.splitlines()
                     if line.startswith("Result: "))
    assert printed == sorted(str(out / name) for name in names)  # each run names its own, distinct file
    ops = []
    for name in names:
        rows = read_result_csv(out / name).rows
        header, lossless = read_results_file(str(out / (name[:-4] + ".jsonl")))
        assert header["result_csv"] == name
        assert [row.tensor_id for row in lossless.results] == [row.tensor_id for row in rows]
        ops.append(tuple(sorted({row.op_name for row in rows})))
    assert sorted(ops) == [("a0", "a1")] * 3 + [("b0", "b1", "b2")] * 3
    assert not [name for name in os.listdir(out) if name.startswith(TEMP_PREFIX)]


def test_the_workspace_default_gives_each_run_its_own_folder(tmp_path, capsys):
    case = workspace_case(tmp_path / "ws")
    for _ in range(3):
        assert main(["-d", case.root, "compare"]) == 0
    capsys.readouterr()
    root = tmp_path / "ws" / "temp" / "vector_compare"
    folders = sorted(os.listdir(root))
    assert len(folders) == 3
    for folder in folders:  # result_{ts}.csv inside {ts}[_n]: the folder's own stamp, msaccucmp's shape
        assert result_names(root / folder) == [f"result_{folder[:14]}.csv"]


# --------------------------------------------------------------------------------------------- order and kills
def test_a_run_killed_while_writing_the_csv_leaves_no_summary_naming_it(tmp_path, capsys, monkeypatch):
    case = chain_case(tmp_path / "case")
    out = tmp_path / "out"
    assert main(compare_argv(case, out)) == 0
    (earlier,) = result_names(out)
    summary_before = (out / "summary.json").read_text()

    write_text_atomic = result_outputs_module.write_text_atomic

    def killed_at_the_csv(path, text):
        if str(path).endswith(".csv"):
            raise KeyboardInterrupt
        return write_text_atomic(path, text)

    monkeypatch.setattr(result_outputs_module, "write_text_atomic", killed_at_the_csv)
    assert main(compare_argv(case, out)) == 130  # Ctrl-C while the CSV is written
    assert capsys.readouterr().err == "precision_tool: interrupted\n"
    assert result_names(out) == [earlier]  # the killed run's CSV is not there ...
    assert len(result_names(out, ".jsonl")) == 2  # (its lossless record, written first, is complete)
    assert (out / "summary.json").read_text() == summary_before  # ... and no summary names it
    assert json.loads(summary_before)["result_csv"] == earlier
    assert main(["vcs", "-f", str(out)]) == 0 and f"{out / earlier}:" in capsys.readouterr().out


def test_ctrl_c_while_the_lossless_file_is_written_leaves_the_folder_as_before(tmp_path, capsys, monkeypatch):
    """A Ctrl-C halfway through the lossless file (its temporary file open, some rows written): no placeholder, no
    temporary file, no CSV is left, so the name is free again."""
    case = chain_case(tmp_path / "case")
    out = tmp_path / "out"
    assert main(compare_argv(case, out)) == 0
    before = sorted(os.listdir(out))
    to_dict, rows = TensorResult.to_dict, []

    def row_to_dict(row):
        rows.append(row)
        if len(rows) == 3:
            raise KeyboardInterrupt
        return to_dict(row)

    monkeypatch.setattr(TensorResult, "to_dict", row_to_dict)
    assert main(compare_argv(case, out)) == 130
    assert capsys.readouterr().err == "precision_tool: interrupted\n"
    assert len(rows) == 3  # interrupted while writing, not before
    assert sorted(os.listdir(out)) == before


def test_a_lossless_file_that_cannot_be_written_gives_its_name_back(tmp_path, capsys, monkeypatch):
    case = chain_case(tmp_path / "case")
    out = tmp_path / "out"

    def full(*_args):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(result_store_module, "write_results_file", full)
    assert main(compare_argv(case, out)) == 2
    assert "cannot write results (No space left on device)" in capsys.readouterr().err
    assert os.listdir(out) == []  # the placeholder that claimed the name is gone


def test_stale_temp_files_of_dead_processes_are_removed_live_ones_kept(tmp_path):
    finished = subprocess.Popen([sys.executable, "-c", "pass"])
    finished.wait()
    dead = tmp_path / f"{TEMP_PREFIX}{finished.pid}-0a1b2c3d4e5f.tmp"
    live = tmp_path / f"{TEMP_PREFIX}{os.getpid()}-0a1b2c3d4e5f.tmp"
    group = tmp_path / f"{TEMP_PREFIX}0-0a1b2c3d4e5f.tmp"  # PID 0: kill(0) would mean our process group
    other = tmp_path / f"{TEMP_PREFIX}{finished.pid}-notes.txt"  # not a name atomic_write makes
    for path in (dead, live, group, other):
        path.write_bytes(b"half a file")
    assert remove_stale_temp_files(str(tmp_path)) == [str(dead)]
    assert sorted(os.listdir(tmp_path)) == sorted(path.name for path in (live, group, other))


def test_the_next_compare_cleans_its_output_folders(tmp_path, capsys):
    case = workspace_case(tmp_path / "ws")
    assert main(["-d", case.root, "compare"]) == 0
    root = tmp_path / "ws" / "temp" / "vector_compare"
    (first,) = os.listdir(root)
    finished = subprocess.Popen([sys.executable, "-c", "pass"])
    finished.wait()
    dead = root / first / f"{TEMP_PREFIX}{finished.pid}-abcdef012345.tmp"
    live = root / first / f"{TEMP_PREFIX}{os.getpid()}-abcdef012345.tmp"
    out_dead = tmp_path / "out" / dead.name
    out_dead.parent.mkdir()
    for path in (dead, live, out_dead):
        path.write_bytes(b"x")
    assert main(["-d", case.root, "compare"]) == 0  # into WORKSPACE/temp/vector_compare/{ts}_n
    assert not dead.exists() and live.exists()
    assert main(compare_argv(case, tmp_path / "out")) == 0
    assert not out_dead.exists()
    capsys.readouterr()


# --------------------------------------------------------------------------------------------- exit codes
def _unreadable_dump(case, op):
    """Overwrite ``op``'s dump file with 20 bytes that are no dump; returns its path."""
    (name,) = [name for name in os.listdir(case.npu) if f".{op}." in name]
    path = os.path.join(case.npu, name)
    with open(path, "wb") as handle:
        handle.write(b"\xff" * 20)
    return path


def test_an_unreadable_dump_turns_all_passed_into_exit_2_and_is_counted(tmp_path, capsys):
    case = chain_case(tmp_path / "case")  # 4 ops x (input 0, output 0) = 8 tensors, all pass
    broken = _unreadable_dump(case, "op3")
    assert main(compare_argv(case, tmp_path / "out")) == 2
    out = capsys.readouterr().out
    compared = 4 * 2 - 2  # op3's two tensors are lost with its dump file
    assert (f"Compared {compared} tensors (cosine >= 0.99): {compared} passed, 0 failed; 1 input file could not "
            "be read\n") in out
    assert f"  unreadable, not compared: {broken}: " in out
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["exit_code"] == 2 and summary["counts"]["unusable_inputs"] == 1
    assert summary["counts"]["compared"] == compared and summary["counts"]["failed"] == 0
    assert [path for path, _ in summary["coverage"]["unreadable"]] == [broken]
    assert main(["vcs", "-f", str(tmp_path / "out")]) == 2  # read back, the verdict is the same
    vcs_out = capsys.readouterr().out
    assert f"1 input file could not be read and was not compared; first: {broken}: " in vcs_out
    assert vcs_out.rstrip().endswith("1 input file could not be read")
    assert main(["report", "-f", str(tmp_path / "out"), "-o", str(tmp_path / "page.html"), "--no-checks"]) == 2
    assert capsys.readouterr().out.rstrip().endswith("\n1 input file could not be read")


def test_an_unreadable_reference_file_is_unusable_input_too(tmp_path, capsys):
    case = chain_case(tmp_path / "case")
    (name,) = [name for name in os.listdir(case.ref) if name.startswith("op3.")]
    reference = os.path.join(case.ref, name)
    with open(reference, "rb") as handle:
        head = handle.read(30)  # the .npy magic and part of its header: truncated
    with open(reference, "wb") as handle:
        handle.write(head)
    assert main(compare_argv(case, tmp_path / "out")) == 2
    out = capsys.readouterr().out
    compared = 4 * 2 - 1  # op3's output has no reference left; its input is paired with op2's output, still readable
    assert (f"Compared {compared} tensors (cosine >= 0.99): {compared} passed, 0 failed; 1 input file could not "
            "be read\n") in out
    assert f"  unreadable, not compared: {reference}: " in out
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["exit_code"] == 2 and summary["counts"]["unusable_inputs"] == 1


def test_a_failing_tensor_keeps_exit_1_and_the_summary_still_counts_unreadable_inputs(tmp_path, capsys):
    case = chain_case(tmp_path / "case", break_at="op1")
    _unreadable_dump(case, "op3")
    assert main(compare_argv(case, tmp_path / "out")) == 1
    out = capsys.readouterr().out
    assert "; 1 input file could not be read\n" in out and "\nexit 1: a check found a problem (see above); " in out
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["exit_code"] == 1 and summary["counts"]["unusable_inputs"] == 1
    assert main(["vcs", "-f", str(tmp_path / "out")]) == 1
    failed = summary["counts"]["failed"]
    assert failed >= 1 and capsys.readouterr().out.rstrip().endswith(
        f"\n{failed} failing; 1 input file could not be read")


def test_every_input_read_and_passing_is_still_exit_0(tmp_path, capsys):
    case = chain_case(tmp_path / "case")
    assert main(compare_argv(case, tmp_path / "out")) == 0
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["exit_code"] == 0 and summary["counts"]["unusable_inputs"] == 0
    assert "could not be read" not in capsys.readouterr().out


def test_vcs_on_a_result_where_nothing_was_compared_exits_2(tmp_path, capsys):
    path = tmp_path / "result_20260101000000.csv"
    path.write_text("Index,OpType,NPUDump,DataType,Address,GroundTruth,DataType,TensorIndex,Shape,"
                    "CosineSimilarity,CompareFailReason\r\n"
                    "1,Add,op0,float16,0,*,NaN,op0:output:0,[4],NaN,\r\n", encoding="utf-8")
    assert main(["vcs", "-f", str(path)]) == 2
    assert capsys.readouterr().out.rstrip().endswith("nothing was compared")


def test_compare_and_vc_outputs_never_go_into_the_workspace_inputs(tmp_path, capsys):
    """-o and --junit inside tf/tf_debug or npu/... are refused before anything is written."""
    import shutil

    from precision_tool.cli import main

    workspace = tmp_path / "ws"
    shutil.copytree(os.path.join(os.path.dirname(__file__), "..", "..", "sample_dumps", "cnn_workspace"), workspace)
    def inputs():  # the workspace without temp/, the tool's own output area
        return sorted(str(p) for p in workspace.rglob("*") if not p.relative_to(workspace).parts[0] == "temp")

    before = inputs()
    npu, ref = str(workspace / "npu" / "debug_0" / "dump"), str(workspace / "tf" / "dump")
    for argv in (["compare", "-m", npu, "-g", ref, "-o", str(workspace / "tf" / "tf_debug" / "out")],
                 ["compare", "-m", npu, "-g", ref, "--junit", str(workspace / "fusion" / "j.xml")],
                 ["vc", "-lt", npu, "-rt", ref, "--junit", str(workspace / "tf" / "graph" / "j.xml")]):
        assert main(["-d", str(workspace), *argv]) == 2, argv
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "output folder would be inside the input" in err, err
    assert inputs() == before
