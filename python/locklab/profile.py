"""`locklab profile -- CMD`: plockstat for Linux.

Runs CMD with liblocklab-prof.so preloaded.  The library measures and names the
locks and writes, at exit (and on a signal or every --interval seconds), one text
and one JSON report per process into a private directory; this module starts the
program, streams the interim reports, and turns the final ones into the output
asked for: the library's own text, JSON, folded stacks, or a pprof profile.
"""
from __future__ import annotations

import argparse
import errno
import gzip
import json
import math
import os
import resource
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from . import lines, swap
from .errors import LocklabError
from .native import preload_path

LIBRARY = "liblocklab-prof.so"
# The signals a report may be asked on (src/prof/control.c keeps the same list, and
# why: fatal signals would report in a loop, TERM/INT/HUP/QUIT and job control would
# be ignored; those four leave the exit report instead).
SIGNALS = {"PROF": signal.SIGPROF, "USR1": signal.SIGUSR1, "USR2": signal.SIGUSR2,
           "URG": signal.SIGURG, "WINCH": signal.SIGWINCH}
SIGNALS_VALID = f"{', '.join(SIGNALS)}, their numbers, or 0 for none"
LIMIT = (1 << 63) - 1
TRACE_EVENTS = 1 << 14  # waits kept per thread for --trace
INTERVAL = (0.01, 86400.0)


def _whole(lo: int, hi: int, meaning: str = ""):
    """An argparse type: a whole number in [lo, hi], else one line naming the range."""
    def parse(text: str) -> int:
        valid = f"valid: {lo}-{hi}{meaning}"
        try:
            value = int(text, 10)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number ({valid})") \
                from None
        if not lo <= value <= hi:
            raise argparse.ArgumentTypeError(f"{text} is out of range ({valid})")
        return value
    return parse


def _seconds(text: str) -> float:
    lo, hi = INTERVAL
    valid = f"valid: {lo:g}-{hi:g} seconds"
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number ({valid})") from None
    if not math.isfinite(value) or not lo <= value <= hi:
        raise argparse.ArgumentTypeError(f"{text} is out of range ({valid})")
    return value


def signal_number(text: str) -> int:
    """PROF, SIGPROF, 27 or 0 (none): the report signal; refused with one line."""
    name = text.upper().removeprefix("SIG")
    if text == "0":
        return 0
    if text.isdigit() and int(text) in SIGNALS.values():
        return int(text)
    if name in SIGNALS:
        return SIGNALS[name]
    raise argparse.ArgumentTypeError(f"unknown report signal {text!r} (valid: {SIGNALS_VALID})")


def library_path() -> Path:
    return preload_path(LIBRARY)


def elf_class(path: Path) -> int:
    """1 or 2 (ELFCLASS32/64) of an ELF file; 0 when it is not ELF."""
    with open(path, "rb") as f:
        head = f.read(5)
    return head[4] if head[:4] == b"\x7fELF" else 0


def is_static(path: Path) -> bool:
    """True for an ELF executable the dynamic loader never sees (no PT_INTERP)."""
    with open(path, "rb") as f:
        data = f.read(1 << 16)
    wide = data[4] == 2
    little = data[5] == 1
    end = "<" if little else ">"
    if wide:
        phoff, = struct.unpack_from(end + "Q", data, 32)
        phentsize, phnum = struct.unpack_from(end + "HH", data, 54)
    else:
        phoff, = struct.unpack_from(end + "I", data, 28)
        phentsize, phnum = struct.unpack_from(end + "HH", data, 42)
    with open(path, "rb") as f:
        f.seek(phoff)
        table = f.read(phentsize * phnum)
    for i in range(phnum):
        p_type, = struct.unpack_from(end + "I", table, i * phentsize)
        if p_type == 3:  # PT_INTERP
            return False
    return True


