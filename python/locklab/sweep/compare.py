"""`locklab compare A B`: how run B's points fare against run A's, point by point."""
from __future__ import annotations

import math
import sqlite3

from ..errors import LocklabError
from . import kinds, store
from .store import PROGRAM

# Points of two runs match on these; lock_opts is left out so that a lock can be
# compared with itself under other options (sweep A default, sweep B tuned). An rw
# point's read fraction is in its workload_opts.
MATCH = ("workload", "lock", "gate", "gate_opts", "workload_opts", "threads", "mutexes",
         "hold_ns", "outside_ns")
RATIOS = ("ns_per_iter", "ops_per_sec")

# What a run's points were measured with (its spec): two runs that differ in one of these
# measured different things (a 0.6 s point after 0.2 s of warm-up is not a 1 s point
# after none), and compare refuses them unless told to go on.
MEASURED_WITH = (("duration", "point duration", " s"), ("warmup", "warm-up", " s"))
# What only changes how far a ratio can be trusted, or is what the comparison is for (a
# kernel, a machine, the lock monitor on and off): said, not refused.
NOTED = (("repeat", "passes", ""),)
MACHINE_NAMES = {"cpu_model": "CPU", "cores": "cores", "kernel": "kernel", "glibc": "glibc",
                 "version": "locklab version"}
# A ratio's marks: its spread (over every pass of A against every pass of B) covers 1, or
# one of the runs measured the point once, so that it has no spread to judge by.
IN_NOISE, NO_SPREAD = "~", "?"


def _variants(points: list[dict]) -> dict[tuple[str, str], set[str]]:
    """(workload, lock) -> the lock's options it ran under."""
    out: dict[tuple[str, str], set[str]] = {}
    for p in points:
        out.setdefault((p["workload"], p["lock"]), set()).add(p["lock_opts"])
    return out


def _by_key(points: list[dict], several: set[tuple[str, str]]) -> dict[tuple, dict]:
    """MATCH's values, and the lock's options for a lock in SEVERAL -> median point."""
    return {(*(p[k] for k in MATCH),
             p["lock_opts"] if (p["workload"], p["lock"]) in several else None): p
            for p in points}


def _shown(value, unit: str) -> str:
    if isinstance(value, bool):
        return "on" if value else "off"
    if value is None:
        return "unknown"
    return f"{value:g}{unit}" if isinstance(value, (int, float)) else str(value)


def differences(run_a: dict, run_b: dict) -> tuple[list[str], list[str]]:
    """(what makes the two runs' points different measurements, what else differs),
    each difference as 'warm-up 0.2 s in run 1, 0 s in run 2'."""
    def differ(name: str, a, b, unit: str = "") -> str:
        return (f"{name} {_shown(a, unit)} in run {run_a['id']}, "
                f"{_shown(b, unit)} in run {run_b['id']}")

    spec_a, spec_b = run_a["spec"], run_b["spec"]
    measured = [differ(name, spec_a[key], spec_b[key], unit)
                for key, name, unit in MEASURED_WITH
                if spec_a.get(key) is not None and spec_b.get(key) is not None
                and spec_a[key] != spec_b[key]]
    noted = [differ(name, spec_a[key], spec_b[key], unit) for key, name, unit in NOTED
             if spec_a.get(key) is not None and spec_b.get(key) is not None
             and spec_a[key] != spec_b[key]]
    if bool(spec_a.get("instrument")) != bool(spec_b.get("instrument")):
        noted.append(differ("lock monitor", bool(spec_a.get("instrument")),
                            bool(spec_b.get("instrument"))))
    noted += [differ(name, run_a[key], run_b[key]) for key, name in MACHINE_NAMES.items()
              if run_a.get(key) != run_b.get(key)]
    return measured, noted


def _points(conn: sqlite3.Connection, run: int) -> list[dict]:
    """The run's grid points, each with its metrics' medians and, under `passes`, the
    RATIOS values of every pass that succeeded."""
    out = []
    for key, reps in store.repeat_groups(store.points(conn, run)).items():
        point = store.median_point(key, reps)
        point["passes"] = {m: [r[m] for r in reps if r.get(m)] for m in RATIOS}
        out.append(point)
    return out


