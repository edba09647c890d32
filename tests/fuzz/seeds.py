"""Valid seed files for every input format precision_tool reads, made with the project's own writers, and the
small workspace they are placed in.

:func:`build_workspace` copies ``sample_dumps/cnn_workspace`` and adds what it lacks (tfdbg v1 and v2 captures,
a GE JSON graph, a fusion switch file, a hashed dump name with its ``mapping.csv``, a compare result), then
rewrites every seed file through the writer of its format, so the workspace holds exactly the seed bytes. Each
:class:`Seed` knows its bytes, where it goes in the workspace (``path``), a structured description of its
content for the format-aware mutators (``model``) and the commands that read it (``commands``).

Seed bytes may hold :data:`WS_TOKEN` where the file names the workspace's absolute path (compare results
name their dumps): :func:`materialize` puts the real path in, so mutations do not depend on where the
workspace lies.
"""
from __future__ import annotations

import dataclasses
import hashlib
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:  # run as a script from anywhere: the checkout's package, not an installed one
    sys.path.insert(0, str(REPO))

from precision_tool.formats import tf_schema  # noqa: E402
from precision_tool.formats.capture_names import ModelInput, ModelNames, VariableName, write_capture_names  # noqa: E402
from precision_tool.formats.dump_file import read_blob, read_dump_header  # noqa: E402
from precision_tool.formats.dump_names import MAPPING_FILE_NAME, append_mapping_row  # noqa: E402
from precision_tool.formats.dump_writer import TensorSpec, build_dump_bytes, write_dump  # noqa: E402
from precision_tool.formats.fusion_result import (FusionSwitches, read_fusion_result,  # noqa: E402
                                                  write_fusion_result, write_fusion_switches)
from precision_tool.formats.ge_io import read_ge_graph, write_ge_graph_json, write_ge_graph_text  # noqa: E402
from precision_tool.formats.opdebug import decode_status, write_overflow_record  # noqa: E402
from precision_tool.formats.tfdbg import DEFAULT_DEVICE, device_folder_name  # noqa: E402
from precision_tool.formats.tfdbg_v1 import write_tfdbg_v1_tensor  # noqa: E402
from precision_tool.formats.tfdbg_v2 import write_tfdbg_v2_dump  # noqa: E402

SAMPLE = REPO / "sample_dumps" / "cnn_workspace"
WS_TOKEN = b"@@FUZZ_WS@@"

DUMP_LEAF = "npu/debug_0/dump/20241119070640/0/ge_default_20241119070640_1/1/0"
OVERFLOW_LEAF = "overflow/dump/20241119090640/0/ge_default_20241119070640_1/1/0"
GRAPH_FILE = "npu/debug_0/graph/ge_proto_00000001_Build.txt"
RELU_OP = "small_cnn_1/res_relu_1/Relu"
RELU_DUMP = f"{DUMP_LEAF}/Relu.small_cnn_1_res_relu_1_Relu.13.2.1732000000000110"
RELU_REF = "tf/dump/small_cnn_1_res_relu_1_Relu.0.1731990000000410.npy"
ADD_OP = "small_cnn_1/res_add_1/Add"
ADD_DUMP_NAME = "Add.small_cnn_1_res_add_1_Add.12.2.1732000000000100"
HASHED_ADD_DUMP = f"{DUMP_LEAF}/{int.from_bytes(hashlib.sha256(ADD_DUMP_NAME.encode()).digest()[:8], 'big')}"
MAPPING_CSV = f"{DUMP_LEAF}/{MAPPING_FILE_NAME}"
OPDEBUG = f"{OVERFLOW_LEAF}/Opdebug.Node_OpDebug.15.2.1732007200000131"
OPDEBUG_TIMESTAMP = 1732007200000131
GE_JSON = "ge_json/ge_proto_00000001_Build.json"
GE_ONNX = "ge_onnx/ge_onnx_00000001_graph_1_Build.pbtxt"  # apart: beside the ge_proto it would never be read
EXCEPTION_DUMP = f"{DUMP_LEAF}/exception_info.13.3.1732000000000200"
FUSION_RESULT = "fusion/fusion_result.json"
FUSION_SWITCH = "fusion/fusion_switch.cfg"
RESULT_DIR = "temp/vector_compare/20260101000000"
RESULT_STEM = "result_20260101000000"
RESULT_CSV_DIR = "temp/vector_compare/20260101000001"  # the CSV alone, as msaccucmp writes it (the newest result)
TF_GRAPH_PB = "tf/graph/graph_reference_cpu_0.pb"
TF_GRAPH_INDEX = "tf/graph/index.json"
V1_RUN = "tf/tf_debug/run_1732000000000000_0"
V1_DEVICE = f"{V1_RUN}/{device_folder_name(DEFAULT_DEVICE)}"
V1_US = 1732000000000100
V1_TENSOR = f"{V1_DEVICE}/small_cnn_1/res_relu_1/Relu_0_DebugIdentity_{V1_US + 3}"
V1_GRAPH = f"{V1_DEVICE}/_tfdbg_graph_hash1_{V1_US}"
V2_DIR = "tf/tf_debug_v2"
V2_STEM = "tfdbg_events.1732000000.host"
V2_TRACES = f"{V2_DIR}/{V2_STEM}.graph_execution_traces"
V2_GRAPHS = f"{V2_DIR}/{V2_STEM}.graphs"
CAPTURE_NAMES = f"{V2_DIR}/precision_tool_names.json"

