"""Running a grid of benchmark points, each in a fresh locklab-bench process.

A fresh process per point keeps one lock's aftermath (threads still parked,
a polluted cache, a leaked sleeper) out of the next lock's numbers, and lets
a point that crashes or hangs fail alone.
"""
from __future__ import annotations

import ctypes
import itertools
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from typing import TextIO

from . import machine, native, presets, store
from .errors import LocklabError
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
    if not {presets.ALL, presets.PARKS} & set(locks):
        return locks
    return presets.resolve_locks(locks, native.algorithms(kind=kind_of(workload)))


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

# Environment variables that make liblocklab measure with the lock monitor on.
# (LOCKLAB_WATCHDOG adds a thread that scans the locks: not the configuration either.)
MONITOR_ENV = ("LOCKLAB_MONITOR", "LOCKLAB_WATCHDOG")


def check_environment(spec: dict) -> None:
    """Refuse an environment that would measure other than the run's spec says.

    The benchmark inherits the sweep's environment, and the library turns its lock
    monitor on from there: every point would be measured instrumented and stored
    as if it were not.
    """
    if spec.get("instrument"):
        return
    set_here = [name for name in MONITOR_ENV if os.environ.get(name, "") not in ("", "0", "off")]
    if set_here:
        what, fix = (("every swapped server", "unset it") if spec.get("programs")
                     else ("every point", "pass --instrument, or unset it"))
        raise LocklabError(f"{set_here[0]}={os.environ[set_here[0]]} would run {what} with "
                           f"the lock monitor on: {fix}")


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


def grid(spec: dict) -> list[Point]:
    """Every point of the sweep, in the order they run.

    Repeats are outermost so an interrupted sweep holds whole passes; locks are
    innermost so the locks of one configuration run close together in time.
    A spec's workload shapes (presets.py) take turns within each pass; its `also`
    sub-grids follow its own, points already planned left out.
    A program sweep's grid is program_grid's.
    """
    if spec.get("programs"):
        return program_grid(spec)
    return list(dict.fromkeys(point for part in parts(spec) for point in _cross(part)))


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


# A program point's workload: this, then the program's name.
PROGRAM = "program:"


def program_grid(spec: dict) -> list[Point]:
    """A program sweep's points, in the order they run (programs.py runs them).

    Passes are outermost, so every lock is measured in every part of the run; in a
    pass, each program's locks take turns, each on one server start that serves all
    of that lock's points: client counts (threads) in turn, every load test
    (workload_opts) at each, so that a server stuck at many clients costs only the
    points after it. The unswapped server (presets.NATIVE), and one whose rwlocks
    alone are swapped (presets.RWLOCK_MARK), run without the mutexes' lock options.
    """
    return list(dict.fromkeys(
        Point(lock, opts if presets.swaps_mutexes(lock) else "", clients, 0, 0, 0, rep,
              PROGRAM + program, "", "", test)
        for rep in range(spec["repeat"])
        for program in spec["programs"]
        for lock in spec["locks"]
        for opts in spec["lock_opts"]
        for clients in spec["threads"]
        for test in spec["program_tests"][program]
    ))


def point_timeout(spec: dict, point: Point | None = None) -> float:
    """How long a point (one of SPEC's, or POINT with its own warm-up) may run before it
    is killed as hung."""
    if spec.get("timeout"):
        return spec["timeout"]
    warmup = point.warmup if point is not None else spec["warmup"]
    return 10 * (spec["duration"] + warmup) + 30


