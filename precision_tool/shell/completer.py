"""Tab completion for the shell: command names, the flags of the command being typed, and argument values.

A plain :class:`~prompt_toolkit.completion.Completer` (pgcli's ``PGCompleter`` pattern), tested with
``Document`` objects. Which values an argument takes comes from its argparse action's completion hint
(:mod:`precision_tool.commands.arg_hints`): op names, op types, passes and kernels of the NPU graph, tensors
(dumped ops, ``OP:output:k``, dump and ``.npy`` file names) and file paths; an untagged argument offers its
``choices``, nothing for a number, else file paths. Values are matched by prefix;
when nothing starts with the typed text, by substring, ignoring case (``res_conv<Tab>`` finds
``small_cnn_1/res_conv_1/convolution``).
"""
from __future__ import annotations

import argparse
import os
import shlex
from typing import Dict, Iterable, List, Optional, Tuple

from prompt_toolkit.completion import CompleteEvent, Completer, Completion, PathCompleter
from prompt_toolkit.document import Document

from precision_tool.commands import arg_hints
from precision_tool.errors import UsageError
from precision_tool.shell.command_line import RAW_REST_COMMANDS, Word, ends_in_space, split_words

SHELL_WORDS = {"exit": "leave the shell (also quit, Ctrl-D)", "quit": "leave the shell (also exit, Ctrl-D)"}
MAX_COMPLETIONS = 1000
_PATH_STARTS = ("/", "./", "../", "~")


def match_values(word: str, candidates: Iterable[str]) -> List[str]:
    """Candidates starting with ``word``, in order; if none do, those containing it (case ignored).

    >>> match_values("con", ["conv1", "Conv2", "x_conv"])
    ['conv1']
    >>> match_values("CONV", ["conv1", "Conv2", "x_conv"])
    ['conv1', 'Conv2', 'x_conv']
    """
    candidates = list(candidates)
    by_prefix = [c for c in candidates if c.startswith(word)]
    if by_prefix or not word:
        return by_prefix
    folded = word.lower()
    return [c for c in candidates if folded in c.lower()]


def _quoted(value: str) -> str:
    return shlex.quote(value) if any(c.isspace() or c in "'\"\\" for c in value) else value


class PrecisionToolCompleter(Completer):
    """Completions from ``registry`` (commands and their parsers) and ``index`` (a
    :class:`~precision_tool.shell.workspace_index.WorkspaceIndex`, or ``None`` for no workspace values)."""

    def __init__(self, registry, index=None):
        self.registry = registry
        self.index = index
        self._parsers: Dict[str, argparse.ArgumentParser] = {}
        self._paths = PathCompleter(expanduser=True)

    # ------------------------------------------------------------------ prompt_toolkit entry point
    def get_completions(self, document: Document, complete_event):
        """Completions for the cursor position. Never raises: a failing completion offers nothing rather
        than end the session (it runs in prompt_toolkit's completion thread)."""
        try:
            yield from self._completions(document)
        except Exception:  # noqa: BLE001 -- see the docstring
            return

    def _completions(self, document: Document):
        text = document.text_before_cursor
        words = split_words(text, partial=True)
        if not words or ends_in_space(text):
            current, previous = Word("", len(text)), words
        else:
            current, previous = words[-1], words[:-1]
        replace = len(text) - current.start
        if not previous:
            yield from self._command_completions(current.value, replace)
            return
        name = previous[0].value
        if name in RAW_REST_COMMANDS:
            yield from self._path_completions(current.value, replace)
            return
        if name == "help":
            if len(previous) == 1:
                yield from self._command_completions(current.value, replace, shell_words=False)
            return
        parser = self._parser(name)
        if parser is None:
            return
        is_flag, action = argument_slot(parser, [w.value for w in previous[1:]], current.value)
        if is_flag:
            yield from self._flag_completions(parser, current.value, replace)
        elif action is not None and action.choices is not None:
            for choice in match_values(current.value, [str(c) for c in action.choices]):
                yield Completion(choice, -replace)
        elif action is not None:
            yield from self._value_completions(arg_hints.value_hint(action), current.value, replace)

    # ------------------------------------------------------------------ sources
    def command_names(self, shell_words: bool = True) -> List[str]:
        return self.registry.names() + (sorted(SHELL_WORDS) if shell_words else [])

    def _command_completions(self, word: str, replace: int, shell_words: bool = True):
        for name in match_values(word, self.command_names(shell_words)):
            yield Completion(name, -replace, display_meta=self._summary(name))

    def _summary(self, name: str) -> str:
        if name in SHELL_WORDS:
            return SHELL_WORDS[name]
        if name == "help":
            return "list commands, or help COMMAND"
        try:
            return self.registry.resolve(name).summary
        except UsageError:
            return ""

    def _parser(self, name: str) -> Optional[argparse.ArgumentParser]:
        try:
            command = self.registry.resolve(name)
        except UsageError:
            return None
        if command.name not in self._parsers:
            self._parsers[command.name] = command.build_parser()
        return self._parsers[command.name]

    def _flag_completions(self, parser, word: str, replace: int):
        flags = {}
        for action in parser._actions:
            for option in action.option_strings:
                flags[option] = (action.help or "").split(". ")[0]
        for option in match_values(word, sorted(flags)):
            yield Completion(option, -replace, display_meta=flags[option])

    def _value_completions(self, hint: str, word: str, replace: int):
        if hint == arg_hints.PATH or (hint == arg_hints.TENSOR and word.startswith(_PATH_STARTS)):
            yield from self._path_completions(word, replace)
            return
        if hint == arg_hints.COMMAND:
            yield from self._command_completions(word, replace, shell_words=False)
            return
        if self.index is None or hint == arg_hints.NOTHING:
            return
        if hint == arg_hints.TENSOR and ":" in word:
            candidates = self.index.tensor_selectors(word.split(":", 1)[0])
        else:
            candidates = self.index.values(hint)
        for value in match_values(word, candidates)[:MAX_COMPLETIONS]:
            yield Completion(_quoted(value), -replace, display=value)

    def _path_completions(self, word: str, replace: int):
        sub = Document(word, len(word))
        for completion in self._paths.get_completions(sub, CompleteEvent()):
            full = word[: len(word) + completion.start_position] + completion.text
            if os.path.isdir(os.path.expanduser(full)) and not full.endswith("/"):
                full += "/"  # ready for the next Tab
            yield Completion(_quoted(full), -replace, display=completion.display)


def argument_slot(parser: argparse.ArgumentParser, done: List[str],
                  current: str) -> Tuple[bool, Optional[argparse.Action]]:
    """``(is_flag, action)`` for the word being typed after the words ``done`` of a command line.

    ``is_flag`` when the word starts with ``-`` and no option is waiting for its value; else the option
    waiting for a value, or the positional argument in that place (``None`` if every one is filled).
    """
    waiting = None
    positionals_done = 0
    for word in done:
        if waiting is not None:
            waiting = None
            continue
        if word.startswith("-") and len(word) > 1:
            action = parser._option_string_actions.get(word)
            if action is not None and action.nargs != 0 and "=" not in word:
                waiting = action
            continue
        positionals_done += 1
    if waiting is not None:
        return False, waiting
    if current.startswith("-"):
        return True, None
    count = 0
    for action in (a for a in parser._actions if not a.option_strings):
        if action.nargs in ("*", "+", argparse.REMAINDER) or count == positionals_done:
            return False, action
        count += 1
    return False, None
