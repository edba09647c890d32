"""The fusion switch files handed to the NPU (``fusion_switch_file``): shipped "all off", and the one users edit.

* :data:`FUSION_OFF_FILE` -- shipped with precision_tool, read only: ``ALL`` off for ``GraphFusion``
  and ``UBFusion`` (action ``fusion_off``).
* :data:`FUSION_SWITCH_TEMPLATE` -- the shipped *template* for action ``fusion_switch`` (everything on).
  It is never handed to the NPU.
* The file the NPU reads for ``fusion_switch`` is the one users edit (``"SomeFusionPass": "off"``):
  the ``fusion_switch_file`` already in the user's own NPU config if there is one (honoured, never
  replaced), else ``WORKSPACE/fusion/fusion_switch.cfg``, created from the template when missing. It is
  read again and checked on every call, so an edit always counts and a typo fails here in one line, not
  deep inside graph compilation. ``npu_tf_config.FUSION_SWITCH_FILE`` names the workspace file
  (:func:`workspace_fusion_switch_file`), computed when it is read.

Difference from the original tool, on purpose: its ``FUSION_SWITCH_FILE`` was the copy inside the installed
package, edited in place; a ``pip install`` puts that in a read-only, shared ``site-packages`` and an upgrade
would wipe the edits, so the editable copy lives in the workspace (a notice names it when it is created).

Plain Python: no TensorFlow.
"""
from __future__ import annotations

import os
import shutil
from typing import Optional

from precision_tool.capture.settings import CaptureSettings, notify, workspace_from_env
from precision_tool.errors import CaptureError
from precision_tool.formats.fusion_result import read_fusion_switches

DATA_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "data")
FUSION_OFF_FILE = os.path.join(DATA_DIR, "fusion_off.cfg")
FUSION_SWITCH_TEMPLATE = os.path.join(DATA_DIR, "fusion_switch.cfg")


def workspace_fusion_switch_file(settings: Optional[CaptureSettings] = None) -> str:
    """``WORKSPACE/fusion/fusion_switch.cfg``: the switch file users edit (may not exist yet)."""
    workspace = settings.workspace if settings is not None else workspace_from_env()
    return workspace.fusion_switch


def ensure_fusion_switch_file(path: str, check: bool = True) -> str:
    """Copy the shipped template to ``path`` unless a file is there; check it parses (unless ``check`` is
    False); return ``path``. A dangling symlink at ``path`` is an error, not a place to write through (the
    link's target may be anywhere, an input folder included).

    Raises
    ------
    FusionFormatError
        The (user-edited) file is not a valid switch file; the message names it.
    CaptureError
        The copy cannot be written.
    """
    if os.path.islink(path) and not os.path.exists(path):  # never create the file a broken link points at
        raise CaptureError(f"{path}: a symlink to {os.readlink(path)!r}, which does not exist",
                           "fix or remove the link; the template is copied only where no file is")
    if not os.path.lexists(path):
        try:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            shutil.copyfile(FUSION_SWITCH_TEMPLATE, path)
        except OSError as error:
            raise CaptureError(f"{path}: cannot create the fusion switch file ({error.strerror or error})") from None
        notify(f"created {path} from the shipped template: edit it to turn fusion passes off "
               '(e.g. "SomeFusionPass": "off"), then rerun')
    if check:
        read_fusion_switches(path)
    return path


def check_users_fusion_switch_file(path: str) -> str:
    """The user's own ``fusion_switch_file``: it must exist and parse (it is never created or replaced).

    Raises
    ------
    CaptureError
        No such file (the message says which NPU setting names it).
    FusionFormatError
        The file is not a valid switch file.
    """
    if not os.path.isfile(path):
        raise CaptureError(f"{path}: your fusion_switch_file does not exist",
                           "fix the path in your NPU config, or remove it to use the workspace's "
                           "fusion/fusion_switch.cfg")
    read_fusion_switches(path)
    return path
