"""The targets `ll` must meet on one mutex (docs/ll.md), checked on a sweep's points.

One mutex, no outside work, every hold time, from the median point of each
configuration (a point whose work loop missed its calibration by more than 10%
is left out: it measured another hold time):
  1 thread      ns per iteration at most 1.1x the fastest lock's
  2 threads     throughput at least the best lock's, Jain at least 0.9
  64..1024      throughput at least 1.25x pthread's, and at least that of the
                best lock whose Jain is 0.8 or more; Jain at least 0.9; CPU ns
                per iteration and maximum wait no more than pthread's; with a
                hold time, at least 0.97 of the serial bound (one critical
                section after another: 1e9 / hold_ns per second)
  flat          throughput at the most threads at least 0.9x ll's own best

And on the server workload (sweep --preset server-locks, docs/bench.md), no gate,
no workload options, in every workload shape (mutexes, hold, outside), at every
client count from 4:
  qps           at least the best of pthread, pthread-adaptive, futex and absl
  Jain          at least 0.8
  CPU idle      no more than pthread's plus 2 points (the machine's idle share)
"""
from __future__ import annotations

from ..report.checks import (CANDIDATE, add_check, panel_ratios, ratio_table, target_lines,
                             target_table, targets_heading, write_tables)
from ..report.render import fmt, html_table, judged
from ..report.verdict import BASELINE, apart, samples

HIGH = (64, 1024)
SERIAL_SHARE = 0.97
SERVER_RIVALS = ("pthread", "pthread-adaptive", "futex", "absl")
SERVER_FROM = 4
SERVER_JAIN = 0.8
SERVER_IDLE_POINTS = 2.0


# A point whose work loop ran this far from its calibration measured another hold time.
CALIB_TOLERANCE_PCT = 10.0


def _calibrated(p: dict) -> bool:
    err = p.get("calib_error_pct")
    return not p["hold_ns"] or err is None or abs(err) <= CALIB_TOLERANCE_PCT


def _panel(points: list[dict], hold: int) -> dict[tuple[str, int], dict]:
    """(lock, threads) -> point for one hold time, one mutex, default options."""
    return {
        (p["lock"], p["threads"]): p
        for p in points
        if p["mutexes"] == 1 and p["outside_ns"] == 0 and p["hold_ns"] == hold
        and not p["lock_opts"] and p["ops_per_sec"] and _calibrated(p)
    }


def _panels(points: list[dict]) -> dict[int, dict[tuple[str, int], dict]]:
    """hold -> (lock, threads) -> point: the one-mutex panels, by hold time."""
    return {hold: _panel(points, hold) for hold in sorted({p["hold_ns"] for p in points})}


def shape(p: dict) -> tuple[int, int, int]:
    """A server point's workload shape: (mutexes, hold ns, outside ns)."""
    return p["mutexes"], p["hold_ns"], p["outside_ns"]


def shape_title(key: tuple[int, int, int]) -> str:
    return f"{key[0]} mutexes, hold {key[1]} ns, outside {key[2]} ns"


def _server_default(p: dict) -> bool:
    """A server point with no gate, no workload options and the lock's defaults."""
    return (p["workload"] == "server" and not p["gate"] and not p["workload_opts"]
            and not p["lock_opts"] and bool(p["ops_per_sec"]) and _calibrated(p))


def server_panels(points: list[dict]) -> dict[tuple[int, int, int], dict[tuple[str, int], dict]]:
    """shape -> (lock, clients) -> point: server points with no gate, no workload
    options and each lock's defaults, one panel per shape (shapes never meet)."""
    out: dict[tuple[int, int, int], dict[tuple[str, int], dict]] = {}
    for p in points:
        if _server_default(p):
            out.setdefault(shape(p), {})[(p["lock"], p["threads"])] = p
    return dict(sorted(out.items()))


def server_passes(raw: list[dict]) -> dict[tuple, dict[str, dict[int, list]]]:
    """shape -> lock -> clients -> the qps of each pass that succeeded, from the raw rows
    of server_panels' points."""
    return samples([p for p in raw if _server_default(p)], "ops_per_sec", "server")


def qps_detail(ll: float, best: float, rival: str, mine: list[float], theirs: list[float]) -> str:
    """ll's qps against the best rival's, named, as a ratio; with the passes' ranges when
    both have more than one, and whether those ranges overlap (a tie within the spread)."""
    text = f"{fmt(ll)} against {fmt(best)} qps ({rival}) = {ll / best:.3f}x"
    if len(mine) > 1 and len(theirs) > 1:
        text += (f"; passes {fmt(min(mine))}-{fmt(max(mine))} against "
                 f"{fmt(min(theirs))}-{fmt(max(theirs))}"
                 + (", apart" if apart(mine, theirs) else ", overlapping"))
    return text


