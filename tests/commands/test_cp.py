"""``cp``: verdict, metrics, top errors and values side by side, all forms of tensor arguments."""
import numpy as np
import pytest
from inspect_builders import PLANTED_OP, SHAPE, write_inspect_workspace

from precision_tool.cli import main
from precision_tool.commands import build_registry
from precision_tool.commands.command_registry import Context
from precision_tool.errors import UsageError


@pytest.fixture(scope="module")
def workspace(tmp_path_factory):
    return write_inspect_workspace(tmp_path_factory.mktemp("ws"))


def run(workspace, *argv):
    return build_registry().dispatch(["cp", *argv], Context(data_dir=workspace))


def test_planted_scale_error_passes_as_in_compare_and_fails_the_allclose_gate_on_request(workspace):
    # the planted error is x1.5: cosine 1.0, so compare passes it (allclose reported, not judged) and so does cp
    # every element of the [1, 4, 4, 3] output is off by half its value (the smallest is 0.048: none is near 0)
    elements = int(np.prod(SHAPE))
    passing = run(workspace, f"{PLANTED_OP}:output:0", f"{PLANTED_OP}:0", "-p", "0")
    assert passing.exit_code == 0 and passing.data["status"] == "PASS" and passing.data["mismatch_count"] == elements
    assert any(note.startswith("allclose 0.0000% is below the float16 default of 99.9000%: reported, not failed")
               for note in passing.data["notes"])
    report = run(workspace, f"{PLANTED_OP}:output:0", f"{PLANTED_OP}:0", "-p", "3", "-al", "1e-3", "-rl", "1e-3")
    assert report.exit_code == 1 and report.data["status"] == "FAIL"
    assert report.data["mismatch_count"] == elements
    worst = report.data["worst"]
    assert len(worst) == 3 and worst[0]["abs_error"] >= worst[1]["abs_error"] >= worst[2]["abs_error"]
    assert worst[0]["left"] == pytest.approx(1.5 * worst[0]["right"], rel=2e-3)
    assert float(report.data["metrics"]["MaxRelativeError"]) == pytest.approx(0.5, abs=2e-3)
    first = report.data["first_values"]
    assert [row["index"] for row in first] == [[0, 0, 0, 0], [0, 0, 0, 1], [0, 0, 0, 2]]


def test_matching_pair_passes(workspace):
    report = run(workspace, "relu1/Relu:output:0", "relu1/Relu:0")
    assert report.exit_code == 0 and report.status == "passed"
    assert report.data["cosine"] == pytest.approx(1.0, abs=1e-6)


def test_tolerances_from_flags(workspace):
    loose = run(workspace, f"{PLANTED_OP}:output:0", f"{PLANTED_OP}:0", "-al", "10", "-rl", "0")
    assert loose.data["atol"] == 10.0 and loose.data["mismatch_count"] == 0 and loose.exit_code == 0


def test_whole_op_means_output_zero_with_a_note(workspace):
    report = run(workspace, "relu1/Relu", "relu1/Relu:0")
    assert report.data["left"] == "relu1/Relu:output:0"
    assert any("compared its output 0" in note for note in report.data["notes"])


def test_count_mismatch_is_reported_not_compared(tmp_path, workspace):
    np.save(tmp_path / "a.npy", np.ones(5, dtype=np.float32))
    np.save(tmp_path / "b.npy", np.ones(6, dtype=np.float32))
    report = run(workspace, str(tmp_path / "a.npy"), str(tmp_path / "b.npy"))
    assert report.data["status"] == "COUNT_MISMATCH" and report.status == "failed (COUNT_MISMATCH)"
    assert report.data["worst"] == [] and len(report.data["first_values"]) == 5


def test_bad_flags_are_usage_errors(workspace, capsys):
    with pytest.raises(UsageError, match=r"argument -p/--print: invalid count: '-1' \(give a whole number of 0"):
        run(workspace, "relu1/Relu", "relu1/Relu:0", "-p", "-1")
    with pytest.raises(UsageError, match="argument -al/--atol: invalid number: 'nan'"):
        run(workspace, "relu1/Relu", "relu1/Relu:0", "-al", "nan")
    with pytest.raises(UsageError, match=r"argument -c/--cosine/--cosine-threshold: invalid cosine threshold: '5'"):
        run(workspace, "relu1/Relu", "relu1/Relu:0", "-c", "5")  # was taken as a gate no tensor can pass
    assert main(["-d", workspace, "cp", "relu1/Relu"]) == 2
    assert "the following arguments are required: right" in capsys.readouterr().err
