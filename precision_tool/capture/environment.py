"""Process-level set-up for a capture: oneDNN off before TensorFlow loads, switch file check, folders, GE variables.

Plain Python: nothing here imports TensorFlow.

oneDNN. With ``TF_ENABLE_ONEDNN_OPTS`` unset, TensorFlow on x86 fuses Conv2D+BiasAdd+Relu (and more)
into one oneDNN op, so a reference dump lacks the inner op names the NPU dump refers to. The variable
is read when TensorFlow is imported, so :func:`disable_onednn_before_tensorflow` sets it to ``"0"``
only if TensorFlow is not imported yet, and otherwise says, loudly, that it is too late.
"""
from __future__ import annotations

import os
import sys
from typing import Dict, List, MutableMapping, Optional, Tuple

from precision_tool.capture.actions import CapturePlan
from precision_tool.capture.fusion_files import check_users_fusion_switch_file, ensure_fusion_switch_file
from precision_tool.capture.settings import notify, warn_loudly
from precision_tool.errors import CaptureError

ONEDNN_ENV = "TF_ENABLE_ONEDNN_OPTS"
_FIX = (f"set {ONEDNN_ENV}=0 in the environment, or import precision_tool.tf_config before tensorflow, "
        "so the reference keeps Conv2D, BiasAdd and Relu as separate ops")


def disable_onednn_before_tensorflow(modules=None, environ: Optional[MutableMapping[str, str]] = None) -> Optional[str]:
    """``environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")`` while TensorFlow is not imported.

    Returns the warning given (also printed and raised as a ``CaptureWarning``), or ``None`` when all
    is well: TensorFlow already imported with the variable not ``"0"``, or the user set it to
    something other than ``"0"``.
    """
    modules = sys.modules if modules is None else modules
    environ = os.environ if environ is None else environ
    value = environ.get(ONEDNN_ENV)
    if "tensorflow" in modules:
        if value != "0":
            shown = "unset" if value is None else f"{value!r}"
            message = (f"TensorFlow was imported before precision_tool.tf_config with {ONEDNN_ENV} {shown}: "
                       f"oneDNN fusions stay on and a CPU reference dump will miss fused op names; {_FIX}")
            warn_loudly(message, stacklevel=4)
            return message
        return None
    if value is None:
        environ[ONEDNN_ENV] = "0"
        return None
    if value != "0":
        message = (f"{ONEDNN_ENV}={value!r} keeps oneDNN fusions on: a CPU reference dump will miss fused op "
                   f"names; {_FIX}")
        warn_loudly(message, stacklevel=4)
        return message
    return None


# GE variables this process set itself, per environment mapping: {(id(environ), name): value}. Only a value
# still equal to what we set is ours to change; anything else was set (or changed) by the user.
_SET_BY_US: Dict[Tuple[int, str], str] = {}


NPU_ADAPTER = "npu_bridge"  # Huawei's TF adapter: what makes TensorFlow run a graph on an Ascend NPU


def npu_adapter_installed() -> bool:
    """Whether Huawei's TF adapter (``npu_bridge``) can be imported here; looked for, not imported. Without it
    TensorFlow ignores the ``NpuOptimizer`` and runs every graph on CPU/GPU: no NPU dump is ever written."""
    import importlib.util

    if NPU_ADAPTER in sys.modules:
        return True
    try:
        return importlib.util.find_spec(NPU_ADAPTER) is not None
    except (ImportError, ValueError):
        return False


def prepare_workspace(plan: CapturePlan, environ: Optional[MutableMapping[str, str]] = None,
                      npu: Optional[bool] = None) -> List[str]:
    """Check the plan's fusion switch file, create its folders, set the GE graph variables, print its notices.

    In that order, so a broken switch file fails before anything is created. A GE variable the user set is kept
    (reported when it differs); one an earlier call set in this process is updated (a second run's ``debug_1``).
    Returns the lines of what was done, which are also printed.

    Parameters
    ----------
    npu : whether this machine runs the graph on an NPU (default: :func:`npu_adapter_installed`); without one no
        NPU folder is created, and the notice says that nothing will be dumped.

    Raises
    ------
    CaptureError, FusionFormatError
        A folder cannot be created, or the switch file is missing (the user's) or invalid.
    """
    environ = os.environ if environ is None else environ
    if plan.fusion_switch_file:
        if plan.fusion_switch_from_template:
            ensure_fusion_switch_file(plan.fusion_switch_file)
        else:
            check_users_fusion_switch_file(plan.fusion_switch_file)
    npu = npu_adapter_installed() if npu is None else npu
    for folder in plan.folders if npu else ():
        try:
            os.makedirs(folder, exist_ok=True)
        except OSError as error:
            raise CaptureError(f"{folder}: cannot create the capture folder ({error.strerror or error})") from None
    done = []
    if plan.actions and npu:
        done.append(f"NPU capture '{plan.spelled}' -> {_where(plan)}")
    elif plan.actions:
        done.append(f"no NPU on this machine ({NPU_ADAPTER}, Huawei's TF adapter, is not installed): the config asks "
                    f"for '{plan.spelled}' -> {_where(plan)} on an Ascend NPU, but TensorFlow runs this graph on "
                    "CPU/GPU and nothing is dumped there")
    for name, value in plan.graph_env:
        current = environ.get(name)
        if current is None or (current != value and _SET_BY_US.get((id(environ), name)) == current):
            environ[name] = value
            _SET_BY_US[(id(environ), name)] = value
        elif current != value:
            done.append(f"kept your {name}={current} (precision_tool would use {value})")
    done += plan.notices
    for line in done:
        notify(line)
    return done


def _where(plan: CapturePlan) -> str:
    values = plan.values()
    places = [str(values[key]) for key in ("dump_path", "fusion_switch_file") if key in values]
    return ", ".join(places) if places else f"(no dump; debug_dir {values['debug_dir']})"
