"""The fusion switch files handed to the NPU (``fusion_switch_file``): shipped "all off", and the one users edit.

:data:`FUSION_OFF_FILE` (shipped, read only: ``ALL`` off for ``GraphFusion`` and ``UBFusion``) is for action
``fusion_off``. For ``fusion_switch`` the NPU reads the ``fusion_switch_file`` of the user's own config if it has
one (:func:`check_users_fusion_switch_file`: never created or replaced), else the workspace's
(:func:`workspace_fusion_switch_file`), created from the template :data:`FUSION_SWITCH_TEMPLATE` when missing
(:func:`ensure_fusion_switch_file`); either is read and checked on every call. Plain Python: no TensorFlow.
See docs/capture-custom-op.md#the-fusion-switch-file and docs/internals/capture.md#fusion_files.
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
