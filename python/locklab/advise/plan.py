"""What an advise run is: its spec (the program, how a run is judged, the candidates,
the locks the profile kept), the variants of the program it runs, and its runs in
the order they are made, each a point of the store.

The runs, in order:
  baseline  R native runs: the program must run natively before anything else is
            tried, and their median wall time sets the collapse limit
  (profile) one run under the profiler, before the run is stored: it names the
            locks, and a lock asked for must be among them
  passes    R passes; in each, native and every variant (each kept lock alone swapped
            for each candidate) take turns, the order turned by one each pass, so
            that what the machine does meanwhile falls on all of them alike
  whole     R passes of native and, for each kind of lock kept, the best candidate
            on every lock of that kind at once (chosen from the passes: verdict.py)

A point's lock is its variant's label (Variant.label): `native`, `NAME@SITE` (the
mutexes named SITE), `rwlock=NAME@SITE`, `NAME` (every mutex), `rwlock=NAME`: the
program sweep's names for the same swaps.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..errors import LocklabError
from ..swap.settings import SwapSettings
from ..sweep.presets import NATIVE, RWLOCK_MARK, split_lock
from ..sweep.kinds import ADVISE
from ..sweep.programs import SITE_MARK
from ..sweep.progress import clock
from ..sweep.store import Point
from .candidates import MUTEX, RWLOCK

# A point's workload: the phase it belongs to.
BASELINE, PASS, WHOLE = "advise:baseline", "advise:pass", "advise:whole"
PHASES = (BASELINE, PASS, WHOLE)
# The profile's locks the spec keeps for the report.
PROFILE_SHOWN = 10
# Besides its figure, what a run costs: a program's start and the swapper's set-up.
RUN_COST_S = {"batch": 0.05, "server": 0.5, "program": 2.0}


@dataclass(frozen=True)
class Variant:
    """The program as one run has it: native (LOCK ''), or the candidate LOCK
    ('NAME[:K=V,...]') serving the locks of KIND named SITE, or all of them (SITE
    None)."""

    lock: str = ""
    kind: str = MUTEX
    site: str | None = None

    @property
    def native(self) -> bool:
        return not self.lock

    def label(self) -> str:
        if self.native:
            return NATIVE
        mark = RWLOCK_MARK if self.kind == RWLOCK else ""
        return f"{mark}{self.lock}" + (f"{SITE_MARK}{self.site}" if self.site else "")

    @classmethod
    def of(cls, label: str) -> Variant:
        if label == NATIVE:
            return cls()
        kind = RWLOCK if label.startswith(RWLOCK_MARK) else MUTEX
        lock, _, site = label.removeprefix(RWLOCK_MARK).partition(SITE_MARK)
        return cls(lock, kind, site or None)

    def run_options(self) -> list[str]:
        """`locklab run`'s options for this variant."""
        if self.site:
            return [f"--{'rwlock' if self.kind == RWLOCK else 'lock'}-for",
                    f"{self.site}={self.lock}"]
        if self.kind == RWLOCK:
            return ["--rwlock", self.lock]
        name, opts = split_lock(self.lock)
        return ["--lock", name, *(["--lock-opts", opts] if opts else [])]

    def settings(self) -> SwapSettings:
        """The swapper's settings for this variant, as `locklab run` gives them."""
        if self.site:
            entry = (f"{self.site}={self.lock}",)
            return SwapSettings(lock_for=entry) if self.kind == MUTEX else \
                SwapSettings(rwlock_for=entry)
        name, opts = split_lock(self.lock)
        if self.kind == RWLOCK:
            return SwapSettings(rwlock=name, rwlock_opts=opts or None)
        return SwapSettings(lock=name, lock_opts=opts or None)

    def text(self) -> str:
        """The variant in words: 'native', 'll on every mutex', 'tas for SITE'."""
        if self.native:
            return NATIVE
        return f"{self.lock} for {self.site}" if self.site else f"{self.lock} on every {self.kind}"


def is_advise(spec: dict) -> bool:
    return spec.get("kind") == ADVISE


def point(variant: Variant, phase: str, rep: int) -> Point:
    return Point(variant.label(), "", 0, 0, 0, 0, rep, phase)


