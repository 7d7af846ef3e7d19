"""`locklab report`: a run's graphs, tables and data, tied together by index.html."""
from __future__ import annotations

import csv
import itertools
import json
import math
from pathlib import Path

from . import admission, ll_targets, program_report, rw_report, store, sweep
from .render import CSS, html_table, line_panels, new_figure

# The line charts: file stem, metric, y label, log y axis, heading in index.html.
# A log axis for times: a lock that collapses at 1024 threads is 100x slower than
# at 1, and on a linear axis the low-thread crossing would be a flat line at zero.
LINE_CHARTS = (
    ("ns_per_iter", "ns_per_iter", "ns per iteration (lower is better)", True,
     "<h2>Time per iteration</h2>"),
    ("cpu_ns_per_iter", "cpu_ns_per_iter", "CPU ns per iteration", True,
     "<h2>CPU per iteration: what the waiting costs</h2>"),
    ("fairness", "jain", "Jain fairness (1 = equal share)", False, "<h2>Fairness</h2>"),
    ("wait_p50", "wait_ns_p50", "wait for the lock, p50 (ns)", True, "<h2>Wait latency</h2>"),
    ("wait_p99", "wait_ns_p99", "wait for the lock, p99 (ns)", True, ""),
    ("wait_max", "wait_ns_max", "wait for the lock, max (ns)", True, ""),
)


def series_of(points: list[dict]) -> list[tuple[str, str]]:
    """The (lock, lock_opts) variants, in the order the sweep ran them."""
    return list(dict.fromkeys((p["lock"], p["lock_opts"]) for p in points))


def panels_of(points: list[dict]) -> tuple[list[int], list[tuple[int, int]]]:
    """Panel rows (mutex counts) and columns (hold, outside), as the InnoDB mutex study laid
    out its graphs."""
    rows = sorted({p["mutexes"] for p in points})
    cols = sorted({(p["hold_ns"], p["outside_ns"]) for p in points})
    return rows, cols


def panel_title(mutexes: int, hold_ns: int, outside_ns: int) -> str:
    text = f"{mutexes} mutex{'es' if mutexes > 1 else ''}, hold {hold_ns} ns"
    return text + (f", outside {outside_ns} ns" if outside_ns else "")


def curve(points: list[dict], series: tuple[str, str], panel: tuple[int, int, int],
          metric: str) -> dict[int, float]:
    """threads -> metric for one lock variant in one panel (points without it left out)."""
    return {
        p["threads"]: p[metric]
        for p in points
        if (p["lock"], p["lock_opts"]) == series
        and (p["mutexes"], p["hold_ns"], p["outside_ns"]) == panel
        and p[metric] is not None
    }


def line_chart(points: list[dict], metric: str, ylabel: str, logy: bool, path: Path) -> None:
    """One panel per mutex count x hold time, metric against threads, a line per lock."""
    rows, cols = panels_of(points)
    series = series_of(points)
    grid = [[(panel_title(mutexes, hold, outside),
              {store.lock_label(*s): curve(points, s, (mutexes, hold, outside), metric)
               for s in series})
             for hold, outside in cols] for mutexes in rows]
    line_panels(grid, [store.lock_label(*s) for s in series], ylabel, logy, path)


def at_most_threads(points: list[dict]) -> list[dict]:
    """Per lock variant and panel, the point with the most threads (the vmstat rows of the
    InnoDB mutex study)."""
    best: dict[tuple, dict] = {}
    for p in points:
        key = (p["lock"], p["lock_opts"], p["mutexes"], p["hold_ns"], p["outside_ns"])
        if key not in best or p["threads"] > best[key]["threads"]:
            best[key] = p
    return list(best.values())


def cpu_chart(points: list[dict], path: Path) -> None:
    """us/sy/id stacked and context switches per lock x mutex count, a column per hold time."""
    top = at_most_threads(points)
    _, cols = panels_of(points)
    series = series_of(points)
    fig = new_figure(max(5.0, 0.45 * len(top) / len(cols) + 2) * len(cols), 7.5)
    axes = fig.subplots(2, len(cols), squeeze=False)
    for j, (hold, outside) in enumerate(cols):
        bars = sorted((p for p in top if (p["hold_ns"], p["outside_ns"]) == (hold, outside)),
                      key=lambda p: (series.index((p["lock"], p["lock_opts"])), p["mutexes"]))
        names = [f"{store.lock_label(p['lock'], p['lock_opts'])}\nm={p['mutexes']} "
                 f"t={p['threads']}" for p in bars]
        xs = range(len(bars))
        pct, cs = axes[0][j], axes[1][j]
        bottom = [0.0] * len(bars)
        for key, name, color in (("cpu_user_pct", "us", "C0"), ("cpu_sys_pct", "sy", "C3"),
                                 ("cpu_idle_pct", "id", "C7")):
            heights = [p[key] or 0.0 for p in bars]
            pct.bar(xs, heights, bottom=bottom, color=color, label=name)
            bottom = [b + h for b, h in zip(bottom, heights)]
        pct.set_ylim(0, 105)
        pct.set_ylabel("CPU %")
        pct.set_title(f"hold {hold} ns" + (f", outside {outside} ns" if outside else "")
                      + ", most threads", fontsize=10)
        cs.bar(xs, [p["cs_per_sec"] or 0.0 for p in bars], color="C2")
        cs.set_ylabel("context switches / s")
        for ax in (pct, cs):
            ax.set_xticks(list(xs), names, rotation=90, fontsize=7)
    fig.legend(*axes[0][0].get_legend_handles_labels(), loc="outside upper center", ncols=3)
    fig.savefig(path, dpi=90)


