"""Splitting shell lines: quotes, slices kept whole, ``> FILE``, ``run`` untouched, partial lines."""
import pytest

from precision_tool.errors import UsageError
from precision_tool.shell.command_line import ends_in_space, parse_command_line, split_words


def values(line, partial=False):
    return [word.value for word in split_words(line, partial)]


@pytest.mark.parametrize("line, expected", [
    ("pt X[0, :4]", ["pt", "X[0, :4]"]),
    ("pt X [0, :4]", ["pt", "X", "[0, :4]"]),
    ("pt X[0, [1, 2]] -s", ["pt", "X[0, [1, 2]]", "-s"]),
    ("ls -n 'a b'", ["ls", "-n", "a b"]),
    ('ls -n "a\\"b"', ["ls", "-n", 'a"b']),
    ("ls -n a\\ b", ["ls", "-n", "a b"]),
    ("ls -n 'x['", ["ls", "-n", "x["]),
    ("  ni   conv1  ", ["ni", "conv1"]),
    ("", []),
])
def test_split_words(line, expected):
    assert values(line) == expected


def test_word_positions_point_at_raw_text():
    words = split_words("ni 'a b' c")
    assert [(w.value, w.start, w.quoted) for w in words] == [("ni", 0, False), ("a b", 3, True), ("c", 9, False)]


@pytest.mark.parametrize("line, message", [("ls -n 'abc", "unterminated quote '"),
                                           ("pt X[0, :4", "unterminated bracket \\[")])
def test_unterminated_is_a_usage_error_unless_partial(line, message):
    with pytest.raises(UsageError, match=message):
        split_words(line)
    assert values(line, partial=True)[-1] in ("abc", "X[0, :4")


def test_redirect_forms():
    assert parse_command_line("ls -t Conv > ops.txt").argv == ["ls", "-t", "Conv"]
    assert parse_command_line("ls -t Conv > ops.txt").redirect == "ops.txt"
    assert parse_command_line("ls >ops.txt").redirect == "ops.txt"
    quoted = parse_command_line("ls -n '>' x")
    assert quoted.argv == ["ls", "-n", ">", "x"] and quoted.redirect is None
    with pytest.raises(UsageError, match="'>' needs a file name"):
        parse_command_line("ls >")


def test_run_takes_the_rest_of_the_line_as_typed():
    parsed = parse_command_line("run ls -l 'a b' | head > out.txt")
    assert parsed.argv == ["run", "ls -l 'a b' | head > out.txt"] and parsed.redirect is None
    assert parse_command_line("run").argv == ["run"]


@pytest.mark.parametrize("line, expected", [("ni ", True), ("ni", False), ("", False), ("pt X[0, ", False),
                                            ("ls -n 'a ", False), ("pt X[0, 1] ", True)])
def test_ends_in_space(line, expected):
    assert ends_in_space(line) is expected
