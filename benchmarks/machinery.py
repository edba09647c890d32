"""``make bench``: the machinery that stays, each piece measured with and without it on the same 300-op ``compare``
or where it acts (issue 41: machinery must show its gain here, or state why it exists, or go).

* ``formats/proto_records.py``: dump headers and Build graphs read into records by a wire decoder of our own,
  instead of the protobuf runtime (``google.protobuf``, the classes ``formats/protoschema.py`` builds), which is a
  dependency all the same. Without it: headers by ``DumpData.FromString``, a JSON graph into protobuf messages
  (the reader the package had before the records, kept here as :func:`json_to_message`), a text graph by the
  line parser into protobuf messages (its own second path); the classes built when the job starts, as a module
  holding them would at import.
* ``collector.py``: the garbage collector held off while TensorFlow imports in a background thread
  (``tf_runtime.BackgroundImport``, as replay imports it). Without it: ``hold_collection``/``release_collection``
  made no-ops there.

What issue 41 removed after this benchmark measured it is named in the last line printed.

The case is run.py's ``nd`` case (``make_case.py``: 300 ops, dump files of 1.5 MiB, the chain's Build graph as
JSON and as GE's text), built once into ``/tmp/precision_tool_bench`` and shared with run.py. Four parts:

1. **What proto_records touches**, in a fresh process per environment: the one-time cost of the protobuf
   runtime (importing it and building the two schemas' classes; median of fresh processes, the package's own
   modules already loaded), reading the 300 dump headers (``read_dump_header``) and the Build graph
   (``read_ge_graph``) with records and with the runtime (median of passes taking turns; the models read are
   checked equal). Run with this Python and, when they exist, the users' environments beside this checkout
   (``.venv-tf115``: TensorFlow 1.15's protobuf; ``.venv-tf26``: TensorFlow 2.6's) and with protobuf's pure-Python
   implementation (``PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION=python``).
2. **What collector touches**: TensorFlow imported as replay imports it (``tf_runtime.BackgroundImport``), with the
   collector held off during the import and with the hold a no-op; fresh processes taking turns, each pair run
   back to back. Per way: the median wall time of the import, its garbage collections (their time by
   ``gc.callbacks``); then what the hold saves per pair, median and quartiles.
3. **The whole job**: ``compare -m npu -g ref -f graph.json`` as a fresh process per run, as shipped and with the
   protobuf runtime, taking turns run by run (a shared machine drifts), after one unmeasured round; 11 rounds by
   default (7 did not separate effects of a few percent from this shared machine's noise). Per variant: the
   median and best wall time from start to exit, every run's, aligning (``summary.json``), the main process's
   garbage collections (their time by ``gc.callbacks``) and CPU time, all processes' CPU time. Then what the
   records save: per round, the run with the runtime minus the run as shipped (runs made back to back), median
   and quartiles over the rounds. Both variants must write the same result CSV.
4. **Each piece in one line**: what it saves where it acts (the whole job for proto_records, TensorFlow's
   import for collector). A gain is called shown when even the lower quartile is above zero.

On a machine shared with other work the wall time moves by more than these pieces are worth: the load average is
printed at the start and the end, and the main process's gc time and the aligning time are the steadier figures.
"""
from __future__ import annotations

import argparse
import gc
import json
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import time
from typing import Any, Dict, List, Optional

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, REPO)

DEFAULT_ROOT = "/tmp/precision_tool_bench"
OPS = 300
VARIANTS = {  # name -> what it turns off
    "as shipped": "",
    "protobuf runtime": "proto_records",
}
USER_ENVS = (".venv-tf115", ".venv-tf26")
REMOVED = ("removed in issue 41: overlap.py (forked graph read and results-file write) and the collector pause "
           "around the job: their gain on the 300-op job did not show in this benchmark (quartiles spanning zero)")


