"""The key bindings factory: one handler per key, checked with a fake event (no terminal)."""
from types import SimpleNamespace
from unittest import mock

from prompt_toolkit.keys import Keys

from precision_tool.shell.keys import ShellState, shell_key_bindings


def handler_for(bindings, key):
    return next(b.handler for b in bindings.bindings if b.keys == (key,))


def event_with(buffer):
    return SimpleNamespace(app=SimpleNamespace(current_buffer=buffer), current_buffer=buffer)


def test_bound_keys():
    keys = {b.keys for b in shell_key_bindings(ShellState()).bindings}
    assert keys == {(Keys.ControlI,), (Keys.BackTab,), (Keys.ControlSpace,), (Keys.ControlM,), (Keys.F3,)}


def test_tab_inserts_the_common_part_then_cycles():
    tab = handler_for(shell_key_bindings(ShellState()), Keys.ControlI)
    buffer = mock.Mock(complete_state=None)
    tab(event_with(buffer))
    buffer.start_completion.assert_called_once_with(insert_common_part=True)
    buffer.complete_state = object()
    tab(event_with(buffer))
    buffer.complete_next.assert_called_once_with()


def test_enter_takes_the_selected_completion_without_running_the_line():
    bindings = shell_key_bindings(ShellState())
    enter = next(b for b in bindings.bindings if b.keys == (Keys.ControlM,))
    buffer = mock.Mock(complete_state=object())
    enter.handler(event_with(buffer))
    assert buffer.complete_state is None
    buffer.validate_and_handle.assert_not_called()


def test_f3_toggles_completion_while_typing():
    state = ShellState()
    f3 = handler_for(shell_key_bindings(state), Keys.F3)
    f3(event_with(mock.Mock()))
    assert state.complete_while_typing is True
    f3(event_with(mock.Mock()))
    assert state.complete_while_typing is False
