"""Reference tensors as msaccucmp expects them: a flat folder of ``.npy`` files.

One file per TF op output, named ``{op_name'}.{output_index}.{timestamp}.npy`` (``ascend-formats.md`` §4):
``op_name'`` is the TF op name with ``/`` and ``.`` replaced by ``_``, the timestamp is 16 digits
(epoch microseconds). When one output was saved several times, the latest timestamp is the one used.

The replacement is lossy (``a/b``, ``a.b`` and ``a_b`` share a file name), so :func:`read_npy_dir`
accepts a mapping from file names back to the real TF names (:func:`build_name_mapping` makes one
from the graph's op names) and reports every real name a file could stand for.

Files are written atomically (a hidden temporary file renamed into place) and always read with
``allow_pickle=False``. Listing reads only the ``.npy`` headers.
"""
from __future__ import annotations

import os
import re
import time
from dataclasses import dataclass
from typing import Dict, Iterable, List, Mapping, Optional, Tuple, Union

import numpy as np

from precision_tool.errors import ReferenceFormatError, WorkspaceError
from precision_tool.fileio import save_npy_atomic

TIMESTAMP_DIGITS = 16
_REPLACED = re.compile(r"[/.]")
_FILE_NAME = re.compile(r"(?P<name>[^.]+)\.(?P<index>[0-9]+)\.(?P<stamp>[0-9]+)\.npy")


def reference_op_name(op_name: str) -> str:
    """The TF op name as it appears in a reference file name: ``/`` and ``.`` become ``_``.

    >>> reference_op_name("block.1/conv/Conv2D")
    'block_1_conv_Conv2D'
    """
    return _REPLACED.sub("_", op_name)


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
        ml_dtypes' bfloat16/float8; or a file that cannot be written (the message names it).
    """
    folder = os.fspath(folder)
    if timestamp_us is None:
        timestamp_us = time.time_ns() // 1000
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
    ``allow_pickle=False`` could not read: bad magic or header, object dtype, truncated data.
    """
    path = os.fspath(path)
    try:
        with open(path, "rb") as handle:
            dtype, shape, _ = _checked_header(handle, path)
    except (ValueError, TypeError, OSError, EOFError) as error:
        raise ReferenceFormatError(path, f"not a readable .npy file ({error})") from None
    return dtype, shape


def _checked_header(handle, path: str) -> Tuple[np.dtype, Tuple[int, ...], bool]:
    """``(dtype, shape, fortran_order)`` from an open ``.npy`` file, left at the start of the data.

    Raises :class:`ReferenceFormatError` for an object dtype, a negative dimension or truncated data, and
    numpy's ``ValueError`` for a bad magic or header (the callers name the file).
    """
    version = np.lib.format.read_magic(handle)
    if version == (1, 0):
        shape, fortran_order, dtype = np.lib.format.read_array_header_1_0(handle)
    elif version == (2, 0):
        shape, fortran_order, dtype = np.lib.format.read_array_header_2_0(handle)
    else:
        raise ValueError(f"npy format version {version[0]}.{version[1]} is not supported")
    data_offset = handle.tell()
    file_size = os.fstat(handle.fileno()).st_size
    if dtype.hasobject:
        raise ReferenceFormatError(path, "holds Python objects (pickled); refused, only numeric arrays are read")
    if any(dim < 0 for dim in shape):
        raise ReferenceFormatError(path, f"header has a negative dimension {list(shape)}")
    needed = _element_count(shape) * dtype.itemsize
    if needed > file_size - data_offset:
        raise ReferenceFormatError(path, f"truncated: the header promises {needed} bytes of data, the file holds "
                                         f"{file_size - data_offset}")
    return dtype, tuple(shape), bool(fortran_order)


def _element_count(shape) -> int:
    count = 1
    for dim in shape:
        count *= dim
    return count


def _load_npy(path: str) -> np.ndarray:
    """The array, read with one open and one header parse.

    The header is checked first (a lying header must not trigger a huge allocation), then the data is read
    from where the header ends, as ``np.load`` does for a real file; before, ``np.load`` parsed the header a
    second time (a third of the cost of loading a 1 MB reference).
    """
    try:
        with open(path, "rb") as handle:
            dtype, shape, fortran_order = _checked_header(handle, path)
            array = np.fromfile(handle, dtype=dtype, count=_element_count(shape))
    except (ValueError, TypeError, OSError, EOFError) as error:
        raise ReferenceFormatError(path, f"not a readable .npy file ({error})") from None
    if fortran_order:
        return array.reshape(shape[::-1]).transpose()
    return array.reshape(shape)


MappingValue = Union[str, Iterable[str]]


def read_npy_dir(folder, name_mapping: Optional[Mapping[str, MappingValue]] = None) -> List[NpyReference]:
    """List the reference tensors of a flat msaccucmp reference folder.

    Parameters
    ----------
    folder : str or Path
    name_mapping : mapping, optional
        File op name -> real TF op name, or -> several names (see :func:`build_name_mapping`).

    Returns
    -------
    list of NpyReference
        One per (file op name, output index): the file with the latest timestamp. Sorted by op name
        then output index. Files not named ``{name}.{index}.{timestamp}.npy`` are ignored.

    Raises
    ------
    WorkspaceError
        ``folder`` does not exist.
    ReferenceFormatError
        A ``.npy`` file whose header cannot be read (the message names the file).
    """
    folder = os.fspath(folder)
    if not os.path.isdir(folder):
        raise WorkspaceError(f"{folder}: no such folder (expected a folder of reference .npy files)")
    latest: Dict[Tuple[str, int], Tuple[int, str]] = {}
    for name in os.listdir(folder):
        match = _FILE_NAME.fullmatch(name)
        path = os.path.join(folder, name)
        if not match or not os.path.isfile(path):
            continue
        key = (match.group("name"), int(match.group("index")))
        stamp = int(match.group("stamp"))
        if key not in latest or (stamp, name) > (latest[key][0], os.path.basename(latest[key][1])):
            latest[key] = (stamp, path)
    records = []
    for (file_op_name, output_index), (stamp, path) in latest.items():
        candidates = _candidates(name_mapping, file_op_name)
        op_name = candidates[0] if len(candidates) == 1 else file_op_name
        dtype, shape = read_npy_header(path)
        records.append(NpyReference(op_name, output_index, stamp, dtype, shape, path, file_op_name, candidates))
    return sorted(records, key=lambda record: (record.op_name, record.output_index))


def _candidates(name_mapping, file_op_name: str) -> Tuple[str, ...]:
    if not name_mapping or file_op_name not in name_mapping:
        return ()
    value = name_mapping[file_op_name]
    return (value,) if isinstance(value, str) else tuple(value)
