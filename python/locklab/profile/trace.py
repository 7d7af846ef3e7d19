"""--trace: every thread's waits as a timeline that Perfetto and chrome://tracing read."""
from __future__ import annotations

import json
import sys
from pathlib import Path

from ..errors import LocklabError
from .reports import read_json


def write_trace(path: str, dumps: list[Path], reports: list[dict]) -> None:
    """The timelines the preloaded profiler left beside its DUMPS (REPORTS: theirs),
    written to PATH by write_timeline."""
    parts = []
    for dump, rep in zip(dumps, reports):
        tr = dump.with_suffix(".trace")
        if tr.exists():
            parts.append((rep, read_json(tr)))
    write_timeline(path, parts)


def write_timeline(path: str, parts: list[tuple[dict, dict]], tool: str = "locklab-prof") -> None:
    """The timeline of waits as a Chrome trace (JSON trace-event format, for Perfetto
    or chrome://tracing): one slice per wait, on its thread's track, named by its
    lock, from each (report, its process's timeline) of PARTS, as TOOL wrote them.
    Says on stderr how many waits the rings dropped (the oldest of each thread)."""
    events, dropped, kept, capacity = [], 0, 0, 0
    start = min((rep["start_ns"] for rep, _ in parts), default=0)
    for rep, tr in parts:
        pid = tr["pid"]
        capacity = tr["capacity"]
        events.append({"ph": "M", "name": "process_name", "pid": pid, "tid": 0,
                       "args": {"name": f"{Path(rep['exe']).name} [{pid}]"}})
        for th in tr["threads"]:
            events.append({"ph": "M", "name": "thread_name", "pid": pid, "tid": th["tid"],
                           "args": {"name": th["name"]}})
            dropped += th["dropped"]
            for t0, ns, lock, event in th["events"]:
                name = tr["locks"][lock]
                events.append({"ph": "X", "name": name, "cat": event, "pid": pid,
                               "tid": th["tid"], "ts": (t0 - start) / 1000, "dur": ns / 1000,
                               "args": {"lock": name, "event": event, "wait_ns": ns}})
                kept += 1
    doc = {"traceEvents": events, "displayTimeUnit": "ns",
           "otherData": {"tool": tool, "waits": kept, "dropped": dropped,
                         "per_thread": capacity}}
    try:
        Path(path).write_text(json.dumps(doc) + "\n")
    except OSError as e:
        raise LocklabError(f"--trace {path}: {e.strerror}") from None
    if not parts:
        print(f"locklab: --trace: no process left a timeline; {path} has no waits",
              file=sys.stderr)
    elif dropped:
        print(f"locklab: --trace: {dropped} older waits dropped (each thread keeps its last "
              f"{capacity}; --trace-events raises it); {kept} waits in {path}", file=sys.stderr)
