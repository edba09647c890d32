"""The ``customize_dtypes`` file of the Ascend TF adapter: per-op dtypes, the one file-driven way to keep a *named*
op in float32 (``../shared/docs/ascend-precision-config.md`` §2.4). One entry per line::

    model/dense_1/MatMul::InputDtype:float32,float32,OutputDtype:float32
    OpType::MatMulV2:InputDtype:float16,float16,float32,OutputDtype:float32

A name entry overrides a type entry; the dtypes must match the op's inputs and outputs, integer inputs included.
Blank lines and ``#`` comments are skipped when reading. See docs/internals/formats.md#customize_dtypes.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Dict, FrozenSet, Iterable, Mapping, Sequence, Tuple

from precision_tool.errors import FileFormatError, WorkspaceError

FLOAT32 = "float32"
HALF = ("float16", "bfloat16")  # the file's words for the half-precision types an op can be kept out of
HALF_DESCRIPTOR_TYPES = ("DT_FLOAT16", "DT_BF16")  # the same two as a GE graph's tensor descriptors name them


def is_half(dtype: str) -> bool:
    """Whether ``dtype`` -- a file word, a GE descriptor name or a row's NPU dtype label -- is float16 or bfloat16.

    >>> is_half("DT_BF16"), is_half("float16"), is_half("DT_FLOAT")
    (True, True, False)
    """
    return dtype in HALF or dtype in HALF_DESCRIPTOR_TYPES


def widened(dtypes: Sequence[str]) -> Tuple[str, ...]:
    """The file's words for an op's descriptor dtypes, float16/bfloat16 widened to float32 and the rest kept: the
    count and the integer inputs must match the op, or GE refuses to compile it.

    >>> widened(["DT_FLOAT16", "DT_INT32"])
    ('float32', 'int32')
    """
    from precision_tool.formats.dtypes import DTYPE_BY_ENUM_NAME, NUMPY_DTYPES

    words = []
    for name in dtypes:
        if is_half(name):
            words.append(FLOAT32)
            continue
        numpy_type = NUMPY_DTYPES.get(DTYPE_BY_ENUM_NAME.get(name, -1))  # the project's one dtype table
        words.append(numpy_type.name if numpy_type is not None else name[3:].lower() if name.startswith("DT_")
                     else name)
    return tuple(words)


class CustomizeDtypesError(FileFormatError):
    format_name = "customize_dtypes file"


@dataclass(frozen=True)
class CustomizeDtypes:
    """``by_name`` / ``by_type``: op name or type -> ``(input dtypes, output dtypes)``."""

    by_name: Mapping[str, Tuple[Tuple[str, ...], Tuple[str, ...]]] = field(default_factory=dict)
    by_type: Mapping[str, Tuple[Tuple[str, ...], Tuple[str, ...]]] = field(default_factory=dict)

    def float32_ops(self) -> FrozenSet[str]:
        """The op names kept in float32: entries whose float dtypes are all float32 (integer inputs such as an
        axis keep their own dtype; an entry with any float16/bfloat16 keeps nothing in float32)."""
        return frozenset(name for name, (inputs, outputs) in self.by_name.items()
                         if FLOAT32 in inputs + outputs and not any(is_half(d) for d in inputs + outputs))


def parse_customize_dtypes(text: str, source=None) -> CustomizeDtypes:
    """:class:`CustomizeDtypes` from the file's text; :class:`CustomizeDtypesError` (one line, naming the line)
    for an entry that is not ``NAME::InputDtype:...,OutputDtype:...`` or ``OpType::TYPE:InputDtype:...``.

    >>> parse_customize_dtypes("a/MatMul::InputDtype:float32,float32,OutputDtype:float32").float32_ops()
    frozenset({'a/MatMul'})
    """
    by_name: Dict[str, Tuple[Tuple[str, ...], Tuple[str, ...]]] = {}
    by_type: Dict[str, Tuple[Tuple[str, ...], Tuple[str, ...]]] = {}
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        head, sep, spec = line.partition("::")
        if not sep or not head:
            raise CustomizeDtypesError(source, f"line {number}: expected NAME::InputDtype:...,OutputDtype:..., got "
                                               f"{line[:80]!r}")
        table = by_name
        if head == "OpType":
            op_type, colon, spec = spec.partition(":")
            if not colon or not op_type:
                raise CustomizeDtypesError(source, f"line {number}: expected OpType::TYPE:InputDtype:...")
            head, table = op_type, by_type
        table[head] = _dtypes(spec, source, number)
    return CustomizeDtypes(by_name, by_type)


def _dtypes(spec: str, source, number: int) -> Tuple[Tuple[str, ...], Tuple[str, ...]]:
    inputs: Tuple[str, ...] = ()
    outputs: Tuple[str, ...] = ()
    before, sep, after = spec.partition("OutputDtype:")
    if before.startswith("InputDtype:"):
        inputs = tuple(d.strip() for d in before[len("InputDtype:"):].split(",") if d.strip())
    elif before.strip(", "):
        raise CustomizeDtypesError(source, f"line {number}: expected InputDtype:... before OutputDtype:...")
    if sep:
        outputs = tuple(d.strip() for d in after.split(",") if d.strip())
    if not inputs and not outputs:
        raise CustomizeDtypesError(source, f"line {number}: no InputDtype or OutputDtype given")
    return inputs, outputs


def read_customize_dtypes(path) -> CustomizeDtypes:
    from precision_tool.fileio import read_input_bytes

    if not os.path.lexists(path):
        raise WorkspaceError(f"{os.fspath(path)}: no such file")
    data = read_input_bytes(path, CustomizeDtypesError)
    try:
        return parse_customize_dtypes(data.decode("utf-8-sig"), path)
    except UnicodeDecodeError as error:
        raise CustomizeDtypesError(path, f"byte {error.start} is not UTF-8") from None


def customize_lines(ops: Iterable[Tuple[str, Sequence[str], Sequence[str]]]) -> str:
    """The file for ``(name, input dtypes, output dtypes)`` ops, one line each, in the order given.

    >>> print(customize_lines([("model/dense_1/MatMul", ["float32", "float32"], ["float32"])]), end="")
    model/dense_1/MatMul::InputDtype:float32,float32,OutputDtype:float32
    """
    return "".join(f"{name}::InputDtype:{','.join(inputs)},OutputDtype:{','.join(outputs)}\n"
                   for name, inputs, outputs in ops)


def write_customize_dtypes(path, ops: Iterable[Tuple[str, Sequence[str], Sequence[str]]]) -> str:
    """Write :func:`customize_lines` of ``ops`` to ``path`` atomically (its folder created); returns the path."""
    from precision_tool.fileio import atomic_write

    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with atomic_write(path, "w") as handle:
        handle.write(customize_lines(ops))
    return os.fspath(path)