# --------------------------------------------------------------------------------------------- without records
def json_to_message(obj: Any, message) -> Any:
    """Fill the protobuf ``message`` from ``obj`` (GE's JSON form), checking each value's type as the package's JSON
    reader did before the records (``ge_json_codec.json_to_message`` until commit 2a30301), but without writing out
    each value's JSON path (the record reader writes one only for an error, and so would this one); errors reduced
    to one ``ValueError``. Returns ``message``."""
    from precision_tool.formats.ge_json_codec import _DECIMAL, _FLOAT_TEXT, PLAIN_BYTES_FIELDS
    from precision_tool.formats.ge_schema import field_table
    from precision_tool.formats.ge_text import c_unescape
    from precision_tool.formats.proto_records import FieldType as T

    integers = {T.TYPE_INT32, T.TYPE_INT64, T.TYPE_UINT32, T.TYPE_UINT64}

    def scalar(field, value):
        kind = field.type
        if kind == T.TYPE_STRING and isinstance(value, str):
            return value
        if kind == T.TYPE_BYTES and isinstance(value, str):
            return value.encode("utf-8", "surrogateescape") if field.name in PLAIN_BYTES_FIELDS else c_unescape(value)
        if kind == T.TYPE_BOOL and isinstance(value, bool):
            return value
        if kind == T.TYPE_ENUM:
            if isinstance(value, str):
                return field.enum_type.values_by_name[value].number
            if isinstance(value, int) and not isinstance(value, bool):
                return value
        if kind in integers:
            if isinstance(value, int) and not isinstance(value, bool):
                return value
            if isinstance(value, str) and _DECIMAL.fullmatch(value):
                return int(value)
        if kind in (T.TYPE_FLOAT, T.TYPE_DOUBLE) and isinstance(value, (int, float, str)) \
                and not isinstance(value, bool) and (not isinstance(value, str) or _FLOAT_TEXT.fullmatch(value)):
            return float(value)
        raise ValueError(f"{field.name}: {value!r}")

    def fill(obj, message):
        if not isinstance(obj, dict):
            raise ValueError(f"expected an object, got {obj!r}")
        table = field_table(message.DESCRIPTOR)
        for key, value in obj.items():
            info = table.get(key)
            if info is None or value is None:
                continue
            if info.map:
                target = getattr(message, key)
                entries = value.items() if isinstance(value, dict) else [(e["key"], e.get("value")) for e in value]
                for entry_key, item in entries:
                    if info.map_value.type == T.TYPE_MESSAGE:
                        fill({} if item is None else item, target[entry_key])
                    else:
                        target[entry_key] = scalar(info.map_value, item)
            elif info.repeated:
                if not isinstance(value, list):
                    raise ValueError(f"{key}: expected a list")
                target = getattr(message, key)
                for item in value:
                    if info.type == T.TYPE_MESSAGE:
                        fill({} if item is None else item, target.add())
                    else:
                        target.append(scalar(info.descriptor, item))
            elif info.type == T.TYPE_MESSAGE:
                child = getattr(message, key)
                child.SetInParent()
                fill(value, child)
            else:
                setattr(message, key, scalar(info.descriptor, value))
        return message

    return fill(obj, message)


def use_protobuf_runtime() -> None:
    """Read dump headers and Build graphs with the protobuf runtime instead of records, in this process (its
    classes built now, as a module holding them would at import)."""
    from google.protobuf.message import DecodeError

    from precision_tool.formats import dump_file, ge_io
    from precision_tool.formats.dump_schema import dump_messages
    from precision_tool.formats.ge_schema import ge_messages
    from precision_tool.formats.proto_records import ProtoDecodeError

    header_classes, graph_classes = dump_messages(), ge_messages()

    class ProtobufHeaders:
        @staticmethod
        def decode(name: str, data: bytes):
            try:
                return header_classes[name].FromString(data)
            except DecodeError as error:
                raise ProtoDecodeError(str(error)) from None

    class ProtobufAssembler(ge_io._ModelAssembler):  # the line parser fills messages when given one
        def __init__(self, source):
            super().__init__(source)
            self.root = graph_classes["ModelDef"]()

    dump_file.DUMP_RECORDS = ProtobufHeaders()
    ge_io.json_to_record = lambda obj, name, source=None: json_to_message(obj, graph_classes[name]())
    ge_io._ModelAssembler = ProtobufAssembler


