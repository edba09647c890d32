"""The options several commands share, each defined once: same letters, same validation, same help.

The step and device options are added by the registry itself (:meth:`~.command_registry.Command.build_parser`) to
the commands that read dumps; which command takes which letters: docs/internals/commands.md#shared-options.

Validators (``type=`` callables) raise :class:`argparse.ArgumentTypeError`, whose message argparse shows
as is after the option's name -- never a Python type name:

>>> cosine_value("5")
Traceback (most recent call last):
...
argparse.ArgumentTypeError: invalid cosine threshold: '5' (give a number from -1 to 1)
>>> positive_int("3"), non_negative_int("0"), cosine_value("-1"), non_negative_float("2.5")
(3, 0, -1.0, 2.5)
>>> dump_position("5"), dump_position_or_all("all")
(5, 'all')
"""
from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Callable, Optional, TypeVar, Union

if TYPE_CHECKING:  # the registry imports this module: keep it cheap
    from precision_tool.formats.dump_tree import DumpSelection

_N = TypeVar("_N", int, float)
#: ``--steps all`` / ``--device all`` (``compare``): every step / every device, one comparison each.
ALL = "all"
#: :attr:`~.command_registry.Command.dumps`: the command reads no NPU dumps / one step of one device / (``compare``) one
#: or every step and device.
NO_DUMPS, ONE_STEP, EVERY_STEP = "", "one", "every"


def _validator(convert: Callable[[str], _N], accept: Callable[[_N], bool], what: str, hint: str,
               name: str) -> Callable[[str], _N]:
    """A ``type=`` callable: ``convert`` the text, check it with ``accept``, else say ``what`` and ``hint``."""

    def validate(text: str) -> _N:
        error = argparse.ArgumentTypeError(f"invalid {what}: {text!r} ({hint})")
        try:
            value = convert(text)
        except (TypeError, ValueError):
            raise error from None
        if not accept(value):
            raise error
        return value

    validate.__name__ = validate.__qualname__ = name
    validate.__doc__ = f"``{what}``: {hint}; :class:`argparse.ArgumentTypeError` otherwise."
    return validate


positive_int = _validator(int, lambda v: v >= 1, "count", "give a whole number of 1 or more", "positive_int")
non_negative_int = _validator(int, lambda v: v >= 0, "count", "give a whole number of 0 or more",
                              "non_negative_int")
cosine_value = _validator(float, lambda v: -1.0 <= v <= 1.0, "cosine threshold", "give a number from -1 to 1",
                          "cosine_value")  # NaN fails the comparison, so it is refused too
non_negative_float = _validator(float, lambda v: v >= 0, "number", "give a number of 0 or more",
                                "non_negative_float")  # NaN refused; inf accepted (no limit)


def add_cosine_option(parser: argparse.ArgumentParser, default: Optional[float], *, default_text: str = "",
                      short: bool = True, help_tail: str = "") -> argparse.Action:
    """``[-c] --cosine --cosine-threshold THRESHOLD`` into ``args.cosine``, validated by :func:`cosine_value`.

    ``default`` is stored when the option is absent (callers pass
    :data:`~precision_tool.metrics.DEFAULT_COSINE_THRESHOLD`, or ``None`` when the handler settles it);
    ``default_text`` describes it in the help when it is not the number itself. ``short=False`` leaves out
    ``-c`` (``ac``, where ``-c`` is ``--compare``). ``help_tail`` is appended to the shared help sentence.
    """
    flags = ("-c", "--cosine", "--cosine-threshold") if short else ("--cosine", "--cosine-threshold")
    shown = default_text or (f"{default:g}" if default is not None else "none")
    return parser.add_argument(*flags, dest="cosine", type=cosine_value, default=default, metavar="THRESHOLD",
                               help=f"a tensor fails below this cosine similarity, a number from -1 to 1 "
                                    f"(default {shown}){help_tail}")


