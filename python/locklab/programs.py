"""`locklab sweep --preset programs`: real servers with their pthread locks swapped.

Every (pass, program, lock) of the grid (sweep.program_grid) is one server start:
the program runs on 127.0.0.1 at a free port, in a directory of its own under the
sweep's temporary directory, with liblocklab-swap.so preloaded as `locklab run`
preloads it (run.environment): the lock serves the server's mutexes, or, for a
lock 'rwlock=NAME[:K=V,...]' (sweep --rwlock), its rwlocks alone; or with nothing
preloaded for the `native` baseline.  It is warmed, driven by its load generator
at each client count in turn, and stopped; each point is stored as it ends, and
the swapper's counts, written when the server exits, are added to that server's
points afterwards.

  memcached  memcached -t 4, driven by memcaslap (get/set 9:1, 1k keys per client,
             never evicted: -m 1024)
  mariadb    mariadbd on a fresh copy of a data directory made once per sweep (one
             table of 10000 rows), driven by sysbench oltp_point_select and
             oltp_read_only over TCP

A server that does not start or dies, or a load generator that fails or counts
errors, makes a failed point whose error says why (the tail of the server's log
or of the generator's output); the sweep goes on.  Servers and load generators
run in process groups of their own (a Ctrl-C on the terminal reaches the sweep
alone), die with the sweep (PR_SET_PDEATHSIG), and are killed, their directories
removed, when Ctrl-C or SIGTERM stops it.
"""
from __future__ import annotations

import itertools
import json
import os
import re
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
import types
from pathlib import Path
from typing import TextIO

from . import native, presets, profile, store, swap, sweep
from . import run as swap_run
from .errors import Interrupted, LocklabError
from .store import Point

# How long a server may take to listen, and to exit once asked (one whose clients
# are stuck in a lock never exits: it is killed, and the swapper writes no counts).
START_S = 60.0
STOP_S = 10.0
# Options a program sweep has no use for: spec axis, as the command line spells it.
BENCH_OPTIONS = (("mutexes", "--mutexes"), ("hold_ns", "--hold-ns"),
                 ("outside_ns", "--outside-ns"), ("workload", "--workload"), ("gates", "--gate"),
                 ("workload_opts", "--workload-opts"), ("instrument", "--instrument"))


class Failed(Exception):
    """A server or load generator failed; str() is the reason stored with the point."""


class TimedOut(Failed):
    """A load generator ran past its time: the server is taken to be stuck."""


def tail(text: str, lines: int = 3) -> str:
    """The last non-empty lines of TEXT on one line: what a failure's reason quotes."""
    kept = [line.strip() for line in text.splitlines() if line.strip()][-lines:]
    return " | ".join(kept)


def file_tail(path: Path, lines: int = 3) -> str:
    try:
        return tail(path.read_text(errors="replace"), lines)
    except OSError:
        return ""


def exit_text(status: int) -> str:
    if status < 0:
        return f"was killed by {signal.Signals(-status).name}"
    return f"exited with status {status}"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def cpu_seconds(pid: int) -> float:
    """utime + stime of a process, all its threads, from /proc/PID/stat."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def spawn(cmd: list[str], **kwargs) -> subprocess.Popen:
    """CMD in a process group of its own, killed when the sweep dies."""
    return subprocess.Popen(cmd, stdin=subprocess.DEVNULL, start_new_session=True,
                            preexec_fn=sweep.die_with(os.getpid()), **kwargs)


def kill_group(proc: subprocess.Popen) -> None:
    """SIGKILL to PROC's whole process group, then reap PROC."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait()


