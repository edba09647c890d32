"""The TensorFlow install hint fits the environment it is shown in (issue 39): the TF 1.15 user on Python 3.7 was
told ``pip install 'precision_tool[tf]'``, which pins tensorflow-cpu 2.21.0 (no wheel for 3.7) and would replace
their TensorFlow anywhere else. Versions per Python: what Huawei's TF adapter supports (TF 1.15 on 3.7, TF 2.6.5 on
3.7-3.9) and what the ``tf`` extra pins (setup.cfg)."""
import configparser
from pathlib import Path

import pytest

from precision_tool.install_hint import installed_tensorflow, tensorflow_install_hint

REPO = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.compat


def test_the_extra_named_for_new_pythons_is_what_setup_cfg_pins():
    config = configparser.ConfigParser()
    config.read(REPO / "setup.cfg")
    pinned = config["options.extras_require"]["tf"].split()
    assert pinned == ["tensorflow-cpu==2.21.0"]
    assert tensorflow_install_hint((3, 11), look=False) == "pip install 'precision_tool[tf]' (tensorflow-cpu 2.21.0)"


@pytest.mark.parametrize("python, expected", [
    ((3, 7), "pip install tensorflow-cpu==1.15.0 (or ==2.6.5): on Python 3.7 these are the TensorFlow versions "
             "Huawei's TF adapter supports"),
    ((3, 9), "pip install tensorflow-cpu==2.6.5: on Python 3.9 the TensorFlow version Huawei's TF adapter supports"),
    ((3, 13), "pip install 'precision_tool[tf]' (tensorflow-cpu 2.21.0)"),
])
def test_without_tensorflow_the_hint_is_a_version_that_python_can_install(python, expected):
    hint = tensorflow_install_hint(python, look=False)
    assert hint == expected
    assert ("precision_tool[tf]" in hint) == (python >= (3, 10))  # 2.21.0 has no wheel below 3.10


def test_an_installed_but_broken_tensorflow_is_repaired_not_replaced():
    hint = tensorflow_install_hint((3, 7), installed=("tensorflow", "1.15.5"))
    assert hint == ("tensorflow 1.15.5 is installed here but does not import: repair it in place (pip install "
                    "--force-reinstall --no-deps tensorflow==1.15.5); installing precision_tool[tf] would replace it")


def test_the_installed_distribution_is_read_from_its_metadata_folder(tmp_path):
    (tmp_path / "numpy-1.18.5.dist-info").mkdir()
    assert installed_tensorflow([str(tmp_path)]) is None
    (tmp_path / "tensorflow_cpu-2.6.5.dist-info").mkdir()
    assert installed_tensorflow([str(tmp_path / "missing"), str(tmp_path)]) == ("tensorflow-cpu", "2.6.5")
