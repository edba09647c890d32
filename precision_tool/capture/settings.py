"""Capture settings read from the environment at call time, their checks, and the one-line messages helpers print.

Plain Python (no TensorFlow). ``PRECISION_TOOL_DATA`` (the workspace), ``PRECISION_TOOL_ACTION`` (or the original
tool's ``PRECISION_TOOL_DUMP``/``PRECISION_TOOL_OVERFLOW``), ``PRECISION_TOOL_DUMP_STEP``,
``PRECISION_TOOL_OP_DEBUG_LEVEL``, ``PRECISION_TOOL_NPU_RUN``, ``PRECISION_TOOL_DUMP_DATA`` and
``PRECISION_TOOL_DUMP_LAYER`` are checked with npu_bridge's own rules, so a typo
is a one-line :class:`~precision_tool.errors.CaptureError` naming the variable, not a fatal error when the session
starts. Variables and defaults: docs/internals/capture.md#settings; the rules:
docs/capture-custom-op.md#settings-are-checked-the-way-npu_bridge-checks-them.
"""
from __future__ import annotations

import contextlib
import os
import re
import sys
import warnings
from dataclasses import dataclass
from typing import Dict, Iterator, Mapping, Optional, Tuple, Union

from precision_tool.config import DEFAULT_DATA_DIR, ENV_DATA_DIR, Workspace
from precision_tool.errors import CaptureError

ENV_ACTION = "PRECISION_TOOL_ACTION"
ENV_LEGACY_DUMP = "PRECISION_TOOL_DUMP"
ENV_LEGACY_OVERFLOW = "PRECISION_TOOL_OVERFLOW"
ENV_DUMP_STEP = "PRECISION_TOOL_DUMP_STEP"
ENV_OP_DEBUG_LEVEL = "PRECISION_TOOL_OP_DEBUG_LEVEL"
ENV_NPU_RUN = "PRECISION_TOOL_NPU_RUN"
ENV_DUMP_DATA = "PRECISION_TOOL_DUMP_DATA"
ENV_DUMP_LAYER = "PRECISION_TOOL_DUMP_LAYER"

DEFAULT_DUMP_STEP = "0"
DEFAULT_OP_DEBUG_LEVEL = 4
DEFAULT_DUMP_DATA = "tensor"
MESSAGE_PREFIX = "[precision_tool]"

# npu_bridge's checkDumpStep pattern, applied to dump_step + "|"; [0-9], not \d: C++ std::regex's \d is ASCII only.
_DUMP_STEP_GROUPS = re.compile(r"(?:[0-9]+-[0-9]+\||[0-9]+\|)+")
MAX_DUMP_STEP_GROUPS = 100
INT32_MAX = "2147483647"
# The values npu_bridge (checkDumpMode, checkDumpDebugMode) and npu_device accept.
NPU_CHOICES: Dict[str, Tuple[Union[str, int], ...]] = {
    "dump_mode": ("input", "output", "all"),
    "dump_debug_mode": ("aicore_overflow", "atomic_overflow", "all"),
    "op_debug_level": (0, 1, 2, 3, 4),
    "dump_data": ("tensor", "stats"),
}


class CaptureWarning(UserWarning):
    """A capture that will run but whose reference or dump will not match names 1:1."""


_SILENCED = [0]  # > 0 inside silenced(): the emulator's own captures, whose staging paths mean nothing to a user


def notify(message: str) -> None:
    """Print one informational line to stderr (a training script's log is where users look); nothing inside
    :func:`silenced`."""
    if not _SILENCED[0]:
        print(f"{MESSAGE_PREFIX} {message}", file=sys.stderr, flush=True)


@contextlib.contextmanager
def silenced() -> Iterator[None]:
    """No :func:`notify` lines inside: for captures the tool runs itself (``emulate`` captures its reference into a
    staging folder that is renamed when it is done, so the path a line would name is gone by then)."""
    _SILENCED[0] += 1
    try:
        yield
    finally:
        _SILENCED[0] -= 1


def warn_loudly(message: str, stacklevel: int = 3) -> None:
    """A :class:`CaptureWarning` (shown once per call site) and the same line on stderr, always."""
    print(f"{MESSAGE_PREFIX} WARNING: {message}", file=sys.stderr, flush=True)
    warnings.warn(message, CaptureWarning, stacklevel=stacklevel)