def use_records() -> None:
    """Undo :func:`use_protobuf_runtime`."""
    from precision_tool.formats import dump_file, ge_io, ge_json_codec
    from precision_tool.formats.dump_schema import DUMP_RECORDS

    dump_file.DUMP_RECORDS = DUMP_RECORDS
    ge_io.json_to_record = ge_json_codec.json_to_record
    ge_io._ModelAssembler = _SHIPPED_ASSEMBLER[0]


_SHIPPED_ASSEMBLER: List[Any] = []


# --------------------------------------------------------------------------------------------- one job (a child)
def run_job(variant: str, stats_path: str, args: List[str]) -> None:
    """``precision_tool ARGS`` in this process with ``variant``'s piece turned off; what the benchmark needs of this
    process (garbage collections, CPU) written to ``stats_path`` before the command line's own exit."""
    from precision_tool.process_env import one_blas_thread

    one_blas_thread()  # as cli.main does first: before numpy loads (the imports below load it)
    collections = {"count": 0, "seconds": 0.0}
    started = [0.0]

    def timed(phase: str, info: dict) -> None:
        if phase == "start":
            started[0] = time.perf_counter()
        else:
            collections["count"] += 1
            collections["seconds"] += time.perf_counter() - started[0]

    gc.callbacks.append(timed)
    # The same modules loaded first in every variant, so that only the piece turned off differs.
    from precision_tool import cli
    from precision_tool.comparison import pipeline  # noqa: F401
    from precision_tool.formats import dump_file, ge_io  # noqa: F401
    from precision_tool.reports import result_outputs  # noqa: F401

    if VARIANTS[variant] == "proto_records":
        use_protobuf_runtime()
    sys.argv = ["precision_tool", *args]
    code = cli.main()
    own, reaped = (resource.getrusage(who) for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN))
    with open(stats_path, "w") as handle:
        json.dump({"gc_count": collections["count"], "gc_ms": 1000 * collections["seconds"],
                   "cpu_s": own.ru_utime + own.ru_stime,
                   "all_cpu_s": own.ru_utime + own.ru_stime + reaped.ru_utime + reaped.ru_stime,
                   "protobuf_loaded": "google.protobuf" in sys.modules, "exit": code}, handle)
    cli.leave(code)


# --------------------------------------------------------------------------------------------- components (a child)
def _elapsed_ms(function) -> float:
    started = time.perf_counter()
    function()
    return 1000 * (time.perf_counter() - started)


def components(case: str, passes: int) -> dict:
    """Records against the protobuf runtime on the parts of the job they touch, in this process."""
    from precision_tool.formats import ge_io
    from precision_tool.formats.dump_file import read_dump_header

    _SHIPPED_ASSEMBLER.append(ge_io._ModelAssembler)
    if "google.protobuf" in sys.modules:
        raise RuntimeError("the protobuf runtime was loaded before it was to be timed")
    dumps = [os.path.join(case, "npu", name) for name in sorted(os.listdir(os.path.join(case, "npu")))]
    graphs = {"json": os.path.join(case, "graph.json"), "text": os.path.join(case, "graph.txt")}
    out: Dict[str, Any] = {}

    def headers() -> None:
        for path in dumps:
            read_dump_header(path)

    read_ge_graph = ge_io.read_ge_graph
    jobs = {"headers": headers}
    jobs.update({f"graph {form}": (lambda path=path: read_ge_graph(path)) for form, path in graphs.items()})
    times: Dict[str, List[float]] = {}
    for _ in range(passes):  # the readers take turns pass by pass: a drifting machine slows each alike
        for reader, switch in (("records", use_records), ("protobuf", use_protobuf_runtime)):
            switch()
            for name, job in jobs.items():
                times.setdefault(f"{name} {reader}", []).append(_elapsed_ms(job))
    out.update({name: statistics.median(values) for name, values in times.items()})
    for form, path in graphs.items():
        use_records()
        records = read_ge_graph(path)
        use_protobuf_runtime()
        if read_ge_graph(path) != records:
            raise RuntimeError(f"the {form} graph reads differently with the protobuf runtime")
    use_records()
    from google.protobuf import __version__
    from google.protobuf.internal import api_implementation

    out["environment"] = (f"Python {sys.version.split()[0]}, protobuf {__version__} "
                          f"({api_implementation.Type()})")
    out["headers"] = len(dumps)
    return out


