"""`locklab profile -p PID`: the lock contention of a process that is already running,
traced by locklab-attach (src/attach/: eBPF on the futex calls of its threads).

The tracer writes its reports in the preload profiler's shapes, with file:line already
beside every frame: its text goes to the output as it comes; its JSON (one report per
line: the interval reports, then the last) is wrapped as `locklab profile --json`
wraps a run's, or turned into folded stacks or a pprof profile (formats.py); its
timeline of waits into a Perfetto trace (trace.py).  It runs in a session of its own:
the signals that end a trace (a Ctrl-C on the terminal, SIGTERM, SIGHUP, SIGQUIT)
reach it through us, once each, and it detaches and reports.
"""
from __future__ import annotations

import json
import signal
import subprocess
import sys
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from ..errors import LocklabError
from ..launch.process import exit_status, exit_text, spawn_group
from ..native import native_dir, native_file
from . import lines
from .formats import folded, pprof
from .reports import has_events
from .session import ProfilerSettings
from .trace import write_timeline

TOOL = "locklab-attach"
# What ends a trace with its report; passed on to the tracer.
STOPS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT)


@dataclass(frozen=True)
class Readiness:
    """The tracer's own answer (`locklab-attach --check --json`): whether this install
    has it (NOTE: why not) and whether it can trace on this machine (PROBLEM: why not)."""

    built: bool
    ready: bool
    note: str | None = None
    problem: str | None = None

    def summary(self) -> str:
        """One line for `locklab profile --help`."""
        if not self.built:
            return f"-p PID: not available, {TOOL} was not built: {self.note}"
        if not self.ready:
            return f"-p PID: this machine cannot trace now: {self.problem}"
        return "-p PID: this machine can trace."


def readiness() -> Readiness | None:
    """Whether -p can work here; None where this install has no tracer program at all
    (a build directory from before it, a stand-in native directory)."""
    path = native_dir() / TOOL
    if not path.is_file():
        return None
    try:
        proc = subprocess.run([str(path), "--check", "--json"], capture_output=True, text=True,
                              timeout=60)
        doc = json.loads(proc.stdout)
        return Readiness(bool(doc["built"]), bool(doc["ready"]), doc.get("note"),
                         doc.get("problem"))
    except (OSError, subprocess.TimeoutExpired, ValueError, KeyError, TypeError):
        return Readiness(False, False, note=f"{path} --check gave no answer")


def unbuilt_entry() -> dict | None:
    """`locklab list`'s entry for a tracer this build left out, in the style of the
    peer locks left out (None where it was built, or where there is no tracer)."""
    known = readiness()
    if known is None or known.built:
        return None
    return {"name": TOOL, "kind": "tool", "built": False, "summary": f"not built: {known.note}",
            "note": known.note, "knobs": []}


def tracer_arguments(pid: int, duration: float | None, settings: ProfilerSettings) -> list[str]:
    """The tracer's options for what SETTINGS ask (those the preload profiler takes
    that make sense attached: not the hold sampling, not the report signal)."""
    args = ["-p", str(pid)]
    for option, value in (("--duration", duration), ("--interval", settings.interval),
                          ("--stack-depth", settings.stack_depth), ("--depth", settings.depth),
                          ("--top", settings.top), ("--min-wait", settings.min_wait)):
        if value is not None:
            args += [option, str(value)]
    if settings.threads:
        args.append("--threads")
    return args


def lines_of(report: dict) -> dict[str, list[lines.Line]]:
    """Per frame name, its lines as the tracer wrote them beside its stacks (the shape
    lines.resolve gives for a preloaded run's)."""
    where: dict[str, list[lines.Line]] = {}

    def add(frame: str, known) -> None:
        if known:
            where[frame] = [lines.Line(ln["function"], ln["file"], ln["line"]) for ln in known]

    for lock in report["locks"]:
        for entry in lock["events"] + lock["holders"]:
            for frame, known in zip(entry["stack"], entry.get("lines", [])):
                add(frame, known)
        if "site" in lock:
            add(lock["site"], lock.get("site_lines"))
    return where


