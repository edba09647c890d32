"""Read and write GE graph dumps: protobuf text (``ge_proto_*_Build.txt``) and GE's JSON form; read GE's ONNX text
(``ge_onnx_*_Build.pbtxt``, :mod:`precision_tool.formats.ge_onnx`) too. Readers sniff the form: one call reads any.
Bad content, or no op at all, is a :class:`GraphFormatError` naming the file and where in it; a missing file is a
:class:`WorkspaceError`. Notes, atomic writes and memory: docs/internals/formats.md#ge_io.

>>> from precision_tool.formats.ge_graph import Graph, GraphModel, OpNode
>>> model = GraphModel((Graph("ge_default_1", (OpNode("x", "Data"),)),))
>>> parse_ge_graph(ge_graph_to_text(model)) == parse_ge_graph(json.dumps(ge_graph_to_json(model))) == model
True
"""
from __future__ import annotations

import itertools
import json
import os
import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import IO, Any, Callable, Iterable, Iterator, List, Optional, Tuple, Union

from precision_tool.errors import GraphFormatError, WorkspaceError
from precision_tool.fileio import TEXT_LIMIT, atomic_write, open_input
from precision_tool.formats.ge_graph import Graph, GraphModel, OpNode
from precision_tool.formats.ge_json_codec import json_to_record, load_json_text, message_to_json
from precision_tool.formats.ge_onnx import (HEAD_LINES, OnnxModel, looks_like_onnx_text, model_from_onnx,
                                            parse_onnx_lines)
from precision_tool.formats.ge_proto_codec import (MessageReader, fill_graph, fill_op, model_from_message,
                                                  model_to_message)
from precision_tool.formats.ge_schema import GE_RECORDS, ge_messages
from precision_tool.formats.ge_text import NotCanonicalText, format_ge_text, parse_canonical_lines, parse_full_text

PathLike = Union[str, "os.PathLike[str]"]

# ge_proto_00000123_Build.txt, ge_proto_00123_Build.txt, ge_proto_00000123_graph_1_Build.txt, and the ONNX form
# beside them, ge_onnx_00000123_graph_1_Build.pbtxt / ge_onnx_00000123_aclop_graph_1_Build.pbtxt; but not the
# ..._PreRunAfterBuild stage.
BUILD_GRAPH_NAME = re.compile(r"ge_(?:proto_(?P<proto>[0-9]{5}|[0-9]{8})_(?:\S*_)?Build\.txt"
                              r"|onnx_(?P<onnx>[0-9]{5}|[0-9]{8})_(?:\S*_)?Build\.pbtxt)\Z")
_GRAPH_ID_IN_NAME = re.compile(r"_graph_([0-9]{1,10})_")
_ROOT_GRAPH_NAME_IN_HEAD = re.compile(r'(?m)^[ \t]*graph[ \t]*\{\s*name:[ \t]*"((?:[^"\\\n]|\\.)*)"')
# GE prints an ONNX graph's name after its nodes, followed only by the graph's input / output value infos (blocks
# of lines indented deeper), then the "}" closing the file's graph block.
_ROOT_GRAPH_NAME_IN_ONNX_TAIL = re.compile(r'\n  name: "((?:[^"\\\n]|\\.)*)"\n'
                                           r'(?:  (?:input|output) \{\n(?:   [^\n]*\n)*?  \}\n)*\}\s*\Z')
_HEAD_BYTES = 4096
GRAPH_FILE_LIMIT = TEXT_LIMIT
"""The largest GE graph file read (bytes): a 200,000-op Build graph is about 130 MB."""
BUILD_GRAPH_HINT = "GE writes it when DUMP_GE_GRAPH=2, DUMP_GRAPH_LEVEL=3 and DUMP_GRAPH_PATH=<folder> are set"


def no_build_graph(where: str, hint: str = BUILD_GRAPH_HINT) -> WorkspaceError:
    """The one error for "no Build graph in ``where``" (either form), with ``hint``."""
    return WorkspaceError(f"no GE Build graph (ge_proto_*_Build.txt or ge_onnx_*_Build.pbtxt) in {where}", hint)
_NOT_UTF8_HINT = "a GE graph dump is UTF-8 text"
_NO_OPS_HINT = "a GE graph dump lists its ops as 'op { ... }' (ge_proto) or 'node { ... }' (ONNX) blocks"


@dataclass(frozen=True)
class BuildGraphName:
    """What a Build graph file's name says: ``form`` (``"ge_proto"`` or ``"ge_onnx"``), GE's per-process dump
    ``index`` and, when the name has ``_graph_{id}_``, GE's ``graph_id`` (``None`` in old ge_proto names)."""

    form: str
    index: int
    graph_id: Optional[int] = None


