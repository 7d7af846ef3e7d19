"""The answer a mutex sweep gives: which lock to use, where, by how much, and how sure.

From the sweep's repeats, not only their medians: in each panel (mutex count,
hold and outside time) and at each thread count, the lock with the lowest median
ns per iteration is the pick, its margin over another lock that lock's median
divided by the pick's (the ratio of their throughputs). Whether two locks are
apart is judged by the statistics every verdict shares (locklab/stats.py): apart
where the 95% interval on that ratio excludes 1; a tie where it holds 1 and the
margin is under stats.NOISE_MARGIN; undecided where it holds 1 but the margin is
larger, with the passes that would settle it. A run of one repeat has no
interval: there, margins under stats.NOISE_MARGIN are ties.

Consecutive thread counts with the same answer form one line of the verdict;
crossings (where one lock overtakes another) count only points that are apart.
No matplotlib here: `locklab sweep` prints the verdict without paying for it.
"""
from __future__ import annotations

import itertools
import math
from statistics import median

from .. import stats
from ..sweep import store
from .render import Cell, html_table

METRIC = "ns_per_iter"
# The lock every other is weighed against: glibc's default mutex (and rwlock).
BASELINE = "pthread"
# With one repeat per point: margins under this count as ties.
ONE_REPEAT_TIE = stats.NOISE_MARGIN
# The verdict as text lines, beside index.html; `locklab report` prints it.
VERDICT_FILE = "verdict.txt"
# crossings.csv's columns.
CROSSING_COLUMNS = ("mutexes", "hold_ns", "outside_ns", "faster_below", "faster_above",
                    "threads", "between_lo", "between_hi")

Panel = tuple  # (mutexes, hold_ns, outside_ns)


def panel_title(mutexes: int, hold_ns: int, outside_ns: int) -> str:
    text = f"{mutexes} mutex{'es' if mutexes > 1 else ''}, hold {hold_ns} ns"
    return text + (f", outside {outside_ns} ns" if outside_ns else "")


def samples(rows: list[dict], metric: str = METRIC,
            workload: str = "mutex") -> dict[Panel, dict[str, dict[int, list]]]:
    """panel -> lock label -> threads -> the metric of each succeeded repeat, for the
    WORKLOAD's rows; locks in the order the sweep ran them."""
    out: dict[Panel, dict[str, dict[int, list]]] = {}
    for r in rows:
        value = r.get(metric)
        if r.get("workload", "mutex") != workload or not r["ok"] or not value or value <= 0:
            continue
        panel = (r["mutexes"], r["hold_ns"], r["outside_ns"])
        lock = store.lock_label(r["lock"], r["lock_opts"])
        out.setdefault(panel, {}).setdefault(lock, {}).setdefault(r["threads"], []).append(value)
    return dict(sorted(out.items()))


def apart(a: list[float], b: list[float]) -> int:
    """-1 where A (times: lower is faster) is faster than B beyond the noise, 1 where B
    is, 0 where they are not told apart (stats.compare)."""
    outcome = stats.compare(b, a).outcome
    return -1 if outcome == stats.BETTER else (1 if outcome == stats.WORSE else 0)


def spread(values: list[float]) -> float | None:
    """Half the range of the repeats over their median (0.05: +-5%); None for one repeat."""
    return (max(values) - min(values)) / 2 / median(values) if len(values) > 1 else None


def crossings(rows: list[dict], metric: str = METRIC) -> list[dict]:
    """Where, in each panel, one lock overtakes another as threads grow.

    Only thread counts where the two are apart (beyond the repeats' spread) count:
    two locks that measure the same would otherwise "cross" at every wobble of the
    noise. The crossing is interpolated on log(a/b) of the medians against
    log2(threads), the axes the graphs use; for costs that follow power laws of
    the thread count it is exact.
    """
    out = []
    for (mutexes, hold, outside), locks in samples(rows, metric).items():
        for a, b in itertools.combinations(locks, 2):
            ca, cb = locks[a], locks[b]
            signs = [(t, apart(ca[t], cb[t]), math.log(median(ca[t]) / median(cb[t])))
                     for t in sorted(ca.keys() & cb.keys())]
            signs = [s for s in signs if s[1]]
            for (t0, s0, d0), (t1, s1, d1) in zip(signs, signs[1:]):
                if s0 == s1:
                    continue
                x = math.log2(t0) + (math.log2(t1) - math.log2(t0)) * d0 / (d0 - d1)
                below, above = (a, b) if s0 < 0 else (b, a)
                out.append({"mutexes": mutexes, "hold_ns": hold, "outside_ns": outside,
                            "faster_below": below, "faster_above": above,
                            "threads": round(2 ** x, 1), "between_lo": t0, "between_hi": t1})
    return out


