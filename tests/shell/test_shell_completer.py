"""The completer as a plain object, driven with prompt_toolkit ``Document`` objects (pgcli's way)."""

import pytest
from prompt_toolkit.completion import CompleteEvent
from prompt_toolkit.document import Document

from precision_tool.commands import build_registry
from precision_tool.alignment.workspace_lookup import WorkspaceLookup
from precision_tool.shell.completer import PrecisionToolCompleter, argument_slot, match_values
from precision_tool.shell.workspace_index import WorkspaceIndex


@pytest.fixture(scope="module")
def completer(inspect_workspace):
    lookup = WorkspaceLookup(inspect_workspace)
    return PrecisionToolCompleter(build_registry(), WorkspaceIndex(lambda: lookup))


def complete(completer, text):
    """``[(text, start_position)]`` for the cursor at the end of ``text``."""
    found = completer.get_completions(Document(text, len(text)), CompleteEvent(completion_requested=True))
    return [(c.text, c.start_position) for c in found]


def texts(completer, text):
    return [t for t, _ in complete(completer, text)]


def test_command_names_and_shell_words(completer):
    assert texts(completer, "") == sorted(build_registry().names()) + ["exit", "quit"]
    assert texts(completer, "n") == ["ni", "node_info"]
    assert complete(completer, "  pt") == [("pt", -2)]


def test_help_completes_command_names_only(completer):
    assert texts(completer, "help c") == [n for n in build_registry().names() if n.startswith("c")]
    assert "cp" in texts(completer, "help c") and "exit" not in texts(completer, "help e")
    assert texts(completer, "help cp ") == []


def test_flags_of_the_command_being_typed(completer):
    assert texts(completer, "ls -") == ["--device", "--fusion-pass", "--graph", "--help", "--kernel", "--name",
                                        "--run", "--step", "--type", "-f", "-g", "-h", "-k", "-n", "-r", "-t"]
    assert texts(completer, "ni out/Add -") and "-a" in texts(completer, "ni out/Add -")
    assert texts(completer, "cp a b -a") == ["-al"]


def test_op_names_for_ni_and_ls_dash_n(completer):
    assert complete(completer, "ni relu") == [("relu1/Relu", -4)]
    assert texts(completer, "ni conv1/") == ["conv1/Conv2D", "conv1/weight"]
    assert texts(completer, "ls -n out") == ["out/Add"]
    assert texts(completer, "ni -n out") == ["out/Add"]
    assert texts(completer, "ni ") == ["conv1/Conv2D", "conv1/weight", "input", "out/Add", "relu1/Relu"]


def test_substring_match_when_no_prefix_matches(completer):
    assert complete(completer, "ni RELU") == [("relu1/Relu", -4)]
    assert texts(completer, "ni /") == ["conv1/Conv2D", "conv1/weight", "out/Add", "relu1/Relu"]
    assert match_values("Add", ["out/Add", "Add2"]) == ["Add2"]


def test_types_passes_kernels(completer):
    assert texts(completer, "ls -t C") == ["Const", "Conv2D"]
    assert texts(completer, "ls -f ") == ["ConvBiasaddFusionPass"]
    assert texts(completer, "ls -k te_a") == ["te_add_123"]


def test_no_value_completion_after_a_value_taken_or_a_flag_without_value(completer):
    assert texts(completer, "ni out/Add ") == []           # the only positional is filled
    assert texts(completer, "ni -a ") != []                # -a takes no value: NAME is still open
    assert texts(completer, "ni -s ") == []                # DEPTH: nothing to offer


def test_tensors_for_pt_and_cp(completer, inspect_workspace):
    found = texts(completer, "pt relu")
    assert found[0] == "relu1/Relu" and "relu1_Relu.0.1700000000000000.npy" in found
    assert texts(completer, "pt out/Add:") == ["out/Add:input:0", "out/Add:input:1", "out/Add:output:0"]
    assert texts(completer, "cp out/Add:output:0 out/Add:o") == ["out/Add:output:0"]
    assert texts(completer, "pt Relu.") == ["Relu.relu1_Relu.3.1.1700000000000001"]


def test_paths_for_run_and_path_like_tensors(completer, inspect_workspace, tmp_path, monkeypatch):
    (tmp_path / "notes.txt").write_text("x")
    (tmp_path / "my file.npy").write_text("x")
    monkeypatch.chdir(tmp_path)
    assert texts(completer, "run cat ./no") == ["./notes.txt"]
    assert texts(completer, "pt ./my") == ["'./my file.npy'"]


def test_unknown_command_and_unterminated_quote_complete_nothing_without_error(completer):
    assert texts(completer, "nosuch -") == []
    assert complete(completer, "ni 'rel") == [("relu1/Relu", -4)]  # the quote is replaced too


def test_argument_slot():
    parser = build_registry().resolve("pt").build_parser()

    def slot(done, current):
        is_flag, action = argument_slot(parser, done, current)
        return is_flag, action.dest if action is not None else None
    assert slot([], "") == (False, "tensor")
    assert slot(["X"], "") == (False, "slice")
    assert slot(["-n"], "") == (False, "name_flag")
    assert slot(["-s"], "-") == (True, None)
    assert slot(["-r"], "-") == (False, "run")       # -r is waiting for its value
    assert slot(["X", "[0]"], "") == (False, None)   # every positional filled


def test_untagged_arguments_offer_choices_paths_or_nothing(completer, tmp_path, monkeypatch):
    (tmp_path / "dump_dir").mkdir()
    monkeypatch.chdir(tmp_path)
    assert texts(completer, "vc --mode npu_vs_") == ["npu_vs_tf", "npu_vs_npu"]
    assert texts(completer, "vc -lt du") == ["dump_dir/"]
    assert texts(completer, "ni -s ") == [] and texts(completer, "pt X ") == []


def test_no_workspace_completes_commands_but_no_values(tmp_path):
    lookup = WorkspaceLookup(str(tmp_path / "missing"))
    completer = PrecisionToolCompleter(build_registry(), WorkspaceIndex(lambda: lookup))
    assert texts(completer, "ni ") == [] and texts(completer, "l") == ["list_ops", "ls"]
