"""`locklab profile -p PID`: the options that attach `profile` to a running process
instead of starting one, what they refuse, and its help saying whether this install
and this machine can attach (profile/attach.py runs the tracer)."""
from __future__ import annotations

import argparse
import sys
from contextlib import nullcontext

from ..errors import LocklabError
from ..profile import attach
from ..profile.session import ProfilerSettings
from .options import in_range
from .parser import command_of

MAX_PID = 0x3FFFFFFF  # the kernel's PID_MAX_LIMIT on 64-bit


class _Help(argparse.Action):
    """-h: the help, ending with whether -p can work here (asked only then)."""

    def __init__(self, option_strings, dest, **kwargs):
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS,
                         help="show this help message and exit")

    def __call__(self, parser, namespace, values, option_string=None):
        known = attach.readiness()
        if known is not None:
            parser.epilog = known.summary()
        parser.print_help()
        parser.exit()


def add_options(p: argparse.ArgumentParser) -> None:
    """-p and --duration, and the help that says whether they can work here (P made
    with add_help=False)."""
    p.add_argument("-h", "--help", action=_Help)
    p.add_argument("-p", "--pid", type=in_range(1, MAX_PID), metavar="PID",
                   help="attach to the running process PID instead of starting CMD: its futex "
                   "waits traced by eBPF (locklab-attach; root), holders seen as wakers, hold "
                   "times not seen")
    p.add_argument("--duration", type=in_range(0.01, 31536000.0, float, " seconds"),
                   metavar="S", help="-p: trace S seconds (default: until Ctrl-C, SIGTERM or "
                   "the process's exit)")


def refuse(args: argparse.Namespace) -> None:
    """The options that make no sense with -p (or without it), refused in one line."""
    if args.pid is None:
        if args.duration is not None:
            raise LocklabError("--duration is for -p PID (a program started with -- CMD is "
                               "profiled until it exits)")
        return
    if command_of(args):
        raise LocklabError("-p PID attaches to a running process: give no command after --")
    for given, option in ((args.lock, "--lock"), (args.lock_opts, "--lock-opts"),
                          (args.lock_for, "--lock-for")):
        if given:
            raise LocklabError(f"{option} is for a program profile starts (-- CMD): a running "
                               "process's mutexes cannot be swapped")
    if args.hold_every is not None:
        raise LocklabError("--hold-every is for -- CMD: attached (-p), hold times are not seen")
    if args.signal is not None:
        raise LocklabError("--signal is for -- CMD: attached (-p), --interval S reports "
                           "as it goes")


def command(args: argparse.Namespace, fmt: str) -> int:
    """Trace process args.pid, its report in FMT (profile.output_format's) to -o or stdout."""
    known = attach.readiness()
    if known is not None and not known.built:
        raise LocklabError(f"-p PID needs {attach.TOOL}, which was not built: {known.note}")
    settings = ProfilerSettings(
        stack_depth=args.stack_depth, depth=args.depth, top=args.top, min_wait=args.min_wait,
        interval=args.interval, threads=args.threads,
        trace_events=args.trace_events if args.trace else 0)
    with open(args.output, "wb") if args.output else nullcontext(sys.stdout.buffer) as out:
        return attach.run(args.pid, args.duration, settings, fmt, out, args.lines, args.trace)