def check_dump_step(value, source: str = "dump_step") -> str:
    """``value`` if npu_bridge and GE accept it as ``dump_step``: step numbers (ASCII digits) and ranges ``N-M``
    with N < M, joined by ``|``, at most 100 groups, every step at most 2147483647.

    ``source`` names where the value came from (a variable) in the error.

    Raises
    ------
    CaptureError
        One line: ``source``, the value, and the rule it breaks.

    Examples
    --------
    >>> check_dump_step("0|5|10-20")
    '0|5|10-20'
    >>> check_dump_step("5-3")
    Traceback (most recent call last):
    ...
    precision_tool.errors.CaptureError: dump_step='5-3': range 5-3 must go up (npu_bridge needs N < M in N-M)
    """
    shown = f"{source}={_shown(value)}"
    if not isinstance(value, str):
        raise CaptureError(f"{shown}: dump_step must be text like '0', '0|5|10' or '0|3-5'")
    if not _DUMP_STEP_GROUPS.fullmatch(value + "|"):
        raise CaptureError(f"{shown}: use step numbers and ranges joined by '|', e.g. '0', '0|5|10' or "
                           "'0|3-5' (ASCII digits only, no empty group, no spaces)")
    groups = value.split("|")
    if len(groups) > MAX_DUMP_STEP_GROUPS:
        raise CaptureError(f"{shown}: {len(groups)} groups, npu_bridge accepts at most "
                           f"{MAX_DUMP_STEP_GROUPS}")
    for group in groups:
        steps = [_digits(step) for step in group.split("-")]
        for step in steps:
            if (len(step), step) > (len(INT32_MAX), INT32_MAX):
                raise CaptureError(f"{shown}: step {_shown(step)[1:-1]} is larger than {INT32_MAX} "
                                   "(GE reads steps as int32)")
        if len(steps) == 2 and (len(steps[0]), steps[0]) >= (len(steps[1]), steps[1]):
            raise CaptureError(f"{shown}: range {group} must go up (npu_bridge needs N < M in N-M)")
    return value


def _shown(value, limit: int = 60) -> str:
    """``repr(value)``, cut to ``limit`` characters for a one-line message."""
    text = repr(value)
    return text if len(text) <= limit else f"{text[:limit - 4]}...{text[-1]}"


def _digits(step: str) -> str:
    """A step without leading zeros, as digits (compared by length then text: no int() of unbounded length)."""
    return step.lstrip("0") or "0"


def check_npu_choice(name: str, value, source: Optional[str] = None):
    """``value`` if it is one npu_bridge accepts for ``name`` (``dump_mode``, ``dump_debug_mode``,
    ``op_debug_level``; see :data:`NPU_CHOICES`); other names pass unchecked.

    Raises
    ------
    CaptureError
        One line naming ``source`` (default ``name``), the value and the allowed values.
    """
    allowed = NPU_CHOICES.get(name)
    if allowed is None:
        return value
    kind = type(allowed[0])
    if isinstance(value, kind) and not isinstance(value, bool) and value in allowed:
        return value
    shown = ", ".join(map(str, allowed))
    raise CaptureError(f"{source or name}={value!r} is not a valid {name}: use one of {shown}")


def check_dump_layer(value, source: str = "dump_layer") -> str:
    """``value`` as the adapter's ``dump_layer`` text: GE node names joined by single spaces. A string is split on
    whitespace as GE splits it; a list or tuple of names is joined (a name holding whitespace could not be
    told apart, so it is refused); ``""`` (or no name) means every op.

    >>> check_dump_layer(["net/conv1/Conv2D", "net/fc/MatMul"]), check_dump_layer("  a   b ")
    ('net/conv1/Conv2D net/fc/MatMul', 'a b')
    >>> check_dump_layer(["a b"])  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    precision_tool.errors.CaptureError: dump_layer name 'a b' holds whitespace: GE splits dump_layer on ...
    """
    if isinstance(value, str):
        return " ".join(value.split())
    if isinstance(value, (list, tuple)) and all(isinstance(name, str) for name in value):
        for name in value:
            if not name.strip() or name.split() != [name]:
                raise CaptureError(f"{source} name {_shown(name)} holds whitespace: GE splits dump_layer on "
                                   "whitespace, so it would be read as other names" if name.strip() else
                                   f"{source} holds an empty name")
        return " ".join(value)
    raise CaptureError(f"{source}={_shown(value)}: give op names as text separated by spaces, or a list of names")


