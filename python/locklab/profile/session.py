"""Running a program under the profiler: plockstat for Linux.

liblocklab-prof.so, preloaded, measures and names the locks and writes, at exit (and
on a signal or every interval), one text and one JSON report per process into a
private directory (reports.py); this module starts the program, streams the interim
reports, and turns the final ones into the output asked for: the library's own text,
JSON, folded stacks, or a pprof profile (formats.py).
"""
from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from ..launch.process import PassingSignals, exit_status, spawn
from ..launch.program import with_preload
from ..native import native_file
from . import lines
from .formats import folded, pprof, with_lines
from .reports import LIBRARY, Dumps, has_events, read_json, still_running
from .trace import write_trace

# The signals a report may be asked on (src/prof/control.c keeps the same list, and
# why: fatal signals would report in a loop, TERM/INT/HUP/QUIT and job control would
# be ignored; those four leave the exit report instead).
SIGNALS = {"PROF": signal.SIGPROF, "USR1": signal.SIGUSR1, "USR2": signal.SIGUSR2,
           "URG": signal.SIGURG, "WINCH": signal.SIGWINCH}
FORMATS = ("text", "json", "folded", "pprof")


def library_path() -> Path:
    return native_file(LIBRARY)


@dataclass(frozen=True)
class ProfilerSettings:
    """What liblocklab-prof.so measures and reports: its LOCKLAB_PROF_* variables
    (None: the library's default)."""

    stack_depth: int | None = None   # text: a wait histogram and this many frames per entry
    depth: int | None = None         # frames captured per stack
    hold_every: int | None = None    # hold time sampled in 1 acquisition of this many
    top: int | None = None           # entries per section, at most
    min_wait: int | None = None      # ns an entry must have waited in total to be shown
    interval: float | None = None    # seconds between reports of what happened in each
    threads: bool = False            # the per-thread breakdown
    trace_events: int = 0            # waits each thread keeps for a timeline; 0: none
    signal: int = signal.SIGPROF     # the signal that asks for a report; 0: none

    def environment(self, env: dict[str, str], dump_dir: str) -> dict[str, str]:
        """ENV with the profiler first in LD_PRELOAD (ahead of the swapper, whose locks
        it then measures), writing its reports into DUMP_DIR."""
        env = with_preload(env, library_path())
        env["LOCKLAB_PROF_DIR"] = dump_dir
        for name, value in (("STACKS", self.stack_depth), ("DEPTH", self.depth),
                            ("HOLD_EVERY", self.hold_every), ("TOP", self.top),
                            ("MIN_WAIT_NS", self.min_wait), ("INTERVAL", self.interval)):
            if value is not None:
                env[f"LOCKLAB_PROF_{name}"] = str(value)
        env["LOCKLAB_PROF_THREADS"] = "1" if self.threads else "0"
        env["LOCKLAB_PROF_TRACE"] = str(self.trace_events)
        env["LOCKLAB_PROF_SIGNAL"] = str(self.signal)
        for name in ("LOCKLAB_PROF_OUTPUT", "LOCKLAB_PROF_FORMAT"):
            env.pop(name, None)
        return env


def run(cmd: list[str], env: dict[str, str], settings: ProfilerSettings, fmt: str,
        out: BinaryIO, folded_lines: bool = False, trace: str | None = None) -> int:
    """Run CMD with the profiler on top of ENV and write its report to OUT in FMT (one
    of FORMATS; FOLDED_LINES: folded frames as `function file:line`), the timeline of
    its waits to TRACE; the program's wait status (negative: killed)."""
    d = tempfile.mkdtemp(prefix="locklab-prof-")
    keep = False
    try:
        dumps = Dumps(d)
        # Until the report is written: a signal that stops the program (a service
        # manager's TERM, sent again to every process) must not stop its report.
        with PassingSignals() as signals:
            proc = spawn(cmd, settings.environment(env, d), signals.preexec())
            status = _watch(proc, signals, dumps, fmt, out)
            # A daemon (it forked and its parent, the program, exited) writes its
            # report when it exits: keep the directory for it and say where, after
            # the reports there are.
            daemons = _daemons(d)
            keep = bool(daemons)
            _final(cmd, status, dumps, fmt, out, folded_lines, trace, daemons)
        if daemons:
            who = ", ".join(f"{name} (pid {pid})" for pid, name in daemons)
            theirs = "its report" if len(daemons) == 1 else "their reports"
            print(f"locklab: still running: {who}; {theirs} will be in {d}/ when it exits",
                  file=sys.stderr)
        return status
    finally:
        if not keep:
            shutil.rmtree(d, ignore_errors=True)


