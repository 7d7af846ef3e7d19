"""Real servers with their locks swapped, in a report (`locklab sweep --preset programs`).

From the medians of a run's program points, per program and load test: throughput,
p99 latency and the server's CPU against clients, a line per lock; then per client
count the best and the worst lock and their ratio, and each swapped lock against
the same run's unswapped server (`native`); then, per client count, every lock's
figures.  Also written as programs.md beside index.html.
"""
from __future__ import annotations

import html
from pathlib import Path

from ..sweep import presets, store
from ..sweep.store import PROGRAM
from .render import fmt, html_table, log2_x, log_y, markdown_table, new_figure, shared_legend

MARKDOWN = "programs.md"
# What each program's throughput counts, and who drives it.
UNITS = {"memcached": ("ops/s", "memcaslap"), "mariadb": ("queries/s", "sysbench")}
# The figures: file, metric, y label, log y.
CHARTS = (
    ("programs_throughput.png", "ops_per_sec", "throughput (higher is better)", False),
    ("programs_p99.png", "latency_ns_p99", "p99 latency (us)", True),
    ("programs_cpu.png", "cpu_cores", "server CPU (cores busy)", False),
)


def is_program(point: dict) -> bool:
    return point.get("workload", "").startswith(PROGRAM)


def loads_of(points: list[dict]) -> list[tuple[str, str]]:
    """(workload, test) of every program load in the run, in the order they ran."""
    return list(dict.fromkeys((p["workload"], p["workload_opts"]) for p in points))


def load_title(load: tuple[str, str]) -> str:
    program = load[0].removeprefix(PROGRAM)
    driver = UNITS.get(program, ("", "load"))[1]
    return f"{program} {load[1]} ({driver})" if load[1] else f"{program} ({driver})"


def unit(load: tuple[str, str]) -> str:
    return UNITS.get(load[0].removeprefix(PROGRAM), ("ops/s", ""))[0]


def series_of(points: list[dict]) -> list[str]:
    return list(dict.fromkeys(store.lock_label(p["lock"], p["lock_opts"]) for p in points))


def by_lock(points: list[dict], load: tuple[str, str], clients: int) -> dict[str, dict]:
    """lock label -> median point, one load at one client count."""
    return {store.lock_label(p["lock"], p["lock_opts"]): p for p in points
            if (p["workload"], p["workload_opts"]) == load and p["threads"] == clients}


def clients_of(points: list[dict], load: tuple[str, str]) -> list[int]:
    return sorted({p["threads"] for p in points if (p["workload"], p["workload_opts"]) == load})


def ratio(a, b) -> float | None:
    return a / b if a is not None and b else None


def whole(count) -> int | None:
    """A count's median (two passes' is their mean) as a whole number."""
    return round(count) if count is not None else None


def us(ns) -> float | None:
    return ns / 1000 if ns is not None else None


def summary_rows(points: list[dict], load: tuple[str, str],
                 passes: int) -> tuple[list[str], list[list]]:
    """Per client count: best and worst lock, their ratio, each swapped lock / native.

    Best and worst are chosen among the locks measured in every one of the run's
    PASSES: a lock whose server failed or was stuck in some passes has the median
    of the others, marked "(k/n)", and cannot be best on the luck of one pass.
    """
    locks = [s for s in series_of(points) if s != presets.NATIVE]
    headers = ["clients", "best", "worst", "best/worst", *(f"{lock}/native" for lock in locks)]
    rows = []
    for clients in clients_of(points, load):
        at = {k: p for k, p in by_lock(points, load, clients).items() if p["ops_per_sec"]}
        if not at:
            continue
        whole = {k: p for k, p in at.items() if p["reps"] >= passes} or at
        best = max(whole, key=lambda k: whole[k]["ops_per_sec"])
        worst = min(whole, key=lambda k: whole[k]["ops_per_sec"])
        base = at.get(presets.NATIVE, {}).get("ops_per_sec")
        rows.append([clients, best, worst,
                     ratio(whole[best]["ops_per_sec"], whole[worst]["ops_per_sec"]),
                     *(against(at.get(lock), base, passes) for lock in locks)])
    return headers, rows


def against(point: dict | None, base: float | None, passes: int):
    """A lock's throughput over native's: a number, or text with the passes it had."""
    value = ratio(point["ops_per_sec"], base) if point else None
    if value is None or point["reps"] >= passes:
        return value
    return f"{fmt(value)} ({point['reps']}/{passes})"


