"""Reference tensors as msaccucmp expects them: a flat folder of ``.npy`` files.

One file per TF op output, ``{op_name'}.{output_index}.{timestamp}.npy`` (``ascend-formats.md`` §4): ``op_name'`` is
the TF op name with ``/`` and ``.`` replaced by ``_``, the timestamp 16 digits (epoch microseconds); of an output
saved several times the latest is used. The replacement is lossy (``a/b``, ``a.b`` and ``a_b`` share a file name),
so :func:`read_npy_dir` accepts a mapping from file names back to the real TF names (:func:`build_name_mapping`) and
reports every real name a file could stand for. Files are written atomically (a hidden temporary file renamed into
place) and always read with ``allow_pickle=False``. Listing reads only the ``.npy`` headers.
"""
from __future__ import annotations

import contextlib
import io
import os
import re
import struct
import time
import tokenize
from dataclasses import dataclass
from typing import BinaryIO, Dict, Iterable, Iterator, List, Mapping, Optional, Tuple, Union, cast

import numpy as np

from precision_tool.errors import PrecisionToolError, ReferenceFormatError, WorkspaceError
from precision_tool.fileio import map_bytes, map_input, open_input, read_windows, save_npy_atomic
from precision_tool.formats.bounds import ndim_problem, shown_name

TIMESTAMP_DIGITS = 16
_REPLACED = re.compile(r"[/.]")
_FILE_NAME = re.compile(r"(?P<name>[^.]+)\.(?P<index>[0-9]{1,20})\.(?P<stamp>[0-9]{1,20})\.npy")


def reference_op_name(op_name: str) -> str:
    """The TF op name as it appears in a reference file name: ``/`` and ``.`` become ``_``.

    >>> reference_op_name("block.1/conv/Conv2D")
    'block_1_conv_Conv2D'
    """
    return _REPLACED.sub("_", op_name)


RECORD_FILE = "tf_dump_run.json"
"""A reference folder's record of the conversion that wrote it (``tf_dump``): ``{"run": what was converted,
"complete": bool, "files": [names written], "failed": [{"file": name, "message": why}]}`` -- ``failed`` names the
tensors of the run that could not be converted, so that a comparison says so instead of finding them missing."""


def read_conversion_record(folder) -> Optional[dict]:
    """``folder``'s :data:`RECORD_FILE`, or None when it is missing or is not such a record."""
    import json

    from precision_tool.fileio import read_input_text

    try:
        record = json.loads(read_input_text(os.path.join(os.fspath(folder), RECORD_FILE)))
    except (PrecisionToolError, ValueError):
        return None
    if not isinstance(record, dict) or not isinstance(record.get("files", []), list) \
            or not isinstance(record.get("failed", []), list):
        return None
    return record


def _not_converted(folder: str, present) -> List[Tuple[str, str]]:
    """``(path, message)`` of the tensors the folder's record says could not be converted (and no file holds)."""
    record = read_conversion_record(folder) or {}
    found = []
    for item in record.get("failed", []):
        if isinstance(item, dict) and isinstance(item.get("file"), str) and item["file"] not in present:
            found.append((os.path.join(folder, item["file"]), f"not converted by tf_dump: {item.get('message', '')}"))
    return found


def reference_file_name(op_name: str, output_index: int, timestamp_us: int) -> str:
    """``conv1/relu``, 0, 1700000000000000 -> ``conv1_relu.0.1700000000000000.npy``."""
    if output_index < 0:
        raise ValueError(f"output index must be >= 0, got {output_index}")
    return f"{reference_op_name(op_name)}.{output_index}.{timestamp_us:0{TIMESTAMP_DIGITS}d}.npy"


def build_name_mapping(tf_op_names: Iterable[str]) -> Dict[str, Tuple[str, ...]]:
    """File op name -> the TF op names that produce it (more than one when the replacement collides)."""
    mapping: Dict[str, List[str]] = {}
    for name in tf_op_names:
        candidates = mapping.setdefault(reference_op_name(name), [])
        if name not in candidates:
            candidates.append(name)
    return {key: tuple(sorted(names)) for key, names in mapping.items()}


