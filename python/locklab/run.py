"""locklab run: an unmodified program with its pthread mutexes swapped.

Runs CMD with liblocklab-swap.so preloaded: every pthread_mutex_t of the
program gets the algorithm --lock names, or only those --lock-for names get
theirs, and every pthread_rwlock_t the rwlock --rwlock names (docs/swap.md).  The locks and their options are checked by the library
itself before CMD starts, and CMD is checked as `locklab profile` checks it
(profile.resolve_program); the program's exit status, or the signal it died
of, is locklab's.
"""
from __future__ import annotations

import argparse
import os

from . import profile, swap
from .errors import LocklabError


def environment(args, library) -> dict[str, str]:
    env = swap.environment(dict(os.environ), args, library)
    env["LOCKLAB_SWAP_STATS"] = "1" if args.stats else "0"
    if args.stats_json:
        env["LOCKLAB_SWAP_STATS_JSON"] = os.path.abspath(args.stats_json)
    return env


def run(args, cmd: list[str]) -> int:
    if not cmd:
        raise LocklabError("no command to run: locklab run --lock NAME [options] -- CMD [ARGS]")
    swap.check_arguments(args)
    if not args.lock and not args.lock_for and not args.rwlock:
        raise LocklabError("which locks? give --lock NAME (every mutex), --lock-for SITE=NAME "
                           "(the mutexes named SITE), --rwlock NAME (every rwlock), or several")
    library = swap.library_path()
    program = profile.resolve_program(cmd[0], library=library, verb="swap its locks")
    swap.mangled_sites(args, program)
    env = environment(args, library)
    swap.check_lock(env)
    sites = swap.Sites(args)
    try:
        proc = profile._spawn(cmd, sites.set(env))
    except BaseException:
        sites.discard()
        raise
    while True:
        try:
            status = proc.wait()
            break
        except KeyboardInterrupt:
            continue  # the program got the ^C too: its own status says what it did
    sites.warn_unmatched("run")
    if status < 0:
        profile._die_of(-status)
    return profile._status(status)


def add_parser(sub) -> None:
    p = sub.add_parser(
        "run", help="run a program with its pthread mutexes swapped for locklab locks",
        usage="locklab run [--lock NAME [--lock-opts K=V,...]] [--lock-for SITE=NAME[:K=V,...]] "
        "[--rwlock NAME[:K=V,...] [--rwlock-opts K=V,...]] [--stats] [--stats-json FILE] "
        "-- CMD [ARGS...]",
        description="Run CMD with liblocklab-swap.so preloaded: every pthread_mutex_t of "
        "the program is served by the algorithm NAME, or, with --lock-for, the mutexes "
        "a lock name of `locklab profile` names get the algorithm given them and the rest "
        "--lock's, or glibc's without --lock (process-shared, robust and "
        "priority-inheritance mutexes stay glibc's).  With --rwlock, every "
        "pthread_rwlock_t but a process-shared one is served by that rwlock of the "
        "library; alone, it leaves the mutexes glibc's.  The program's exit status or "
        "death signal is passed through.")
    swap.add_arguments(p, "the algorithm of every mutex no --lock-for chose (locklab list "
                       "names them)")
    p.add_argument("--rwlock", metavar="NAME[:K=V,...]",
                   help="the rwlock of every pthread_rwlock_t (locklab list --rwlock names "
                   "them), with its options after ':'")
    p.add_argument("--rwlock-opts", metavar="K=V,...", help="--rwlock's options")
    p.add_argument("--stats", action="store_true",
                   help="one line per process on stderr at its exit")
    p.add_argument("--stats-json", metavar="FILE",
                   help="append one JSON object per process to FILE at its exit")
    p.add_argument("cmd", nargs=argparse.REMAINDER, metavar="-- CMD [ARGS...]",
                   help="the program to run and its arguments")
    p.set_defaults(func=lambda args: run(args, args.cmd[1:] if args.cmd[:1] == ["--"]
                                         else args.cmd))