def resolve_program(cmd: str, library: Path | None = None, verb: str = "profile it") -> Path:
    """CMD as the shell would find it, checked: LD_PRELOAD must be able to reach it
    (LIBRARY: the one to preload, this module's by default; VERB: what a dynamically
    linked rebuild would let us do)."""
    found = cmd if "/" in cmd else shutil.which(cmd)
    if not found or not os.path.exists(found):
        raise LocklabError(f"{cmd}: command not found")
    path = Path(found)
    if path.is_dir() or not os.access(path, os.X_OK):
        raise LocklabError(f"{cmd}: not an executable file")
    kind = elf_class(path)
    if kind == 0:
        return path  # a script: its interpreter is what gets the library
    library = library or library_path()
    ours = elf_class(library)
    if kind != ours:
        bits = {1: 32, 2: 64}
        raise LocklabError(f"{cmd} is a {bits.get(kind, '?')}-bit program; {library.name} is "
                           f"{bits.get(ours, '?')}-bit and cannot be loaded into it")
    if is_static(path):
        raise LocklabError(f"{cmd} is statically linked: LD_PRELOAD cannot reach its locks "
                           f"(rebuild it dynamically linked to {verb})")
    if path.stat().st_mode & 0o6000:
        raise LocklabError(f"{cmd} is setuid or setgid: the loader ignores LD_PRELOAD for "
                           "it, so its locks cannot be reached")
    return path


def environment(args, dump_dir: str) -> dict[str, str]:
    env = dict(os.environ)
    if swap.wanted(args):
        # The profiler in front: the program's calls reach it first, and it calls the
        # next pthread_mutex_lock (dlsym RTLD_NEXT), the swapper's, which locks.
        env = swap.environment(env, args, swap.library_path(), behind=str(library_path()))
    else:
        preload = env.get("LD_PRELOAD", "")
        env["LD_PRELOAD"] = str(library_path()) + (" " + preload if preload else "")
    env["LOCKLAB_PROF_DIR"] = dump_dir
    for name, value in (("STACKS", args.stack_depth), ("DEPTH", args.depth),
                        ("HOLD_EVERY", args.hold_every), ("TOP", args.top),
                        ("MIN_WAIT_NS", args.min_wait), ("INTERVAL", args.interval)):
        if value is not None:
            env[f"LOCKLAB_PROF_{name}"] = str(value)
    env["LOCKLAB_PROF_THREADS"] = "1" if args.threads else "0"
    env["LOCKLAB_PROF_TRACE"] = str(args.trace_events if args.trace else 0)
    env["LOCKLAB_PROF_SIGNAL"] = str(args.signal)
    for name in ("LOCKLAB_PROF_OUTPUT", "LOCKLAB_PROF_FORMAT"):
        env.pop(name, None)
    return env


class Dumps:
    """The report files the library leaves in one directory, in the order written."""

    def __init__(self, directory: str):
        self.dir = Path(directory)
        self.seen: set[str] = set()

    def new(self, ext: str) -> list[Path]:
        """Files with this extension not returned before (names sort by process, then dump)."""
        fresh = []
        for p in sorted(self.dir.glob(f"*.{ext}"), key=self.order):
            if p.name not in self.seen:
                self.seen.add(p.name)
                fresh.append(p)
        return fresh

    @staticmethod
    def order(p: Path):
        start, pid, seq, _ = p.stem.split("-", 3)
        return int(start), int(pid), int(seq)

    def finals(self, ext: str) -> list[Path]:
        """Each process's last report: its exit report, or its latest if it never exited."""
        last: dict[tuple[int, int], Path] = {}
        for p in sorted(self.dir.glob(f"*.{ext}"), key=self.order):
            start, pid, _ = self.order(p)
            key = (start, pid)
            if key not in last or not last[key].stem.endswith("-exit"):
                last[key] = p
        return [last[k] for k in sorted(last)]


def read_json(path: Path) -> dict:
    return json.loads(path.read_text(errors="replace"))


def has_events(report: dict) -> bool:
    return any(lock["count"] for lock in report["locks"])


# ----------------------------------------------------------------- formats

def _frames(stack: list[str], where: dict[str, list[lines.Line]], with_lines: bool) -> list[str]:
    """A stack's frames for folded output, innermost first: each named by its function
    (offsets dropped, so a function's call sites are one frame), inlined calls as frames
    of their own where the lines are known, `function file:line` when WITH_LINES."""
    out = []
    for frame in stack:
        known = where.get(frame)
        if not known:
            out.append(lines.function_of(frame))
            continue
        for ln in known:
            name = lines.function_of(frame, ln.function)
            out.append(f"{name} {ln.file}:{ln.line}" if with_lines and ln.file else name)
    return out


