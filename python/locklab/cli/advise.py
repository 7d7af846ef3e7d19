"""`locklab advise -- CMD`: which of a program's locks to swap, for which lock, by how
much and how sure (docs/advise.md; the package locklab.advise does the work).

Bad input is refused in one line, with nothing stored: an option that makes no
sense with the others, a candidate the swapper refuses, a program that fails
natively (its status and last line, before any profiling), a metric that matches
nothing (the output's last line), a server never ready (the timeout), a --site the
profile does not name.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import sys

from .. import machine
from ..advise import candidates, output, plan, runner, workloads
from ..advise.candidates import MUTEX, RWLOCK
from ..errors import LocklabError
from ..profile.session import ProfilerSettings
from ..sweep import store
from ..sweep.drivers import PROGRAMS
from ..sweep.presets import PROGRAM_TESTS
from ..stats import LEVEL
from .options import MAX_REPEAT, MAX_SECONDS, MAX_THREADS, in_range, lock_list
from .parser import RUN_HELP, add_command, command_of

# The options' defaults: applied to a new run's spec; a resumed run has its own.
DEFAULTS = {"top": 3, "min_share": 5.0, "site": [], "passes": 5, "collapse": 3.0,
            "ready_timeout": 60.0, "clients": 64, "duration": 2, "warmup": 1}
# Options a resumed run takes from its spec: none may be given with --resume.
PLANNED = (*DEFAULTS, "locks", "rwlocks", "metric", "higher", "lower", "load", "ready_port",
           "ready_regex", "program", "dry_run")
# The swapper's room for sites (swap/check.py): at most this many locks are kept.
MAX_TOP = 64


def option(args: argparse.Namespace, name: str):
    """The value of option NAME: given, or its default."""
    value = getattr(args, name)
    return DEFAULTS[name] if value is None else value


def regex(groups: int | None):
    """A regular expression, compiled to check it; with GROUPS, that many capture groups."""

    def parse(text: str) -> str:
        try:
            compiled = re.compile(text)
        except re.error as e:
            raise argparse.ArgumentTypeError(f"{text!r} is not a regular expression ({e})") \
                from None
        if groups is not None and compiled.groups != groups:
            raise argparse.ArgumentTypeError(
                f"{text!r} has {compiled.groups} capture groups; it needs one, around the number")
        return text

    return parse


def workload_kind(args: argparse.Namespace, cmd: list[str]) -> str:
    """batch, server or program, from the options; refusing those that do not go
    together."""
    if args.higher and args.lower:
        raise LocklabError("--higher and --lower: give one")
    if args.metric and not (args.higher or args.lower):
        raise LocklabError("--metric needs --higher or --lower: which way is better?")
    if (args.higher or args.lower) and not args.metric:
        raise LocklabError("--higher and --lower say which way --metric's number is better: "
                           "give --metric REGEX")
    if args.program:
        if cmd:
            raise LocklabError(f"--program {args.program} starts the server itself: drop "
                               f"'-- {' '.join(cmd)}'")
        for given, option in ((args.load, "--load"), (args.metric, "--metric")):
            if given:
                raise LocklabError(f"{option} is for a program of your own: --program "
                                   f"{args.program} is driven by its load generator")
        return "program"
    for given, option in ((args.clients, "--clients"), (args.duration, "--duration"),
                          (args.warmup, "--warmup")):
        if given is not None:
            raise LocklabError(f"{option} is for --program (memcached, mariadb)")
    if not cmd:
        raise LocklabError("no command to advise on: locklab advise [options] -- CMD [ARGS], "
                           "or --program memcached|mariadb")
    ready = [o for o, v in (("--ready-port", args.ready_port), ("--ready-regex", args.ready_regex))
             if v is not None]
    if args.load:
        if len(ready) != 1:
            raise LocklabError("--load needs the server's readiness: --ready-port PORT or "
                               "--ready-regex RE (one of them)")
        return "server"
    if ready or args.ready_timeout is not None:
        raise LocklabError(f"{(ready or ['--ready-timeout'])[0]} is for a server: give "
                           "--load CMD too")
    return "batch"


def new_spec(args: argparse.Namespace) -> dict:
    """The spec of a new advise run, every option checked."""
    cmd = command_of(args)
    kind = workload_kind(args, cmd)
    program = args.program
    spec = {name: option(args, name) for name in
            ("ready_timeout", "clients", "duration", "warmup", "passes", "top", "collapse")}
    return {
        **spec, "kind": plan.ADVISE, "workload": kind, "command": cmd, "cwd": os.getcwd(),
        "metric": args.metric, "higher": kind == "program" or bool(args.higher),
        "load": args.load, "ready_port": args.ready_port, "ready_regex": args.ready_regex,
        "program": program, "test": PROGRAM_TESTS[program][0] if program else "",
        "min_share": option(args, "min_share") / 100,
        "sites": list(dict.fromkeys(option(args, "site"))),
        "candidates": {MUTEX: candidates.checked(MUTEX, args.locks),
                       RWLOCK: candidates.checked(RWLOCK, args.rwlocks)},
    }


def what(spec: dict) -> str:
    return spec["program"] or " ".join(spec["command"])


def go(conn, run_id: int, spec: dict, workload: workloads.Workload, program, args) -> int:
    """The run's runs made (or the rest of them), then its verdict printed."""
    try:
        runner.Runner(conn, run_id, spec, workload, program).run()
    except KeyboardInterrupt as e:
        stored = len(store.done_points(conn, run_id))
        print(f"locklab: interrupted; {stored} runs of advise run {run_id} stored, resume "
              f"with: locklab advise --resume {run_id} --db {args.db}", file=sys.stderr)
        return 128 + getattr(e, "signum", 2)
    spec, judged, lines = output.report(conn, run_id, str(args.db))
    if args.json:
        json.dump(output.document(spec, judged, run_id, str(args.db)), sys.stdout, indent=1)
        sys.stdout.write("\n")
    else:
        print(lines, end="")
    print(f"locklab: advise run {run_id} done; report with: locklab report {run_id} --db "
          f"{args.db}", file=sys.stderr)
    return 0


