"""A run's report: its graphs, tables and data, tied together by index.html."""
from __future__ import annotations

import csv
import html
import json
from pathlib import Path
from statistics import median
from typing import Protocol, Sequence

from ..sweep import kinds, store
from . import programs, rwlocks, verdict
from .render import CSS, fmt, html_table, kv_table, line_panels, new_figure, plain_y
from .verdict import crossings, panel_title


class Study(Protocol):
    """A study's sections in the report (studies/): the report knows none by name."""

    # Its targets as text lines, which `locklab report` prints.
    TARGETS_FILE: str
    # What else it writes beside index.html, removed first so none outlives a rewrite.
    FILES: tuple[str, ...]

    def mutex_section(self, points: list[dict]) -> str:
        """HTML after the mutex charts (POINTS: the mutex medians); '' for none."""

    def server_section(self, points: list[dict], out: Path, raw: list[dict]) -> str:
        """HTML after the mutex part (POINTS: the server workload's medians, RAW its
        stored rows), writing its files into OUT; '' for none."""


# The line charts: file stem, metric, y label, log y axis, heading in index.html, and
# what the chart shows and how to read it (WAIT_FLOOR filled in from the run).
# A log axis for times: a lock that collapses at 1024 threads is 100x slower than
# at 1, and on a linear axis the low-thread crossing would be a flat line at zero.
WAIT_FLOOR = "{floor}"
LINE_CHARTS = (
    ("ns_per_iter", "ns_per_iter", "ns per iteration (lower is better)", True,
     "<h2>Time per iteration</h2>",
     "Wall time over iterations of all threads: the lower line is the faster lock at that "
     "thread count. The floor of each panel is the hold time (one critical section after "
     "another); a line that climbs with threads pays more per handoff as waiters pile up."),
    ("cpu_ns_per_iter", "cpu_ns_per_iter", "CPU ns per iteration (lower is better)", True,
     "<h2>CPU per iteration: what the waiting costs</h2>",
     "The process's CPU time over iterations: above the time per iteration where waiters "
     "spin (both CPUs busy for one holder), below it where they sleep and leave a CPU idle."),
    ("fairness", "jain", "Jain fairness (1 = equal share)", False, "<h2>Fairness</h2>",
     "Jain's index over the threads' iterations: 1 when every thread got the same share, "
     "1/threads when one thread did all the work."),
    ("wait_p50", "wait_ns_p50", "wait for the lock, p50 (ns)", True, "<h2>Wait latency</h2>",
     "Time inside the lock call, every 16th acquisition timed. " + WAIT_FLOOR + " A p50 on "
     "the floor means at least half the acquisitions found the lock free or got it at once."),
    ("wait_p99", "wait_ns_p99", "wait for the lock, p99 (ns)", True, "",
     "The wait that 1% of the timed acquisitions exceeded: the tail a waiter sees."),
    ("wait_max", "wait_ns_max", "wait for the lock, max (ns)", True, "",
     "The longest timed wait: how long a thread can starve within the measured window."),
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
        plain_y(cs)
        for ax in (pct, cs):
            ax.set_xticks(list(xs), names, rotation=90, fontsize=7)
    fig.legend(*axes[0][0].get_legend_handles_labels(), loc="outside upper center", ncols=3)
    fig.savefig(path, dpi=90)


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
        writer = csv.DictWriter(f, fieldnames=verdict.CROSSING_COLUMNS)
        writer.writeheader()
        writer.writerows(crossed)


def crossings_table(crossed: list[dict]) -> str:
    text = ("<p>Where one lock overtakes another as threads grow, interpolated between the "
            "two thread counts around it. Only thread counts where the two locks are apart "
            "beyond the repeats' spread count (with one repeat: more than "
            f"{100 * verdict.ONE_REPEAT_TIE:.0f}% apart), so noise between locks that "
            "measure the same makes no crossing.</p>")
    if not crossed:
        return text + "<p>No line crosses another beyond the noise.</p>\n"
    return text + html_table(
        ["mutexes", "hold ns", "outside ns", "faster below", "faster above",
         "crossing at threads", "between"],
        [[c["mutexes"], c["hold_ns"], c["outside_ns"], c["faster_below"], c["faster_above"],
          c["threads"], f"{c['between_lo']} and {c['between_hi']}"] for c in crossed],
    )


def wait_floor(points: list[dict]) -> str:
    """The wait charts' floor in words, measured: the p50 wait at one thread, where no
    thread can wait, is what the timing itself costs."""
    alone = [p["wait_ns_p50"] for p in points if p["threads"] == 1 and p["wait_ns_p50"]]
    if not alone:
        return ("The floor is the timing's own cost: two clock reads around the lock call.")
    return (f"The floor, {fmt(float(median(alone)))} ns here, is the timing's own cost: two "
            "clock reads around an uncontended lock call, measured as the p50 at 1 thread "
            "(where no thread can wait), and the histogram's bucket it falls in.")


def grid_value(key: str, value) -> str:
    """A spec's value as the Grid table shows it: lists comma-separated, each workload
    shape as the axes it changes ("as given" for the spec's own)."""
    if key == "shapes":
        return "; ".join(", ".join(f"{axis} {','.join(map(str, vs))}" for axis, vs in s.items())
                         or "as given" for s in value)
    return ", ".join(map(str, value)) if isinstance(value, list) else value


def index_html(run: dict, rows: list[dict], points: list[dict], crossed: list[dict],
               planned: list, extra: str = "", studies: Sequence[Study] = ()) -> str:
    """The report's page; PLANNED: the run's grid (kinds.grid)."""
    failed = [r for r in rows if not r["ok"]]
    state = (f"finished {run['finished']}" if run["finished"]
             else f"incomplete: {len(rows)} of {len(planned)} points")
    parts = [
        f"<!doctype html><meta charset=utf-8><title>locklab run {run['id']}</title>"
        f"<style>{CSS}</style><h1>locklab run {run['id']}: {html.escape(run['cpu_model'])}, "
        f"{run['cores']} cores</h1>",
        verdict.html_section(rows, planned),
        "<h2>Machine</h2>",
        kv_table([["CPU", run["cpu_model"]], ["cores", run["cores"]],
                  ["kernel", run["kernel"]], ["C library", run["glibc"]],
                  ["locklab", run["version"]], ["started", run["started"]], ["state", state]]),
        "<h3>Floor: what the primitives cost here</h3>",
        kv_table([[k, v] for k, v in run["floor"].items()]),
        "<h2>Grid</h2>",
        kv_table([[k, grid_value(k, v)] for k, v in run["spec"].items()]),
        f"<p>{len(rows)} points stored, {len(failed)} failed. Each chart plots the median "
        "of a point's succeeded repeats.</p>",
    ]
    if points:
        for stem, _, _, _, heading, caption in LINE_CHARTS:
            parts.append(heading)
            caption = caption.replace(WAIT_FLOOR, wait_floor(points))
            parts.append(f'<p class="caption">{html.escape(caption, quote=False)}</p>')
            parts.append(f'<p><img src="{stem}.png" alt="{stem}"></p>')
            if stem == "ns_per_iter":
                parts.append("<h3>Crossing points</h3>" + crossings_table(crossed))
        parts += filter(None, (study.mutex_section(points) for study in studies))
        parts.append("<h2>CPU and context switches at the most threads</h2>")
        parts.append('<p class="caption">Per lock, at its most threads: the machine\'s CPU '
                     "split into user (us), system (sy) and idle (id), as vmstat shows it, and "
                     "its context switches a second. A lock whose waiters spin leaves no idle "
                     "time; one whose waiters sleep switches more.</p>")
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


def target_files(studies: Sequence[Study] = ()) -> tuple[str, ...]:
    """The verdict and the targets as text lines, written beside index.html for `locklab
    report` to print."""
    return (verdict.VERDICT_FILE, *(study.TARGETS_FILE for study in studies),
            rwlocks.TARGETS_FILE)


def write(conn, run_id: int, out: Path, studies: Sequence[Study] = ()) -> Path:
    """Write the report of a run into OUT, with the sections of STUDIES; its index.html."""
    run = store.get_run(conn, run_id)
    planned = kinds.grid(run["spec"])
    rows = store.points(conn, run_id)
    points = store.medians(rows)
    # The server workload's points are the studies': behind gates, the admission
    # study's; ll against the other locks there, shape by shape, ll's targets'.
    # Real programs' points have clients and loads: report/programs.py draws them;
    # the rw workload's read fractions and rwlocks, report/rwlocks.py.
    server = [p for p in points if p["workload"] == "server"]
    rw = [p for p in points if p["workload"] == rwlocks.WORKLOAD]
    program = [p for p in points if programs.is_program(p)]
    points = [p for p in points if p["workload"] == "mutex"]
    crossed = crossings(rows)
    out.mkdir(parents=True, exist_ok=True)
    for stale in (*target_files(studies), *(f for study in studies for f in study.FILES),
                  programs.MARKDOWN, rwlocks.MARKDOWN):
        (out / stale).unlink(missing_ok=True)
    raw = [r for r in rows if r.get("workload") == "server"]
    extra = "".join(study.server_section(server, out, raw) for study in studies)
    extra += programs.section(program, out, run["spec"].get("repeat", 1))
    extra += rwlocks.section(rw, rows, out)
    write_data(out, run, rows, crossed)
    told = verdict.terminal(rows, run_id, planned)
    if told:
        (out / verdict.VERDICT_FILE).write_text(told, encoding="utf-8")
    if points:
        for stem, metric, ylabel, logy, _, _ in LINE_CHARTS:
            line_chart(points, metric, ylabel, logy, out / f"{stem}.png")
        cpu_chart(points, out / "cpu.png")
    index = out / "index.html"
    index.write_text(index_html(run, rows, points, crossed, planned, extra, studies),
                     encoding="utf-8")
    return index