def write_reference_npy(folder, op_name: str, output_index: int, array, timestamp_us: Optional[int] = None) -> str:
    """Save one reference tensor into ``folder`` under its msaccucmp name; returns the file's path.

    The array is written with ``np.save(..., allow_pickle=False)`` to a hidden temporary file in the
    same folder, then renamed, so a reader never sees a half-written file. ``timestamp_us`` defaults
    to now.

    Raises
    ------
    ReferenceFormatError
        Arrays whose dtype plain numpy (and so msaccucmp) cannot load: objects, strings, records,
        ml_dtypes' bfloat16/float8; an op name holding a NUL character or a negative output index (no file
        can be named after them: they come from a damaged dump); or a file that cannot be written (the
        message names it).
    """
    folder = os.fspath(folder)
    if timestamp_us is None:
        timestamp_us = time.time_ns() // 1000
    if "\0" in op_name or output_index < 0:
        raise ReferenceFormatError(os.path.join(folder, f"{shown_name(reference_op_name(op_name))}.{output_index}"),
                                   "no reference file can be named after an op name holding a NUL character "
                                   "or a negative output index")
    path = os.path.join(folder, reference_file_name(op_name, output_index, timestamp_us))
    array = np.asarray(array)
    if not _is_plain_numeric(array.dtype):
        raise ReferenceFormatError(path, f"cannot store dtype {array.dtype} (not a plain numpy number type); "
                                         "cast it first, e.g. bfloat16/float8 to float32")
    try:
        save_npy_atomic(path, array)
    except OSError as error:
        raise ReferenceFormatError(path, f"cannot write ({error.strerror or error})") from None
    return path


def _is_plain_numeric(dtype: np.dtype) -> bool:
    """bool/int/uint/float/complex that plain numpy can load again (not ml_dtypes' bfloat16/float8)."""
    if dtype.kind not in "biufc" or dtype.fields is not None:
        return False
    try:
        return np.dtype(dtype.str) == dtype
    except TypeError:
        return False


@dataclass(frozen=True)
class NpyReference:
    """One reference tensor file (the latest for its op output), described by its name and header.

    Attributes
    ----------
    op_name : the real TF op name when the name mapping resolves the file name to exactly one name;
        otherwise the name as written in the file (``/`` and ``.`` replaced).
    output_index : the op output.
    timestamp_us : from the file name.
    dtype, shape : from the ``.npy`` header.
    path : the file.
    file_op_name : the op name as written in the file.
    name_candidates : every TF op name the mapping gives for ``file_op_name`` (empty without a
        mapping; several means the name is ambiguous).
    """

    op_name: str
    output_index: int
    timestamp_us: int
    dtype: np.dtype
    shape: Tuple[int, ...]
    path: str
    file_op_name: str
    name_candidates: Tuple[str, ...] = ()

    @property
    def ambiguous(self) -> bool:
        """True if several TF op names map to this file name."""
        return len(self.name_candidates) > 1

    def load(self) -> np.ndarray:
        """Read the array (``allow_pickle=False``); checks it still matches the header seen when listing."""
        array = _load_npy(self.path)
        if array.dtype != self.dtype or array.shape != self.shape:
            raise ReferenceFormatError(self.path, f"changed since it was listed ({self.dtype} {list(self.shape)} "
                                                  f"-> {array.dtype} {list(array.shape)})")
        return array

    def to_dict(self) -> dict:
        """JSON-ready description (no values)."""
        return {"op_name": self.op_name, "output_index": self.output_index, "timestamp_us": self.timestamp_us,
                "dtype": self.dtype.str, "shape": list(self.shape), "path": self.path,
                "file_op_name": self.file_op_name, "name_candidates": list(self.name_candidates)}