def check(points: list[dict]) -> list[dict]:
    """One row per target and hold time (where): ll's figure, the bound, whether it holds."""
    rows: list[dict] = []
    for hold, panel in _panels(points).items():
        locks = {lock for lock, _ in panel}
        threads = sorted({t for lock, t in panel if lock == CANDIDATE})
        ll = {t: panel[(CANDIDATE, t)] for t in threads}
        others = lambda t: [panel[(l, t)] for l in locks if l != CANDIDATE and (l, t) in panel]
        if 1 in ll and others(1):
            fastest = min(p["ns_per_iter"] for p in others(1))
            add_check(rows, hold, "ns/iter vs fastest", 1, ll[1]["ns_per_iter"], 1.1 * fastest,
                   ll[1]["ns_per_iter"] <= 1.1 * fastest)
        if 2 in ll and others(2):
            best = max(p["ops_per_sec"] for p in others(2))
            add_check(rows, hold, "ops/s vs best", 2, ll[2]["ops_per_sec"], best,
                   ll[2]["ops_per_sec"] >= best)
            add_check(rows, hold, "Jain", 2, ll[2]["jain"], 0.9, ll[2]["jain"] >= 0.9)
        for t in (t for t in threads if HIGH[0] <= t <= HIGH[1]):
            p = ll[t]
            base = panel.get((BASELINE, t))
            if base:
                add_check(rows, hold, "ops/s vs 1.25x pthread", t, p["ops_per_sec"],
                       1.25 * base["ops_per_sec"], p["ops_per_sec"] >= 1.25 * base["ops_per_sec"])
                add_check(rows, hold, "CPU ns/iter vs pthread", t, p["cpu_ns_per_iter"],
                       base["cpu_ns_per_iter"], p["cpu_ns_per_iter"] <= base["cpu_ns_per_iter"])
                add_check(rows, hold, "max wait vs pthread", t, p["wait_ns_max"],
                       base["wait_ns_max"], p["wait_ns_max"] <= base["wait_ns_max"])
            fair = [o["ops_per_sec"] for o in others(t) if o["jain"] >= 0.8]
            if fair:
                add_check(rows, hold, "ops/s vs best fair (Jain >= 0.8)", t, p["ops_per_sec"],
                       max(fair), p["ops_per_sec"] >= max(fair))
            add_check(rows, hold, "Jain", t, p["jain"], 0.9, p["jain"] >= 0.9)
            if hold:
                bound = SERIAL_SHARE * 1e9 / hold
                add_check(rows, hold, f"ops/s vs {SERIAL_SHARE} of the serial bound", t,
                       p["ops_per_sec"], bound, p["ops_per_sec"] >= bound)
        if threads and threads[-1] >= HIGH[1]:
            best = max(q["ops_per_sec"] for q in ll.values())
            last = ll[threads[-1]]["ops_per_sec"]
            add_check(rows, hold, "flat: ops/s vs own best", threads[-1], last, 0.9 * best,
                   last >= 0.9 * best)
    return rows


def server_check(points: list[dict], raw: list[dict] | None = None) -> list[dict]:
    """One row per server target, shape (where) and client count from SERVER_FROM.
    RAW, the passes behind the medians, adds their ranges to the qps rows' text."""
    rows: list[dict] = []
    passes = server_passes(raw or [])
    for key, panel in server_panels(points).items():
        ran = passes.get(key, {})
        for t in sorted(t for lock, t in panel if lock == CANDIDATE and t >= SERVER_FROM):
            p = panel[(CANDIDATE, t)]
            rivals = [panel[(lock, t)] for lock in SERVER_RIVALS if (lock, t) in panel]
            if rivals:
                top = max(rivals, key=lambda q: q["ops_per_sec"])
                best = top["ops_per_sec"]
                add_check(rows, key, f"qps vs best of {', '.join(SERVER_RIVALS)}", t,
                       p["ops_per_sec"], best, p["ops_per_sec"] >= best,
                       qps_detail(p["ops_per_sec"], best, top["lock"],
                                  ran.get(CANDIDATE, {}).get(t, []),
                                  ran.get(top["lock"], {}).get(t, [])))
            add_check(rows, key, "Jain", t, p["jain"], SERVER_JAIN, p["jain"] >= SERVER_JAIN)
            base = panel.get((BASELINE, t))
            if base and p["cpu_idle_pct"] is not None and base["cpu_idle_pct"] is not None:
                bound = base["cpu_idle_pct"] + SERVER_IDLE_POINTS
                add_check(rows, key, f"CPU idle % vs pthread's + {SERVER_IDLE_POINTS:g}", t,
                       p["cpu_idle_pct"], bound, p["cpu_idle_pct"] <= bound)
    return rows


def ratios(points: list[dict]) -> dict[int, dict[str, dict[int, float]]]:
    """hold -> other lock -> threads -> ll's throughput / that lock's (one mutex)."""
    return panel_ratios(_panels(points))


