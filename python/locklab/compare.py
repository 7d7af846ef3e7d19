"""`locklab compare A B`: how run B's points fare against run A's, point by point."""
from __future__ import annotations

import math
import sqlite3

from . import store
from .errors import LocklabError
from .sweep import PROGRAM

# Points of two runs match on these; lock_opts is left out so that a lock can be
# compared with itself under other options (sweep A default, sweep B tuned). An rw
# point's read fraction is in its workload_opts.
MATCH = ("workload", "lock", "gate", "gate_opts", "workload_opts", "threads", "mutexes",
         "hold_ns", "outside_ns")
RATIOS = ("ns_per_iter", "ops_per_sec")


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


def _matched(conn: sqlite3.Connection, run_a: int,
             run_b: int) -> tuple[dict[tuple, dict], dict[tuple, dict]]:
    """Both runs' points by key. A lock under one set of options in each run matches on
    its name alone; one that both runs swept under several variants (the rw preset's
    glibc rwlock in both preferences) matches variant by variant."""
    a, b = (store.medians(store.points(conn, run)) for run in (run_a, run_b))
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


def _workloads(points: dict[tuple, dict]) -> str:
    return " and ".join(sorted({p["workload"] for p in points.values()})) or "no"


def ratios(conn: sqlite3.Connection, run_a: int, run_b: int) -> dict:
    """Per matched point B/A of each RATIOS metric (medians over repeats)."""
    a, b = _matched(conn, run_a, run_b)
    if a and b and not {p["workload"] for p in a.values()} & {p["workload"] for p in b.values()}:
        # A mutex point's iteration and a server point's query are different units.
        raise LocklabError(f"run {run_a} measured the {_workloads(a)} workload and run {run_b} "
                           f"the {_workloads(b)} workload: no point of one compares with the other")
    rows = []
    for key in sorted(a.keys() & b.keys(), key=lambda k: (*k[:-1], k[-1] or "")):
        pa, pb = a[key], b[key]
        row = dict(zip(MATCH, key), lock_opts_a=pa["lock_opts"], lock_opts_b=pb["lock_opts"])
        for metric in RATIOS:
            row[f"{metric}_a"], row[f"{metric}_b"] = pa[metric], pb[metric]
            row[f"{metric}_ratio"] = _ratio(pa[metric], pb[metric])
        rows.append(row)
    return {
        "run_a": run_a, "run_b": run_b, "points": rows,
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


def render(result: dict) -> str:
    """The comparison as a text table, a summary line last."""
    # A lock run under other options in B is named with both: "innodb56 [- / spin=tas]".
    names = [_name(r) for r in result["points"]]
    width = max(map(len, names), default=4)
    head = (f"{'lock':<{width}} {'threads':>7} {'mutexes':>7} {'hold_ns':>7} {'outside':>7} "
            f"{'ns/iter A':>10} {'ns/iter B':>10} {'B/A':>6} "
            f"{'ops/s A':>12} {'ops/s B':>12} {'B/A':>6}")
    lines = [head]
    for name, r in zip(names, result["points"]):
        lines.append(
            f"{name:<{width}} {r['threads']:>7} {r['mutexes']:>7} {r['hold_ns']:>7} "
            f"{r['outside_ns']:>7} {_num(r['ns_per_iter_a'], '10.1f')} "
            f"{_num(r['ns_per_iter_b'], '10.1f')} {_num(r['ns_per_iter_ratio'], '6.2f')} "
            f"{_num(r['ops_per_sec_a'], '12.0f')} {_num(r['ops_per_sec_b'], '12.0f')} "
            f"{_num(r['ops_per_sec_ratio'], '6.2f')}"
        )
    g = result["geomean"]
    lines.append(
        f"run {result['run_b']} / run {result['run_a']}: {len(result['points'])} points matched, "
        f"geometric mean B/A ns_per_iter {_num(g['ns_per_iter'], '.3f')}, "
        f"ops_per_sec {_num(g['ops_per_sec'], '.3f')}; "
        f"{result['only_a']} only in A, {result['only_b']} only in B"
    )
    return "\n".join(lines)
