"""The report's section on the rw workload (sweep --preset rw, docs/rwlocks.md).

Every rwlock's throughput and writers' waits against threads, a panel per read
fraction and hold time; ll's throughput against each rwlock's; which rwlock
leads at each point; and the targets set for ll, from the median point of each
configuration:
  1 reader      read lock+unlock (ns per op, loop included, hold 0, read-only)
                at most 10 ns
  2 readers     at most 10 ns per op per thread (the run's ns per op x 2)
  99.9% reads   at 64 and 256 threads, throughput at least 10x pthread's
                (glibc's default, reader-preferring kind)
  50% reads     throughput at least 0.9x pthread's, at every thread count;
                writers' maximum wait no more than pthread prefer=writer-
                nonrecursive's, from 2 threads (one thread never waits)
  (a baseline whose passes differ by more than UNSETTLED x is taken at its best
  pass, and the row says so: glibc's default kind has made next to nothing in
  some passes of a point and millions of ops in others)
  every point   the exclusion check held: in every stored point of every
                rwlock, failed ones included (a point that never reported the
                check counts against it)
"""
from __future__ import annotations

import statistics
from pathlib import Path

from ..sweep import presets, store
from .checks import (CANDIDATE, add_check, panel_ratios, ratio_table, target_lines, target_table,
                     targets_heading, write_tables)
from .verdict import BASELINE
from .render import line_panels

WORKLOAD = presets.RW_WORKLOAD
WRITER_BASELINE = store.lock_label(BASELINE, "prefer=writer-nonrecursive")
READ_NS = 10.0
READ_HEAVY, READ_HEAVY_THREADS, READ_HEAVY_RATIO = 99.9, (64, 256), 10.0
MIXED, MIXED_RATIO = 50.0, 0.9
# A baseline's passes further apart than this (best / worst) are not one figure.
UNSETTLED = 2.0
# glibc's fast regime at 50% reads: one thread at a time runs while the others sleep,
# so at least this share of the CPU time is idle and almost none is the kernel's.
ONE_RUNNER_IDLE_PCT, ONE_RUNNER_SYS_PCT = 25.0, 1.0

# The graphs: file stem, metric, scale, y label, log y, only points with writes.
CHARTS = (
    ("rw_throughput", "ops_per_sec", 1e-6, "Mops/s (higher is better)", True, False),
    ("rw_write_wait_max", "write_wait_ns_max", 1e-3, "writers' wait, max (us)", True, True),
    ("rw_write_wait_p99", "write_wait_ns_p99", 1e-3, "writers' wait, p99 (us)", True, True),
)
# The target every rwlock answers for, not ll alone: its figure is the points that failed.
EXCLUSION = "points whose exclusion check failed or never reported"
MARKDOWN = "ll-rw.md"
TARGETS_FILE = "ll-rw-targets.txt"


def read_pct(p: dict) -> float:
    return store.read_pct(p["workload_opts"])


def panel_key(p: dict) -> tuple[int, int, float]:
    """An rw point's panel: (hold ns, outside ns, read %)."""
    return p["hold_ns"], p["outside_ns"], read_pct(p)


def panel_title(key) -> str:
    """A panel's name; a key that is not a panel's (a whole-run target) as it is."""
    if not isinstance(key, tuple):
        return str(key)
    hold, outside, pct = key
    return f"{pct:g}% reads, hold {hold} ns" + (f", outside {outside} ns" if outside else "")


def label(p: dict) -> str:
    return store.lock_label(p["lock"], p["lock_opts"])


def panels(points: list[dict], zeros: bool = False) -> dict[tuple, dict[tuple[str, int], dict]]:
    """(hold, outside, read %) -> (lock label, threads) -> point; the panels in hold
    order, the read fractions from the highest. Points that made no operation at all
    (a median of 0: glibc's default kind has stalled whole passes) only with zeros,
    for the targets: a log scale and a ratio have no place for them."""
    out: dict[tuple, dict[tuple[str, int], dict]] = {}
    for p in points:
        if p["workload"] == WORKLOAD and (p["ops_per_sec"] or
                                          (zeros and p["ops_per_sec"] is not None)):
            out.setdefault(panel_key(p), {})[(label(p), p["threads"])] = p
    return dict(sorted(out.items(), key=lambda kv: (kv[0][0], kv[0][1], -kv[0][2])))