def tensorflow_import(paused: bool) -> dict:
    """TensorFlow imported as replay imports it (``tf_runtime.BackgroundImport``: a thread, the collector held off
    by ``collector.hold_collection``, then everything frozen), in this process; with ``paused`` false the hold is
    a no-op. Wall time from start to ``wait()``, and the collections meanwhile."""
    from precision_tool.process_env import one_blas_thread, quiet_tensorflow_logs

    one_blas_thread()
    quiet_tensorflow_logs()
    import numpy  # noqa: F401  (loaded when a command starts the import)

    from precision_tool import tf_runtime

    if not paused:
        tf_runtime.hold_collection = tf_runtime.release_collection = lambda: None
    collections = {"count": 0, "seconds": 0.0}
    begun = [0.0]

    def timed(phase: str, info: dict) -> None:
        if phase == "start":
            begun[0] = time.perf_counter()
        else:
            collections["count"] += 1
            collections["seconds"] += time.perf_counter() - begun[0]

    gc.callbacks.append(timed)
    started = time.perf_counter()
    importing = tf_runtime.BackgroundImport()
    importing.start()
    error = importing.wait()
    return {"wall_s": time.perf_counter() - started, "gc_ms": 1000 * collections["seconds"],
            "gc_count": collections["count"], "error": error}


def measure_tensorflow_import(runs: int) -> Dict[str, List[dict]]:
    """:func:`tensorflow_import` held and not, ``runs`` fresh processes each, taking turns."""
    env = dict(os.environ, PYTHONPATH=REPO)
    kept: Dict[str, List[dict]] = {"held": [], "not held": []}
    for run in range(runs):
        for mode in ("held", "not held") if run % 2 == 0 else ("not held", "held"):
            out = subprocess.run([sys.executable, os.path.abspath(__file__), "--tensorflow-import", mode], env=env,
                                 check=True, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                 universal_newlines=True).stdout
            kept[mode].append(json.loads(out.splitlines()[-1]))
            if kept[mode][-1]["error"]:
                return kept
    return kept


def print_tensorflow_import(kept: Dict[str, List[dict]]) -> None:
    errors = [m["error"] for runs in kept.values() for m in runs if m["error"]]
    if errors:
        print(f"  not measured: {errors[0]}")
        return
    for mode, runs in kept.items():
        walls = ", ".join(f"{m['wall_s']:.2f}" for m in runs)
        print(f"  collector {mode:8s}: wall {statistics.median(m['wall_s'] for m in runs):.2f} s ({walls}), "
              f"gc {statistics.median(m['gc_ms'] for m in runs):.0f} ms in "
              f"{statistics.median(m['gc_count'] for m in runs):.0f} collections")
    wall, collections = _tensorflow_saved(kept, "wall_s", 1000.0), _tensorflow_saved(kept, "gc_ms", 1.0)
    print(f"  the hold saves, per import: wall {_shown(wall)} ms, gc {_shown(collections)} ms (median [quartiles] "
          f"of {len(kept['held'])} pairs run back to back; not held minus held)")


