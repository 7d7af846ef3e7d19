"""Each lock's verdict from an advise run's stored runs, through the statistics every
verdict shares (locklab/stats.py).

A lock's candidates are judged against the native runs of the same passes, as one
family (stats.compare's Bonferroni), by the ratio of their medians (above 1: the
candidate better). The lock's verdict:
  swap       a candidate's interval lies above 1: the best of those, by its ratio
  undecided  none does, but one's ratio is beyond the noise margin above 1 with its
             interval holding 1: the best of those, and about how many passes would
             settle it (one that looks worse, unconfirmed, is no reason to swap)
  keep       no candidate is apart from native beyond the noise (or every one that
             is, is worse)
  collapsed  every candidate collapsed: stopped at the collapse limit, or its median
             that many times worse than native's
A candidate whose every run failed (the program crashed or erred under it) is
left out of the family, and listed as failed.
"""
from __future__ import annotations

from statistics import median

from .. import stats
from .candidates import MUTEX, RWLOCK
from .plan import PASS, WHOLE, Variant, kinds_kept
from .workloads import COLLAPSED

SWAP, KEEP, UNDECIDED_VERDICT, COLLAPSED_VERDICT = "swap", "keep", "undecided", "collapsed"


def figures(rows: list[dict], phase: str, variant: Variant) -> tuple[list[float], list[dict]]:
    """(the figures of VARIANT's runs in PHASE that counted, its runs that did not)."""
    mine = [r for r in rows if r["workload"] == phase and r["lock"] == variant.label()]
    return ([r["metric"] for r in mine if r["ok"] and r["metric"] is not None],
            [r for r in mine if not r["ok"]])


def _candidate(name: str, values: list[float], bad: list[dict], base: list[float],
               spec: dict) -> dict:
    """One candidate's entry before it is compared: collapsed, failed, or its figures."""
    lower = not spec["higher"]
    stopped = any((r["error"] or "").startswith(COLLAPSED) for r in bad)
    if values and base and not stopped:
        ratio = (median(base) / median(values)) if lower else median(values) / median(base)
        stopped = ratio < 1 / spec["collapse"]
    return {"lock": name, "values": values, "collapsed": stopped,
            "failed": not values and not stopped,
            "errors": sorted({r["error"] for r in bad if r["error"]}),
            "outcome": COLLAPSED_VERDICT if stopped else "failed" if not values else None,
            "ratio": None, "ci_low": None, "ci_high": None, "settle": None,
            "passes": len(values)}


def judge_family(spec: dict, rows: list[dict], phase: str, variants: list[Variant]) -> dict:
    """VARIANTS (the candidates of one lock, or one kind's on every lock) against
    native in PHASE: the verdict, the best candidate and its figures, and each
    candidate's."""
    base, _ = figures(rows, phase, Variant())
    entries = [_candidate(v.lock, *figures(rows, phase, v), base, spec) for v in variants]
    judged = [e for e in entries if e["outcome"] is None]
    for e in judged:
        c = stats.compare(base, e["values"], lower_is_better=not spec["higher"],
                          family=len(judged)) if base else None
        if c is None:
            e.update(outcome=stats.UNDECIDED)
            continue
        e.update(ratio=c.ratio, ci_low=c.low, ci_high=c.high, outcome=c.outcome,
                 settle=c.settle)
    by_ratio = sorted((e for e in judged if e["ratio"] is not None), key=lambda e: -e["ratio"])
    better = [e for e in by_ratio if e["outcome"] == stats.BETTER]
    unsure = [e for e in by_ratio if e["outcome"] == stats.UNDECIDED and e["ratio"] > 1]
    if better:
        verdict, best = SWAP, better[0]
    elif unsure:
        verdict, best = UNDECIDED_VERDICT, unsure[0]
    elif judged or not any(e["collapsed"] for e in entries):
        verdict, best = KEEP, (by_ratio[0] if by_ratio else None)
    else:
        verdict, best = COLLAPSED_VERDICT, next(e for e in entries if e["collapsed"])
    for e in entries:
        del e["values"]
    return {"verdict": verdict, "best": best["lock"] if best else None,
            "ratio": best["ratio"] if best else None,
            "ci_low": best["ci_low"] if best else None,
            "ci_high": best["ci_high"] if best else None,
            "settle": best["settle"] if best and verdict == UNDECIDED_VERDICT else None,
            "natives": len(base), "candidates": entries}


def matched(rows: list[dict], variants: list[Variant]) -> int | None:
    """The most locks the swapper gave the site in any run of VARIANTS (None: no
    process lived to say): 0 means nothing was swapped at all."""
    labels = {v.label() for v in variants}
    counts = [r["swap_rwlocks"] if v.kind == RWLOCK else r["swap_mutexes"]
              for r in rows if r["lock"] in labels for v in [Variant.of(r["lock"])]]
    counts = [n for n in counts if n is not None]
    return max(counts) if counts else None


def judge_lock(spec: dict, rows: list[dict], lock: dict) -> dict:
    """One kept lock's verdict (judge_family), with what the profile said of it and how
    many locks the swapper found by its name."""
    variants = [Variant(c, lock["kind"], lock["lock"]) for c in spec["candidates"][lock["kind"]]]
    return {"lock": lock["lock"], "kind": lock["kind"], "wait_share": lock["share"],
            "matched": matched(rows, variants), **judge_family(spec, rows, PASS, variants)}


def whole_variants(spec: dict, rows: list[dict]) -> list[Variant]:
    """Per kind of lock kept, the candidate to try on every lock of that kind: the best
    of the hottest lock of the kind that has a swap verdict, else of the hottest with
    any candidate judged."""
    out = []
    for kind in kinds_kept(spec):
        judged = [judge_lock(spec, rows, lk) for lk in spec["locks"] if lk["kind"] == kind]
        pick = next((j for j in judged if j["verdict"] == SWAP), None) or \
            next((j for j in judged if j["ratio"] is not None), None)
        if pick:
            out.append(Variant(pick["best"], kind))
    return out


def judge(spec: dict, rows: list[dict]) -> dict:
    """Every kept lock's verdict, by wait; and the best candidates on every mutex and
    every rwlock at once, each judged alone against the whole phase's native runs."""
    whole = []
    tried = {Variant.of(r["lock"]) for r in rows if r["workload"] == WHOLE}
    for kind in (MUTEX, RWLOCK):
        for v in sorted((v for v in tried if not v.native and v.kind == kind),
                        key=lambda v: v.lock):
            whole.append({"kind": kind, **judge_family(spec, rows, WHOLE, [v])})
    return {"locks": [judge_lock(spec, rows, lk) for lk in spec["locks"]], "whole": whole}