def parse_build_graph_name(name: str) -> Optional[BuildGraphName]:
    """The :class:`BuildGraphName` of a Build graph file name, or ``None`` for any other name.

    >>> parse_build_graph_name("ge_onnx_00000001_graph_11_Build.pbtxt")
    BuildGraphName(form='ge_onnx', index=1, graph_id=11)
    >>> parse_build_graph_name("ge_proto_00292_Build.txt"), parse_build_graph_name("ge_proto_00001_Build.pbtxt")
    (BuildGraphName(form='ge_proto', index=292, graph_id=None), None)
    """
    match = BUILD_GRAPH_NAME.match(name)
    if match is None:
        return None
    form = "ge_proto" if match.group("proto") is not None else "ge_onnx"
    graph_id = _GRAPH_ID_IN_NAME.search(name)
    return BuildGraphName(form, int(match.group("proto") or match.group("onnx")),
                          int(graph_id.group(1)) if graph_id else None)


# ----------------------------------------------------------------------------------------- reading
def read_ge_graph(path: PathLike) -> GraphModel:
    """Read a GE graph file: ge_proto text, GE's JSON form or GE's ONNX text.

    The file is opened with :func:`precision_tool.fileio.open_input`: a FIFO, a device (a symlink to
    ``/dev/zero``), a symlink loop or a file over :data:`GRAPH_FILE_LIMIT` is a :class:`GraphFormatError`
    naming it, before anything is read. ge_proto text in GE's layout is parsed line by line as it is read and
    each root graph op becomes a model op when its block closes, so memory holds the model, not the text; any
    other layout, and ONNX text, is read into one message first (:mod:`precision_tool.formats.ge_text`). A file
    holding no op is a :class:`GraphFormatError` (``no ops: ...``). Each note of
    :func:`read_ge_graph_with_notes` is kept in :attr:`GraphModel.notes` naming the file, for the commands to
    show beside their output. A folder or a missing file is a :class:`WorkspaceError`.
    """
    model, notes = read_ge_graph_with_notes(path)
    return replace(model, notes=tuple(f"{path}: {note}" for note in notes)) if notes else model


def read_ge_graph_with_notes(path: PathLike) -> Tuple[GraphModel, Tuple[str, ...]]:
    """:func:`read_ge_graph` returning its notes apart (one line each, without the file name).

    Only the ONNX form has notes (:func:`precision_tool.formats.ge_onnx.model_from_onnx`).
    """
    path = Path(path)
    if os.path.isdir(path):
        raise WorkspaceError(f"{path} is a folder, not a GE graph file",
                             "give the ge_proto_*_Build.txt itself, or use find_build_graph()")
    if not os.path.lexists(path):
        raise WorkspaceError(f"{path}: no such file")
    try:
        with open_input(path, GraphFormatError, GRAPH_FILE_LIMIT) as handle:
            model, notes = _read_open_graph(handle, path)
    except OSError as exc:
        raise GraphFormatError(path, f"cannot be read ({exc.strerror or exc})") from None
    return _with_ops(model, path), notes


def parse_ge_graph(data: Union[bytes, str], source: Optional[PathLike] = None) -> GraphModel:
    """A :class:`GraphModel` from the bytes or text of a GE graph file (any form; ``source``'s name helps tell
    ONNX text, see :func:`~precision_tool.formats.ge_onnx.looks_like_onnx_text`); notes are dropped.

    Raises :class:`GraphFormatError` naming ``source`` for a file that cannot be read or holds no op.
    """
    text = _decode(data, source)
    if text.lstrip()[:1] == "{":
        return _with_ops(_parse_json_text(text, source), source)
    lines = text.split("\n")
    head = list(itertools.islice((line for line in lines if line.strip()), HEAD_LINES))
    if looks_like_onnx_text(head, os.fspath(source) if source is not None else ""):
        return _with_ops(_onnx_from_lines(lines, lambda: text.split("\n"), source).model, source)
    return _with_ops(_model_from_lines(lines, lambda: text.split("\n"), source), source)


def _with_ops(model: GraphModel, source) -> GraphModel:
    """``model``, or a :class:`GraphFormatError` naming ``source`` when none of its graphs holds an op."""
    if any(graph.ops for graph in model.graphs):
        return model
    names = ", ".join(repr(graph.name) for graph in model.graphs[:5]) + (", ..." if len(model.graphs) > 5 else "")
    raise GraphFormatError(source, f"no ops: {len(model.graphs)} graph(s) ({names}) and not one op in them",
                           _NO_OPS_HINT)


