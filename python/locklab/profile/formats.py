"""The profile's reports turned into the formats other tools read: folded stacks (flame
graphs), a pprof profile, and the JSON report with file:line beside its frames."""
from __future__ import annotations

import gzip
import time
from pathlib import Path

from . import lines
from .names import function_of


def _frames(stack: list[str], where: dict[str, list[lines.Line]], with_lines: bool) -> list[str]:
    """A stack's frames for folded output, innermost first: each named by its function
    (offsets dropped, so a function's call sites are one frame), inlined calls as frames
    of their own where the lines are known, `function file:line` when WITH_LINES."""
    out = []
    for frame in stack:
        known = where.get(frame)
        if not known:
            out.append(function_of(frame))
            continue
        for ln in known:
            name = function_of(frame, ln.function)
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
            fid = function(function_of(frame, ln.function), function_of(frame),
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