def label(point: Point, repeat: int) -> str:
    lock = store.lock_label(point.lock, point.lock_opts)
    if point.workload.startswith(PROGRAM):
        text = f"{lock} {point.workload.removeprefix(PROGRAM)}"
        text += f" {point.workload_opts}" if point.workload_opts else ""
        text += f" c={point.threads}"
        return text + (f" r={point.rep + 1}/{repeat}" if repeat > 1 else "")
    if point.workload == RW:
        text = f"{lock} t={point.threads} h={point.hold_ns}"
        text += f" o={point.outside_ns}" if point.outside_ns else ""
        text += f" rw {store.read_pct(point.workload_opts):g}% reads"
        return text + (f" r={point.rep + 1}/{repeat}" if repeat > 1 else "")
    text = f"{lock} t={point.threads} m={point.mutexes} h={point.hold_ns}"
    if point.outside_ns:
        text += f" o={point.outside_ns}"
    if point.workload != "mutex":
        gate = f"{point.gate}:{point.gate_opts}" if point.gate_opts else point.gate
        text += f" {point.workload} gate={gate or 'none'}"
        text += f" [{point.workload_opts}]" if point.workload_opts else ""
    if repeat > 1:
        text += f" r={point.rep + 1}/{repeat}"
    return text


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


def die_with(parent: int):
    """A preexec_fn: the benchmark is killed when the sweep (pid parent) dies.

    Even a SIGKILLed sweep then leaves no hung point behind, and none that keeps
    loading the CPUs a resumed sweep measures on.
    """
    prctl = ctypes.CDLL(None, use_errno=True).prctl

    def preexec() -> None:
        PR_SET_PDEATHSIG = 1
        prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
        if os.getppid() != parent:  # the sweep died before prctl took effect
            os._exit(1)

    return preexec


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


