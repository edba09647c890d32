"""Replay: each NPU op re-run on the CPU on its *own* dumped inputs, so its local error can be told apart
from the error it inherited.

For an NPU op that implements TF ops ``M`` (one op, or a fused group), the subgraph of ``M`` is cut out of the
reference's executed graph (``tf/graph``), fed the inputs the NPU op itself read and run on the CPU. Per output,
with ``RED(x, y) = ||x - y||_2 / ||y||_2``: **local** = RED(NPU, replay), what the op itself added, judged against a
floor (:mod:`.local_error`); **inherited** = RED(replay, reference); **total** = RED(NPU, reference). Why and how:
docs/local-error.md#replay; the modules: docs/internals/replay.md. Which op stands out is
:mod:`precision_tool.comparison.attribution`, part of the one judgment (:mod:`precision_tool.comparison.judgment`).
"""
