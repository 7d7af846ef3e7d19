"""memcached under memcaslap, run with and without something preloaded, in
alternating pairs: the load harness of profile-figures.py (the profiler's cost)
and swap-figures.py (the lock swapper's).

memcached (-t 4) is pinned to CPU 0 and memcaslap (-T 2 -c 32) to the other CPUs,
so that the server's speed is what a pair compares; it listens on 127.0.0.1 only,
and every run is bounded in time.
"""
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
from typing import Callable

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "python"))

from locklab.launch.net import free_port  # noqa: E402

LOAD = "memcached -t 4 (CPU 0) under memcaslap -T 2 -c 32"


def proc_stat(pid: int) -> tuple[float, int]:
    """(utime + stime in seconds, minor page faults) of a process, from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK"), int(fields[7])


def run(env_extra: dict[str, str] | None, seconds: int,
        perf_data: Path | None = None) -> tuple[int, float, float]:
    """(ops/s, server CPU ns per op, server minor faults per op) of one load run, the
    server's environment with env_extra; with perf_data, the server is sampled by
    `perf record` during the load."""
    port = free_port()
    cmd = [shutil.which("memcached"), "-U", "0", "-l", "127.0.0.1", "-p", str(port), "-t", "4",
           "-m", "64"] + (["-u", "root"] if os.geteuid() == 0 else [])
    env = {**os.environ, **(env_extra or {})}
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


def alternate(rounds: int, one: Callable[[bool], tuple]) -> tuple[list, list]:
    """one(False) and one(True), `rounds` pairs, the side that runs first alternating
    so that drift within a pair cancels too: (without results, with results)."""
    without, with_ = [], []
    for i in range(rounds):
        for side in ((False, True) if i % 2 == 0 else (True, False)):
            (with_ if side else without).append(one(side))
    return without, with_


def median_ci(values: list[float], draws: int = 2000) -> tuple[float, float]:
    """A 95% bootstrap interval of the median (fixed seed: the same data, the same answer)."""
    rng = random.Random(1)
    meds = sorted(statistics.median(rng.choices(values, k=len(values))) for _ in range(draws))
    return meds[int(0.025 * draws)], meds[int(0.975 * draws)]


def report(without: list, with_: list) -> None:
    """ops/s and server CPU per op of each side, and the with/without ratios of the pairs."""
    for i, what in ((0, "ops/s"), (1, "server CPU ns/op")):
        b = [r[i] for r in without]
        p = [r[i] for r in with_]
        ratios = [y / x for x, y in zip(b, p)]
        lo, hi = median_ci(ratios)
        print(f"  {what}: without median {statistics.median(b):.0f}, with median "
              f"{statistics.median(p):.0f}; with/without median ratio "
              f"{statistics.median(ratios):.3f}, 95% interval {lo:.3f}..{hi:.3f} "
              f"(pairs {min(ratios):.3f}..{max(ratios):.3f})")
