"""The replay runner on GraphDefs TensorFlow itself builds: widths, fallbacks, results against numpy."""
import numpy as np
import pytest

pytestmark = pytest.mark.tf
tf = pytest.importorskip("tensorflow")

from precision_tool.replay.runner import Job, run_jobs  # noqa: E402


def _graph(build):
    graph = tf.Graph()
    with graph.as_default():
        build()
    return {node.name: node for node in graph.as_graph_def().node}


def test_a_matmul_asked_for_float64_runs_in_float64_and_matches_numpy():
    rng = np.random.default_rng(3)
    weight = rng.standard_normal((64, 32)).astype(np.float32)
    x = rng.standard_normal((8, 64)).astype(np.float32)
    nodes = _graph(lambda: tf.linalg.matmul(tf.compat.v1.placeholder(tf.float32, (8, 64), name="x"),
                                            tf.constant(weight, name="w"), name="mm"))
    for width, dtype, tolerance in (("float64", np.float64, 1e-12), ("float32", np.float32, 1e-5)):
        job = Job([nodes["mm"]], {"x:0": x}, {"w:0": nodes["w"]}, ["mm:0"], width=width)
        run_jobs([job])
        exact = x.astype(np.float64) @ weight.astype(np.float64)
        assert job.error == "" and job.width == width and job.results[0].dtype == dtype
        assert np.max(np.abs(job.results[0] - exact)) / np.max(np.abs(exact)) < tolerance


def test_fused_batch_norm_takes_no_float64_so_it_runs_in_float32_and_float16_is_widened():
    """The op registry: FusedBatchNormV3's T allows half, bfloat16 and float, never double."""
    rng = np.random.default_rng(4)
    x = rng.standard_normal((2, 4, 4, 3)).astype(np.float16)
    stats = [rng.uniform(0.5, 1.5, 3).astype(np.float32) for _ in range(4)]

    def build():
        feed = tf.compat.v1.placeholder(tf.float16, (2, 4, 4, 3), name="x")
        consts = [tf.constant(value, name=f"c{k}") for k, value in enumerate(stats)]
        tf.compat.v1.nn.fused_batch_norm(feed, *consts[:2], mean=consts[2], variance=consts[3], is_training=False,
                                         name="bn")

    nodes = _graph(build)
    bn = next(node for node in nodes.values() if node.op == "FusedBatchNormV3")
    constants = {f"c{k}:0": nodes[f"c{k}"] for k in range(4)}
    for asked in ("float64", "float32"):
        job = Job([bn], {"x:0": x}, constants, [f"{bn.name}:0"], width=asked)
        run_jobs([job])
        assert job.error == "" and job.width == "float32" and job.results[0].dtype == np.float32
        scale, offset, mean, variance = (s.astype(np.float64) for s in stats)
        exact = (x.astype(np.float64) - mean) / np.sqrt(variance + 1e-3) * scale + offset
        assert np.max(np.abs(job.results[0] - exact)) < 1e-5
