"""`locklab run`: an unmodified program with its pthread mutexes swapped.

Runs CMD with liblocklab-swap.so preloaded: every pthread_mutex_t of the
program gets the algorithm --lock names, or only those --lock-for names get
theirs, and every pthread_rwlock_t the rwlock --rwlock names, or only those
--rwlock-for names get theirs (docs/swap.md).  The
locks and their options are checked as the library checks them (swap.check) before
CMD starts, and CMD is checked as `locklab profile` checks it
(launch.program.resolve_program); the signals locklab gets go to the program
(launch.process.PassingSignals), and the program's exit status, or the signal it died
of, is locklab's.
"""
from __future__ import annotations

import argparse
import os

from ..errors import LocklabError
from ..launch.process import PassingSignals, pass_on, spawn
from ..launch.program import resolve_program
from ..swap import check
from ..swap.marks import LoadMarks
from ..swap.settings import library_path as swapper_library
from ..swap.sites import SiteCounts, mangled_sites
from .parser import add_command, add_swap_options, check_writable, command_of, swap_settings


def command(args: argparse.Namespace) -> int:
    cmd = command_of(args)
    if not cmd:
        raise LocklabError("no command to run: locklab run --lock NAME [options] -- CMD [ARGS]")
    settings = swap_settings(args, rwlock=args.rwlock, rwlock_opts=args.rwlock_opts,
                             rwlock_for=args.rwlock_for, stats=args.stats,
                             stats_json=args.stats_json)
    if not settings.swaps():
        raise LocklabError("which locks? give --lock NAME (every mutex), --lock-for SITE=NAME "
                           "(the mutexes named SITE), --rwlock NAME (every rwlock), "
                           "--rwlock-for SITE=NAME (the rwlocks named SITE), or several")
    if args.stats_json is not None:
        check_writable(args.stats_json, "--stats-json")
    library = swapper_library()
    program = resolve_program(cmd[0], library, "swap its locks")
    settings, origin = mangled_sites(settings, program)
    check.check(settings)
    counts, marks = SiteCounts(settings, origin), LoadMarks()
    env = marks.set(counts.set(settings.environment(dict(os.environ), library)))
    try:
        with PassingSignals() as signals:
            status = signals.wait(spawn(cmd, env, signals.preexec()))
    except BaseException:
        counts.discard()
        marks.discard()
        raise
    counts.warn_unmatched("run")
    marks.warn_unswapped(status, "run")
    return pass_on(status)


def add_parser(sub) -> None:
    p = sub.add_parser(
        "run", help="run a program with its pthread mutexes swapped for locklab locks",
        usage="locklab run [--lock NAME [--lock-opts K=V,...]] [--lock-for SITE=NAME[:K=V,...]] "
        "[--rwlock NAME[:K=V,...] [--rwlock-opts K=V,...]] [--rwlock-for SITE=NAME[:K=V,...]] "
        "[--stats] [--stats-json FILE] -- CMD [ARGS...]",
        description="Run CMD with liblocklab-swap.so preloaded: every pthread_mutex_t of "
        "the program is served by the algorithm NAME, or, with --lock-for, the mutexes "
        "a lock name of `locklab profile` names get the algorithm given them and the rest "
        "--lock's, or glibc's without --lock (process-shared, robust and "
        "priority-inheritance mutexes stay glibc's).  With --rwlock, every "
        "pthread_rwlock_t but a process-shared one is served by that rwlock of the "
        "library, or, with --rwlock-for, the rwlocks a lock name of `locklab profile` "
        "names get the rwlock given them and the rest --rwlock's, or glibc's; alone, "
        "they leave the mutexes glibc's.  The program's exit status or death signal is "
        "passed through.")
    add_swap_options(p, "the algorithm of every mutex no --lock-for chose (locklab list "
                     "names them)")
    p.add_argument("--rwlock", metavar="NAME[:K=V,...]",
                   help="the rwlock of every pthread_rwlock_t (locklab list --rwlock names "
                   "them), with its options after ':'")
    p.add_argument("--rwlock-opts", metavar="K=V,...", help="--rwlock's options")
    p.add_argument("--rwlock-for", action="append", default=[], metavar="SITE=NAME[:K=V,...]",
                   help="the rwlocks named SITE (as `locklab profile` names a lock) get the "
                   "rwlock NAME, with its options after ':' (repeatable; the rest: --rwlock's, "
                   "or glibc's without --rwlock)")
    p.add_argument("--stats", action="store_true",
                   help="one line per process on stderr at its exit")
    p.add_argument("--stats-json", metavar="FILE",
                   help="append one JSON object per process to FILE at its exit")
    add_command(p)
    p.set_defaults(func=command)
