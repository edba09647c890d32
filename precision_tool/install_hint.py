"""What to install for TensorFlow, said for the environment at hand: its Python, and the TensorFlow it has.

``pip install 'precision_tool[tf]'`` pins tensorflow-cpu 2.21.0, which Python 3.7-3.9 cannot install, and which
would replace a user's own TensorFlow. :func:`tensorflow_install_hint` gives instead: TensorFlow installed (any of
its distributions) but not importable -- repair *that* install, same version; none, Python 3.7 -- tensorflow-cpu
1.15.0 or 2.6.5, the versions Huawei's TF adapter supports there; none, Python 3.8-3.9 -- tensorflow-cpu 2.6.5; none,
Python 3.10 and later -- the ``tf`` extra (tensorflow-cpu 2.21.0). The installed distribution is read from package
metadata (``*.dist-info`` folders on ``sys.path``): TensorFlow is never imported here.
"""
from __future__ import annotations

import os
import re
import sys
from typing import Optional, Sequence, Tuple

TENSORFLOW_DISTRIBUTIONS = ("tensorflow", "tensorflow-cpu", "tensorflow-gpu", "tensorflow-intel",
                            "tensorflow-macos", "tensorflow-aarch64")
_DIST_INFO = re.compile(r"(?P<name>[A-Za-z0-9_.\-]+?)-(?P<version>[0-9][^-]*)\.(dist|egg)-info$")


def installed_tensorflow(paths: Optional[Sequence[str]] = None) -> Optional[Tuple[str, str]]:
    """``(distribution, version)`` of the TensorFlow installed on ``paths`` (default ``sys.path``), or None."""
    for folder in sys.path if paths is None else paths:
        try:
            names = os.listdir(folder or ".")
        except OSError:
            continue
        for name in sorted(names):
            found = _DIST_INFO.match(name)
            if found and found.group("name").lower().replace("_", "-") in TENSORFLOW_DISTRIBUTIONS:
                return found.group("name").lower().replace("_", "-"), found.group("version")
    return None


def tensorflow_install_hint(python: Tuple[int, int] = sys.version_info[:2],
                            installed: Optional[Tuple[str, str]] = None, look: bool = True) -> str:
    """The one-line hint for a missing or broken TensorFlow (see the module docstring). ``installed`` defaults to
    what :func:`installed_tensorflow` finds (``look=False``: nothing is installed)."""
    if installed is None and look:
        installed = installed_tensorflow()
    if installed is not None:
        name, version = installed
        return (f"{name} {version} is installed here but does not import: repair it in place (pip install "
                f"--force-reinstall --no-deps {name}=={version}); installing precision_tool[tf] would replace it")
    shown = f"{python[0]}.{python[1]}"
    if python < (3, 8):
        return (f"pip install tensorflow-cpu==1.15.0 (or ==2.6.5): on Python {shown} these are the TensorFlow "
                "versions Huawei's TF adapter supports")
    if python < (3, 10):
        return (f"pip install tensorflow-cpu==2.6.5: on Python {shown} the TensorFlow version Huawei's TF adapter "
                "supports")
    return "pip install 'precision_tool[tf]' (tensorflow-cpu 2.21.0)"
