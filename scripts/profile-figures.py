#!/usr/bin/env python3
"""The profiler's cost, measured as docs/profiler.md reports it.

  profile-figures.py overhead [NATIVE_DIR]    locklab-bench, uncontended pthread mutexes,
                                              with and without liblocklab-prof.so
  profile-figures.py memcached [NATIVE_DIR] [PAIRS]
                                              memcached's throughput under memcaslap,
                                              with and without the profiler; memcached
                                              pinned to CPU 0 and memcaslap to the other
                                              CPUs, so that the server's speed is what
                                              the pair compares
  profile-figures.py attribution [NATIVE_DIR] [PAIRS]
                                              the same load, the server sampled by perf:
                                              the share of its CPU inside the profiler's
                                              own code, and its minor page faults per op
                                              with and without (needs perf: linux-perf)

Runs alternate (without, with, without, ...) so that drift and other load on the
machine fall on both sides; the figure is the median.  Everything is bounded in
time; memcached listens on 127.0.0.1 only.
"""
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import memcached_load


def overhead(native: Path, rounds: int = 7) -> None:
    bench = [str(native / "locklab-bench"), "bench", "--lock", "pthread", "--threads", "2",
             "--mutexes", "2", "--hold-ns", "0", "--duration", "1", "--json"]
    env = {**os.environ, **profiler_env(native)}
    base, prof = [], []
    for _ in range(rounds):
        base.append(json.loads(subprocess.run(bench, capture_output=True, text=True,
                                              check=True).stdout)["ns_per_iter"])
        prof.append(json.loads(subprocess.run(bench, capture_output=True, text=True, env=env,
                                              check=True).stdout)["ns_per_iter"])
    diffs = [p - b for b, p in zip(base, prof)]
    ratios = [p / b for b, p in zip(base, prof)]
    print("uncontended pthread lock+unlock (2 threads, own mutex each), ns per pair")
    print(f"  without: {' '.join(f'{v:.2f}' for v in base)}  median {statistics.median(base):.2f}")
    print(f"  with:    {' '.join(f'{v:.2f}' for v in prof)}  median {statistics.median(prof):.2f}")
    print(f"  added:   median {statistics.median(diffs):.2f} ns, ratio "
          f"{statistics.median(ratios):.3f}")


def profiler_env(native: Path) -> dict[str, str]:
    return {"LD_PRELOAD": str(native / "liblocklab-prof.so"), "LOCKLAB_PROF_OUTPUT": os.devnull}


def memcached(native: Path, rounds: int = 9, seconds: int = 3) -> None:
    without, with_ = memcached_load.alternate(
        rounds, lambda profiled: memcached_load.run(profiler_env(native) if profiled else None,
                                                    seconds))
    print(f"{memcached_load.LOAD} -t {seconds}s (other CPUs), {rounds} alternating pairs")
    memcached_load.report(without, with_)


def dso_share(perf_data: Path, dso: str) -> float:
    """The percentage of a perf.data's samples that fell in one object's own code."""
    out = subprocess.run(["perf", "report", "-i", str(perf_data), "--sort", "dso", "--stdio",
                          "-q"], capture_output=True, text=True, check=True).stdout
    for line in out.splitlines():
        fields = line.split()
        if len(fields) == 2 and fields[1] == dso:
            return float(fields[0].rstrip("%"))
    return 0.0


def attribution(native: Path, rounds: int = 5, seconds: int = 3) -> None:
    """Where the profiler's cost goes, measured in the server itself rather than through
    the load generator's throughput, which scatters by 10-20% a run on a shared VM."""
    if not shutil.which("perf"):
        sys.exit("profile-figures.py attribution: needs perf (apt install linux-perf)")
    shares, faults = [], {False: [], True: []}
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "perf.data"
        for i in range(rounds):
            for profiled in ((False, True) if i % 2 == 0 else (True, False)):
                _, _, per_op = memcached_load.run(profiler_env(native) if profiled else None,
                                                  seconds, data if profiled else None)
                faults[profiled].append(per_op)
                if profiled:
                    shares.append(dso_share(data, "liblocklab-prof.so"))
    print(f"{memcached_load.LOAD} -t {seconds}s, {rounds} alternating pairs, the profiled "
          f"server sampled by perf (cpu-clock)")
    print(f"  server CPU in liblocklab-prof.so's own code: {' '.join(f'{v:.2f}' for v in shares)}"
          f"  median {statistics.median(shares):.2f}%")
    print(f"  server minor page faults per 1000 ops: without median "
          f"{1000 * statistics.median(faults[False]):.1f}, with median "
          f"{1000 * statistics.median(faults[True]):.1f}")


if __name__ == "__main__":
    modes = {"overhead": overhead, "memcached": memcached, "attribution": attribution}
    if len(sys.argv) < 2 or sys.argv[1] not in modes:
        sys.exit(__doc__)
    native_dir = Path(sys.argv[2] if len(sys.argv) > 2 else "build").resolve()
    if sys.argv[1] != "overhead" and len(sys.argv) > 3:
        modes[sys.argv[1]](native_dir, rounds=int(sys.argv[3]))
    else:
        modes[sys.argv[1]](native_dir)
