"""How TensorFlow is imported for replay: in a thread, with one-line failures, the collector restored."""
import subprocess
import sys
import textwrap
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def _run(tmp_path, package_body):
    """Run a BackgroundImport in a fresh process whose ``tensorflow`` is the package written here."""
    fake = tmp_path / "site" / "tensorflow"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text(package_body)
    code = textwrap.dedent("""
        import gc, sys
        from precision_tool.tf_runtime import BackgroundImport
        started = BackgroundImport()
        started.start()
        print(started.wait() or 'ok')
        print(gc.isenabled(), gc.get_freeze_count() > 0)
        again = BackgroundImport()
        again.start()
        print(again.wait() or 'ok')
    """)
    return subprocess.run([sys.executable, "-c", code], env={"PYTHONPATH": f"{tmp_path / 'site'}:{REPO}"},
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True,
                          check=True).stdout.splitlines()


def test_a_broken_tensorflow_is_one_line_and_the_collector_comes_back(tmp_path):
    out = _run(tmp_path, "raise ImportError('libcudart.so.11.0: cannot open shared object file')\n")
    # the hint names the TensorFlow this environment has installed (its metadata), not an extra that would replace it
    try:
        from importlib import metadata
    except ImportError:  # Python 3.7: pip's own vendored reader of the same metadata
        import pkg_resources as metadata_source

        distribution = next(d for d in metadata_source.working_set
                            if d.project_name.lower() in ("tensorflow-cpu", "tensorflow"))
        name, version = distribution.project_name.lower(), distribution.version
    else:
        name = next(n for n in ("tensorflow-cpu", "tensorflow") if _has(metadata, n))
        version = metadata.version(name)
    line = ("TensorFlow cannot be imported (ImportError: libcudart.so.11.0: cannot open shared object file); "
            f"{name} {version} is installed here but does not import: repair it in place (pip install "
            f"--force-reinstall --no-deps {name}=={version}); installing precision_tool[tf] would replace it")
    assert out == [line, "True True", line]  # tried again (a failed import leaves nothing behind)


def test_tensorflow_is_imported_once_and_frozen_out_of_the_collector(tmp_path):
    out = _run(tmp_path, "import gc\nENABLED_WHILE_IMPORTING = gc.isenabled()\nassert not ENABLED_WHILE_IMPORTING\n")
    assert out == ["ok", "True True", "ok"]


def _has(metadata, name: str) -> bool:
    try:
        metadata.version(name)
        return True
    except metadata.PackageNotFoundError:
        return False