def server_ratios(points: list[dict]) -> dict[tuple[int, int, int], dict[str, dict[int, float]]]:
    """shape -> other lock -> clients -> ll's qps / that lock's (server, no gate)."""
    return panel_ratios(server_panels(points))


def ablation(points: list[dict]) -> list[dict]:
    """ll run with options (an ingredient turned off) against ll's defaults, point by point.

    One row per variant, hold time and thread count: the variant's throughput,
    Jain's index and CPU per iteration, each divided by the default's.
    """
    def key(p):
        return (p["threads"], p["hold_ns"])

    base = {key(p): p for p in points
            if p["lock"] == CANDIDATE and not p["lock_opts"] and p["mutexes"] == 1
            and p["ops_per_sec"]}
    rows = []
    for p in points:
        b = base.get(key(p))
        if p["lock"] != CANDIDATE or not p["lock_opts"] or not b or not p["ops_per_sec"]:
            continue
        rows.append({
            "opts": p["lock_opts"], "threads": p["threads"], "hold_ns": p["hold_ns"],
            "ops": p["ops_per_sec"] / b["ops_per_sec"],
            "jain": (p["jain"] / b["jain"]) if b["jain"] else float("nan"),
            "cpu": (p["cpu_ns_per_iter"] / b["cpu_ns_per_iter"])
            if b["cpu_ns_per_iter"] else float("nan"),
        })
    return sorted(rows, key=lambda r: (r["opts"], r["hold_ns"], r["threads"]))


def mutex_section(points: list[dict]) -> str:
    """html_section where ll ran; '' without it (report.index.Study)."""
    return html_section(points) if any(p["lock"] == CANDIDATE for p in points) else ""


def html_section(points: list[dict]) -> str:
    """The report's section on ll: its ratios against every lock, then each target."""
    parts = ["<h2>ll against every lock (one mutex)</h2>",
             "<p>ll's throughput divided by each lock's; below 1 in red.</p>"]
    for hold, table in ratios(points).items():
        parts.append(f"<h3>hold {hold} ns</h3>" + html_table(*ratio_table(table, "threads")))
    rows = check(points)
    parts.append(f"<h3>{targets_heading(rows)}</h3>"
                 + html_table(*target_table(rows, "hold ns", "threads")))
    abl = ablation(points)
    if abl:
        parts.append("<h3>Ablation: ll with one ingredient off, against its defaults</h3>"
                     "<p>Each figure is the variant's divided by default ll's at the same "
                     "point; throughput or Jain below 1 (CPU above 1) in red: the ingredient "
                     "was paying for itself there.</p>" + html_table(
                         ["options", "hold ns", "threads", "ops/s", "Jain", "CPU/iter"],
                         [[r["opts"], r["hold_ns"], r["threads"],
                           judged(f"{r['ops']:.2f}", r["ops"] >= 1),
                           judged(f"{r['jain']:.2f}", r["jain"] >= 1),
                           judged(f"{r['cpu']:.2f}", r["cpu"] <= 1)] for r in abl]))
    return "\n".join(parts)


def server_tables(points: list[dict]) -> list[tuple[str, list, list[list]]]:
    """(title, headers, rows) of the server section's tables: a ratio table per shape,
    then the targets."""
    out = [(f"qps ratios, {shape_title(key)}", *ratio_table(table, "clients"))
           for key, table in server_ratios(points).items()]
    rows = server_check(points)
    if rows:
        out.append((targets_heading(rows), *target_table(rows, "shape", "clients", shape_title)))
    return out


# The server section's tables in Markdown, beside index.html (for docs/bench.md), and
# its targets as text lines, which `locklab report` prints.
SERVER_MARKDOWN = "ll-server.md"
TARGETS_FILE = "ll-server-targets.txt"
# What a report rewrites (report.index.Study).
FILES = (SERVER_MARKDOWN, TARGETS_FILE)


def server_section(points: list[dict], out, raw: list[dict] | None = None) -> str:
    """The report's section on ll in the server workload (HTML), per workload shape;
    also writes SERVER_MARKDOWN and TARGETS_FILE into OUT (RAW, the passes, adds
    their ranges to the qps lines there). Empty without ll."""
    tables = server_tables(points)
    if not tables:
        return ""
    parts = ["<h2>ll against every lock (server workload, no gate)</h2>",
             "<p>ll's qps divided by each lock's, at each client count, one table per "
             "workload shape; below 1 in red.</p>"]
    parts += write_tables(tables, "ll against every lock (server workload, no gate)",
                          out / SERVER_MARKDOWN)
    (out / TARGETS_FILE).write_text(
        target_lines(server_check(points, raw), shape_title, "clients"), encoding="utf-8")
    return "\n".join(parts)
