"""``--step N`` / ``--device N`` in the shell (issue 17): after a command that reads dumps, for that line only; the
``NPU dumps: ...`` line as in the batch CLI; a step or device the tree lacks is one error line and the shell stays.

The workspace: ``inspect_builders``' with its dumps at steps 0 and 3 of device 0 and step 3 of device 1, where
``out/Add`` has no dump (``add_steps_and_devices``)."""
import pytest
from inspect_builders import add_steps_and_devices, write_inspect_workspace

from precision_tool.commands.command_registry import Context
from precision_tool.shell.app import Shell

SIZE = (160, 40)
DEFAULT_NOTE = ("NPU dumps: dumps of step 3 on device 0 (the newest step of the lowest device); also in the tree: "
                "step 0 of device 0 and device 1 (pick with --step N --device N)")


@pytest.fixture(scope="module")
def shell(tmp_path_factory):
    return Shell(Context(data_dir=add_steps_and_devices(write_inspect_workspace(tmp_path_factory.mktemp("ws")))))


def dumped(text: str) -> str:
    (row,) = [line.split() for line in text.splitlines() if line.startswith("4 ")]
    return row[-1]


def test_step_and_device_flags_hold_for_their_line_only(shell):
    first = shell.execute("ls -n Add", SIZE)
    assert dumped(first.text) == "yes" and DEFAULT_NOTE in first.text.splitlines()
    asked = shell.execute("ls -n Add --device 1 --step 3", SIZE)
    assert dumped(asked.text) == "-" and asked.exit_code == 0
    assert ("NPU dumps: dumps of step 3 on device 1 (as asked); also in the tree: device 0 (pick with --step N "
            "--device N)") in asked.text.splitlines()
    again = shell.execute("ls -n Add", SIZE)  # the next line reads the default again
    assert dumped(again.text) == "yes" and DEFAULT_NOTE in again.text.splitlines()


def test_pt_in_the_shell_reads_the_device_asked_for(shell):
    assert shell.execute("pt out/Add:output:0[0, 0, :2]", SIZE).exit_code == 0
    result = shell.execute("pt out/Add:output:0 --device 1", SIZE)
    assert result.exit_code == 2 and result.text.startswith("error: graph op 'out/Add' (Add) has no dump file")


def test_a_device_the_tree_lacks_is_one_error_line_and_the_shell_stays(shell):
    result = shell.execute("ni out/Add --device 4", SIZE)
    assert result.exit_code == 2 and not result.leave
    assert result.text.startswith("error: ") and result.text.endswith("no dumps of device 4 (devices: 0, 1)")
    assert "\n" not in result.text
    assert shell.execute("ls --step x", SIZE).text == ("error: ls: argument --step: invalid step or device number: "
                                                       "'x' (give 0, 1, ...) (see 'ls -h')")
    assert dumped(shell.execute("ls -n Add", SIZE).text) == "yes"


def test_tab_completes_the_flags_on_commands_that_read_dumps_or_their_results_only(shell):
    from prompt_toolkit.completion import CompleteEvent
    from prompt_toolkit.document import Document

    def texts(line):
        event = CompleteEvent(completion_requested=True)
        return [c.text for c in shell.completer.get_completions(Document(line, len(line)), event)]

    assert texts("pt --de") == ["--device"] and texts("ls --st") == ["--step"]
    assert set(texts("compare --st")) == {"--step", "--steps"}
    assert texts("vcs --de") == ["--device"] and texts("help --de") == []  # vcs: the result of that device