def _onnx_from_lines(lines: Iterable[str], lines_again: Callable[[], Iterable[str]], source) -> OnnxModel:
    """The model of GE's ONNX text, with the parser's notes before the converter's."""
    message, parse_notes = parse_onnx_lines(lines, lines_again, source)
    try:
        converted = model_from_onnx(message, source)
    except RecursionError:
        raise GraphFormatError(source, "nested too deeply to read") from None
    return OnnxModel(converted.model, tuple(parse_notes) + converted.notes)


def ge_graph_from_json(obj, source: Optional[PathLike] = None) -> GraphModel:
    """A :class:`GraphModel` from an already loaded JSON object (GE's JSON form), read into ``ge.proto`` records
    (:func:`~precision_tool.formats.ge_json_codec.json_to_record`: no protobuf runtime needed)."""
    if not isinstance(obj, dict):
        raise GraphFormatError(source, f"top level: expected an object, got {type(obj).__name__}")
    try:
        return model_from_message(json_to_record(obj, "ModelDef", source), source)
    except RecursionError:
        raise GraphFormatError(source, "nested too deeply to read") from None


def _read_open_graph(handle: IO[bytes], source: Path) -> Tuple[GraphModel, Tuple[str, ...]]:
    """The model (and notes) in the open file ``handle``: JSON (first non-blank character ``{``) is read whole,
    ONNX text into one message, ge_proto text line by line."""
    lines = _decoded_lines(handle, source)
    head: List[str] = []
    for line in lines:
        if line.strip():
            head.append(line)
            if len(head) == HEAD_LINES:
                break
    if head and head[0].lstrip()[:1] == "{":
        handle.seek(0)
        return _parse_json_text(_decode(handle.read(), source), source), ()

    def lines_again() -> Iterator[str]:
        handle.seek(0)
        return _decoded_lines(handle, source)

    if looks_like_onnx_text(head, source.name):
        onnx = _onnx_from_lines(itertools.chain(head, lines), lines_again, source)
        return onnx.model, onnx.notes
    return _model_from_lines(itertools.chain(head, lines), lines_again, source), ()


def _decoded_lines(handle: IO[bytes], source) -> Iterator[str]:
    """The lines of ``handle`` as text, each with its ``\\n``, a byte order mark dropped; bytes that are not
    UTF-8 are a :class:`GraphFormatError` naming the line and the file offset of the first bad byte."""
    offset = 0
    for number, raw in enumerate(handle, 1):
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise GraphFormatError(source, f"line {number}: byte {offset + exc.start} is not UTF-8",
                                   _NOT_UTF8_HINT) from None
        yield line[1:] if number == 1 and line.startswith("\ufeff") else line
        offset += len(raw)


def _model_from_lines(lines: Iterable[str], lines_again: Callable[[], Iterable[str]], source) -> GraphModel:
    """The model of a text graph: GE's layout as the lines come; any other layout by protobuf's parser from
    ``lines_again()`` (same result; the whole message is then built before the model)."""
    assembler = _ModelAssembler(source)
    try:
        parse_canonical_lines(lines, assembler.root, assembler.add_op, assembler.add_graph)
        return assembler.model()
    except NotCanonicalText:
        pass
    del assembler  # its partial graph, before the whole message is built
    message = parse_full_text(lines_again(), ge_messages()["ModelDef"](), source, lines_again)
    try:
        return model_from_message(message, source)
    except RecursionError:
        raise GraphFormatError(source, "nested too deeply to read") from None


class _ModelAssembler:
    """The model built while the line parser reads: each op of a root graph is converted when its block closes
    (its message then dropped), each root graph when its block closes, the model at the end.

    The first conversion error (an input that is not ``producer:index``, nesting too deep) is kept and raised by
    :meth:`model` once the whole text has parsed, so a syntax error or bad UTF-8 later in the file still wins, as
    when the whole message is parsed first and converted after.
    """

    def __init__(self, source):
        self.source = source
        self.root = GE_RECORDS.empty("ModelDef")  # records: GE's layout is read without the protobuf runtime
        self._reader = MessageReader(source)
        self._ops: List[OpNode] = []
        self._graphs: List[Graph] = []
        self._error: Optional[GraphFormatError] = None

    def add_op(self, op_message) -> None:
        op = self._converted(self._reader.op, op_message)
        if op is not None:
            self._ops.append(op)

    def add_graph(self, graph_message) -> None:
        ops, self._ops = self._ops, []
        graph = self._converted(lambda message: self._reader.graph(message, ops), graph_message)
        if graph is not None:
            self._graphs.append(graph)

    def model(self) -> GraphModel:
        if self._error is not None:
            raise self._error
        model = self._converted(lambda message: self._reader.model(message, self._graphs), self.root)
        if self._error is not None:
            raise self._error
        return model

    def _converted(self, convert: Callable[[Any], Any], message) -> Any:
        if self._error is not None:
            return None
        try:
            return convert(message)
        except GraphFormatError as error:
            self._error = error
        except RecursionError:
            self._error = GraphFormatError(self.source, "nested too deeply to read")
        return None