class _Relay(threading.Thread):
    """The tracer's stderr, line by line, as ours: `locklab: ...`."""

    def __init__(self, stream):
        super().__init__(daemon=True)
        self.stream, self.said = stream, 0

    def run(self) -> None:
        for line in self.stream:
            text = line.rstrip("\n").removeprefix(f"{TOOL}: ")
            if text:
                print(f"locklab: {text}", file=sys.stderr, flush=True)
                self.said += 1


class _Stops:
    """While the tracer runs: each stop signal we get is passed on to it (one that
    comes before it has started, as soon as it has), and none stops us."""

    def __init__(self):
        self.proc: subprocess.Popen | None = None
        self.pending: list[int] = []
        self.before: dict = {}

    def __enter__(self) -> _Stops:
        self.before = {s: signal.signal(s, self._got) for s in STOPS}
        return self

    def __exit__(self, *exc) -> None:
        for s, handler in self.before.items():
            signal.signal(s, handler)

    def _got(self, sig: int, _frame) -> None:
        if self.proc is None:
            self.pending.append(sig)
        elif self.proc.poll() is None:
            self.proc.send_signal(sig)

    def started(self, proc: subprocess.Popen) -> None:
        self.proc = proc
        for sig in self.pending:
            proc.send_signal(sig)


def run(pid: int, duration: float | None, settings: ProfilerSettings, fmt: str, out: BinaryIO,
        folded_lines: bool = False, trace: str | None = None) -> int:
    """Trace process PID until DURATION seconds have passed (None: until a stop signal
    or its exit) and write its report to OUT in FMT (session.FORMATS), the timeline
    of its waits to TRACE; our exit status: 0, or the tracer's, having said why."""
    tool = native_file(TOOL)
    with tempfile.TemporaryDirectory(prefix="locklab-attach-") as d:
        args = [str(tool), *tracer_arguments(pid, duration, settings)]
        if fmt != "text":
            args.append("--json")
        timeline = Path(d) / "timeline.json"
        if trace:
            args += ["--trace", str(timeline), "--trace-events", str(settings.trace_events)]
        out.flush()
        with _Stops() as stops:
            proc = spawn_group(args, stdout=subprocess.PIPE if fmt != "text" else out,
                               stderr=subprocess.PIPE, text=True)
            stops.started(proc)
            relay = _Relay(proc.stderr)
            relay.start()
            if duration is None and sys.stderr.isatty():
                print(f"locklab: tracing process {pid}; Ctrl-C ends the trace and reports",
                      file=sys.stderr, flush=True)
            last = _reports(proc, fmt, out) if fmt != "text" else None
            status = proc.wait()
            relay.join()
        if status != 0:
            if status < 0 or not relay.said:
                print(f"locklab: {TOOL} {exit_text(status)}", file=sys.stderr)
            return exit_status(status)
        if fmt == "text":
            return 0
        if last is None:
            raise LocklabError(f"{TOOL} ended without a report")
        _final(last, fmt, out, folded_lines)
        if trace:
            write_timeline(trace, [(last, json.loads(timeline.read_text()))]
                           if timeline.exists() else [], tool=TOOL)
    return 0


def _reports(proc: subprocess.Popen, fmt: str, out: BinaryIO) -> dict | None:
    """The tracer's JSON reports as they come: the interval ones streamed (JSON only),
    the last returned (a line cut short by the tracer's death is no report: its
    status says what happened)."""
    last = None
    for line in proc.stdout:
        try:
            report = json.loads(line)
        except ValueError:
            continue
        last = report
        if last["reason"] == "interval" and fmt == "json":
            out.write((json.dumps(last) + "\n").encode())
            out.flush()
    return last


def _final(report: dict, fmt: str, out: BinaryIO, folded_lines: bool) -> None:
    if fmt == "json":
        doc = {"tool": TOOL, "pid": report["pid"], "lines": "libdw", "processes": [report]}
        data = (json.dumps(doc, indent=1) + "\n").encode()
    elif fmt == "folded":
        data = folded([report], lines_of(report), folded_lines).encode()
    else:
        data = pprof([report], lines_of(report))
    out.write(data)
    out.flush()
    if not has_events(report):
        took = (report["end_ns"] - report["start_ns"]) / 1e9
        print(f"locklab: no lock contention: {Path(report['exe']).name} (pid {report['pid']}) "
              f"was traced {took:.3f} s and no thread waited for a lock", file=sys.stderr)
