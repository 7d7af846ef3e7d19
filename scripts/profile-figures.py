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


def cpu_seconds(pid: int) -> float:
    """utime + stime of a process, from /proc (clock ticks)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def memcached_tps(profiled: bool, native: Path, seconds: int) -> tuple[int, float]:
    """(ops/s, server CPU ns per op) of one load run."""
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
        cpu0 = cpu_seconds(server.pid)
        out = subprocess.run([load, "-s", f"127.0.0.1:{port}", "-t", f"{seconds}s", "-T", "2",
                              "-c", "32"], capture_output=True, text=True, timeout=seconds + 60,
                             preexec_fn=lambda: os.sched_setaffinity(0, load_cpus))
        cpu = cpu_seconds(server.pid) - cpu0
        ops = int(out.stdout.split("Ops:")[1].split()[0])
        return int(out.stdout.split("TPS:")[1].split()[0]), cpu * 1e9 / max(ops, 1)
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


if __name__ == "__main__":
    if len(sys.argv) < 2 or sys.argv[1] not in ("overhead", "memcached"):
        sys.exit(__doc__)
    native_dir = Path(sys.argv[2] if len(sys.argv) > 2 else "build").resolve()
    if sys.argv[1] == "memcached" and len(sys.argv) > 3:
        memcached(native_dir, rounds=int(sys.argv[3]))
    else:
        {"overhead": overhead, "memcached": memcached}[sys.argv[1]](native_dir)