def _matched(conn: sqlite3.Connection, run_a: int,
             run_b: int) -> tuple[dict[tuple, dict], dict[tuple, dict]]:
    """Both runs' points by key. A lock under one set of options in each run matches on
    its name alone; one that both runs swept under several variants (the rw preset's
    glibc rwlock in both preferences) matches variant by variant."""
    a, b = _points(conn, run_a), _points(conn, run_b)
    va, vb = _variants(a), _variants(b)
    for key in va.keys() & vb.keys():
        if (len(va[key]) > 1) != (len(vb[key]) > 1):
            run, other = (run_a, run_b) if len(va[key]) > 1 else (run_b, run_a)
            raise LocklabError(
                f"run {run} has {key[1]} under several --lock-opts and run {other} under one; "
                "compare cannot tell which to match"
            )
    several = {key for key in va.keys() & vb.keys() if len(va[key]) > 1}
    return _by_key(a, several), _by_key(b, several)


def _ratio(a, b) -> float | None:
    return b / a if a and b is not None else None


def spread(passes_a: list[float], passes_b: list[float]) -> tuple[float, float] | None:
    """The least and the greatest ratio of a pass of B to a pass of A: where B/A may lie
    given how much each run's passes varied. None when either run has fewer than two
    passes: one measurement says nothing of its own noise."""
    if len(passes_a) < 2 or len(passes_b) < 2:
        return None
    return min(passes_b) / max(passes_a), max(passes_b) / min(passes_a)


def mark(span: tuple[float, float] | None) -> str:
    """IN_NOISE when SPAN covers 1 (no change told apart from the noise), NO_SPREAD
    when there is no span, '' for a ratio outside its noise."""
    if span is None:
        return NO_SPREAD
    return IN_NOISE if span[0] <= 1 <= span[1] else ""


def _workloads(points: dict[tuple, dict]) -> str:
    return " and ".join(sorted({p["workload"] for p in points.values()})) or "no"


def ratios(conn: sqlite3.Connection, run_a: int, run_b: int,
           allow_mismatch: bool = False) -> dict:
    """Per matched point B/A of each RATIOS metric (medians over repeats), with the spread
    of the per-pass ratios and the mark it earns.

    Runs whose points were measured differently (MEASURED_WITH) are refused unless
    ALLOW_MISMATCH; every difference between the runs is listed in `differences`.
    """
    runs = [store.get_run(conn, run, grid=False) for run in (run_a, run_b)]
    for run in runs:
        kinds.refuse_advise(run["spec"], "a sweep to compare")
    measured, noted = differences(*runs)
    if measured and not allow_mismatch:
        raise LocklabError(f"run {run_a} and run {run_b} measured their points differently "
                           f"({'; '.join(measured)}): their ratios would be the difference "
                           "between the grids; compare anyway with --allow-mismatch")
    a, b = _matched(conn, run_a, run_b)
    if a and b and not {p["workload"] for p in a.values()} & {p["workload"] for p in b.values()}:
        # A mutex point's iteration and a server point's query are different units.
        raise LocklabError(f"run {run_a} measured the {_workloads(a)} workload and run {run_b} "
                           f"the {_workloads(b)} workload: no point of one compares with the other")
    rows = []
    for key in sorted(a.keys() & b.keys(), key=lambda k: (*k[:-1], k[-1] or "")):
        pa, pb = a[key], b[key]
        row = dict(zip(MATCH, key), lock_opts_a=pa["lock_opts"], lock_opts_b=pb["lock_opts"],
                   passes_a=pa["reps"], passes_b=pb["reps"])
        for metric in RATIOS:
            row[f"{metric}_a"], row[f"{metric}_b"] = pa[metric], pb[metric]
            row[f"{metric}_ratio"] = _ratio(pa[metric], pb[metric])
            span = spread(pa["passes"][metric], pb["passes"][metric])
            row[f"{metric}_spread"] = list(span) if span else None
            row[f"{metric}_mark"] = mark(span) if row[f"{metric}_ratio"] is not None else ""
        rows.append(row)
    return {
        "run_a": run_a, "run_b": run_b, "points": rows, "differences": measured + noted,
        "geomean": {m: geomean([r[f"{m}_ratio"] for r in rows]) for m in RATIOS},
        "only_a": len(a.keys() - b.keys()), "only_b": len(b.keys() - a.keys()),
    }