def run_tool(cmd: list[str], timeout: float, env: dict | None = None) -> tuple[str, str]:
    """Run a load generator or set-up tool; (stdout, stderr), or Failed saying why not."""
    name = Path(cmd[0]).name
    try:
        proc = spawn(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    except OSError as e:
        raise Failed(f"{name}: {e.strerror}") from None
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        kill_group(proc)
        raise TimedOut(f"{name} timed out after {timeout:g} s, killed") from None
    except BaseException:
        kill_group(proc)
        raise
    if proc.returncode != 0:
        said = tail(err) or tail(out)
        raise Failed(f"{name} {exit_text(proc.returncode)}" + (f": {said}" if said else ""))
    return out, err


def _number(pattern: str, text: str, kind=float):
    found = re.search(pattern, text, re.MULTILINE)
    return kind(found.group(1)) if found else None


class Server:
    """One started server process, its port and directory."""

    def __init__(self, program: "Program", cmd: list[str], env: dict, workdir: Path, port: int):
        self.program, self.cmd, self.workdir, self.port = program, cmd, workdir, port
        self.log = workdir / "server.log"
        with open(self.log, "wb") as log:
            try:
                self.proc = spawn(cmd, env=env, cwd=workdir, stdout=log, stderr=subprocess.STDOUT)
            except OSError as e:
                raise Failed(f"{cmd[0]}: {e.strerror}") from None

    @property
    def pid(self) -> int:
        return self.proc.pid

    def said(self) -> str:
        return self.program.log_tail(self)

    def gone(self, when: str) -> Failed | None:
        """Failed if the server has exited (WHEN: where we noticed), else None."""
        status = self.proc.poll()
        if status is None:
            return None
        said = self.said()
        return Failed(f"the server {exit_text(status)} {when}" + (f": {said}" if said else ""))

    def wait_listening(self, timeout: float = START_S) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            failed = self.gone("before listening")
            if failed:
                raise failed
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.5):
                    return
            except OSError:
                time.sleep(0.05)
        said = self.said()
        raise Failed(f"the server was not listening on 127.0.0.1:{self.port} after "
                     f"{timeout:g} s" + (f": {said}" if said else ""))

    def stop(self) -> None:
        """Ask the server to exit (SIGTERM: memcached and mariadbd exit cleanly, and the
        swapper writes its counts); SIGKILL after STOP_S, or at once if interrupted."""
        try:
            if self.proc.poll() is None:
                self.proc.send_signal(signal.SIGTERM)
                self.proc.wait(timeout=STOP_S)
        except subprocess.TimeoutExpired:
            pass
        finally:
            kill_group(self.proc)  # whatever is left in its group, and the reaping

    def kill(self) -> None:
        kill_group(self.proc)


class Program:
    """A server, its load generator, and how to drive one with the other."""

    name = ""
    server_names: tuple[str, ...] = ()
    server_env = ""          # the variable that names another server binary
    packages = ""            # what `make setup` installs for it
    tools: dict[str, tuple[str, ...]] = {}   # role -> the names to look for

    def server_path(self) -> str:
        given = os.environ.get(self.server_env)
        if given:
            if not (os.path.isfile(given) and os.access(given, os.X_OK)):
                raise LocklabError(f"{self.server_env}={given}: not an executable file")
            return given
        for name in self.server_names:
            found = shutil.which(name) or shutil.which(name, path="/usr/sbin:/sbin")
            if found:
                return found
        raise LocklabError(f"{self.server_names[0]}: command not found "
                           f"({self.packages}: make setup installs them)")

    def tool(self, role: str) -> str:
        for name in self.tools[role]:
            found = shutil.which(name)
            if found:
                return found
        raise LocklabError(f"{self.tools[role][0]}: command not found "
                           f"({self.packages}: make setup installs them)")

    def check(self) -> None:
        """Refuse, before the run is stored, a program that cannot be run."""
        self.server_path()
        for role in self.tools:
            self.tool(role)

    def version(self) -> str:
        """The server's own word on its version (memcached 1.6.18), asked once."""
        if self._version is None:
            try:
                out = subprocess.run([self.server_path(), *self.version_args],
                                     capture_output=True, text=True, timeout=30).stdout
            except (OSError, subprocess.TimeoutExpired):
                out = ""
            self._version = tail(out, 1)
        return self._version

    _version: str | None = None

    version_args: tuple[str, ...] = ("--version",)

    # What a subclass defines.
    def prepare(self, root: Path, spec: dict) -> None:
        """Once per sweep, before the program's first server start."""

    def command(self, workdir: Path, port: int, spec: dict) -> list[str]:
        raise NotImplementedError

    def warm(self, server: Server, seconds: int, timeout: float) -> None:
        """Load it, unmeasured, for SECONDS after its start."""
        raise NotImplementedError

    def load(self, server: Server, test: str, clients: int, seconds: int,
             timeout: float) -> tuple[dict, list[str]]:
        """One measured load: (result keys as store.record_point takes them, the command)."""
        raise NotImplementedError

    def log_tail(self, server: Server) -> str:
        return file_tail(server.log)


def as_root() -> bool:
    return os.geteuid() == 0


