"""File:line for the profiler's frames, looked up outside the profiled program.

The library (liblocklab-prof.so) names every frame `object`symbol+0xOFF` from the
symbol tables, and writes beside each name where the address lies: the object (its
path, load bias, executable mapping, build-id) and the address as linked.  Source
lines need the DWARF, and reading it allocates, takes seconds on a big server and
may have to fetch a debug file: none of which may happen inside a program whose
malloc or loader lock another thread may hold.  So they are looked up here, after
the program has exited, by `locklab-lines` (src/prof/lines/lines.c, elfutils'
libdwfl), which is built when CMake finds libdw.
"""
from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass

from ..native import native_dir
from .names import profiler_name

TOOL = "locklab-lines"
NO_TOOL = (f"no file:line information: {TOOL} was not built (libdw not found at build "
           "time; Debian's libdw-dev)")


@dataclass(frozen=True)
class Line:
    """One function of a frame: the innermost first when calls were inlined."""
    function: str
    file: str
    line: int


def tool_path():
    path = native_dir() / TOOL
    return path if path.is_file() else None


def _demangle(names: set[str]) -> dict[str, str]:
    mangled = sorted(n for n in names if n.startswith("_Z"))
    out = {n: n for n in names}
    tool = shutil.which("c++filt")
    if mangled and tool:
        res = subprocess.run([tool], input="\n".join(mangled) + "\n", capture_output=True,
                             text=True, timeout=60)
        plain = res.stdout.splitlines()
        if res.returncode == 0 and len(plain) == len(mangled):
            out.update(zip(mangled, plain))
    return {n: profiler_name(d) for n, d in out.items()}


def _addresses(report: dict):
    """Every (frame name, [object, "0xLINK"]) pair the report carries."""
    for lock in report.get("locks", []):
        if lock.get("site_at"):
            yield lock["site"], lock["site_at"]
        for entry in lock.get("events", []) + lock.get("holders", []):
            yield from zip(entry["stack"], entry.get("at", []))


def resolve(reports: list[dict]) -> tuple[dict[str, list[Line]], str | None]:
    """Per frame name, its lines (innermost function first); and a note when no
    line can be had at all (None when the tool ran)."""
    tool = tool_path()
    if tool is None:
        return {}, NO_TOOL
    queries: dict[tuple[str, int], set[str]] = {}
    for rep in reports:
        objects = {o["index"]: o for o in rep.get("objects", [])}
        for name, (index, link) in _addresses(rep):
            obj = objects.get(index)
            if obj is not None:
                # A return address: the call is the byte before it.
                queries.setdefault((obj["path"], int(link, 16) - 1), set()).add(name)
    if not queries:
        return {}, None
    keys = sorted(queries)
    res = subprocess.run([str(tool)], input="".join(f"{p}\t{a:x}\n" for p, a in keys),
                         capture_output=True, text=True, timeout=600)
    answers = res.stdout.split("\n")
    raw: dict[str, list[tuple[str, str, int]]] = {}
    for key, answer in zip(keys, answers):
        fields = answer.split("\t") if answer else []
        frames = [(fields[i], fields[i + 1], int(fields[i + 2] or 0))
                  for i in range(0, len(fields) - 2, 3)]
        if frames:
            for name in queries[key]:
                raw[name] = frames
    plain = _demangle({fn for frames in raw.values() for fn, _, _ in frames})
    return {name: [Line(plain[fn], file, line) for fn, file, line in frames]
            for name, frames in raw.items()}, None


def where(lines: list[Line]) -> str:
    """`planted.c:88`, or with inlining `planted.c:70 (fx_lock, inlined into worker)`."""
    if not lines or not lines[0].file:
        return ""
    first = lines[0]
    text = f"{first.file}:{first.line}"
    if len(lines) > 1:
        text += f" ({first.function}, inlined into {lines[-1].function})"
    return text


def annotate_text(text: str, lines: dict[str, list[Line]]) -> str:
    """The library's text report with ` at FILE:LINE` after each frame that ends a line
    (callers, holders, stack frames, heap locks' naming sites)."""
    if not lines:
        return text
    out = []
    for row in text.split("\n"):
        note = ""
        for i, ch in enumerate(row):
            if ch == " " and row[i + 1:] in lines:
                note = where(lines[row[i + 1:]])
                break
        out.append(f"{row}  at {note}" if note else row)
    return "\n".join(out)
