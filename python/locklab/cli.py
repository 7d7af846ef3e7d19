"""The `locklab` command."""
from __future__ import annotations

import argparse
import json
import os
import signal
import sqlite3
import sys
from pathlib import Path

from . import __version__, compare, machine, native, presets, profile, programs, store, sweep
from . import verdict
from . import run as swap_run
from .errors import LocklabError
from .options import (MAX_NS, MAX_REPEAT, MAX_SECONDS, MAX_THREADS, int_list, name_list, number,
                      number_list)

# Handed to locklab-bench whole, before argparse sees them: their options are the C
# tool's, and argparse cannot pass options through untouched.
PASSTHROUGH = {
    "bench": "one benchmark point (locklab-bench bench ...)",
    "floor": "what the primitives cost on this machine (locklab-bench floor ...)",
    "moncost": "what the lock monitor costs uncontended locks (locklab-bench moncost ...)",
}
AXES = ("locks", "lock_opts", "threads", "mutexes", "hold_ns", "outside_ns", "workload", "gates",
        "workload_opts", "read_pct", "programs")
# The options whose names are not their axis's.
OPTION = {"gates": "--gate", "programs": "--program"}
WORKLOADS = ("mutex", "server", presets.RW_WORKLOAD)
RUN_HELP = "a run number, 'latest', or -N: the Nth last run (-1 the latest, -2 the one before)"


class Parser(argparse.ArgumentParser):
    """argparse, but bad input is one `locklab: ...` line, not usage plus an error."""

    def error(self, message: str):
        self.exit(2, f"locklab: {message}\n")


def cmd_list(args: argparse.Namespace) -> int:
    if args.rwlock and args.gate:
        raise LocklabError("list: --rwlock and --gate exclude each other")
    kind = ("rwlock" if args.rwlock else "gate" if args.gate
            else "all" if not args.name else "mutex")
    algos = native.algorithms(args.name, args.lock_opts or args.gate_opts, unbuilt=True,
                              kind=kind)
    if args.json:
        json.dump(algos, sys.stdout, indent=2)
        sys.stdout.write("\n")
        return 0
    unbuilt: dict[str, list[str]] = {}  # why -> the locks left out for it
    for a in algos:
        if not a.get("built", True):
            unbuilt.setdefault(a["note"], []).append(a["name"])
            continue
        if a.get("kind") == "gate":
            how = "gate"
        else:
            how = "parks" if a["parks"] else ("spins, FIFO" if a["fifo"] else "spins")
        if a.get("kind") == "rwlock":
            how = f"rwlock, {how}"
        print(f"{a['name']:<18} {a['summary']} [{how}]")
        for k in a["knobs"]:
            shown = f"{k['name']}={k['value']}"
            print(f"    {shown:<28} {k['help']}")
    for why, names in unbuilt.items():
        print(f"not built: {', '.join(names)} ({why})")
    return 0


def sweep_given(args: argparse.Namespace) -> dict:
    """The grid's values the command line gave (None: not given)."""
    for axis in ("lock_opts", "gates", "workload_opts", "programs"):
        if getattr(args, axis):  # the same variant twice would be the same points twice
            setattr(args, axis, list(dict.fromkeys(getattr(args, axis))))
    if args.locks is not None and args.add_locks is not None:
        raise LocklabError("--locks names every lock to sweep and --add-locks adds to the "
                           "preset's: give one of them")
    return {axis: getattr(args, axis) for axis in
            (*AXES, "add_locks", "duration", "warmup", "repeat", "timeout", "instrument")}


def new_spec(args: argparse.Namespace, given: dict) -> dict:
    """A new run's grid: the preset's with what was given, every lock and option
    checked (by locklab-bench, or the swapper for programs) before anything runs."""
    spec = presets.spec(programs.preset_of(args.preset, given), given)
    if spec.get("programs") and args.read_pct is not None:
        raise LocklabError("--read-pct does not apply to --preset programs")
    if spec.get("programs"):
        spec["locks"] = programs.expand_locks(spec["locks"])
        spec["locks"] += [programs.site_lock(e) for e in dict.fromkeys(args.lock_for)]
        spec["locks"] += [programs.rwlock_lock(e) for e in dict.fromkeys(args.rwlock)]
        spec["locks"] = list(dict.fromkeys(spec["locks"]))
        programs.validate(spec)
    elif args.lock_for:
        raise LocklabError("--lock-for swaps a program's named mutexes: give --program "
                           "or --preset programs")
    elif args.rwlock:
        raise LocklabError("--rwlock swaps a program's rwlocks: give --program or --preset "
                           "programs (the rw workload's rwlocks are --locks)")
    else:
        spec["locks"] = sweep.expand_locks(spec["locks"], spec.get("workload", "mutex"))
        sweep.validate(spec)
    sweep.check_environment(spec)
    return spec


