#!/usr/bin/env python3
"""Time two builds of liblocklab-swap.so against each other on mutex and condvar
workloads (tests/c/swap/swapbench.c), alternating them run by run, and print
medians and ratios new/old.  Run it under the exclusive bench lock:

  flock /tmp/locklab-bench.lock scripts/swap-bench.py --old OLD.so --new NEW.so \\
      --bench build/tests/c/swap/swapbench [--locks pthread,ll,tas,mcs] [--reps 3]

Spinning locks (tas, ttas, ticket, mcs, spin-trylock) run with spin=yield, as
the swap tests do.
"""
import argparse
import os
import statistics
import subprocess
import sys

SPINNING = {"tas", "ttas", "ticket", "mcs", "spin-trylock"}
# (name, arguments, unit, whether more is better)
WORKLOADS = [
    ("pairs", ["pairs", "3000000"], "ns/pair", False),
    ("pingpong", ["pingpong", "20000"], "ms", False),
    ("queue-4", ["queue", "4", "100000"], "items/ms", True),
    ("queue-64", ["queue", "64", "100000"], "items/ms", True),
    ("queue-256", ["queue", "256", "100000"], "items/ms", True),
]


def one(bench, lib, lock, args):
    env = dict(os.environ, LD_PRELOAD=lib, LOCKLAB_SWAP_LOCK=lock,
               LOCKLAB_SWAP_LOCK_OPTS="spin=yield" if lock in SPINNING else "")
    res = subprocess.run([bench, *args], env=env, capture_output=True, text=True, timeout=120)
    if res.returncode != 0:
        sys.exit(f"swap-bench: {lock} {' '.join(args)} under {lib}: {res.stderr.strip()}")
    return float(res.stdout)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--old", required=True, help="the baseline liblocklab-swap.so")
    p.add_argument("--new", required=True, help="the liblocklab-swap.so to compare")
    p.add_argument("--bench", required=True, help="the swapbench program")
    p.add_argument("--locks", default="pthread,ll,tas,mcs")
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--only", help="comma-separated workloads (default: all)")
    a = p.parse_args()
    for f in (a.old, a.new, a.bench):
        if not os.path.isfile(f):
            sys.exit(f"swap-bench: {f}: no such file")
    if a.reps < 1:
        sys.exit("swap-bench: --reps must be at least 1")
    wanted = set(a.only.split(",")) if a.only else None
    print(f"{'lock':10} {'workload':10} {'unit':9} {'old':>10} {'new':>10} {'new/old':>8}")
    for lock in a.locks.split(","):
        for name, args, unit, more_better in WORKLOADS:
            if wanted and name not in wanted:
                continue
            runs = {"old": [], "new": []}
            for _ in range(a.reps):
                for which in ("old", "new"):
                    runs[which].append(one(a.bench, getattr(a, which), lock, args))
            old, new = (statistics.median(runs[w]) for w in ("old", "new"))
            print(f"{lock:10} {name:10} {unit:9} {old:10.2f} {new:10.2f} {new / old:8.2f}"
                  f"  ({'higher' if more_better else 'lower'} is better)", flush=True)


if __name__ == "__main__":
    main()
