"""The benchmark's sweep: a grid of points, each in a fresh locklab-bench process.

A fresh process per point keeps one lock's aftermath (threads still parked,
a polluted cache, a leaked sleeper) out of the next lock's numbers, and lets
a point that crashes or hangs fail alone.
"""
from __future__ import annotations

import itertools
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from typing import TextIO

from .. import native
from ..errors import LocklabError
from ..launch.process import die_with
from . import presets, store
from .progress import Progress, store_point
from .store import Point

# Keys locklab-bench's JSON line must carry for a point to count as measured.
REQUIRED = ("lock", "lock_opts", "threads", "mutexes", "hold_ns", "outside_ns",
            *store.METRIC_NAMES, "version")
# The rw workload's line (src/bench/rw.c): one rwlock, an op of either class.
RW = presets.RW_WORKLOAD
RW_REQUIRED = ("lock", "lock_opts", "threads", "read_pct", "hold_ns", "outside_ns",
               "duration_s", "ns_per_op", "ops_per_sec", "cpu_ns_per_op",
               *(m for m in store.RW_METRIC_NAMES if m not in store.RW_OPTIONAL), "version")
# The rw workload times one op in this many of each class. Reading the clock costs as
# much as a read lock: read-only points time almost none (their waits are nobody's);
# with writes, one in 16 of each class, for the writers' wait (scripts/rw-figures.py's).
RW_SAMPLE_EVERY, RW_SAMPLE_EVERY_READ_ONLY = 16, 1 << 20


def kind_of(workload: str) -> str:
    """The table of `locklab-bench list` a workload's locks come from."""
    return "rwlock" if workload == RW else "mutex"


def expand_locks(locks: list[str], workload: str = "mutex") -> list[str]:
    """The lock list with 'all' replaced by every lock locklab-bench knows, 'parks' by
    every one of them that parks its waiters (the rwlocks, for the rw workload)."""
    return presets.expand_locks(locks, lambda: native.algorithms(kind=kind_of(workload)))


def join_opts(*opts: str) -> str:
    return ",".join(o for o in opts if o)


def validate(spec: dict) -> None:
    """Let locklab-bench refuse an unknown lock or option now, not mid-sweep."""
    for part in parts(spec):
        workload = part.get("workload", "mutex")
        check_rw_axes(part, workload)
        for lock, opts in itertools.product(part["locks"], part["lock_opts"]):
            name, own = presets.split_lock(lock)
            native.algorithms(name, join_opts(own, opts) or None, kind=kind_of(workload))
        if workload != "server":
            # The mutex workload has no gate and no workload options: points labelled
            # with them would all be the same measurement under different names.
            given = [option for option, axis, unset in SERVER_ONLY
                     if any(value not in unset for value in part.get(axis) or [])]
            if given:
                raise LocklabError(f"{' and '.join(given)} apply to --workload server only")
            continue
        # One query on one client: locklab-bench judges the gate and workload options.
        for gate, wopts in itertools.product(part.get("gates", [""]),
                                             part.get("workload_opts", [""])):
            policy, gopts = split_gate(gate)
            native.run_bench(["bench", "--workload", "server", "--lock", part["locks"][0],
                              "--threads", "1", "--iterations", "1",
                              *server_args(policy, gopts, wopts)])


def check_rw_axes(part: dict, workload: str) -> None:
    """Refuse the rw workload's axis elsewhere, and what the rw workload does not take."""
    if workload != RW:
        if part.get("read_pct") is not None:
            raise LocklabError("--read-pct applies to --workload rw only")
        return
    if any(m != 1 for m in part["mutexes"]):
        raise LocklabError("--mutexes does not apply to --workload rw: it measures one rwlock")
    if part.get("instrument"):
        raise LocklabError("--instrument does not apply to --workload rw (the lock monitor "
                           "watches mutexes)")
    bad = [p for p in part["read_pct"] if not 0 <= p <= 100]
    if not part["read_pct"] or bad:
        raise LocklabError(f"--read-pct wants percentages in [0, 100], got {bad or 'none'}")


# Options the mutex workload does not take: option, spec axis, the values that mean "unset".
SERVER_ONLY = (("--gate", "gates", ("", "none")), ("--workload-opts", "workload_opts", ("",)))


def split_gate(text: str) -> tuple[str, str]:
    """'fifo:n=8' -> ('fifo', 'n=8'); '' or 'none' -> ('', '')."""
    policy, _, opts = text.partition(":")
    return ("", "") if policy in ("", "none") else (policy, opts)


def server_args(gate: str, gate_opts: str, workload_opts: str) -> list[str]:
    args = ["--gate", gate] if gate else []
    args += ["--gate-opts", gate_opts] if gate_opts else []
    return args + (["--workload-opts", workload_opts] if workload_opts else [])


