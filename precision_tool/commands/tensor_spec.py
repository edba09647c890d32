"""What ``pt`` and ``cp`` accept as a tensor, and the numpy slice after it.

Forms, tried in this order once a slice ``[...]`` at the end is split off: a ``.npy`` file (read with
``allow_pickle=False``); an Ascend dump file (every tensor); ``DUMP:output:0`` (one tensor of a dump file, by path or
by name under the run's dump folder); ``OP:output:0`` (of the latest dump of graph op ``OP``); ``OP`` (its every
tensor); ``TF_OP:0`` (output 0 of TensorFlow op ``TF_OP`` in ``tf/dump``); a ``tf/dump`` file name alone
(docs/commands.md#tensor-arguments-pt-cp). Paths are taken relative to the current folder, then to the workspace. A
slice holds only integers, ``:`` slices, ``...`` and ``None``/``newaxis``, separated by commas; it is parsed, never
evaluated.
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import List, Optional, Tuple

from precision_tool.errors import UsageError, WorkspaceError
from precision_tool.formats.tensor_kind import TensorKind

_KINDS = "|".join(kind.value for kind in TensorKind)
_SELECTOR = re.compile(rf"(?P<target>.+?):(?:(?P<kind>{_KINDS}):)?(?P<index>[0-9]+)\Z")
_NEGATIVE_SELECTOR = re.compile(rf"(?P<target>.+?):(?P<kind>{_KINDS}):(?P<index>-[0-9]+)\Z")
_INT = r"[+-]?[0-9]+"
_SLICE_PART = re.compile(rf"\s*(?P<start>{_INT})?\s*:\s*(?P<stop>{_INT})?\s*(?::\s*(?P<step>{_INT})?\s*)?\Z")

FORMS_HINT = "give a .npy or dump file, DUMP_OR_OP:output:K, OP, or TF_OP:K (a reference tensor)"


@dataclass(frozen=True)
class ParsedSpec:
    """A tensor argument taken apart: ``base`` is the text without its slice, ``target`` the part before
    the selector; ``kind``/``index`` and the slice text when given.

    ``kind`` is a :class:`~precision_tool.formats.tensor_kind.TensorKind` for NPU tensors (``OP:output:K``),
    ``"reference"`` for ``TF_OP:K``, ``""`` when no selector was given.
    """

    text: str
    base: str
    target: str
    kind: str = ""
    index: Optional[int] = None
    slice_text: str = ""

    @property
    def tensor_kind(self) -> Optional[TensorKind]:
        """The side of the op the selector names, ``None`` for a reference or no selector."""
        return TensorKind.parse(self.kind)


def split_slice(text: str) -> Tuple[str, str]:
    """``"x[0, :4]"`` -> ``("x", "[0, :4]")``; text without a trailing bracket group -> ``(text, "")``."""
    text = text.strip()
    if not text.endswith("]"):
        return text, ""
    depth = 0
    for position in range(len(text) - 1, -1, -1):
        depth += {"]": 1, "[": -1}.get(text[position], 0)
        if depth == 0:
            if position == 0:
                raise UsageError(f"{text!r}: a slice needs a tensor before it", FORMS_HINT)
            return text[:position].rstrip(), text[position:]
    raise UsageError(f"{text!r}: unbalanced brackets in the slice")


def parse_slice(slice_text: str) -> tuple:
    """The index tuple of ``"[0, :4]"``: ints, ``slice`` objects, ``Ellipsis`` and ``None``.

    >>> parse_slice("[0, 1:-1:2, ..., None]")
    (0, slice(1, -1, 2), Ellipsis, None)
    >>> parse_slice("[]")
    ()
    """
    if not (slice_text.startswith("[") and slice_text.endswith("]")):
        raise UsageError(f"{slice_text!r} is not a slice like [0, :4]")
    body = slice_text[1:-1].strip()
    if not body:
        return ()
    items = []
    for part in body.split(","):
        items.append(_slice_item(part.strip(), slice_text))
    return tuple(items)


def _index(text: str, whole: str) -> int:
    """An integer index of a slice; beyond int64 it fits no dimension (numpy would only say it is no integer; a
    slice's bounds are clipped, so ``[0:10**30]`` is the whole axis)."""
    value = int(text)
    if not -(1 << 63) <= value < (1 << 63):
        raise UsageError(f"slice {whole}: {text} is beyond any dimension")
    return value


def _slice_item(part: str, whole: str):
    if re.fullmatch(_INT, part):
        return _index(part, whole)
    if part == "...":
        return Ellipsis
    if part in ("None", "newaxis", "np.newaxis"):
        return None
    match = _SLICE_PART.match(part)
    if match and part:
        start, stop, step = (None if match.group(g) is None else int(match.group(g)) for g in ("start", "stop", "step"))
        if step == 0:
            raise UsageError(f"slice {whole}: step cannot be 0")
        return slice(start, stop, step)
    raise UsageError(f"slice {whole}: {part!r} is not an integer, a:b:c, ... or None",
                     "slices are parsed, not evaluated: no expressions")


def parse_tensor_spec(text: str) -> ParsedSpec:
    """Split ``text`` into target, selector and slice (no file system access)."""
    target, slice_text = split_slice(text)
    if not target:
        raise UsageError("empty tensor argument", FORMS_HINT)
    match = _SELECTOR.match(target)
    if match is None:
        negative = _NEGATIVE_SELECTOR.match(target)
        if negative is not None:  # else "is not a file, a dump file name or an op", which hides the cause
            raise UsageError(f"{text}: {negative.group('kind')} index {negative.group('index')}: tensors are numbered "
                             "from 0", FORMS_HINT)
        return ParsedSpec(text, target, target, slice_text=slice_text)
    kind = TensorKind(match.group("kind")) if match.group("kind") else "reference"
    return ParsedSpec(text, target, match.group("target"), kind, int(match.group("index")), slice_text)


def existing_path(text: str, workspace_root: str) -> Optional[str]:
    """``text`` as an existing entry other than a folder: relative to the current folder, then to the workspace.

    Not only regular files: a FIFO, a device or a dangling symbolic link named on the command line is returned
    too, so the reader refuses it naming the file and what it is, instead of its name being taken for an op.
    """
    expanded = os.path.expanduser(text)
    for candidate in (expanded, os.path.join(workspace_root, expanded)):
        if os.path.lexists(candidate) and not os.path.isdir(candidate):
            return candidate
    return None


@dataclass(frozen=True)
class TensorChoice:
    """A resolved tensor file: a dump file (``kind`` a :class:`~precision_tool.formats.tensor_kind.TensorKind`
    and ``index`` select one input or output; ``kind == "dump"``: all of them) or a ``.npy`` file
    (``kind == "npy"``). ``op`` is the graph op of a dump, when known."""

    path: str
    kind: str
    index: Optional[int] = None
    op: object = None

    @property
    def tensor_kind(self) -> Optional[TensorKind]:
        """The side of the op of the one tensor chosen in a dump file; ``None`` for a ``.npy`` or a whole dump."""
        return TensorKind.parse(self.kind)


def choose_tensor_file(spec: ParsedSpec, lookup) -> TensorChoice:
    """Which file (and which tensor in it) ``spec`` means, by the rules of the module docstring."""
    root = lookup.workspace.root
    whole = existing_path(spec.base, root)
    if whole is not None:
        return _file_choice(whole, None, None)
    kind = spec.tensor_kind
    if kind is not None:
        path = existing_path(spec.target, root) or lookup.find_dump_file(spec.target)
        if path is not None:
            return _file_choice(path, kind, spec.index)
        op = _graph_op(spec.target, lookup)
        return TensorChoice(_latest_dump(spec.target, op, lookup), kind, spec.index, op)
    if spec.kind == "reference" and spec.index is not None:  # TF_OP:K always has its K
        return TensorChoice(_reference_file(spec.target, spec.index, lookup), "npy")
    path = lookup.find_dump_file(spec.target)
    if path is not None:
        return TensorChoice(path, "dump")
    path = lookup.find_reference_file(spec.target)
    if path is not None:
        return TensorChoice(path, "npy")
    op = _graph_op(spec.target, lookup)
    if op is None and lookup.dumped_op(spec.target) is None:
        raise WorkspaceError(f"{spec.target!r} is not a file, a dump file name or an op of {lookup.run_label}",
                             FORMS_HINT)
    return TensorChoice(_latest_dump(spec.target, op, lookup), "dump", None, op)


def _file_choice(path: str, kind: Optional[TensorKind], index: Optional[int]) -> TensorChoice:
    if path.lower().endswith(".npy"):
        if kind is not None:
            raise UsageError(f"{path}: a .npy file holds one tensor; drop ':{kind}:{index}'")
        return TensorChoice(path, "npy")
    return TensorChoice(path, kind or "dump", index)


def _graph_op(name: str, lookup):
    model = lookup.graph_model(required=False)
    if model is None:
        return None
    try:
        return lookup.find_op(name)
    except WorkspaceError:
        return None


def _latest_dump(name: str, op, lookup) -> str:
    dumped = lookup.dumped_op(op.name if op is not None else name)
    if dumped is None:
        from precision_tool.alignment.npu_side import why_not_dumped

        where = f"graph op {op.name!r} ({op.type})" if op is not None else repr(name)
        raise WorkspaceError(f"{where} has no dump file under {lookup.dump_dir}",
                             why_not_dumped(op.type if op is not None else "", lookup.dump_dir))
    return dumped.latest.path


def _reference_file(tf_name: str, index: int, lookup) -> str:
    from precision_tool.formats.npy_dir import reference_key, reference_op_name

    wanted = reference_op_name(tf_name)
    listing = lookup.reference_files()
    found: List = [ref for ref in listing if ref.file_op_name == wanted and ref.output_index == index]
    unreadable = [message for path, message in getattr(listing, "unreadable", ())
                  if (reference_key(os.path.basename(path)) or ())[:2] == (wanted, index)]
    if not found and unreadable:
        raise WorkspaceError(f"the reference tensor {tf_name}:{index} cannot be read: {unreadable[0]}")
    if not found:
        raise WorkspaceError(f"no reference tensor {tf_name}:{index} ({wanted}.{index}.*.npy) in "
                             f"{lookup.reference_dir}", "NPU tensors are written OP:output:K")
    return found[0].path
