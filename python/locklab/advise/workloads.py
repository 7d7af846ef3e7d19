"""What one run of the advised program is, and the figure it is judged by.

  batch     CMD runs to its end: its wall time (lower is better), or with a metric
            the number its output's last match of the metric's capture group gives
  server    CMD is a server: once it is ready (a port that accepts, or a line of
            its output), the load command runs against it and gives the figure (the
            metric in the load's output, or the load's wall time); then the server
            is asked to stop (SIGTERM) and, past STOP_S, killed
  program   memcached or MariaDB through the program sweep's drivers: a server
            started, warmed and loaded by its load generator, whose throughput
            (higher is better) is the figure; a run whose generator counts errors
            does not count

Every program runs in a process group of its own, so Ctrl-C reaches locklab alone,
and dies with it.  A run past its limit (the collapse limit) is killed: the
runner records it collapsed, not waited for.  A run under the profiler is the same
run with liblocklab-prof.so preloaded into the program (not into a load command);
its reports are read from the profiler's directory when the program has exited.
"""
from __future__ import annotations

import math
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from ..errors import LocklabError
from ..launch.net import free_port
from ..launch.process import exit_text, kill_group, spawn_group
from ..launch.program import resolve_program
from ..profile.reports import Dumps, read_json
from ..profile.session import ProfilerSettings
from ..swap.settings import library_path as swapper_library
from ..sweep import programs as program_sweep
from ..sweep.drivers import PROGRAMS, Failed, MariaDB, Server, TimedOut
from ..sweep.presets import NATIVE
from .candidates import RWLOCK
from .plan import Variant

# How long a server is given to exit once asked, before it is killed.
STOP_S = 10.0
# How the error of a run stopped at the collapse limit begins.
COLLAPSED = "collapsed: "
# How much of an output line a message quotes.
QUOTED = 200


@dataclass(frozen=True)
class Outcome:
    """One run: its figure (None when it does not count), its wall time, why it does
    not count, and whether it was stopped at the collapse limit."""

    value: float | None
    wall_s: float
    error: str | None = None
    collapsed: bool = False


def last_line(text: str) -> str:
    """The output's last non-empty line, shortened, as a message quotes it."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if not lines:
        return "(no output)"
    line = lines[-1]
    return repr(line if len(line) <= QUOTED else line[:QUOTED] + "...")


def metric_of(pattern: re.Pattern, text: str) -> float | None:
    """The number the last match of PATTERN's capture group gives in TEXT, or None."""
    found = None
    for m in pattern.finditer(text):
        found = m
    if found is None:
        return None
    try:
        value = float(found.group(1))
    except (TypeError, ValueError):
        return None
    return value if math.isfinite(value) else None


def collapsed(limit: float) -> Outcome:
    return Outcome(None, limit, f"{COLLAPSED}stopped after {limit:.3g} s (--collapse)", True)


def run_to_end(cmd: list[str], env: dict, output: Path, limit: float | None,
               cwd: str | None = None) -> tuple[int | None, float]:
    """CMD run with its stdout and stderr into OUTPUT: (its wait status, or None when
    it ran past LIMIT seconds and was killed; its wall time)."""
    with open(output, "wb") as out:
        began = time.monotonic()
        try:
            proc = spawn_group(cmd, env=env, stdout=out, stderr=subprocess.STDOUT, cwd=cwd)
        except OSError as e:
            raise LocklabError(f"{cmd[0]}: {e.strerror}") from None
        try:
            status = proc.wait(timeout=limit)
        except subprocess.TimeoutExpired:
            status = None
        finally:
            kill_group(proc)   # what it left running, or the whole run past its limit
    return status, time.monotonic() - began


