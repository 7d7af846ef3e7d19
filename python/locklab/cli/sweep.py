"""`locklab sweep`: a grid of points run into the database, or a stored run resumed,
or the grid and its expected time shown (--dry-run)."""
from __future__ import annotations

import argparse
import signal
import sqlite3
import sys

from .. import machine
from ..errors import LocklabError
from ..sweep import kinds, plan, presets, programs, store
from ..sweep.drivers import PROGRAMS
from ..report import verdict
from .options import (MAX_NS, MAX_REPEAT, MAX_SECONDS, MAX_THREADS, int_list, lock_list, number,
                      number_list)
from .parser import RUN_HELP

# What --resume takes besides the run: a new timeout for the points it runs.
RESUME_TAKES = ("timeout",)
AXES = ("locks", "lock_opts", "threads", "mutexes", "hold_ns", "outside_ns", "workload", "gates",
        "workload_opts", "read_pct", "programs")
# The options whose names are not their axis's.
OPTION = {"gates": "--gate", "programs": "--program"}
WORKLOADS = ("mutex", "server", presets.RW_WORKLOAD)


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
    checked (by locklab-bench, or the library for programs) before anything runs."""
    spec = presets.spec(programs.preset_of(args.preset, given), given)
    kinds.check_size(spec)
    kinds.of(spec).prepare(spec, args.lock_for, args.rwlock, args.rwlock_for)
    kinds.check_size(spec)
    kinds.check_timeout(spec)
    kinds.check_environment(spec)
    return spec


def command(args: argparse.Namespace) -> int:
    given = sweep_given(args)
    if args.retry_failed and args.resume is None:
        raise LocklabError("--retry-failed is for --resume RUN: a new run has no failed point")
    if args.resume is not None:
        extra = [OPTION.get(k, f"--{k.replace('_', '-')}") for k, v in given.items()
                 if v is not None and k not in RESUME_TAKES]
        extra += ["--preset"] if args.preset else []
        extra += ["--lock-for"] if args.lock_for else []
        extra += ["--rwlock"] if args.rwlock else []
        extra += ["--rwlock-for"] if args.rwlock_for else []
        if extra:
            raise LocklabError(f"--resume sweeps the run's own grid; drop {' '.join(extra)}")
        conn = store.connect(args.db, write=not args.dry_run)
        run_id = store.resolve_run(conn, args.resume)
        run = store.get_run(conn, run_id)
        spec = run["spec"]
        if args.timeout is not None:
            spec["timeout"] = args.timeout
        kinds.check_size(spec)
        kinds.check_timeout(spec)
        kinds.of(spec).before_resume(spec)
        kinds.check_environment(spec)
        for change in machine.changes_since(run):
            print(f"locklab: warning: run {run_id} began on another machine: {change}",
                  file=sys.stderr)
        if args.dry_run:
            return dry_run(spec, f"run {run_id} of {args.db}", conn, run_id, args.retry_failed)
        if args.timeout is not None:
            store.set_spec(conn, run_id, spec)
        if args.retry_failed:
            print(f"locklab: run {run_id}: {store.forget_failed(conn, run_id)} failed points "
                  "to run again", file=sys.stderr)
    else:
        spec = new_spec(args, given)
        if args.dry_run:
            return dry_run(spec, f"a new run in {args.db}")
        described, floor = machine.describe(), machine.floor()
        conn = store.connect(args.db, create=True)
        run_id = store.new_run(conn, spec, described, floor)
    kind = kinds.of(spec)
    print(f"locklab: run {run_id} in {args.db}: {len(kinds.grid(spec))} points", file=sys.stderr)
    try:
        kind.run(conn, run_id, spec)
    except KeyboardInterrupt as e:
        stored = len(store.done_points(conn, run_id))
        print(f"locklab: interrupted; {stored} points of run {run_id} stored, "
              f"resume with: locklab sweep --resume {run_id} --db {args.db}", file=sys.stderr)
        return 128 + getattr(e, "signum", signal.SIGINT)
    rows = store.points(conn, run_id)
    failed = sum(not r["ok"] for r in rows)
    print(f"locklab: run {run_id} done: {len(rows)} points, {failed} failed; "
          f"report with: locklab report {run_id} --db {args.db}", file=sys.stderr)
    print(verdict.terminal(rows, run_id, kinds.grid(spec)), end="")
    return 1 if failed else 0


def dry_run(spec: dict, where: str, conn: sqlite3.Connection | None = None,
            run_id: int | None = None, retry_failed: bool = False) -> int:
    """`sweep --dry-run`: the grid, its points and the time they would take, on stdout
    (RETRY_FAILED: the failed points of RUN_ID counted among them); nothing run, nothing
    stored."""
    points = kinds.grid(spec)
    done = store.done_points(conn, run_id, retry_failed) if conn is not None else set()
    todo = [p for p in points if p not in done]
    walls = ([r["wall_s"] for r in store.points(conn, run_id) if r["wall_s"]]
             if conn is not None else [])
    print(plan.plan(spec, todo, len(points), sum(walls) / len(walls) if walls else None))
    print(f"dry run: nothing run or stored; without --dry-run this sweeps {where}")
    return 0


def add_parser(sub, db) -> None:
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
                    choices=sorted(PROGRAMS), metavar="NAME",
                    help="programs: run this program only (memcached, mariadb); repeat for "
                    "both; implies --preset programs")
    sw.add_argument("--locks", type=lock_list, metavar="L,...",
                    help="the locks to sweep, in place of the preset's: lock names "
                    "(NAME:K=V,... with the lock's own options: an item with '=' is an "
                    "option of the lock before it, so 'innodb56:spin=tas,sync_spin_loops=80,ll' "
                    "is two locks), 'all', or 'parks' (every lock that parks); rw: rwlock "
                    "names (locklab list --rwlock)")
    sw.add_argument("--add-locks", type=lock_list, metavar="L,...",
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
    sw.add_argument("--rwlock-for", action="append", default=[], metavar="SITE=NAME[:K=V,...]",
                    help="programs: one more lock, the rwlock NAME for the rwlocks named SITE "
                    "(as `locklab profile` names a lock), glibc's for the rest and for the "
                    "mutexes, stored as rwlock=NAME@SITE; repeatable")
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
                    help="seconds before a point is killed as hung, more than its --duration "
                    "and warm-up (10 x its length + 30; programs: 3 x --duration + 10, and the "
                    "server is taken to be stuck); with --resume, for the points it runs")
    sw.add_argument("--instrument", action="store_const", const=True,
                    help="run every point with the lock monitor's statistics on "
                    "(bench --instrument; stored with each point)")
    sw.add_argument("--resume", metavar="RUN",
                    help=f"run what RUN lacks, on its own grid ({RUN_HELP})")
    sw.add_argument("--retry-failed", action="store_true",
                    help="with --resume: run RUN's failed points again too, their failures "
                    "dropped from the run first")
    sw.add_argument("--dry-run", action="store_true",
                    help="print the grid, its point count and the time expected; run and "
                    "store nothing")
    sw.set_defaults(func=command)
