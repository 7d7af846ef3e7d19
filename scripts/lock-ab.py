#!/usr/bin/env python3
"""One lock, two builds of locklab, measured in turns: is a change to the lock faster or slower?

  lock-ab.py points BEFORE_DIR AFTER_DIR [LOCK] [ROUNDS]
      the server workload (qps) at 4, 64 and 256 clients and one mutex at hold 0
      (ns per iteration) at 1, 2, 16, 256 and 1024 threads, 0.5 s points after 0.3 s of warm-up
  lock-ab.py peers BEFORE_DIR AFTER_DIR [LOCK] [ROUNDS]
      `locklab sweep --preset peers --locks LOCK` (threads 1..1024, hold 0/1000/4000,
      1 s points), one sweep per build per round, into throw-away databases

BEFORE_DIR and AFTER_DIR are build directories (LOCKLAB_NATIVE_DIR); LOCK defaults to
ll, ROUNDS to 3.  Each round runs the two builds back to back, the order alternating
from round to round, so that drift and other load on the machine fall on both sides.
Every figure is the median of the rounds; the ratio is after / before.  Run it under
the exclusive benchmark lock (flock /tmp/locklab-bench.lock ...).
"""
import json
import os
import sqlite3
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
POINT = ["--duration", "0.5", "--warmup", "0.3", "--json"]
# (label, bench arguments, the figure of its JSON compared)
POINTS = [
    *((f"server, {t} clients", ["--workload", "server", "--threads", str(t)], "qps")
      for t in (4, 64, 256)),
    *((f"mutex hold 0, {t} threads", ["--threads", str(t), "--mutexes", "1", "--hold-ns", "0"],
       "ns_per_iter") for t in (1, 2, 16, 256, 1024)),
]


def run(cmd: list[str], **kw) -> str:
    """cmd's stdout; a failure ends the script with one line (the command's own last word)."""
    out = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if out.returncode:
        last = (out.stderr.strip().splitlines() or [f"exit status {out.returncode}"])[-1]
        sys.exit(last if last.startswith("locklab: ") else f"locklab: {cmd[0]}: {last}")
    return out.stdout


def rounds_of(builds: dict[str, Path], rounds: int, run) -> dict[str, list]:
    """run(side, build) for both sides in every round, the order alternating."""
    got: dict[str, list] = {side: [] for side in builds}
    for r in range(rounds):
        sides = list(builds) if r % 2 == 0 else list(reversed(builds))
        for side in sides:
            got[side].append(run(side, builds[side]))
    return got


def ratio_line(label: str, unit: str, before: list[float], after: list[float]) -> str:
    b, a = statistics.median(before), statistics.median(after)
    return (f"{label:28s} {unit:12s} before {b:12.1f}  after {a:12.1f}  after/before {a / b:.3f}"
            f"   (before {' '.join(f'{v:.1f}' for v in before)}; "
            f"after {' '.join(f'{v:.1f}' for v in after)})")


def points(builds: dict[str, Path], lock: str, rounds: int) -> None:
    for label, args, figure in POINTS:
        def one(side: str, native: Path) -> float:
            cmd = [str(native / "locklab-bench"), "bench", "--lock", lock, *args, *POINT]
            return json.loads(run(cmd, timeout=300))[figure]
        got = rounds_of(builds, rounds, one)
        print(ratio_line(label, figure, got["before"], got["after"]), flush=True)


def peers(builds: dict[str, Path], lock: str, rounds: int) -> None:
    with tempfile.TemporaryDirectory(prefix="lock-ab-") as tmp:
        def one(side: str, native: Path) -> Path:
            db = Path(tmp) / f"{side}-{len(os.listdir(tmp))}.db"
            env = {**os.environ, "LOCKLAB_NATIVE_DIR": str(native),
                   "PYTHONPATH": str(ROOT / "python")}
            run([sys.executable, "-m", "locklab.cli", "sweep", "--preset", "peers", "--locks",
                 lock, "--db", str(db)], env=env, timeout=1800)
            return db
        dbs = rounds_of(builds, rounds, one)
        figures: dict[str, dict[tuple[int, int], list[float]]] = {}
        for side, paths in dbs.items():
            for db in paths:
                with sqlite3.connect(db) as c:
                    for hold, threads, ns, ok in c.execute(
                            "SELECT hold_ns, threads, ns_per_iter, ok FROM points"):
                        if not ok:
                            sys.exit(f"locklab: a {side} point failed: hold {hold}, "
                                     f"{threads} threads")
                        figures.setdefault(side, {}).setdefault((hold, threads), []).append(ns)
        ratios = []
        for key in sorted(figures["before"]):
            before, after = figures["before"][key], figures["after"][key]
            ratios.append(statistics.median(after) / statistics.median(before))
            print(ratio_line(f"hold {key[0]}, {key[1]} threads", "ns_per_iter", before, after))
        print(f"geometric mean of after/before: {statistics.geometric_mean(ratios):.3f}")


def main() -> None:
    if len(sys.argv) not in (4, 5, 6) or sys.argv[1] not in ("points", "peers"):
        sys.exit(__doc__.split("\n\n")[1])
    builds = {"before": Path(sys.argv[2]), "after": Path(sys.argv[3])}
    for side, path in builds.items():
        if not (path / "locklab-bench").is_file():
            sys.exit(f"locklab: no locklab-bench in {path} (the {side} build)")
    lock = sys.argv[4] if len(sys.argv) > 4 else "ll"
    try:
        rounds = int(sys.argv[5]) if len(sys.argv) > 5 else 3
    except ValueError:
        rounds = 0
    if not 1 <= rounds <= 99:
        sys.exit(f"locklab: ROUNDS wants an integer in [1, 99], got '{sys.argv[5]}'")
    (points if sys.argv[1] == "points" else peers)(builds, lock, rounds)


if __name__ == "__main__":
    main()