def _tensorflow_saved(kept: Dict[str, List[dict]], key: str, scale: float) -> tuple:
    """What the hold saves on ``key`` per pair of imports run back to back: (lower quartile, median, upper
    quartile), times ``scale``."""
    return _quartiles([scale * (not_held[key] - held[key]) for held, not_held in zip(kept["held"], kept["not held"])])


PROTOBUF_FIRST_USE = (
    "import sys, time\n"
    "sys.path.insert(0, sys.argv[1])\n"
    "import precision_tool.formats.dump_file, precision_tool.formats.ge_io\n"
    "from precision_tool.formats.dump_schema import dump_messages\n"
    "from precision_tool.formats.ge_schema import ge_messages\n"
    "assert 'google.protobuf' not in sys.modules\n"
    "started = time.perf_counter()\n"
    "from google.protobuf import descriptor_pb2, descriptor_pool, message, message_factory\n"
    "imported = time.perf_counter()\n"
    "dump_messages(); ge_messages()\n"
    "print(1000 * (imported - started), 1000 * (time.perf_counter() - imported))\n")


def measure_components(python: str, case: str, passes: int, fresh: int, env: Dict[str, str]) -> dict:
    """:func:`components` and the protobuf runtime's one-time cost (``fresh`` processes) with ``python``."""
    env = dict(env, PYTHONPATH=REPO)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    imports, classes = [], []
    for _ in range(fresh):
        out = subprocess.run([python, "-c", PROTOBUF_FIRST_USE, REPO], env=env, check=True, stdout=subprocess.PIPE,
                             universal_newlines=True).stdout.split()
        imports.append(float(out[0]))
        classes.append(float(out[1]))
    out = subprocess.run([python, os.path.abspath(__file__), "--components", case, "--passes", str(passes)], env=env,
                         check=True, stdout=subprocess.PIPE, universal_newlines=True).stdout
    result = json.loads(out.splitlines()[-1])
    result["import"], result["classes"] = statistics.median(imports), statistics.median(classes)
    return result


# --------------------------------------------------------------------------------------------- the benchmark
def _job(root: str, case: str, variant: str, run: int, graph: str = "graph.json") -> dict:
    out = os.path.join(root, "out", "machinery", f"{re.sub('[^a-z]+', '_', variant)}_{run}")
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(os.path.dirname(out), exist_ok=True)
    stats = out + ".stats.json"
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # a user's shell: bytecode caches written and read
    command = [sys.executable, os.path.abspath(__file__), "--job", variant, "--stats", stats, "--",
               "compare", "-m", os.path.join(case, "npu"), "-g", os.path.join(case, "ref"),
               "-f", os.path.join(case, graph), "-out", out]
    started = time.perf_counter()
    done = subprocess.run(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                          universal_newlines=True)
    wall = time.perf_counter() - started
    if not os.path.exists(stats):
        raise RuntimeError(f"{variant}: the job failed (exit {done.returncode}): {done.stderr[-2000:]}")
    with open(stats) as handle:
        measured = json.load(handle)
    csv = [name for name in os.listdir(out) if name.endswith(".csv")]
    with open(os.path.join(out, csv[0])) as handle:
        measured["csv"] = handle.read()
    with open(os.path.join(out, "summary.json")) as handle:
        measured["align_s"] = json.load(handle)["timing"]["align_s"]
    measured["wall_s"] = wall
    shutil.rmtree(out)  # what was needed is read: 1.5 MB a run otherwise left behind
    os.remove(stats)
    return measured