def folded(reports: list[dict], where: dict[str, list[lines.Line]] | None = None,
           with_lines: bool = False) -> str:
    """One line per (lock, waiter stack): `lock;root;...;leaf WAIT_NS` (flame graph
    input), stacks that differ only in call sites within a function added together."""
    many = len(reports) > 1
    where = where or {}
    totals: dict[str, int] = {}
    for rep in reports:
        prefix = f"{Path(rep['exe']).name}[{rep['pid']}];" if many else ""
        for lock in rep["locks"]:
            for ev in lock["events"]:
                frames = ";".join(reversed(_frames(ev["stack"], where, with_lines)))
                key = f"{prefix}{lock['name']};{frames}"
                totals[key] = totals.get(key, 0) + ev["wait_ns"]
    lines_out = [f"{key} {ns}" for key, ns in totals.items()]
    return "\n".join(lines_out) + ("\n" if lines_out else "")


def _varint(n: int) -> bytes:
    n &= (1 << 64) - 1  # int64 fields: two's complement, as protobuf encodes them
    out = bytearray()
    while True:
        byte = n & 0x7F
        n >>= 7
        if n:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _field_int(num: int, value: int) -> bytes:
    return _varint(num << 3) + _varint(value) if value else b""


def _field_bytes(num: int, data: bytes) -> bytes:
    return _varint((num << 3) | 2) + _varint(len(data)) + data


def _packed(num: int, values: list[int]) -> bytes:
    return _field_bytes(num, b"".join(_varint(v) for v in values)) if values else b""


def pprof(reports: list[dict], where: dict[str, list[lines.Line]] | None = None) -> bytes:
    """A gzipped perftools.profiles.Profile (google/pprof's profile.proto), written by hand.

    Sample types contentions/count and delay/nanoseconds (a Go mutex profile's), one
    sample per (lock, waiter stack, event, thread) with labels lock, event, thread and,
    when several processes reported, process.  A location is one return address in its
    mapping (the loaded object: path, build-id, where it was mapped); its lines name the
    function apart from the offset, so pprof adds a function's call sites together,
    with file and line (and inlined calls, innermost first) where the debug information
    had them (`where`, from lines.resolve).
    """
    where = where or {}
    strings: dict[str, int] = {"": 0}

    def s(text: str) -> int:
        return strings.setdefault(text, len(strings))

    mappings: dict[tuple, int] = {}
    mapping_msgs = bytearray()
    functions: dict[tuple[str, str, str], int] = {}
    locations: dict[tuple, int] = {}
    location_msgs = bytearray()

    def function(name: str, system: str, file: str) -> int:
        key = (name, system, file)
        if key not in functions:
            functions[key] = len(functions) + 1
        return functions[key]

    def mapping(obj: dict, has_lines: bool) -> int:
        key = (obj["path"], obj["bias"], obj["start"])
        if key not in mappings:
            mid = mappings[key] = len(mappings) + 1
            msg = (_field_int(1, mid) + _field_int(2, int(obj["start"], 16)) +
                   _field_int(3, int(obj["limit"], 16)) + _field_int(4, int(obj["offset"], 16)) +
                   _field_int(5, s(obj["path"])) + _field_int(6, s(obj.get("build_id", ""))) +
                   _field_int(7, 1) + _field_int(8, int(has_lines)) +
                   _field_int(9, int(has_lines)))
            mapping_msgs.extend(_field_bytes(3, msg))
        return mappings[key]

    def location(frame: str, at, objects: dict) -> int:
        obj = objects.get(at[0]) if at else None
        addr = int(at[1], 16) + (int(obj["bias"], 16) if obj else 0) if at else 0
        key = (obj["path"], obj["bias"], addr) if obj else ("", "", frame)
        if key in locations:
            return locations[key]
        lid = locations[key] = len(locations) + 1
        known = where.get(frame)
        mid = mapping(obj, bool(where)) if obj else 0
        body = _field_int(1, lid) + _field_int(2, mid) + _field_int(3, addr)
        for ln in known or [lines.Line("", "", 0)]:
            fid = function(lines.function_of(frame, ln.function), lines.function_of(frame),
                           ln.file)
            body += _field_bytes(4, _field_int(1, fid) + _field_int(2, ln.line))
        location_msgs.extend(_field_bytes(4, body))
        return lid

    samples = bytearray()
    many = len(reports) > 1
    for rep in reports:
        proc = f"{Path(rep['exe']).name}[{rep['pid']}]"
        objects = {o["index"]: o for o in rep.get("objects", [])}
        for lock in rep["locks"]:
            for ev in lock["events"]:
                ats = ev.get("at") or [None] * len(ev["stack"])
                locs = [location(frame, at, objects) for frame, at in zip(ev["stack"], ats)]
                for th in ev["threads"]:
                    labels = [("lock", lock["name"]), ("event", ev["event"]),
                              ("thread", f"{th['name']}[{th['tid']}]")]
                    if many:
                        labels.append(("process", proc))
                    body = _packed(1, locs) + _packed(2, [th["count"], th["wait_ns"]])
                    for key, value in labels:
                        body += _field_bytes(3, _field_int(1, s(key)) + _field_int(2, s(value)))
                    samples += _field_bytes(2, body)
    out = bytearray()
    for kind, unit in (("contentions", "count"), ("delay", "nanoseconds")):
        out += _field_bytes(1, _field_int(1, s(kind)) + _field_int(2, s(unit)))
    out += samples + mapping_msgs + location_msgs
    for (name, system, file), fid in functions.items():
        out += _field_bytes(5, _field_int(1, fid) + _field_int(2, s(name)) +
                            _field_int(3, s(system)) + _field_int(4, s(file)))
    if reports:
        start = min(r["start_ns"] for r in reports)
        end = max(r["end_ns"] for r in reports)
        # start_ns is CLOCK_MONOTONIC; time_nanos wants the wall clock.
        out += _field_int(9, time.time_ns() - (time.monotonic_ns() - start))
        out += _field_int(10, end - start)
    out += _field_bytes(11, _field_int(1, s("contentions")) + _field_int(2, s("count")))
    out += _field_int(12, 1)
    # Fields may come in any order: the string table last, once every string is known.
    for text in strings:
        out += _field_bytes(6, text.encode())
    return gzip.compress(bytes(out))


