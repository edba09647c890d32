"""A frozen TF1 graph as a model: ``graph_def()`` (not ``model()``). graph_def_cases.py builds the graph
(convolution, fused batch norm in inference, ReLU, a dense head, and an unrelated ``aux`` branch with its own
placeholder), freezes it to ``model.pb``, and copies this script next to it: the paths below are relative to
the script's folder. ``PRECISION_TOOL_GD_CASE`` picks a case: ``pb`` (the default), ``object`` (the GraphDef read
here), ``meta`` (the meta graph and checkpoint the graph was saved as), and the refused ``unfrozen``,
``wrong_feed``, ``unfed``, ``shape``, ``dtype``, ``text`` (a text GraphDef) and ``two`` (model() defined as
well)."""
import os

import numpy as np

CASE = os.environ.get("PRECISION_TOOL_GD_CASE", "pb")
HERE = os.path.dirname(os.path.abspath(__file__))
SOURCES = {"meta": "ckpt/model.meta", "unfrozen": "unfrozen.pb", "text": "model.pbtxt"}
FEEDS = {"wrong_feed": ["images"]}
FETCHES = {"unfed": ["head/prob:0", "aux/out:0"]}


def graph_def():
    source = SOURCES.get(CASE, "model.pb")
    if CASE == "object":  # the GraphDef itself, not its path
        import tensorflow as tf

        with open(os.path.join(HERE, source), "rb") as handle:
            source = tf.compat.v1.GraphDef.FromString(handle.read())
    return source, FEEDS.get(CASE, ["image"]), FETCHES.get(CASE, ["head/prob:0"])


def inputs():
    shape = (2, 16, 16, 4) if CASE == "shape" else (2, 16, 16, 3)
    return np.random.default_rng(5).uniform(-1.0, 1.0, shape).astype("float64" if CASE == "dtype" else "float32")


if CASE == "two":
    def model():
        return None
