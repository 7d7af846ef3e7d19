"""`locklab profile -- CMD`: which locks made a program's threads wait (plockstat for
Linux), with its mutexes swapped when --lock or --lock-for ask for it."""
from __future__ import annotations

import argparse
import os
import signal
import sys

from ..errors import LocklabError
from ..launch.process import pass_on
from ..launch.program import resolve_program
from ..profile import session
from ..swap import check
from ..swap.settings import library_path as swapper_library
from ..swap.sites import SiteCounts, mangled_sites
from .options import in_range
from .parser import add_command, add_swap_options, check_writable, command_of, swap_settings

LIMIT = (1 << 63) - 1
TRACE_EVENTS = 1 << 14  # waits kept per thread for --trace
SIGNALS_VALID = f"{', '.join(session.SIGNALS)}, their numbers, or 0 for none"


def signal_number(text: str) -> int:
    """PROF, SIGPROF, 27 or 0 (none): the report signal; refused with one line."""
    name = text.upper().removeprefix("SIG")
    if text == "0":
        return 0
    if text.isdigit() and int(text) in session.SIGNALS.values():
        return int(text)
    if name in session.SIGNALS:
        return session.SIGNALS[name]
    raise argparse.ArgumentTypeError(f"unknown report signal {text!r} (valid: {SIGNALS_VALID})")


def command(args: argparse.Namespace) -> int:
    cmd = command_of(args)
    if not cmd:
        raise LocklabError("no command to profile: locklab profile [options] -- CMD [ARGS]")
    program = resolve_program(cmd[0], session.library_path(), "profile it")
    swapped = swap_settings(args)
    origin: dict[str, str] = {}
    if swapped.swaps():
        swapped, origin = mangled_sites(swapped, program)
        check.check(swapped)
    fmt = "json" if args.json else "folded" if args.folded else "pprof" if args.pprof else "text"
    if args.lines and fmt != "folded":
        raise LocklabError("--lines is for --folded (text, JSON and pprof always carry "
                           "file:line where it is known)")
    if args.trace_events != TRACE_EVENTS and not args.trace:
        raise LocklabError("--trace-events is for --trace FILE")
    for option, path in (("-o", args.output), ("--trace", args.trace)):
        if path is not None:
            check_writable(path, option)
    if fmt == "pprof" and not args.output and sys.stdout.isatty():
        raise LocklabError("--pprof writes a binary profile: give -o FILE")
    measured = session.ProfilerSettings(
        stack_depth=args.stack_depth, depth=args.depth, hold_every=args.hold_every,
        top=args.top, min_wait=args.min_wait, interval=args.interval, threads=args.threads,
        trace_events=args.trace_events if args.trace else 0, signal=args.signal)
    env = dict(os.environ)
    counts = None
    if swapped.swaps():
        env = swapped.environment(env, swapper_library())
        counts = SiteCounts(swapped, origin)
        env = counts.set(env)
    out = open(args.output, "wb") if args.output else sys.stdout.buffer
    try:
        status = session.run(cmd, env, measured, fmt, out, args.lines, args.trace)
    except BaseException:
        if counts:
            counts.discard()
        raise
    finally:
        if args.output:
            out.close()
    if counts:
        counts.warn_unmatched("profile")
    return pass_on(status)


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
    p.add_argument("--trace-events", type=in_range(1, 1 << 20), default=TRACE_EVENTS,
                   metavar="N",
                   help="waits each thread keeps for --trace, the last N (16384; 1-1048576)")
    p.add_argument("-s", "--stack-depth", type=in_range(1, 64), metavar="DEPTH",
                   help="text: a wait histogram and DEPTH frames per entry (1-64)")
    p.add_argument("--depth", type=in_range(1, 64), metavar="N",
                   help="frames captured per stack (16; 1-64)")
    p.add_argument("--top", type=in_range(1, 1 << 30), metavar="N",
                   help="at most N entries per section")
    p.add_argument("--min-wait", type=in_range(0, LIMIT), metavar="NS",
                   help="leave out entries that waited less than NS in total")
    p.add_argument("--threads", action="store_true", help="add the per-thread breakdown")
    p.add_argument("--interval", type=in_range(0.01, 86400.0, float, " seconds"), metavar="S",
                   help="also report what happened in each S seconds, as it happens "
                   "(0.01-86400)")
    p.add_argument("--signal", type=signal_number, default=signal.SIGPROF, metavar="SIG",
                   help="report the run so far when the program gets SIG (PROF, USR1, USR2, "
                   "URG, WINCH or its number; 0: none)")
    p.add_argument("--hold-every", type=in_range(0, 1 << 30, int, "; 0: off"),
                   metavar="N", help="sample the hold time of 1 acquisition in N (100; 0: off)")
    add_swap_options(p, "profile the program with its mutexes swapped for this algorithm, "
                     "as `locklab run --lock` swaps them (locklab list names them)")
    add_command(p)
    p.set_defaults(func=command)