class Memcached(Program):
    name = "memcached"
    server_names = ("memcached",)
    server_env = "LOCKLAB_MEMCACHED"
    packages = "memcached, libmemcached-tools"
    tools = {"load": ("memcaslap", "memaslap")}
    version_args = ("-V",)
    THREADS = 4        # memcached's default worker threads
    WINDOW = "1k"      # keys per client, each set before it is read

    def command(self, workdir: Path, port: int, spec: dict) -> list[str]:
        # -m: every key of 256 clients x 1k keys (~1.1 KB each) fits, so a get that
        # misses is a key the server lost, not an eviction; -c: a connection per client.
        conns = max(1024, max(spec["threads"]) + 64)
        return [self.server_path(), "-l", "127.0.0.1", "-p", str(port), "-t", str(self.THREADS),
                "-U", "0", "-m", "1024", "-c", str(conns), *(["-u", "root"] if as_root() else [])]

    def _slap(self, server: Server, clients: int, seconds: int) -> list[str]:
        # memcaslap wants the clients a multiple of its threads: 2 threads, or 1.
        threads = 2 if clients % 2 == 0 else 1
        return [self.tool("load"), "-s", f"127.0.0.1:{server.port}", "-t", f"{seconds}s",
                "-S", f"{seconds}s", "-T", str(threads), "-c", str(clients), "-w", self.WINDOW]

    def warm(self, server: Server, seconds: int, timeout: float) -> None:
        run_tool(self._slap(server, 16, seconds), timeout)

    def load(self, server, test, clients, seconds, timeout):
        cmd = self._slap(server, clients, seconds)
        out, err = run_tool(cmd, timeout)
        return parse_memcaslap(out, err), cmd


def parse_memcaslap(out: str, err: str) -> dict:
    """memcaslap's summary: ops/s, and the 99th percentile from its histogram.

    memcaslap keeps latencies in power-of-two buckets of microseconds, bucket k
    holding (2^(k-1), 2^k] us: the p99 stored is the upper edge of the bucket that
    holds the 99th percentile, a bound within a factor of 2.  It counts no failed
    request; a get that misses (get_misses) is a key the server lost, counted as
    an error, and anything it writes on stderr fails the point too.
    """
    ops = _number(r"^Run time: \S+ Ops: (\d+)", out, int)
    tps = _number(r"^Run time: .* TPS: (\d+)", out, int)
    run_s = _number(r"^Run time: ([\d.]+)s", out)
    if ops is None or tps is None:
        raise Failed(f"no summary in memcaslap's output: {tail(err) or tail(out)}")
    result = {"ops_per_sec": float(tps), "iterations": ops, "duration_s": run_s,
              "client_errors": _number(r"^get_misses: (\d+)", out, int),
              "client_reconnects": None}
    block = out.split("Total Statistics (")[-1] if "Total Statistics (" in out else ""
    events = _number(r"^(\d+) events\)", block, int)
    dist: dict[int, int] = {}
    head = block.find("Log2 Dist:")
    if events and head >= 0:
        for line in block[head:].splitlines()[1:]:
            first, _, counts = line.partition(":")
            if not first.strip().isdigit():
                break
            for k, count in enumerate(counts.split(), start=int(first)):
                dist[k] = int(count)
    if dist:
        seen, need = 0, 0.99 * sum(dist.values())
        for k in sorted(dist):
            seen += dist[k]
            if seen >= need:
                result["latency_ns_p99"] = float(2 ** k * 1000)
                break
    max_us = _number(r"^\s+Max:\s+(\d+)", block)
    result["latency_ns_max"] = max_us * 1000 if max_us is not None else None
    stray = tail(err)
    if stray:
        result["said"] = stray
    return result


