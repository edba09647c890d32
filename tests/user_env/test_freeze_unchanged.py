"""The check that ``pip install .`` left the user's TensorFlow environment as it was (Makefile user_env)."""
import os
import subprocess
import sys

import pytest

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "freeze_unchanged.py")


def _run(tmp_path, before, after):
    (tmp_path / "before.txt").write_text(before)
    (tmp_path / "after.txt").write_text(after)
    return subprocess.run([sys.executable, SCRIPT, str(tmp_path / "before.txt"), str(tmp_path / "after.txt")],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True)


@pytest.mark.compat
def test_added_packages_are_fine(tmp_path):
    result = _run(tmp_path, "numpy==1.18.5\nprotobuf==3.20.3\n",
                  "numpy==1.18.5\nprompt_toolkit==3.0.48\nprotobuf==3.20.3\n")
    assert result.returncode == 0
    assert "2 packages kept, added prompt-toolkit" in result.stdout


@pytest.mark.compat
def test_a_changed_or_removed_package_fails_and_is_named(tmp_path):
    result = _run(tmp_path, "numpy==1.18.5\nprotobuf==3.20.3\nsix==1.16.0\n",
                  "numpy==2.0.0\nProtobuf==3.20.3\n")
    assert result.returncode == 1
    assert "numpy: 1.18.5 -> 2.0.0" in result.stderr and "six: 1.16.0 -> removed" in result.stderr
    assert "protobuf" not in result.stderr  # same version, name case ignored
