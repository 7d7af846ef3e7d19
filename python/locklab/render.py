"""How the report draws and writes: figures, number formats, HTML and Markdown tables.

The study-specific analyses (admission.py, ll_targets.py) and report.py all
render through here, so a number reads the same in every table of a report.
"""
from __future__ import annotations

import html
from typing import NamedTuple

CSS = """body{font-family:sans-serif;margin:2em;max-width:1800px}
table{border-collapse:collapse;margin:.5em 0 1.5em}td,th{border:1px solid #ccc;padding:2px 8px;
text-align:right}th{background:#eee}td:first-child{text-align:left}img{max-width:100%}
td.miss{color:#c00;font-weight:bold}td.ok{color:#070}
p.alarm{color:#c00;font-weight:bold;font-size:1.25em;border:3px solid #c00;padding:.5em}"""


class Cell(NamedTuple):
    """A table cell with a CSS class: `ok` (green) or `miss` (red)."""

    value: object
    cls: str


def judged(value, ok: bool) -> Cell:
    """A figure shown green where it meets its bound, red where it misses."""
    return Cell(value, "ok" if ok else "miss")


def new_figure(width: float, height: float):
    """A matplotlib figure on an Agg canvas: files only, no display, no global figure list.

    matplotlib is imported here, on first use: it takes a good part of a second to
    load, which only the report pays.
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height), layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def log2_x(ax, label: str | None = None) -> None:
    """A thread or client axis: log base 2, with plain numbers (1024, not 2^10)."""
    from matplotlib.ticker import ScalarFormatter

    ax.set_xscale("log", base=2)
    ax.xaxis.set_major_formatter(ScalarFormatter())
    if label:
        ax.set_xlabel(label)


def log_y(ax) -> None:
    """A log y axis with plain numbers (2000, 3000) where matplotlib would write 2x10^3;
    zeros, which it cannot draw, masked."""
    from matplotlib.ticker import LogFormatter

    ax.set_yscale("log", nonpositive="mask")
    ax.yaxis.set_major_formatter(LogFormatter())
    ax.yaxis.set_minor_formatter(LogFormatter(labelOnlyBase=False, minor_thresholds=(2, 0.4)))


def shared_legend(fig, axes) -> None:
    """One legend above the panels: every line's name once, from whichever panel has it."""
    legend = {}
    for ax in axes:
        for handle, name in zip(*ax.get_legend_handles_labels()):
            legend.setdefault(name, handle)
    fig.legend(legend.values(), legend.keys(), loc="outside upper center",
               ncols=min(len(legend), 6) or 1)


def line_panels(grid: list[list[tuple[str, dict[str, dict]]]], labels: list[str], ylabel: str,
                logy: bool, path, xlabel: str = "threads") -> None:
    """Panels of lines against a log2 x axis, saved to PATH: GRID's rows of (title,
    label -> {x: y}) panels, a line per label in LABELS' order and colours, one legend."""
    nrows, ncols = len(grid), max(len(row) for row in grid)
    fig = new_figure(4.4 * ncols + 0.5, 3.3 * nrows + 0.8)
    axes = fig.subplots(nrows, ncols, squeeze=False, sharex=True)
    for i, row in enumerate(grid):
        for j, (title, lines) in enumerate(row):
            ax = axes[i][j]
            positive = False
            for k, name in enumerate(labels):
                line = sorted(lines.get(name, {}).items())
                if line:
                    xs, ys = zip(*line)
                    ax.plot(xs, ys, marker="o", markersize=3, color=f"C{k % 10}", label=name)
                    positive = positive or any(y > 0 for y in ys)
            log2_x(ax)
            if logy and positive:
                log_y(ax)  # zero waits (one thread never waits) are masked
            ax.set_title(title, fontsize=10)
            ax.grid(True, which="major", alpha=0.3)
            if i == nrows - 1:
                ax.set_xlabel(xlabel)
            if j == 0:
                ax.set_ylabel(ylabel, fontsize=9)
    shared_legend(fig, axes.flat)
    fig.savefig(path, dpi=90)


def fmt(value) -> str:
    """A number as every table shows it: thousands grouped from 100, 3 figures below."""
    if isinstance(value, Cell):
        value = value.value
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:,.0f}" if abs(value) >= 100 else f"{value:.3g}"
    return str(value)


def html_table(headers: list[str] | None, rows: list[list]) -> str:
    """An HTML table; headers None for a key/value table with no header row."""
    head = ("<tr>" + "".join(f"<th>{html.escape(str(h))}</th>" for h in headers) + "</tr>"
            if headers else "")
    body = "".join("<tr>" + "".join(_td(v) for v in row) + "</tr>" for row in rows)
    return f"<table>{head}{body}</table>\n"


def _td(value) -> str:
    cls = f' class="{value.cls}"' if isinstance(value, Cell) else ""
    return f"<td{cls}>{html.escape(fmt(value))}</td>"


def markdown_table(headers: list[str], rows: list[list]) -> str:
    lines = ["| " + " | ".join(headers) + " |", "|" + " --- |" * len(headers)]
    lines += ["| " + " | ".join(fmt(v) for v in row) + " |" for row in rows]
    return "\n".join(lines) + "\n"
