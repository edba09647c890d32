"""Finding a TF tensor ``(op name, output index)`` in a flat folder of reference ``.npy`` files.

A reference file spells the TF op name with ``/`` and ``.`` replaced by ``_``, so a lookup goes through that key.
Refused instead of guessed: a key that several TF names the alignment knows share (``a/b`` and ``a.b``), and a
normalised match that several files share. Normalisation (``normalised_name``), only when the exact key is not in
the folder, passes both names through the dump-file sanitiser (also ``\\`` and space -> ``_``); nothing else is
rewritten. See docs/internals/alignment.md#reference-lookup.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Dict, Iterable, List, Optional, Sequence, Set, Tuple

from precision_tool.formats.dump_names import sanitize_op_name
from precision_tool.formats.npy_dir import NpyReference, build_name_mapping, reference_key, reference_op_name
from precision_tool.alignment.model import NpyTensorRef
from precision_tool.formats.tensor_kind import OUTPUT


@dataclass(frozen=True)
class Lookup:
    """Result of :meth:`ReferenceIndex.find`: the file (or ``None``), whether the name was normalised, and
    the reason it was not found (``""`` when found), plus ``ambiguous`` for names refused as ambiguous."""

    ref: Optional[NpyTensorRef]
    normalised: bool = False
    reason: str = ""
    ambiguous: str = ""


class ReferenceIndex:
    """Reference tensors by file key, with the set of TF names known to the alignment for ambiguity checks.

    Build it after every TF name to look up is known: :meth:`find` refuses a name whose key another known
    name shares. Lookups are dict lookups; :meth:`unused` lists the tensors nothing asked for.
    """

    def __init__(self, references: Sequence[NpyReference], known_names: Iterable[str],
                 unreadable: Sequence[Tuple[str, str]] = ()):
        """``unreadable``: ``(path, message)`` of reference files that could not be read
        (:attr:`~precision_tool.formats.npy_dir.NpyListing.unreadable`); a lookup of their tensor says so."""
        self._by_key: Dict[Tuple[str, int], NpyReference] = {}
        self._unreadable: Dict[Tuple[str, int], str] = {}
        for path, message in unreadable:
            parsed = reference_key(os.path.basename(path))
            if parsed is not None:
                self._unreadable[parsed[:2]] = message
        self._indices: Dict[str, List[int]] = {}
        self._normalised: Dict[str, List[str]] = {}
        for record in references:
            self._by_key[(record.file_op_name, record.output_index)] = record
            self._indices.setdefault(record.file_op_name, []).append(record.output_index)
        for file_key in {record.file_op_name for record in references}:
            self._normalised.setdefault(sanitize_op_name(file_key), []).append(file_key)
        self._names = build_name_mapping(known_names)
        self._used: Set[Tuple[str, int]] = set()

    def find(self, name: str, index: int) -> Lookup:
        key = reference_op_name(name)
        record = self._by_key.get((key, index))
        normalised = False
        if record is None:
            hits = [f for f in self._normalised.get(sanitize_op_name(name), []) if (f, index) in self._by_key]
            if len(hits) > 1:
                listed = ", ".join(f"{f}.{index}" for f in sorted(hits))
                return Lookup(None, reason=f"{name}:{index} matches several reference files after normalising "
                                           f"(\\ and space -> _): {listed}",
                              ambiguous=f"{name}:{index} -> files {listed}")
            if len(hits) == 1:
                record, normalised = self._by_key[(hits[0], index)], True
        if record is None and (key, index) in self._unreadable:
            return Lookup(None, reason=f"the reference file could not be read: {self._unreadable[(key, index)]}")
        if record is None:
            others = sorted(self._indices.get(key, ()))
            if others:
                return Lookup(None, reason=f"the reference has {name} output(s) {others} but not output {index}")
            return Lookup(None, reason=f"no reference file for {name}:{index} ({key}.{index}.*.npy)")
        candidates = self._names.get(record.file_op_name, ())
        if len(candidates) > 1:
            listed = " or ".join(f"{c}:{index}" for c in candidates)
            return Lookup(None, reason=f"reference file {record.file_op_name}.{index} could be TF tensor {listed}",
                          ambiguous=f"{record.file_op_name}.{index}.*.npy -> {listed}")
        self._used.add((record.file_op_name, record.output_index))
        return Lookup(NpyTensorRef(record.path, name, index, record.file_op_name, record.dtype.str, record.shape),
                      normalised)

    def unused(self) -> Tuple[str, ...]:
        """``name:output:k`` of every reference tensor no lookup found; the name is the real TF name when
        exactly one known name maps to the file, else the file's spelling.

        A file that is a hard link of a used one (``tf_dump`` writes a Keras input or variable name as a
        second link to the same ``.npy``) is the same tensor, found under its other name: not listed.
        """
        used_files = {_file_identity(self._by_key[key].path) for key in self._used}
        used_files.discard(None)
        names = []
        for file_key, index in self._by_key:
            if (file_key, index) in self._used or _file_identity(self._by_key[(file_key, index)].path) in used_files:
                continue
            candidates = self._names.get(file_key, ())
            shown = candidates[0] if len(candidates) == 1 else file_key
            names.append(f"{shown}:{OUTPUT}:{index}")
        return tuple(sorted(names))


def _file_identity(path) -> Optional[Tuple[int, int]]:
    """``(device, inode)`` of ``path``, or ``None`` when it cannot be stat'ed (then it is its own tensor)."""
    try:
        info = os.stat(path)
    except OSError:
        return None
    return (info.st_dev, info.st_ino)