def read_npy_header(path) -> Tuple[np.dtype, Tuple[int, ...]]:
    """dtype and shape of a ``.npy`` file from its header, after checking the data fits the file.

    Raises :class:`ReferenceFormatError` (naming the file) for anything ``np.load`` with
    ``allow_pickle=False`` could not read -- bad magic or header, object dtype, too many dimensions,
    truncated data -- and for anything that is not a regular file (see :func:`_checked_header`).
    """
    with _opened_npy(os.fspath(path)) as (_, dtype, shape, _fortran):
        return dtype, shape


def npy_fortran_order(path) -> bool:
    """Whether a ``.npy`` file stores its array in Fortran order (errors as :func:`read_npy_header`)."""
    with _opened_npy(os.fspath(path)) as (_, _dtype, _shape, fortran_order):
        return fortran_order


@contextlib.contextmanager
def _opened_npy(path: str) -> Iterator[Tuple[BinaryIO, np.dtype, Tuple[int, ...], bool]]:
    """The file opened (:func:`~precision_tool.fileio.open_input`) and its header checked
    (:func:`_checked_header`), left at the first data byte: ``(handle, dtype, shape, fortran_order)``. Whatever
    reading it raises inside the ``with`` -- an I/O error, numpy's complaints -- becomes one
    :class:`ReferenceFormatError` naming the file."""
    try:
        with open_input(path, ReferenceFormatError) as handle:
            dtype, shape, fortran_order = _checked_header(handle, path)
            yield handle, dtype, shape, fortran_order
    except (ValueError, TypeError, OSError, EOFError, MemoryError) as error:
        raise ReferenceFormatError(path, f"not a readable .npy file ({_first_line(error)})") from None


NPY_MAGIC = b"\x93NUMPY"
MAX_NPY_HEADER_BYTES = 1 << 16
"""Longest ``.npy`` header read: numpy's own limit is 10,000 bytes (numpy >= 1.24) and a header of 64 dims of
20 digits is under 2 KB, so a longer one is damage, refused before numpy reads it."""
_LENGTH_FORMATS = {1: "<H", 2: "<I"}  # header length field by major version
# What numpy's header parser (ast.literal_eval over a tokenised header) raises for damaged text.
_HEADER_PARSE_ERRORS = (ValueError, TypeError, SyntaxError, tokenize.TokenError, MemoryError, RecursionError,
                        EOFError, KeyError, IndexError, AttributeError, OverflowError, UnicodeDecodeError)


def _checked_header(handle, path: str) -> Tuple[np.dtype, Tuple[int, ...], bool]:
    """``(dtype, shape, fortran_order)`` from an open ``.npy`` file, left at the start of the data.

    The preamble -- the 6-byte magic ``b"\\x93NUMPY"``, major and minor version bytes, then the header length
    ``L`` (uint16 for version 1, uint32 for version 2) -- is read here first, and ``L`` is checked against the file
    size and :data:`MAX_NPY_HEADER_BYTES` before numpy reads ``L`` bytes (numpy 1.x reads a declared
    4 GiB header into memory). Then numpy parses the header; whatever its parser raises is a damaged
    header. Refused, as :class:`ReferenceFormatError`: a version other than 1.0 or 2.0, an object dtype, a
    structured, datetime or timedelta dtype (no TF tensor is one), more dimensions than numpy holds, a negative
    dimension, and data shorter than ``prod(shape) * itemsize``.
    """
    file_size = os.fstat(handle.fileno()).st_size
    header_length = _check_preamble(handle, path, file_size)
    parsed = _parse_plain_header(handle.read(header_length))
    if parsed is None:  # not numpy's own layout of a simple dtype: numpy's parser decides
        handle.seek(0)
        try:
            version = np.lib.format.read_magic(handle)
            if version == (1, 0):
                parsed = np.lib.format.read_array_header_1_0(handle)
            else:
                parsed = np.lib.format.read_array_header_2_0(handle)
        except _HEADER_PARSE_ERRORS as error:
            raise ReferenceFormatError(path, f"damaged .npy header ({_first_line(error)})") from None
    shape, fortran_order, dtype = parsed
    data_offset = handle.tell()
    if dtype.hasobject:
        raise ReferenceFormatError(path, "holds Python objects (pickled); refused, only numeric arrays are read")
    if dtype.kind in "VMm":  # no TF tensor is a record, a date or a time span
        what = "records (a structured dtype)" if dtype.kind == "V" else "dates or time spans"
        raise ReferenceFormatError(path, f"holds {what}, {dtype.str}; only numeric arrays are read")
    problem = ndim_problem(len(shape))
    if problem is not None:
        raise ReferenceFormatError(path, f".npy header {problem}")
    if any(dim < 0 for dim in shape):
        raise ReferenceFormatError(path, f"header has a negative dimension {list(shape)}")
    needed = _element_count(shape) * dtype.itemsize
    if needed > file_size - data_offset:
        raise ReferenceFormatError(path, f"truncated: the header promises {needed} bytes of data, the file holds "
                                         f"{file_size - data_offset}")
    return dtype, tuple(shape), bool(fortran_order)