def exclusion(rows: list[dict]) -> tuple[list[dict], list[dict]]:
    """The stored rw rows (every repeat, failed ones too) whose exclusion check failed,
    and those that never reported it."""
    mine = [r for r in rows if r.get("workload") == WORKLOAD]
    return ([r for r in mine if r.get("exclusion_ok") == 0],
            [r for r in mine if r.get("exclusion_ok") is None])


def baseline_rows(rows: list[dict]) -> list[dict]:
    """The stored passes of the baseline (glibc's default kind) that ran."""
    return [r for r in rows if r.get("workload") == WORKLOAD and r.get("ok")
            and label(r) == BASELINE and r.get("ops_per_sec") is not None]


def baseline_passes(rows: list[dict]) -> dict[tuple, list[float]]:
    """(panel key, threads) -> the throughput of each stored pass of the baseline."""
    out: dict[tuple, list[float]] = {}
    for r in baseline_rows(rows):
        out.setdefault((panel_key(r), r["threads"]), []).append(r["ops_per_sec"])
    return out


def regime(row: dict) -> str | None:
    """Which of glibc's two regimes a pass of its default kind caught, from the CPU
    time it left: 'one runner' (a quarter or more idle, next to no system time: one
    thread at a time while the others sleep), 'busy' (the rest), or None when the pass
    stored no CPU figures."""
    idle, sys_pct = row.get("cpu_idle_pct"), row.get("cpu_sys_pct")
    if idle is None or sys_pct is None:
        return None
    return ("one runner" if idle >= ONE_RUNNER_IDLE_PCT and sys_pct < ONE_RUNNER_SYS_PCT
            else "busy")


def regime_split(rows: list[dict], where: set) -> str:
    """What the baseline's passes at the (panel key, threads) points WHERE did in each
    regime: a sentence, or empty when no pass stored its CPU figures."""
    split: dict[str, list[float]] = {}
    for r in baseline_rows(rows):
        name = regime(r) if (panel_key(r), r["threads"]) in where else None
        if name:
            split.setdefault(name, []).append(r["ops_per_sec"])
    if not split:
        return ""
    what = {"one runner": f"left a quarter or more of the CPU time idle, under "
                          f"{ONE_RUNNER_SYS_PCT:g}% of it in the kernel (one thread at a time)",
            "busy": "kept the CPUs busy"}
    said = [f"{len(split[name])} {what[name]}, median {statistics.median(split[name]):.3g} ops/s"
            for name in ("one runner", "busy") if name in split]
    return " Of its passes there, " + "; ".join(said) + "."


def unsettled(passes: list[float]) -> bool:
    """Passes too far apart (more than UNSETTLED x) for one figure to stand for them."""
    return len(passes) >= 2 and max(passes) > UNSETTLED * min(passes)


def baseline_bound(rows: list[dict], key, threads: int, ratio: float,
                   median: float) -> tuple[float, str]:
    """ratio x the baseline's throughput at (panel key, threads): its median, or its best
    pass where its stored passes lie more than UNSETTLED apart; and what to say of it."""
    passes = baseline_passes(rows).get((key, threads), [])
    if unsettled(passes):
        return (ratio * max(passes),
                f" (its best pass: pthread's span {min(passes):.3g}-{max(passes):.3g} ops/s)")
    return ratio * median, ""