def clock(seconds: float) -> str:
    minutes, secs = divmod(int(seconds + 0.5), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


# What a point costs beyond its warm-up and window, for the time a sweep is expected to
# take: a benchmark process's start and its threads' creation and joining (0.8 s points
# took ~0.95 s each on 2 cores, up to 1024 threads); a program server's start.
POINT_START_S = 0.15
SERVER_START_S = 2.0


def expected_seconds(spec: dict, points: list[Point]) -> float:
    """About how long POINTS of SPEC take to run, from their lengths alone."""
    if spec.get("programs"):
        # Each server start warms up once, then serves its points one window each.
        starts = len({(p.rep, p.workload, p.lock, p.lock_opts) for p in points})
        return starts * (SERVER_START_S + spec["warmup"]) + len(points) * spec["duration"]
    return sum(spec["duration"] + p.warmup + POINT_START_S for p in points)


# The axes a dry run shows, in order, and how it names them.
PLAN_AXES = (("programs", "programs"), ("locks", "locks"), ("lock_opts", "lock options"),
             ("threads", "threads"), ("mutexes", "mutexes"), ("hold_ns", "hold ns"),
             ("outside_ns", "outside ns"), ("read_pct", "read %"), ("gates", "gates"),
             ("workload_opts", "workload opts"))


def _values(values) -> str:
    if isinstance(values, dict):   # a program's load tests
        return "; ".join(f"{k}: {', '.join(v) or 'its load'}" for k, v in values.items())
    if not isinstance(values, (list, tuple)):   # one value: a sub-grid's own warm-up
        return f"{values:g}" if isinstance(values, float) else str(values)
    return ", ".join(str(v) if v != "" else "(defaults)" for v in values)


def plan(spec: dict, todo: list[Point], total: int, measured_s: float | None = None) -> str:
    """What `sweep --dry-run` prints: the grid, its point count and the time expected.

    MEASURED_S: the mean wall time of the run's points already stored (a resumed run),
    which then estimates the rest better than the points' lengths do.
    """
    workload = "programs" if spec.get("programs") else spec.get("workload", "mutex")
    lines = [f"{'preset':<14}{spec.get('preset') or '(none)'}", f"{'workload':<14}{workload}"]
    lines += [f"{name:<14}{_values(spec[axis])}" for axis, name in PLAN_AXES
              if spec.get(axis) is not None and not (axis == "programs" and not spec[axis])]
    if spec.get("program_tests"):
        lines.append(f"{'load tests':<14}{_values(spec['program_tests'])}")
    names = {**dict(PLAN_AXES), "warmup": "warm-up s"}
    for title, part in [*(("and shape", s) for s in (spec.get("shapes") or [])[1:]),
                        *(("then", extra) for extra in spec.get("also", []))]:
        lines.append(f"{title:<14}" + "; ".join(f"{names.get(k, k)} {_values(v)}"
                                              for k, v in part.items()))
    passes = spec["repeat"]
    longer = "".join(f" ({policy}: {s:g} s)" for policy, s in spec.get("gate_warmup", {}).items()
                     if s > spec["warmup"])
    lines.append(f"{'each point':<14}{spec['duration']:g} s after {spec['warmup']:g} s of "
                 f"warm-up{longer}, {passes} pass{'es' if passes > 1 else ''}"
                 + (", lock monitor on" if spec.get("instrument") else ""))
    left = f"{len(todo)} of {total} points left" if len(todo) != total else f"{total} points"
    if measured_s is not None:
        expected, how = measured_s * len(todo), f"{measured_s:.2f} s a point, as measured so far"
    else:
        expected = expected_seconds(spec, todo)
        how = (f"{SERVER_START_S:g} s more per server start" if spec.get("programs")
               else f"{POINT_START_S:g} s more per point to start its process")
    lines.append(f"{'points':<14}{left}, about {clock(expected)} ({how})")
    return "\n".join(lines)


class Progress:
    """Where a sweep is, on stderr: a progress bar (tqdm's) on a terminal, with the
    point running and the time left; elsewhere (a log, a pipe) a plain line per point,
    `[ 12/84] innodb56 t=64 m=1 h=1000  ETA 0:42`. A failed point gets a line of its
    own either way.
    """

    def __init__(self, total: int, done: int, repeat: int, stream: TextIO):
        self.total, self.position, self.repeat, self.stream = total, done, repeat, stream
        self.walls: list[float] = []
        self.bar = None
        if stream.isatty():
            try:
                from tqdm import tqdm
            except ImportError:   # an install without its dependencies: plain lines
                tqdm = None
            if tqdm is not None:
                # A terminal that gives no size (a bare pty) would get an empty line
                # from tqdm: it is drawn as on 80 x 24 there.
                try:
                    size = os.get_terminal_size(stream.fileno())
                    sized = size.columns > 0 and size.lines > 0
                except (OSError, ValueError):
                    sized = False
                self.bar = tqdm(total=total, initial=done, file=stream, unit="pt",
                                dynamic_ncols=sized, ncols=None if sized else 80,
                                nrows=None if sized else 24, leave=True,
                                bar_format="{n_fmt}/{total_fmt} {bar} {elapsed}<{remaining} "
                                           "{desc}")

    def start(self, point: Point) -> None:
        self.position += 1
        if self.bar is not None:
            self.bar.set_description_str(label(point, self.repeat))
            return
        remaining = self.total - self.position + 1
        eta = clock(sum(self.walls) / len(self.walls) * remaining) if self.walls else "?"
        width = len(str(self.total))
        self.stream.write(f"[{self.position:{width}d}/{self.total}] "
                          f"{label(point, self.repeat)}  ETA {eta}\n")
        self.stream.flush()

    def finish(self, point: Point, wall_s: float, error: str | None) -> None:
        self.walls.append(wall_s)
        if error:
            line = f"locklab: {label(point, self.repeat)}: {error}"
            if self.bar is not None:
                self.bar.write(line, file=self.stream)
            else:
                self.stream.write(line + "\n")
                self.stream.flush()
        if self.bar is not None:
            self.bar.update(1)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
            self.bar = None


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
            try:
                store.record_point(conn, run_id, point, **outcome)
            except sqlite3.IntegrityError:
                # UNIQUE refused it: some other process stored this point meanwhile.
                raise LocklabError(f"{label(point, spec['repeat'])} is already in run {run_id}: "
                                   "is another sweep filling it?") from None
            progress.finish(point, outcome["wall_s"], outcome["error"])
    finally:
        progress.close()
    store.finish_run(conn, run_id)


def machine_changes(run: dict) -> list[str]:
    """The facts about this machine that differ from those the run started on."""
    now = machine.describe()
    return [f"{key} {run[key]!r} -> {now[key]!r}" for key in store.MACHINE if run[key] != now[key]]