def _check_preamble(handle, path: str, file_size: int) -> int:
    """Magic, version and a header length that fits the file (see :func:`_checked_header`); returns the header
    length, the handle left at the header's first byte."""
    start = handle.read(len(NPY_MAGIC) + 2)
    if len(start) < len(NPY_MAGIC) + 2 or not start.startswith(NPY_MAGIC):
        raise ReferenceFormatError(path, f"not a readable .npy file (it does not start with {NPY_MAGIC!r})")
    major, minor = start[-2], start[-1]
    if (major, minor) not in ((1, 0), (2, 0)):
        raise ReferenceFormatError(path, f"npy format version {major}.{minor} is not supported (1.0 and 2.0 are)")
    length_format = _LENGTH_FORMATS[major]
    length_field = handle.read(struct.calcsize(length_format))
    if len(length_field) < struct.calcsize(length_format):
        raise ReferenceFormatError(path, "truncated: the .npy header length is cut off")
    (header_length,) = struct.unpack(length_format, length_field)
    available = file_size - len(start) - len(length_field)
    if header_length > available:
        raise ReferenceFormatError(path, f"truncated: the .npy header declares {header_length:,} bytes, the file "
                                         f"holds {available:,} after the header length")
    if header_length > MAX_NPY_HEADER_BYTES:
        raise ReferenceFormatError(path, f".npy header of {header_length:,} bytes, more than a header needs "
                                         f"({MAX_NPY_HEADER_BYTES:,})")
    return header_length


# numpy's writer (``np.lib.format.write_array_header_*``) prints the header dict with sorted keys, a simple
# dtype as its ``descr`` string and the shape as a tuple, then pads with spaces to a newline.
_PLAIN_HEADER = re.compile(r"\{'descr': '(?P<descr>[<>|=]?[a-zA-Z][0-9]{0,2})', "
                           r"'fortran_order': (?P<fortran>True|False), "
                           r"'shape': \((?P<shape>(?:[0-9]{1,20}, ?)*(?:[0-9]{1,20})?)\), ?\} *\n?")
_SIMPLE_DTYPES: Dict[str, np.dtype] = {}


def _parse_plain_header(header: bytes) -> Optional[Tuple[Tuple[int, ...], bool, np.dtype]]:
    """``(shape, fortran_order, dtype)`` of a header exactly as numpy writes it for a simple dtype, else ``None``.

    numpy parses every header with ``ast.literal_eval`` after rewriting its tokens (0.1 ms, as long as reading
    a 0.4 MB reference from the page cache); this strict pattern takes microseconds and answers only for
    ``{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }`` -- numpy's own layout, a non-structured
    ``descr`` of a numeric or bool dtype. Anything else (a structured dtype, a header written by another
    library, damage) returns ``None`` and goes to numpy's parser, so the answers and refusals are numpy's.
    """
    match = _PLAIN_HEADER.fullmatch(header.decode("latin-1"))
    if match is None:
        return None
    descr = match.group("descr")
    dtype = _SIMPLE_DTYPES.get(descr)
    if dtype is None:
        try:
            dtype = np.dtype(descr)
        except TypeError:
            return None
        if dtype.kind not in "biufc" or dtype.str != np.lib.format.dtype_to_descr(dtype):
            return None
        _SIMPLE_DTYPES[descr] = dtype
    dims = match.group("shape")
    shape = tuple(int(dim) for dim in dims.split(",") if dim.strip())
    if dims and not dims.rstrip().endswith(",") and len(shape) == 1:
        return None  # '(5)' is not a tuple; numpy refuses it
    return shape, match.group("fortran") == "True", dtype


