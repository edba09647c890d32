"""What TensorFlow itself computes for a TF2 training step: ``tf2_step_truth.py MODEL_SCRIPT OUT.npz``.

Seeds as ``precision_tool emulate`` does (its default seed, then ``model()`` and ``inputs()``), runs the step
function once *eagerly* -- real variables, real Keras layers and optimizer -- and saves its outputs
(``output/K``) and the value after the step of every variable it changed or created (``variable/PATH``)."""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(HERE))))

import numpy as np  # noqa: E402

from precision_tool.capture.determinism import DEFAULT_SEED, seed_everything  # noqa: E402
from precision_tool.capture.emulate.model_script import load_model_script  # noqa: E402


def main(script_path: str, out: str) -> None:
    import tensorflow as tf

    script = load_model_script(script_path)
    seed_everything(DEFAULT_SEED, deterministic=True)
    step = script.build_model()
    batch = script.batch()
    before = {id(v): v for v in _variables(step)}
    start = {id(v): v.numpy() for v in before.values()}
    outputs = step(*[tf.constant(array) for array in batch])
    found = {f"output/{k}": np.asarray(value) for k, value in enumerate(tf.nest.flatten(outputs))}
    for variable in list(before.values()) + [v for v in _variables(step) if id(v) not in before]:
        value = variable.numpy()
        if id(variable) not in start or not np.array_equal(start[id(variable)], value):  # written by the step
            found[f"variable/{getattr(variable, 'path', variable.name)}"] = value
    np.savez(out, **found)


def _variables(step) -> list:
    """The variables the step function's closure holds (its Keras model's and its optimizer's)."""
    found = []
    for cell in step.__closure__ or ():
        value = cell.cell_contents
        held = getattr(value, "variables", None)
        held = held() if callable(held) else held  # tf_keras's optimizer: a method
        found.extend(held or ())
    return found


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