def expected(rows: list[dict], planned=()) -> dict[tuple, list[str]]:
    """(panel, threads) -> the mutex workload's locks the grid has there, as labels in
    the order swept: those of the PLANNED points (store.Point), and every lock of the
    panel's stored rows, failed ones included (a mutex grid crosses its locks with
    every thread count)."""
    out: dict[tuple, list[str]] = {}
    for p in planned:
        if p.workload == "mutex":
            out.setdefault(((p.mutexes, p.hold_ns, p.outside_ns), p.threads), []).append(
                store.lock_label(p.lock, p.lock_opts))
    stored: dict[Panel, list[str]] = {}
    for r in rows:
        if r.get("workload", "mutex") == "mutex":
            stored.setdefault((r["mutexes"], r["hold_ns"], r["outside_ns"]), []).append(
                store.lock_label(r["lock"], r["lock_opts"]))
    for r in rows:
        if r.get("workload", "mutex") == "mutex":
            panel = (r["mutexes"], r["hold_ns"], r["outside_ns"])
            out.setdefault((panel, r["threads"]), []).extend(stored[panel])
    return {key: list(dict.fromkeys(locks)) for key, locks in out.items()}


def _steps(panel: Panel, locks: dict[str, dict[int, list]],
           grid: dict[tuple, list[str]]) -> list[dict]:
    """Per thread count: the locks by median, the pick, the locks not told apart from
    it (tied: within the noise margin; unsure: beyond it, inside the interval), the
    passes that would settle the unsure, and the locks of the GRID (expected's)
    measured nowhere there."""
    steps = []
    for t in sorted(set().union(*(set(c) for c in locks.values()))):
        here = {lock: c[t] for lock, c in locks.items() if t in c}
        if len(here) < 2:
            continue
        order = sorted(here, key=lambda lock: median(here[lock]))
        judged = {lock: stats.compare(here[lock], here[order[0]], family=len(order) - 1)
                  for lock in order[1:]}
        tied = [lock for lock in order[1:] if judged[lock].outcome == stats.SAME]
        unsure = [lock for lock in order[1:] if judged[lock].outcome == stats.UNDECIDED]
        if BASELINE in (order[0], *tied) and (tied or not unsure):
            # pthread is as good as the fastest: what the others might do is moot.
            kind = "keep" if tied else "use"
        elif unsure:
            kind = "undecided"
        else:
            kind = "tie" if tied else "use"
        lacks = [lock for lock in grid.get((panel, t), []) if lock not in here]
        steps.append({"threads": t, "here": here, "order": order, "tied": tied,
                      "unsure": unsure, "kind": kind, "lacks": lacks,
                      "settle": max((judged[lock].settle for lock in unsure), default=None)})
    return steps


def _key(step: dict) -> tuple:
    lacks = tuple(step["lacks"])   # a line says one set of missing locks
    if step["kind"] == "keep":
        return ("keep", BASELINE, lacks)
    if step["kind"] in ("tie", "undecided"):
        return (step["kind"], frozenset([step["order"][0], *step["tied"], *step["unsure"]]),
                lacks)
    return ("use", step["order"][0], lacks)


def _ratio(step: dict, lock: str) -> float:
    here = step["here"]
    return median(here[lock]) / median(here[step["order"][0]])


