#!/usr/bin/env python3
"""The rwlocks against glibc's, measured in turns: docs/rwlocks.md's figures.

  rw-figures.py [ROUNDS] [SECONDS] [--locks 'LOCK [OPTS] [@BUILD_DIR];...'] [--points T:PCT[:HOLD],...]

Each point (threads, read-pct, hold: 0 unless given) runs every rwlock once per round, the order
rotating from round to round, so that drift and other load fall on every lock; every
figure is the median of the rounds (ROUNDS defaults to 3, SECONDS per run to 1), and
each lock's ratio is taken against pthread's median of the same point.  A lock given
with @BUILD_DIR runs that build's locklab-bench (an older build of the same lock, say).
Read-only points time one op in 2^20 (no clock reads in the loop to speak of); the
others one in 16 of each class, for the writers' wait.  Run it under
the exclusive benchmark lock: flock /tmp/locklab-bench.lock scripts/rw-figures.py
"""
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BENCH = Path(os.environ.get("LOCKLAB_NATIVE_DIR", ROOT / "build")) / "locklab-bench"
LOCKS = ["pthread", "pthread prefer=writer-nonrecursive", "ll", "partitioned"]
# (threads, read-pct): one reader and two, read-only (the main thread is a second
# thread alive: glibc keeps its atomics); LOCK_grant's 99.9% at 64 and 256; 50%.
POINTS = [(1, "100", 0), (2, "100", 0), (64, "99.9", 0), (256, "99.9", 0), (64, "50", 0)]


def point(lock: str, threads: int, pct: str, hold: int, seconds: str) -> dict:
    lock, _, build = lock.partition("@")
    name, _, opts = lock.strip().partition(" ")
    bench = Path(build.strip()) / "locklab-bench" if build else BENCH
    cmd = [str(bench), "bench", "--workload", "rw", "--lock", name, "--threads", str(threads),
           "--read-pct", pct, "--hold-ns", str(hold), "--duration", seconds, "--warmup", "0.3",
           "--json", "--sample-every", "1048576" if pct == "100" else "16"]
    if opts:
        cmd += ["--lock-opts", opts]
    out = subprocess.run(cmd, capture_output=True, text=True)
    if out.returncode:
        sys.exit((out.stderr.strip().splitlines() or [f"exit {out.returncode}"])[-1])
    r = json.loads(out.stdout)
    if not r["exclusion_ok"]:
        sys.exit(f"locklab: {lock}: exclusion violated at {threads} threads, {pct}% reads")
    return r


def point_spec(text: str) -> tuple:
    """THREADS:PCT[:HOLD] -> (threads, pct, hold ns); ValueError if malformed."""
    parts = text.split(":")
    if len(parts) not in (2, 3):
        raise ValueError(text)
    hold = int(parts[2]) if len(parts) == 3 else 0
    if hold < 0:
        raise ValueError(text)
    return int(parts[0]), parts[1], hold


def parse_args(argv: list) -> tuple:
    """ROUNDS, SECONDS, the locks (pthread first: the baseline) and the points."""
    locks, points, plain = LOCKS, POINTS, []
    it = iter(argv)
    for a in it:
        if a in ("--locks", "--points"):
            v = next(it, None)
            if not v:
                sys.exit(f"locklab: {a} wants a value")
            if a == "--locks":
                locks = [x.strip() for x in v.split(";") if x.strip()]
                if not locks or locks[0] != "pthread":
                    sys.exit("locklab: --locks must begin with pthread (the baseline)")
            else:
                try:
                    points = [point_spec(x) for x in v.split(",")]
                except ValueError:
                    sys.exit(f"locklab: --points wants THREADS:PCT[:HOLD],..., got '{v}'")
        else:
            plain.append(a)
    try:
        rounds = int(plain[0]) if plain else 3
        seconds = str(float(plain[1])) if len(plain) > 1 else "1"
    except ValueError:
        sys.exit("locklab: ROUNDS is an integer, SECONDS a number")
    return rounds, seconds, locks, points


def main() -> None:
    rounds, seconds, locks, points = parse_args(sys.argv[1:])
    for threads, pct, hold in points:
        got = {lock: [] for lock in locks}
        for r in range(rounds):
            order = locks[r % len(locks):] + locks[:r % len(locks)]
            for lock in order:
                got[lock].append(point(lock, threads, pct, hold, seconds))
        base = statistics.median(p["ops_per_sec"] for p in got["pthread"])
        print(f"\n{threads} threads, {pct}% reads, hold {hold} (median of {rounds})")
        print(f"  {'rwlock':36s} {'ns/op':>8s} {'Mops/s':>8s} {'x pthread':>9s} "
              f"{'write wait p99/max us':>22s}")
        for lock in locks:
            ps = got[lock]
            ops = statistics.median(p["ops_per_sec"] for p in ps)
            ns = statistics.median(p["ns_per_op"] for p in ps)
            p99 = statistics.median(p["write_wait_ns_p99"] for p in ps) / 1e3
            mx = statistics.median(p["write_wait_ns_max"] for p in ps) / 1e3
            writes = f"{p99:9.1f} / {mx:9.1f}" if any(p["write_ops"] for p in ps) else ""
            print(f"  {lock:36s} {ns:8.1f} {ops / 1e6:8.2f} {ops / base:9.2f} {writes:>22s}")


if __name__ == "__main__":
    main()
