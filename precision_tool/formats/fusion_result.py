"""Fusion artifacts: ``fusion_result.json`` (which passes fired) and the fusion switch file.

``fusion_result.json`` holds records, one per compiled graph, of ``"graph_fusion"`` / ``"ub_fusion"`` maps of pass
name -> ``{"match_times": "3", "effect_times": "3"}``, in every shape real CANN output has; they are kept apart, in
file order, and a file damaged by concurrent writers is salvaged (:attr:`FusionResult.damage`). The switch file is
JSON ``{"Switch": {"GraphFusion": {"ALL": "off", "APass": "on"}, "UBFusion": {...}}}`` (``ALL`` sets the family
default, named passes override it) or older ``PassName:off`` lines (both families); it reads into
:class:`FusionSwitches` and is written as JSON. Shapes and damage: docs/internals/formats.md#fusion_result.
"""
from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Mapping, Optional, Sequence, Tuple

from precision_tool.errors import FusionFormatError, WorkspaceError
from precision_tool.fileio import read_input_bytes
from precision_tool.formats.bounds import json_decoder, shown_name
from precision_tool.formats.ge_io import PathLike, atomic_write_text

GRAPH_FUSION, UB_FUSION = "graph_fusion", "ub_fusion"
FAMILIES = (GRAPH_FUSION, UB_FUSION)
_SWITCH_FAMILY_KEYS = {GRAPH_FUSION: "GraphFusion", UB_FUSION: "UBFusion"}
# Ids and counts: 1 to 20 ASCII digits (a uint64). '²' or a 5,000-digit number is damage, never an int() crash.
_CURRENT_KEY = re.compile(r"(?:session_and_graph_id_([0-9]{1,20})_|graph_id_)([0-9]{1,20})\Z")
_OLD_SESSION_AND_GRAPH = re.compile(r"([0-9]{1,20})_([0-9]{1,20})\Z")
_COUNT = re.compile(r"[0-9]{1,20}")
_ID_KEY_PREFIXES = ("session_and_graph_id_", "graph_id_")
_ID_FIELDS = ("session_and_graph_id", "graphId", "sessionId")
ALL_PASSES = "ALL"


# ----------------------------------------------------------------------------------------- fusion_result.json
@dataclass(frozen=True)
class PassRecord:
    """How often one fusion pass matched and took effect in one graph."""

    name: str
    family: str
    match_times: int = 0
    effect_times: int = 0
    repository_hit_times: Optional[int] = None

    @property
    def took_effect(self) -> bool:
        return self.effect_times > 0


@dataclass(frozen=True)
class GraphFusion:
    """The passes recorded for one graph. ``key`` is the current form's key for it."""

    key: str
    passes: Tuple[PassRecord, ...] = ()
    session_id: Optional[int] = None
    graph_id: Optional[int] = None

    def family(self, family: str) -> Tuple[PassRecord, ...]:
        return tuple(p for p in self.passes if p.family == family)


@dataclass(frozen=True)
class FusionResult:
    """Every record of a fusion_result.json, in file order (one per graph, several for the same graph when
    several processes wrote it), and ``damage``: one line naming the first damaged place of a damaged file
    (its byte offset and cause) and how many more there are, ``""`` for an intact file."""

    graphs: Tuple[GraphFusion, ...] = ()
    damage: str = ""

    def effective_passes(self, family: Optional[str] = None) -> Tuple[str, ...]:
        """Names of passes with effect_times > 0 in any graph (of ``family`` if given), sorted."""
        return tuple(sorted({p.name for g in self.graphs for p in g.passes
                             if p.took_effect and family in (None, p.family)}))


def parse_fusion_result(text: str, source: Optional[PathLike] = None) -> FusionResult:
    """A :class:`FusionResult` from a fusion_result.json's text, in any shape (docs/internals/formats.md#fusion_result).

    Records are kept one by one, in file order -- the same session and graph may appear several times (one
    record per process that wrote it), and the overview sums them as written. A damaged file is salvaged:
    every complete record is read and :attr:`FusionResult.damage` names the first damaged place (byte offset)
    and how many more there are. Raises :class:`FusionFormatError` when not one record could be read (the
    message is the first damage's), or when the text is empty.
    """
    records, damage = _scan_records(text, source)
    if damage and not records:
        raise FusionFormatError(source, f"byte {damage[0].offset}: {damage[0].cause}")
    return FusionResult(tuple(records), _damage_text(damage, len(records)))


def read_fusion_result(path: PathLike) -> FusionResult:
    return parse_fusion_result(_read_text(path), source=path)


