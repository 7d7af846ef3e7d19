"""The targets a report checks, as rows: each a figure against its bound, met or
MISSED; their tables (HTML, Markdown) and the text lines `locklab report` prints.
The ratios of the lock whose targets they are (CANDIDATE) to every other lock's."""
from __future__ import annotations

from .render import html_table, judged, markdown_table

# The lock the targets are set for: the project's own.
CANDIDATE = "ll"


def add_check(rows: list[dict], where, target: str, threads, value: float, bound: float,
           ok: bool, detail: str | None = None) -> None:
    """One target's row; DETAIL, when given, is what its printed line says after the colon
    (else the figure against the bound)."""
    row = {"where": where, "target": target, "threads": threads, "ll": value,
           "bound": bound, "ok": ok}
    if detail:
        row["detail"] = detail
    rows.append(row)


def panel_ratios(panels: dict) -> dict:
    """panel key -> other lock -> threads -> ll's throughput / that lock's."""
    out = {}
    for key, panel in panels.items():
        table: dict[str, dict[int, float]] = {}
        for (lock, t), p in panel.items():
            mine = panel.get((CANDIDATE, t))
            if lock != CANDIDATE and mine:
                table.setdefault(lock, {})[t] = mine["ops_per_sec"] / p["ops_per_sec"]
        if table:
            out[key] = table
    return out


def ratio_table(table: dict[str, dict[int, float]], axis: str) -> tuple[list, list[list]]:
    """(headers, rows) of one panel's ratios: a row per lock, a column per thread count,
    each ratio below 1 judged a miss."""
    threads = sorted({t for row in table.values() for t in row})
    return ([f"lock \\ {axis}", *map(str, threads)],
            [[lock, *(judged(f"{row[t]:.2f}", row[t] >= 1) if t in row else None
                      for t in threads)] for lock, row in sorted(table.items())])


def target_table(rows: list[dict], where: str, axis: str, name=str) -> tuple[list, list[list]]:
    """(headers, rows) of the targets: NAME(where), target, threads, ll, bound, met/MISSED."""
    return ([where, "target", axis, "ll", "bound", ""],
            [[name(r["where"]), r["target"], r["threads"], f"{r['ll']:.4g}",
              f"{r['bound']:.4g}", judged("met" if r["ok"] else "MISSED", r["ok"])]
             for r in rows])


def targets_heading(rows: list[dict]) -> str:
    missed = sum(not r["ok"] for r in rows)
    return f"Targets: {len(rows) - missed} met, {missed} missed"


def write_tables(tables: list[tuple[str, list, list[list]]], heading: str, path) -> list[str]:
    """Each (title, headers, rows) table as HTML, returned; all of them in Markdown under
    HEADING, written to PATH (for the docs)."""
    md = [f"# {heading}\n"]
    for title, headers, rows in tables:
        md.append(f"\n{title}:\n\n" + markdown_table(headers, rows))
    path.write_text("".join(md), encoding="utf-8")
    return [f"<h3>{title}</h3>" + html_table(headers, rows) for title, headers, rows in tables]


def target_lines(rows: list[dict], name, axis: str) -> str:
    """The targets as `locklab report` prints them, a line each: met or MISSED, who
    (ll, unless the row names its `subject`), the target, where and at how many AXIS, then
    the row's `detail` or else its figure against the bound."""
    return "".join(
        f"{'met   ' if r['ok'] else 'MISSED'} "
        + " ".join(filter(None, (r.get("subject", CANDIDATE), r["target"])))
        + f" ({name(r['where'])}, {r['threads']} {axis}): "
        + r.get("detail", f"{r['ll']:.4g} against {r['bound']:.4g}") + "\n" for r in rows)
