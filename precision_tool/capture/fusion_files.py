"""The fusion switch files handed to the NPU (``fusion_switch_file``): shipped "all off", and the user's own.

* :data:`FUSION_OFF_FILE` -- shipped with precision_tool, read only: ``ALL`` off for ``GraphFusion``
  and ``UBFusion`` (action ``fusion_off``).
* :data:`FUSION_SWITCH_FILE` -- the shipped *template* for action ``fusion_switch``. It is never
  handed to the NPU: on first use it is copied to ``WORKSPACE/fusion/fusion_switch.cfg``, and that
  copy -- the one users edit (``"SomeFusionPass": "off"``) -- is what the NPU reads. Every use checks
  the copy still parses, so a typo fails here in one line, not deep inside graph compilation.

Plain Python: no TensorFlow.
"""
from __future__ import annotations

import os
import shutil

from precision_tool.capture.settings import CaptureSettings, notify
from precision_tool.errors import CaptureError
from precision_tool.formats.fusion_result import read_fusion_switches

DATA_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "data")
FUSION_OFF_FILE = os.path.join(DATA_DIR, "fusion_off.cfg")
FUSION_SWITCH_FILE = os.path.join(DATA_DIR, "fusion_switch.cfg")
WORKSPACE_FUSION_SWITCH = ("fusion", "fusion_switch.cfg")


def workspace_fusion_switch_file(settings: CaptureSettings) -> str:
    """``WORKSPACE/fusion/fusion_switch.cfg``: the user's editable switch file (may not exist yet)."""
    return os.path.join(settings.data_dir, *WORKSPACE_FUSION_SWITCH)


def ensure_fusion_switch_copy(path: str) -> str:
    """Copy the shipped template to ``path`` unless a file is there; check it parses; return ``path``.

    Raises
    ------
    FusionFormatError
        The (user-edited) file is not a valid switch file; the message names it.
    CaptureError
        The copy cannot be written.
    """
    if not os.path.exists(path):
        try:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            shutil.copyfile(FUSION_SWITCH_FILE, path)
        except OSError as error:
            raise CaptureError(f"{path}: cannot create the fusion switch file ({error.strerror or error})") from None
        notify(f"created {path} from the shipped template: edit it to turn fusion passes off "
               '(e.g. "SomeFusionPass": "off"), then rerun')
    read_fusion_switches(path)
    return path
