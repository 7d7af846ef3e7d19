"""An advise run's verdict as `locklab advise` and `locklab report` print it, as the one
JSON object of `--json`, and as the report's page (index.html, with verdict.txt and
advise.json beside it): the verdict first, then each lock's candidates with their
intervals, then the profile's hottest locks."""
from __future__ import annotations

import html
import json
from pathlib import Path

from .. import stats
from ..report.render import CSS, Cell, html_table, kv_table
from ..sweep import store
from . import verdict as verdicts
from .plan import Variant
from .workloads import command_for

VERDICT_FILE = "verdict.txt"
JSON_FILE = "advise.json"
INTERVAL = (f"{100 * stats.LEVEL:.0f}% exact bootstrap percentile interval on the ratio of "
            "medians (each lock's candidates one family)")


def percent(ratio: float) -> str:
    return f"{100 * (ratio - 1):+.0f}%"


def interval_text(entry: dict) -> str:
    if entry["ci_low"] is None:
        return "no interval"
    return f"{100 * stats.LEVEL:.0f}% CI {entry['ci_low']:.2f}..{entry['ci_high']:.2f}"


def verdict_text(entry: dict, subject: str) -> str:
    """One verdict's sentence: 'swap SUBJECT to NAME: +N% (95% CI a..b)', 'keep: ...'."""
    kind = entry["verdict"]
    if kind == verdicts.SWAP:
        return f"swap {subject} to {entry['best']}: {percent(entry['ratio'])} " \
               f"({interval_text(entry)})"
    if kind == verdicts.COLLAPSED_VERDICT:
        return f"{entry['best']} collapsed (every candidate did)"
    if kind == verdicts.UNDECIDED_VERDICT:
        return (f"undecided: {entry['best']} {percent(entry['ratio'])} ({interval_text(entry)}), "
                f"inside the noise; about {entry['settle']} passes would settle it")
    best = (f" (best: {entry['best']} {percent(entry['ratio'])}, {interval_text(entry)})"
            if entry["best"] and entry["ratio"] is not None else "")
    return f"keep: no candidate is apart from native beyond the noise{best}"


def with_commands(spec: dict, judged: dict) -> dict:
    """JUDGED (verdict.judge's) with the command that reproduces each best candidate."""
    for entry in judged["locks"]:
        entry["command"] = command_for(spec, Variant(entry["best"], entry["kind"], entry["lock"])) \
            if entry["best"] else None
    for entry in judged["whole"]:
        entry["command"] = command_for(spec, Variant(entry["best"], entry["kind"])) \
            if entry["best"] else None
    return judged


def header(spec: dict, run_id: int) -> str:
    what = spec["program"] or " ".join(spec["command"])
    return (f"verdict of advise run {run_id} ({what}; {spec['figure']}; {spec['passes']} "
            f"passes; {INTERVAL}, above 1 better than native)")


def text(spec: dict, judged: dict, run_id: int) -> str:
    """The verdict as printed: a line per lock by wait, its reproducing command under it,
    then each kind's best candidate on every lock of that kind."""
    out = [header(spec, run_id)]
    if not judged["locks"]:
        out.append(f"  nothing to swap: no mutex or rwlock had {100 * spec['min_share']:g}% of "
                   "the waiting (the profile's hottest locks are in the report)")
    for entry in judged["locks"]:
        unmatched = (f" (the swapper found no {entry['kind']} by that name: nothing was "
                     "swapped)" if entry["matched"] == 0 else "")
        out.append(f"  {entry['lock']} ({entry['kind']}, {100 * entry['wait_share']:.0f}% of "
                   f"the waiting): {verdict_text(entry, entry['lock'])}{unmatched}")
        if entry["command"]:
            out.append(f"      {entry['command']}")
    for entry in judged["whole"]:
        out.append(f"  every {entry['kind']} at once: "
                   f"{verdict_text(entry, 'every ' + entry['kind'])}")
        if entry["command"]:
            out.append(f"      {entry['command']}")
    return "\n".join(out) + "\n"