def cmd_sweep(args: argparse.Namespace) -> int:
    given = sweep_given(args)
    if args.resume:
        extra = [OPTION.get(k, f"--{k.replace('_', '-')}") for k, v in given.items()
                 if v is not None]
        extra += ["--preset"] if args.preset else []
        extra += ["--lock-for"] if args.lock_for else []
        extra += ["--rwlock"] if args.rwlock else []
        if extra:
            raise LocklabError(f"--resume sweeps the run's own grid; drop {' '.join(extra)}")
        conn = store.connect(args.db, write=not args.dry_run)
        run_id = store.resolve_run(conn, args.resume)
        run = store.get_run(conn, run_id)
        spec = run["spec"]
        if spec.get("programs"):
            programs.validate(spec)
        sweep.check_environment(spec)
        for change in sweep.machine_changes(run):
            print(f"locklab: warning: run {run_id} began on another machine: {change}",
                  file=sys.stderr)
        if args.dry_run:
            return dry_run(spec, f"run {run_id} of {args.db}", conn, run_id)
    else:
        spec = new_spec(args, given)
        if args.dry_run:
            return dry_run(spec, f"a new run in {args.db}")
        described, floor = machine.describe(), machine.floor()
        conn = store.connect(args.db, create=True)
        run_id = store.new_run(conn, spec, described, floor)
    print(f"locklab: run {run_id} in {args.db}: {len(sweep.grid(spec))} points", file=sys.stderr)
    try:
        (programs.run if spec.get("programs") else sweep.run)(conn, run_id, spec)
    except KeyboardInterrupt as e:
        stored = len(store.done_points(conn, run_id))
        print(f"locklab: interrupted; {stored} points of run {run_id} stored, "
              f"resume with: locklab sweep --resume {run_id} --db {args.db}", file=sys.stderr)
        return 128 + getattr(e, "signum", signal.SIGINT)
    rows = store.points(conn, run_id)
    failed = sum(not r["ok"] for r in rows)
    print(f"locklab: run {run_id} done: {len(rows)} points, {failed} failed; "
          f"report with: locklab report {run_id} --db {args.db}", file=sys.stderr)
    print(verdict.terminal(rows, run_id), end="")
    return 1 if failed else 0


def dry_run(spec: dict, where: str, conn: sqlite3.Connection | None = None,
            run_id: int | None = None) -> int:
    """`sweep --dry-run`: the grid, its points and the time they would take, on stdout;
    nothing run, nothing stored."""
    points = sweep.grid(spec)
    done = store.done_points(conn, run_id) if conn is not None else set()
    todo = [p for p in points if p not in done]
    walls = ([r["wall_s"] for r in store.points(conn, run_id) if r["wall_s"]]
             if conn is not None else [])
    print(sweep.plan(spec, todo, len(points), sum(walls) / len(walls) if walls else None))
    print(f"dry run: nothing run or stored; without --dry-run this sweeps {where}")
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    # Imported here: matplotlib takes a good part of a second to load, which every
    # other command would pay for nothing.
    from . import report

    conn = store.connect(args.db, write=False)
    run_id = store.resolve_run(conn, args.run)
    index = report.write(conn, run_id, args.out or Path(f"locklab-report-{run_id}"))
    print(index)
    for name in report.TARGET_FILES:  # a server or rw run's targets, met or MISSED
        checked = index.parent / name
        if checked.exists():
            print(checked.read_text(encoding="utf-8"), end="")
    return 0


def cmd_compare(args: argparse.Namespace) -> int:
    conn = store.connect(args.db, write=False)
    result = compare.ratios(conn, store.resolve_run(conn, args.run_a),
                            store.resolve_run(conn, args.run_b), args.allow_mismatch)
    for difference in result["differences"]:
        print(f"locklab: warning: the runs differ: {difference}", file=sys.stderr)
    if args.json:
        json.dump(result, sys.stdout, indent=1)
        sys.stdout.write("\n")
    else:
        print(compare.render(result))
    return 0