def parts(spec: dict) -> list[dict]:
    """The spec's grids: itself, then each of its `also` sub-grids (axes it overrides)."""
    return [spec, *({**spec, **extra} for extra in spec.get("also", []))]


def shapes(spec: dict) -> list[dict]:
    """The spec's workload shapes: its own axes of presets.BENCH_ONLY, each shape's on top."""
    own = {axis: spec[axis] for axis in presets.BENCH_ONLY}
    return [{**own, **shape} for shape in spec.get("shapes") or [{}]]


def workload_opts(spec: dict) -> list[str]:
    """The workload options of the spec's points: the rw workload's read fractions, or
    the server workload's options as given."""
    if spec.get("workload") == RW:
        return [store.rw_opts(pct) for pct in spec["read_pct"]]
    return spec.get("workload_opts", [""])


def warmup_of(spec: dict, gate: str) -> float:
    """A point's warm-up: the spec's, or longer where its gate policy needs it (gate_warmup)."""
    return float(max(spec["warmup"], spec.get("gate_warmup", {}).get(split_gate(gate)[0], 0)))


def _cross(spec: dict) -> list[Point]:
    workload = spec.get("workload", "mutex")
    return [
        Point(name, join_opts(own, opts), threads, mutexes, hold, outside, rep, workload,
              *split_gate(gate), wopts, warmup_of(spec, gate))
        for rep in range(spec["repeat"])
        for shape in shapes(spec)
        for hold in shape["hold_ns"]
        for outside in shape["outside_ns"]
        for mutexes in shape["mutexes"]
        for wopts in workload_opts(spec)
        for threads in spec["threads"]
        for gate in spec.get("gates", [""])
        for name, own in map(presets.split_lock, spec["locks"])
        for opts in spec["lock_opts"]
    ]


def point_timeout(spec: dict, point: Point | None = None) -> float:
    """How long a point (one of SPEC's, or POINT with its own warm-up) may run before it
    is killed as hung."""
    if spec.get("timeout"):
        return spec["timeout"]
    warmup = point.warmup if point is not None else spec["warmup"]
    return 10 * (spec["duration"] + warmup) + 30


def bench_args(point: Point, spec: dict) -> list[str]:
    args = ["bench", "--lock", point.lock]
    if point.workload != "mutex":
        args[1:1] = ["--workload", point.workload]
    if point.workload == "server":
        args += server_args(point.gate, point.gate_opts, point.workload_opts)
    if point.lock_opts:
        args += ["--lock-opts", point.lock_opts]
    args += ["--threads", str(point.threads)]
    if point.workload == RW:
        pct = store.read_pct(point.workload_opts)
        every = RW_SAMPLE_EVERY_READ_ONLY if pct == 100 else RW_SAMPLE_EVERY
        args += ["--read-pct", store.pct_text(pct), "--sample-every", str(every)]
    else:
        args += ["--mutexes", str(point.mutexes)]
    return args + [
        "--hold-ns", str(point.hold_ns), "--outside-ns", str(point.outside_ns),
        "--duration", str(spec["duration"]), "--warmup", f"{point.warmup:g}", "--json",
    ] + (["--instrument"] if spec.get("instrument") else [])