def with_lines(report: dict, where: dict[str, list[lines.Line]]) -> dict:
    """The report with "lines" beside every stack: per frame, its functions innermost
    first as {function, file, line}, or null where none is known."""
    def per_frame(stack):
        return [[{"function": ln.function, "file": ln.file, "line": ln.line}
                 for ln in where[f]] if f in where else None for f in stack]
    for lock in report["locks"]:
        for entry in lock["events"] + lock["holders"]:
            entry["lines"] = per_frame(entry["stack"])
        if "site" in lock:
            lock["site_lines"] = per_frame([lock["site"]])[0]
    return report


# ---------------------------------------------------------------- running

def run(args, cmd: list[str]) -> int:
    if not cmd:
        raise LocklabError("no command to profile: locklab profile [options] -- CMD [ARGS]")
    program = resolve_program(cmd[0])
    if swap.wanted(args):
        swap.check_arguments(args)
        swap.mangled_sites(args, program)
        swap.check_lock(swap.environment(dict(os.environ), args, swap.library_path()))
    fmt = "json" if args.json else "folded" if args.folded else "pprof" if args.pprof else "text"
    if args.lines and fmt != "folded":
        raise LocklabError("--lines is for --folded (text, JSON and pprof always carry "
                           "file:line where it is known)")
    if args.trace_events != TRACE_EVENTS and not args.trace:
        raise LocklabError("--trace-events is for --trace FILE")
    if args.trace:
        _check_writable(args.trace, "--trace")
    if fmt == "pprof" and not args.output and sys.stdout.isatty():
        raise LocklabError("--pprof writes a binary profile: give -o FILE")
    out = open(args.output, "wb") if args.output else sys.stdout.buffer
    d = tempfile.mkdtemp(prefix="locklab-prof-")
    keep = False
    sites = swap.Sites(args) if swap.wanted(args) else None
    try:
        status, keep = _run(args, cmd, fmt, d, out, sites)
    except BaseException:
        if sites:
            sites.discard()
        raise
    finally:
        if args.output:
            out.close()
        if not keep:
            shutil.rmtree(d, ignore_errors=True)
    if sites:
        sites.warn_unmatched("profile")
    if status < 0:
        _die_of(-status)
    return _status(status)


def _die_of(sig: int) -> None:
    """Die of the signal the program died of, as the program did: a shell or a script
    running `locklab profile` sees the same status (128 + N if it cannot be raised)."""
    sys.stdout.flush()
    sys.stderr.flush()
    try:
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))  # the program dumped its own core
        signal.signal(sig, signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, [sig])
        os.kill(os.getpid(), sig)
    except (OSError, ValueError):
        pass


