"""One OpenBLAS thread and a quiet TensorFlow log for the command line's own process; the user's programs never see
the settings."""
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from precision_tool.process_env import VARIABLE

REPO = Path(__file__).resolve().parents[1]


def _python(code: str, *args: str, **env: str) -> str:
    """Run ``code`` in a fresh interpreter whose environment lacks the variable (plus ``env``)."""
    clean = {k: v for k, v in os.environ.items() if k not in (VARIABLE, "TF_CPP_MIN_LOG_LEVEL")}
    clean.update(env, PYTHONPATH=str(REPO))
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code), *args], env=clean, stdout=subprocess.PIPE,
                          universal_newlines=True, check=True).stdout.strip()


THREADS_AFTER_NUMPY = """
    import os, sys
    from precision_tool.process_env import one_blas_thread
    if sys.argv[-1] != "plain":
        one_blas_thread()
    import numpy
    with open("/proc/self/maps") as maps:
        openblas = "openblas" in maps.read().lower()
    print(len(os.listdir("/proc/self/task")), openblas)
"""


@pytest.mark.skipif(not os.path.isdir("/proc/self/task"), reason="counts threads in /proc (Linux)")
def test_numpy_starts_no_blas_thread_once_one_is_asked_for():
    """The kernel's own thread count, not our variable: with the setting, importing numpy leaves the process with
    its one thread. Without it, an OpenBLAS numpy on a machine of several CPUs starts more (each spinning for
    0.1 s), which is why the setting exists."""
    threads, openblas = _python(THREADS_AFTER_NUMPY, "set").split()
    assert threads == "1"
    plain_threads, _ = _python(THREADS_AFTER_NUMPY, "plain").split()
    if openblas == "True" and (os.cpu_count() or 1) > 1:
        assert int(plain_threads) > 1


def test_the_command_line_sets_it_and_a_library_caller_is_left_alone():
    code = """
        import os, sys
        from precision_tool import cli
        {call}
        print(os.environ.get("OPENBLAS_NUM_THREADS"))
    """
    assert _python(code.format(call="sys.argv = ['precision_tool', 'help']; cli.main()")).splitlines()[-1] == "1"
    assert _python(code.format(call="cli.main(['help'])")).splitlines()[-1] == "None"


def test_a_users_own_setting_is_kept_and_too_late_is_left_alone():
    assert _python("""
        import os
        from precision_tool.process_env import one_blas_thread, user_environment
        print(one_blas_thread(), os.environ["OPENBLAS_NUM_THREADS"], user_environment()["OPENBLAS_NUM_THREADS"])
    """, OPENBLAS_NUM_THREADS="4") == "False 4 4"
    assert _python("""
        import os, numpy
        from precision_tool.process_env import one_blas_thread
        print(one_blas_thread(), "OPENBLAS_NUM_THREADS" in os.environ)
    """) == "False False"


def test_run_gives_the_users_command_the_environment_it_had():
    """`run` starts the user's shell command from a process that set the variable: the command does not see it."""
    out = _python("""
        import sys
        from precision_tool import cli
        sys.argv = ["precision_tool", "run", 'echo "[$OPENBLAS_NUM_THREADS] $EXTRA"']
        cli.main()
    """, EXTRA="kept")
    assert out.splitlines()[0] == "[] kept"


def test_a_channel_closed_again_after_a_ctrl_c_never_closes_a_reused_descriptor(monkeypatch):
    from precision_tool.process_env import Channel

    read_fd, write_fd = os.pipe()
    channel = Channel(read_fd, write_fd)
    real_close = os.close

    def close_then_interrupt(fd):
        real_close(fd)
        monkeypatch.setattr(os, "close", real_close)
        raise KeyboardInterrupt

    monkeypatch.setattr(os, "close", close_then_interrupt)
    with pytest.raises(KeyboardInterrupt):
        channel.close()  # its read end closed, then interrupted
    reused = os.open(os.devnull, os.O_RDONLY)  # the lowest free number: the read end's
    try:
        assert reused == read_fd
        channel.close()
        channel.close()
        os.fstat(reused)  # still open: not closed as the channel's
        with pytest.raises(OSError):
            os.fstat(write_fd)  # the write end was closed by the second close
    finally:
        os.close(reused)


def test_tensorflow_imported_by_ac_c_sees_a_quiet_log_level_unless_the_user_set_one(tmp_path):
    """Issue 39: every ``ac -c`` printed TensorFlow's C++ start-up lines (absl's "All log messages before
    absl::InitializeLog()", ``cudart_stub.cc] Could not find cuda drivers``) above the report. The TensorFlow that
    replay imports -- a stand-in here, which records the level it sees and refuses to load -- sees level 2; a level
    the user set is theirs; the user's own command (``run``) sees none."""
    fake = tmp_path / "site" / "tensorflow"
    fake.mkdir(parents=True)
    seen = tmp_path / "seen.txt"
    (fake / "__init__.py").write_text(
        "import os\n"
        f"open({str(seen)!r}, 'a').write(os.environ.get('TF_CPP_MIN_LOG_LEVEL', 'unset') + '\\n')\n"
        "raise ImportError('stand-in TensorFlow')\n")
    workspace = REPO / "sample_dumps" / "cnn_workspace"

    def ac(**env):
        clean = {k: v for k, v in os.environ.items() if k not in (VARIABLE, "TF_CPP_MIN_LOG_LEVEL")}
        clean.update(env, PYTHONPATH=f"{tmp_path / 'site'}:{REPO}")
        done = subprocess.run([sys.executable, "-m", "precision_tool", "-d", str(workspace), "ac", "-c", "-o",
                               str(tmp_path / "out")], env=clean, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              universal_newlines=True)
        assert "stand-in TensorFlow" in done.stdout  # replay tried it, and said why it could not run
        return seen.read_text().split()

    assert ac() == ["2"]
    assert ac(TF_CPP_MIN_LOG_LEVEL="0") == ["2", "0"]
    out = _python("""
        import sys
        from precision_tool import cli
        sys.argv = ["precision_tool", "run", 'echo "[$TF_CPP_MIN_LOG_LEVEL]"']
        cli.main()
    """)
    assert out.splitlines()[0] == "[]"
