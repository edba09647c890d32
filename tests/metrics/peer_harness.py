"""Runs msaccucmp's own metric code over a batch of cases; executed by the peer's Python, not by pytest.

``peer_harness.py CASES.npz OUT.json``: for every ``m{i}``/``g{i}`` pair in the npz, calls msaccucmp's
``AlgorithmManager.compare`` (all ten built-in algorithms; it does its own float32 cast) exactly as its
``file_compare`` does -- flattened arrays, ``shape_type`` from the NPU array's shape -- twice: once as
shipped (the 6-decimal strings its CSV holds) and once with ``cmp_utils.utils.format_value`` swapped for
``repr`` so the numbers come back at full precision. Nothing else of the peer is changed.
Writes ``{"names": [...], "cases": [{"formatted": [...], "full": [...], "errors": [...]}, ...]}``.
"""
import json
import os
import sys
import importlib.util

import numpy as np


def _msaccucmp_dir():
    spec = importlib.util.find_spec("msprobe")
    return os.path.join(os.path.dirname(spec.origin), "msaccucmp")


def main(cases_path, out_path):
    sys.path.insert(0, _msaccucmp_dir())
    from algorithm_manager.algorithm_manager import AlgorithmManager
    from cmp_utils import utils, log

    log.print_warn_log = lambda *a, **k: None  # keep stdout quiet; messages still come back as errors
    log.print_info_log = lambda *a, **k: None
    manager = AlgorithmManager("", "all", "")
    names = manager.get_result_title()
    shipped_format = utils.format_value
    data = np.load(cases_path, allow_pickle=False)
    count = len([k for k in data.files if k.startswith("m")])
    cases = []
    for i in range(count):
        npu, ref = data[f"m{i}"], data[f"g{i}"]
        args = {"my_output_dump_file": "npu.npy", "ground_truth_dump_file": "ref.npy",
                "shape_type": utils.get_shape_type(npu.shape)}
        utils.format_value = shipped_format
        formatted, errors = manager.compare(npu.flatten(), ref.flatten(), dict(args))
        utils.format_value = lambda value: repr(float(value))
        full, _ = manager.compare(npu.flatten(), ref.flatten(), dict(args))
        cases.append({"formatted": formatted, "full": full, "errors": errors})
    utils.format_value = shipped_format
    with open(out_path, "w") as handle:
        json.dump({"names": names, "cases": cases}, handle)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
