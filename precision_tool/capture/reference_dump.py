"""Reference side (CPU/GPU): dump every op output with the TF op names the NPU dump refers to.

:func:`sess_dump` wraps a ``tf.compat.v1`` session (tfdbg v1: each ``run()`` writes one ``run_<us>_<n>`` folder),
:func:`estimator_dump` is the same as a ``SessionRunHook``, :func:`enable_reference_dump` records TF2 / Keras steps
(tfdbg v2, ``FULL_TENSOR``) and :func:`reference_session_config` is a ConfigProto with Grappler off, which keeps
the names 1:1. Each capture gets a new folder ``WORKSPACE/tf/tf_debug/<YYYYmmddHHMMSS>[_n]/``;
``precision_tool tf_dump`` converts the newest run. Why Grappler and oneDNN must be off:
docs/capture-tf1.md#names-what-grappler-does-in-tf-115-measured-here; more: docs/internals/capture.md#reference_dump.
"""
from __future__ import annotations

import atexit
import os
import re
import time
from typing import Any, Optional, Set

from precision_tool.capture.reference_names import remember_capture_root
from precision_tool.capture.settings import notify, warn_loudly, workspace_from_env
from precision_tool.errors import CaptureError
from precision_tool.lazy import lazy_import

tf = lazy_import("tensorflow")
config_pb2 = lazy_import("tensorflow.core.protobuf.config_pb2")
tf_session = lazy_import("tensorflow.python.client.session")
tf_debug_wrappers = lazy_import("tensorflow.python.debug.wrappers.dumping_wrapper")
tf_debug_hooks = lazy_import("tensorflow.python.debug.wrappers.hooks")

_SESSION_FIX = "create it with tf.Session(config=npu_tf_config.reference_session_config(config))"
_HOOK_FIX = ("pass config=npu_tf_config.reference_session_config(config) to MonitoredTrainingSession (Estimator: "
             "RunConfig(session_config=npu_tf_config.reference_session_config(config)))")


# -- folders --------------------------------------------------------------------------------------------
def new_capture_dir(root: Optional[str] = None) -> str:
    """Create and return an empty ``root/<YYYYmmddHHMMSS>[_n]`` (root: ``WORKSPACE/tf/tf_debug``)."""
    root = root or workspace_from_env().tf_debug
    stamp = time.strftime("%Y%m%d%H%M%S")
    try:
        os.makedirs(root, exist_ok=True)
        for attempt in range(1000):
            path = os.path.join(root, stamp if attempt == 0 else f"{stamp}_{attempt}")
            try:
                os.mkdir(path)
                return path
            except FileExistsError:
                continue
    except OSError as error:
        raise CaptureError(f"{root}: cannot create a capture folder ({error.strerror or error})") from None
    raise CaptureError(f"{root}: too many capture folders named {stamp}_*")


def _capture_root(dump_root: Optional[str]) -> str:
    """``dump_root`` checked to be new or empty (tfdbg v1 refuses anything else), or a new capture folder."""
    if dump_root is None:
        return new_capture_dir()
    dump_root = os.path.abspath(os.path.expanduser(os.fspath(dump_root)))
    if os.path.exists(dump_root) and (not os.path.isdir(dump_root) or os.listdir(dump_root)):
        raise CaptureError(f"{dump_root}: tfdbg needs a new or empty folder",
                           "leave dump_root out to get a new capture folder under WORKSPACE/tf/tf_debug")
    return dump_root


# -- Grappler -------------------------------------------------------------------------------------------
def reference_session_config(session_config=None):
    """A copy of ``session_config`` (or a new ConfigProto) that keeps TF op names 1:1 in a dump.

    Grappler's meta optimizer is disabled and the classic graph optimizer runs at ``L0`` (no common
    sub-expression elimination, no constant folding). With the meta optimizer off, custom optimizers
    (an ``NpuOptimizer`` left in a shared config) do not run either: this config is for the reference.
    """
    config = config_pb2.ConfigProto()
    if session_config is not None:
        if not isinstance(session_config, config_pb2.ConfigProto):
            raise CaptureError("session_config must be a tf.compat.v1.ConfigProto, "
                               f"got {type(session_config).__name__}")
        config.CopyFrom(session_config)
    config.graph_options.rewrite_options.disable_meta_optimizer = True
    config.graph_options.optimizer_options.opt_level = config_pb2.OptimizerOptions.L0
    return config


