"""`locklab compare A B`: per-point ratios B/A of two runs, with their spread."""
from __future__ import annotations

import argparse
import json
import sys

from ..errors import LocklabError
from ..sweep import compare, store
from .parser import RUN_HELP


def command(args: argparse.Namespace) -> int:
    conn = store.connect(args.db, write=False)
    result = compare.ratios(conn, store.resolve_run(conn, args.run_a),
                            store.resolve_run(conn, args.run_b), args.allow_mismatch)
    if not result["points"]:
        a, b = result["run_a"], result["run_b"]
        raise LocklabError(f"run {a} and run {b} have no point in common ({result['only_a']} "
                           f"points only in run {a}, {result['only_b']} only in run {b}): "
                           "nothing to compare")
    for difference in result["differences"]:
        print(f"locklab: warning: the runs differ: {difference}", file=sys.stderr)
    if args.json:
        json.dump(result, sys.stdout, indent=1)
        sys.stdout.write("\n")
    else:
        print(compare.render(result))
    return 0


def add_parser(sub, db) -> None:
    cp = sub.add_parser(
        "compare", parents=[db], help="per-point ratios B/A of two runs, with their spread",
        description="Match the points of two runs (lock, threads, mutexes, hold, ...) and "
        "show B/A of each point's median ns/iter and ops/s, with the spread of the ratio "
        "over every pass of B against every pass of A. '~' marks a ratio whose spread covers "
        "1 (inside the noise), '?' one measured in a single pass (its noise unknown). Runs "
        "whose points were measured differently (point duration, warm-up) are refused; "
        "other differences (passes, the lock monitor, the machine) are warned of.")
    cp.add_argument("run_a", metavar="RUN_A", help=RUN_HELP)
    cp.add_argument("run_b", metavar="RUN_B", help=RUN_HELP)
    cp.add_argument("--allow-mismatch", action="store_true",
                    help="compare runs of different point durations or warm-ups all the "
                    "same (each difference is still warned of)")
    cp.add_argument("--json", action="store_true", help="machine-readable output")
    cp.set_defaults(func=command)