def check(points: list[dict], rows: list[dict]) -> list[dict]:
    """One row per target and panel (where): ll's figure, the bound, whether it holds."""
    out: list[dict] = []
    for key, panel in panels(points, zeros=True).items():
        hold, outside, pct = key
        ll = {t: p for (lock, t), p in panel.items() if lock == CANDIDATE}
        if hold == 0 and outside == 0 and pct == 100:
            for t, target in ((1, "read lock+unlock ns, 1 reader"),
                              (2, "read ns per op per thread, 2 readers")):
                if t in ll:
                    ns = ll[t]["ns_per_iter"] * t
                    add_check(out, key, target, t, ns, READ_NS, ns <= READ_NS)
        for t, p in sorted(ll.items()):
            base, writer = panel.get((BASELINE, t)), panel.get((WRITER_BASELINE, t))
            if pct == READ_HEAVY and t in READ_HEAVY_THREADS and base:
                bound, note = baseline_bound(rows, key, t, READ_HEAVY_RATIO, base["ops_per_sec"])
                add_check(out, key, f"ops/s vs {READ_HEAVY_RATIO:g}x pthread{note}", t,
                          p["ops_per_sec"], bound, p["ops_per_sec"] >= bound)
            if pct != MIXED:
                continue
            if base:
                bound, note = baseline_bound(rows, key, t, MIXED_RATIO, base["ops_per_sec"])
                add_check(out, key, f"ops/s vs {MIXED_RATIO:g}x pthread{note}", t,
                          p["ops_per_sec"], bound, p["ops_per_sec"] >= bound)
            if (t >= 2 and writer and p["write_wait_ns_max"] is not None
                    and writer["write_wait_ns_max"] is not None):
                add_check(out, key, f"writers' max wait ns vs {WRITER_BASELINE}", t,
                          p["write_wait_ns_max"], writer["write_wait_ns_max"],
                          p["write_wait_ns_max"] <= writer["write_wait_ns_max"])
    violated, unchecked = exclusion(rows)
    stored = sum(r.get("workload") == WORKLOAD for r in rows)
    if stored:
        failed = len(violated) + len(unchecked)
        add_check(out, f"all {stored} points, every rwlock", EXCLUSION, "all", failed, 0,
                  failed == 0)
        out[-1]["subject"] = ""  # every rwlock's, not ll's
    return out


def ratios(points: list[dict]) -> dict[tuple, dict[str, dict[int, float]]]:
    """panel -> other rwlock -> threads -> ll's throughput / that rwlock's."""
    return panel_ratios(panels(points))


def leaders(points: list[dict]) -> tuple[list, list[list]]:
    """(headers, rows): per panel and thread count, the rwlock with the most throughput
    and its margin over the next."""
    by_panel = panels(points)
    threads = sorted({t for panel in by_panel.values() for _, t in panel})
    rows = []
    for key, panel in by_panel.items():
        row: list = [panel_title(key)]
        for t in threads:
            here = sorted(((p["ops_per_sec"], lock) for (lock, n), p in panel.items() if n == t),
                          reverse=True)
            if len(here) > 1:
                row.append(f"{here[0][1]} {here[0][0] / here[1][0]:.2f}x {here[1][1]}")
            else:
                row.append(here[0][1] if here else None)
        rows.append(row)
    return ["point \\ threads", *map(str, threads)], rows


def chart(points: list[dict], metric: str, scale: float, ylabel: str, logy: bool,
          writes_only: bool, path: Path) -> bool:
    """A panel per read fraction (columns) and hold time (rows), METRIC x SCALE against
    threads, a line per rwlock; False (nothing drawn) without a panel to draw."""
    keys = [k for k in panels(points) if not (writes_only and k[2] == 100)]
    if not keys:
        return False
    labels = list(dict.fromkeys(label(p) for p in points))
    grid = []
    for hold_outside in dict.fromkeys(k[:2] for k in keys):
        row = []
        for key in (k for k in keys if k[:2] == hold_outside):
            lines: dict[str, dict[int, float]] = {}
            for p in points:
                if panel_key(p) == key and p[metric] is not None:
                    lines.setdefault(label(p), {})[p["threads"]] = p[metric] * scale
            row.append((panel_title(key), lines))
        grid.append(row)
    line_panels(grid, labels, ylabel, logy, path)
    return True


def tables(points: list[dict], rows: list[dict]) -> list[tuple[str, list, list[list]]]:
    """(title, headers, rows) of the section's tables: the targets, the leaders, then
    ll's ratios panel by panel."""
    out = []
    checked = check(points, rows)
    if checked:
        out.append((targets_heading(checked),
                    *target_table(checked, "point", "threads", panel_title)))
    if panels(points):
        out.append(("The rwlock with the most throughput, and its margin over the next",
                    *leaders(points)))
    out += [(f"ll's throughput / each rwlock's, {panel_title(key)}",
             *ratio_table(table, "threads")) for key, table in ratios(points).items()]
    return out