# File-type swaps (see mutate.SWAPS). Which of them a command must not answer with exit 0:
HARD = frozenset({"fifo", "devzero", "loop"})        # there, but unreadable
SCANNED = HARD | {"dangling"}                          # files found by listing a folder (a folder there is none)
EXPLICIT = SCANNED | {"folder"}                        # files named on the command line or required by name
NEVER: frozenset = frozenset()


@dataclasses.dataclass(frozen=True)
class Command:
    """One command line reading a seed's file. ``args`` are formatted with ``ws``, ``file`` (the seed's
    absolute path), ``out`` (a fresh folder outside the workspace) and ``dump_leaf``.

    ``must_read``: the file-type swaps after which exit 0 is wrong for this command (the file is one it
    must read: an explicit argument, the one graph, the only overflow record, a scanned dump). ``replay``:
    it imports TensorFlow (a few seconds): the campaign runs it for some files only. ``api``: ``args`` is an
    entry point of ``tests/fuzz/entry_points.py`` (a Python API with no CLI command), not a CLI command."""

    args: Tuple[str, ...]
    must_read: frozenset = NEVER
    replay: bool = False
    api: bool = False

    @property
    def label(self) -> str:
        words = [a for a in self.args if not a.startswith("{") and "/" not in a and not a.endswith(".html")]
        return " ".join(words[:3]) if not self.api else "api " + self.args[0]


def cmd(line: str, must_read=NEVER, replay: bool = False, api: bool = False) -> Command:
    return Command(tuple(line.split()), frozenset(must_read), replay, api)


@dataclasses.dataclass(frozen=True)
class Seed:
    """A valid file of one format: its bytes, its place in the workspace and the commands that read it.

    ``kind`` selects the format-aware mutators (``mutate.STRUCTURAL``); ``text`` says whether the text
    mutators apply; ``model`` is what the format-aware mutators rebuild variants from (with the project's
    writers)."""

    name: str
    path: str
    data: bytes
    kind: str
    commands: Tuple[Command, ...]
    text: bool = False
    model: Any = None


# ------------------------------------------------------------------------------------------ dump models
@dataclasses.dataclass(frozen=True)
class DumpModel:
    """What :func:`build_dump_bytes` needs to write a dump again (the format-aware mutators change it)."""

    op_name: str
    inputs: Tuple[TensorSpec, ...]
    outputs: Tuple[TensorSpec, ...]
    dump_time: int
    version: str
    attrs: Tuple[Tuple[str, str], ...] = ()

    def build(self, **changes) -> bytes:
        model = dataclasses.replace(self, **changes) if changes else self
        return build_dump_bytes(model.op_name, model.inputs, model.outputs, dump_time=model.dump_time,
                                version=model.version, attrs=model.attrs)


def dump_model(path) -> DumpModel:
    """The :class:`DumpModel` of an existing dump file (payloads as stored)."""
    dump = read_dump_header(path)

    def spec(entry, output: bool) -> TensorSpec:
        raw = read_blob(dump, entry)
        storage = entry.storage_dtype
        if storage is not None and entry.nbytes is not None and entry.nbytes <= len(raw):
            array = np.frombuffer(bytes(raw[:entry.nbytes]), dtype=storage).reshape(entry.shape)
            size = entry.size if entry.size != entry.nbytes else None
        else:
            array, size = np.frombuffer(bytes(raw), dtype=np.uint8), None
        original_op = None
        if output and entry.original_op_name is not None:
            original_op = (entry.original_op_name, entry.original_output_index or 0)
        return TensorSpec(array, format=entry.format_code, original_shape=entry.original_shape,
                          original_op=original_op,
                          original_format=entry.original_format_code if output and original_op else None,
                          dtype_code=entry.dtype_code, size=size, sub_format=entry.sub_format,
                          address=entry.address)

    return DumpModel(dump.op_name, tuple(spec(e, False) for e in dump.inputs),
                     tuple(spec(e, True) for e in dump.outputs), dump.dump_time, dump.version, tuple(dump.attrs))


