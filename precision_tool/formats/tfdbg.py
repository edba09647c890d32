"""TensorFlow debugger dumps (tfdbg v1 run folders, tfdbg v2 DebugEvents folders), read without TensorFlow:
what both versions share.

The records (:class:`TfdbgTensor`, :class:`TfdbgRun`), :func:`list_tfdbg_runs`, the :func:`iter_tfdbg` dispatcher
and the device-folder helpers; each version's readers and writers are in :mod:`precision_tool.formats.tfdbg_v1` and
:mod:`precision_tool.formats.tfdbg_v2`. Both are read as an iterator of :class:`TfdbgTensor` records: listing reads
only record headers (dtype and shape, a few hundred bytes each) and :meth:`TfdbgTensor.load` one tensor's bytes with
one read, so a dump of any size is processed tensor by tensor.
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from typing import Callable, Iterator, List, Optional, Tuple

import numpy as np

from precision_tool.errors import WorkspaceError
from precision_tool.formats import tf_schema
from precision_tool.formats.tf_tensor import array_dtype, numpy_to_tensor_proto

DEVICE_DIR_PREFIX = "_tfdbg_device_"
_RUN_DIR = re.compile(r"run_([0-9]{1,20})_([0-9]{1,20})")
V2_TRACES_SUFFIX = ".graph_execution_traces"
_V2_FILE_TIME = re.compile(r"tfdbg_events\.([0-9]{1,20})\.")


@dataclass(frozen=True)
class TfdbgTensor:
    """One dumped op output of a tfdbg dump; :meth:`load` reads its values.

    Attributes
    ----------
    op_name, output_slot : the TF tensor ``op_name:output_slot`` (names as executed).
    timestamp_us : when it was dumped (epoch microseconds).
    device : ``"/job:localhost/replica:0/task:0/device:CPU:0"``.
    op_type : ``"Conv2D"``, from the dumped graph; ``None`` when the dump does not say.
    dtype_code : TensorFlow ``DataType`` number (``dtype_name`` gives ``"DT_FLOAT"``).
    shape : the tensor's shape.
    path : the file holding it.
    index : execution order within the run, counting skipped resource tensors too (v1: position by
        timestamp; v2: trace number, as ``DebugDataReader.graph_execution_traces()`` numbers them).
    source_format : ``"tfdbg_v1"`` or ``"tfdbg_v2"``.
    graph_id : v2 only: id of the graph (tf.function) that ran the op.
    """

    op_name: str
    output_slot: int
    timestamp_us: int
    device: str
    op_type: Optional[str]
    dtype_code: int
    shape: Tuple[int, ...]
    path: str
    index: int
    source_format: str
    graph_id: Optional[str] = None
    _loader: Optional[Callable[[], Optional[np.ndarray]]] = field(default=None, repr=False, compare=False)

    @property
    def tensor_name(self) -> str:
        """``"conv1/relu:0"``."""
        return f"{self.op_name}:{self.output_slot}"

    @property
    def dtype_name(self) -> str:
        """``"DT_FLOAT"``."""
        return tf_schema.tf_dtype_name(self.dtype_code)

    @property
    def dtype(self) -> Optional[np.dtype]:
        """dtype of the array :meth:`load` returns (float32 for bf16/fp8); ``None`` if not loadable."""
        return array_dtype(self.dtype_code)

    @property
    def loadable(self) -> bool:
        """False for resource handles, strings and variants."""
        return self.dtype is not None

    def load(self) -> Optional[np.ndarray]:
        """Read the values (``None`` for a resource handle; ``ReferenceFormatError`` for strings)."""
        if self._loader is None:
            raise TypeError(f"{self.tensor_name}: listed without a loader")
        return self._loader()

    def to_dict(self) -> dict:
        """JSON-ready description (no values)."""
        return {"op_name": self.op_name, "output_slot": self.output_slot, "timestamp_us": self.timestamp_us,
                "device": self.device, "op_type": self.op_type, "dtype": self.dtype_name,
                "shape": list(self.shape), "path": self.path, "index": self.index,
                "source_format": self.source_format, "graph_id": self.graph_id}


@dataclass(frozen=True)
class TfdbgRun:
    """One dump: a v1 run folder (one ``Session.run``) or a v2 DebugEvents folder."""

    path: str
    version: int
    timestamp_us: int
    counter: int = 0


# -- finding runs ---------------------------------------------------------------------------------
def is_v1_run(folder: str) -> bool:
    return any(name.startswith(DEVICE_DIR_PREFIX) and os.path.isdir(os.path.join(folder, name))
               for name in os.listdir(folder))


def v2_files(folder: str, suffix: str) -> List[str]:
    """Paths in ``folder`` ending in ``suffix``, sorted. Every entry that is not a folder counts -- a FIFO or a
    dangling symlink too -- so that the TFRecord reader refuses it in one line naming it, not silently."""
    return sorted(os.path.join(folder, name) for name in os.listdir(folder)
                  if name.endswith(suffix) and not os.path.isdir(os.path.join(folder, name)))


def _v2_run(folder: str) -> TfdbgRun:
    stamps = [int(m.group(1)) * 1_000_000 for m in map(_V2_FILE_TIME.match, os.listdir(folder)) if m]
    return TfdbgRun(folder, 2, min(stamps) if stamps else 0)


def list_tfdbg_runs(root) -> List[TfdbgRun]:
    """All dumps under ``root``, oldest first (so ``[-1]`` is the last run).

    ``root`` may be a tfdbg v1 dump root (holding ``run_<us>_<n>`` folders), one v1 run folder
    (holding ``_tfdbg_device_...`` folders) or a v2 DebugEvents folder.

    Raises
    ------
    WorkspaceError
        ``root`` is not a folder, or holds no tfdbg dump.
    """
    root = os.fspath(root)
    if not os.path.isdir(root):
        raise WorkspaceError(f"{root}: no such folder (expected a tfdbg dump folder)")
    if v2_files(root, V2_TRACES_SUFFIX):
        return [_v2_run(root)]
    if is_v1_run(root):
        match = _RUN_DIR.fullmatch(os.path.basename(os.path.normpath(root)))
        return [TfdbgRun(root, 1, int(match.group(1)) if match else 0, int(match.group(2)) if match else 0)]
    runs = []
    for name in os.listdir(root):
        match = _RUN_DIR.fullmatch(name)
        path = os.path.join(root, name)
        if match and os.path.isdir(path) and is_v1_run(path):
            runs.append(TfdbgRun(path, 1, int(match.group(1)), int(match.group(2))))
    if not runs:
        raise WorkspaceError(f"{root}: no tfdbg dump here (expected run_<us>_<n>/ folders, "
                             "_tfdbg_device_... folders or *.graph_execution_traces files)")
    return sorted(runs, key=lambda run: (run.timestamp_us, run.counter))


def iter_tfdbg(path, run: int = -1, skip_resources: bool = True, verify: bool = True) -> Iterator[TfdbgTensor]:
    """Iterate over the tensors of one tfdbg dump, v1 or v2.

    Parameters
    ----------
    path : str or Path
        See :func:`list_tfdbg_runs`.
    run : int
        Which run of :func:`list_tfdbg_runs` (default ``-1``: the last).
    skip_resources : bool
        Leave out ``DT_RESOURCE`` tensors (variable handles), which have no values.
    verify : bool
        v2: check every record's data CRC when it is loaded.
    """
    runs = list_tfdbg_runs(path)
    try:
        chosen = runs[run]
    except IndexError:
        raise WorkspaceError(f"{os.fspath(path)}: run {run} does not exist ({len(runs)} run(s) found)") from None
    # Imported here, not at the top: the readers import this module's records.
    if chosen.version == 2:
        from precision_tool.formats.tfdbg_v2 import iter_tfdbg_v2
        return iter_tfdbg_v2(chosen.path, skip_resources, verify)
    from precision_tool.formats.tfdbg_v1 import iter_tfdbg_v1
    return iter_tfdbg_v1(chosen.path, skip_resources)


# -- device folders, writers' helpers --------------------------------------------------------------
def device_name_from_folder(folder_name: str) -> str:
    """``_tfdbg_device_,job_localhost,replica_0,task_0,device_CPU_0`` -> ``/job:localhost/.../device:CPU:0``."""
    parts = [part for part in folder_name[len(DEVICE_DIR_PREFIX):].split(",") if part]
    names = []
    for part in parts:
        key, _, value = part.partition("_")
        if key == "device":
            value = value.replace("_", ":", 1)
        names.append(f"{key}:{value}")
    return "/" + "/".join(names)


DEFAULT_DEVICE = "/job:localhost/replica:0/task:0/device:CPU:0"


def device_folder_name(device: str) -> str:
    """Inverse of :func:`device_name_from_folder`."""
    parts = [part.replace(":", "_") for part in device.strip("/").split("/") if part]
    return DEVICE_DIR_PREFIX + "," + ",".join(parts)


def as_tensor_proto(value):
    """``value`` if it is a TensorProto, else the array as one (for the v1 and v2 writers)."""
    return value if isinstance(value, tf_schema.TensorProto) else numpy_to_tensor_proto(value)
