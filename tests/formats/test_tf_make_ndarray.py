"""TensorProtos whose typed values do not match their shape or dtype, read as TensorFlow's own reader of tfdbg dumps
reads them (issue 40): ``tf.make_ndarray``, run in a subprocess (TensorFlow stays out of pytest's process), is the
truth. Where it gives an array, ours is the same array (dtype and values, bit for bit); where it raises, ours
refuses with a one-line :class:`ReferenceFormatError`."""
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from precision_tool.errors import ReferenceFormatError
from precision_tool.formats import tf_schema, tf_tensor

pytestmark = pytest.mark.tf
REPO = Path(__file__).resolve().parents[2]

# (name, dtype code, typed field, values, shape)
CASES = [
    ("float_fewer", 1, "float_val", [1.5, -2.0], [4]),
    ("float_none", 1, "float_val", [], [2, 3]),
    ("float_more", 1, "float_val", [1.0, 2.0, 3.0], [2]),
    ("float_exact", 1, "float_val", [1.0, 2.0], [2]),
    ("int32_more", 3, "int_val", [1, 2, 3, 4, 5], [4]),
    ("int32_fewer", 3, "int_val", [7], [3]),
    ("uint8_range", 4, "int_val", [300, 1], [2]),
    ("uint8_negative", 4, "int_val", [-1], [2]),
    ("int8_range", 6, "int_val", [128], [1]),
    ("int8_ok", 6, "int_val", [-128, 127], [2]),
    ("int16_range", 5, "int_val", [40000], [1]),
    ("half_fewer", 19, "half_val", [0x3C00], [3]),
    ("half_range", 19, "half_val", [70000], [1]),
    ("half_more", 19, "half_val", [0x3C00, 0x4000, 0x4200], [2]),
    ("bool_fewer", 10, "bool_val", [True], [3]),
    ("int64_more", 9, "int64_val", [1, 2, 3], [2]),
    ("double_fewer", 2, "double_val", [0.25], [2, 2]),
    ("complex64_odd", 8, "scomplex_val", [1.0, 2.0, 3.0], [2]),
    ("uint16_range", 17, "int_val", [70000], [1]),
]

TRUTH = textwrap.dedent("""
    import json, sys
    import numpy as np
    import tensorflow as tf
    out = {}
    for name, code, field, values, shape in json.loads(sys.argv[1]):
        proto = tf.make_tensor_proto(np.zeros(0, np.float32))  # a TensorProto to fill by hand
        proto.Clear()
        proto.dtype = code
        for size in shape:
            proto.tensor_shape.dim.add(size=size)
        getattr(proto, field).extend(values)
        try:
            array = tf.make_ndarray(proto)
            out[name] = {"dtype": array.dtype.name, "shape": list(array.shape),
                         "bytes": array.tobytes().hex()}
        except Exception as error:  # what TensorFlow refuses
            out[name] = {"error": type(error).__name__ + ": " + str(error).splitlines()[0]}
    print(json.dumps(out))
""")


@pytest.fixture(scope="module")
def truth():
    pytest.importorskip("tensorflow")
    done = subprocess.run([sys.executable, "-c", TRUTH, json.dumps(CASES)], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, universal_newlines=True, timeout=300,
                          env={"TF_CPP_MIN_LOG_LEVEL": "3", "PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def _proto(code, field, values, shape):
    proto = tf_schema.TensorProto(dtype=code)
    for size in shape:
        proto.tensor_shape.dim.add(size=size)
    getattr(proto, field).extend(values)
    return proto


@pytest.mark.parametrize("name, code, field, values, shape", CASES, ids=[case[0] for case in CASES])
def test_typed_values_are_read_as_tf_make_ndarray_reads_them(truth, name, code, field, values, shape):
    expected = truth[name]
    proto = _proto(code, field, values, shape)
    if "error" in expected:
        with pytest.raises(ReferenceFormatError):
            tf_tensor.tensor_proto_to_numpy(proto, "t.npy")
        return
    array = tf_tensor.tensor_proto_to_numpy(proto, "t.npy")
    assert array.dtype.name == expected["dtype"] and list(array.shape) == expected["shape"]
    assert np.ascontiguousarray(array).tobytes().hex() == expected["bytes"]
