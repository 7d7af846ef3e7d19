"""The runs of an advise run, made and stored one by one (plan.py's order).

Each run is committed to the store the moment it ends, so Ctrl-C (or SIGTERM, or a
kill) loses at most the run in progress, and `locklab advise --resume RUN` makes
only what is missing.  A variant's run that passes the collapse limit (COLLAPSE x
the baseline's median wall time) is killed and stored as collapsed; the variant's
later runs in that phase are not made.  Native runs have no limit: every
comparison needs them, and a slow one is the machine's noise, which they measure.  The whole phase's variants are chosen from
the passes' stored runs (verdict.whole_variants), so a resumed run chooses the same.

A variant runs with liblocklab-swap.so set up as `locklab run` sets it up for the
same options (Variant.settings), with no statistics asked: nothing in the program
costs more than `locklab run --lock-for` does.  The sites' matched counts (the
swapper's file of them, as `locklab run` reads it) are stored with each run.
"""
from __future__ import annotations

import json
import os
import signal
import sqlite3
import sys
from pathlib import Path
from statistics import median
from typing import TextIO

from ..errors import Interrupted
from ..swap.settings import library_path as swapper_library
from ..swap.sites import SiteCounts, mangled_sites
from ..sweep import store
from ..sweep.progress import Progress, store_point
from ..sweep.store import Point
from . import verdict
from .candidates import RWLOCK
from .plan import BASELINE, PASS, WHOLE, Variant, pass_variants, planned, point, turned
from .workloads import COLLAPSED, Outcome, Workload


def label(p: Point, passes: int) -> str:
    """A run's name in progress lines: 'pass 2/5: ll for hot_cold`hot_lock'."""
    phase = {BASELINE: "baseline", PASS: "pass", WHOLE: "whole"}[p.workload]
    return f"{phase} {p.rep + 1}/{passes}: {Variant.of(p.lock).text()}"


def environment(variant: Variant, program: Path) -> tuple[dict, SiteCounts | None]:
    """The environment of a run of VARIANT (native: ours), and the sites' counts file."""
    env = dict(os.environ)
    if variant.native:
        return env, None
    settings, origin = mangled_sites(variant.settings(), program)
    counts = SiteCounts(settings, origin)
    return counts.set(settings.environment(env, swapper_library())), counts


def measure(workload: Workload, variant: Variant, program: Path,
            limit: float | None) -> tuple[Outcome, int | None]:
    """One run of VARIANT: its outcome, and how many locks its site matched (None
    without a site, or when no process lived to say)."""
    env, counts = environment(variant, program)
    try:
        outcome = workload.measure(env, limit)
    except BaseException:
        if counts:
            counts.discard()
        raise
    if counts is None:
        return outcome, None
    matched, processes = counts.matched()
    return outcome, sum(matched.values()) if processes else None


def record(conn: sqlite3.Connection, run_id: int, p: Point, passes: int, variant: Variant,
           outcome: Outcome, matched: int | None) -> None:
    column = "swap_rwlocks" if variant.kind == RWLOCK else "swap_mutexes"
    result = {"metric": outcome.value, "duration_s": outcome.wall_s, column: matched}
    raw = {"variant": variant.text(), "figure": outcome.value, "wall_s": outcome.wall_s,
           "collapsed": outcome.collapsed, "matched": matched}
    store_point(conn, run_id, p, passes, {"error": outcome.error, "wall_s": outcome.wall_s,
                                          "result": result, "raw": json.dumps(raw)})


def collapse_limit(spec: dict, rows: list[dict]) -> float | None:
    """How long a run may take: COLLAPSE x the baseline's median wall time."""
    walls = [r["wall_s"] for r in rows if r["workload"] == BASELINE and r["ok"]]
    return spec["collapse"] * median(walls) if walls else None


def _terminated(signum, frame):
    raise Interrupted(signum)


class Runner:
    """The runs of one stored advise run, made in order, each stored as it ends."""

    def __init__(self, conn: sqlite3.Connection, run_id: int, spec: dict, workload: Workload,
                 program: Path, stream: TextIO = sys.stderr):
        self.conn, self.run_id, self.spec, self.workload = conn, run_id, spec, workload
        self.program, self.stream = program, stream
        self.passes = spec["passes"]

    def rows(self) -> list[dict]:
        return store.points(self.conn, self.run_id)

    def run(self) -> None:
        done = store.done_points(self.conn, self.run_id)
        progress = Progress(planned(self.spec), len(done), self.passes, self.stream, label)
        previous = signal.signal(signal.SIGTERM, _terminated)
        try:
            self.phase(BASELINE, lambda rep: [Variant()], done, progress)
            variants = [Variant(), *pass_variants(self.spec)]
            self.phase(PASS, lambda rep: turned(variants, rep), done, progress)
            whole = [Variant(), *verdict.whole_variants(self.spec, self.rows())]
            # One variant a kind was planned; a kind with nothing judged has none.
            progress.drop(self.passes * (1 + len(set(lk["kind"] for lk in self.spec["locks"]))
                                         - len(whole)))
            self.phase(WHOLE, lambda rep: turned(whole, rep), done, progress)
        finally:
            progress.close()
            signal.signal(signal.SIGTERM, previous)
        store.finish_run(self.conn, self.run_id)

    def phase(self, phase: str, order, done: set, progress: Progress) -> None:
        """PHASE's passes, ORDER(rep) giving each pass's variants; a variant that
        collapsed is not run again in the phase."""
        rows = self.rows()
        limit = collapse_limit(self.spec, rows)
        stopped = {r["lock"] for r in rows
                   if r["workload"] == phase and (r["error"] or "").startswith(COLLAPSED)}
        for rep in range(self.passes):
            for variant in order(rep):
                p = point(variant, phase, rep)
                if p in done:
                    continue
                if p.lock in stopped:
                    progress.drop(1)
                    continue
                progress.start(p)
                outcome, matched = measure(self.workload, variant, self.program,
                                           None if variant.native else limit)
                record(self.conn, self.run_id, p, self.passes, variant, outcome, matched)
                done.add(p)
                progress.finish(p, outcome.wall_s, outcome.error)
                if outcome.collapsed:
                    stopped.add(p.lock)
