"""What `locklab run` and `locklab profile --lock` share: liblocklab-swap.so's
settings from the command line, the library's own check of them, and the sites
of --lock-for that matched no mutex (docs/swap.md).

A site is a lock's name as `locklab profile` prints it; the library names each
mutex with the profiler's own code and compares.  The sites' counts come back
through LOCKLAB_SWAP_SITES_JSON, a file of one JSON object per process that
this module reads after the run.
"""
from __future__ import annotations

import json
import os
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


def check_arguments(args) -> None:
    """Refusals the library cannot make: what the environment cannot carry."""
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
                        ("LOCKLAB_SWAP_LOCK_FOR", ";".join(args.lock_for))):
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


class Sites:
    """A private file for the sites' counts, and the warning for those that matched nothing."""

    def __init__(self, args):
        self.sites = [s for s in args.lock_for]
        self.path = None
        if self.sites:
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
                matched[site["site"]] = matched.get(site["site"], 0) + site["matched"]
        if not processes:
            return  # no process got as far as its exit (killed, or it never loaded us)
        for site, n in matched.items():
            if not n:
                where = "its process" if processes == 1 else f"any of its {processes} processes"
                print(f"locklab: {verb}: --lock-for site {site!r} matched no mutex in {where} "
                      "(a site is a lock's name as `locklab profile` prints it)",
                      file=sys.stderr)
