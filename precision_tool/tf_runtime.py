"""How TensorFlow is imported and run by the code that needs it -- capture, emulation, replay (lazily).

:func:`session_config`: the CPU only, Grappler off, the classic graph optimizer at L0 (no constant folding, CSE or
inlining), one thread by default -- so every op runs under its own name and results are bit-identical from run to
run. :func:`quiet_tensorflow_import` sets ``TF_ENABLE_ONEDNN_OPTS=0`` and ``TF_CPP_MIN_LOG_LEVEL=2`` before
TensorFlow is first imported, where the user set nothing. :class:`BackgroundImport` imports it in a thread.
Why: docs/internals/capture.md#tf_runtime.
"""
from __future__ import annotations

import gc
import os
import sys
import threading
from typing import Optional

from precision_tool.install_hint import tensorflow_install_hint
from precision_tool.lazy import lazy_import
from precision_tool.collector import hold_collection, release_collection

tf = lazy_import("tensorflow")


def quiet_tensorflow_import() -> None:
    """See the module docstring; does nothing once TensorFlow is imported."""
    if "tensorflow" not in sys.modules:
        os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")
        os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")


class BackgroundImport:
    """TensorFlow imported in a thread (seconds of work) while the caller reads its data.

    :meth:`start` only where nothing forks until :meth:`wait` returns: a process forked while another thread
    imports inherits its half-taken locks (the comparison starts it once its workers exist). :meth:`wait`
    joins the thread and gives the one-line failure, ``""`` when TensorFlow is in (or the import was never
    started).
    """

    def __init__(self) -> None:
        self._error: Optional[BaseException] = None
        self._thread: Optional[threading.Thread] = None

    def start(self) -> None:
        if self._thread is None and "tensorflow" not in sys.modules:  # imported once per process (a shell)
            quiet_tensorflow_import()
            gc.collect()  # what is garbage now is collected, not frozen with TensorFlow's objects (also in a pause)
            hold_collection()
            try:
                self._thread = threading.Thread(target=self._run, name="import tensorflow", daemon=True)
                self._thread.start()
            except BaseException:  # no thread: nothing else will let go of the hold
                self._thread = None
                release_collection()
                raise

    def _run(self) -> None:
        """Import with the garbage collector off, then freeze: TensorFlow's million objects live as long as the
        process, and every full collection would walk them again (half a second during the import alone). The
        collector comes back on when no one else holds it off (:func:`~precision_tool.collector.hold_collection`:
        the comparison during which the import may start)."""
        try:
            import tensorflow  # noqa: F401  (a failure is reported by wait(), not raised)
        except Exception as error:  # noqa: BLE001 -- ImportError, or whatever a broken install raises
            self._error = error
        finally:
            gc.freeze()
            release_collection()

    def wait(self) -> str:
        if self._thread is not None:
            self._thread.join()
        if self._error is None:
            return ""
        return (f"TensorFlow cannot be imported ({type(self._error).__name__}: {self._error}); "
                f"{tensorflow_install_hint()}")


def session_config(threads: int = 1):
    """A ConfigProto that runs the graph as written (see the module docstring), on ``threads`` threads per
    op and across ops (``0``: TensorFlow's choice, one per core)."""
    config = tf.compat.v1.ConfigProto(intra_op_parallelism_threads=threads, inter_op_parallelism_threads=threads,
                                      device_count={"GPU": 0})
    config.graph_options.rewrite_options.disable_meta_optimizer = True
    options = config.graph_options.optimizer_options
    options.opt_level = tf.compat.v1.OptimizerOptions.L0
    options.do_constant_folding = False
    options.do_common_subexpression_elimination = False
    options.do_function_inlining = False
    return config