class Workload:
    """One kind of run (the module's docstring); a subclass says how it runs."""

    lower_is_better = True

    def __init__(self, spec: dict):
        self.spec = spec
        self.metric = re.compile(spec["metric"]) if spec.get("metric") else None
        if self.metric is not None:
            self.lower_is_better = not spec["higher"]
        self.dir = Path(tempfile.mkdtemp(prefix="locklab-advise-"))

    def __enter__(self) -> Workload:
        return self

    def __exit__(self, *exc) -> None:
        shutil.rmtree(self.dir, ignore_errors=True)

    def program(self) -> Path:
        """The program whose locks are swapped, checked as `locklab run` checks it."""
        return resolve_program(self.spec["command"][0], swapper_library(), "swap its locks")

    def prepare(self) -> None:
        """What the workload needs once, before its first run."""

    def figure(self) -> str:
        """What a run's figure is, in words."""
        better = "lower" if self.lower_is_better else "higher"
        if self.metric is not None:
            return f"the number --metric '{self.metric.pattern}' takes from the output, " \
                   f"{better} is better"
        return f"wall time (s), {better} is better"

    def measure(self, env: dict, limit: float | None) -> Outcome:
        raise NotImplementedError

    def profile(self, env: dict, settings: ProfilerSettings) -> tuple[Outcome, list[dict]]:
        """One run under the profiler: its outcome and each process's final report."""
        dumps = self.dir / "profile"
        shutil.rmtree(dumps, ignore_errors=True)
        dumps.mkdir()
        outcome = self.measure(settings.environment(env, str(dumps)), None)
        found = Dumps(str(dumps))
        return outcome, [read_json(p) for p in found.finals("json")]

    def ended(self, status: int | None, wall_s: float, limit: float | None, output: Path,
              what: str) -> Outcome:
        """How a run of WHAT (the program, or the load) that ended with STATUS (None:
        killed at LIMIT) after WALL_S went: its figure is the metric in OUTPUT, or
        the wall time."""
        if status is None:
            return collapsed(limit)
        text = output.read_text(errors="replace")
        if status != 0:
            return Outcome(None, wall_s, f"{what} {exit_text(status)}; its last line: "
                                         f"{last_line(text)}")
        if self.metric is None:
            return Outcome(wall_s, wall_s)
        value = metric_of(self.metric, text)
        if value is None:
            return Outcome(None, wall_s, f"--metric '{self.metric.pattern}' matched no number "
                                         f"in {what}'s output; its last line: "
                                         f"{last_line(text)}")
        return Outcome(value, wall_s)


class Batch(Workload):
    def measure(self, env: dict, limit: float | None) -> Outcome:
        output, cmd = self.dir / "output", self.spec["command"]
        status, wall = run_to_end(cmd, env, output, limit, self.spec["cwd"])
        return self.ended(status, wall, limit, output, cmd[0])


class UserServer(Workload):
    """CMD a server, the load a shell command run against it once it is ready."""

    def figure(self) -> str:
        if self.metric is None:
            return "the load's wall time (s), lower is better"
        return super().figure().replace("the output", "the load's output")

    def measure(self, env: dict, limit: float | None) -> Outcome:
        cmd, log = self.spec["command"], self.dir / "server.log"
        with open(log, "wb") as out:
            try:
                server = spawn_group(cmd, env=env, stdout=out, stderr=subprocess.STDOUT,
                                     cwd=self.spec["cwd"])
            except OSError as e:
                raise LocklabError(f"{cmd[0]}: {e.strerror}") from None
        try:
            why = self.wait_ready(server, log)
            if why:
                return Outcome(None, 0.0, why)
            load_out = self.dir / "load.out"
            status, wall = run_to_end(["/bin/sh", "-c", self.spec["load"]], dict(os.environ),
                                      load_out, limit, self.spec["cwd"])
            if server.poll() is not None:
                return Outcome(None, wall, f"the server {exit_text(server.returncode)} during "
                                           f"the load; its last line: "
                                           f"{last_line(log.read_text(errors='replace'))}")
            return self.ended(status, wall, limit, load_out, "the load")
        finally:
            stop(server)

    def wait_ready(self, server: subprocess.Popen, log: Path) -> str | None:
        """None once the server is ready; else why it never was."""
        timeout = self.spec["ready_timeout"]
        deadline = time.monotonic() + timeout
        pattern = re.compile(self.spec["ready_regex"]) if self.spec.get("ready_regex") else None
        while time.monotonic() < deadline:
            if server.poll() is not None:
                return (f"the server {exit_text(server.returncode)} before it was ready; its "
                        f"last line: {last_line(log.read_text(errors='replace'))}")
            if pattern is not None:
                if pattern.search(log.read_text(errors="replace")):
                    return None
            else:
                try:
                    with socket.create_connection(("127.0.0.1", self.spec["ready_port"]),
                                                  timeout=0.5):
                        return None
                except OSError:
                    pass
            time.sleep(0.05)
        how = (f"no line of its output matched --ready-regex {pattern.pattern!r}"
               if pattern is not None else
               f"nothing accepted on 127.0.0.1:{self.spec['ready_port']} (--ready-port)")
        return f"the server was not ready after {timeout:g} s (--ready-timeout): {how}"