@dataclasses.dataclass(frozen=True)
class TensorModel:
    """A tfdbg tensor: ``(op_name, slot, array, timestamp_us)``."""

    op_name: str
    slot: int
    array: np.ndarray
    timestamp_us: int


@dataclasses.dataclass(frozen=True)
class V2Model:
    """A tfdbg v2 dump: the ``traces`` :func:`write_tfdbg_v2_dump` takes, and its file stem."""

    traces: Tuple[tuple, ...]
    stem: str = V2_STEM


# ------------------------------------------------------------------------------------------ helpers
def _via_writer(write, name: str = "seed") -> bytes:
    """Bytes a project writer produces: ``write(path)`` into a scratch folder."""
    with tempfile.TemporaryDirectory(prefix="fuzz-seed-") as scratch:
        path = os.path.join(scratch, name)
        written = write(path)
        return Path(written if isinstance(written, (str, os.PathLike)) and os.path.isfile(written) else path
                    ).read_bytes()


def npy_bytes(array) -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, np.asarray(array), allow_pickle=False)
    return buffer.getvalue()


def _write(ws: Path, rel: str, data: bytes) -> None:
    path = ws / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(materialize(data, ws))


def materialize(data: bytes, ws) -> bytes:
    """``data`` with :data:`WS_TOKEN` replaced by the workspace's absolute path."""
    return data.replace(WS_TOKEN, os.fspath(os.path.abspath(ws)).encode())


def _reference(name: str) -> np.ndarray:
    return np.load(str(SAMPLE / "tf" / "dump" / name), allow_pickle=False)


def _v1_tensors() -> List[TensorModel]:
    image = _reference("image.0.1731990000000010.npy")
    relu = np.load(str(SAMPLE / RELU_REF), allow_pickle=False)
    add = _reference("small_cnn_1_res_add_1_Add.0.1731990000000400.npy")
    return [TensorModel("image", 0, image, V1_US + 1), TensorModel(ADD_OP, 0, add, V1_US + 2),
            TensorModel(RELU_OP, 0, relu, V1_US + 3)]


def v1_graph_bytes(nodes: Sequence[Tuple[str, str, Sequence[str]]]) -> bytes:
    """A tfdbg v1 ``_tfdbg_graph_*`` file: an Event holding a GraphDef of ``(name, op, inputs)`` nodes."""
    graph = tf_schema.GraphDef()
    for name, op_type, inputs in nodes:
        node = graph.node.add(name=name, op=op_type)
        node.input.extend(inputs)
    return tf_schema.Event(wall_time=float(V1_US), graph_def=graph.SerializeToString()).SerializeToString()


V1_NODES = (("image", "Placeholder", ()), (ADD_OP, "Add", ("image", "image")), (RELU_OP, "Relu", (ADD_OP,)))


def v2_traces() -> Tuple[tuple, ...]:
    relu = np.load(str(SAMPLE / RELU_REF), allow_pickle=False)
    add = _reference("small_cnn_1_res_add_1_Add.0.1731990000000400.npy")
    return ((ADD_OP, "AddV2", 0, add, 1732000000.5), (RELU_OP, "Relu", 0, relu, 1732000000.75))


def v2_files(model: V2Model) -> Dict[str, bytes]:
    """``{suffix: bytes}`` of the files :func:`write_tfdbg_v2_dump` writes for ``model``."""
    with tempfile.TemporaryDirectory(prefix="fuzz-seed-") as scratch:
        write_tfdbg_v2_dump(scratch, list(model.traces), file_stem=model.stem)
        return {name[len(model.stem):]: Path(scratch, name).read_bytes() for name in os.listdir(scratch)}