def document(spec: dict, judged: dict, run_id: int, db: str) -> dict:
    """The --json object: the run, how it judged, `locks` by wait, `whole`, `profile`."""
    return {"run": run_id, "db": db, "command": spec["command"], "program": spec["program"],
            "workload": spec["workload"], "figure": spec["figure"],
            "higher_is_better": spec["higher"], "passes": spec["passes"],
            "interval": INTERVAL, "locks": judged["locks"], "whole": judged["whole"],
            "profile": spec["profile"]}


def candidate_rows(entries: list[dict]) -> list[list]:
    rows = []
    for e in entries:
        for c in e["candidates"]:
            interval = f"{c['ci_low']:.2f}..{c['ci_high']:.2f}" if c["ci_low"] else "-"
            rows.append([e["lock"] if "lock" in e else f"every {e['kind']}", c["lock"],
                         c["ratio"], interval, c["outcome"], c["passes"],
                         "; ".join(c["errors"]) or "-"])
    return rows


def page(run: dict, spec: dict, judged: dict, lines: str) -> str:
    """The report's page of an advise run."""
    kept = {lk["lock"] for lk in spec["locks"]}
    headers = ["lock", "candidate", "ratio", f"{100 * stats.LEVEL:.0f}% interval", "outcome",
               "passes", "runs that did not count"]
    profile = [[p["lock"], p["kind"], p["count"], p["wait_ns"] / 1e6, f"{100 * p['share']:.1f}%",
                Cell("kept", "ok") if p["lock"] in kept else "-"] for p in spec["profile"]]
    parts = [
        f"<!doctype html><meta charset=utf-8><title>locklab advise run {run['id']}</title>"
        f"<style>{CSS}</style><h1>locklab advise run {run['id']}: "
        f"{html.escape(spec['program'] or ' '.join(spec['command']))}</h1>",
        '<section id="verdict"><h2>Verdict</h2>'
        f"<pre>{html.escape(lines)}</pre></section>",
        "<h2>Each lock's candidates against native</h2>",
        f"<p>{html.escape(spec['figure'])}. Ratio: the candidate's median over native's, "
        f"above 1 better; {html.escape(INTERVAL)} (docs/advise.md).</p>",
        html_table(headers, candidate_rows(judged["locks"]) + candidate_rows(judged["whole"])),
        "<h2>The profile's hottest locks</h2>",
        html_table(["lock", "kind", "contentions", "wait ms", "share of the waiting", ""],
                   profile),
        "<h2>Machine</h2>",
        kv_table([["CPU", run["cpu_model"]], ["cores", run["cores"]], ["kernel", run["kernel"]],
                  ["C library", run["glibc"]], ["locklab", run["version"]],
                  ["started", run["started"]],
                  ["state", f"finished {run['finished']}" if run["finished"] else "incomplete"]]),
        f'<h2>Data</h2><p><a href="{JSON_FILE}">{JSON_FILE}</a> '
        f'<a href="{VERDICT_FILE}">{VERDICT_FILE}</a></p>',
    ]
    return "\n".join(parts)


def report(conn, run_id: int, db: str) -> tuple[dict, dict, str]:
    """(the spec, its verdict with commands, the verdict's text) of a stored advise run."""
    spec = store.get_run(conn, run_id)["spec"]
    judged = with_commands(spec, verdicts.judge(spec, store.points(conn, run_id)))
    return spec, judged, text(spec, judged, run_id)


def write(conn, run_id: int, db: str, out: Path) -> Path:
    """The report of a stored advise run written into OUT: its index.html."""
    run = store.get_run(conn, run_id)
    spec, judged, lines = report(conn, run_id, db)
    out.mkdir(parents=True, exist_ok=True)
    (out / VERDICT_FILE).write_text(lines, encoding="utf-8")
    (out / JSON_FILE).write_text(json.dumps(document(spec, judged, run_id, db), indent=1) + "\n",
                                 encoding="utf-8")
    index = out / "index.html"
    index.write_text(page(run, spec, judged, lines), encoding="utf-8")
    return index

