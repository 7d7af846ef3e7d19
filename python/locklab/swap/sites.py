"""The sites of --lock-for and --rwlock-for (docs/swap.md): handed to
liblocklab-swap.so as the program's own symbols, and the ones that matched no lock
said after the run.

A site is a lock's name as `locklab profile` prints it; the library names each
mutex with the profiler's own code and compares.  Inside the program the library
cannot demangle C++ names (__cxa_demangle allocates), so a site whose symbol is a
demangled name (`mariadbd`tdc_init+0xd8` for _Z8tdc_initv) is handed to it as
every mangled symbol of that module that the profiler prints that way
(`mangled_sites`, from the module's own symbol tables).  The sites' counts come back
through LOCKLAB_SWAP_SITES_JSON, a file of one JSON object per process that
this module reads after the run.
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
from dataclasses import replace
from pathlib import Path

from ..profile.names import profiler_name
from .settings import SwapSettings

SITE = re.compile(r"^(?P<module>[^`]+)`(?P<symbol>.+?)(?P<offset>\+0x[0-9a-fA-F]+)?$")


def _nm(path: Path, *flags: str) -> list[str]:
    """The defined symbols' names, in nm's order (empty when nm cannot read it)."""
    try:
        proc = subprocess.run(["nm", "--defined-only", "--format=posix", *flags, str(path)],
                              capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired):
        return []
    if proc.returncode != 0:
        return []
    # posix format: NAME TYPE VALUE [SIZE]; a demangled name may have spaces in it.
    return [line.rsplit(" ", 3 if line.count(" ") >= 3 else 2)[0]
            for line in proc.stdout.splitlines() if line.strip()]


def symbol_names(path: Path) -> dict[str, set[str]]:
    """{name as the profiler prints it: the module's raw symbols printed that way}."""
    names: dict[str, set[str]] = {}
    for table in ((), ("-D",)):
        raw, shown = _nm(path, *table), _nm(path, *table, "-C")
        if len(raw) != len(shown):
            continue
        for r, d in zip(raw, shown):
            names.setdefault(profiler_name(d) if r.startswith("_Z") else r, set()).add(r)
    return names


def modules_of(program: Path) -> dict[str, Path]:
    """The program's module names (basenames, as the profiler prints them) and files."""
    found = {program.name: program}
    try:
        proc = subprocess.run(["ldd", str(program)], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return found
    for line in proc.stdout.splitlines():
        m = re.search(r"=>\s*(/\S+)", line) or re.match(r"\s*(/\S+)", line)
        if m:
            found.setdefault(Path(m.group(1)).name, Path(m.group(1)))
    return found


ENTRY = re.compile(r"=(?P<lock>[A-Za-z0-9_-]+)(?=:|$)")


def split_entry(entry: str) -> tuple[str, str] | None:
    """'SITE=LOCK[:OPTS]' -> (SITE, 'LOCK[:OPTS]') at the first '=' the library
    would take (a site may hold '=', as in operator=); None when it has none."""
    m = ENTRY.search(entry)
    return (entry[:m.start()], entry[m.start() + 1:]) if m else None


def mangled_sites(settings: SwapSettings, program: Path) -> tuple[SwapSettings, dict[str, str]]:
    """SETTINGS with each --lock-for and --rwlock-for site whose symbol is a demangled
    C++ name followed by the mangled symbols it stands for, as further sites with the
    same lock; and the site the user wrote for each site the library gets."""
    origin: dict[str, str] = {}
    tables: dict[Path, dict[str, set[str]]] = {}
    modules: list[dict[str, Path]] = []

    def with_aliases(entries: tuple[str, ...]) -> tuple[str, ...]:
        out = []
        for entry in entries:
            out.append(entry)
            split = split_entry(entry)
            if not split:
                continue   # check.check refuses it, in the swapper's words
            site, lock = split
            origin[site] = site
            m = SITE.match(site)
            if not m or m["symbol"].startswith("+"):
                continue
            if not modules:
                modules.append(modules_of(program))
            path = modules[0].get(m["module"])
            if path is None:
                continue
            if path not in tables:
                tables[path] = symbol_names(path)
            for raw in sorted(tables[path].get(m["symbol"], ())):
                if raw != m["symbol"]:
                    alias = f"{m['module']}`{raw}{m['offset'] or ''}"
                    out.append(f"{alias}={lock}")
                    origin[alias] = site
        return tuple(out)

    return replace(settings, lock_for=with_aliases(settings.lock_for),
                   rwlock_for=with_aliases(settings.rwlock_for)), origin


class SiteCounts:
    """A private file for the sites' counts, and the warning for those that matched nothing.

    ORIGIN: the site the user wrote for each site the library got (mangled_sites).
    """

    # The sites' lists in the library's record of a process, and their options.
    LISTS = (("lock_for", "--lock-for", "mutex"), ("rwlock_for", "--rwlock-for", "rwlock"))

    def __init__(self, settings: SwapSettings, origin: dict[str, str]):
        self.origin = origin
        self.path = None
        if settings.lock_for or settings.rwlock_for:
            fd, self.path = tempfile.mkstemp(prefix="locklab-sites-", suffix=".jsonl")
            os.close(fd)

    def set(self, env: dict[str, str]) -> dict[str, str]:
        if self.path:
            env = dict(env, LOCKLAB_SWAP_SITES_JSON=self.path)
        return env

    def discard(self) -> None:
        if self.path:
            os.unlink(self.path)
            self.path = None

    def matched(self) -> tuple[dict[tuple[str, str], int], int]:
        """({(list, site as the user wrote it): locks it matched in every process}, how
        many processes reported), the file read and removed; ({}, 0) without sites."""
        if not self.path:
            return {}, 0
        try:
            lines = Path(self.path).read_text(errors="replace").splitlines()
        finally:
            os.unlink(self.path)
            self.path = None
        matched: dict[tuple[str, str], int] = {}
        processes = 0
        for line in lines:
            try:
                rec = json.loads(line)
            except ValueError:
                continue
            processes += 1
            for key, _, _ in self.LISTS:
                for site in rec.get(key, []):
                    name = self.origin.get(site["site"], site["site"])
                    matched[key, name] = matched.get((key, name), 0) + site["matched"]
        return matched, processes

    def warn_unmatched(self, verb: str) -> None:
        """One line per site no process matched (after the program's own output)."""
        matched, processes = self.matched()
        if not processes:
            return  # no process got as far as its exit (killed, or it never loaded us)
        options = {key: (option, kind) for key, option, kind in self.LISTS}
        for (key, site), n in matched.items():
            if not n:
                option, kind = options[key]
                where = "its process" if processes == 1 else f"any of its {processes} processes"
                print(f"locklab: {verb}: {option} site {site!r} matched no {kind} in {where} "
                      "(a site is a lock's name as `locklab profile` prints it)",
                      file=sys.stderr)