def _normalise_json(obj, base: str):
    """Compare-result JSON with the workspace path tokenised and run-dependent values fixed."""
    if isinstance(obj, dict):
        out = {}
        for key, value in obj.items():
            if key == "created":
                value = "2026-01-01T00:00:00+0000"
            elif key == "timing" and isinstance(value, dict):
                value = {k: (0.5 if isinstance(v, float) else v) for k, v in value.items()}
            out[key] = _normalise_json(value, base)
        return out
    if isinstance(obj, list):
        return [_normalise_json(item, base) for item in obj]
    if isinstance(obj, str):
        text = re.sub(r"result_\d{14}", RESULT_STEM, obj)
        return text.replace(base, WS_TOKEN.decode())
    return obj


def run_tool(ws, *args: str, python: Optional[str] = None, timeout: float = 300) -> subprocess.CompletedProcess:
    """``python -m precision_tool -d WS ARGS`` on this checkout's code."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO)] + [p for p in [os.environ.get("PYTHONPATH")]
                                                                          if p]))
    return subprocess.run([python or sys.executable, "-m", "precision_tool", "-d", os.fspath(ws), *args],
                          stdin=subprocess.DEVNULL, capture_output=True, text=True, env=env, timeout=timeout)


def _compare_result(ws: Path, python: Optional[str]) -> Dict[str, bytes]:
    """``{name: bytes}`` of the files one ``compare`` run writes (CSV, result JSONL, summary.json)."""
    with tempfile.TemporaryDirectory(prefix="fuzz-result-") as out:
        done = run_tool(ws, "compare", "-c", "-1", "-o", out, python=python)
        if done.returncode != 0:
            raise RuntimeError(f"compare on the seed workspace exited {done.returncode}:\n{done.stdout}\n{done.stderr}")
        files = {}
        base = os.fspath(ws.resolve())
        for name in sorted(os.listdir(out)):
            data = Path(out, name).read_bytes()
            target = re.sub(r"result_\d{14}", RESULT_STEM, name)
            if name.endswith(".json"):
                data = (json.dumps(_normalise_json(json.loads(data), base), indent=1) + "\n").encode()
            elif name.endswith(".jsonl"):
                lines = [json.dumps(_normalise_json(json.loads(line), base)) for line in data.decode().splitlines()]
                data = ("\n".join(lines) + "\n").encode()
            else:
                data = data.replace(base.encode(), WS_TOKEN)
            files[target] = data
        return files


# ------------------------------------------------------------------------------------------ the seeds
def _commands() -> Dict[str, Tuple[Command, ...]]:
    """The commands reading each seed, and when exit 0 after a file-type swap is wrong (``must_read``):

    * EXPLICIT (any swap): a file named on the command line, the one GE graph compare needs, references
      (issue 14: a dangling, FIFO or folder reference must not be "no reference"), the only result CSV;
    * SCANNED (not a folder: a folder named like a dump is just a folder): dumps and Opdebug records found by
      listing a folder, tfdbg tensor files;
    * HARD (FIFO, /dev/zero, loop: there but unreadable): files whose absence is allowed -- ``ls``/``ni``
      without a graph list the dumps, ``fusion`` without ``fusion_result.json`` says it has no pass counts,
      a missing ``mapping.csv`` leaves hashed names unknown -- but an unreadable one must be said and counted;
    * NEVER: optional files the command does without (a result's JSONL and summary.json beside its CSV, tfdbg
      graphs and names files), and listings (``tf_dump --list``).
    """
    leaf = "{ws}/" + DUMP_LEAF
    ref_dir, graph_dir = "{ws}/tf/dump", "{ws}/npu/debug_0/graph"
    relu_dump, relu_ref = "{ws}/" + RELU_DUMP, "{ws}/" + RELU_REF
    ac_replay = cmd("ac -c --cosine -1 -o {out}", NEVER, replay=True)
    results, csv_only = "{ws}/" + RESULT_DIR, "{ws}/" + RESULT_CSV_DIR
    vcs_dir = cmd(f"vcs -f {results} -c -1")
    report_dir = cmd(f"report -f {results} -o {{out}}/report.html --no-checks")
    fusion_cmds = (cmd("fusion", HARD), cmd("fusion --no-compare", HARD), cmd("fusion -f Conv -a", HARD),
                   cmd("ac", HARD))
    v2 = "-i {ws}/" + V2_DIR
    return {
        "dump": (cmd("compare -c -1 -o {out}", SCANNED), cmd("ac -c --no-replay --cosine -1 -o {out}", SCANNED),
                 cmd(f"vc -lt {leaf} -rt {ref_dir} -g {graph_dir} -c -1", SCANNED),
                 cmd(f"ov --scan {leaf}", SCANNED), cmd("dc {file} -o {out}", EXPLICIT),
                 cmd(f"dc {leaf} -o {{out}}", SCANNED), cmd("pt {file}", EXPLICIT),
                 cmd("pt {file} [0,:2] --keep-layout", EXPLICIT), cmd(f"cp {{file}} {relu_ref}", EXPLICIT),
                 cmd(f"pt {RELU_OP}:output:0", EXPLICIT), cmd(f"ni {RELU_OP}"), cmd("fusion -a"), ac_replay),
        "opdebug": (cmd("ov", SCANNED), cmd("ov -l 0 --scan", SCANNED), cmd("ac", SCANNED),
                    cmd("ac -c --no-replay --cosine -1 -o {out}", SCANNED), cmd("pt {file}", EXPLICIT),
                    cmd("dc {file} -o {out}", EXPLICIT)),
        "npy": (cmd("compare -c -1 -o {out}", EXPLICIT), cmd("ac -c --no-replay --cosine -1 -o {out}", EXPLICIT),
                cmd(f"vc -lt {leaf} -rt {ref_dir} -g {graph_dir} -c -1", EXPLICIT), cmd("pt {file}", EXPLICIT),
                cmd(f"cp {relu_dump} {{file}}", EXPLICIT), cmd(f"pt {RELU_OP}:0"), cmd(f"ni {RELU_OP}"),
                ac_replay, cmd(f"replay {RELU_OP}", replay=True)),
        "ge_text": (cmd("compare -c -1 -o {out}", EXPLICIT), cmd("ac -c --no-replay --cosine -1 -o {out}", EXPLICIT),
                    cmd("ls", HARD), cmd("ls -t Conv2D -f Conv", HARD), cmd(f"ni {RELU_OP} -a -s 1", HARD),
                    cmd("ge2json {file} -o {out}/graph.json", EXPLICIT),
                    cmd(f"ge2json {graph_dir} -o {{out}}/graph.json", EXPLICIT), cmd("fusion", HARD),
                    cmd(f"pt {RELU_OP}:output:0"), ac_replay),
        "ge_json": (cmd("ge2json {file} -o {out}/graph.json", EXPLICIT),
                    cmd("compare -f {file} -c -1 -o {out}", EXPLICIT),
                    cmd(f"vc -lt {leaf} -rt {ref_dir} -g {{file}} -c -1", EXPLICIT)),
        "ge_onnx": (cmd("ge2json {file} -o {out}/graph.json", EXPLICIT),
                    cmd("compare -f {file} -c -1 -o {out}", EXPLICIT),
                    cmd(f"vc -lt {leaf} -rt {ref_dir} -g {{file}} -c -1", EXPLICIT)),
        "exception_dump": (cmd("dc {file} -o {out}", EXPLICIT), cmd("pt {file}", EXPLICIT),
                           cmd("pt {file}:input:0", EXPLICIT), cmd(f"ov --scan {leaf}"), cmd("ls"), cmd("ac"),
                           cmd("compare -c -1 -o {out}")),
        "fusion_result": fusion_cmds,
        # a missing switch file is created from the template (a dangling symlink is missing to os.path.exists)
        "fusion_switch": (cmd("fusion_switch {file}", HARD | {"folder"}, api=True),),
        "mapping_csv": (cmd("compare -c -1 -o {out}", HARD), cmd(f"dc {leaf} -o {{out}}"), cmd(f"ov --scan {leaf}"),
                        cmd("pt {ws}/" + HASHED_ADD_DUMP), cmd(f"ni {ADD_OP}"),
                        cmd("dc {ws}/" + HASHED_ADD_DUMP + " -o {out}")),
        "result_csv": (cmd(f"vcs -f {csv_only} -c -1", EXPLICIT), cmd("vcs -f {file} -c -1 -l 0", EXPLICIT),
                       cmd(f"report -f {csv_only} -c -1 -o {{out}}/report.html --no-checks", EXPLICIT),
                       cmd("report -f {file} -c -1 -o {out}/report.html --plots {out}/plots", EXPLICIT),
                       cmd(f"ni {RELU_OP}")),
        "result_jsonl": (vcs_dir, cmd(f"vcs -f {results} -c 0.5 -l 0"), report_dir, cmd("vcs -c -1")),
        "summary_json": (vcs_dir, report_dir, cmd(f"report -f {results} -o {{out}}/report.html"), cmd("vcs -c -1")),
        "tfdbg_v1_tensor": (cmd("tf_dump -o {out}", SCANNED), cmd("tf_dump --list")),
        "tfdbg_v1_graph": (cmd("tf_dump -o {out}"), cmd("tf_dump --list")),
        "tfdbg_v2_traces": (cmd(f"tf_dump {v2} -o {{out}}", EXPLICIT), cmd(f"tf_dump {v2} --list")),
        "tfdbg_v2_graphs": (cmd(f"tf_dump {v2} -o {{out}}"), cmd(f"tf_dump {v2} --list")),
        "capture_names": (cmd(f"tf_dump {v2} -o {{out}}"), cmd(f"tf_dump {v2} --list")),
        "tf_graph_pb": (cmd("ac -c --cosine -1 -o {out}", replay=True),
                        cmd(f"replay {RELU_OP}", EXPLICIT, replay=True)),
        "tf_graph_index": (cmd("ac -c --cosine -1 -o {out}", replay=True),
                           cmd(f"replay {RELU_OP}", HARD, replay=True), cmd("tf_dump -o {out}")),
    }


def _fusion_old_objects(result) -> List[dict]:
    objects = []
    for graph in result.graphs:
        obj: Dict[str, Any] = {"session_and_graph_id": f"{graph.session_id or 0}_{graph.graph_id or 0}"}
        for record in graph.passes:
            counts = {"match_times": str(record.match_times), "effect_times": str(record.effect_times)}
            if record.repository_hit_times is not None:
                counts["repository_hit_times"] = str(record.repository_hit_times)
            obj.setdefault(record.family, {})[record.name] = counts
        objects.append(obj)
    return objects


def build_seeds(ws: Path, python: Optional[str] = None) -> List[Seed]:
    """Write every seed into the workspace ``ws`` (a copy of the sample workspace) and return them."""
    commands = _commands()
    seeds: List[Seed] = []

    def add(name, rel, data, kind, text=False, model=None):
        _write(ws, rel, data)
        seeds.append(Seed(name, rel, data, kind, commands[name], text, model))

    # Ascend op dump: the sample's res_relu dump, written again by build_dump_bytes.
    model = dump_model(SAMPLE / RELU_DUMP)
    add("dump", RELU_DUMP, model.build(), "dump", model=model)

    # Opdebug overflow record: the sample's record decoded, written again by write_overflow_record.
    record = decode_status(bytes(read_blob(*_first_output(SAMPLE / OPDEBUG))))
    opdebug = _via_writer(lambda p: write_overflow_record(os.path.dirname(p), record, timestamp=OPDEBUG_TIMESTAMP))
    add("opdebug", OPDEBUG, opdebug, "opdebug", model=dump_model_from_bytes(opdebug))

    # Reference .npy (np.save).
    add("npy", RELU_REF, npy_bytes(np.load(str(SAMPLE / RELU_REF), allow_pickle=False)), "npy")

    # GE graph: protobuf text and GE JSON, both by ge_io's writers from the sample's Build graph.
    graph = read_ge_graph(SAMPLE / GRAPH_FILE)
    add("ge_text", GRAPH_FILE, _via_writer(lambda p: write_ge_graph_text(graph, p)), "ge_text", text=True)
    add("ge_json", GE_JSON, _via_writer(lambda p: write_ge_graph_json(graph, p)), "json", text=True)

    # GE graph in GE's ONNX text form, written here from the same graph (the project writes no ONNX).
    add("ge_onnx", GE_ONNX, onnx_text(graph).encode(), "ge_text", text=True)

    # An exception dump (AI Core error), Lite form: one DT_UNDEFINED input of 32 raw bytes, as CANN writes it.
    exception = _via_writer(lambda p: write_dump(p, "", inputs=[TensorSpec(np.arange(32, dtype=np.int8),
                                                                             dtype_code=0)]),
                            os.path.basename(EXCEPTION_DUMP))
    add("exception_dump", EXCEPTION_DUMP, exception, "dump", model=dump_model_from_bytes(exception))

    # fusion_result.json (current object form), the fusion switch file.
    fusion = read_fusion_result(SAMPLE / FUSION_RESULT)
    add("fusion_result", FUSION_RESULT, _via_writer(lambda p: write_fusion_result(fusion, p)), "json", text=True)
    switches = FusionSwitches({"ALL": True, "ConvBiasaddFusionPass": False}, {"TbeConvElemwiseFusionPass": False})
    add("fusion_switch", FUSION_SWITCH, _via_writer(lambda p: write_fusion_switches(switches, p)), "json", text=True)

    # mapping.csv: the Add dump stored under its hash, as the runtime does for names of 255 bytes or more.
    add_dump = ws / DUMP_LEAF / ADD_DUMP_NAME
    os.replace(add_dump, ws / HASHED_ADD_DUMP)
    mapping = _via_writer(lambda p: append_mapping_row(os.path.dirname(p), (Path(HASHED_ADD_DUMP).name, ADD_DUMP_NAME)),
                          MAPPING_FILE_NAME)
    add("mapping_csv", MAPPING_CSV, mapping, "csv", text=True)

    # tfdbg v1: three tensors and the executed graph; v2: traces, graphs, and the capture's names file.
    for tensor in _v1_tensors():
        written = write_tfdbg_v1_tensor(ws / V1_RUN, tensor.op_name, tensor.slot, tensor.array, tensor.timestamp_us)
        if tensor.op_name == RELU_OP:
            assert Path(written) == ws / V1_TENSOR, written
            seeds.append(Seed("tfdbg_v1_tensor", V1_TENSOR, Path(written).read_bytes(), "tfdbg_v1",
                              commands["tfdbg_v1_tensor"], model=tensor))
    add("tfdbg_v1_graph", V1_GRAPH, v1_graph_bytes(V1_NODES), "tfdbg_v1_graph")
    v2 = V2Model(v2_traces())
    files = v2_files(v2)
    for suffix, data in files.items():
        _write(ws, f"{V2_DIR}/{V2_STEM}{suffix}", data)
    seeds.append(Seed("tfdbg_v2_traces", V2_TRACES, files[".graph_execution_traces"], "tfdbg_v2",
                      commands["tfdbg_v2_traces"], model=v2))
    seeds.append(Seed("tfdbg_v2_graphs", V2_GRAPHS, files[".graphs"], "tfdbg_v2_graphs",
                      commands["tfdbg_v2_graphs"], model=v2))
    names = _via_writer(lambda p: write_capture_names(
        os.path.dirname(p), [ModelNames("small_cnn_1", (ModelInput("image", ("res_add_1",)),))],
        [VariableName("res_conv_1/kernel", 17)]), "precision_tool_names.json")
    add("capture_names", CAPTURE_NAMES, names, "json", text=True)

    # The executed TF graph (GraphDef, re-serialised with the project's schema) and its index.
    graph_def = tf_schema.GraphDef.FromString((SAMPLE / TF_GRAPH_PB).read_bytes())
    add("tf_graph_pb", TF_GRAPH_PB, graph_def.SerializeToString(), "graphdef")
    index = json.loads((SAMPLE / TF_GRAPH_INDEX).read_text(encoding="utf-8"))
    add("tf_graph_index", TF_GRAPH_INDEX, (json.dumps(index, indent=1) + "\n").encode(), "json", text=True)

    # fusion_result.json in its older shapes (same place, same commands): concatenated objects, and a list.
    old = _fusion_old_objects(fusion)
    concatenated = "".join(json.dumps(obj, indent=4) for obj in old + [{"graphId": "2", "sessionId": "0",
                                                                           "graph_fusion": old[0].get("graph_fusion",
                                                                                                      {})}])
    seeds.append(Seed("fusion_result_concat", FUSION_RESULT, concatenated.encode(), "json",
                      commands["fusion_result"], text=True))
    seeds.append(Seed("fusion_result_list", FUSION_RESULT, json.dumps(old, indent=4).encode(), "json",
                      commands["fusion_result"], text=True))

    # A compare result (CSV, lossless JSONL, summary.json): one compare run on this very workspace.
    result = _compare_result(ws, python)
    for name, data in result.items():
        _write(ws, f"{RESULT_DIR}/{name}", data)
    csv_name = f"{RESULT_STEM}.csv"
    _write(ws, f"{RESULT_CSV_DIR}/{csv_name}", result[csv_name])  # beside no JSONL: the CSV is what is read
    seeds.append(Seed("result_csv", f"{RESULT_CSV_DIR}/{csv_name}", result[csv_name], "csv", commands["result_csv"],
                      text=True))
    seeds.append(Seed("result_jsonl", f"{RESULT_DIR}/{RESULT_STEM}.jsonl", result[f"{RESULT_STEM}.jsonl"], "jsonl",
                      commands["result_jsonl"], text=True))
    seeds.append(Seed("summary_json", f"{RESULT_DIR}/summary.json", result["summary.json"], "json",
                      commands["summary_json"], text=True))
    return seeds


def onnx_text(graph) -> str:
    """``graph`` (a GraphModel) in GE's ONNX text form (``../shared/docs/ascend-dump-trees.md`` §4): one
    ``node`` per op with its data inputs ``src:idx``, type ``ge:TYPE``, its ``id`` and its first output's
    dtype and shape as flattened descriptor attributes; each graph's name after its nodes."""
    lines = ["ir_version: 6", 'producer_name: "GE"']
    for sub in graph.graphs[:1]:  # the root graph (the sample's graph has no subgraph)
        lines.append("graph {")
        for op in sub.ops:
            lines.append("  node {")
            lines += [f'    input: "{ref}"' for ref in op.inputs]
            lines += [f'    name: "{op.name}"', f'    op_type: "ge:{op.type}"']
            lines += ["    attribute {", '      name: "id"', f"      i: {op.id}", "      type: INT", "    }"]
            if op.output_descs:
                desc = op.output_descs[0]
                lines += ["    attribute {", '      name: "output_desc_dtype:0"', f'      s: "{desc.dtype}"',
                          "      type: STRING", "    }", "    attribute {", '      name: "output_desc_shape:0"']
                lines += [f"      ints: {dim}" for dim in desc.shape] + ["      type: INTS", "    }"]
            lines.append("  }")
        lines += [f'  name: "{sub.name}"', "}"]
    return "\n".join(lines) + "\n"


