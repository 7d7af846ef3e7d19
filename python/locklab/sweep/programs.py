"""`locklab sweep --preset programs`: real servers with their pthread locks swapped.

Every (pass, program, lock) of the grid (grid, below) is one server start: the
program (drivers.py) runs on 127.0.0.1 at a free port, in a directory of its own
under the sweep's temporary directory, with liblocklab-swap.so preloaded as
`locklab run` preloads it (swap.settings): the lock serves the server's mutexes, or,
for a lock 'rwlock=NAME[:K=V,...]' (sweep --rwlock), its rwlocks alone; or with
nothing preloaded for the `native` baseline.  It is warmed, driven by its load
generator at each client count in turn, and stopped; each point is stored as it
ends, and the swapper's counts, written when the server exits, are added to that
server's points afterwards.

A server that does not start or dies, or a load generator that fails or counts
errors, makes a failed point whose error says why; the sweep goes on.  Servers and
load generators are killed, their directories removed, when Ctrl-C or SIGTERM stops
the sweep.
"""
from __future__ import annotations

import itertools
import json
import os
import shutil
import signal
import sqlite3
import sys
import tempfile
import time
from pathlib import Path
from typing import TextIO

from .. import native
from ..errors import Interrupted, LocklabError
from ..launch.net import free_port
from ..launch.program import resolve_program
from ..swap import check
from ..swap.settings import SwapSettings, library_path as swapper_library
from ..swap.sites import mangled_sites, split_entry
from . import presets, store
from .drivers import PROGRAMS, Failed, MariaDB, Program, Server, TimedOut, cpu_seconds
from .progress import Progress, store_point
from .store import PROGRAM, Point

# Options a program sweep has no use for: spec axis, as the command line spells it.
BENCH_OPTIONS = (("mutexes", "--mutexes"), ("hold_ns", "--hold-ns"),
                 ("outside_ns", "--outside-ns"), ("workload", "--workload"), ("gates", "--gate"),
                 ("workload_opts", "--workload-opts"), ("instrument", "--instrument"),
                 ("read_pct", "--read-pct"))
# What a server start costs beyond its points' windows, for the time expected.
SERVER_START_S = 2.0


def preset_of(preset: str | None, given: dict) -> str | None:
    """The preset a sweep runs: --program alone means the programs preset. Refuses
    options that have no meaning for the kind of sweep asked for."""
    if given.get("programs") is not None:
        if preset not in (None, "programs"):
            raise LocklabError(f"--program applies to --preset programs, not --preset {preset}")
        preset = "programs"
    if preset == "programs":
        for axis, option in BENCH_OPTIONS:
            if given.get(axis) is not None:
                raise LocklabError(f"{option} does not apply to --preset programs")
    return preset


def expand_locks(locks: list[str]) -> list[str]:
    """native first, then the locks; presets.ALL and presets.PARKS become every lock
    (every parking lock) the swapper serves, in `locklab list`'s order."""
    return presets.expand_locks([presets.NATIVE, *locks], lambda: [
        a for a in native.algorithms() if check.served(a["name"])])


SITE_MARK = "@"   # 'NAME[:K=V,...]@SITE': NAME serves the locks named SITE, glibc the rest


def site_lock(entry: str, option: str = "--lock-for") -> str:
    """--lock-for 'SITE=NAME[:K=V,...]' as a point's lock: 'NAME[:K=V,...]@SITE'."""
    split = split_entry(entry)
    if not split or not split[0]:
        raise LocklabError(f"{option} {entry!r}: not SITE=NAME[:K=V,...]")
    return f"{split[1]}{SITE_MARK}{split[0]}"


def rwlock_lock(entry: str) -> str:
    """--rwlock 'NAME[:K=V,...]' as a point's lock: 'rwlock=NAME[:K=V,...]'."""
    name = entry.partition(":")[0]
    if not name.strip() or SITE_MARK in entry or ";" in entry:
        raise LocklabError(f"--rwlock {entry!r}: not NAME[:K=V,...] (locklab list --rwlock "
                           "names the rwlocks)")
    return presets.RWLOCK_MARK + entry