def _parse_json_text(text: str, source) -> GraphModel:
    return ge_graph_from_json(load_json_text(text, source), source)


def _decode(data: Union[bytes, str], source) -> str:
    if isinstance(data, str):
        text = data
    else:
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            line = data.count(b"\n", 0, exc.start) + 1
            raise GraphFormatError(source, f"line {line}: byte {exc.start} is not UTF-8", _NOT_UTF8_HINT) from None
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


def iter_ge_graph_json(model: GraphModel) -> Iterator[str]:
    """``json.dumps(ge_graph_to_json(model))`` in pieces, one op at a time: the same characters, without the
    whole JSON object or string ever in memory."""
    head = message_to_json(model_to_message(GraphModel((), model.name, model.version, model.custom_version,
                                                       model.attrs)))
    yield _open_object(head, "graph")
    for number, graph in enumerate(model.graphs):
        yield ", " if number else ""
        yield from _graph_json(graph)
    yield "]}"


def _graph_json(graph: Graph) -> Iterator[str]:
    """One graph of :func:`iter_ge_graph_json`: ``{"name": ..., <other fields>, "op": [...]}``."""
    message = ge_messages()["GraphDef"]()
    fill_graph(message, Graph(graph.name, (), graph.inputs, graph.outputs, graph.attrs))
    fields = message_to_json(message)
    yield _open_object({"name": fields.pop("name", ""), **fields}, "op")
    for number, op in enumerate(graph.ops):
        yield ", " if number else ""
        yield json.dumps(_op_json(op))
    yield "]}"


def _op_json(op: OpNode) -> dict:
    message = ge_messages()["OpDef"]()
    fill_op(message, op)
    fields = message_to_json(message)
    return {"name": fields.pop("name", ""), "type": fields.pop("type", ""), **fields}


def _open_object(fields: dict, list_key: str) -> str:
    """``json.dumps({**fields, list_key: [...]})`` up to and including the ``[`` of the list."""
    text = json.dumps({**fields, list_key: []})
    return text[:-2]  # drop "]}"


def write_ge_graph_text(model: GraphModel, path: PathLike) -> Path:
    """Write ``model`` as protobuf text (the form of ``ge_proto_00000123_Build.txt``); returns the path."""
    return atomic_write_text(path, ge_graph_to_text(model))


def write_ge_graph_json(model: GraphModel, path: PathLike) -> Path:
    """Write ``model`` in GE's JSON form (one line, ASCII), op by op (:func:`iter_ge_graph_json`); returns the
    path."""
    return atomic_write_text(path, iter_ge_graph_json(model))


def atomic_write_text(path: PathLike, text: Union[str, Iterable[str]]) -> Path:
    """Write ``text`` (UTF-8; a string, or pieces written one after the other) to ``path`` atomically
    (:func:`precision_tool.fileio.atomic_write`).

    Raises :class:`WorkspaceError` when the folder is missing or not writable.
    """
    path = Path(path)
    pieces = [text] if isinstance(text, str) else text
    try:
        with atomic_write(path, "w") as out:
            for piece in pieces:
                out.write(piece)
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
        raise no_build_graph(os.fspath(folder))
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
    """The root graph's name of a text graph file: for ge_proto read from its first lines, for ONNX (which GE
    prints after the graph's nodes) from its last ones, when GE's layout allows; else by reading the whole file."""
    path = Path(path)
    try:
        with open_input(path, GraphFormatError, GRAPH_FILE_LIMIT) as handle:
            head = handle.read(_HEAD_BYTES).decode("utf-8", "replace")
            onnx = looks_like_onnx_text([line for line in head.split("\n") if line.strip()], path.name)
            if onnx:
                handle.seek(max(0, os.fstat(handle.fileno()).st_size - _HEAD_BYTES))
                head = handle.read(_HEAD_BYTES).decode("utf-8", "replace")
    except OSError as exc:
        raise GraphFormatError(path, f"cannot be read ({exc.strerror or exc})") from None
    match = (_ROOT_GRAPH_NAME_IN_ONNX_TAIL if onnx else _ROOT_GRAPH_NAME_IN_HEAD).search(head)
    if match and "\\" not in match.group(1) and "\ufffd" not in match.group(1):
        return match.group(1)
    return read_ge_graph(path).root.name
