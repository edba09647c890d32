"""Where things are: the workspace (``precision_data/``) layout users know from the original tool.

::

    precision_data/
      npu/debug_0/{dump/<ts>/<device>/<model>/<model_id>/<step>/..., graph/ge_proto_*_Build.txt}
                                         also the NPU's debug_dir (kernel_meta), as in the original tool
      npu/debug_1/...                    a second NPU run kept apart (capture with PRECISION_TOOL_NPU_RUN=1,
                                         e.g. fusion off), compared with npu/debug_0
      overflow/dump/<ts>/...             Opdebug records beside the overflowing ops' dumps
      tf/tf_debug/run_*/...              tfdbg raw dumps       tf/dump/*.npy  reference tensors
      tf/graph/graph_<run>_<device>.pb   the executed TF graphs (GraphDef), tf/graph/index.json says whose
      fusion/fusion_result.json          fusion/fusion_switch.cfg  the switch file users edit
      temp/...                           tool outputs

The workspace is ``-d DIR``, else ``$PRECISION_TOOL_DATA``, else ``./precision_data``.
"""
from __future__ import annotations

import os
from dataclasses import dataclass

from precision_tool.errors import WorkspaceError

ENV_DATA_DIR = "PRECISION_TOOL_DATA"
DEFAULT_DATA_DIR = "precision_data"


def default_data_dir() -> str:
    return os.environ.get(ENV_DATA_DIR) or DEFAULT_DATA_DIR


def __getattr__(name: str) -> str:
    """The original tool's ``config.ROOT_DIR`` and ``config.DATA_ROOT_DIR``, computed when read.

    The original had ``ROOT_DIR = ''`` and ``DATA_ROOT_DIR = os.path.join(ROOT_DIR, 'precision_data')``, so
    scripts that build paths from them keep working: ``DATA_ROOT_DIR`` is the workspace (absolute; it
    follows ``PRECISION_TOOL_DATA``) and ``ROOT_DIR`` the folder that holds it.
    """
    if name == "DATA_ROOT_DIR":
        return os.path.abspath(default_data_dir())
    if name == "ROOT_DIR":
        return os.path.dirname(os.path.abspath(default_data_dir()))
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


@dataclass(frozen=True)
class Workspace:
    root: str

    def npu_run(self, index: int = 0) -> str:
        """``npu/debug_N``: one NPU run's dump and graph folders, and its ``debug_dir``."""
        return os.path.join(self.root, "npu", f"debug_{index}")

    def npu_dump(self, index: int = 0) -> str:
        return os.path.join(self.npu_run(index), "dump")

    def npu_graph(self, index: int = 0) -> str:
        return os.path.join(self.npu_run(index), "graph")

    @property
    def overflow_dump(self) -> str:
        return os.path.join(self.root, "overflow", "dump")

    @property
    def tf_debug(self) -> str:
        return os.path.join(self.root, "tf", "tf_debug")

    @property
    def tf_dump(self) -> str:
        return os.path.join(self.root, "tf", "dump")

    @property
    def tf_graph(self) -> str:
        """``tf/graph``: the executed TF graphs ``tf_dump`` keeps (the original tool's ``TF_GRAPH_DIR``)."""
        return os.path.join(self.root, "tf", "graph")

    @property
    def fusion_switch(self) -> str:
        """The fusion switch file users edit (action ``fusion_switch``), created from the shipped template."""
        return os.path.join(self.root, "fusion", "fusion_switch.cfg")

    @property
    def fusion_result(self) -> str:
        return os.path.join(self.root, "fusion", "fusion_result.json")

    @property
    def temp(self) -> str:
        return os.path.join(self.root, "temp")


def ensure_output_dir(out_dir: str, *input_paths: str) -> str:
    """Create ``out_dir`` and return its real path, refusing to write into the user's inputs.

    For an input folder, ``out_dir`` may be neither the folder nor anywhere below it (a later scan of
    the folder would find our outputs). For an input file, ``out_dir`` may not be the file's own folder.
    The check runs before anything is written and raises :class:`WorkspaceError`.
    """
    real_out = os.path.realpath(out_dir)
    for path in input_paths:
        real_in = os.path.realpath(path)
        if os.path.isdir(real_in):
            inside = real_out == real_in or real_out.startswith(real_in.rstrip(os.sep) + os.sep)
        else:
            inside = real_out == os.path.dirname(real_in)
        if inside:
            raise WorkspaceError(f"{out_dir}: output folder would be inside the input {path}",
                                 "choose an output folder outside the input")
    try:
        os.makedirs(real_out, exist_ok=True)
    except OSError as exc:
        raise WorkspaceError(f"{out_dir}: cannot create output folder ({exc.strerror})") from exc
    return real_out
