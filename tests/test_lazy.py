import sys

import pytest

from precision_tool.lazy import MissingDependencyError, lazy_import


def test_lazy_import_defers_until_first_use():
    sys.modules.pop("colorsys", None)
    proxy = lazy_import("colorsys")
    assert "colorsys" not in sys.modules
    assert proxy.rgb_to_hsv(1.0, 0.0, 0.0) == (0.0, 1.0, 1.0)
    assert "colorsys" in sys.modules


def test_missing_module_is_a_one_line_user_error():
    proxy = lazy_import("no_such_module_xyz", install_hint="pip install xyz")
    with pytest.raises(MissingDependencyError, match=r"'no_such_module_xyz'.*\(pip install xyz\)"):
        _ = proxy.anything
