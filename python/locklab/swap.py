"""What `locklab run` and `locklab profile --lock` share: liblocklab-swap.so's
settings from the command line, the library's own check of them, and the sites
of --lock-for that matched no mutex (docs/swap.md).

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
from pathlib import Path

from .errors import LocklabError
from .native import preload_path

LIBRARY = "liblocklab-swap.so"


def library_path() -> Path:
    return preload_path(LIBRARY)


def add_arguments(p, lock_help: str) -> None:
    p.add_argument("--lock", metavar="NAME", help=lock_help)
    p.add_argument("--lock-opts", metavar="K=V,...", help="--lock's options")
    p.add_argument("--lock-for", action="append", default=[], metavar="SITE=NAME[:K=V,...]",
                   help="the mutexes named SITE (as `locklab profile` names a lock) get the "
                   "algorithm NAME, with its options after ':' (repeatable; the rest: --lock's, "
                   "or glibc's without --lock)")


def wanted(args) -> bool:
    return bool(args.lock or args.lock_for or args.lock_opts)


def split_rwlock(args) -> None:
    """--rwlock NAME:K=V,... into args.rwlock NAME and args.rwlock_opts (after
    --rwlock-opts's), as the programs preset takes a lock's options."""
    rwlock, opts = getattr(args, "rwlock", None), getattr(args, "rwlock_opts", None)
    if opts and not rwlock:
        raise LocklabError("--rwlock-opts gives --rwlock's options: give --rwlock too")
    if rwlock is None:
        return
    name, _, own = rwlock.partition(":")
    if not name:
        raise LocklabError(f"--rwlock {rwlock!r}: no rwlock name (locklab list --rwlock names them)")
    args.rwlock, args.rwlock_opts = name, ",".join(o for o in (own, opts) if o) or None


def check_arguments(args) -> None:
    """Refusals the library cannot make: what the environment cannot carry."""
    split_rwlock(args)
    if args.lock_opts and not args.lock:
        raise LocklabError("--lock-opts gives --lock's options: give --lock too (a site's "
                           "options go after its lock: --lock-for SITE=NAME:K=V,...)")
    for entry in args.lock_for:
        if ";" in entry:
            raise LocklabError(f"--lock-for {entry!r}: ';' cannot be in a site or its options")
        if not entry.strip():
            raise LocklabError("--lock-for '': not SITE=NAME")


def environment(env: dict[str, str], args, library: Path, behind: str = "") -> dict[str, str]:
    """ENV with the swapper preloaded (after BEHIND, when it must come first) and set up."""
    env = dict(env)
    preload = env.get("LD_PRELOAD", "")
    ours = f"{behind} {library}" if behind else str(library)
    env["LD_PRELOAD"] = ours + (" " + preload if preload else "")
    for name, value in (("LOCKLAB_SWAP_LOCK", args.lock),
                        ("LOCKLAB_SWAP_LOCK_OPTS", args.lock_opts),
                        ("LOCKLAB_SWAP_LOCK_FOR", ";".join(args.lock_for)),
                        ("LOCKLAB_SWAP_RWLOCK", getattr(args, "rwlock", None)),
                        ("LOCKLAB_SWAP_RWLOCK_OPTS", getattr(args, "rwlock_opts", None))):
        if value:
            env[name] = value
        else:
            env.pop(name, None)
    for name in ("LOCKLAB_SWAP_STATS_JSON", "LOCKLAB_SWAP_SITES_JSON", "LOCKLAB_SWAP_CHECK"):
        env.pop(name, None)
    env["LOCKLAB_SWAP_STATS"] = "0"
    return env


def check_lock(env: dict[str, str]) -> None:
    """The library's own verdict on the locks and their options: it loads into a
    program that exits at once, and says `locklab: swap: ...` when it refuses."""
    probe = dict(env, LOCKLAB_SWAP_CHECK="1")
    probe.pop("LOCKLAB_SWAP_STATS_JSON", None)
    probe.pop("LOCKLAB_SWAP_SITES_JSON", None)
    proc = subprocess.run([sys.executable, "-c", ""], env=probe, capture_output=True,
                          text=True)
    if proc.returncode != 0:
        lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
        why = lines[-1] if lines else f"{LIBRARY} did not load (status {proc.returncode})"
        for prefix in ("locklab: swap: ", "locklab: "):
            if why.startswith(prefix):
                why = why[len(prefix):]
                break
        raise LocklabError(why)


SITE = re.compile(r"^(?P<module>[^`]+)`(?P<symbol>.+?)(?P<offset>\+0x[0-9a-fA-F]+)?$")


def profiler_name(demangled: str) -> str:
    """A demangled C++ name as the profiler prints it: the parameter list dropped
    (at the first '(' outside template brackets that is not operator())."""
    depth = 0
    for i, ch in enumerate(demangled):
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth -= 1
        elif ch == "(" and depth == 0 and not demangled[:i].endswith("operator"):
            return demangled[:i]
    return demangled


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


def mangled_sites(args, program: Path) -> None:
    """Give each --lock-for site whose symbol is a demangled C++ name the mangled
    symbols it stands for, as further sites with the same lock; args.site_origin
    maps each site the library gets to the one the user wrote."""
    args.site_origin = {}
    entries, tables, modules = [], {}, None
    for entry in args.lock_for:
        entries.append(entry)
        split = split_entry(entry)
        if not split:
            continue   # the library refuses it, in its own words
        site, lock = split
        args.site_origin[site] = site
        m = SITE.match(site)
        if not m or m["symbol"].startswith("+"):
            continue
        if modules is None:
            modules = modules_of(program)
        path = modules.get(m["module"])
        if path is None:
            continue
        if path not in tables:
            tables[path] = symbol_names(path)
        for raw in sorted(tables[path].get(m["symbol"], ())):
            if raw != m["symbol"]:
                alias = f"{m['module']}`{raw}{m['offset'] or ''}"
                entries.append(f"{alias}={lock}")
                args.site_origin[alias] = site
    args.lock_for = entries


class Sites:
    """A private file for the sites' counts, and the warning for those that matched nothing."""

    def __init__(self, args):
        self.origin = getattr(args, "site_origin", {})
        self.path = None
        if args.lock_for:
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

    def warn_unmatched(self, verb: str) -> None:
        """One line per site no process matched (after the program's own output)."""
        if not self.path:
            return
        try:
            lines = Path(self.path).read_text(errors="replace").splitlines()
        finally:
            os.unlink(self.path)
        matched: dict[str, int] = {}
        processes = 0
        for line in lines:
            try:
                rec = json.loads(line)
            except ValueError:
                continue
            processes += 1
            for site in rec.get("lock_for", []):
                name = self.origin.get(site["site"], site["site"])
                matched[name] = matched.get(name, 0) + site["matched"]
        if not processes:
            return  # no process got as far as its exit (killed, or it never loaded us)
        for site, n in matched.items():
            if not n:
                where = "its process" if processes == 1 else f"any of its {processes} processes"
                print(f"locklab: {verb}: --lock-for site {site!r} matched no mutex in {where} "
                      "(a site is a lock's name as `locklab profile` prints it)",
                      file=sys.stderr)