def add_limit_option(parser: argparse.ArgumentParser, default: int, what: str) -> argparse.Action:
    """``-l --limit N`` into ``args.limit``, validated by :func:`non_negative_int`; 0 means no limit.

    ``what`` says what is limited, phrased with N (``"detail the first N records"``).
    """
    return parser.add_argument("-l", "--limit", dest="limit", type=non_negative_int, default=default, metavar="N",
                               help=f"{what} (default {default}; 0 = all)")


def add_workers_option(parser: argparse.ArgumentParser, help_prefix: str = "") -> argparse.Action:
    """``--workers N`` into ``args.workers`` (``None``: every usable CPU), validated by :func:`positive_int`.

    ``help_prefix`` says when it applies (``"with -c: "``).
    """
    return parser.add_argument("--workers", dest="workers", type=positive_int, default=None, metavar="N",
                               help=f"{help_prefix}processes comparing tensors (default: every usable CPU; "
                                    "with --cluster, the cluster's threads decide)")


def add_cluster_option(parser: argparse.ArgumentParser, help_prefix: str = "") -> argparse.Action:
    """``--cluster ADDRESS`` into ``args.cluster`` (``None`` when absent: ``$PRECISION_TOOL_CLUSTER``, else this
    machine; :func:`~precision_tool.comparison.cluster.cluster_address` checks and resolves it)."""
    return parser.add_argument("--cluster", dest="cluster", default=None, metavar="ADDRESS",
                               help=f"{help_prefix}compare on the Dask cluster of this scheduler (tcp://HOST:PORT or "
                                    "tls://...; default $PRECISION_TOOL_CLUSTER, else this machine's processes); "
                                    "its workers read the files at the same paths (docs/compare.md)")


def add_output_dir_option(parser: argparse.ArgumentParser, what: str, default_text: str) -> argparse.Action:
    """``-o -out --output OUT_DIR`` into ``args.out_dir`` (``None`` when absent: the handler picks a folder).

    The folder is created when missing; ``what`` says what goes in it, ``default_text`` where it goes by
    default. (Options naming one output *file*, such as ``report -o FILE.html``, are not this option.)
    """
    return parser.add_argument("-o", "-out", "--output", dest="out_dir", default=None, metavar="OUT_DIR",
                               help=f"folder for {what} (default {default_text})")


def add_junit_option(parser: argparse.ArgumentParser) -> argparse.Action:
    """``--junit FILE`` into ``args.junit``: JUnit XML beside the result, one test case per tensor."""
    return parser.add_argument("--junit", dest="junit", default=None, metavar="FILE",
                               help="also write JUnit XML (one test case per tensor) for CI dashboards")


def add_result_file_option(parser: argparse.ArgumentParser) -> argparse.Action:
    """``-f --file RESULT`` into ``args.file``: a result CSV, or a folder searched for the latest one."""
    return parser.add_argument("-f", "--file", dest="file", default=None, metavar="RESULT",
                               help="a result CSV, or a folder searched for the latest result_*.csv "
                                    "(default: the latest under WORKSPACE/temp/vector_compare)")


def add_run_option(parser: argparse.ArgumentParser, help_tail: str = "") -> argparse.Action:
    """``-r --run N`` into ``args.run`` (default 0), validated by :func:`non_negative_int`: which NPU run's
    ``npu/debug_N`` names ops and tensors."""
    return parser.add_argument("-r", "--run", dest="run", type=non_negative_int, default=0, metavar="N",
                               help=f"NPU run: 0 = npu/debug_0 (default), 1 = npu/debug_1{help_tail}")


def add_fusion_rule_options(parser: argparse.ArgumentParser) -> None:
    """``--fusion-floor D`` and ``--fusion-growth G`` (:mod:`precision_tool.checks.fusion_compare`'s rule),
    validated by :func:`non_negative_float`."""
    from precision_tool.checks.fusion_compare import DEFAULT_FLOOR, DEFAULT_GROWTH

    parser.add_argument("--fusion-floor", dest="fusion_floor", type=non_negative_float, default=DEFAULT_FLOOR,
                        metavar="D", help=f"fusion on vs off: an op differs when its output's relative distance "
                                          f"exceeds GROWTH x its inputs' by more than D (default {DEFAULT_FLOOR})")
    parser.add_argument("--fusion-growth", dest="fusion_growth", type=non_negative_float, default=DEFAULT_GROWTH,
                        metavar="G", help=f"fusion on vs off: how much an op may amplify the difference it "
                                          f"receives (default {DEFAULT_GROWTH:g})")