def jobs(root: str, case: str, runs: int, names: List[str], graph: str) -> Dict[str, List[dict]]:
    kept: Dict[str, List[dict]] = {variant: [] for variant in names}
    for run in range(-1, runs):  # round -1 warms the caches and is not kept
        # Taking turns, so that a drifting machine slows each alike; who goes first moves round by round, so that no
        # variant always runs first (as shipped, always first, ran slowest of all in one run of 7 rounds).
        for variant in names[run % len(names):] + names[:run % len(names)]:
            measured = _job(root, case, variant, run, graph)
            if run >= 0:
                kept[variant].append(measured)
    return kept


def _environments(user_envs: List[str]) -> List[tuple]:
    found = [("this Python", sys.executable, {})]
    found.append(("this Python, protobuf's pure-Python implementation", sys.executable,
                  {"PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION": "python"}))
    for venv in user_envs:
        python = os.path.join(venv, "bin", "python")
        if os.path.exists(python):
            found.append((os.path.basename(os.path.normpath(venv)), python, {}))
    return found


def print_components(results: List[tuple]) -> None:
    from tabulate import tabulate

    rows = []
    for label, result in results:
        head = f"{label}: {result['environment']}"
        first_use = result["import"] + result["classes"]
        parts = [("protobuf runtime, once per process: import + build the classes",
                  0.0, first_use, f"import {result['import']:.1f} + classes {result['classes']:.1f}"),
                 (f"{result['headers']} dump headers (read_dump_header)",
                  result["headers records"], result["headers protobuf"], "main process"),
                 ("Build graph, JSON (read_ge_graph)", result["graph json records"], result["graph json protobuf"],
                  "main process, before the headers"),
                 ("Build graph, GE text (read_ge_graph)", result["graph text records"],
                  result["graph text protobuf"], "(the form GE dumps; not in the job below)")]
        for what, records, protobuf, note in parts:
            rows.append([head, what, f"{records:.1f}", f"{protobuf:.1f}", f"{protobuf - records:+.1f}", note])
            head = ""
        records = result["headers records"] + result["graph json records"]
        protobuf = first_use + result["headers protobuf"] + result["graph json protobuf"]
        rows.append(["", "compare -f graph.json: once + headers + graph", f"{records:.1f}",
                     f"{protobuf:.1f}", f"{protobuf - records:+.1f}", "what aligning spends on them"])
    print(tabulate(rows, headers=["environment", "part", "records ms", "protobuf runtime ms",
                                  "records save ms", "where"], disable_numparse=True))


def _quartiles(values: List[float]) -> tuple:
    low, middle, high = statistics.quantiles(values, n=4, method="inclusive") if len(values) > 1 else values * 3
    return low, middle, high


def _saved(kept: Dict[str, List[dict]], variant: str, key: str, scale: float = 1000.0) -> tuple:
    """What the piece ``variant`` turns off saves on ``key``, per round (that round's run without it minus the run
    as shipped; rounds pair runs made back to back): (lower quartile, median, upper quartile), in ms."""
    return _quartiles([scale * (without[key] - shipped[key])
                       for without, shipped in zip(kept[variant], kept["as shipped"])])


def _shown(quartiles: tuple) -> str:
    low, middle, high = quartiles
    return f"{middle:+.1f} [{low:+.1f}, {high:+.1f}]"


