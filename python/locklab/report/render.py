"""How the report draws and writes: figures, number formats, HTML and Markdown tables.

The report's pages and sections (report/) and the studies' (studies/) all
render through here, so a number reads the same in every table of a report.
"""
from __future__ import annotations

import html
from typing import NamedTuple

CSS = """body{font-family:sans-serif;margin:2em;max-width:1800px}
table{border-collapse:collapse;margin:.5em 0 1.5em}td,th{border:1px solid #ccc;padding:2px 8px;
text-align:right}th{background:#eee}td:first-child{text-align:left}img{max-width:100%}
td.miss{color:#c00;font-weight:bold}td.ok{color:#070}
p.alarm{color:#c00;font-weight:bold;font-size:1.25em;border:3px solid #c00;padding:.5em}
th[scope=row]{text-align:left;font-weight:normal}td.pick{font-weight:bold;text-align:left}
td.text{text-align:left}p.caption{max-width:70em;color:#333}
#verdict{border:2px solid #070;padding:0 1em;margin:1em 0}#verdict th{text-align:left}
#verdict td:not(.text){white-space:nowrap}"""


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


def tick_text(value: float) -> str:
    """An axis number as every chart writes it: 3 figures at most, thousands and
    millions as k and M (30, 500, 1k, 1.5k, 10k, 100k, 1M, 0.25)."""
    if value == 0:
        return "0"
    value = float(f"{value:.3g}")
    for size, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= size:
            return f"{value / size:g}{suffix}"
    return f"{value:g}"


def _ticks(minor: bool = False):
    """A formatter writing tick_text; on a log axis's minor ticks, only 2 and 5 of each
    decade where the axis spans under two decades (all of them under half of one), none
    beyond: what a log axis labels between its powers of ten."""
    import math

    from matplotlib.ticker import Formatter

    class Ticks(Formatter):
        def __call__(self, x, pos=None):
            if minor:
                lo, hi = sorted(self.axis.get_view_interval())
                decades = math.log10(hi / lo) if lo > 0 else math.inf
                lead = round(x / 10 ** math.floor(math.log10(x) + 1e-9))
                if decades >= 2 or (decades >= 0.5 and lead not in (2, 5)):
                    return ""
            return tick_text(x)

    return Ticks()


def plain_y(ax) -> None:
    """A linear y axis whose numbers read as the log axes' do (no 1e6 offset)."""
    ax.yaxis.set_major_formatter(_ticks())


def log2_x(ax, label: str | None = None) -> None:
    """A thread or client axis: log base 2, with plain integers (1024, not 2^10)."""
    from matplotlib.ticker import FuncFormatter, NullFormatter

    ax.set_xscale("log", base=2)
    ax.xaxis.set_major_formatter(FuncFormatter(lambda x, pos: f"{x:.0f}" if x >= 1 else f"{x:g}"))
    ax.xaxis.set_minor_formatter(NullFormatter())
    if label:
        ax.set_xlabel(label)


def log_y(ax) -> None:
    """A log y axis in tick_text's numbers (1k, 10k, 100k, not 1000, 1e4, 1e+05);
    zeros, which it cannot draw, masked."""
    ax.set_yscale("log", nonpositive="mask")
    ax.yaxis.set_major_formatter(_ticks())
    ax.yaxis.set_minor_formatter(_ticks(minor=True))


def shared_legend(fig, axes) -> None:
    """One legend above the panels: every line's name once, from whichever panel has it."""
    legend = {}
    for ax in axes:
        for handle, name in zip(*ax.get_legend_handles_labels()):
            legend.setdefault(name, handle)
    fig.legend(legend.values(), legend.keys(), loc="outside upper center",
               ncols=min(len(legend), 6) or 1)


def line_panels(grid: list[list[tuple[str, dict[str, dict]]]], labels: list[str], ylabel: str,
                logy: bool, path, xlabel: str = "threads"):
    """Panels of lines against a log2 x axis, saved to PATH: GRID's rows of (title,
    label -> {x: y}) panels, a line per label in LABELS' order and colours, one legend.
    Returns the figure."""
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
            else:
                plain_y(ax)
            ax.set_title(title, fontsize=10)
            ax.grid(True, which="major", alpha=0.3)
            if i == nrows - 1:
                ax.set_xlabel(xlabel)
            ax.set_ylabel(ylabel, fontsize=9)  # every panel: each has its own scale
    shared_legend(fig, axes.flat)
    fig.savefig(path, dpi=90)
    return fig


def fmt(value) -> str:
    """A number as every table shows it: thousands grouped from 100, 3 figures below."""
    if isinstance(value, Cell):
        value = value.value
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:,.0f}" if abs(value) >= 100 else f"{value:.3g}"
    return str(value)


def html_table(headers: list[str], rows: list[list]) -> str:
    """An HTML table under a row of HEADERS."""
    head = "<tr>" + "".join(f"<th>{html.escape(str(h))}</th>" for h in headers) + "</tr>"
    body = "".join("<tr>" + "".join(_td(v) for v in row) + "</tr>" for row in rows)
    return f"<table>{head}{body}</table>\n"


def kv_table(pairs: list[list]) -> str:
    """A key/value table: no header row, each key its row's header."""
    body = "".join(f'<tr><th scope="row">{html.escape(str(k))}</th>{_td(v)}</tr>'
                   for k, v in pairs)
    return f"<table>{body}</table>\n"


def _td(value) -> str:
    cls = f' class="{value.cls}"' if isinstance(value, Cell) else ""
    return f"<td{cls}>{html.escape(fmt(value))}</td>"


def markdown_table(headers: list[str], rows: list[list]) -> str:
    lines = ["| " + " | ".join(headers) + " |", "|" + " --- |" * len(headers)]
    lines += ["| " + " | ".join(fmt(v) for v in row) + " |" for row in rows]
    return "\n".join(lines) + "\n"
