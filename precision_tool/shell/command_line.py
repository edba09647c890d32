"""Split a shell line into words: shell quoting, plus numpy slices kept whole, plus ``> FILE``.

Like ``shlex`` in POSIX mode (white space separates words; ``'...'`` is literal; ``"..."`` and a backslash
escape), with one addition taken from tfdbg's ``command_parser``: inside square brackets white space does not
split and every character is kept as typed, so ``pt X[0, :4]`` is two words and ``pt X [0, :4]`` three. A last
word ``>`` followed by a file name (or a word ``>FILE``), unquoted, sends the command's whole output to that file
instead of the screen (tfdbg's redirection). ``run`` takes the rest of its line as typed.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import List, Optional

from precision_tool.errors import UsageError

RAW_REST_COMMANDS = ("run",)  # commands that receive the rest of the line untouched


@dataclass(frozen=True)
class Word:
    """One word: its value (quotes removed), where its raw text starts in the line, and whether any part
    of it was quoted (a quoted ``>`` is not a redirection)."""

    value: str
    start: int
    quoted: bool = False


def split_words(line: str, partial: bool = False) -> List[Word]:
    """The words of ``line``. An unterminated quote or bracket is a :class:`UsageError`, unless ``partial``
    (completion of a line still being typed), which ends the last word where the line ends."""
    words: List[Word] = []
    value: List[str] = []
    start: Optional[int] = None
    quoted = False
    quote = ""
    depth = 0
    position = 0
    while position < len(line):
        char = line[position]
        if start is None and (quote or depth or not char.isspace()):
            start = position
        if quote == "'":
            if char == "'":
                quote = ""
            else:
                value.append(char)
        elif quote == '"':
            if char == '"':
                quote = ""
            elif char == "\\" and position + 1 < len(line) and line[position + 1] in '"\\$`':
                position += 1
                value.append(line[position])
            else:
                value.append(char)
        elif depth:
            value.append(char)
            depth += {"[": 1, "]": -1}.get(char, 0)
        elif char.isspace():
            if start is not None:
                words.append(Word("".join(value), start, quoted))
                value, start, quoted = [], None, False
        elif char in "'\"":
            quote, quoted = char, True
        elif char == "\\":
            if position + 1 < len(line):
                position += 1
                value.append(line[position])
            quoted = True
        else:
            value.append(char)
            if char == "[":
                depth = 1
        position += 1
    if (quote or depth) and not partial:
        what = f"quote {quote}" if quote else "bracket ["
        raise UsageError(f"unterminated {what} in: {line}")
    if start is not None:
        words.append(Word("".join(value), start, quoted))
    return words


def ends_in_space(line: str) -> bool:
    """True when the cursor at the end of ``line`` starts a new word (white space outside quotes/brackets)."""
    if not line or not line[-1].isspace():
        return False
    words = split_words(line, partial=True)
    if not words:
        return True
    last = words[-1]
    return not _still_open(line[last.start:])


def _still_open(raw: str) -> bool:
    try:
        split_words(raw)
    except UsageError:
        return True
    return False


@dataclass(frozen=True)
class CommandLine:
    """A parsed line: the words to dispatch and, when given, the file to write the output to."""

    argv: List[str]
    redirect: Optional[str] = None


def parse_command_line(line: str) -> CommandLine:
    """``argv`` for the registry, with ``> FILE`` taken off (see the module docstring).

    >>> parse_command_line("pt 'a b'[0, :4] > out.txt")
    CommandLine(argv=['pt', 'a b[0, :4]'], redirect='out.txt')
    >>> parse_command_line("run ls -l | head").argv
    ['run', 'ls -l | head']
    """
    stripped = line.strip()
    first = stripped.split(None, 1)
    if first and first[0] in RAW_REST_COMMANDS:
        return CommandLine([first[0], *(first[1:] if len(first) > 1 else [])])
    words = split_words(line)
    redirect = None
    if len(words) >= 2 and words[-2].value == ">" and not words[-2].quoted:
        redirect = words[-1].value
        words = words[:-2]
    elif words and words[-1].value.startswith(">") and len(words[-1].value) > 1 and not words[-1].quoted:
        redirect = words[-1].value[1:]
        words = words[:-1]
    elif words and words[-1].value == ">" and not words[-1].quoted:
        raise UsageError("'>' needs a file name after it")
    return CommandLine([word.value for word in words], redirect)