class MariaDB(Program):
    name = "mariadb"
    server_names = ("mariadbd", "mysqld")
    server_env = "LOCKLAB_MARIADBD"
    packages = "mariadb-server, sysbench"
    tools = {"install": ("mariadb-install-db", "mysql_install_db"), "load": ("sysbench",)}
    TABLE_SIZE = 10000
    INNODB = ("--innodb-buffer-pool-size=128M", "--innodb-log-file-size=48M")

    def prepare(self, root: Path, spec: dict) -> None:
        """A data directory with sysbench's table (1 x 10000 rows), made by a native
        server; every start copies it (0.1 s beside the start's 0.3 s here): each lock's
        server starts from the same files, whatever the one before left behind."""
        self.data = root / "data"
        user = ["--user=root"] if as_root() else []
        run_tool([self.tool("install"), "--no-defaults", *user, f"--datadir={self.data}",
                  "--auth-root-authentication-method=normal", *self.INNODB], timeout=300)
        work = root / "prepare"
        work.mkdir()
        port = free_port()
        server = Server(self, self.command(work, port, spec, self.data), dict(os.environ), work,
                        port)
        try:
            server.wait_listening()
            run_tool([*self.sysbench(server, "oltp_read_only"), "prepare"], timeout=300)
        except BaseException:
            server.kill()
            raise
        server.stop()
        if server.proc.returncode != 0:
            raise Failed(f"the server that prepared the table {exit_text(server.proc.returncode)}"
                         f": {self.log_tail(server)}")

    def command(self, workdir: Path, port: int, spec: dict, data: Path | None = None) -> list[str]:
        user = ["--user=root"] if as_root() else []
        return [self.server_path(), "--no-defaults", *user, f"--datadir={data or workdir / 'data'}",
                # Relative: in the data directory, whatever the length of its path (a
                # socket's is at most 107 bytes); the clients come over TCP.
                "--socket=mysqld.sock", f"--port={port}", "--bind-address=127.0.0.1",
                "--skip-grant-tables", "--skip-log-bin", "--skip-name-resolve",
                f"--max-connections={max(spec['threads']) + 64}",
                f"--log-error={workdir / 'error.log'}", f"--pid-file={workdir / 'pid'}",
                *self.INNODB]

    def copy_data(self, workdir: Path) -> None:
        shutil.copytree(self.data, workdir / "data", symlinks=True)

    def sysbench(self, server: Server, test: str) -> list[str]:
        return [self.tool("load"), test, "--db-driver=mysql", "--mysql-host=127.0.0.1",
                f"--mysql-port={server.port}", "--mysql-user=root", "--mysql-db=test",
                "--tables=1", f"--table-size={self.TABLE_SIZE}"]

    def warm(self, server: Server, seconds: int, timeout: float) -> None:
        run_tool([*self.sysbench(server, "oltp_point_select"), "--threads=4",
                  f"--time={seconds}", "run"], timeout)

    def load(self, server, test, clients, seconds, timeout):
        cmd = [*self.sysbench(server, test), f"--threads={clients}", f"--time={seconds}",
               "--percentile=99", "run"]
        out, err = run_tool(cmd, timeout)
        return parse_sysbench(out, err), cmd

    def log_tail(self, server: Server) -> str:
        """Its error log's [ERROR] lines (without their time stamps), else what it said."""
        try:
            text = (server.workdir / "error.log").read_text(errors="replace")
        except OSError:
            text = ""
        errors = "\n".join(line[line.index("[ERROR]"):] for line in text.splitlines()
                           if "[ERROR]" in line)
        return tail(errors) or file_tail(server.log) or tail(text)


def parse_sysbench(out: str, err: str) -> dict:
    """sysbench's summary: queries/s, its 99th percentile (a histogram of 1024
    logarithmic buckets from 1 us to 100 s: about 2% apart), errors and reconnects."""
    qps = _number(r"^\s*queries:\s+\d+\s+\(([\d.]+) per sec", out)
    queries = _number(r"^\s*queries:\s+(\d+)", out, int)
    if qps is None:
        raise Failed(f"no summary in sysbench's output: {tail(err) or tail(out)}")
    p99 = _number(r"^\s*99th percentile:\s+([\d.]+)", out)
    top = _number(r"^\s*max:\s+([\d.]+)", out)
    return {"ops_per_sec": qps, "iterations": queries,
            "duration_s": _number(r"^\s*total time:\s+([\d.]+)s", out),
            "transactions_per_sec": _number(r"^\s*transactions:\s+\d+\s+\(([\d.]+) per sec", out),
            "latency_ns_p99": p99 * 1e6 if p99 is not None else None,
            "latency_ns_max": top * 1e6 if top is not None else None,
            "client_errors": _number(r"^\s*ignored errors:\s+(\d+)", out, int),
            "client_reconnects": _number(r"^\s*reconnects:\s+(\d+)", out, int)}