def build_parser() -> argparse.ArgumentParser:
    p = Parser(prog="locklab", description="Mutexes chosen at run time: their benchmark, "
               "sweeps of it into a database, reports and comparisons of the runs, a lock "
               "profiler and a lock swapper for unmodified programs.",
               epilog="`locklab COMMAND --help` describes a command's options; README.md "
               "has a first session.")
    p.add_argument("--version", action="version", version=f"locklab {__version__}")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    ls = sub.add_parser("list", help="algorithms (mutexes, then rwlocks) and admission gates' "
                        "policies, their knobs and defaults")
    ls.add_argument("name", nargs="?", help="one algorithm (with --gate, one policy) only")
    ls.add_argument("--lock-opts", help="K=V,... to check and show applied")
    ls.add_argument("--gate-opts", help="K=V,... for a gate policy (with --gate NAME)")
    ls.add_argument("--json", action="store_true", help="machine-readable output")
    ls.add_argument("--rwlock", action="store_true",
                    help="read-write locks only; NAME is an rwlock's (pthread and ll are both)")
    ls.add_argument("--gate", action="store_true",
                    help="admission gates' policies only (innodb, fifo, auto); NAME is a policy")
    ls.set_defaults(func=cmd_list)

    for name, text in PASSTHROUGH.items():   # their options: `locklab NAME --help`
        sub.add_parser(name, help=f"{text}; --help for its options", add_help=False)

    db = Parser(add_help=False)
    db.add_argument("--db", default="locklab.db", type=Path,
                    help="the SQLite file of runs (default ./locklab.db)")

    sw = sub.add_parser("sweep", parents=[db], help="run a grid of points into the database",
                        description="Run every point of a grid, each in a fresh process. "
                        "Options override the preset's values (--locks too: --add-locks adds "
                        "to the preset's locks); lists are comma-separated. --dry-run shows "
                        "the grid, its points and the time expected, and runs nothing.")
    sw.add_argument("--preset", choices=sorted(presets.PRESETS),
                    help="quick: the InnoDB mutex study's story in minutes; innodb-mutex: that study's "
                    "whole grid; peers: every lock on one mutex; server-locks: "
                    "every lock that parks in the server workload, three shapes, no gate; "
                    "rw: every rwlock, glibc's in both preferences, at 5 read fractions; "
                    "concurrency, concurrency-quick: the innodb_thread_concurrency study's server "
                    "behind admission "
                    "gates (docs/admission.md); programs: memcached and MariaDB with their "
                    "pthread mutexes swapped for each lock that parks, tas and mcs, beside "
                    "the native server (docs/swap.md)")
    sw.add_argument("--program", dest="programs", action="append",
                    choices=sorted(programs.PROGRAMS), metavar="NAME",
                    help="programs: run this program only (memcached, mariadb); repeat for "
                    "both; implies --preset programs")
    sw.add_argument("--locks", type=name_list, metavar="L,...",
                    help="the locks to sweep, in place of the preset's: lock names "
                    "(NAME:K=V,... with the lock's own options), 'all', or 'parks' (every lock "
                    "that parks); rw: rwlock names (locklab list --rwlock)")
    sw.add_argument("--add-locks", type=name_list, metavar="L,...",
                    help="locks to sweep besides the preset's (or the default's), as --locks "
                    "names them")
    sw.add_argument("--lock-for", action="append", default=[], metavar="SITE=NAME[:K=V,...]",
                    help="programs: one more lock, NAME for the mutexes named SITE (as `locklab "
                    "profile` names a lock) and glibc's for the rest, stored as NAME@SITE; "
                    "repeatable")
    sw.add_argument("--rwlock", action="append", default=[], metavar="NAME[:K=V,...]",
                    help="programs: one more lock, the rwlock NAME (locklab list --rwlock) for "
                    "every pthread_rwlock_t of the server and glibc's mutexes, stored as "
                    "rwlock=NAME; repeatable")
    sw.add_argument("--lock-opts", action="append", metavar="K=V,...",
                    help="options applied to every lock; repeat for several variants "
                    "('' is the defaults)")
    sw.add_argument("--threads", type=int_list(1, MAX_THREADS), metavar="N,...",
                    help="thread counts")
    sw.add_argument("--clients", dest="threads", type=int_list(1, MAX_THREADS), metavar="C,...",
                    help="programs: the load generator's client counts (--threads' other name)")
    sw.add_argument("--mutexes", type=int_list(1, MAX_THREADS), metavar="M,...",
                    help="mutex counts (threads spread evenly over them)")
    sw.add_argument("--hold-ns", type=int_list(0, MAX_NS), metavar="H,...",
                    help="ns of work with the lock held")
    sw.add_argument("--outside-ns", type=int_list(0, MAX_NS), metavar="O,...",
                    help="ns of work between unlock and the next lock (0)")
    sw.add_argument("--workload", choices=WORKLOADS,
                    help="mutex: the lock loop (default); server: a database server's clients, "
                    "--mutexes secondary mutexes, --hold-ns on the hot mutex, --outside-ns "
                    "outside the gate; rw: threads reading or writing one rwlock")
    sw.add_argument("--read-pct", type=number_list(0, 100), metavar="P,...",
                    help="rw: percent of the operations that read (100,99.9,99,90,50)")
    sw.add_argument("--gate", dest="gates", action="append", metavar="POLICY[:K=V,...]",
                    help="server: an admission gate (innodb, fifo, auto; none for no gate); "
                    "repeat for several")
    sw.add_argument("--workload-opts", action="append", metavar="K=V,...",
                    help="server: workload options (locklab bench --workload server --help); "
                    "repeat for several variants")
    sw.add_argument("--duration", type=number(0.001, MAX_SECONDS), metavar="S",
                    help="seconds per point (1.0)")
    sw.add_argument("--warmup", type=number(0, MAX_SECONDS), metavar="S",
                    help="seconds before measuring (0.2; programs: of load after each server "
                    "start, 1)")
    sw.add_argument("--repeat", type=number(1, MAX_REPEAT, int), metavar="R",
                    help="runs of each point (1)")
    sw.add_argument("--timeout", type=number(0, 10 * MAX_SECONDS, strict=True), metavar="S",
                    help="seconds before a point is killed as hung (10 x its length + 30; "
                    "programs: 3 x --duration + 10, and the server is taken to be stuck)")
    sw.add_argument("--instrument", action="store_const", const=True,
                    help="run every point with the lock monitor's statistics on "
                    "(bench --instrument; stored with each point)")
    sw.add_argument("--resume", metavar="RUN",
                    help=f"run what RUN lacks, on its own grid ({RUN_HELP})")
    sw.add_argument("--dry-run", action="store_true",
                    help="print the grid, its point count and the time expected; run and "
                    "store nothing")
    sw.set_defaults(func=cmd_sweep)

    rp = sub.add_parser("report", parents=[db], help="graphs, tables and data of a run")
    rp.add_argument("run", metavar="RUN", help=RUN_HELP)
    rp.add_argument("--out", type=Path, help="directory (default ./locklab-report-RUN)")
    rp.set_defaults(func=cmd_report)

    cp = sub.add_parser(
        "compare", parents=[db], help="per-point ratios B/A of two runs, with their spread",
        description="Match the points of two runs (lock, threads, mutexes, hold, ...) and "
        "show B/A of each point's median ns/iter and ops/s, with the spread of the ratio "
        "over every pass of B against every pass of A. '~' marks a ratio whose spread covers "
        "1 (inside the noise), '?' one measured in a single pass (its noise unknown). Runs "
        "whose points were measured differently (point duration, warm-up) are refused; "
        "other differences (passes, the lock monitor, the machine) are warned of.")
    cp.add_argument("run_a", metavar="RUN_A", help=RUN_HELP)
    cp.add_argument("run_b", metavar="RUN_B", help=RUN_HELP)
    cp.add_argument("--allow-mismatch", action="store_true",
                    help="compare runs of different point durations or warm-ups all the "
                    "same (each difference is still warned of)")
    cp.add_argument("--json", action="store_true", help="machine-readable output")
    cp.set_defaults(func=cmd_compare)

    profile.add_parser(sub)
    swap_run.add_parser(sub)
    return p


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    try:
        if not argv:
            # Nothing asked: what there is to ask, on stderr, and argparse's status for
            # a command line that lacks its command.
            build_parser().print_help(sys.stderr)
            return 2
        if argv[0] in PASSTHROUGH:
            # locklab-bench's options are long ones only: its --help for argparse's -h.
            return native.passthrough([argv[0], *("--help" if a == "-h" else a
                                                  for a in argv[1:])])
        args = build_parser().parse_args(argv)
        return args.func(args)
    except LocklabError as e:
        print(f"locklab: {e}", file=sys.stderr)
        return 2
    except sqlite3.Error as e:
        print(f"locklab: database: {e}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        # The reader (head, a pager) has gone: the rest of the output is nobody's. Quiet,
        # as a C tool dying of SIGPIPE would be, and with the status a shell gives that.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 128 + signal.SIGPIPE
    except OSError as e:  # a report directory that cannot be made, a full disk
        print(f"locklab: {e.filename}: {e.strerror}" if e.filename else f"locklab: {e}",
              file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("locklab: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
