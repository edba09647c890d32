"""The interactive shell (``precision_tool`` with no command): prompt_toolkit app, completer, key bindings.

:mod:`.app` runs the loop; :mod:`.command_line` splits lines; :mod:`.completer` and :mod:`.workspace_index`
complete commands, flags and workspace names; :mod:`.keys` holds the key bindings.
"""
