"""Key bindings of the shell, from one factory (pgcli's ``pgcli_bindings``): one small handler per key.

Tab completes (the common part of the matches at once, then cycles through the menu), Shift-Tab cycles backwards
through the menu, Ctrl-Space opens the completion menu, Enter with a completion selected in the menu takes it (the
line is not run yet), F3 turns completion while typing on or off (off by default: op lists are long). Ctrl-C (clear
the line) and Ctrl-D (leave, on an empty line) are prompt_toolkit's own and handled in the loop of
:mod:`precision_tool.shell.app`.
"""
from __future__ import annotations

from dataclasses import dataclass

from prompt_toolkit.filters import completion_is_selected, has_completions
from prompt_toolkit.key_binding import KeyBindings


@dataclass
class ShellState:
    """What the key bindings can switch at run time."""

    complete_while_typing: bool = False


def shell_key_bindings(state: ShellState) -> KeyBindings:
    """The shell's key bindings; ``state`` is changed in place by the toggles."""
    bindings = KeyBindings()

    @bindings.add("tab")
    def _(event):
        """Complete the common part, or move to the next completion when the menu is open."""
        buffer = event.app.current_buffer
        if buffer.complete_state:
            buffer.complete_next()
        else:
            buffer.start_completion(insert_common_part=True)

    @bindings.add("s-tab")
    def _(event):
        """Move to the previous completion."""
        buffer = event.app.current_buffer
        if buffer.complete_state:
            buffer.complete_previous()
        else:
            buffer.start_completion(select_last=True)

    @bindings.add("c-space")
    def _(event):
        """Open the completion menu without inserting anything."""
        event.app.current_buffer.start_completion(select_first=False)

    @bindings.add("enter", filter=has_completions & completion_is_selected)
    def _(event):
        """Take the selected completion and close the menu."""
        event.current_buffer.complete_state = None

    @bindings.add("f3")
    def _(event):
        """Switch completion while typing on or off."""
        state.complete_while_typing = not state.complete_while_typing

    return bindings