def _first_line(error: BaseException, limit: int = 160) -> str:
    """The first line of an exception's text, cut to ``limit`` characters (numpy quotes the whole header);
    a tokenizer error's message without its position tuple; the exception's type when it has no text."""
    if isinstance(error, tokenize.TokenError) and error.args:
        text = str(error.args[0])
    else:
        text = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
    return text if len(text) <= limit else text[:limit - 3] + "..."


def _element_count(shape) -> int:
    count = 1
    for dim in shape:
        count *= dim
    return count


def _load_npy(path: str) -> np.ndarray:
    """The array, read with one open and one header parse.

    The header is checked first (a lying header must not trigger a huge allocation), then the data is read
    from where the header ends straight into the array (``readinto``: ``np.fromfile`` on a Python file goes
    through a stdio buffer, one more copy); before, ``np.load`` parsed the header a second time (a third of the
    cost of loading a 1 MB reference). In a process that maps (:func:`~precision_tool.fileio.map_bytes`: the
    comparison workers) the data is mapped copy-on-write instead.
    """
    with _opened_npy(path) as (handle, dtype, shape, fortran_order):
        count = _element_count(shape)
        data = map_bytes(handle, path, handle.tell(), count * dtype.itemsize)
        if data is not None:
            array, got = data.view(dtype), count * dtype.itemsize
        else:
            array = np.empty(count, dtype)
            got = cast(io.BufferedReader, handle).readinto(memoryview(array).cast("B")) if count else 0
    if got != count * dtype.itemsize:
        raise ReferenceFormatError(path, f"file shrank while being read ({got // max(dtype.itemsize, 1)} of "
                                         f"{count} elements)")
    if fortran_order:
        return array.reshape(shape[::-1]).transpose()
    return array.reshape(shape)


def map_npy(path: str) -> np.ndarray:
    """The array of a ``.npy`` file as a read-only memory map (:func:`~precision_tool.fileio.map_input`): read when
    indexed, so a slice reads only the pages it covers. The header is checked as for :func:`_load_npy`."""
    with _opened_npy(path) as (handle, dtype, shape, fortran_order):
        offset = handle.tell()
    if fortran_order:
        return map_input(path, dtype, shape[::-1], offset, ReferenceFormatError).transpose()
    return map_input(path, dtype, shape, offset, ReferenceFormatError)


def read_npy_chunks(path: str, dtype: np.dtype, shape: Tuple[int, ...], size: int) -> Iterator[np.ndarray]:
    """The elements of a C-ordered ``.npy`` file as flat arrays of at most ``size`` elements, one read at a time (a
    reference of any size in a fixed amount of memory); each is valid until the next. Raises
    :class:`ReferenceFormatError` when the header no longer gives ``dtype``/``shape``, the file is Fortran-ordered,
    it ends early, or reading it fails."""
    with _opened_npy(path) as (handle, found_dtype, found_shape, fortran_order):
        if found_dtype != dtype or tuple(found_shape) != tuple(shape) or fortran_order:
            raise ReferenceFormatError(path, "changed since it was listed, or Fortran-ordered: not read in pieces")
        total = _element_count(shape)

        def shrank(start: int) -> ReferenceFormatError:
            return ReferenceFormatError(path, f"file shrank while being read (element {start // dtype.itemsize} of "
                                              f"{total})")

        for window in read_windows(handle, path, handle.tell(), total * dtype.itemsize, max(1, size) * dtype.itemsize,
                                   shrank):
            yield window.view(dtype)


MappingValue = Union[str, Iterable[str]]