def point_swap(lock: str, opts: str, stats_json: str | None = None) -> SwapSettings:
    """The swapper's settings for a point's LOCK with the mutexes' options OPTS, as
    `locklab run --lock LOCK --lock-opts OPTS --stats-json STATS_JSON` gives them; for
    a site's lock (site_lock), `locklab run --lock-for SITE=NAME`; for an rwlock's
    (rwlock_lock), `locklab run --rwlock NAME[:K=V,...]`, and for an rwlock's of a site
    (rwlock=NAME@SITE) `locklab run --rwlock-for SITE=NAME`, the mutexes glibc's (OPTS
    are theirs: unused)."""
    if lock.startswith(presets.RWLOCK_MARK):
        name, _, site = lock.removeprefix(presets.RWLOCK_MARK).partition(SITE_MARK)
        if site:
            return SwapSettings(rwlock_for=(f"{site}={name}",), stats_json=stats_json)
        return SwapSettings.given(rwlock=name, stats_json=stats_json)
    if SITE_MARK in lock:
        name, site = lock.split(SITE_MARK, 1)
        if opts and ":" not in name:
            name += ":" + opts
        return SwapSettings(lock_for=(f"{site}={name}",), stats_json=stats_json)
    name, own = presets.split_lock(lock)   # 'NAME:K=V,...': the lock's own options
    return SwapSettings(lock=name, lock_opts=",".join(o for o in (own, opts) if o) or None,
                        stats_json=stats_json)


def swap_env(lock: str, opts: str, stats_json: str | None = None,
             program: str | None = None) -> dict[str, str]:
    """The server's environment for a point's LOCK (point_swap), a site's named as
    PROGRAM's own symbols (swap.sites.mangled_sites)."""
    settings = point_swap(lock, opts, stats_json)
    if program:
        settings, _ = mangled_sites(settings, Path(program))
    return settings.environment(dict(os.environ), swapper_library())


def whole_seconds(spec: dict, key: str, option: str, least: int) -> None:
    value = spec[key]
    if value != int(value) or value < least:
        raise LocklabError(f"{option} {value:g}: program points run whole seconds "
                           f"(memcaslap's and sysbench's --time), at least {least}")
    spec[key] = int(value)


def validate(spec: dict) -> None:
    """Refuse, before anything runs or is stored, a program sweep that cannot run:
    missing programs, a lock or option the swapper refuses, durations it cannot time."""
    whole_seconds(spec, "duration", "--duration", 1)
    whole_seconds(spec, "warmup", "--warmup", 0)
    for name in spec["programs"]:
        PROGRAMS[name].check()
    swapped = [lock for lock in spec["locks"] if lock != presets.NATIVE]
    if any(spec["lock_opts"]) and not any(presets.swaps_mutexes(lk) for lk in swapped):
        raise LocklabError("--lock-opts applies to the locks that serve the servers' mutexes, "
                           "and no lock swept does (an rwlock's options go after its name: "
                           "--rwlock NAME:K=V,...)")
    if swapped:
        library = swapper_library()
        for name in spec["programs"]:
            resolve_program(PROGRAMS[name].server_path(), library, "swap its locks")
    for lock, opts in itertools.product(swapped, spec["lock_opts"]):
        check.check(point_swap(lock, opts))