def _dump_position(text: str) -> int:
    """A step or device number: the folder name GE writes (0, 1, ...; ASCII digits: ``int`` also takes ``٥``)."""
    if not (text.isdigit() and all("0" <= c <= "9" for c in text)):
        raise ValueError(text)
    return int(text)


dump_position = _validator(_dump_position, lambda v: True, "step or device number", "give 0, 1, ...",
                           "dump_position")


def dump_position_or_all(text: str) -> Union[int, str]:
    """:func:`dump_position`, or ``"all"``; :class:`argparse.ArgumentTypeError` otherwise."""
    if text == ALL:
        return ALL
    try:
        return dump_position(text)
    except argparse.ArgumentTypeError:
        raise argparse.ArgumentTypeError(f"invalid step or device: {text!r} (give 0, 1, ... or all)") from None


class _GivenOnce(argparse.Action):
    """Stores the value; the same option given again with another value (``--step 5 --steps all``) is an error,
    not the last one silently winning."""

    def __call__(self, parser, namespace, values, option_string=None):
        before = getattr(namespace, self.dest, None)
        if before is not None and before != values:
            raise argparse.ArgumentError(self, f"given twice, as {before} and {values}: give one")
        setattr(namespace, self.dest, values)


def dump_position_before_the_command(text: str) -> int:
    """:func:`dump_position` for the global options, where ``all`` is refused with where it goes instead."""
    if text == ALL:
        raise argparse.ArgumentTypeError("'all' goes after the command, for that command alone (compare --steps all, "
                                         "compare --device all)")
    return dump_position(text)


def add_dump_selection_options(parser: argparse.ArgumentParser, every: bool = False, *,
                               global_options: bool = False) -> None:
    """``--step N`` and ``--device N`` into ``args.dump_step`` / ``args.dump_device`` (``None`` when absent):
    which step of which device of an NPU dump tree holding several the command reads
    (:mod:`precision_tool.formats.dump_tree`). Given after the command they override the global options given
    before it (``precision_tool --step N COMMAND``), for this command only.

    ``every`` (``compare``): ``--step``/``--steps`` and ``--device`` also take ``all``, one comparison per step
    or device (:data:`ALL`).
    """
    convert = dump_position_or_all if every else dump_position_before_the_command if global_options else dump_position
    steps = ("--step", "--steps") if every else ("--step",)
    metavar = "N|all" if every else "N"
    tail_step = "; all: every step of the device, one comparison each" if every else ""
    tail_device = "; all: every device, one comparison each, flagging replicas that differ" if every else ""
    parser.add_argument(*steps, dest="dump_step", type=convert, default=None, metavar=metavar, action=_GivenOnce,
                        help=f"the dump step to read when the NPU dump tree holds several (default: the newest)"
                             f"{tail_step}")
    parser.add_argument("--device", dest="dump_device", type=convert, default=None, metavar=metavar, action=_GivenOnce,
                        help=f"the device whose dumps to read when the tree holds several (default: the lowest)"
                             f"{tail_device}")


def dump_selection(args: argparse.Namespace, base: "DumpSelection") -> "DumpSelection":
    """The step/device a command's ``--step N``/``--device N`` ask for, over the global ones (``base``); ``base``
    when the command gives neither as a number (no flags, or ``all``, which the command itself handles)."""
    from precision_tool.formats.dump_tree import DumpSelection

    step, device = getattr(args, "dump_step", None), getattr(args, "dump_device", None)
    step = step if isinstance(step, int) else None
    device = device if isinstance(device, int) else None
    if step is None and device is None:
        return base
    return DumpSelection(base.step if step is None else step, base.device if device is None else device)