def fusion_result_to_json(result: FusionResult) -> Dict[str, dict]:
    """``result`` in the current form (counts as strings, as the fusion engine writes them)."""
    out: Dict[str, dict] = {}
    for graph in result.graphs:
        entry = out.setdefault(graph.key, {})
        for record in graph.passes:
            counts = {"match_times": str(record.match_times), "effect_times": str(record.effect_times)}
            if record.repository_hit_times is not None:
                counts["repository_hit_times"] = str(record.repository_hit_times)
            entry.setdefault(record.family, {})[record.name] = counts
    return out


def write_fusion_result(result: FusionResult, path: PathLike) -> Path:
    return atomic_write_text(path, json.dumps(fusion_result_to_json(result), indent=4) + "\n")


def _key_ids(key: str, source) -> Tuple[Optional[int], Optional[int]]:
    """``(session id, graph id)`` of a current-form key (``session_and_graph_id_{s}_{g}`` or ``graph_id_{g}``);
    ``(None, None)`` for a key of another form. A key of this form whose ids are not 1 to 20 ASCII digits
    (``'²'``, 5,000 digits) is damage: :class:`FusionFormatError`."""
    match = _CURRENT_KEY.match(key)
    if match:
        return (int(match.group(1)) if match.group(1) else None), int(match.group(2))
    if key.startswith(_ID_KEY_PREFIXES):
        raise FusionFormatError(source, f"key {shown_name(key)}: its ids are not 1 to 20 ASCII digits")
    return None, None


def _old_form_graph(obj: dict, source) -> GraphFusion:
    """An older-form object: ids from ``session_and_graph_id`` (``"{s}_{g}"``), else ``graphId`` and
    ``sessionId`` (older TF runs write them apart); each, when present, must be 1 to 20 ASCII digits (else
    :class:`FusionFormatError`)."""
    session_id = graph_id = None
    pair = obj.get("session_and_graph_id")
    if pair is not None:
        if not (isinstance(pair, str) and _OLD_SESSION_AND_GRAPH.match(pair)):
            raise FusionFormatError(source, f"session_and_graph_id {_shown_value(pair)} is not "
                                            "'{session}_{graph}' of 1 to 20 ASCII digits each")
        session_id, graph_id = (int(v) for v in pair.split("_"))
    else:
        graph_id = _id_field(obj, "graphId", source)
        session_id = _id_field(obj, "sessionId", source)
    if session_id is not None and graph_id is not None:
        key = f"session_and_graph_id_{session_id}_{graph_id}"
    else:
        key = f"graph_id_{graph_id}" if graph_id is not None else "graph"
    return GraphFusion(key, _passes(obj, source, key), session_id, graph_id)


def _id_field(obj: dict, name: str, source) -> Optional[int]:
    """``obj[name]`` as an id (a JSON integer or a string of 1 to 20 ASCII digits); ``None`` when absent."""
    value = obj.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not (isinstance(value, (str, int)) and _COUNT.fullmatch(str(value))):
        raise FusionFormatError(source, f"{name} {_shown_value(value)} is not 1 to 20 ASCII digits")
    return int(value)


def _passes(obj: dict, source, where: str) -> Tuple[PassRecord, ...]:
    records = []
    for family in FAMILIES:
        passes = obj.get(family, {})
        if not isinstance(passes, dict):
            raise FusionFormatError(source, f"{where}.{family}: expected an object of pass name -> counts")
        for name, counts in passes.items():
            if not isinstance(counts, dict):
                raise FusionFormatError(source, f"{where}.{family}.{name}: expected an object of counts")
            nested = next((key for key, value in counts.items() if isinstance(value, (dict, list))), None)
            if nested is not None:  # two writers interleaved: a record spliced into this one
                raise FusionFormatError(source, f"{where}.{family}.{name}.{shown_name(nested)[1:-1]}: an object "
                                                "where a count should be")
            hits = counts.get("repository_hit_times")
            records.append(PassRecord(
                name, family, _count(counts.get("match_times", 0), source, f"{where}.{family}.{name}.match_times"),
                _count(counts.get("effect_times", 0), source, f"{where}.{family}.{name}.effect_times"),
                None if hits is None else _count(hits, source, f"{where}.{family}.{name}.repository_hit_times")))
    return tuple(records)


def _count(value, source, where: str) -> int:
    """A pass count: a non-negative JSON integer, or a string of 1 to 20 ASCII digits (the engine's form)."""
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    if isinstance(value, str) and _COUNT.fullmatch(value.strip()):
        return int(value)
    raise FusionFormatError(source, f"{where}: expected a count, got {_shown_value(value)}")


