"""The fuzz campaign of issue 14: mutated files of every input format, run through every command that reads them.

::

    python tests/fuzz/campaign.py --files 2000 --seed 14 --out /tmp/fuzz     # the issue's 2,000-file campaign
    python tests/fuzz/campaign.py --files 60 --formats dump,npy --out /tmp/f  # a quick look at two formats

``--files N`` is the number of mutated files in all, spread evenly over the formats (:data:`seeds.SEED_NAMES`;
each format gets at least one). Each command that reads the file's format runs on its own fresh copy of a small
workspace (the sample CNN workspace plus every seed, :func:`seeds.build_workspace`) holding the file in place of
its seed -- commands write into workspaces, and a kept failing workspace is exactly what its command saw -- as
``python -m precision_tool -d WS ...`` in a subprocess: address space limited to 4 GB
(``RLIMIT_AS`` in ``preexec_fn``), 30 s timeout, stdin closed, its own process group (killed whole). Commands
that import TensorFlow (``replay``, ``ac -c`` with replay) run for every ``--replay-every``-th file of a format
only, and always for the TF graph formats. Before the mutants, every command runs once on the unmutated seeds
(the baseline): a valid seed must not be rejected.

Each run is classified (:func:`classify`):

ok
    exit 0, 1 or 2, no traceback, nothing below.
traceback
    a Python traceback in stdout or stderr (an unexpected exception: a bug, whatever the exit code).
hang
    no exit within the timeout (the whole process group is killed).
memory
    ``MemoryError``, ``std::bad_alloc``, or killed by SIGKILL, under the 4 GB limit.
crash
    killed by another signal (SIGSEGV, SIGABRT ...).
bad-exit
    an exit code other than 0, 1, 2 (without a traceback).
control-chars
    a terminal control character (ESC, BEL, NUL, CR, DEL, C1, bidi override) written raw to stdout or stderr:
    what ``precision_tool.reports.format.terminal_safe`` escapes must never reach the terminal.
silent-success
    exit 0 although the file was swapped for a FIFO, a symlink to /dev/zero, a symlink loop, a dangling
    symlink or a folder, and the command must read that file (``seeds.Command.must_read``: explicit
    arguments, required files, scanned dumps and references -- not optional files such as ``summary.json``).
seed-rejected
    baseline only: exit 2 on the unmutated seed (a valid file rejected).

Two more counts are reported but are not failures: ``exit2-unnamed`` (exit 2 with no output line naming the
mutated file) and ``named-exit0`` (exit 0, a must-read file mutated, and the output names it where the
baseline did not: a note about a bad file while the exit code says all is well).

The summary table (format x outcome, counting runs), the failing commands per format, and the first
reproducer of each failure class -- its mutation and a command line that runs as printed, on the kept case
folder -- are printed and written to ``OUT/report.txt``; every run is in ``OUT/runs.jsonl``. Exit 1 if any run
failed.
"""
from __future__ import annotations

import argparse
import collections
import concurrent.futures
import dataclasses
import json
import os
import random
import re
import resource
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

import mutate as mutlib  # noqa: E402
import seeds as seedlib  # noqa: E402

FAILURES = ("traceback", "hang", "memory", "crash", "bad-exit", "control-chars", "silent-success", "seed-rejected")
OUTCOMES = ("ok",) + FAILURES
INFO = ("exit2-unnamed", "named-exit0")
DEFAULT_TIMEOUT = 30.0
DEFAULT_MEMORY = 4 << 30
DEFAULT_REPLAY_EVERY = 10
REPLAY_FORMATS = frozenset({"tf_graph_pb", "tf_graph_index"})  # read by replay only: always replayed
KEEP_CASES = 120  # case folders kept whole for reproducing failures (beyond: the mutated file only)

OUTPUT_LIMIT = 8 << 20
_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\udc80-\udc9f]")
_MEMORY_SIGNS = ("MemoryError", "std::bad_alloc", "Cannot allocate memory", "out of memory")


@dataclasses.dataclass(frozen=True)
class Case:
    """One file: seed ``fmt``, mutant number ``index`` (-1: the baseline, no mutation)."""

    fmt: str
    index: int
    mutator: Optional[str]
    with_replay: bool