def _watch(proc: subprocess.Popen, signals: PassingSignals, dumps: Dumps, fmt: str,
           out: BinaryIO) -> int:
    """Wait for the program, streaming the interim reports in text and JSON, and passing
    on the signals we get (a Ctrl-C reached the program from the terminal: we wait for
    it to report); its wait status."""
    stream = fmt in ("text", "json")
    ext = "json" if fmt == "json" else "txt"

    def interims() -> None:
        if stream:
            for p in dumps.new(ext):
                if not p.stem.endswith("-exit"):
                    _emit(out, _interim(p, fmt))

    while True:
        status = signals.wait(proc, timeout=0.2)
        if status is not None:
            break
        interims()
    interims()  # those written just before the exit
    return status


def _daemons(d: str) -> list[tuple[int, str]]:
    """The processes left that may still report into D. The forks between the program
    and a daemon exit within moments: wait until the same processes are left."""
    daemons, deadline = still_running(d), time.monotonic() + 2.0
    while daemons and time.monotonic() < deadline:
        time.sleep(0.2)
        daemons, before = still_running(d), daemons
        if daemons == before:
            break
    return daemons


def _final(cmd: list[str], status: int, dumps: Dumps, fmt: str, out: BinaryIO,
           folded_lines: bool, trace: str | None, daemons: list) -> None:
    """The final reports in FMT: every process that saw contention (else the first)."""
    paths = dumps.finals("json")
    finals = [read_json(p) for p in paths]
    shown = [i for i, r in enumerate(finals) if has_events(r)] or [0][:len(finals)]
    reports = [finals[i] for i in shown]
    where, note = lines.resolve(reports)
    if note and fmt != "folded" or note and folded_lines:
        print(f"locklab: {note}", file=sys.stderr)
    if not finals and not daemons:
        print(f"locklab: {_no_report(status)}", file=sys.stderr)
    elif fmt == "text":
        for i in shown:
            text = paths[i].with_suffix(".txt")
            if text.exists():
                _emit(out, lines.annotate_text(text.read_text(errors="replace"), where))
    elif fmt == "json":
        doc = {"tool": "locklab-prof", "command": cmd, "status": exit_status(status),
               "lines": note or "libdw",
               "processes": [with_lines(r, where) for r in reports]}
        _emit(out, json.dumps(doc, indent=1) + "\n")
    elif fmt == "folded":
        _emit(out, folded(reports, where, folded_lines))
    else:
        _emit(out, pprof(reports, where))
    if finals and not any(has_events(r) for r in finals):
        print(f"locklab: {_no_contention(finals, status)}", file=sys.stderr)
    if trace:
        write_trace(trace, [paths[i] for i in shown], reports)


def _emit(out, data: bytes | str) -> None:
    out.write(data.encode() if isinstance(data, str) else data)
    out.flush()


def _interim(path: Path, fmt: str) -> str:
    if fmt == "json":
        return json.dumps(read_json(path)) + "\n"
    return path.read_text(errors="replace") + "\n"


def _no_report(status: int) -> str:
    """Why no process of the run left a report: only what the status shows is said."""
    if status < 0:
        name = signal.Signals(-status).name if -status in signal.Signals._value2member_map_ \
            else f"signal {-status}"
        return (f"no report: the program was killed by {name} before writing one (SIGKILL, "
                "faults and signals it handles itself and then dies of leave none; "
                "docs/profiler.md, Dying)")
    return (f"no report: no process of the run loaded {LIBRARY} (a statically linked or "
            "setuid program started by the command, or LD_PRELOAD removed on the way), so "
            "nothing was measured")


def _no_contention(finals: list[dict], status: int) -> str:
    """The honest summary of a run in which no thread ever waited for a lock."""
    who = ", ".join(f"{Path(r['exe']).name} (pid {r['pid']})" for r in finals)
    took = max((r["end_ns"] - r["start_ns"]) / 1e9 for r in finals)
    how = f"exited with status {status}" if status >= 0 else \
        f"was killed by signal {-status}"
    return (f"no lock contention: {who} ran {took:.3f} s and no thread waited for a "
            f"lock; the program {how}")