def _shown_value(value) -> str:
    """A JSON value for a one-line message: a string quoted and cut (:func:`~.bounds.shown_name`), else its repr cut."""
    return shown_name(value) if isinstance(value, str) else shown_name(repr(value))[1:-1]


@dataclass(frozen=True)
class _Damage:
    """One damaged place: ``offset`` in bytes from the start of the file, ``cause`` what is wrong there."""

    offset: int
    cause: str


class _Grammar:
    """The separators allowed between records: objects back to back (``}{``), in an array (``[{},{}]``), or
    arrays back to back (``}][{``) -- whitespace anywhere. ``depth`` is 1 inside an array, 0 outside, ``None``
    after damage (unknown: the next separator or record sets it); ``last`` is what came before."""

    def __init__(self):
        self.depth: Optional[int] = 0
        self.last = "start"  # start | record | open | close | comma | damage

    def separator(self, char: str) -> bool:
        """Take ``[``, ``]`` or ``,``; False when it cannot stand here."""
        depth, last = self.depth, self.last
        if char == "[":
            ok = depth in (0, None) and last != "comma"
            self.depth, self.last = 1, "open"
        elif char == "]":
            ok = depth in (1, None) and last in ("record", "open", "damage")
            self.depth, self.last = 0, "close"
        else:
            ok = depth in (1, None) and last in ("record", "damage")
            self.depth, self.last = 1, "comma"
        return ok

    def record(self) -> bool:
        """Take a record; False when one cannot start here (a missing ``,`` between two in an array)."""
        ok = not (self.depth == 1 and self.last == "record")
        self.last = "record"
        return ok

    def end(self) -> bool:
        return self.depth in (0, None) and self.last != "comma"


def _scan_records(text: str, source) -> Tuple[List[GraphFusion], List[_Damage]]:
    """Every record of ``text`` and every damaged place, walking the text once.

    A record is decoded with :meth:`json.JSONDecoder.raw_decode` wherever a ``{`` stands where a record may;
    the text between records must follow :class:`_Grammar`. Where it does not -- a NUL run, a stray
    character, ``[,`` from two writers interleaving, a record cut short -- the damage is noted and the walk
    resynchronises on the next ``{`` that decodes into a record-shaped object (:func:`_looks_like_record`);
    fragments of a broken record met on the way (its pass maps) are skipped.
    """
    decoder = json_decoder()  # integers of at most 30 digits
    records: List[GraphFusion] = []
    damage: List[_Damage] = []
    grammar = _Grammar()
    position, size = 0, len(text)
    resyncing = False
    objects = 0  # top-level objects read: ``{}`` is an empty result, not an empty file
    while True:
        while position < size and text[position] in _WHITESPACE:
            position += 1
        if position == size:
            break
        char = text[position]
        if char in "[],":
            if not grammar.separator(char) and not resyncing:
                damage.append(_Damage(_byte_offset(text, position), f"{char!r} cannot stand there"))
                grammar.last = "damage"
            position += 1
            continue
        if char != "{":
            end = position + 1
            while end < size and text[end] not in "[]{},":
                end += 1
            if not resyncing:  # inside a broken record, or NULs where one was: resynchronise
                damage.append(_Damage(_byte_offset(text, position), _stray_text(text[position:end].rstrip())))
                grammar.depth, grammar.last, resyncing = None, "damage", True
            position = end
            continue
        try:
            obj, end = decoder.raw_decode(text, position)
        except json.JSONDecodeError as exc:
            if not resyncing:
                damage.append(_Damage(_byte_offset(text, exc.pos),
                                      f"line {exc.lineno}, column {exc.colno}: {exc.msg} (a record cut short)"))
                grammar.depth, grammar.last, resyncing = None, "damage", True
            position += 1
            continue
        except ValueError as exc:  # a number too long to be a count (bounds.JsonNumberTooLong)
            damage.append(_Damage(_byte_offset(text, position), f"not a fusion result: {exc}"))
            grammar.depth, grammar.last, resyncing = None, "damage", True
            position += 1
            continue
        except RecursionError:
            damage.append(_Damage(_byte_offset(text, position), "nested too deeply to read"))
            grammar.depth, grammar.last, resyncing = None, "damage", True
            position += 1
            continue
        if resyncing and not _looks_like_record(obj):
            position += 1  # a fragment of the broken record (a pass map), which may hold a whole record
            continue
        try:
            found = _records_of(obj, source)
        except FusionFormatError as error:  # e.g. another writer's record spliced into this one's pass map
            damage.append(_Damage(_byte_offset(text, position), error.cause))
            grammar.depth, grammar.last, resyncing = None, "damage", True
            position += 1
            continue
        if not grammar.record():
            damage.append(_Damage(_byte_offset(text, position), "two records without a ',' between them"))
        resyncing = False
        objects += 1
        records.extend(found)
        position = end
    if not objects and not damage:
        raise FusionFormatError(source, "is empty")
    if not grammar.end() and not resyncing:
        damage.append(_Damage(_byte_offset(text, size), "the file ends inside an array"))
    return records, damage


