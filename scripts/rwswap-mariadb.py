#!/usr/bin/env python3
"""MariaDB under sysbench with its pthread rwlocks swapped (`locklab run --rwlock`):
each rwlock named against glibc's (native, nothing preloaded) in the same run.

    flock /tmp/locklab-bench.lock scripts/rwswap-mariadb.py --rwlocks pthread,ll \
        --clients 1,16,64,256 --reps 3 --duration 3

Per pass, every variant (native first, then the rwlocks; the order rotates from pass
to pass, so that each variant runs in every position) is one server start, from a
fresh copy of the same data directory, warmed, then driven by oltp_point_select and
oltp_read_only at each client count in turn (the programs preset's server, data and
sysbench commands: python/locklab/sweep/drivers.py).  The mutexes stay glibc's in every
variant: --rwlock alone swaps the rwlocks only.  Printed: queries/s, medians over
the passes, with each over native's median, and the swapper's counts for each
swapped server (rwlocks made and swapped, acquisitions, those contended, over the
queries that server answered).
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "python"))

from locklab.errors import LocklabError  # noqa: E402
from locklab.launch.net import free_port  # noqa: E402
from locklab.swap import check  # noqa: E402
from locklab.swap.settings import SwapSettings, library_path  # noqa: E402
from locklab.sweep import drivers, programs  # noqa: E402

TESTS = ("oltp_point_select", "oltp_read_only")
NATIVE = "native"


def server_env(variant: str, stats: Path) -> dict[str, str]:
    if variant == NATIVE:
        return dict(os.environ)
    settings = SwapSettings.given(rwlock=variant, stats_json=str(stats))
    check.check(settings)
    return settings.environment(dict(os.environ), library_path())


def one_server(db: drivers.MariaDB, variant: str, spec: dict, work: Path) -> dict:
    """{(test, clients): queries/s} and the swapper's counts for one server start."""
    work.mkdir()
    stats = work / "swap.jsonl"
    port = free_port()
    db.copy_data(work)
    server = drivers.Server(db, db.command(work, port, spec), server_env(variant, stats),
                             work, port)
    out: dict = {"qps": {}, "queries": 0}
    try:
        server.wait_listening()
        db.warm(server, spec["warmup"], programs.timeout(spec, spec["warmup"]))
        for test in TESTS:
            for clients in spec["threads"]:
                res, _ = db.load(server, test, clients, spec["duration"],
                                 programs.timeout(spec, spec["duration"]))
                why = programs.judge(res)
                if why:
                    raise drivers.Failed(why)
                out["qps"][(test, clients)] = res["ops_per_sec"]
                out["queries"] += res["iterations"]
    except BaseException:
        server.kill()
        raise
    server.stop()
    out["swap"] = programs.swap_stats(stats, server.pid)
    shutil.rmtree(work, ignore_errors=True)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rwlocks", default="pthread,ll", help="rwlocks (NAME[:K=V,...]), comma-separated")
    ap.add_argument("--clients", default="1,16,64,256")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--duration", type=int, default=3, help="seconds per point")
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--json", metavar="FILE", help="every pass's figures and counts")
    a = ap.parse_args()
    try:
        clients = [int(c) for c in a.clients.split(",")]
        if not clients or min(clients) < 1 or a.reps < 1 or a.duration < 1 or a.warmup < 0:
            raise ValueError
    except ValueError:
        print("locklab: rwswap-mariadb: --clients are positive integers; --reps, --duration "
              "at least 1, --warmup at least 0", file=sys.stderr)
        return 2
    variants = [NATIVE, *[v for v in a.rwlocks.split(",") if v]]
    spec = {"threads": clients, "duration": a.duration, "warmup": a.warmup, "timeout": None}
    db = drivers.MariaDB()
    root = Path(tempfile.mkdtemp(prefix="locklab-rwswap-"))
    runs: dict[str, list[dict]] = {v: [] for v in variants}
    try:
        db.check()
        for v in variants[1:]:
            server_env(v, root / "check.jsonl")   # refused before anything runs
        (root / "prep").mkdir()
        db.prepare(root / "prep", spec)
        for rep in range(a.reps):
            order = variants[rep % len(variants):] + variants[:rep % len(variants)]
            for v in order:
                r = one_server(db, v, spec, root / f"{rep}-{v.replace(':', '_')}")
                runs[v].append(r)
                print(f"pass {rep + 1} {v}: " + ", ".join(
                    f"{t.removeprefix('oltp_')}/{c} {q:,.0f}" for (t, c), q in r["qps"].items()),
                    file=sys.stderr, flush=True)
    except (LocklabError, drivers.Failed) as e:
        print(f"locklab: rwswap-mariadb: {e}", file=sys.stderr)
        return 1
    finally:
        shutil.rmtree(root, ignore_errors=True)
    med = {v: {k: statistics.median(r["qps"][k] for r in runs[v]) for k in runs[v][0]["qps"]}
           for v in variants}
    head = " | ".join(f"{v} q/s | /native" if v != NATIVE else "native q/s" for v in variants)
    print(f"| load | clients | {head} |")
    print("|" + " --- |" * (2 + 2 * len(variants) - 1))
    for test in TESTS:
        for c in clients:
            k = (test, c)
            cells = [f"{med[NATIVE][k]:,.0f}"]
            for v in variants[1:]:
                cells += [f"{med[v][k]:,.0f}", f"{med[v][k] / med[NATIVE][k]:.2f}"]
            print(f"| {test.removeprefix('oltp_')} | {c} | " + " | ".join(cells) + " |")
    print()
    for v in variants[1:]:
        for i, r in enumerate(runs[v]):
            s = r["swap"]
            if not s:
                print(f"{v} pass {i + 1}: no counts (the server did not exit cleanly)")
                continue
            rw = s["rwlocks"]
            print(f"{v} pass {i + 1}: {rw['initialised']} rwlocks initialised, {rw['swapped']} "
                  f"swapped, {rw['pshared']} process-shared; {rw['acquisitions']:,} acquisitions"
                  f" ({rw['contended']:,} contended) over {r['queries']:,} queries: "
                  f"{rw['acquisitions'] / max(r['queries'], 1):.2f} per query; "
                  f"{s['in_use']['block_bytes']:,} bytes of the algorithm's blocks at exit")
    if a.json:
        Path(a.json).write_text(json.dumps(
            {v: [{"qps": {f"{t} {c}": q for (t, c), q in r["qps"].items()},
                  "queries": r["queries"], "swap": r["swap"]} for r in runs[v]]
             for v in variants}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