def grid(spec: dict) -> list[Point]:
    """A program sweep's points, in the order they run.

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


def server_key(point: Point) -> tuple:
    return point.rep, point.workload, point.lock, point.lock_opts


def _terminated(signum, frame):
    raise Interrupted(signum)


def run(conn: sqlite3.Connection, run_id: int, spec: dict, stream: TextIO = sys.stderr) -> None:
    """Run every point of the run not stored yet, a server start per (pass, program, lock)."""
    points = grid(spec)
    done = store.done_points(conn, run_id)
    todo = [p for p in points if p not in done]
    progress = Progress(len(points), len(points) - len(todo), spec["repeat"], stream)
    previous = signal.signal(signal.SIGTERM, _terminated)
    root = Path(tempfile.mkdtemp(prefix="locklab-programs-"))
    prepared: dict[str, str | None] = {}   # program -> why it could not be prepared
    try:
        for n, (_, group) in enumerate(itertools.groupby(todo, key=server_key)):
            serve(conn, run_id, spec, list(group), root / str(n), prepared, progress)
    finally:
        progress.close()
        signal.signal(signal.SIGTERM, previous)
        shutil.rmtree(root, ignore_errors=True)
    store.finish_run(conn, run_id)


def _prepare(program: Program, root: Path, spec: dict, prepared: dict) -> None:
    """The program's once-per-sweep set-up, under ROOT; Failed (each time) if it failed."""
    if program.name not in prepared:
        place = root / program.name
        place.mkdir()
        try:
            program.prepare(place, spec)
            prepared[program.name] = None
        except Failed as e:
            prepared[program.name] = f"preparing {program.name}: {e}"
    if prepared[program.name]:
        raise Failed(prepared[program.name])


def start(program: Program, point: Point, spec: dict, workdir: Path) -> Server:
    """POINT's server, started in WORKDIR: swapped to its lock, or native."""
    port = free_port()
    if point.lock == presets.NATIVE:
        env = dict(os.environ)
    else:
        env = swap_env(point.lock, point.lock_opts, str(workdir / "swap.jsonl"),
                       program.server_path())
    if isinstance(program, MariaDB):
        program.copy_data(workdir)
    return Server(program, program.command(workdir, port, spec), env, workdir, port)


def bring_up(program: Program, point: Point, spec: dict, workdir: Path,
             prepared: dict) -> tuple[Server | None, str | None]:
    """(the server, started, listening and warmed; why that failed, or None)."""
    server = None
    try:
        _prepare(program, workdir.parent, spec, prepared)
        server = start(program, point, spec, workdir)
        server.wait_listening()
    except Failed as e:
        return server, str(e)
    try:
        if spec["warmup"]:
            program.warm(server, spec["warmup"], timeout(spec, spec["warmup"]))
    except Failed as e:
        return server, f"warm-up: {e}"
    return server, None


def serve(conn, run_id: int, spec: dict, group: list[Point], workdir: Path,
          prepared: dict, progress: Progress) -> None:
    """One server start: its points measured in turn, then its swap counts stored."""
    program = PROGRAMS[group[0].workload.removeprefix(PROGRAM)]
    began = time.monotonic()
    version = program.version()
    workdir.mkdir()
    server, stored = None, []
    try:
        server, failure = bring_up(program, group[0], spec, workdir, prepared)
        overhead = time.monotonic() - began  # counted in the first point's ETA share
        for point in group:
            progress.start(point)
            if failure:
                outcome = {"error": failure, "result": None, "raw": None, "wall_s": 0.0}
            else:
                outcome, stuck = measure(program, server, point, spec, version)
                if stuck:
                    # Its clients still hold connections, threads and locks: whatever ran
                    # next on it would measure the wreck.
                    server.kill()
                    failure = f"not run: the server was stuck ({outcome['error']})"
                elif server.gone(""):
                    failure = f"not run: the server was gone ({outcome['error']})"
            store_point(conn, run_id, point, spec["repeat"], outcome)
            stored.append(point)
            progress.finish(point, outcome["wall_s"] + overhead, outcome["error"])
            overhead = 0.0
    except BaseException:
        if server:
            server.kill()
        raise
    finally:
        if server:
            server.stop()
    stats = swap_stats(workdir / "swap.jsonl", server.pid) if server else None
    if stats and stored:
        store.record_swap_stats(conn, run_id, stored, stats)
    shutil.rmtree(workdir, ignore_errors=True)


def swap_stats(path: Path, pid: int) -> dict | None:
    """The object the swapper wrote for process PID at its exit, if it did."""
    try:
        lines = path.read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        try:
            stats = json.loads(line)
        except ValueError:
            continue
        if isinstance(stats, dict) and stats.get("pid") == pid:
            return stats
    return None