def crossings(points: list[dict], metric: str = "ns_per_iter",
              margin: float = 0.10) -> list[dict]:
    """Where, in each panel, one lock overtakes another as threads grow.

    Thread counts where the two are within MARGIN of each other count as ties and
    are skipped: two locks that measure the same would otherwise "cross" at every
    wobble of the noise. The crossing is interpolated on log(a/b) against
    log2(threads), the axes the graphs use; for costs that follow power laws of
    the thread count it is exact.
    """
    rows, cols = panels_of(points)
    tie = math.log1p(margin)
    out = []
    for mutexes, (hold, outside) in itertools.product(rows, cols):
        panel = (mutexes, hold, outside)
        for a, b in itertools.combinations(series_of(points), 2):
            ca, cb = curve(points, a, panel, metric), curve(points, b, panel, metric)
            logs = [(t, math.log(ca[t] / cb[t])) for t in sorted(ca.keys() & cb.keys())
                    if ca[t] > 0 and cb[t] > 0]
            logs = [(t, d) for t, d in logs if abs(d) > tie]
            for (t0, d0), (t1, d1) in zip(logs, logs[1:]):
                if (d0 < 0) == (d1 < 0):
                    continue
                x = math.log2(t0) + (math.log2(t1) - math.log2(t0)) * d0 / (d0 - d1)
                below, above = (a, b) if d0 < 0 else (b, a)
                out.append({
                    "mutexes": mutexes, "hold_ns": hold, "outside_ns": outside,
                    "faster_below": store.lock_label(*below),
                    "faster_above": store.lock_label(*above),
                    "threads": round(2 ** x, 1), "between": [t0, t1],
                })
    return out


def vmstat_tables(points: list[dict]) -> str:
    """The InnoDB mutex study's vmstat tables: per hold time and lock, a row per mutex count."""
    top = at_most_threads(points)
    series = series_of(points)
    _, cols = panels_of(points)
    out = []
    for hold, outside in cols:
        rows = sorted((p for p in top if (p["hold_ns"], p["outside_ns"]) == (hold, outside)),
                      key=lambda p: (series.index((p["lock"], p["lock_opts"])), p["mutexes"]))
        out.append(f"<h3>hold {hold} ns" + (f", outside {outside} ns" if outside else "")
                   + "</h3>")
        out.append(html_table(
            ["lock", "mutexes", "threads", "cs/s", "us %", "sy %", "id %"],
            [[store.lock_label(p["lock"], p["lock_opts"]), p["mutexes"], p["threads"],
              p["cs_per_sec"], p["cpu_user_pct"], p["cpu_sys_pct"], p["cpu_idle_pct"]]
             for p in rows],
        ))
    return "".join(out)