PROGRAMS: dict[str, Program] = {p.name: p for p in (Memcached(), MariaDB())}


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
    wanted = {presets.ALL, presets.PARKS}
    served = ([a for a in native.algorithms() if swappable(a["name"])]
              if wanted & set(locks) else [])
    return presets.resolve_locks([presets.NATIVE, *locks], served)


SITE_MARK = "@"   # 'NAME[:K=V,...]@SITE': NAME serves the mutexes named SITE, glibc the rest


def site_lock(entry: str) -> str:
    """--lock-for 'SITE=NAME[:K=V,...]' as a point's lock: 'NAME[:K=V,...]@SITE'."""
    split = swap.split_entry(entry)
    if not split or not split[0]:
        raise LocklabError(f"--lock-for {entry!r}: not SITE=NAME[:K=V,...]")
    return f"{split[1]}{SITE_MARK}{split[0]}"


def rwlock_lock(entry: str) -> str:
    """--rwlock 'NAME[:K=V,...]' as a point's lock: 'rwlock=NAME[:K=V,...]'."""
    name = entry.partition(":")[0]
    if not name.strip() or SITE_MARK in entry or ";" in entry:
        raise LocklabError(f"--rwlock {entry!r}: not NAME[:K=V,...] (locklab list --rwlock "
                           "names the rwlocks)")
    return presets.RWLOCK_MARK + entry


def swap_env(lock: str, opts: str, stats: str | None,
             program: str | None = None) -> dict[str, str]:
    """The environment `locklab run --lock LOCK --lock-opts OPTS --stats-json STATS` gives;
    for a site's lock (site_lock), `locklab run --lock-for SITE=NAME` with PROGRAM's
    mangled names of SITE (swap.mangled_sites); for an rwlock's (rwlock_lock),
    `locklab run --rwlock NAME[:K=V,...]`, the mutexes glibc's (OPTS is theirs: unused)."""
    args = types.SimpleNamespace(lock=lock, lock_opts=opts, lock_for=[], stats=False,
                                 stats_json=stats, rwlock=None, rwlock_opts=None)
    if lock.startswith(presets.RWLOCK_MARK):
        args.lock, args.lock_opts = None, None
        args.rwlock = lock.removeprefix(presets.RWLOCK_MARK)
        swap.split_rwlock(args)
        return swap_run.environment(args, swap.library_path())
    if SITE_MARK not in lock and ":" in lock:   # 'NAME:K=V,...': the lock's own options
        lock, own = lock.split(":", 1)
        args.lock, args.lock_opts = lock, ",".join(o for o in (own, opts) if o)
    if SITE_MARK in lock:
        name, site = lock.split(SITE_MARK, 1)
        if opts and ":" not in name:
            name += ":" + opts
        args.lock, args.lock_opts, args.lock_for = None, None, [f"{site}={name}"]
        if program:
            swap.mangled_sites(args, Path(program))
    return swap_run.environment(args, swap.library_path())


def swappable(lock: str) -> bool:
    try:
        swap.check_lock(swap_env(lock, "", None))
    except LocklabError:
        return False
    return True


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
        library = swap.library_path()
        for name in spec["programs"]:
            profile.resolve_program(PROGRAMS[name].server_path(), library=library,
                                    verb="swap its locks")
    for lock, opts in itertools.product(swapped, spec["lock_opts"]):
        swap.check_lock(swap_env(lock, opts, None))


def server_key(point: Point) -> tuple:
    return point.rep, point.workload, point.lock, point.lock_opts


def _terminated(signum, frame):
    raise Interrupted(signum)


def run(conn: sqlite3.Connection, run_id: int, spec: dict, stream: TextIO = sys.stderr) -> None:
    """Run every point of the run not stored yet, a server start per (pass, program, lock)."""
    points = sweep.grid(spec)
    done = store.done_points(conn, run_id)
    todo = [p for p in points if p not in done]
    progress = sweep.Progress(len(points), len(points) - len(todo), spec["repeat"], stream)
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
          prepared: dict, progress: sweep.Progress) -> None:
    """One server start: its points measured in turn, then its swap counts stored."""
    program = PROGRAMS[group[0].workload.removeprefix(sweep.PROGRAM)]
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
            try:
                store.record_point(conn, run_id, point, **outcome)
            except sqlite3.IntegrityError:
                raise LocklabError(f"{sweep.label(point, spec['repeat'])} is already in run "
                                   f"{run_id}: is another sweep filling it?") from None
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
