"""Replay: each NPU op re-run on the CPU on its *own* dumped inputs, so its local error can be told apart
from the error it inherited.

A deep fp16 network drifts: every op's output is a little further from the float32 reference than its
inputs were, and a fixed cosine threshold is crossed where the drift has accumulated, not where an op went
wrong. Replay removes the drift from the question. For an NPU op that implements TF ops ``M`` (one op, or a
fused group), the subgraph of ``M`` is cut out of the reference's executed graph (``tf/graph``), fed the
inputs the NPU op itself read (from its dump file, in origin layout, cast to the dtype the TF op takes) and
run on the CPU (float64 where the kernels allow). Then, for each output:

* **local error** = RED(NPU output, replay): what the op itself added;
* **inherited error** = RED(replay, reference): what its inputs' error alone would have caused;
* **total error** = RED(NPU output, reference): the comparison's own figure,

``RED(x, y) = ||x - y||_2 / ||y||_2`` (msaccucmp's RelativeEuclideanDistance). The local error is judged
against a floor: what storing the exact result in the NPU output's dtype costs (:mod:`.local_error`).

Modules: :mod:`.reference_graph` (the kept graphs, read without TensorFlow), :mod:`.plan` (which TF ops and
which inputs, from the alignment; no TensorFlow), :mod:`.runner` (one TensorFlow session for many ops; the
only module importing TensorFlow, lazily), :mod:`.local_error` (the numbers) and :mod:`.replay_run` (the
job). Attribution -- which op stands out -- is :mod:`precision_tool.comparison.attribution`, part of the one
judgment of a run (:mod:`precision_tool.comparison.judgment`).
"""
