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
import random
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def overhead(native: Path, rounds: int = 7) -> None:
    bench = [str(native / "locklab-bench"), "bench", "--lock", "pthread", "--threads", "2",
             "--mutexes", "2", "--hold-ns", "0", "--duration", "1", "--json"]
    env = {**os.environ, "LD_PRELOAD": str(native / "liblocklab-prof.so"),
           "LOCKLAB_PROF_OUTPUT": os.devnull}
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


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def proc_stat(pid: int) -> tuple[float, int]:
    """(utime + stime in seconds, minor page faults) of a process, from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK"), int(fields[7])


def memcached_tps(profiled: bool, native: Path, seconds: int,
                  perf_data: Path | None = None) -> tuple[int, float, float]:
    """(ops/s, server CPU ns per op, server minor faults per op) of one load run;
    with perf_data, the server is sampled by `perf record` during the load."""
    port = free_port()
    cmd = [shutil.which("memcached"), "-U", "0", "-l", "127.0.0.1", "-p", str(port), "-t", "4",
           "-m", "64"] + (["-u", "root"] if os.geteuid() == 0 else [])
    env = dict(os.environ)
    if profiled:
        env["LD_PRELOAD"] = str(native / "liblocklab-prof.so")
        env["LOCKLAB_PROF_OUTPUT"] = os.devnull
    ncpu = os.cpu_count() or 1
    server_cpus, load_cpus = {0}, set(range(1, ncpu)) or {0}
    server = subprocess.Popen(cmd, env=env, preexec_fn=lambda: os.sched_setaffinity(0, server_cpus))
    try:
        for _ in range(100):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                time.sleep(0.1)
        load = shutil.which("memcaslap") or shutil.which("memaslap")
        perf = None
        if perf_data:
            # Software clock sampling: a VM often has no hardware counters.
            perf = subprocess.Popen(["perf", "record", "-q", "-e", "cpu-clock", "-F", "4999",
                                     "-o", str(perf_data), "-p", str(server.pid)],
                                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        cpu0, faults0 = proc_stat(server.pid)
        out = subprocess.run([load, "-s", f"127.0.0.1:{port}", "-t", f"{seconds}s", "-T", "2",
                              "-c", "32"], capture_output=True, text=True, timeout=seconds + 60,
                             preexec_fn=lambda: os.sched_setaffinity(0, load_cpus))
        cpu, faults = (b - a for a, b in zip((cpu0, faults0), proc_stat(server.pid)))
        if perf:
            perf.send_signal(signal.SIGINT)
            perf.wait(timeout=60)
        ops = max(int(out.stdout.split("Ops:")[1].split()[0]), 1)
        return int(out.stdout.split("TPS:")[1].split()[0]), cpu * 1e9 / ops, faults / ops
    finally:
        server.send_signal(signal.SIGTERM)
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()


def median_ci(values: list[float], draws: int = 2000) -> tuple[float, float]:
    """A 95% bootstrap interval of the median (fixed seed: the same data, the same answer)."""
    rng = random.Random(1)
    meds = sorted(statistics.median(rng.choices(values, k=len(values))) for _ in range(draws))
    return meds[int(0.025 * draws)], meds[int(0.975 * draws)]


def memcached(native: Path, rounds: int = 9, seconds: int = 3) -> None:
    base, prof = [], []
    for i in range(rounds):
        # Alternate which side runs first, so that drift within a pair cancels too.
        first, second = (False, True) if i % 2 == 0 else (True, False)
        r1, r2 = memcached_tps(first, native, seconds), memcached_tps(second, native, seconds)
        base.append(r2 if first else r1)
        prof.append(r1 if first else r2)
    print(f"memcached -t 4 (CPU 0) under memcaslap -T 2 -c 32 -t {seconds}s (other CPUs), "
          f"{rounds} alternating pairs")
    for i, what in ((0, "ops/s"), (1, "server CPU ns/op")):
        b = [r[i] for r in base]
        p = [r[i] for r in prof]
        ratios = [y / x for x, y in zip(b, p)]
        lo, hi = median_ci(ratios)
        print(f"  {what}: without median {statistics.median(b):.0f}, with median "
              f"{statistics.median(p):.0f}; with/without median ratio "
              f"{statistics.median(ratios):.3f}, 95% interval {lo:.3f}..{hi:.3f} "
              f"(pairs {min(ratios):.3f}..{max(ratios):.3f})")


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
                _, _, per_op = memcached_tps(profiled, native, seconds,
                                             data if profiled else None)
                faults[profiled].append(per_op)
                if profiled:
                    shares.append(dso_share(data, "liblocklab-prof.so"))
    print(f"memcached -t 4 (CPU 0) under memcaslap -T 2 -c 32 -t {seconds}s, {rounds} "
          f"alternating pairs, the profiled server sampled by perf (cpu-clock)")
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