@dataclasses.dataclass
class RunRecord:
    fmt: str
    index: int
    family: str
    mutation: str
    command: str
    argv: List[str]
    exit_code: Optional[int]
    outcome: str
    detail: str
    seconds: float
    case_dir: str
    command_no: int = 0
    names_target: bool = False
    content_mutant: bool = False
    must_read: bool = False
    info: List[str] = dataclasses.field(default_factory=list)

    @property
    def failed(self) -> bool:
        return self.outcome != "ok"

    def shell_line(self) -> str:
        return f"PYTHONPATH={shlex.quote(str(seedlib.REPO))} " + " ".join(shlex.quote(arg) for arg in self.argv)


# ------------------------------------------------------------------------------------------ planning
def plan(seeds: Sequence[seedlib.Seed], files: int, seed: int, replay_every: int) -> List[Case]:
    """The cases: per format a baseline, then its share of ``files`` mutants.

    A format's mutators are taken in turns from three shuffled groups -- format-aware and text mutators,
    file-type swaps, byte mutators -- so even two or three files per format cover all three; once the largest
    group has been gone through, at random."""
    cases = []
    share, extra = divmod(files, len(seeds))
    for position, item in enumerate(seeds):
        count = max(1, share + (1 if position < extra else 0)) if files else 0
        rng = random.Random(f"{seed}:{item.name}:plan")
        groups = []
        specific = [m for m in mutlib.mutators_for(item) if m not in mutlib.BYTES and m not in mutlib.SWAP_MUTATORS]
        for group in (specific, list(mutlib.SWAP_MUTATORS), list(mutlib.BYTES)):
            group = list(group)
            rng.shuffle(group)
            shift = position % len(group) if group else 0
            groups.append(group[shift:] + group[:shift])
        groups = [g for g in groups if g]
        rounds = max(len(g) for g in groups)
        order = [g[turn % len(g)].__name__ for turn in range(rounds) for g in groups]
        all_names = [m.__name__ for m in mutlib.mutators_for(item)]
        only_replay = item.name in REPLAY_FORMATS
        cases.append(Case(item.name, -1, None, only_replay or replay_every > 0))
        for index in range(count):
            name = order[index] if index < len(order) else rng.choice(all_names)
            with_replay = only_replay or (replay_every > 0 and index % replay_every == replay_every // 2)
            cases.append(Case(item.name, index, name, with_replay))
    return cases


# ------------------------------------------------------------------------------------------ running
def _limits(memory: int):
    def preexec():
        resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    return preexec


def _env() -> Dict[str, str]:
    env = dict(os.environ)
    env.pop("PRECISION_TOOL_DATA", None)
    env["PYTHONPATH"] = os.pathsep.join([str(seedlib.REPO)] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    env.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


def run_limited(argv: Sequence[str], cwd, timeout: float = DEFAULT_TIMEOUT, memory: int = DEFAULT_MEMORY
                ) -> Tuple[Optional[int], str, str, bool, float]:
    """Run ``argv`` under the campaign's limits: ``(exit code, stdout, stderr, timed out, seconds)``.

    stdout and stderr are decoded as UTF-8 with undecodable bytes kept as surrogate escapes."""
    started = time.monotonic()
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(list(argv), cwd=os.fspath(cwd), stdin=subprocess.DEVNULL, stdout=out, stderr=err,
                                env=_env(), preexec_fn=_limits(memory), start_new_session=True)
        timed_out = False
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
            _kill_group(proc.pid)
            proc.wait()
        _kill_group(proc.pid)  # workers left behind by the command (they should not be)
        seconds = time.monotonic() - started
        return (None if timed_out else proc.returncode, _read_capped(out), _read_capped(err), timed_out, seconds)


def _read_capped(handle, limit: int = OUTPUT_LIMIT) -> str:
    """What a command wrote (files, not pipes: a flood of output cannot fill the harness's memory): all of it
    up to ``limit`` bytes, else its first and last ``limit / 2`` bytes."""
    size = handle.seek(0, os.SEEK_END)
    handle.seek(0)
    if size <= limit:
        data = handle.read()
    else:
        data = handle.read(limit // 2) + b"\n[... output cut ...]\n"
        handle.seek(size - limit // 2)
        data += handle.read()
    return data.decode("utf-8", "surrogateescape")


def _kill_group(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _last_exception(text: str) -> str:
    tail = text[text.rfind("Traceback (most recent call last)"):]
    lines = [line for line in tail.splitlines() if line.strip() and not line.startswith((" ", "\t", "Traceback"))]
    return (lines[-1] if lines else "Traceback")[:300]


def classify(exit_code: Optional[int], stdout: str, stderr: str, timed_out: bool, timeout: float = DEFAULT_TIMEOUT,
             swap: Optional[str] = None, must_read=frozenset(), baseline: bool = False) -> Tuple[str, str]:
    """``(outcome, detail)`` of one run; the outcomes are in the module docstring."""
    text = stdout + "\n" + stderr
    if timed_out:
        return "hang", f"no exit within {timeout:g} s"
    if exit_code is not None and exit_code < 0:
        number = -exit_code
        try:
            name = signal.Signals(number).name
        except ValueError:
            name = f"signal {number}"
        if number == signal.SIGKILL or any(sign in text for sign in _MEMORY_SIGNS):
            return "memory", f"killed by {name}"
        return "crash", f"killed by {name}"
    if "Traceback (most recent call last)" in text:
        last = _last_exception(text)
        if "MemoryError" in last:
            return "memory", last
        return "traceback", last
    if exit_code not in (0, 1, 2):
        if any(sign in text for sign in _MEMORY_SIGNS):
            return "memory", next(line for line in text.splitlines() if any(s in line for s in _MEMORY_SIGNS))[:300]
        return "bad-exit", f"exit {exit_code}: {(stderr.strip().splitlines() or [''])[-1][:200]}"
    unsafe = _UNSAFE.search(text)
    if unsafe is not None:
        start = max(0, unsafe.start() - 40)
        return "control-chars", f"raw {unsafe.group()!r} in {text[start:unsafe.end() + 20]!r}"
    if exit_code == 0 and swap is not None and swap in must_read:
        return "silent-success", f"exit 0 with the file replaced by {swap}: {_last_line(stdout, stderr)}"
    if baseline and exit_code == 2:
        return "seed-rejected", _last_line(stdout, stderr)
    return "ok", f"exit {exit_code}"


def _last_line(stdout: str, stderr: str) -> str:
    lines = (stderr.strip() or stdout.strip()).splitlines()
    return lines[-1][:300] if lines else ""


def shown_name(name: str) -> str:
    """``name`` as the tool shows it on a terminal (control characters escaped)."""
    return _UNSAFE.sub(lambda m: f"\\x{ord(m.group()):02x}" if ord(m.group()) < 0x100 else f"\\u{ord(m.group()):04x}",
                       name)


def _argv(command: seedlib.Command, python: str, ws: Path, target: Path, out: Path) -> List[str]:
    values = {"ws": str(ws), "file": str(target), "out": str(out), "dump_leaf": str(ws / seedlib.DUMP_LEAF)}
    args = [arg.format(**values) for arg in command.args]
    if command.api:
        return [python, str(HERE / "entry_points.py"), *args]
    return [python, "-m", "precision_tool", "-d", str(ws), *args]


class Runner:
    """Runs cases (in a worker process): copies the base workspace, applies the mutant, runs the commands."""

    def __init__(self, seeds: Sequence[seedlib.Seed], base: Path, cases_dir: Path, python: str, seed: int,
                 timeout: float, memory: int):
        self.seeds = {s.name: s for s in seeds}
        self.token_seeds = [s for s in seeds if seedlib.WS_TOKEN in s.data]
        self.base, self.cases_dir, self.python, self.seed = base, cases_dir, python, seed
        self.timeout, self.memory = timeout, memory

    def mutant(self, case: Case) -> Optional[mutlib.Mutant]:
        if case.index < 0:
            return None
        item = self.seeds[case.fmt]
        rng = random.Random(f"{self.seed}:{case.fmt}:{case.index}")
        mutator = next(m for m in mutlib.mutators_for(item) if m.__name__ == case.mutator)
        return mutlib.mutate(item, rng, mutator)

    def workspace(self, dest: Path, mutant: Optional[mutlib.Mutant], item: seedlib.Seed) -> Path:
        """A fresh copy of the base workspace at ``dest`` with the mutant in place; returns the seed's path there.

        Every command gets its own copy: commands write into the workspace (``tf_dump`` keeps graphs in
        ``tf/graph``, ``vc`` and ``ni -s`` write under ``temp``), and a kept failing workspace must be exactly what
        the failing command saw. Seed files naming the workspace's path are written again for ``dest``."""
        shutil.copytree(str(self.base), str(dest), symlinks=True)
        for other in self.token_seeds:
            if other.path != item.path or mutant is None:
                (dest / other.path).write_bytes(seedlib.materialize(other.data, dest))
        return mutlib.apply(mutant, item, dest) if mutant else dest / item.path

    def run(self, case: Case) -> List[RunRecord]:
        item = self.seeds[case.fmt]
        case_dir = self.cases_dir / (f"{case.fmt}-baseline" if case.index < 0 else f"{case.fmt}-{case.index:05d}")
        if case_dir.exists():
            shutil.rmtree(str(case_dir))
        case_dir.mkdir(parents=True)
        try:
            mutant = self.mutant(case)
        except Exception as error:  # noqa: BLE001 -- a mutator bug must be reported, not kill the campaign
            return [RunRecord(case.fmt, case.index, case.mutator or "", "mutator failed", "-", [], None,
                              "harness-error", f"{type(error).__name__}: {error}", 0.0, str(case_dir))]
        family = mutant.family if mutant else "baseline"
        mutation = mutant.mutation if mutant else "none (the valid seed)"
        if mutant is not None and mutant.swap is None:
            (case_dir / "mutant.bin").write_bytes(mutant.data)
        records = []
        for number, command in enumerate(item.commands):
            if command.replay and not case.with_replay:
                continue
            ws, out = case_dir / f"ws{number}", case_dir / f"out{number}"
            target = self.workspace(ws, mutant, item)
            out.mkdir()
            argv = _argv(command, self.python, ws, target, out)
            code, stdout, stderr, timed_out, seconds = run_limited(argv, case_dir, self.timeout, self.memory)
            outcome, detail = classify(code, stdout, stderr, timed_out, self.timeout,
                                       mutant.swap if mutant else None, command.must_read, mutant is None)
            names_target = shown_name(target.name) in stdout + stderr
            record = RunRecord(case.fmt, case.index, family, mutation, command.label, argv, code, outcome, detail,
                               round(seconds, 2), str(case_dir), number, names_target,
                               mutant is not None and mutant.swap is None, bool(command.must_read))
            if outcome == "ok" and code == 2 and mutant is not None and not names_target:
                record.info.append("exit2-unnamed")
            records.append(record)
            if outcome == "ok":
                shutil.rmtree(str(ws), ignore_errors=True)
                shutil.rmtree(str(out), ignore_errors=True)
        if not any(r.failed for r in records):
            shutil.rmtree(str(case_dir), ignore_errors=True)
        return records


_RUNNER: Optional[Runner] = None


def _init_worker(runner: Runner) -> None:
    global _RUNNER
    _RUNNER = runner
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _run_case(case: Case) -> List[RunRecord]:
    assert _RUNNER is not None
    return _RUNNER.run(case)


# ------------------------------------------------------------------------------------------ the campaign
@dataclasses.dataclass
class Campaign:
    records: List[RunRecord]
    files: Dict[str, int]
    seconds: float
    out: Path

    @property
    def failures(self) -> List[RunRecord]:
        return [r for r in self.records if r.failed]

    def counts(self) -> Dict[str, collections.Counter]:
        table: Dict[str, collections.Counter] = collections.OrderedDict()
        for record in self.records:
            table.setdefault(record.fmt, collections.Counter())[record.outcome] += 1
            for info in record.info:
                table[record.fmt][info] += 1
        return table

    def report(self, detailed: bool = False) -> str:
        """The summary table, failing runs by command and by mutation, the first reproducer of each failure
        class; ``detailed`` adds the first reproducer of each format, command and class."""
        outcomes = [o for o in OUTCOMES + ("harness-error",) if o == "ok" or any(r.outcome == o for r in self.records)]
        header = ["format", "files", "runs"] + outcomes + list(INFO)
        rows = []
        totals: collections.Counter = collections.Counter()
        for fmt, counter in self.counts().items():
            runs = sum(counter[o] for o in OUTCOMES + ("harness-error",))
            row = [fmt, self.files.get(fmt, 0), runs] + [counter[o] for o in outcomes] + [counter[i] for i in INFO]
            rows.append(row)
            totals.update(counter)
            totals["files"] += self.files.get(fmt, 0)
            totals["runs"] += runs
        rows.append(["TOTAL", totals["files"], totals["runs"]] + [totals[o] for o in outcomes]
                    + [totals[i] for i in INFO])
        lines = [f"Fuzz campaign: {totals['files']} mutated files (+ {len(self.files)} baselines), "
                 f"{totals['runs']} runs, {self.seconds:.0f} s; cases in {self.out}", "", _table(header, rows)]
        failing = collections.Counter((r.fmt, r.command, r.outcome) for r in self.failures)
        if failing:
            lines += ["", "Failing runs by format and command:",
                      _table(["format", "command", "outcome", "runs"],
                             [[f, c, o, n] for (f, c, o), n in sorted(failing.items())])]
        by_family = collections.Counter((r.family, r.outcome) for r in self.failures)
        if by_family:
            lines += ["", "Failing runs by mutation:",
                      _table(["mutation", "outcome", "runs"], [[f, o, n] for (f, o), n in sorted(by_family.items())])]
        firsts = self.first_reproducers()
        if firsts:
            lines += ["", "First reproducer of each failure class:"]
            for outcome, record in firsts.items():
                lines += [f"- {outcome}: {record.detail}",
                          f"    format {record.fmt}, file {record.index}, mutation {record.family}: {record.mutation}",
                          f"    {record.shell_line()}"]
        if detailed and self.failures:
            lines += ["", "First reproducer of each format, command and failure class:"]
            seen = set()
            for record in sorted(self.failures, key=lambda r: (r.fmt, r.command_no, r.outcome, r.index)):
                key = (record.fmt, record.command_no, record.outcome)
                if key not in seen:
                    seen.add(key)
                    lines += [f"- {record.fmt} / {record.command} / {record.outcome}: {record.detail}",
                              f"    file {record.index}, mutation {record.family}: {record.mutation}",
                              f"    {record.shell_line()}"]
        lines.append("")
        lines.append("FAILED: " + ", ".join(f"{n} {o}" for o, n in collections.Counter(
            r.outcome for r in self.failures).most_common()) if self.failures else "PASSED: no failure")
        return "\n".join(lines)

    def first_reproducers(self) -> Dict[str, RunRecord]:
        firsts: Dict[str, RunRecord] = collections.OrderedDict()
        for outcome in FAILURES + ("harness-error",):
            matching = [r for r in self.failures if r.outcome == outcome]
            if matching:
                firsts[outcome] = min(matching, key=lambda r: (r.fmt != "dump", r.index, len(r.argv)))
        return firsts


def _table(header: List[str], rows: List[list]) -> str:
    cells = [[str(c) for c in header]] + [[str(c) for c in row] for row in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(header))]
    text = ["  ".join(c.rjust(w) if i and c.isdigit() else c.ljust(w) for i, (c, w) in enumerate(zip(row, widths)))
            for row in cells]
    text.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(text)


def run_campaign(files: int, seed: int, out, jobs: int = 2, python: Optional[str] = None,
                 formats: Optional[Sequence[str]] = None, timeout: float = DEFAULT_TIMEOUT,
                 memory: int = DEFAULT_MEMORY, replay_every: int = DEFAULT_REPLAY_EVERY, progress=None) -> Campaign:
    """Run the campaign into the folder ``out`` (emptied first); see the module docstring."""
    started = time.monotonic()
    out = Path(out).resolve()
    if out.exists():
        shutil.rmtree(str(out))
    out.mkdir(parents=True)
    python = python or sys.executable
    all_seeds = seedlib.build_workspace(out / "base", python)
    chosen = [s for s in all_seeds if not formats or s.name in formats]
    unknown = set(formats or ()) - {s.name for s in all_seeds}
    if unknown:
        raise SystemExit(f"unknown format(s): {', '.join(sorted(unknown))} (known: {', '.join(seedlib.SEED_NAMES)})")
    cases = plan(chosen, files, seed, replay_every)
    runner = Runner(all_seeds, out / "base", out / "cases", python, seed, timeout, memory)
    records: List[RunRecord] = []
    with open(out / "runs.jsonl", "w", encoding="utf-8") as log, \
            concurrent.futures.ProcessPoolExecutor(max_workers=jobs, initializer=_init_worker,
                                                   initargs=(runner,)) as pool:
        for done, case_records in enumerate(pool.map(_run_case, cases), start=1):
            records.extend(case_records)
            for record in case_records:
                log.write(json.dumps(dataclasses.asdict(record)) + "\n")
            if progress is not None:
                progress(done, len(cases), case_records)
    _named_exit0(records)
    with open(out / "runs.jsonl", "w", encoding="utf-8") as log:  # again, with the named-exit0 marks
        log.writelines(json.dumps(dataclasses.asdict(record)) + "\n" for record in records)
    files_per_format = collections.Counter(c.fmt for c in cases if c.index >= 0)
    campaign = Campaign(records, {s.name: files_per_format[s.name] for s in chosen}, time.monotonic() - started, out)
    _prune(campaign)
    (out / "report.txt").write_text(campaign.report(detailed=True) + "\n", encoding="utf-8")
    return campaign


def _named_exit0(records: List[RunRecord]) -> None:
    """Mark runs that exit 0 naming a mutated must-read file the baseline run of the same command did not name."""
    baseline = {(r.fmt, r.command_no): r.names_target for r in records if r.index < 0}
    for record in records:
        if (record.outcome == "ok" and record.exit_code == 0 and record.content_mutant and record.must_read
                and record.names_target and not baseline.get((record.fmt, record.command_no), True)):
            record.info.append("named-exit0")


def _prune(campaign: Campaign) -> None:
    """Keep the workspaces of the first failing cases (the first of each class, then the earliest) whole; of the
    others only the mutated file (``mutant.bin``, workspace paths as ``@@FUZZ_WS@@``) and the runs."""
    keep = {r.case_dir for r in campaign.first_reproducers().values()}
    for record in campaign.failures:
        if len(keep) >= KEEP_CASES:
            break
        keep.add(record.case_dir)
    for case_dir in {r.case_dir for r in campaign.failures} - keep:
        for name in os.listdir(case_dir) if os.path.isdir(case_dir) else ():
            if name.startswith(("ws", "out")):
                shutil.rmtree(os.path.join(case_dir, name), ignore_errors=True)


def load_campaign(out) -> Campaign:
    """A finished (or interrupted) campaign read back from ``OUT/runs.jsonl``, to render its report again."""
    out = Path(out).resolve()
    records = [RunRecord(**json.loads(line)) for line in (out / "runs.jsonl").read_text(encoding="utf-8").splitlines()
               if line.strip()]
    files = collections.Counter(r.fmt for r in records if r.index >= 0 and r.command_no == min(
        x.command_no for x in records if x.fmt == r.fmt and x.index == r.index))
    return Campaign(records, dict(files), 0.0, out)


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--files", type=int, default=200, help="mutated files in all, spread over the formats")
    parser.add_argument("--seed", type=int, default=14, help="random seed (the same seed, the same files)")
    parser.add_argument("--out", required=True, help="folder for the cases, runs.jsonl and report.txt (emptied)")
    parser.add_argument("--report-only", action="store_true",
                        help="run nothing: print the detailed report of the campaign already in --out")
    parser.add_argument("--jobs", type=int, default=2, help="cases run in parallel (default 2)")
    parser.add_argument("--python", default=sys.executable, help="interpreter running precision_tool")
    parser.add_argument("--formats", help=f"comma-separated subset of: {', '.join(seedlib.SEED_NAMES)}")
    parser.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT, help="seconds per run (default 30)")
    parser.add_argument("--memory-gb", type=float, default=DEFAULT_MEMORY / (1 << 30), help="RLIMIT_AS (default 4)")
    parser.add_argument("--replay-every", type=int, default=DEFAULT_REPLAY_EVERY,
                        help="run the TensorFlow (replay) commands for every Nth file of a format (0: never)")
    parser.add_argument("-q", "--quiet", action="store_true", help="no progress line")
    options = parser.parse_args(argv)
    if options.report_only:
        campaign = load_campaign(options.out)
        print(campaign.report(detailed=True))
        return 1 if campaign.failures else 0

    def progress(done, total, records):
        bad = [r for r in records if r.failed]
        sys.stderr.write(f"\r{done}/{total} files  {records[0].fmt if records else ''} "
                         f"{'FAIL ' + bad[0].outcome if bad else ''}".ljust(70))
        sys.stderr.flush()

    campaign = run_campaign(options.files, options.seed, options.out, options.jobs, options.python,
                            options.formats.split(",") if options.formats else None, options.timeout,
                            int(options.memory_gb * (1 << 30)), options.replay_every,
                            None if options.quiet else progress)
    if not options.quiet:
        sys.stderr.write("\n")
    print(campaign.report())
    return 1 if campaign.failures else 0


if __name__ == "__main__":
    sys.exit(main())