def resume(args: argparse.Namespace) -> int:
    given = [f"--{name.replace('_', '-')}" for name in PLANNED
             if getattr(args, name) not in (None, False)]
    if command_of(args):
        given.append("CMD")
    if given:
        raise LocklabError(f"--resume goes on with the run's own plan; drop {' '.join(given)}")
    conn = store.connect(args.db)
    run_id = store.resolve_run(conn, args.resume)
    spec = store.get_run(conn, run_id)["spec"]
    if not plan.is_advise(spec):
        raise LocklabError(f"run {run_id} is a sweep, not locklab advise's: locklab sweep "
                           f"--resume {run_id} goes on with it")
    with workloads.of(spec) as workload:
        program = workload.program()
        workload.prepare()
        return go(conn, run_id, spec, workload, program, args)


def command(args: argparse.Namespace) -> int:
    if args.resume:
        return resume(args)
    spec = new_spec(args)
    with workloads.of(spec) as workload:
        program = workload.program()
        workload.prepare()
        spec["figure"] = workload.figure()
        first = workload.measure(dict(os.environ), None)
        if first.error:
            raise LocklabError(f"native run, before any profiling: {first.error}")
        if args.dry_run:
            print(plan.text(spec, spec["figure"], first.wall_s, what(spec)))
            print(f"dry run: one native run made ({first.wall_s:.3g} s); nothing profiled or "
                  f"stored; without --dry-run this advises into {args.db}")
            return 0
        profiled, reports = workload.profile(dict(os.environ), ProfilerSettings())
        if profiled.error:
            raise LocklabError(f"under the profiler: {profiled.error}")
        if not reports:
            raise LocklabError("the profiler left no report: no process of the run loaded it "
                               "(a statically linked or setuid program, or LD_PRELOAD removed)")
        ranked, _ = plan.rank(reports)
        spec["locks"] = plan.keep(ranked, spec)
        spec["profile"] = ranked[:plan.PROFILE_SHOWN]
        conn = store.connect(args.db, create=True)
        run_id = store.new_run(conn, spec, machine.describe(), {})
        native = plan.Variant()
        runner.record(conn, run_id, plan.point(native, plan.BASELINE, 0), spec["passes"], native,
                      first, None)
        kept = ", ".join(lk["lock"] for lk in spec["locks"]) or "none"
        print(f"locklab: advise run {run_id} in {args.db}: locks kept: {kept}; "
              f"{plan.planned(spec)} runs at most", file=sys.stderr)
        return go(conn, run_id, spec, workload, program, args)