def geomean(values: list[float | None]) -> float | None:
    logs = [math.log(v) for v in values if v]
    return math.exp(sum(logs) / len(logs)) if logs else None


def _num(value, fmt: str) -> str:
    """VALUE in FMT ('10.1f'); None as '-' in the same width (program points have no
    ns per iteration)."""
    if value is None:
        width = fmt.split(".")[0].rstrip("df")
        return "-".rjust(int(width)) if width else "-"
    return format(value, fmt)


def _name(row: dict) -> str:
    """The lock as the table names it: its options when A and B differ, a server point's
    gate, a program point's program and load test."""
    name = row["lock"]
    if row["lock_opts_a"] != row["lock_opts_b"]:
        name += f" [{row['lock_opts_a'] or '-'} / {row['lock_opts_b'] or '-'}]"
    elif row["lock_opts_a"]:
        name += f" [{row['lock_opts_a']}]"
    if row["workload"] == "rw":
        name += f" rw {store.read_pct(row['workload_opts']):g}% reads"
    elif row["workload"].startswith(PROGRAM):
        name += f" {row['workload'].removeprefix(PROGRAM)}"
        name += f" {row['workload_opts']}" if row["workload_opts"] else ""
    elif row["workload"] != "mutex":
        gate = f"{row['gate']}:{row['gate_opts']}" if row["gate_opts"] else row["gate"]
        name += f" gate={gate or 'none'}"
        name += f" [{row['workload_opts']}]" if row["workload_opts"] else ""
    return name


def _span(span: list[float] | None) -> str:
    """A spread as the table shows it, 11 wide: '0.91-1.12', '-' without one."""
    return (f"{span[0]:.2f}-{span[1]:.2f}" if span else "-").rjust(11)


def render(result: dict) -> str:
    """The comparison as a text table: each ratio with its spread and mark, what the
    marks mean, and a summary line last."""
    # A lock run under other options in B is named with both: "innodb56 [- / spin=tas]".
    names = [_name(r) for r in result["points"]]
    width = max(map(len, names), default=4)
    head = (f"{'lock':<{width}} {'threads':>7} {'mutexes':>7} {'hold_ns':>7} {'outside':>7} "
            f"{'ns/iter A':>10} {'ns/iter B':>10} {'B/A':>7} {'spread':>11} "
            f"{'ops/s A':>12} {'ops/s B':>12} {'B/A':>7} {'spread':>11}")
    lines = [head]
    for name, r in zip(names, result["points"]):
        cells = [f"{name:<{width}} {r['threads']:>7} {r['mutexes']:>7} {r['hold_ns']:>7} "
                 f"{r['outside_ns']:>7}"]
        for metric, fmt in (("ns_per_iter", "10.1f"), ("ops_per_sec", "12.0f")):
            cells.append(f"{_num(r[f'{metric}_a'], fmt)} {_num(r[f'{metric}_b'], fmt)} "
                         f"{_num(r[f'{metric}_ratio'], '6.2f')}{r[f'{metric}_mark'] or ' '} "
                         f"{_span(r[f'{metric}_spread'])}")
        lines.append(" ".join(cells))
    marks = [r["ops_per_sec_mark"] or r["ns_per_iter_mark"] for r in result["points"]]
    if IN_NOISE in marks:
        lines.append(f"{IN_NOISE} {marks.count(IN_NOISE)} of {len(marks)} ratios lie inside "
                     "their spread (every pass of B against every pass of A covers 1): "
                     "no difference told apart from the noise")
    if NO_SPREAD in marks:
        lines.append(f"{NO_SPREAD} {marks.count(NO_SPREAD)} of {len(marks)} ratios come from "
                     "one pass of A or of B: their noise is unknown, and a ratio far from 1 may "
                     "be noise alone (sweep with --repeat 3 to measure it)")
    g = result["geomean"]
    lines.append(
        f"run {result['run_b']} / run {result['run_a']}: {len(result['points'])} points matched, "
        f"geometric mean B/A ns_per_iter {_num(g['ns_per_iter'], '.3f')}, "
        f"ops_per_sec {_num(g['ops_per_sec'], '.3f')}; "
        f"{result['only_a']} only in A, {result['only_b']} only in B"
    )
    return "\n".join(lines)
