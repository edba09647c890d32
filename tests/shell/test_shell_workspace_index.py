"""The completion index: nothing read until asked, names only, refreshed when the graph changes."""
import os

from inspect_builders import build_graph, write_inspect_workspace

from precision_tool.commands.arg_hints import GRAPH_NAME, OP_NAME, OP_TYPE, PATH, TENSOR
from precision_tool.commands.command_registry import Context
from precision_tool.alignment.workspace_lookup import WorkspaceLookup
from precision_tool.formats.ge_graph import Graph, GraphModel, OpNode
from precision_tool.formats.ge_io import write_ge_graph_text
from precision_tool.shell.app import Shell
from precision_tool.shell.workspace_index import WorkspaceIndex


class CountingLookup(WorkspaceLookup):
    def __init__(self, root):
        super().__init__(root)
        self.graph_reads = 0

    def graph_model(self, graph_name=None, required=True):
        self.graph_reads += 1
        return super().graph_model(graph_name, required)


def test_nothing_is_read_at_start(tmp_path):
    calls = []
    index = WorkspaceIndex(lambda: calls.append(1))
    Shell(Context(data_dir=str(tmp_path / "not-there")))
    assert calls == [] and index is not None


def test_values_by_hint(inspect_workspace):
    index = WorkspaceIndex(lambda: WorkspaceLookup(inspect_workspace))
    assert index.values(OP_NAME) == ["conv1/Conv2D", "conv1/weight", "input", "out/Add", "relu1/Relu"]
    assert index.values(OP_TYPE) == ["Add", "Const", "Conv2D", "Data", "Relu"]
    assert index.values(GRAPH_NAME) == ["ge_default_1"]
    tensors = index.values(TENSOR)
    assert "conv1/weight" not in tensors and "out/Add" in tensors          # only dumped ops
    assert "Add.out_Add.4.1.1700000000000002" in tensors and "out_Add.0.1700000000000000.npy" in tensors
    assert index.values(PATH) == []                                       # paths come from the file system
    assert index.tensor_selectors("conv1/Conv2D") == ["conv1/Conv2D:input:0", "conv1/Conv2D:input:1",
                                                      "conv1/Conv2D:output:0"]
    assert index.tensor_selectors("nope") == []


def test_lists_are_cached_and_rebuilt_when_the_graph_changes(tmp_path):
    root = write_inspect_workspace(tmp_path / "ws")
    lookup = CountingLookup(root)
    index = WorkspaceIndex(lambda: lookup)
    assert "new/Op" not in index.values(OP_NAME)
    reads = lookup.graph_reads
    index.values(OP_NAME)
    assert lookup.graph_reads == reads  # served from the cache
    graph_file = os.path.join(root, "npu", "debug_0", "graph", "ge_proto_00000001_Build.txt")
    old = build_graph().root
    write_ge_graph_text(GraphModel((Graph(old.name, old.ops + (OpNode("new/Op", "Relu", id=9),)),)), graph_file)
    os.utime(graph_file, ns=(1, os.stat(graph_file).st_mtime_ns + 10**9))
    assert "new/Op" in index.values(OP_NAME)


def test_unreadable_workspace_completes_nothing(tmp_path):
    root = write_inspect_workspace(tmp_path / "ws")
    graph_file = os.path.join(root, "npu", "debug_0", "graph", "ge_proto_00000001_Build.txt")
    with open(graph_file, "w") as out:
        out.write("graph { op { name: ")
    index = WorkspaceIndex(lambda: WorkspaceLookup(root))
    assert index.values(OP_NAME) == [] and index.values(TENSOR) == []
