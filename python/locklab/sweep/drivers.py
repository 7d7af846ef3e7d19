"""The programs a program sweep runs (programs.py): each server, how it is started on
127.0.0.1 at a free port in a directory of its own, and its load generator.

  memcached  memcached -t 4, driven by memcaslap (get/set 9:1, 1k keys per client,
             never evicted: -m 1024)
  mariadb    mariadbd on a fresh copy of a data directory made once per sweep (one
             table of 10000 rows), driven by sysbench oltp_point_select and
             oltp_read_only over TCP

A server that does not start or dies, or a load generator that fails or counts
errors, is Failed, with why (the tail of the server's log or of the generator's
output).  Servers and load generators run in process groups of their own (a Ctrl-C
on the terminal reaches the sweep alone) and die with the sweep (PR_SET_PDEATHSIG).
"""
from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

from ..errors import LocklabError
from ..launch.net import free_port
from ..launch.process import exit_text, kill_group, spawn_group

# How long a server may take to listen, and to exit once asked (one whose clients
# are stuck in a lock never exits: it is killed, and the swapper writes no counts).
START_S = 60.0
STOP_S = 10.0


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


def cpu_seconds(pid: int) -> float:
    """utime + stime of a process, all its threads, from /proc/PID/stat."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def run_tool(cmd: list[str], timeout: float, env: dict | None = None) -> tuple[str, str]:
    """Run a load generator or set-up tool; (stdout, stderr), or Failed saying why not."""
    name = Path(cmd[0]).name
    try:
        proc = spawn_group(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
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
                self.proc = spawn_group(cmd, env=env, cwd=workdir, stdout=log,
                                        stderr=subprocess.STDOUT)
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
