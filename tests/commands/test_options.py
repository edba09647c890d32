"""The shared options: one spelling, one validation, messages that read well (tracker issue 11)."""
import argparse

import pytest

from precision_tool.commands.options import (add_cosine_option, add_limit_option, add_output_dir_option,
                                             add_run_option, add_workers_option, cosine_value, non_negative_float,
                                             non_negative_int, positive_int)
from precision_tool.commands.command_registry import CommandParser
from precision_tool.errors import UsageError


def _parser(*adders):
    parser = CommandParser(prog="x")
    for add in adders:
        add(parser)
    return parser


def test_bad_cosine_message_names_no_python_type():
    parser = _parser(lambda p: add_cosine_option(p, 0.99))
    with pytest.raises(UsageError) as raised:
        parser.parse_args(["-c", "5"])
    assert str(raised.value) == ("x: argument -c/--cosine/--cosine-threshold: invalid cosine threshold: '5' "
                                 "(give a number from -1 to 1) (see 'x -h')")


@pytest.mark.parametrize("validator, text, message", [
    (cosine_value, "1.5", "invalid cosine threshold: '1.5' (give a number from -1 to 1)"),
    (cosine_value, "nan", "invalid cosine threshold: 'nan' (give a number from -1 to 1)"),
    (cosine_value, "high", "invalid cosine threshold: 'high' (give a number from -1 to 1)"),
    (positive_int, "0", "invalid count: '0' (give a whole number of 1 or more)"),
    (positive_int, "2.5", "invalid count: '2.5' (give a whole number of 1 or more)"),
    (non_negative_int, "-1", "invalid count: '-1' (give a whole number of 0 or more)"),
    (non_negative_float, "-0.1", "invalid number: '-0.1' (give a number of 0 or more)"),
    (non_negative_float, "nan", "invalid number: 'nan' (give a number of 0 or more)"),
])
def test_validators_refuse_with_a_readable_message(validator, text, message):
    with pytest.raises(argparse.ArgumentTypeError) as raised:
        validator(text)
    assert str(raised.value) == message


def test_validators_accept_their_range_ends():
    assert (cosine_value("-1"), cosine_value("1"), positive_int("1"), non_negative_int("0"),
            non_negative_float("0"), non_negative_float("inf")) == (-1.0, 1.0, 1, 0, 0.0, float("inf"))


def test_cosine_option_without_short_letter_leaves_c_free():
    parser = _parser(lambda p: add_cosine_option(p, None, default_text="the run's", short=False),
                     lambda p: p.add_argument("-c", "--compare", action="store_true"))
    args = parser.parse_args(["-c", "--cosine", "0.5"])
    assert args.compare and args.cosine == 0.5
    assert "(default the run's)" in parser.format_help()


def test_shared_options_parse_into_fixed_names():
    parser = _parser(lambda p: add_limit_option(p, 7, "show N rows"), add_workers_option,
                     lambda p: add_output_dir_option(p, "the CSV", "somewhere"), add_run_option)
    assert vars(parser.parse_args([])) == {"limit": 7, "workers": None, "out_dir": None, "run": 0}
    for flag in ("-o", "-out", "--output"):
        assert parser.parse_args([flag, "d"]).out_dir == "d"
    with pytest.raises(UsageError, match="argument -r/--run: invalid count: '-1'"):
        parser.parse_args(["-r", "-1"])


# Commands whose modules other engineers own, not yet switched to commands/options.py when this test was
# written (issue 11): drop a name from this set once its module calls the add_*_option functions.
NOT_YET_SHARED: set = set()
SHARED = {"cosine": cosine_value, "limit": non_negative_int, "workers": positive_int, "run": non_negative_int}


def _commands():
    from precision_tool.commands import COMMAND_TABLE

    return [pytest.param(name, marks=pytest.mark.xfail(reason="module not yet switched to commands/options.py"))
            if name in NOT_YET_SHARED else name for name in sorted(COMMAND_TABLE)]


@pytest.mark.parametrize("name", _commands())
def test_every_command_spells_and_validates_shared_options_alike(name):
    from precision_tool.commands import build_registry

    parser = build_registry(only=name).resolve(name).build_parser()
    for action in parser._actions:
        flags = set(action.option_strings)
        if action.dest in SHARED and (action.dest != "run" or "-r" in flags):  # tf_dump's --run is another thing
            assert action.type is SHARED[action.dest], (name, action.dest)
        if action.dest == "cosine":
            assert flags == ({"--cosine", "--cosine-threshold"} | (set() if name == "ac" else {"-c"})), name
            assert action.help.startswith("a tensor fails below this cosine similarity, a number from -1 to 1")
        if action.dest == "out_dir":
            assert flags == {"-o", "-out", "--output"}, name
    if name == "ac":  # the original tool's documented flag
        assert parser.parse_args(["-c"]).compare is True