def _spawn(cmd: list[str], env: dict[str, str]) -> subprocess.Popen:
    """CMD started as a shell starts it: a file that is no program (ENOEXEC: a script
    without #!) is run by /bin/sh, as execvp() does."""
    try:
        return subprocess.Popen(cmd, env=env)
    except OSError as e:
        if e.errno != errno.ENOEXEC:
            raise LocklabError(f"{cmd[0]}: {e.strerror}") from None
    path = cmd[0] if "/" in cmd[0] else shutil.which(cmd[0])
    try:
        return subprocess.Popen(["/bin/sh", path, *cmd[1:]], env=env)
    except OSError as e:
        raise LocklabError(f"{cmd[0]}: {e.strerror}") from None


def still_running(d: str) -> list[tuple[int, str]]:
    """Processes that may still write a report into D: (pid, name) of each DIR/PID.live
    whose process is alive with the library loaded (the library removes the file after
    its exit report; one killed by SIGKILL leaves it, and is gone)."""
    alive = []
    for marker in sorted(Path(d).glob("*.live")):
        try:
            pid = int(marker.stem)
            maps = Path(f"/proc/{pid}/maps").read_text(errors="replace")
            name = Path(f"/proc/{pid}/comm").read_text().strip()
        except (ValueError, OSError):
            continue
        if LIBRARY in maps:
            alive.append((pid, name))
    return alive


def _emit(out, data: bytes | str) -> None:
    out.write(data.encode() if isinstance(data, str) else data)
    out.flush()


def _run(args, cmd: list[str], fmt: str, d: str, out, sites) -> tuple[int, bool]:
    """The program's wait status (negative: killed), and whether D must be kept."""
    dumps = Dumps(d)
    stream = fmt in ("text", "json")
    ext = "json" if fmt == "json" else "txt"
    env = environment(args, d)
    proc = _spawn(cmd, sites.set(env) if sites else env)
    # Ctrl-C reaches the program through the terminal; we wait for it to report.
    old_int = signal.signal(signal.SIGINT, signal.SIG_IGN)
    old_term = signal.signal(signal.SIGTERM, lambda *_: proc.send_signal(signal.SIGTERM))
    try:
        while True:
            try:
                status = proc.wait(timeout=0.2)
                break
            except subprocess.TimeoutExpired:
                pass
            if stream:
                for p in dumps.new(ext):
                    if not p.stem.endswith("-exit"):
                        _emit(out, _interim(p, fmt))
    finally:
        signal.signal(signal.SIGINT, old_int)
        signal.signal(signal.SIGTERM, old_term)
    if stream:  # interim reports written just before the exit
        for p in dumps.new(ext):
            if not p.stem.endswith("-exit"):
                _emit(out, _interim(p, fmt))
    # A daemon (it forked and its parent, the program, exited) writes its report when it
    # exits: keep the directory for it and say where, after the reports there are.  The
    # forks in between exit within moments: wait until the same processes are left.
    daemons, deadline = still_running(d), time.monotonic() + 2.0
    while daemons and time.monotonic() < deadline:
        time.sleep(0.2)
        daemons, before = still_running(d), daemons
        if daemons == before:
            break
    paths = dumps.finals("json")
    finals = [read_json(p) for p in paths]
    shown = [i for i, r in enumerate(finals) if has_events(r)] or [0][:len(finals)]
    reports = [finals[i] for i in shown]
    where, note = lines.resolve(reports)
    if note and fmt != "folded" or note and args.lines:
        print(f"locklab: {note}", file=sys.stderr)
    if not finals and not daemons:
        print(f"locklab: {_no_report(status)}", file=sys.stderr)
    elif fmt == "text":
        for i in shown:
            text = paths[i].with_suffix(".txt")
            if text.exists():
                _emit(out, lines.annotate_text(text.read_text(errors="replace"), where))
    elif fmt == "json":
        doc = {"tool": "locklab-prof", "command": cmd, "status": _status(status),
               "lines": note or "libdw",
               "processes": [with_lines(r, where) for r in reports]}
        _emit(out, json.dumps(doc, indent=1) + "\n")
    elif fmt == "folded":
        _emit(out, folded(reports, where, args.lines))
    else:
        _emit(out, pprof(reports, where))
    if finals and not any(has_events(r) for r in finals):
        print(f"locklab: {_no_contention(finals, status)}", file=sys.stderr)
    if args.trace:
        _write_trace(args.trace, [paths[i] for i in shown], reports)
    if daemons:
        who = ", ".join(f"{name} (pid {pid})" for pid, name in daemons)
        theirs = "its report" if len(daemons) == 1 else "their reports"
        print(f"locklab: still running: {who}; {theirs} will be in {d}/ when it exits",
              file=sys.stderr)
    return status, bool(daemons)


