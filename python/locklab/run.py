"""locklab run: an unmodified program with its pthread mutexes swapped.

Runs CMD with liblocklab-swap.so preloaded and LOCKLAB_SWAP_LOCK naming the
algorithm every pthread_mutex_t of the program gets (docs/swap.md).  The lock
and its options are checked by the library itself before CMD starts, and CMD
is checked as `locklab profile` checks it (profile.resolve_program); the
program's exit status, or the signal it died of, is locklab's.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

from . import profile
from .errors import LocklabError
from .native import preload_path

LIBRARY = "liblocklab-swap.so"


def library_path() -> Path:
    return preload_path(LIBRARY)


def environment(args, library: Path) -> dict[str, str]:
    env = dict(os.environ)
    preload = env.get("LD_PRELOAD", "")
    env["LD_PRELOAD"] = str(library) + (" " + preload if preload else "")
    env["LOCKLAB_SWAP_LOCK"] = args.lock
    env["LOCKLAB_SWAP_LOCK_OPTS"] = args.lock_opts or ""
    env["LOCKLAB_SWAP_STATS"] = "1" if args.stats else "0"
    env.pop("LOCKLAB_SWAP_STATS_JSON", None)
    env.pop("LOCKLAB_SWAP_CHECK", None)
    if args.stats_json:
        env["LOCKLAB_SWAP_STATS_JSON"] = os.path.abspath(args.stats_json)
    return env


def check_lock(env: dict[str, str]) -> None:
    """The library's own verdict on the lock and its options: it loads into a
    program that exits at once, and says `locklab: swap: ...` when it refuses."""
    probe = dict(env, LOCKLAB_SWAP_CHECK="1")
    probe.pop("LOCKLAB_SWAP_STATS_JSON", None)
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


def run(args, cmd: list[str]) -> int:
    if not cmd:
        raise LocklabError("no command to run: locklab run --lock NAME [options] -- CMD [ARGS]")
    library = library_path()
    profile.resolve_program(cmd[0], library=library, verb="swap its locks")
    env = environment(args, library)
    check_lock(env)
    proc = profile._spawn(cmd, env)
    while True:
        try:
            status = proc.wait()
            break
        except KeyboardInterrupt:
            continue  # the program got the ^C too: its own status says what it did
    if status < 0:
        profile._die_of(-status)
    return profile._status(status)


def add_parser(sub) -> None:
    p = sub.add_parser(
        "run", help="run a program with every pthread mutex swapped for a locklab lock",
        usage="locklab run --lock NAME [--lock-opts K=V,...] [--stats] [--stats-json FILE] "
        "-- CMD [ARGS...]",
        description="Run CMD with liblocklab-swap.so preloaded: every pthread_mutex_t of "
        "the program is served by the algorithm NAME (process-shared, robust and "
        "priority-inheritance mutexes stay glibc's).  The program's exit status or "
        "death signal is passed through.")
    p.add_argument("--lock", required=True, metavar="NAME",
                   help="the algorithm (locklab list names them)")
    p.add_argument("--lock-opts", metavar="K=V,...", help="the algorithm's options")
    p.add_argument("--stats", action="store_true",
                   help="one line per process on stderr at its exit")
    p.add_argument("--stats-json", metavar="FILE",
                   help="append one JSON object per process to FILE at its exit")
    p.add_argument("cmd", nargs=argparse.REMAINDER, metavar="-- CMD [ARGS...]",
                   help="the program to run and its arguments")
    p.set_defaults(func=lambda args: run(args, args.cmd[1:] if args.cmd[:1] == ["--"]
                                         else args.cmd))