def rank(reports: list[dict]) -> tuple[list[dict], int]:
    """The profile's locks by total wait, every process's added together: ({lock, kind,
    wait_ns, count, share}, ...), and the wait of all of them."""
    locks: dict[tuple[str, str], dict] = {}
    for rep in reports:
        for lk in rep["locks"]:
            entry = locks.setdefault((lk["name"], lk["kind"]), {
                "lock": lk["name"], "kind": lk["kind"], "wait_ns": 0, "count": 0})
            entry["wait_ns"] += lk["wait_ns"]
            entry["count"] += lk["count"]
    total = sum(e["wait_ns"] for e in locks.values())
    ranked = sorted(locks.values(), key=lambda e: -e["wait_ns"])
    for e in ranked:
        e["share"] = e["wait_ns"] / total if total else 0.0
    return ranked, total


def keep(ranked: list[dict], spec: dict) -> list[dict]:
    """The locks to advise on: those SPEC names (its sites), each refused in one line
    where the profile has no such lock or the swapper cannot swap it; else the top K
    mutexes and rwlocks with at least the minimum share of all waiting."""
    swappable = [e for e in ranked if e["kind"] in (MUTEX, RWLOCK)]
    if spec["sites"]:
        named = {e["lock"]: e for e in ranked}
        kept = []
        for site in spec["sites"]:
            if site not in named:
                shown = ", ".join(e["lock"] for e in swappable[:5]) or "none"
                raise LocklabError(f"--site {site!r}: the profile names no such lock (its "
                                   f"hottest: {shown})")
            if named[site]["kind"] not in (MUTEX, RWLOCK):
                raise LocklabError(f"--site {site!r} is a {named[site]['kind']}: the swapper "
                                   "swaps mutexes and rwlocks")
            kept.append(named[site])
        return kept
    return [e for e in swappable if e["share"] >= spec["min_share"]][:spec["top"]]


def pass_variants(spec: dict) -> list[Variant]:
    """Every kept lock alone with each candidate of its kind, in the profile's order."""
    return [Variant(cand, lk["kind"], lk["lock"])
            for lk in spec["locks"] for cand in spec["candidates"][lk["kind"]]]


def turned(variants: list, rep: int) -> list:
    """VARIANTS in the order pass REP runs them: turned by one each pass."""
    k = rep % len(variants) if variants else 0
    return variants[k:] + variants[:k]


def kinds_kept(spec: dict) -> list[str]:
    return list(dict.fromkeys(lk["kind"] for lk in spec["locks"]))


def planned(spec: dict) -> int:
    """How many runs the run makes at most (a collapsed variant's later runs are not
    made): baseline, passes, whole."""
    passes = spec["passes"]
    return passes * (1 + (1 + len(pass_variants(spec))) + (1 + len(kinds_kept(spec))))


def text(spec: dict, figure: str, native_s: float, command: str) -> str:
    """What --dry-run prints: the plan, its runs, and the time one native run says
    they take (the locks are the profile's: at most --top of them, each kind's
    candidates for its kind)."""
    passes, top = spec["passes"], len(spec["sites"]) or spec["top"]
    cands = spec["candidates"]
    most = max(len(cands[MUTEX]), len(cands[RWLOCK]))
    which = (", ".join(spec["sites"]) if spec["sites"] else
             f"the top {spec['top']} mutexes and rwlocks by wait, each with at least "
             f"{100 * spec['min_share']:g}% of all waiting")
    runs = passes + passes * (1 + top * most) + passes * 3
    each = native_s + RUN_COST_S[spec["workload"]]
    lines = [
        f"{'advise':<13}{command}",
        f"{'judged by':<13}{figure}",
        f"{'locks':<13}{which} (profiled once)",
        f"{'candidates':<13}mutex: {', '.join(cands[MUTEX])} ({len(cands[MUTEX])})",
        f"{'':<13}rwlock: {', '.join(cands[RWLOCK])} ({len(cands[RWLOCK])})",
        f"{'passes':<13}{passes}: native and every variant take turns in each",
        f"{'runs':<13}{passes} native, 1 profiled; {passes} passes of native and each lock "
        "with each candidate;",
        f"{'':<13}{passes} passes of native and the best on every mutex, every rwlock",
        f"{'in all':<13}at most {runs} runs, about {clock(runs * each)} "
        f"({native_s:.3g} s a native run, as measured now)",
        f"{'collapse':<13}a run past {spec['collapse']:g}x native's median is stopped",
    ]
    return "\n".join(lines)
