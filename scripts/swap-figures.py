#!/usr/bin/env python3
"""The lock swapper's cost, measured as docs/swap.md reports it.

  swap-figures.py cost [NATIVE_DIR] [ROUNDS]       an uncontended pthread_mutex_lock+unlock
                                                   pair on a static mutex, a second thread
                                                   alive (tests/c/swap/swap_cost.c): glibc
                                                   alone, and swapped for pthread, futex, ll
  swap-figures.py memcached [NATIVE_DIR] [PAIRS]   memcached's throughput under memcaslap,
                                                   without and with the swapper's
                                                   --lock pthread (memcached_load.py)

Runs alternate (the order rotating round by round) so that drift and other load on
the machine fall on every side; the figures are medians, and the differences and
ratios are those of runs of one round.  Run it alone on the machine:
`flock /tmp/locklab-bench.lock scripts/swap-figures.py cost build`.
"""
import os
import statistics
import subprocess
import sys
from pathlib import Path

import memcached_load

COST_LOCKS = ["pthread", "futex", "ll"]


def swap_env(native: Path, lock: str) -> dict[str, str]:
    return {"LD_PRELOAD": str(native / "liblocklab-swap.so"), "LOCKLAB_SWAP_LOCK": lock,
            "LOCKLAB_SWAP_LOCK_OPTS": ""}


def cost(native: Path, rounds: int = 7, pairs: int = 10_000_000, runs: int = 5) -> None:
    prog = native / "tests" / "c" / "swap" / "swap_cost"
    sides = [None] + COST_LOCKS   # None: glibc alone
    ns: dict[str | None, list[float]] = {side: [] for side in sides}
    for r in range(rounds):
        for side in sides[r % len(sides):] + sides[:r % len(sides)]:
            env = {**os.environ, **(swap_env(native, side) if side else {})}
            out = subprocess.run([str(prog), str(pairs), str(runs)], env=env, capture_output=True,
                                 text=True, check=True, timeout=600)
            ns[side].append(float(out.stdout))
    print(f"uncontended lock+unlock, ns per pair ({rounds} rounds, each the median of {runs} "
          f"runs of {pairs} pairs; a second thread alive)")
    base = ns[None]
    print(f"  glibc alone:   {' '.join(f'{v:.2f}' for v in base)}  median "
          f"{statistics.median(base):.2f}")
    for lock in COST_LOCKS:
        v = ns[lock]
        diffs = [b - a for a, b in zip(base, v)]
        ratios = [b / a for a, b in zip(base, v)]
        print(f"  swapped {lock + ':':9}{' '.join(f'{x:.2f}' for x in v)}  median "
              f"{statistics.median(v):.2f}; added: median {statistics.median(diffs):+.2f} ns "
              f"(rounds {min(diffs):+.2f}..{max(diffs):+.2f}), ratio "
              f"{statistics.median(ratios):.3f}")


def memcached(native: Path, rounds: int = 9, seconds: int = 3) -> None:
    without, with_ = memcached_load.alternate(
        rounds, lambda swapped: memcached_load.run(swap_env(native, "pthread") if swapped
                                                   else None, seconds))
    print(f"{memcached_load.LOAD} -t {seconds}s (other CPUs), {rounds} alternating pairs, "
          f"with: liblocklab-swap.so --lock pthread")
    memcached_load.report(without, with_)


if __name__ == "__main__":
    modes = {"cost": cost, "memcached": memcached}
    if len(sys.argv) < 2 or sys.argv[1] not in modes:
        sys.exit(__doc__)
    native_dir = Path(sys.argv[2] if len(sys.argv) > 2 else "build").resolve()
    if len(sys.argv) > 3:
        modes[sys.argv[1]](native_dir, rounds=int(sys.argv[3]))
    else:
        modes[sys.argv[1]](native_dir)