def keeps_op_names(session_config) -> bool:
    """True when a session with this config dumps every op under its own name (Grappler off)."""
    return bool(session_config.graph_options.rewrite_options.disable_meta_optimizer)


_GRAPPLER_WARNED: Set[str] = set()


def remapping_off(session_config) -> bool:
    """True when Grappler's remapper (the pass fusing Conv2D+BiasAdd+Relu) is off, e.g. after
    ``session_dump_config`` as the original README's flow has it."""
    rewrite = session_config.graph_options.rewrite_options
    return rewrite.remapping == type(rewrite).OFF


def warn_grappler_once(what: str, fix: str, session_config=None) -> bool:
    """Warn loudly, once per process for each ``what``, that a session runs Grappler; True if it warned.

    With the remapper off (``session_config`` given) the fusing pass is not the problem: the warning says
    only what the other passes (constant folding, arithmetic rewrites) may still rename or drop.
    """
    if what in _GRAPPLER_WARNED:
        return False
    _GRAPPLER_WARNED.add(what)
    if session_config is not None and remapping_off(session_config):
        warn_loudly(f"{what}: the session runs Grappler with remapping off, so Conv2D, BiasAdd and Relu keep their "
                    f"names, but constant folding and arithmetic rewrites may still rename or drop a few ops the NPU "
                    f"dump refers to; {fix}", stacklevel=4)
        return True
    warn_loudly(f"{what}: the session runs Grappler, which fuses ops (Conv2D+BiasAdd+Relu run as one _FusedConv2D "
                f"named after the Relu), so tfdbg dumps the fused op and the Conv2D and BiasAdd names the NPU dump "
                f"refers to are missing; {fix}", stacklevel=4)
    return True


# -- tfdbg v1 -------------------------------------------------------------------------------------------
def sess_dump(sess, dump_root: Optional[str] = None):
    """Wrap a ``tf.compat.v1`` session so every ``run()`` dumps all op outputs (tfdbg v1).

    ``sess = npu_tf_config.sess_dump(sess)``, as with the original tool: the wrapper runs the SAME session, which
    stays open and the default session of its ``with`` block (``y.eval()`` keeps working, undumped); nothing is
    closed or replaced. Create the session with ``config=npu_tf_config.reference_session_config(config)``: one with
    Grappler on is wrapped all the same, with one loud warning per process, and its dump misses fused op names.

    Parameters
    ----------
    sess : tf.compat.v1.Session or InteractiveSession
    dump_root : str, optional
        Empty or new folder for the ``run_*`` folders; default: a new ``WORKSPACE/tf/tf_debug/<time>``.

    Returns
    -------
    DumpingDebugWrapperSession
        Use it like the session (``run``, ``with``, ``graph``); run exactly the steps to compare.
    """
    if not isinstance(sess, tf_session.BaseSession):
        raise CaptureError(f"sess_dump wraps a tf.compat.v1.Session, got {type(sess).__name__}",
                           "for MonitoredTrainingSession pass hooks=[npu_tf_config.estimator_dump()]")
    root = _capture_root(dump_root)
    config = getattr(sess, "_config", None)
    if config is not None and not keeps_op_names(config):
        warn_grappler_once("sess_dump", f"{_SESSION_FIX} (the session is wrapped as it is)", config)
    notify(f"reference dump (tfdbg v1) -> {root}")
    return tf_debug_wrappers.DumpingDebugWrapperSession(sess, root)


_HOOK_CLASS: Optional[type] = None


def _hook_class():
    """``DumpingDebugHook`` that checks the session it gets (class built on first use: needs TF)."""
    global _HOOK_CLASS
    if _HOOK_CLASS is None:
        base: Any = tf_debug_hooks.DumpingDebugHook  # a class of the lazily imported module

        class ReferenceDumpHook(base):
            """tfdbg v1 dump hook that says loudly when the session would dump fused op names."""

            def after_create_session(self, session, coord):
                config = getattr(session, "_config", None)
                if config is not None and not keeps_op_names(config):
                    warn_grappler_once("estimator_dump", _HOOK_FIX, config)
                return super().after_create_session(session, coord)

        _HOOK_CLASS = ReferenceDumpHook
    return _HOOK_CLASS