_WHITESPACE = frozenset(" \t\r\n")


def _records_of(obj, source) -> List[GraphFusion]:
    """The records of one top-level JSON object: itself (older forms), or one per key (current form)."""
    if not isinstance(obj, dict):
        raise FusionFormatError(source, f"expected a JSON object, got {type(obj).__name__}")
    if GRAPH_FUSION in obj or UB_FUSION in obj:
        return [_old_form_graph(obj, source)]
    graphs = []
    for key, value in obj.items():
        if not isinstance(value, dict):
            raise FusionFormatError(source, f"{shown_name(key)[1:-1]}: expected an object of graph_fusion/ub_fusion")
        session_id, graph_id = _key_ids(key, source)
        graphs.append(GraphFusion(key, _passes(value, source, key), session_id, graph_id))
    return graphs


def _looks_like_record(obj) -> bool:
    """Whether an object met while resynchronising is a whole record, not a fragment of a broken one: it holds
    ``graph_fusion``/``ub_fusion`` with its ids (an id-less one is the value of a current-form key whose key
    was damaged: it cannot be told from its neighbours), or every key is a current-form graph key."""
    if not isinstance(obj, dict) or not obj:
        return False
    if GRAPH_FUSION in obj or UB_FUSION in obj:
        return any(key in obj for key in _ID_FIELDS)
    return all(isinstance(key, str) and key.startswith(_ID_KEY_PREFIXES) for key in obj)


def _stray_text(fragment: str) -> str:
    nul = len(fragment) - len(fragment.lstrip("\0"))
    if nul:
        return f"{nul} NUL byte(s)" if nul == len(fragment) else f"{nul} NUL byte(s), then other text"
    return f"stray text {shown_name(fragment, 40)}"


def _byte_offset(text: str, position: int) -> int:
    """The byte offset in the UTF-8 file of character ``position`` of its text."""
    prefix = text[:position]
    return position if prefix.isascii() else len(prefix.encode("utf-8", "surrogatepass"))


def _damage_text(damage: Sequence[_Damage], records: int) -> str:
    """One line naming the first damaged place and how many more there are; ``""`` without damage."""
    if not damage:
        return ""
    more = f", and {len(damage) - 1} more damaged place(s)" if len(damage) > 1 else ""
    return (f"damaged at byte {damage[0].offset} ({damage[0].cause}){more}: read the {records} complete record(s), "
            "the damaged parts are lost")


def _json_objects(text: str, source) -> List[dict]:
    """Every JSON object in ``text``, strictly (a switch file): one, or several written back to back."""
    decoder = json_decoder()  # integers of at most 30 digits
    objects, position = [], 0
    while True:
        while position < len(text) and text[position].isspace():
            position += 1
        if position == len(text):
            break
        try:
            obj, position = decoder.raw_decode(text, position)
        except json.JSONDecodeError as exc:
            raise FusionFormatError(source, f"line {exc.lineno}, column {exc.colno}: {exc.msg}") from None
        except ValueError as exc:  # a number too long to be a count (bounds.JsonNumberTooLong)
            raise FusionFormatError(source, f"not a fusion result: {exc}") from None
        except RecursionError:
            raise FusionFormatError(source, "nested too deeply to read") from None
        if not isinstance(obj, dict):
            raise FusionFormatError(source, f"expected a JSON object, got {type(obj).__name__}")
        objects.append(obj)
    if not objects:
        raise FusionFormatError(source, "is empty")
    return objects


def _read_text(path: PathLike) -> str:
    """The text of a fusion artifact: a missing file is a :class:`WorkspaceError`; anything that is there
    but not a readable regular UTF-8 file (a FIFO, a folder, a dangling symlink, ...) a
    :class:`FusionFormatError` naming it."""
    if not os.path.lexists(path):
        raise WorkspaceError(f"{os.fspath(path)}: no such file")
    data = read_input_bytes(path, FusionFormatError)
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise FusionFormatError(path, f"byte {exc.start} is not UTF-8") from None