def detail_rows(points: list[dict], load: tuple[str, str],
                clients: int) -> tuple[list[str], list[list]]:
    """Every lock at one client count: throughput, / native, p99, CPU, the swap counts."""
    headers = ["lock", unit(load), "/native", "p99 us", "max us", "CPU cores",
               f"{unit(load).split('/')[0]} per CPU-s", "errors", "mutexes swapped",
               "passed to glibc", "rwlocks swapped", "passes"]
    at = by_lock(points, load, clients)
    base = at.get(presets.NATIVE, {}).get("ops_per_sec")
    rows = [[lock, p["ops_per_sec"], ratio(p["ops_per_sec"], base), us(p["latency_ns_p99"]),
             us(p["latency_ns_max"]), p["cpu_cores"], ratio(p["ops_per_sec"], p["cpu_cores"]),
             *(whole(p[k]) for k in ("client_errors", "swap_mutexes", "swap_passthrough",
                                     "swap_rwlocks")),
             p["reps"]]
            for lock, p in at.items()]
    return headers, rows


def graphs(points: list[dict], out: Path) -> list[str]:
    """One figure per metric, a panel per program load, a line per lock."""
    from matplotlib.ticker import NullLocator

    loads, locks = loads_of(points), series_of(points)
    names = []
    for name, metric, ylabel, logy in CHARTS:
        fig = new_figure(4.6 * len(loads) + 0.5, 4.2)
        axes = fig.subplots(1, len(loads), squeeze=False)[0]
        for ax, load in zip(axes, loads):
            for k, lock in enumerate(locks):
                line = sorted((c, p[metric]) for c in clients_of(points, load)
                              for label, p in by_lock(points, load, c).items()
                              if label == lock and p[metric] is not None)
                if line:
                    xs, ys = zip(*line)
                    ys = [y / 1000 for y in ys] if metric.startswith("latency_ns") else ys
                    ax.plot(xs, ys, marker="o", markersize=3, color=f"C{k % 10}", label=lock,
                            linestyle="--" if lock == presets.NATIVE else "-")
            log2_x(ax, "clients")
            clients = clients_of(points, load)
            ax.set_xticks(clients, [str(c) for c in clients])
            ax.xaxis.set_minor_locator(NullLocator())
            if logy:
                log_y(ax)
            ax.set_ylabel(ylabel.replace("throughput", unit(load)), fontsize=9)
            ax.set_title(load_title(load), fontsize=10)
            ax.grid(True, which="major", alpha=0.3)
        shared_legend(fig, axes)
        fig.savefig(out / name, dpi=90)
        names.append(name)
    return names


NOTE = ("Medians over the passes of each point. Throughput is the load generator's "
        "(memcaslap: gets and sets per second; sysbench: queries per second). p99: "
        "sysbench's, within ~2%; memcaslap's is the upper edge of its power-of-two bucket, "
        "within a factor of 2; sysbench's latency is a transaction's (oltp_read_only: 14 "
        "queries and BEGIN/COMMIT). CPU: the server's utime+stime over the load, per second of "
        "load (cores busy). native: the server with nothing preloaded; every other lock "
        "serves all of its pthread mutexes through liblocklab-swap.so (with the "
        "swapper's counters on); NAME@SITE: only the mutexes `locklab profile` names SITE "
        "are NAME, the rest glibc's (sweep --lock-for); rwlock=NAME: every pthread rwlock is "
        "the rwlock NAME, the mutexes glibc's (sweep --rwlock); rwlock=NAME@SITE: only the "
        "rwlocks named SITE (sweep --rwlock-for). A lock measured in fewer "
        "passes than planned (its server failed or was stuck in the others) shows (k/n) "
        "beside its ratio and is not ranked best or worst; '-': no pass succeeded.")


def section(points: list[dict], out: Path, passes: int = 1) -> str:
    """The report's section on program points (HTML); also writes programs.md and the
    figures into OUT. PASSES: how many the run planned for each point."""
    points = [p for p in points if is_program(p)]
    if not points:
        return ""
    parts = ["<h2>Programs: real servers with their locks swapped</h2>",
             f"<p>{html.escape(NOTE)}</p>"]
    md = ["# Programs: real servers with their locks swapped\n\n", NOTE, "\n"]
    for name in graphs(points, out):
        parts.append(f'<p><img src="{name}" alt="{name}"></p>')
        md.append(f"\n![{name}]({name})\n")
    for load in loads_of(points):
        title = load_title(load)
        headers, rows = summary_rows(points, load, passes)
        parts.append(f"<h3>{html.escape(title)}: best and worst lock, each against native</h3>"
                     + html_table(headers, rows))
        md.append(f"\n## {title}\n\nBest and worst lock per client count, each lock "
                  f"against native ({unit(load)}):\n\n" + markdown_table(headers, rows))
        for clients in clients_of(points, load):
            headers, rows = detail_rows(points, load, clients)
            parts.append(f"<h4>{html.escape(title)}, {clients} clients</h4>"
                         + html_table(headers, rows))
            md.append(f"\n{clients} clients:\n\n" + markdown_table(headers, rows))
    (out / MARKDOWN).write_text("".join(md), encoding="utf-8")
    return "\n".join(parts)
