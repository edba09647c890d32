"""``ls``: counts per type without a filter, regex/substring filters on name, type, pass and kernel."""
import pytest
from inspect_builders import write_inspect_workspace

from precision_tool.cli import main
from precision_tool.commands import build_registry
from precision_tool.commands.list_ops import pattern_matcher
from precision_tool.commands.command_registry import Context
from precision_tool.errors import WorkspaceError


@pytest.fixture(scope="module")
def workspace(tmp_path_factory):
    return write_inspect_workspace(tmp_path_factory.mktemp("ws"))


def run(workspace, *argv):
    return build_registry().dispatch(["ls", *argv], Context(data_dir=workspace))


def test_no_filter_counts_ops_per_type(workspace):
    report = run(workspace)
    counts = {row[0]: row[1:] for row in report.blocks[0].rows}
    assert counts == {"Add": [1, 1, 0], "Const": [1, 0, 0], "Conv2D": [1, 1, 1], "Data": [1, 0, 0],
                      "Relu": [1, 1, 0]}
    assert report.data["counts"]["Conv2D"] == 1
    assert report.title.startswith("5 ops of graph ge_default_1")


@pytest.mark.parametrize("argv, expected", [
    (["-n", "conv"], ["conv1/weight", "conv1/Conv2D"]),          # substring, any case
    (["-n", "^(relu|out)"], ["relu1/Relu", "out/Add"]),           # regex
    (["-t", "^conv2d$"], ["conv1/Conv2D"]),
    (["-f", "Biasadd"], ["conv1/Conv2D"]),
    (["-k", "te_add"], ["out/Add"]),
    (["-n", "conv", "-t", "Const"], ["conv1/weight"]),            # filters combine with AND
    (["-n", "nothing-like-this"], []),
])
def test_filters(workspace, argv, expected):
    report = run(workspace, *argv)
    assert [op["name"] for op in report.data["ops"]] == expected


def test_listing_says_which_ops_were_dumped(workspace):
    rows = {row[1]: row for row in run(workspace, "-n", "conv").blocks[0].rows}
    assert rows["conv1/Conv2D"][3:] == ["ConvBiasaddFusionPass", "te_conv2d_abc", "yes"]
    assert rows["conv1/weight"][5] == "-"


def test_invalid_regex_is_taken_literally():
    assert pattern_matcher("a[")("xxa[b") and not pattern_matcher("a[")("ab")


def test_workspace_without_graph_lists_dumped_ops(tmp_path):
    import shutil
    root = write_inspect_workspace(tmp_path / "ws")
    shutil.rmtree(tmp_path / "ws" / "npu" / "debug_0" / "graph")
    report = run(root, "-t", "relu")
    assert report.blocks[0].rows == [["relu1_Relu", "Relu", 1]]
    with pytest.raises(WorkspaceError, match="no GE Build graph"):
        run(root, "-k", "te_")


def test_missing_workspace_is_one_line_error(tmp_path, capsys):
    assert main(["-d", str(tmp_path / "nope"), "ls"]) == 2
    assert capsys.readouterr().err.strip() == (f"precision_tool: error: {tmp_path / 'nope'}: no such workspace "
                                               "folder (give the workspace folder with -d DIR or $PRECISION_TOOL_DATA)")
