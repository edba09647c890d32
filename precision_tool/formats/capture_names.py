"""The names file a reference capture leaves beside its tfdbg v2 dump: what the dump itself cannot say.

``precision_tool_names.json`` in the tfdbg v2 folder: each Keras model's name with its ``Input`` layers (and the
layers consuming each), each variable's name with its handle's eager tensor id
(docs/internals/formats.md#capture_names)::

    {"format": "precision_tool.capture_names/1",
     "models": [{"name": "net", "inputs": [{"name": "image", "consumers": ["conv"]}]}],
     "variables": [{"name": "conv/kernel", "handle_id": 17}]}
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import Dict, Optional, Sequence, Tuple

from precision_tool.errors import ReferenceFormatError, WorkspaceError
from precision_tool.fileio import atomic_write, read_input_text
from precision_tool.formats.bounds import loads_json, parse_decimal, shown_name

NAMES_FILE = "precision_tool_names.json"
FORMAT = "precision_tool.capture_names/1"


@dataclass(frozen=True)
class ModelInput:
    """One Keras ``Input`` layer: its name and the layers its tensor goes to."""

    name: str
    consumers: Tuple[str, ...] = ()


@dataclass(frozen=True)
class ModelNames:
    """A Keras model: its name (the name scope of its ops) and its inputs in order."""

    name: str
    inputs: Tuple[ModelInput, ...] = ()


@dataclass(frozen=True)
class VariableName:
    """A variable's name (``conv/kernel``) and its handle's eager tensor id."""

    name: str
    handle_id: int


@dataclass(frozen=True)
class CaptureNames:
    models: Tuple[ModelNames, ...] = ()
    variables: Tuple[VariableName, ...] = ()

    def variable_names(self) -> Dict[int, str]:
        """Handle id -> variable name (the first entry wins when an id is listed twice)."""
        names: Dict[int, str] = {}
        for variable in self.variables:
            names.setdefault(variable.handle_id, variable.name)
        return names

    def to_dict(self) -> dict:
        return {"format": FORMAT,
                "models": [{"name": m.name, "inputs": [{"name": i.name, "consumers": list(i.consumers)}
                                                       for i in m.inputs]} for m in self.models],
                "variables": [{"name": v.name, "handle_id": v.handle_id} for v in self.variables]}

    @classmethod
    def from_dict(cls, data, source=None) -> "CaptureNames":
        """Parse the JSON object; ``ReferenceFormatError`` naming ``source`` when it is not one."""
        try:
            if data.get("format") != FORMAT:
                raise ValueError(f"format is {shown_name(str(data.get('format')))}, expected {FORMAT!r}")
            models = tuple(ModelNames(str(m["name"]), tuple(ModelInput(str(i["name"]),
                                                                       tuple(str(c) for c in i.get("consumers", ())))
                                                            for i in m.get("inputs", ())))
                           for m in data.get("models", ()))
            variables = tuple(VariableName(str(v["name"]), _handle_id(v["handle_id"]))
                              for v in data.get("variables", ()))
        except (AttributeError, KeyError, TypeError, ValueError, RecursionError) as error:
            raise ReferenceFormatError(source, f"not a precision_tool names file ({_short(error)})") from None
        return cls(models, variables)


def _short(error: BaseException, limit: int = 160) -> str:
    """An exception's text cut to ``limit`` characters (a ``KeyError`` quotes the whole key)."""
    text = str(error) if not isinstance(error, RecursionError) else "nested too deeply"
    return text if len(text) <= limit else text[:limit - 3] + "..."


def _handle_id(value) -> int:
    """An eager tensor id: a JSON integer or a string of ASCII digits (not a bool, a float or ``'²'``)."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    parsed = parse_decimal(value) if isinstance(value, str) else None
    if parsed is None:
        raise ValueError(f"handle_id {shown_name(str(value))} is not an integer")
    return parsed


def read_capture_names(folder) -> Optional[CaptureNames]:
    """The names file in ``folder``; ``None`` if there is none.

    Raises :class:`ReferenceFormatError` naming the file when it is there but not a readable names file: not
    a regular file (a FIFO, a folder, a dangling symlink, ...), not UTF-8 JSON, nested too deeply, a number
    of more than 30 digits, or fields of the wrong type.
    """
    path = os.path.join(os.fspath(folder), NAMES_FILE)
    if not os.path.lexists(path):
        return None
    text = read_input_text(path, ReferenceFormatError)
    try:
        data = loads_json(text)
    except ValueError as error:
        raise ReferenceFormatError(path, f"not JSON ({error})") from None
    except RecursionError:
        raise ReferenceFormatError(path, "not a precision_tool names file (JSON nested too deeply)") from None
    return CaptureNames.from_dict(data, path)


def write_capture_names(folder, models: Sequence[ModelNames] = (), variables: Sequence[VariableName] = ()) -> str:
    """Add ``models`` and ``variables`` to the names file in ``folder`` (created if missing); returns its path.

    An entry already in the file is not repeated.
    """
    folder = os.fspath(folder)
    old = read_capture_names(folder) or CaptureNames()
    merged_models = list(old.models) + [m for m in models if m not in old.models]
    merged_variables = list(old.variables) + [v for v in variables if v not in old.variables]
    path = os.path.join(folder, NAMES_FILE)
    text = json.dumps(CaptureNames(tuple(merged_models), tuple(merged_variables)).to_dict(), indent=1) + "\n"
    try:
        with atomic_write(path, "w") as handle:
            handle.write(text)
    except OSError as error:
        raise WorkspaceError(f"{path}: cannot write the names file ({error.strerror or error})") from None
    return path