def _check_writable(path: str, option: str) -> None:
    """Refuse, before the program runs, a file that cannot be written at its end."""
    p = Path(path)
    parent = p.parent if str(p.parent) else Path(".")
    if p.is_dir():
        raise LocklabError(f"{option} {path}: is a directory")
    if not parent.is_dir():
        raise LocklabError(f"{option} {path}: no such directory {parent}")
    if not os.access(p if p.exists() else parent, os.W_OK):
        raise LocklabError(f"{option} {path}: not writable")


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


def _write_trace(path: str, dumps: list[Path], reports: list[dict]) -> None:
    """The timeline of waits as a Chrome trace (JSON trace-event format, for Perfetto
    or chrome://tracing): one slice per wait, on its thread's track, named by its
    lock.  Says on stderr how many waits the rings dropped (the oldest of each thread)."""
    events, dropped, kept, capacity = [], 0, 0, 0
    parts = []
    for dump, rep in zip(dumps, reports):
        tr = dump.with_suffix(".trace")
        if tr.exists():
            parts.append((rep, read_json(tr)))
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
           "otherData": {"tool": "locklab-prof", "waits": kept, "dropped": dropped,
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


def _interim(path: Path, fmt: str) -> str:
    if fmt == "json":
        return json.dumps(read_json(path)) + "\n"
    return path.read_text(errors="replace") + "\n"


def _status(code: int) -> int:
    return 128 - code if code < 0 else code


def add_parser(sub) -> None:
    p = sub.add_parser(
        "profile", help="lock contention of a program (plockstat for Linux)",
        usage="locklab profile [options] -- CMD [ARGS...]",
        description="Run CMD with liblocklab-prof.so preloaded and report which locks "
        "made its threads wait: pthread mutexes, rwlocks, condvar reacquisition and raw "
        "futex waits, per lock and call site.")
    out = p.add_mutually_exclusive_group()
    out.add_argument("--json", action="store_true", help="JSON (every process, every site)")
    out.add_argument("--folded", action="store_true",
                     help="folded stacks (lock;root;...;leaf WAIT_NS) for flamegraph.pl")
    out.add_argument("--pprof", action="store_true",
                     help="gzipped pprof profile (go tool pprof): contentions, delay")
    p.add_argument("-o", "--output", metavar="FILE", help="write there instead of stdout")
    p.add_argument("--lines", action="store_true",
                   help="folded: name frames `function file:line` (they are by function alone)")
    p.add_argument("--trace", metavar="FILE",
                   help="also write a Chrome/Perfetto trace: every thread's waits as slices "
                   "named by lock")
    p.add_argument("--trace-events", type=_whole(1, 1 << 20), default=TRACE_EVENTS, metavar="N",
                   help="waits each thread keeps for --trace, the last N (16384; 1-1048576)")
    p.add_argument("-s", "--stack-depth", type=_whole(1, 64), metavar="DEPTH",
                   help="text: a wait histogram and DEPTH frames per entry (1-64)")
    p.add_argument("--depth", type=_whole(1, 64), metavar="N",
                   help="frames captured per stack (16; 1-64)")
    p.add_argument("--top", type=_whole(1, 1 << 30), metavar="N",
                   help="at most N entries per section")
    p.add_argument("--min-wait", type=_whole(0, LIMIT), metavar="NS",
                   help="leave out entries that waited less than NS in total")
    p.add_argument("--threads", action="store_true", help="add the per-thread breakdown")
    p.add_argument("--interval", type=_seconds, metavar="S",
                   help="also report what happened in each S seconds, as it happens "
                   "(0.01-86400)")
    p.add_argument("--signal", type=signal_number, default=signal.SIGPROF, metavar="SIG",
                   help="report the run so far when the program gets SIG (PROF, USR1, USR2, "
                   "URG, WINCH or its number; 0: none)")
    p.add_argument("--hold-every", type=_whole(0, 1 << 30, "; 0: off"),
                   metavar="N", help="sample the hold time of 1 acquisition in N (100; 0: off)")
    swap.add_arguments(p, "profile the program with its mutexes swapped for this algorithm, "
                       "as `locklab run --lock` swaps them (locklab list names them)")
    p.add_argument("cmd", nargs=argparse.REMAINDER, metavar="-- CMD [ARGS...]",
                   help="the program to run and its arguments")
    p.set_defaults(func=lambda args: run(args, args.cmd[1:] if args.cmd[:1] == ["--"]
                                         else args.cmd))