def write_data(out: Path, run: dict, rows: list[dict], crossed: list[dict]) -> None:
    """points.csv, points.json (with the machine) and crossings.csv."""
    with open(out / "points.csv", "w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=store.POINT_COLUMNS)
        writer.writeheader()
        writer.writerows(rows)
    machine = {k: run[k] for k in (*store.MACHINE, "started", "finished", "floor")}
    with open(out / "points.json", "w", encoding="utf-8") as f:
        json.dump({"run": run["id"], "machine": machine, "spec": run["spec"], "points": rows},
                  f, indent=1)
    with open(out / "crossings.csv", "w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=list(crossed[0]) if crossed else ["threads"])
        writer.writeheader()
        writer.writerows(crossed)


def crossings_table(crossed: list[dict]) -> str:
    if not crossed:
        return "<p>No line crosses another.</p>\n"
    return html_table(
        ["mutexes", "hold ns", "outside ns", "faster below", "faster above",
         "crossing at threads", "between"],
        [[c["mutexes"], c["hold_ns"], c["outside_ns"], c["faster_below"], c["faster_above"],
          c["threads"], f"{c['between'][0]} and {c['between'][1]}"] for c in crossed],
    )


def grid_value(key: str, value) -> str:
    """A spec's value as the Grid table shows it: lists comma-separated, each workload
    shape as the axes it changes ("as given" for the spec's own)."""
    if key == "shapes":
        return "; ".join(", ".join(f"{axis} {','.join(map(str, vs))}" for axis, vs in s.items())
                         or "as given" for s in value)
    return ", ".join(map(str, value)) if isinstance(value, list) else value


def index_html(run: dict, rows: list[dict], points: list[dict], crossed: list[dict],
               extra: str = "") -> str:
    planned = len(sweep.grid(run["spec"]))
    failed = [r for r in rows if not r["ok"]]
    state = (f"finished {run['finished']}" if run["finished"]
             else f"incomplete: {len(rows)} of {planned} points")
    parts = [
        f"<!doctype html><meta charset=utf-8><title>locklab run {run['id']}</title>"
        f"<style>{CSS}</style><h1>locklab run {run['id']}</h1>",
        "<h2>Machine</h2>",
        html_table(None, [["CPU", run["cpu_model"]], ["cores", run["cores"]],
                          ["kernel", run["kernel"]], ["C library", run["glibc"]],
                          ["locklab", run["version"]], ["started", run["started"]],
                          ["state", state]]),
        "<h3>Floor: what the primitives cost here</h3>",
        html_table(None, [[k, v] for k, v in run["floor"].items()]),
        "<h2>Grid</h2>",
        html_table(None, [[k, grid_value(k, v)] for k, v in run["spec"].items()]),
        f"<p>{len(rows)} points stored, {len(failed)} failed. Each chart plots the median "
        "of a point's succeeded repeats.</p>",
    ]
    if points:
        for stem, _, _, _, heading in LINE_CHARTS:
            parts.append(heading)
            parts.append(f'<p><img src="{stem}.png" alt="{stem}"></p>')
            if stem == "ns_per_iter":
                parts.append("<h3>Crossing points</h3>" + crossings_table(crossed))
        if any(p["lock"] == ll_targets.CANDIDATE for p in points):
            parts.append(ll_targets.html_section(points))
        parts.append("<h2>CPU and context switches at the most threads</h2>")
        parts.append('<p><img src="cpu.png" alt="cpu"></p>')
        parts.append(vmstat_tables(points))
    if extra:
        parts.append(extra)
    if failed:
        parts.append("<h2>Failed points</h2>")
        parts.append(html_table([*store.Point._fields, "error"],
                            [[r[k] for k in (*store.Point._fields, "error")] for r in failed]))
    parts.append('<h2>Data</h2><p><a href="points.csv">points.csv</a> '
                 '<a href="points.json">points.json</a> '
                 '<a href="crossings.csv">crossings.csv</a></p>')
    return "\n".join(parts)


# The targets as text lines, written beside index.html for `locklab report` to print.
TARGET_FILES = (admission.TARGETS_FILE, ll_targets.SERVER_TARGETS_FILE,
                rw_report.TARGETS_FILE)


def write(conn, run_id: int, out: Path) -> Path:
    """Write the report of a run into OUT; its index.html."""
    run = store.get_run(conn, run_id)
    rows = store.points(conn, run_id)
    points = store.medians(rows)
    # The server workload's points behind gates are the admission study's: admission.py
    # draws them; ll against the other locks there, shape by shape, is ll_targets.py's.
    # Real programs' points have clients and loads: program_report.py draws them; the
    # rw workload's read fractions and rwlocks, rw_report.py.
    server = [p for p in points if p["workload"] == "server"]
    rw = [p for p in points if p["workload"] == rw_report.WORKLOAD]
    program = [p for p in points if program_report.is_program(p)]
    points = [p for p in points if p["workload"] == "mutex"]
    crossed = crossings(points)
    out.mkdir(parents=True, exist_ok=True)
    for stale in (*TARGET_FILES, program_report.MARKDOWN, ll_targets.SERVER_MARKDOWN,
                  rw_report.MARKDOWN):
        (out / stale).unlink(missing_ok=True)
    raw = [r for r in rows if r.get("workload") == "server"]
    extra = admission.section(server, out, raw) if any(p["gate"] for p in server) else ""
    extra += ll_targets.server_section(server, out)
    extra += program_report.section(program, out, run["spec"].get("repeat", 1))
    extra += rw_report.section(rw, rows, out)
    write_data(out, run, rows, crossed)
    if points:
        for stem, metric, ylabel, logy, _ in LINE_CHARTS:
            line_chart(points, metric, ylabel, logy, out / f"{stem}.png")
        cpu_chart(points, out / "cpu.png")
    index = out / "index.html"
    index.write_text(index_html(run, rows, points, crossed, extra), encoding="utf-8")
    return index