def stop(server: subprocess.Popen) -> None:
    """Ask a server to exit (SIGTERM: it cleans up, the profiler reports); kill its
    process group past STOP_S, or at once on Ctrl-C."""
    try:
        if server.poll() is None:
            server.send_signal(signal.SIGTERM)
            server.wait(timeout=STOP_S)
    except subprocess.TimeoutExpired:
        pass
    finally:
        kill_group(server)


class DrivenProgram(Workload):
    """memcached or MariaDB, started and loaded as the program sweep does."""

    lower_is_better = False

    def __init__(self, spec: dict):
        super().__init__(spec)
        self.driven = PROGRAMS[spec["program"]]
        # The drivers size the server's connections by the sweep's client counts.
        self.sweep_spec = {"threads": [spec["clients"]], "timeout": None}

    def program(self) -> Path:
        self.driven.check()
        return resolve_program(self.driven.server_path(), swapper_library(), "swap its locks")

    def figure(self) -> str:
        from ..report.programs import UNITS
        unit, driver = UNITS[self.driven.name]
        return f"{driver}'s {unit} at {self.spec['clients']} clients, higher is better"

    def prepare(self) -> None:
        place = self.dir / "prepared"
        place.mkdir()
        try:
            self.driven.prepare(place, self.sweep_spec)
        except Failed as e:
            raise LocklabError(f"preparing {self.driven.name}: {e}") from None

    def measure(self, env: dict, limit: float | None) -> Outcome:
        workdir = self.dir / "server"
        shutil.rmtree(workdir, ignore_errors=True)
        workdir.mkdir()
        port = free_port()
        if isinstance(self.driven, MariaDB):
            self.driven.copy_data(workdir)
        seconds = self.spec["duration"]
        timeout = limit or program_sweep.timeout(self.sweep_spec, seconds)
        server = None
        try:
            server = Server(self.driven, self.driven.command(workdir, port, self.sweep_spec),
                            env, workdir, port)
            server.wait_listening()
            if self.spec["warmup"]:
                self.driven.warm(server, self.spec["warmup"],
                                 program_sweep.timeout(self.sweep_spec, self.spec["warmup"]))
            began = time.monotonic()
            result, _ = self.driven.load(server, self.spec["test"], self.spec["clients"],
                                         seconds, timeout)
            wall = time.monotonic() - began
            gone = server.gone("during the load")
            error = str(gone) if gone else program_sweep.judge(result)
            return Outcome(None if error else result["ops_per_sec"], wall, error)
        except TimedOut:
            return collapsed(timeout)
        except Failed as e:
            return Outcome(None, 0.0, str(e))
        finally:
            if server is not None:
                server.stop()


def command_for(spec: dict, variant: Variant) -> str:
    """The command that reproduces VARIANT: `locklab run` with its options on the
    program (on the server, for a server and its load); for memcached and MariaDB the
    program sweep's points of native and the variant."""
    if not spec.get("program"):
        return shlex.join(["locklab", "run", *variant.run_options(), "--", *spec["command"]])
    locks, more = [NATIVE], []
    if variant.site:
        more = [f"--{'rwlock' if variant.kind == RWLOCK else 'lock'}-for",
                f"{variant.site}={variant.lock}"]
    elif variant.kind == RWLOCK:
        more = ["--rwlock", variant.lock]
    else:
        locks.append(variant.lock)
    return shlex.join(["locklab", "sweep", "--program", spec["program"], "--locks",
                       ",".join(locks), *more, "--clients", str(spec["clients"]),
                       "--duration", f"{spec['duration']:g}", "--repeat", str(spec["passes"])])


def of(spec: dict) -> Workload:
    if spec.get("program"):
        return DrivenProgram(spec)
    if spec.get("load"):
        return UserServer(spec)
    return Batch(spec)