def add_parser(sub, db) -> None:
    p = sub.add_parser(
        "advise", parents=[db], help="which lock to swap, for which lock, by how much",
        usage="locklab advise [options] -- CMD [ARGS...]  |  locklab advise --program NAME "
        "[options]  |  locklab advise --resume RUN",
        description="Run CMD natively --passes times and once under the profiler; keep its "
        "hottest mutexes and rwlocks; swap each alone for each candidate lock, in passes "
        "where native and every variant take turns; then try the best candidate on every "
        "lock of its kind at once. Each lock gets a verdict against native: swap (+N%, with "
        "its interval), keep, undecided (with the passes that would settle it) or collapsed, "
        "and the command that reproduces it. The interval is a "
        f"{100 * LEVEL:.0f}% exact bootstrap percentile interval on the ratio of medians "
        "(every resample weighed, no random draws): with the few passes a verdict has, ranks "
        "alone could never reach 95% for three passes against three, and the bootstrap keeps "
        "how far apart the passes lie (docs/advise.md). Results are stored as a run of their "
        "own in --db; `locklab report RUN` shows them.")
    p.add_argument("--top", type=in_range(1, MAX_TOP), metavar="K",
                   help="the hottest K mutexes and rwlocks to judge (3; 1-64)")
    p.add_argument("--min-share", type=in_range(0.0, 100.0, float, " percent"), metavar="PCT",
                   help="the least share of all waiting a lock must have to be judged (5)")
    p.add_argument("--site", action="append", metavar="LOCK",
                   help="judge this lock, as `locklab profile` names it, instead of the top K "
                   "(repeatable)")
    p.add_argument("--locks", type=lock_list, metavar="L,...",
                   help="a mutex's candidates, NAME or NAME:K=V,... (default: the library's "
                   "locks that park, but pthread, and ttas:spin=auto)")
    p.add_argument("--rwlocks", type=lock_list, metavar="L,...",
                   help="an rwlock's candidates (default: the library's rwlocks but pthread)")
    p.add_argument("--passes", type=in_range(3, MAX_REPEAT), metavar="R",
                   help="passes of native and every variant, and native runs before (5; "
                   "3-1000: fewer give no interval worth the name)")
    p.add_argument("--collapse", type=in_range(1.5, 1000.0, float), metavar="X", help="stop a run past X times native's median time, and call "
                   "a candidate X times worse than native collapsed (3; 1.5-1000)")
    p.add_argument("--metric", type=regex(1), metavar="REGEX",
                   help="judge by the number REGEX's one capture group takes from the output "
                   "(its last match; a server's: the load's output) instead of the wall time")
    p.add_argument("--higher", action="store_true", help="--metric: higher is better")
    p.add_argument("--lower", action="store_true", help="--metric: lower is better")
    p.add_argument("--load", metavar="CMD",
                   help="CMD is a server: run this shell command against it once it is ready, "
                   "each run; it gives the figure (--metric in its output, or its wall time)")
    p.add_argument("--ready-port", type=in_range(1, 65535), metavar="PORT",
                   help="the server is ready when 127.0.0.1:PORT accepts")
    p.add_argument("--ready-regex", type=regex(None), metavar="RE",
                   help="the server is ready when a line of its output matches RE")
    p.add_argument("--ready-timeout", type=in_range(0.1, MAX_SECONDS, float, " seconds"),
                   metavar="S", help="how long a server may take to be ready (60)")
    p.add_argument("--program", choices=sorted(PROGRAMS), metavar="NAME",
                   help="memcached or mariadb, started and loaded by the program sweep's "
                   "drivers (memcaslap, sysbench oltp_point_select): no CMD")
    p.add_argument("--clients", type=in_range(1, MAX_THREADS), metavar="N",
                   help="--program: the load generator's clients (64)")
    p.add_argument("--duration", type=in_range(1, MAX_SECONDS), metavar="S",
                   help="--program: seconds of load a run (2)")
    p.add_argument("--warmup", type=in_range(0, MAX_SECONDS), metavar="S",
                   help="--program: seconds of load after each server start, unmeasured (1)")
    p.add_argument("--dry-run", action="store_true",
                   help="run the program once natively, print the plan and the time it would "
                   "take; profile and store nothing")
    p.add_argument("--json", action="store_true",
                   help="print the verdict as one JSON object (`locks`: lock, kind, wait_share, "
                   "verdict, best, ratio, ci_low, ci_high, command, by wait)")
    p.add_argument("--resume", metavar="RUN", help=f"go on with an interrupted advise run ({RUN_HELP})")
    add_command(p)
    p.set_defaults(func=command)