def _first_output(path):
    dump = read_dump_header(path)
    return dump, dump.outputs[0]


def dump_model_from_bytes(data: bytes) -> DumpModel:
    with tempfile.TemporaryDirectory(prefix="fuzz-seed-") as scratch:
        path = Path(scratch, "Opdebug.Node_OpDebug.1.1.1700000000000000")
        path.write_bytes(data)
        return dump_model(path)


def build_workspace(dest, python: Optional[str] = None) -> List[Seed]:
    """Copy the sample workspace to ``dest`` (which must not exist), take its planted fault out, add every seed,
    return the seeds."""
    dest = Path(dest)
    shutil.copytree(str(SAMPLE), str(dest), ignore=shutil.ignore_patterns("__pycache__"))
    unplant(dest)
    return build_seeds(dest.resolve(), python)


def unplant(ws: Path) -> int:
    """Set the outputs of the sample's planted ops (``manifest.json``'s perturbations, in every NPU run) to their
    references stored in the NPU's dtype: a run no judgment blames, so the commands' baseline exits 0 and a
    swapped or damaged file that is silently accepted shows as exit 0 (``silent-success``). The planted op's
    consumers keep the inputs they read (their own error stays within their floor). Returns the tensors set."""
    from precision_tool.comparison.pipeline import CompareRequest, align_request
    from precision_tool.formats.layouts import to_device

    planted = json.loads((ws / "manifest.json").read_text())["perturbations"]
    count = 0
    for run, folder in ((0, ws / "npu" / "debug_0"), (1, ws / "npu" / "debug_1")):
        ops = {item["npu_op"].get(f"debug_{run}") for item in planted}
        if not folder.is_dir() or not ops - {None}:
            continue
        aligned = align_request(CompareRequest(str(folder / "dump"), str(ws / "tf" / "dump"), str(folder / "graph")))
        for pair in aligned.alignment.pairs:
            if pair.npu.op_name not in ops or pair.npu.kind != "output":
                continue
            dump = read_dump_header(pair.npu.path)
            entry = dump.tensor(pair.npu.kind, pair.npu.index)
            values = np.clip(pair.ref.load(), -65504, 65504).astype(entry.numpy_dtype)
            stored = to_device(values, pair.npu.origin_format or "ND", entry.format_name)
            with open(pair.npu.path, "r+b") as handle:
                handle.seek(entry.offset)
                handle.write(stored.tobytes())
            count += 1
    return count


SEED_NAMES = ("dump", "opdebug", "npy", "ge_text", "ge_json", "ge_onnx", "exception_dump", "fusion_result",
              "fusion_result_concat",
              "fusion_result_list", "fusion_switch", "mapping_csv", "result_csv", "result_jsonl", "summary_json",
              "tfdbg_v1_tensor", "tfdbg_v1_graph", "tfdbg_v2_traces", "tfdbg_v2_graphs", "capture_names",
              "tf_graph_pb", "tf_graph_index")
