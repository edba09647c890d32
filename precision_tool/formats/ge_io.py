"""Read and write GE graph dumps: protobuf text (``ge_proto_*_Build.txt``) and GE's JSON form.

>>> from precision_tool.formats.ge_graph import Graph, GraphModel, OpNode
>>> model = GraphModel((Graph("ge_default_1", (OpNode("x", "Data"),)),))
>>> parse_ge_graph(ge_graph_to_text(model)) == parse_ge_graph(json.dumps(ge_graph_to_json(model))) == model
True

Readers sniff the form (JSON starts with ``{``), so one call reads either. Every problem with a file's
content is a :class:`GraphFormatError` naming the file and where in it (line and column for text, the
JSON path for JSON); a missing file or folder is a :class:`WorkspaceError`. Writers replace the target
atomically (temporary file in the same folder, then ``os.replace``).
"""
from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import List, Optional, Union

from precision_tool.errors import GraphFormatError, WorkspaceError
from precision_tool.fileio import atomic_write
from precision_tool.formats.ge_graph import GraphModel
from precision_tool.formats.ge_json_codec import json_to_message, message_to_json
from precision_tool.formats.ge_proto_codec import model_from_message, model_to_message
from precision_tool.formats.ge_schema import ge_messages
from precision_tool.formats.ge_text import format_ge_text, parse_ge_text

PathLike = Union[str, "os.PathLike[str]"]

# ge_proto_00000123_Build.txt, ge_proto_00123_Build.txt, ge_proto_00000123_graph_1_Build.txt; but not
# the ..._PreRunAfterBuild.txt stage.
BUILD_GRAPH_NAME = re.compile(r"ge_proto_(\d{5}|\d{8})_(?:\S*_)?Build\.txt\Z")
_ROOT_GRAPH_NAME_IN_HEAD = re.compile(r'(?m)^[ \t]*graph[ \t]*\{\s*name:[ \t]*"((?:[^"\\\n]|\\.)*)"')
_HEAD_BYTES = 4096
BUILD_GRAPH_HINT = "GE writes it when DUMP_GE_GRAPH=2, DUMP_GRAPH_LEVEL=3 and DUMP_GRAPH_PATH=<folder> are set"


# ----------------------------------------------------------------------------------------- reading
def read_ge_graph(path: PathLike) -> GraphModel:
    """Read a GE graph file, text or JSON form."""
    path = Path(path)
    if path.is_dir():
        raise WorkspaceError(f"{path} is a folder, not a GE graph file",
                             "give the ge_proto_*_Build.txt itself, or use find_build_graph()")
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise WorkspaceError(f"{path}: no such file") from None
    except OSError as exc:
        raise GraphFormatError(path, f"cannot be read ({exc.strerror or exc})") from None
    return parse_ge_graph(data, source=path)


def parse_ge_graph(data: Union[bytes, str], source: Optional[PathLike] = None) -> GraphModel:
    """A :class:`GraphModel` from the bytes or text of a GE graph file (either form)."""
    text = _decode(data, source)
    if text.lstrip()[:1] == "{":
        return _parse_json_text(text, source)
    try:
        return model_from_message(parse_ge_text(text, source), source)
    except RecursionError:
        raise GraphFormatError(source, "nested too deeply to read") from None


def ge_graph_from_json(obj, source: Optional[PathLike] = None) -> GraphModel:
    """A :class:`GraphModel` from an already loaded JSON object (GE's JSON form)."""
    if not isinstance(obj, dict):
        raise GraphFormatError(source, f"top level: expected an object, got {type(obj).__name__}")
    message = ge_messages()["ModelDef"]()
    try:
        json_to_message(obj, message, source)
        return model_from_message(message, source)
    except RecursionError:
        raise GraphFormatError(source, "nested too deeply to read") from None


def _parse_json_text(text: str, source) -> GraphModel:
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as exc:
        raise GraphFormatError(source, f"line {exc.lineno}, column {exc.colno}: {exc.msg}",
                               "not valid JSON") from None
    except RecursionError:
        raise GraphFormatError(source, "nested too deeply to read") from None
    return ge_graph_from_json(obj, source)


def _decode(data: Union[bytes, str], source) -> str:
    if isinstance(data, str):
        text = data
    else:
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            line = data.count(b"\n", 0, exc.start) + 1
            raise GraphFormatError(source, f"line {line}: byte {exc.start} is not UTF-8",
                                   "a GE graph dump is UTF-8 text") from None
    return text[1:] if text.startswith("\ufeff") else text