def verdict(rows: list[dict], planned=()) -> list[dict]:
    """The verdict's lines: per panel, a run of thread counts with one answer.

    kind: 'use' (one lock apart from every other; `lock`), 'tie' (`locks` within the
    noise margin of each other, none of them pthread), 'keep' (pthread is as good as
    the fastest: `locks` are those tied with it) or 'undecided' (`locks` not told
    apart although their margins are beyond the noise margin; `settle`: about how
    many repeats would tell them apart). vs_pthread and vs_runner are (least, most)
    margins over the range; spread the widest +-share of the repeats compared, None
    with one repeat. lacks: the locks of the grid (PLANNED's points, and the rows', as
    expected() counts them) not measured at those thread counts, which the answer
    could not weigh.
    """
    out = []
    grid = expected(rows, planned)
    for panel, locks in samples(rows).items():
        for key, group in itertools.groupby(_steps(panel, locks, grid), key=_key):
            group = list(group)
            kind = key[0]
            best = [s["order"][0] for s in group]
            if kind == "use":
                names = [key[1]]
            else:
                names = list(dict.fromkeys(x for s in group
                                           for x in (s["order"][0], *s["tied"], *s["unsure"])))
            line = {"panel": panel, "threads": [s["threads"] for s in group], "kind": kind,
                    "locks": names, "vs_pthread": None, "vs_runner": None, "runners": [],
                    "spread": None, "lacks": list(key[-1]),
                    "settle": max((s["settle"] for s in group if s["settle"]), default=None)}
            if all(BASELINE in s["here"] for s in group) and key[:2] != ("use", BASELINE):
                line["vs_pthread"] = _span(_ratio(s, BASELINE) for s in group)
            if kind == "use":
                line["vs_runner"] = _span(_ratio(s, s["order"][1]) for s in group)
                line["runners"] = list(dict.fromkeys(s["order"][1] for s in group))
            else:  # how far apart the locks not told apart are, at most
                line["vs_runner"] = _span(max(_ratio(s, x) for x in (*s["tied"], *s["unsure"]))
                                          for s in group)
            compared = [s["here"][x] for s in group
                        for x in {s["order"][0], s["order"][1], *s["tied"], *s["unsure"],
                                  *([BASELINE] if BASELINE in s["here"] else [])}]
            spreads = [spread(v) for v in compared]
            if all(sp is not None for sp in spreads):
                line["spread"] = max(spreads)
            line["best"] = list(dict.fromkeys(best))
            out.append(line)
    return out


def _span(values) -> tuple[float, float]:
    values = list(values)
    return min(values), max(values)


def threads_text(threads: list[int]) -> str:
    lo, hi = threads[0], threads[-1]
    return f"{lo} thread{'s' if lo > 1 else ''}" if lo == hi else f"{lo}-{hi} threads"


def times(span: tuple[float, float] | None) -> str:
    """A margin's range as the verdict writes it: 1.45x, 1.45-4.40x."""
    if span is None:
        return "-"
    lo, hi = (f"{v:.2f}" for v in span)
    return f"{lo}x" if lo == hi else f"{lo}-{hi}x"


def spread_text(line: dict, sign: str = "+-") -> str:
    """The repeats' spread: +-3%, +-0.4% where it rounds to 0; 'one repeat' without one."""
    if line["spread"] is None:
        return "one repeat"
    pct = 100 * line["spread"]
    return f"{sign}{pct:.1f}%" if round(pct) < 1 else f"{sign}{pct:.0f}%"


def pick_text(line: dict) -> str:
    """What to use, in a few words: 'll', 'keep pthread', 'tie: ll, futex',
    'undecided: ll, pthread'."""
    if line["kind"] == "use":
        return line["locks"][0]
    if line["kind"] == "keep":
        return f"keep {BASELINE}"
    return f"{line['kind']}: " + ", ".join(line["locks"])