def timeout(spec: dict, seconds: int) -> float:
    """How long a load of SECONDS may take before the server is taken to be stuck: 3
    times that, plus 10 s for the clients to connect and finish (256 take ~1 s here)."""
    return spec.get("timeout") or 3 * seconds + 10


def measure(program: Program, server: Server, point: Point, spec: dict,
            version: str) -> tuple[dict, bool]:
    """One point on a running server: (keyword arguments for store.record_point, whether
    the load timed out)."""
    began = time.monotonic()
    result, cmd, error, stuck = None, None, None, False
    try:
        failed = server.gone("before the load")
        if failed:
            raise failed
        try:
            before = cpu_seconds(server.pid)
        except OSError:
            raise server.gone("before the load") or Failed("the server vanished") from None
        result, cmd = program.load(server, point.workload_opts, point.threads,
                                   spec["duration"], timeout(spec, spec["duration"]))
        failed = server.gone("during the load")
        if failed:
            raise failed
        try:
            busy = cpu_seconds(server.pid) - before
        except OSError:  # gone since the check above
            raise server.gone("during the load") or Failed("the server vanished") from None
        if result.get("duration_s"):
            result["cpu_cores"] = busy / result["duration_s"]
        error = judge(result)
    except Failed as e:
        error, stuck = str(e), isinstance(e, TimedOut)
    raw = {"server": " ".join(server.cmd), "version": version,
           "load": " ".join(cmd) if cmd else None, **(result or {})}
    return {"error": error, "result": result, "raw": json.dumps(raw),
            "wall_s": time.monotonic() - began}, stuck


def judge(result: dict) -> str | None:
    """Why a completed load does not count as a measurement, or None."""
    if result.get("said"):
        return f"the load generator said: {result['said']}"
    if result.get("client_errors"):
        return f"the load generator counted {result['client_errors']} errors"
    if result.get("client_reconnects"):
        return f"the load generator reconnected {result['client_reconnects']} times"
    if not result.get("iterations"):
        return "no request completed"
    return None


class ProgramSweep:
    """The program sweep (kinds.SweepKind)."""

    start_cost = f"{SERVER_START_S:g} s more per server start"
    monitor_refusal = ("every swapped server", "unset it")

    def workload(self, spec: dict) -> str:
        return "programs"

    def prepare(self, spec: dict, lock_for: list[str], rwlocks: list[str],
                rwlock_for: list[str]) -> None:
        locks = [*expand_locks(spec["locks"]),
                 *(site_lock(e) for e in dict.fromkeys(lock_for)),
                 *(rwlock_lock(e) for e in dict.fromkeys(rwlocks)),
                 *(presets.RWLOCK_MARK + site_lock(e, "--rwlock-for")
                   for e in dict.fromkeys(rwlock_for))]
        spec["locks"] = list(dict.fromkeys(locks))
        self.validate(spec)

    def before_resume(self, spec: dict) -> None:
        self.validate(spec)

    def validate(self, spec: dict) -> None:
        validate(spec)

    def grid(self, spec: dict) -> list[Point]:
        return grid(spec)

    def size(self, spec: dict) -> int:
        """grid's points at most: per pass, program and load test, every lock, its
        options and client count."""
        tests = sum(len(spec["program_tests"].get(name, ())) for name in spec["programs"])
        return (spec["repeat"] * tests * len(spec["locks"]) * len(spec["lock_opts"])
                * len(spec["threads"]))

    def longest_s(self, spec: dict) -> float:
        """Warming and measuring are load runs of their own, each timed alone."""
        return max(spec["duration"], spec["warmup"])

    def expected_seconds(self, spec: dict, points: list[Point]) -> float:
        # Each server start warms up once, then serves its points one window each.
        starts = len({server_key(p) for p in points})
        return starts * (SERVER_START_S + spec["warmup"]) + len(points) * spec["duration"]

    def run(self, conn: sqlite3.Connection, run_id: int, spec: dict,
            stream: TextIO = sys.stderr) -> None:
        run(conn, run_id, spec, stream)


KIND = ProgramSweep()