def estimator_dump(dump_root: Optional[str] = None):
    """A ``SessionRunHook`` that dumps every op output of each ``run()`` (tfdbg v1).

    ``MonitoredTrainingSession(hooks=[npu_tf_config.estimator_dump()],
    config=npu_tf_config.reference_session_config(config))``: the config keeps op names 1:1 (a hook
    cannot change the session's config; it warns when names will be fused). ``tf.estimator`` no longer
    exists in TF 2.21; with TF <= 2.15 the hook also goes into ``EstimatorSpec(training_hooks=[...])``
    or ``estimator.train(hooks=[...])``.
    """
    root = _capture_root(dump_root)
    notify(f"reference dump (tfdbg v1 hook) -> {root}")
    return _hook_class()(root)


# -- tfdbg v2 -------------------------------------------------------------------------------------------
def enable_reference_dump(dump_root: Optional[str] = None) -> str:
    """Dump every op output of every ``tf.function`` / ``model.fit`` step from now on (tfdbg v2).

    Call it before the first step is traced (before ``model.fit``, or before the first call of a
    ``tf.function``); steps traced earlier are not instrumented. Keep XLA off for the reference
    (``model.compile(..., jit_compile=False)``): an XLA cluster is dumped as one op.
    :func:`disable_reference_dump` stops and flushes (it also happens at exit).

    The graphs TensorFlow builds meanwhile (each ``tf.function`` trace) are written to the capture's
    ``precision_tool_graphs/`` when the dump stops: tfdbg v2 keeps none, and replay needs them.

    Returns the capture folder (default: a new ``WORKSPACE/tf/tf_debug/<time>``).
    """
    root = _capture_root(dump_root)
    tf.debugging.experimental.enable_dump_debug_info(root, tensor_debug_mode="FULL_TENSOR", circular_buffer_size=-1)
    _FunctionGraphs.start(root)
    remember_capture_root(root)
    notify(f"reference dump (tfdbg v2, FULL_TENSOR) -> {root}; then npu_tf_config.record_reference_names(model) "
           "so tf_dump can also write Keras input and variable names")
    return root


def disable_reference_dump() -> None:
    """Stop the tfdbg v2 dump started by :func:`enable_reference_dump`, flush its files and write the graphs."""
    tf.debugging.experimental.disable_dump_debug_info()
    _FunctionGraphs.stop()


class _FunctionGraphs:
    """An op callback that remembers every graph an op is built in while the dump is on (``tf.function``
    traces, nested loop bodies), written as ``GraphDef`` files to ``root/precision_tool_graphs/<n>_<name>.pb``
    (:data:`precision_tool.formats.tf_graph.V2_GRAPHS_DIR`) by :meth:`stop` or at exit -- after tracing, so
    each graph is complete. One recorder at a time: starting another stops the last."""

    current: Optional["_FunctionGraphs"] = None
    _at_exit = False

    def __init__(self, root: str):
        self.root = root
        self.graphs: list = []
        self._seen: Set[int] = set()

    def __call__(self, op_type, inputs, attrs, outputs, op_name=None, graph=None):
        if graph is not None and id(graph) not in self._seen:
            self._seen.add(id(graph))
            self.graphs.append(graph)
        return None  # the op's outputs unchanged

    @classmethod
    def start(cls, root: str) -> None:
        from tensorflow.python.framework import op_callbacks

        cls.stop()
        cls.current = cls(root)
        op_callbacks.add_op_callback(cls.current)
        if not getattr(cls, "_at_exit", False):
            atexit.register(cls.stop)
            cls._at_exit = True

    @classmethod
    def stop(cls) -> None:
        recorder, cls.current = cls.current, None
        if recorder is None:
            return
        from tensorflow.python.framework import op_callbacks

        try:
            op_callbacks.remove_op_callback(recorder)
        except KeyError:  # removed already (TF clears its callbacks on some resets)
            pass
        recorder.write()

    def write(self) -> None:
        from precision_tool.fileio import atomic_write
        from precision_tool.formats.tf_graph import V2_GRAPHS_DIR

        folder = os.path.join(self.root, V2_GRAPHS_DIR)
        written = 0
        for number, graph in enumerate(self.graphs):
            data = graph.as_graph_def().SerializeToString()
            if not data:
                continue
            name = re.sub(r"[^A-Za-z0-9]+", "_", str(getattr(graph, "name", "") or "graph")).strip("_")
            try:
                os.makedirs(folder, exist_ok=True)
                with atomic_write(os.path.join(folder, f"{number}_{name or 'graph'}.pb")) as handle:
                    handle.write(data)
                written += 1
            except OSError as error:
                warn_loudly(f"{folder}: cannot write the reference's graphs ({error.strerror or error}); "
                            "replay will fall back to the error jump")
                return
        if written:
            notify(f"reference graphs: {written} written to {folder}")