# ----------------------------------------------------------------------------------------- switch file
@dataclass(frozen=True)
class FusionSwitches:
    """Pass switches by family: pass name (or ``"ALL"``) -> on. Passes not named are on."""

    graph_fusion: Mapping[str, bool] = field(default_factory=dict, hash=False)
    ub_fusion: Mapping[str, bool] = field(default_factory=dict, hash=False)

    @classmethod
    def all_off(cls) -> "FusionSwitches":
        """The switches for "fusion off": ``ALL`` off in both families."""
        return cls({ALL_PASSES: False}, {ALL_PASSES: False})

    def is_enabled(self, pass_name: str, family: str) -> bool:
        """Whether ``pass_name`` runs: its own switch, else the family's ``ALL``, else on."""
        switches = self.graph_fusion if family == GRAPH_FUSION else self.ub_fusion
        if pass_name in switches:
            return switches[pass_name]
        return switches.get(ALL_PASSES, True)

    @property
    def fusion_off(self) -> bool:
        """True when ``ALL`` is off in both families (named passes may still be turned back on)."""
        return self.graph_fusion.get(ALL_PASSES) is False and self.ub_fusion.get(ALL_PASSES) is False


def parse_fusion_switches(text: str, source: Optional[PathLike] = None) -> FusionSwitches:
    """A :class:`FusionSwitches` from a switch file: JSON, or the older ``PassName:off`` lines.

    An empty file (or only white space) is refused: it is no switch file in either form, the adapter passes its path
    to GE unchecked, and what GE/FE make of an empty file is not documented (``ascend-precision-config.md`` §1).
    "No switches" is ``{"Switch": {"GraphFusion": {}, "UBFusion": {}}}``."""
    if not text.strip():
        raise FusionFormatError(source, "is empty, which is no switch file: the NPU run would hand it to GE unchecked, "
                                        "and what GE does with it is not documented; for no switches write "
                                        '{"Switch": {"GraphFusion": {}, "UBFusion": {}}}')
    if text.lstrip()[:1] == "{":
        return _json_switches(text, source)
    both: Dict[str, bool] = {}
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        name, colon, state = (part.strip() for part in line.partition(":"))
        if not colon or not name:
            raise FusionFormatError(source, f"line {number}: expected 'PassName:on' or 'PassName:off', got {line!r}")
        both[name] = _on_off(state, source, f"line {number}")
    return FusionSwitches(dict(both), dict(both))


def read_fusion_switches(path: PathLike) -> FusionSwitches:
    return parse_fusion_switches(_read_text(path), source=path)


def fusion_switches_to_json(switches: FusionSwitches) -> dict:
    """The JSON form: ``{"Switch": {"GraphFusion": {...}, "UBFusion": {...}}}`` with ``"on"``/``"off"``."""
    families = {}
    for family, key in _SWITCH_FAMILY_KEYS.items():
        values = getattr(switches, family)
        families[key] = {name: "on" if enabled else "off" for name, enabled in values.items()}
    return {"Switch": families}


def write_fusion_switches(switches: FusionSwitches, path: PathLike) -> Path:
    return atomic_write_text(path, json.dumps(fusion_switches_to_json(switches), indent=4) + "\n")


def _json_switches(text: str, source) -> FusionSwitches:
    objects = _json_objects(text, source)
    if len(objects) > 1:
        raise FusionFormatError(source, f"holds {len(objects)} JSON objects; a switch file holds one")
    switch = objects[0].get("Switch")
    if not isinstance(switch, dict):
        raise FusionFormatError(source, 'expected {"Switch": {"GraphFusion": {...}, "UBFusion": {...}}}')
    # a misspelt key would otherwise switch nothing off, silently
    unknown = [key for key in objects[0] if key != "Switch"] + [f"Switch.{key}" for key in switch
                                                                  if key not in _SWITCH_FAMILY_KEYS.values()]
    if unknown:
        raise FusionFormatError(source, f"unknown key {unknown[0]!r}: a switch file holds only "
                                        f"Switch.{' and Switch.'.join(_SWITCH_FAMILY_KEYS.values())}")
    families = {}
    for family, key in _SWITCH_FAMILY_KEYS.items():
        values = switch.get(key, {})
        if not isinstance(values, dict):
            raise FusionFormatError(source, f"Switch.{key}: expected an object of pass name -> on/off")
        families[family] = {name: _on_off(state, source, f"Switch.{key}.{name}") for name, state in values.items()}
    return FusionSwitches(families[GRAPH_FUSION], families[UB_FUSION])


def _on_off(state, source, where: str) -> bool:
    if isinstance(state, str) and state.strip().lower() in ("on", "off"):
        return state.strip().lower() == "on"
    raise FusionFormatError(source, f"{where}: expected 'on' or 'off', got {state!r}")