# ----------------------------------------------------------------------------------------- writing
def ge_graph_to_text(model: GraphModel) -> str:
    """The protobuf text form of ``model``, as GE writes ``ge_proto_*_Build.txt``."""
    return format_ge_text(model_to_message(model))


def ge_graph_to_json(model: GraphModel) -> dict:
    """``model`` in GE's JSON form, as msaccucmp's ``compare -f`` accepts it.

    Beyond GE's own output, keys msaccucmp insists on are always present, even when empty: ``graph``,
    each graph's ``name`` and ``op``, each op's ``name`` and ``type``.
    """
    obj = message_to_json(model_to_message(model))
    graphs = []
    for graph in obj.pop("graph", []):
        ops = [{"name": op.pop("name", ""), "type": op.pop("type", ""), **op} for op in graph.pop("op", [])]
        graphs.append({"name": graph.pop("name", ""), **graph, "op": ops})
    return {**obj, "graph": graphs}


def write_ge_graph_text(model: GraphModel, path: PathLike) -> Path:
    """Write ``model`` as protobuf text (the form of ``ge_proto_00000123_Build.txt``); returns the path."""
    return atomic_write_text(path, ge_graph_to_text(model))


def write_ge_graph_json(model: GraphModel, path: PathLike) -> Path:
    """Write ``model`` in GE's JSON form (one line, ASCII); returns the path."""
    return atomic_write_text(path, json.dumps(ge_graph_to_json(model), ensure_ascii=True))


def atomic_write_text(path: PathLike, text: str) -> Path:
    """Write ``text`` (UTF-8) to ``path`` atomically (:func:`precision_tool.fileio.atomic_write`).

    Raises :class:`WorkspaceError` when the folder is missing or not writable.
    """
    path = Path(path)
    try:
        with atomic_write(path, "w") as out:
            out.write(text)
    except OSError as exc:
        raise WorkspaceError(f"cannot write {path}: {exc.strerror or exc}") from None
    return path


# ----------------------------------------------------------------------------------------- finding
def build_graph_files(folder: PathLike) -> List[Path]:
    """The Build-stage graph files directly in ``folder``, newest first (by time written, then index).

    Entries that cannot be examined (a symlink loop) are left out. Raises :class:`WorkspaceError` when
    ``folder`` is missing or cannot be listed. For ``DUMP_GRAPH_PATH`` itself, which CANN 8 splits into
    per-process folders, use :func:`~precision_tool.formats.ge_graph_folders.choose_build_graph`.
    """
    from precision_tool.formats.ge_graph_folders import build_files_in

    return [path for _, _, path in build_files_in(os.fspath(folder))]


def find_build_graph(folder: PathLike, graph_name: Optional[str] = None) -> Path:
    """The Build graph file to use in ``folder`` (this folder only: for ``DUMP_GRAPH_PATH``, which CANN 8 splits
    into per-process folders, use :func:`~precision_tool.formats.ge_graph_folders.choose_build_graph`).

    Without ``graph_name``, the newest one (written last; among equal times, the largest index). With it,
    the newest whose root graph is called ``graph_name`` -- the ``model_name`` folder of the dump tree.
    Raises :class:`WorkspaceError` when there is none, listing what is there.
    """
    candidates = build_graph_files(folder)
    if not candidates:
        raise WorkspaceError(f"no GE Build graph (ge_proto_*_Build.txt) in {folder}", BUILD_GRAPH_HINT)
    if graph_name is None:
        return candidates[0]
    seen = []
    for path in candidates:
        name = root_graph_name(path)
        if name == graph_name:
            return path
        seen.append(f"{path.name}: {name}")
    raise WorkspaceError(f"no Build graph in {folder} has a root graph called {graph_name!r}",
                         "found " + "; ".join(seen))


def root_graph_name(path: PathLike) -> str:
    """The root graph's name of a text graph file, read from its first lines when GE's layout allows."""
    path = Path(path)
    try:
        with open(path, "rb") as handle:
            head = handle.read(_HEAD_BYTES).decode("utf-8", "replace")
    except OSError as exc:
        raise GraphFormatError(path, f"cannot be read ({exc.strerror or exc})") from None
    match = _ROOT_GRAPH_NAME_IN_HEAD.search(head)
    if match and "\\" not in match.group(1):
        return match.group(1)
    return read_ge_graph(path).root.name