@dataclass(frozen=True)
class CaptureSettings:
    """Where captures go and the NPU dump settings (checked when made).

    Attributes
    ----------
    data_dir : absolute path of the workspace (the NPU writes dumps there, so never relative).
    dump_step : NPU ``dump_step``, e.g. ``"0"`` or ``"0|5|10"`` or ``"0|3-5"``.
    op_debug_level : NPU ``op_debug_level`` used with the ``dump`` and ``overflow`` actions.
    npu_run : N of ``npu/debug_N``; ``None`` (not set) means 0, as in the original tool.
    dump_data : NPU ``dump_data``, ``"tensor"`` (the dump files) or ``"stats"`` (a statistics CSV per op).
    dump_layer : NPU ``dump_layer``, GE node names separated by spaces (``""``: every op).
    """

    data_dir: str
    dump_step: str = DEFAULT_DUMP_STEP
    op_debug_level: int = DEFAULT_OP_DEBUG_LEVEL
    npu_run: Optional[int] = None
    dump_data: str = DEFAULT_DUMP_DATA
    dump_layer: str = ""

    def __post_init__(self):
        check_dump_step(self.dump_step)
        check_npu_choice("op_debug_level", self.op_debug_level)
        check_npu_choice("dump_data", self.dump_data)
        object.__setattr__(self, "dump_layer", check_dump_layer(self.dump_layer))
        if self.npu_run is not None and self.npu_run < 0:
            raise CaptureError(f"{ENV_NPU_RUN}={self.npu_run} is negative: N of npu/debug_N is 0 or more")

    @property
    def workspace(self) -> Workspace:
        return Workspace(self.data_dir)

    @property
    def run_index(self) -> int:
        """N of ``npu/debug_N``: :attr:`npu_run`, else 0."""
        return 0 if self.npu_run is None else self.npu_run

    @classmethod
    def from_env(cls, environ: Optional[Mapping[str, str]] = None) -> "CaptureSettings":
        """Settings from the ``PRECISION_TOOL_*`` variables (``os.environ`` by default;
        docs/internals/capture.md#settings).

        Raises
        ------
        CaptureError
            A variable npu_bridge would refuse; the message names the variable and the allowed values.
        """
        env = os.environ if environ is None else environ
        data_dir = env.get(ENV_DATA_DIR) or DEFAULT_DATA_DIR
        dump_step = check_dump_step((env.get(ENV_DUMP_STEP) or DEFAULT_DUMP_STEP).strip(), ENV_DUMP_STEP)
        op_debug_level = _int_setting(env, ENV_OP_DEBUG_LEVEL, DEFAULT_OP_DEBUG_LEVEL, "op_debug_level")
        check_npu_choice("op_debug_level", op_debug_level, ENV_OP_DEBUG_LEVEL)
        dump_data = (env.get(ENV_DUMP_DATA) or DEFAULT_DUMP_DATA).strip()
        check_npu_choice("dump_data", dump_data, ENV_DUMP_DATA)
        return cls(
            data_dir=os.path.abspath(data_dir),
            dump_step=dump_step,
            op_debug_level=op_debug_level,
            npu_run=_int_setting(env, ENV_NPU_RUN, None),
            dump_data=dump_data,
            dump_layer=env.get(ENV_DUMP_LAYER) or "",
        )


def workspace_from_env(environ: Optional[Mapping[str, str]] = None) -> Workspace:
    """The workspace (``PRECISION_TOOL_DATA``, absolute) without checking the NPU-only settings.

    The reference side and the original tool's path names need only this: a ``PRECISION_TOOL_DUMP_STEP``
    meant for the NPU run must not stop a CPU capture sharing the same launch script.
    """
    env = os.environ if environ is None else environ
    return Workspace(os.path.abspath(env.get(ENV_DATA_DIR) or DEFAULT_DATA_DIR))


def npu_run_from_env(environ: Optional[Mapping[str, str]] = None) -> int:
    """N of ``npu/debug_N`` from ``PRECISION_TOOL_NPU_RUN`` (0 when unset); a one-line error names the variable."""
    env = os.environ if environ is None else environ
    run = _int_setting(env, ENV_NPU_RUN, None)
    if run is not None and run < 0:
        raise CaptureError(f"{ENV_NPU_RUN}={run} is negative: N of npu/debug_N is 0 or more")
    return 0 if run is None else run


def _int_setting(env: Mapping[str, str], name: str, default, choice: Optional[str] = None):
    text = (env.get(name) or "").strip()
    if not text:
        return default
    try:
        return int(text)
    except ValueError:
        if choice is not None:
            check_npu_choice(choice, text, name)  # the message lists the allowed values
        raise CaptureError(f"{name}={text!r} is not an integer") from None


def action_from_env(environ: Optional[Mapping[str, str]] = None) -> str:
    """The action used when a helper gets ``action=None``: ``PRECISION_TOOL_ACTION``, else the
    original tool's ``PRECISION_TOOL_DUMP=True`` / ``PRECISION_TOOL_OVERFLOW=True``, else ``""``."""
    env = os.environ if environ is None else environ
    if env.get(ENV_ACTION, "").strip():
        return env[ENV_ACTION].strip()
    legacy = [action for name, action in ((ENV_LEGACY_DUMP, "dump"), (ENV_LEGACY_OVERFLOW, "overflow"))
              if env.get(name, "").strip().lower() == "true"]
    return "|".join(legacy)
