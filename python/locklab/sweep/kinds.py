"""The two kinds of sweep, behind one interface: the benchmark's (bench.py: a fresh
locklab-bench process per point) and real programs' (programs.py: a server start per
pass, program and lock, driven by its load generator). A spec with `programs` is the
second kind; the command, the dry run and the report ask the kind, never the spec."""
from __future__ import annotations

import os
import sqlite3
import sys
from typing import Protocol, TextIO

from ..errors import LocklabError
from . import bench, programs
from .store import Point

# A stored run's spec["kind"] when `locklab advise` made it: a run of its own kind
# (advise/plan.py), which no sweep goes on with.
ADVISE = "advise"
# Environment variables that make liblocklab measure with the lock monitor on.
# (LOCKLAB_WATCHDOG adds a thread that scans the locks: not the configuration either.)
MONITOR_ENV = ("LOCKLAB_MONITOR", "LOCKLAB_WATCHDOG")


class SweepKind(Protocol):
    # The time a point costs beyond its window, as the dry run says it.
    start_cost: str
    # What the lock monitor, set in the environment, would be on for; and the fix.
    monitor_refusal: tuple[str, str]

    def workload(self, spec: dict) -> str:
        """The workload the dry run names."""

    def prepare(self, spec: dict, lock_for: list[str], rwlocks: list[str],
                rwlock_for: list[str]) -> None:
        """A new run's spec made ready: its locks resolved ('all', 'parks'), --lock-for's,
        --rwlock's and --rwlock-for's added, and everything refused that cannot run,
        before anything runs or is stored."""

    def before_resume(self, spec: dict) -> None:
        """Refuse a stored run whose points this machine cannot run now."""

    def grid(self, spec: dict) -> list[Point]:
        """Every point of the sweep, in the order they run."""

    def size(self, spec: dict) -> int:
        """How many points grid() gives at most, counted without building it."""

    def longest_s(self, spec: dict) -> float:
        """The seconds a point's longest timed stretch lasts: what --timeout must exceed."""

    def expected_seconds(self, spec: dict, points: list[Point]) -> float:
        """About how long POINTS take to run, from their lengths alone."""

    def run(self, conn: sqlite3.Connection, run_id: int, spec: dict,
            stream: TextIO = sys.stderr) -> None:
        """Run every point of the run not stored yet, storing each as it ends."""


def of(spec: dict) -> SweepKind:
    refuse_advise(spec, "a sweep")
    return programs.KIND if spec.get("programs") else bench.KIND


def refuse_advise(spec: dict, what: str) -> None:
    """Refuse, in one line, `locklab advise`'s run where WHAT is wanted."""
    if spec.get("kind") == ADVISE:
        raise LocklabError(f"that run is locklab advise's, not {what} (locklab advise --resume "
                           "goes on with it, locklab report shows it)")


# The most points one sweep may have: a grid past it is refused before it is built
# (days of points, and gigabytes of memory before the first runs).
MAX_POINTS = 100_000


def check_size(spec: dict) -> None:
    """Refuse a grid of more than MAX_POINTS points, counted without building it (a lock
    list's 'all' or 'parks' not yet resolved counts as one lock)."""
    n = of(spec).size(spec)
    if n > MAX_POINTS:
        raise LocklabError(f"the grid has {n} points, more than the {MAX_POINTS} one sweep may "
                           "run: give fewer values (--threads, --hold-ns, --locks, --repeat ...)")


def check_timeout(spec: dict) -> None:
    """Refuse a timeout that every point would run into."""
    timeout, longest = spec.get("timeout"), of(spec).longest_s(spec)
    if timeout is not None and timeout <= longest:
        raise LocklabError(f"--timeout {timeout:g} would kill every point: a point runs "
                           f"{longest:g} s (its --duration and warm-up) before it can end")


def grid(spec: dict) -> list[Point]:
    """Every point of SPEC's sweep, in the order they run (check_size's refusal first)."""
    check_size(spec)
    return of(spec).grid(spec)


def check_environment(spec: dict) -> None:
    """Refuse an environment that would measure other than the run's spec says.

    The benchmark and the servers inherit the sweep's environment, and the library
    turns its lock monitor on from there: every point would be measured instrumented
    and stored as if it were not.
    """
    if spec.get("instrument"):
        return
    set_here = [name for name in MONITOR_ENV if os.environ.get(name, "") not in ("", "0", "off")]
    if set_here:
        what, fix = of(spec).monitor_refusal
        raise LocklabError(f"{set_here[0]}={os.environ[set_here[0]]} would run {what} with "
                           f"the lock monitor on: {fix}")
