"""What an argument holds, so the shell can complete it: op names, tensors, file paths.

A command tags an argparse action when it adds it (:func:`completes`: argcomplete's convention of an attribute
on the action), and the shell's completer reads the tag back. Commands stay ignorant of the shell; an untagged
argument completes as :func:`value_hint` says.
"""
from __future__ import annotations

OP_NAME = "op_name"          # an op of the NPU graph (ni, ls -n)
OP_TYPE = "op_type"          # an op type of the NPU graph (ls -t)
PASS_NAME = "pass_name"      # a fusion pass named in the graph (ls -f)
KERNEL_NAME = "kernel_name"  # a kernel named in the graph (ls -k)
TENSOR = "tensor"            # a tensor spec: dump file, npy file, OP:output:k, TF_OP:k (pt, cp)
PATH = "path"                # any file or folder
GRAPH_NAME = "graph_name"    # a root graph name of the run's Build graphs
COMMAND = "command"          # a command name (help)
NOTHING = "nothing"          # free text with nothing to offer (a numpy slice, ...)

HINTS = (OP_NAME, OP_TYPE, PASS_NAME, KERNEL_NAME, TENSOR, PATH, GRAPH_NAME, COMMAND, NOTHING)
_ATTRIBUTE = "completes"


def completes(action, hint: str):
    """Tag ``action`` (what ``parser.add_argument`` returned) with ``hint``; returns the action."""
    if hint not in HINTS:
        raise ValueError(f"unknown completion hint {hint!r}; known: {', '.join(HINTS)}")
    setattr(action, _ATTRIBUTE, hint)
    return action


def hint_of(action) -> str:
    """The hint ``action`` was tagged with, or ``""``."""
    return getattr(action, _ATTRIBUTE, "") or ""


def value_hint(action) -> str:
    """What to complete for ``action``'s value: its tag; untagged, nothing for numbers and fixed choices
    (``action.choices`` are offered as they are), else a file path, as a Unix shell would.

    >>> import argparse
    >>> parser = argparse.ArgumentParser()
    >>> completes(parser.add_argument("name"), OP_NAME).completes
    'op_name'
    >>> out, count = parser.add_argument("--out"), parser.add_argument("-n", type=int)
    >>> hint_of(out), value_hint(out), value_hint(count)
    ('', 'path', 'nothing')
    """
    hint = hint_of(action)
    if hint:
        return hint
    if action.choices is not None or action.type in (int, float) or action.nargs == 0:
        return NOTHING
    return PATH