def alarm(rows: list[dict]) -> str:
    """A loud paragraph naming every point whose exclusion check failed, or failed to
    report; empty when every point kept exclusion."""
    violated, unchecked = exclusion(rows)
    parts = []
    if violated:
        names = "; ".join(f"{label(r)} t={r['threads']} {panel_title(panel_key(r))} "
                          f"r={r['rep'] + 1}" for r in violated)
        parts.append(f'<p class="alarm">EXCLUSION VIOLATED in {len(violated)} point'
                     f'{"s" if len(violated) > 1 else ""}: {names}</p>')
    if unchecked:
        parts.append(f'<p class="alarm">{len(unchecked)} point'
                     f'{"s" if len(unchecked) > 1 else ""} never reported the exclusion '
                     'check (see Failed points)</p>')
    return "\n".join(parts)


def unscheduled_note(rows: list[dict]) -> str:
    """A paragraph on the stored passes in which some threads never got a CPU (they
    measured fewer threads than they name); empty when there are none."""
    short = [r for r in rows if r.get("workload") == WORKLOAD and r.get("threads_unscheduled")]
    if not short:
        return ""
    worst = max(short, key=lambda r: r["threads_unscheduled"] / r["threads"])
    where = sorted({r["threads"] for r in short})
    return (f"<p>In {len(short)} stored pass{'es' if len(short) > 1 else ''} (at "
            f"{', '.join(map(str, where))} threads) some threads waited for a CPU through "
            f"the whole window and never got one: those passes measured fewer threads than "
            f"they name (most: {worst['threads_unscheduled']} of {worst['threads']}, "
            f"{label(worst)}, {panel_title(panel_key(worst))}). A longer --duration covers "
            "the scheduler's round.</p>")


def unsettled_note(rows: list[dict]) -> str:
    """A paragraph on the points where glibc's default kind's passes lie more than
    UNSETTLED x apart (the targets take its best pass there); empty when there are
    none."""
    passes = baseline_passes(rows)
    apart = sorted((key, v) for key, v in passes.items() if unsettled(v))
    if not apart:
        return ""
    (key, threads), v = max(apart, key=lambda kv: max(kv[1]) / min(kv[1]) if min(kv[1]) > 0
                            else float("inf"))
    return (f"<p>At {len(apart)} of {len(passes)} points the passes of glibc's default kind "
            f"({BASELINE}) lie more than {UNSETTLED:g}x apart (widest: {min(v):.3g}-"
            f"{max(v):.3g} ops/s at {threads} threads, {panel_title(key)}): no one figure "
            "stands for them (at 50% reads it runs in two regimes, each lasting seconds; "
            "docs/rwlocks.md)." + regime_split(rows, {k for k, _ in apart})
            + " The targets take its best pass there.</p>")


def section(points: list[dict], rows: list[dict], out: Path) -> str:
    """The report's rw section (HTML): ROWS are the run's stored points, POINTS their
    medians. Writes the graphs, MARKDOWN and TARGETS_FILE into OUT. Empty without rw
    points."""
    points = [p for p in points if p["workload"] == WORKLOAD]
    if not points and not any(r.get("workload") == WORKLOAD for r in rows):
        return ""
    parts = ["<h2>Read-write locks (rw workload)</h2>", alarm(rows), unsettled_note(rows),
             unscheduled_note(rows),
             "<p>Throughput of reads and writes together, and the writers' wait to "
             "acquire, against threads: a panel per read fraction, a row per hold time.</p>"]
    for stem, metric, scale, ylabel, logy, writes_only in CHARTS:
        if chart(points, metric, scale, ylabel, logy, writes_only, out / f"{stem}.png"):
            parts.append(f'<p><img src="{stem}.png" alt="{stem}"></p>')
    parts += write_tables(tables(points, rows), "ll against every rwlock (rw workload)",
                          out / MARKDOWN)
    (out / TARGETS_FILE).write_text(target_lines(check(points, rows), panel_title, "threads"),
                                    encoding="utf-8")
    return "\n".join(parts)