def reference_key(file_name: str) -> Optional[Tuple[str, int, int]]:
    """``(file op name, output index, timestamp)`` of a reference file name, or ``None`` if it is not one.

    Index and timestamp are ASCII digits, at most 20 each (a uint64), so no name can make ``int()`` fail.

    >>> reference_key("conv1_relu.0.1700000000000000.npy")
    ('conv1_relu', 0, 1700000000000000)
    >>> reference_key("conv1_relu.\u00b2.1700000000000000.npy") is None
    True
    """
    match = _FILE_NAME.fullmatch(file_name)
    if not match:
        return None
    return match.group("name"), int(match.group("index")), int(match.group("stamp"))


class NpyListing(List[NpyReference]):
    """What :func:`read_npy_dir` returns: the readable references (a list, as before), ``unreadable``:
    ``(path, message)`` for every reference file whose header could not be read, in name order, and ``ignored``:
    the paths of the ``.npy`` files not named ``{name}.{index}.{timestamp}.npy``, which are not read."""

    def __init__(self, records: Iterable[NpyReference] = (), unreadable: Iterable[Tuple[str, str]] = (),
                 ignored: Iterable[str] = ()):
        super().__init__(records)
        self.unreadable: Tuple[Tuple[str, str], ...] = tuple(unreadable)
        self.ignored: Tuple[str, ...] = tuple(ignored)


def read_npy_dir(folder, name_mapping: Optional[Mapping[str, MappingValue]] = None) -> NpyListing:
    """List the reference tensors of a flat msaccucmp reference folder.

    Parameters
    ----------
    folder : str or Path
    name_mapping : mapping, optional
        File op name -> real TF op name, or -> several names (see :func:`build_name_mapping`).

    Returns
    -------
    NpyListing
        One :class:`NpyReference` per (file op name, output index): the file with the latest timestamp,
        sorted by op name then output index; files not named ``{name}.{index}.{timestamp}.npy`` are
        ignored (the ``.npy`` ones listed in ``.ignored``). A latest file that cannot be read -- truncated, a
        damaged header, a FIFO, a folder or a dangling symlink named like a reference -- is left out and listed
        in ``.unreadable``, and so is a tensor the folder's :data:`RECORD_FILE` says tf_dump could not convert, as
        ``(path, one-line message)``; the others are still read (an older file of the same tensor is not
        used in its place: it would compare against stale values).

    Raises
    ------
    WorkspaceError
        ``folder`` does not exist.
    """
    folder = os.fspath(folder)
    if not os.path.isdir(folder):
        raise WorkspaceError(f"{folder}: no such folder (expected a folder of reference .npy files)")
    latest: Dict[Tuple[str, int], Tuple[int, str]] = {}
    ignored = []
    for name in os.listdir(folder):
        key = reference_key(name)
        if key is None:
            if name.lower().endswith(".npy"):
                ignored.append(os.path.join(folder, name))
            continue
        file_op_name, output_index, stamp = key
        path = os.path.join(folder, name)
        held = latest.get((file_op_name, output_index))
        if held is None or (stamp, name) > (held[0], os.path.basename(held[1])):
            latest[(file_op_name, output_index)] = (stamp, path)
    records: List[NpyReference] = []
    unreadable: List[Tuple[str, str]] = _not_converted(folder, {os.path.basename(p) for _, p in latest.values()})
    for (file_op_name, output_index), (stamp, path) in latest.items():
        candidates = _candidates(name_mapping, file_op_name)
        op_name = candidates[0] if len(candidates) == 1 else file_op_name
        try:
            dtype, shape = read_npy_header(path)
        except PrecisionToolError as error:
            unreadable.append((path, str(error)))
            continue
        records.append(NpyReference(op_name, output_index, stamp, dtype, shape, path, file_op_name, candidates))
    return NpyListing(sorted(records, key=lambda record: (record.op_name, record.output_index)), sorted(unreadable),
                      sorted(ignored))


def _candidates(name_mapping, file_op_name: str) -> Tuple[str, ...]:
    if not name_mapping or file_op_name not in name_mapping:
        return ()
    value = name_mapping[file_op_name]
    return (value,) if isinstance(value, str) else tuple(value)