def run_point(point: Point, spec: dict) -> dict:
    """Run one point; keyword arguments for store.record_point."""
    timeout = point_timeout(spec, point)
    start = time.monotonic()
    proc = subprocess.Popen(
        [str(native.bench_path()), *bench_args(point, spec)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        preexec_fn=die_with(os.getpid()),
    )
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, _ = proc.communicate()
        error, result = f"timed out after {timeout:g} s, killed", None
    except BaseException:
        # Ctrl-C or kill: the point is not finished, so it is not recorded; resume reruns it.
        proc.kill()
        proc.wait()
        raise
    else:
        if proc.returncode == -signal.SIGINT:
            # Ctrl-C on a terminal reaches the whole process group: the benchmark died
            # of it first. The user interrupted the sweep; the point did not fail.
            raise KeyboardInterrupt
        error, result = judge(proc.returncode, out, err, point.workload)
    asked = bool(spec.get("instrument"))
    measured = result.get("instrument", asked) if result else asked
    if error is None and measured != asked:
        error = (f"measured with the lock monitor {'on' if measured else 'off'} where the run "
                 f"asked for it {'on' if asked else 'off'}")
    return {"error": error, "result": result, "raw": out.strip() or None,
            "wall_s": time.monotonic() - start, "instrument": bool(measured)}


def judge(status: int, out: str, err: str,
          workload: str = "mutex") -> tuple[str | None, dict | None]:
    """(error or None, the parsed JSON object or None) from how locklab-bench ended."""
    lines = out.strip().splitlines()
    try:
        result = json.loads(lines[-1]) if lines else None
    except ValueError:
        result = None
    if not isinstance(result, dict):
        result = None
    err_lines = err.strip().splitlines()
    said = err_lines[-1].removeprefix("locklab: ") if err_lines else ""
    if status < 0:
        name = signal.Signals(-status).name
        return f"killed by {name}" + (f": {said}" if said else ""), result
    if result is not None and result.get("mutex_ok") is False:
        return "mutual exclusion violated" + (f": {said}" if said else ""), result
    if result is not None and result.get("exclusion_ok") is False:
        return said or "rwlock exclusion violated", result
    if status != 0:
        return said or f"exit status {status}", result
    if result is None:
        shown = lines[-1][:120] if lines else ""
        return f"bad JSON from locklab-bench: {shown!r}", None
    missing = [key for key in (RW_REQUIRED if workload == RW else REQUIRED) if key not in result]
    if missing:
        return f"JSON from locklab-bench lacks {', '.join(missing)}", result
    return None, result


def run(conn: sqlite3.Connection, run_id: int, spec: dict, stream: TextIO = sys.stderr) -> None:
    """Run every point of the run not stored yet, storing each as it ends."""
    points = grid(spec)
    done = store.done_points(conn, run_id)
    todo = [p for p in points if p not in done]
    progress = Progress(len(points), len(points) - len(todo), spec["repeat"], stream)
    try:
        for point in todo:
            progress.start(point)
            outcome = run_point(point, spec)
            store_point(conn, run_id, point, spec["repeat"], outcome)
            progress.finish(point, outcome["wall_s"], outcome["error"])
    finally:
        progress.close()
    store.finish_run(conn, run_id)


def grid(spec: dict) -> list[Point]:
    """Every point of the sweep, in the order they run.

    Repeats are outermost so an interrupted sweep holds whole passes; locks are
    innermost so the locks of one configuration run close together in time.
    A spec's workload shapes (presets.py) take turns within each pass; its `also`
    sub-grids follow its own, points already planned left out.
    """
    return list(dict.fromkeys(point for part in parts(spec) for point in _cross(part)))


def size(spec: dict) -> int:
    """How many points grid(SPEC) gives at most (before duplicates across its parts are
    dropped), counted without building it."""
    return sum(part["repeat"] * len(workload_opts(part)) * len(part["threads"])
               * len(part.get("gates", [""])) * len(part["locks"]) * len(part["lock_opts"])
               * sum(len(s["hold_ns"]) * len(s["outside_ns"]) * len(s["mutexes"])
                     for s in shapes(part))
               for part in parts(spec))


def longest_s(spec: dict) -> float:
    """The longest warm-up and window of SPEC's points, in seconds."""
    return spec["duration"] + max(warmup_of(part, gate) for part in parts(spec)
                                  for gate in part.get("gates", [""]) or [""])


# What a point costs beyond its warm-up and window, for the time a sweep is expected to
# take: a benchmark process's start and its threads' creation and joining (0.8 s points
# took ~0.95 s each on 2 cores, up to 1024 threads).
POINT_START_S = 0.15


class BenchSweep:
    """The benchmark's sweep (kinds.SweepKind)."""

    start_cost = f"{POINT_START_S:g} s more per point to start its process"
    monitor_refusal = ("every point", "pass --instrument, or unset it")

    def workload(self, spec: dict) -> str:
        return spec.get("workload", "mutex")

    def prepare(self, spec: dict, lock_for: list[str], rwlocks: list[str],
                rwlock_for: list[str]) -> None:
        if lock_for or rwlock_for:
            which = "--lock-for" if lock_for else "--rwlock-for"
            raise LocklabError(f"{which} swaps a program's named locks: give --program "
                               "or --preset programs")
        if rwlocks:
            raise LocklabError("--rwlock swaps a program's rwlocks: give --program or --preset "
                               "programs (the rw workload's rwlocks are --locks)")
        spec["locks"] = expand_locks(spec["locks"], spec.get("workload", "mutex"))
        validate(spec)

    def before_resume(self, spec: dict) -> None:
        """Nothing: a point this machine cannot run now fails alone, stored with why."""

    def grid(self, spec: dict) -> list[Point]:
        return grid(spec)

    def size(self, spec: dict) -> int:
        return size(spec)

    def longest_s(self, spec: dict) -> float:
        return longest_s(spec)

    def expected_seconds(self, spec: dict, points: list[Point]) -> float:
        return sum(spec["duration"] + p.warmup + POINT_START_S for p in points)

    def run(self, conn: sqlite3.Connection, run_id: int, spec: dict,
            stream: TextIO = sys.stderr) -> None:
        run(conn, run_id, spec, stream)


KIND = BenchSweep()