def line_text(line: dict) -> str:
    """The verdict's sentence for one line: the pick and its margins, the tie, or what
    is undecided and the repeats that would decide it."""
    where = "inside the repeats' spread" if line["spread"] is not None else \
        f"under the {100 * ONE_REPEAT_TIE:.0f}% taken for noise with one repeat"
    if line["kind"] == "use":
        lock = line["locks"][0]
        runners = ", ".join(line["runners"])
        if line["runners"] == [BASELINE]:
            return f"{lock}: {times(line['vs_pthread'])} pthread's throughput (the runner-up)"
        text = f"{lock}: "
        if line["vs_pthread"]:
            text += f"{times(line['vs_pthread'])} pthread's throughput, "
        return text + f"{times(line['vs_runner'])} the runner-up's ({runners})"
    if line["kind"] == "keep":
        others = [x for x in line["locks"] if x != BASELINE]
        return (f"{BASELINE}: no lock beats it beyond the noise ({', '.join(others)} "
                f"within {times(line['vs_runner'])}, {where})")
    if line["kind"] == "undecided":
        text = (f"undecided between {' and '.join(line['locks'])} ({times(line['vs_runner'])} "
                f"apart, {where}; about {line['settle']} repeats would settle it)")
    else:
        text = f"{' and '.join(line['locks'])} tie ({times(line['vs_runner'])} apart, {where})"
    if line["vs_pthread"] and line["best"][0] != BASELINE:
        text += f"; {line['best'][0]} {times(line['vs_pthread'])} pthread's throughput"
    return text


def lacks_text(line: dict) -> str:
    """What the line's answer could not weigh: '; lacks futex, ll (not measured here)'."""
    if not line["lacks"]:
        return ""
    return f"; lacks {', '.join(line['lacks'])} (not measured here: the run is incomplete)"


def reps_of(rows: list[dict]) -> int:
    """The most repeats any mutex point has."""
    counts: dict[tuple, int] = {}
    for r in rows:
        if r.get("workload", "mutex") == "mutex" and r["ok"]:
            key = tuple(r.get(k) for k in store.GRID_KEY)
            counts[key] = counts.get(key, 0) + 1
    return max(counts.values(), default=0)


def terminal(rows: list[dict], run_id: int, planned=()) -> str:
    """The verdict as `locklab sweep` and `locklab report` print it (PLANNED: the run's
    grid, as verdict() takes it); '' without mutex points."""
    lines = verdict(rows, planned)
    if not lines:
        return ""
    reps = reps_of(rows)
    how = (f"median of {reps} repeats; apart where the {100 * stats.LEVEL:.0f}% interval on "
           "their ratio excludes 1" if reps > 1 else
           f"one repeat: margins under {100 * ONE_REPEAT_TIE:.0f}% are ties")
    out = [f"verdict of run {run_id}: the mutex to use, by ns per iteration ({how})"]
    for line in lines:
        spread_note = f"; repeats {spread_text(line)}" if line["spread"] is not None else ""
        out.append(f"  {panel_title(*line['panel'])}, {threads_text(line['threads'])}: "
                   f"{line_text(line)}{spread_note}{lacks_text(line)}")
    return "\n".join(out) + "\n"


def html_section(rows: list[dict], planned=()) -> str:
    """The report's opening: the verdict as a table, the pick in bold; '' without points."""
    lines = verdict(rows, planned)
    if not lines:
        return ""
    reps = reps_of(rows)
    how = (f"Each figure is the median of {reps} repeats; two locks are apart where the "
           f"{100 * stats.LEVEL:.0f}% interval on the ratio of their medians (an exact "
           "bootstrap, docs/advise.md) excludes 1. Otherwise a margin under "
           f"{100 * stats.NOISE_MARGIN:.0f}% is a tie, and a larger one undecided, with about "
           "how many repeats would settle it."
           if reps > 1 else
           "Each point ran once: there is no spread to judge by, so margins under "
           f"{100 * ONE_REPEAT_TIE:.0f}% are called ties (sweep with --repeat 3 to know).")
    table = html_table(
        ["where", "threads", "use", "vs pthread", "vs runner-up", "repeats' spread",
         "verdict"],
        [[panel_title(*line["panel"]), threads_text(line["threads"]),
          Cell(pick_text(line), "pick"), times(line["vs_pthread"]), times(line["vs_runner"]),
          spread_text(line, "\u00b1"), Cell(line_text(line) + lacks_text(line), "text")]
         for line in lines])
    return ('<section id="verdict"><h2>Verdict: the mutex to use on this machine</h2>'
            "<p>Per hold time and range of thread counts, the lock with the least time per "
            "iteration; <em>vs pthread</em> and <em>vs runner-up</em> are their time per "
            "iteration divided by its (its throughput over theirs), least to most over the "
            f"range. {how}</p>{table}</section>\n")