def print_jobs(kept: Dict[str, List[dict]]) -> Dict[str, dict]:
    from tabulate import tabulate

    rows = []
    for variant, runs in kept.items():
        rows.append([variant, VARIANTS[variant] or "-", f"{statistics.median(m['wall_s'] for m in runs):.3f}",
                     f"{min(m['wall_s'] for m in runs):.3f}",
                     ", ".join(f"{m['wall_s']:.2f}" for m in runs),
                     f"{1000 * statistics.median(m['align_s'] for m in runs):.0f}",
                     f"{statistics.median(m['gc_ms'] for m in runs):.1f} "
                     f"({statistics.median(m['gc_count'] for m in runs):.0f})",
                     f"{statistics.median(m['cpu_s'] for m in runs):.3f}",
                     f"{statistics.median(m['all_cpu_s'] for m in runs):.3f}",
                     "yes" if all(m["protobuf_loaded"] for m in runs) else
                     "no" if not any(m["protobuf_loaded"] for m in runs) else "some runs"])
    print(tabulate(rows, headers=["variant", "turned off", "wall s (median)", "best", "wall s (all runs)", "align ms",
                                  "main gc ms (collections)", "main CPU s", "all CPU s", "protobuf loaded"],
                   disable_numparse=True))
    shipped_wall = 1000 * statistics.median(m["wall_s"] for m in kept["as shipped"])
    gains, rows = {}, []
    for variant in list(kept)[1:]:
        gain = {key: _saved(kept, variant, key, scale) for key, scale in
                (("wall_s", 1000.0), ("align_s", 1000.0), ("cpu_s", 1000.0), ("all_cpu_s", 1000.0), ("gc_ms", 1.0))}
        gains[variant] = gain

        best = 1000 * (min(m["wall_s"] for m in kept[variant]) - min(m["wall_s"] for m in kept["as shipped"]))
        rows.append([VARIANTS[variant], _shown(gain["wall_s"]), f"{100 * gain['wall_s'][1] / shipped_wall:+.1f}%",
                     f"{best:+.1f}",
                     _shown(gain["align_s"]), _shown(gain["gc_ms"]), _shown(gain["cpu_s"]), _shown(gain["all_cpu_s"])])
    print(f"\nWhat each piece saves, round by round (its variant minus as shipped in the same round; median "
          f"[quartiles] of {len(kept['as shipped'])} rounds, ms; positive = the piece pays its way; best wall: the "
          "fastest run without it minus the fastest with it):")
    print(tabulate(rows, headers=["piece", "wall", "of the wall", "best wall", "aligning", "main gc", "main CPU",
                                  "all CPU"], disable_numparse=True))
    csvs = {m["csv"] for runs in kept.values() for m in runs}
    print("Result CSVs: " + ("identical in every run of every variant" if len(csvs) == 1 else
                             f"{len(csvs)} different ones (a variant changed the result)"))
    if len(csvs) != 1 or any(m["exit"] not in (0, 1) for runs in kept.values() for m in runs):
        raise SystemExit("machinery: a variant did not do the same job")
    return gains


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", default=DEFAULT_ROOT, help=f"where the case and outputs go (default {DEFAULT_ROOT})")
    parser.add_argument("--runs", type=int, default=11, help="rounds of the job (each variant once a round)")
    parser.add_argument("--passes", type=int, default=9, help="passes over the headers and graphs per reader")
    parser.add_argument("--fresh", type=int, default=5, help="fresh processes timing the protobuf runtime's start")
    parser.add_argument("--user-env", action="append", default=None, metavar="VENV",
                        help="a virtualenv to time the parts in too (default: .venv-tf115 and .venv-tf26 beside "
                             "this checkout, when they exist)")
    parser.add_argument("--graph", choices=("graph.json", "graph.txt"), default="graph.json",
                        help="the Build graph the job is given (default graph.json, as run.py's)")
    parser.add_argument("--skip-parts", action="store_true", help="the whole job only (parts 1 and 2 skipped)")
    parser.add_argument("--job", choices=VARIANTS, help=argparse.SUPPRESS)
    parser.add_argument("--stats", help=argparse.SUPPRESS)
    parser.add_argument("--components", metavar="CASE", help=argparse.SUPPRESS)
    parser.add_argument("--tensorflow-import", choices=("held", "not held"), help=argparse.SUPPRESS)
    parser.add_argument("--tf-runs", type=int, default=3, help="fresh processes importing TensorFlow, each way")
    parser.add_argument("command", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.job:
        run_job(args.job, args.stats, args.command[1:] if args.command[:1] == ["--"] else args.command)
        return 0
    if args.components:
        print(json.dumps(components(args.components, args.passes)))
        return 0
    if args.tensorflow_import:
        print(json.dumps(tensorflow_import(args.tensorflow_import == "held")))
        return 0
    started = time.perf_counter()
    sys.path.insert(0, HERE)
    from make_case import build_case

    case = build_case(os.path.join(args.root, f"nd_{OPS}"), variant="nd", ops=OPS)
    load = os.getloadavg()[0]
    print(f"machinery: proto_records and collector, each with and without, on {case} "
          f"({OPS} ops; {os.cpu_count()} cores; load average {load:.1f} at the start)", flush=True)
    components_here: Optional[dict] = None
    tensorflow: Optional[Dict[str, List[dict]]] = None
    if not args.skip_parts:
        user_envs = args.user_env if args.user_env is not None else [os.path.join(REPO, name) for name in USER_ENVS]
        results = [(label, measure_components(python, case, args.passes, args.fresh, dict(os.environ, **env)))
                   for label, python, env in _environments(user_envs)]
        components_here = results[0][1]
        print(f"\n1. proto_records: the parts it touches, records against the protobuf runtime (ms; median of "
              f"{args.passes} passes, the runtime's start median of {args.fresh} fresh processes)")
        print_components(results)
        print(f"\n2. collector: TensorFlow imported in the background as replay imports it (ac -c, replay), the "
              f"collector held off and not (median of {args.tf_runs} fresh processes each, taking turns)", flush=True)
        tensorflow = measure_tensorflow_import(args.tf_runs)
        print_tensorflow_import(tensorflow)
    print(f"\n3. The whole job, compare -f {args.graph}: {args.runs} fresh processes per variant, taking turns "
          "(median; align = aligning in the main process, from summary.json)", flush=True)
    kept = jobs(args.root, case, args.runs, list(VARIANTS), args.graph)
    gains = print_jobs(kept)
    print("\n4. Each piece in one line: what it saves where it acts (shown when even the lower quartile is above 0), "
          "then the steadier figures of what it touches")
    shipped_wall = 1000 * statistics.median(m["wall_s"] for m in kept["as shipped"])
    for variant, gain in gains.items():
        low, middle, high = gain["wall_s"]
        line = (f"  {VARIANTS[variant]}: the job {middle:+.1f} ms ({100 * middle / shipped_wall:+.1f}%) "
                f"[{low:+.1f}, {high:+.1f}], " + ("shown" if low > 0 else "not shown"))
        if VARIANTS[variant] == "proto_records" and components_here:
            c = components_here
            line += (f"; the protobuf runtime's start {c['import'] + c['classes']:.1f} ms saved, {c['headers']} "
                     f"headers {c['headers protobuf'] - c['headers records']:+.1f}, JSON graph "
                     f"{c['graph json protobuf'] - c['graph json records']:+.1f}, text graph "
                     f"{c['graph text protobuf'] - c['graph text records']:+.1f}")
        print(line)
    if tensorflow is not None:
        errors = [m["error"] for runs in tensorflow.values() for m in runs if m["error"]]
        if errors:
            print(f"  collector: TensorFlow's background import not measured ({errors[0]})")
        else:
            low, middle, high = _tensorflow_saved(tensorflow, "wall_s", 1000.0)
            collections = {mode: statistics.median(m["gc_count"] for m in runs) for mode, runs in tensorflow.items()}
            print(f"  collector: TensorFlow's background import {middle:+.0f} ms [{low:+.0f}, {high:+.0f}], "
                  + ("shown" if low > 0 else "not shown")
                  + f"; gc {_tensorflow_saved(tensorflow, 'gc_ms', 1.0)[1]:+.0f} ms ({collections['held']:.0f} "
                    f"collections against {collections['not held']:.0f})")
    print(f"\nload average {os.getloadavg()[0]:.1f} at the end; {time.perf_counter() - started:.0f} s in all")
    print(REMOVED)
    return 0


if __name__ == "__main__":
    sys.exit(main())
