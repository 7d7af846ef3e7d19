#!/usr/bin/env python3
"""`locklab profile -p` against MariaDB under sysbench oltp_read_write: names, cost, detaches.

    flock /tmp/locklab-bench.lock scripts/attach-mariadb.py top5
    flock /tmp/locklab-bench.lock scripts/attach-mariadb.py cost --cycles 10
    flock /tmp/locklab-bench.lock scripts/attach-mariadb.py repeat --times 100

Every server is a fresh copy of one data directory (4 tables of 10000 rows), started
as the program sweep starts MariaDB (python/locklab/sweep/drivers.py), loaded by
sysbench oltp_read_write at --clients (64) over TCP.

top5    Two like runs, each warmed --warm s before its window of --window s: one
        under the preload profiler (`locklab profile -- mariadbd`: a report asked by
        SIGPROF at each end of the window, the window's waits the difference), one
        attached (`locklab profile -p PID --duration WINDOW`).  Prints both top 5
        locks by wait and where each name ranks in the other, and how far the
        attached stacks reach: the SQL layer's frames above the waits.
cost    One run in 10 s windows (sysbench --report-interval): cycles of [unattached]
        [tracer starting] [attached] [tracer reporting]; each attached window's tps
        against the mean of the unattached windows on either side, the median of
        those ratios and its 95% interval (order statistics: no distribution assumed);
        and in the attached windows the CPU time of the tracer's processes and of its
        BPF programs (kernel.bpf_stats_enabled, on for the run) against the server's.
repeat  --times attaches of 1 s each, one after another, against one server under
        sysbench (consecutive sysbench runs while they go on): every trace ends well,
        every sysbench run exits 0 with no reconnect, the server is the same process
        at the end, and no BPF program, map or link is left (bpftool, before and after).
        A first sysbench run of 60 s, unattached, gives the rate of the errors
        oltp_read_write ignores (InnoDB's deadlocks, retried) to set the attached
        runs' against.

Each mode prints the machine's load (/proc/loadavg) before and after: the machine
these figures come from is shared.  --tracefs mounts tracefs in a private mount
namespace for the tracer, so that it attaches by the futex syscall tracepoints
instead of raw tracepoints (which filter every syscall of the machine).
"""
from __future__ import annotations

import argparse
import json
import math
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "python"))

from locklab.launch.net import free_port  # noqa: E402
from locklab.launch.process import exit_text  # noqa: E402
from locklab.profile.names import function_of, split_frame  # noqa: E402
from locklab.sweep import drivers  # noqa: E402

TABLES, ROWS = 4, 10000
WINDOW_S = 10  # sysbench's report interval in `cost`
# Frames of MariaDB's SQL layer: a stack that reaches one has been unwound through
# the server's C++ frames from the wait up to the statement that waited.
SQL_LAYER = ("mysql_execute_command", "dispatch_command", "do_command",
             "Prepared_statement::execute", "handle_one_connection", "mysql_parse",
             "open_tables", "close_thread_tables", "handler::ha_", "ha_commit_trans",
             "trans_commit")
OUR_PROGRAMS = re.compile(r"^(tp_(enter|exit)_futex\w*|raw_(enter|exit)\w*)$")


def load() -> str:
    """The 1, 5 and 15 minute load averages."""
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def locklab() -> list[str]:
    given = os.environ.get("LOCKLAB")
    return [given] if given else [str(ROOT / ".venv" / "bin" / "locklab")]


class Bench:
    """The data directory, made once, and the servers started from copies of it."""

    def __init__(self, root: Path, clients: int):
        self.db, self.root, self.clients = drivers.MariaDB(), root, clients
        self.spec = {"threads": [clients]}
        self.data = self.db.data = root / "data"  # what MariaDB.copy_data copies
        self.starts = 0
        user = ["--user=root"] if drivers.as_root() else []
        drivers.run_tool([self.db.tool("install"), "--no-defaults", *user,
                          f"--datadir={self.data}", "--auth-root-authentication-method=normal",
                          *self.db.INNODB], timeout=300)
        server = self.start(data=self.data)
        drivers.run_tool(self.sysbench(server, "prepare"), timeout=600)
        server.stop()

    def start(self, wrap: list[str] | None = None, data: Path | None = None) -> drivers.Server:
        """A server on a fresh copy of the data (WRAP: the command it runs under)."""
        self.starts += 1
        work = self.root / f"server{self.starts}"
        work.mkdir()
        if data is None:
            self.db.copy_data(work)
        port = free_port()
        cmd = [*(wrap or []), *self.db.command(work, port, self.spec, data)]
        server = drivers.Server(self.db, cmd, dict(os.environ), work, port)
        server.wait_listening()
        return server

    def sysbench(self, server: drivers.Server, *more: str) -> list[str]:
        return [self.db.tool("load"), "oltp_read_write", "--db-driver=mysql",
                "--mysql-host=127.0.0.1", f"--mysql-port={server.port}", "--mysql-user=root",
                "--mysql-db=test", f"--tables={TABLES}", f"--table-size={ROWS}",
                f"--threads={self.clients}", *more]

    def load(self, server: drivers.Server, seconds: float, *more: str) -> subprocess.Popen:
        """sysbench running for SECONDS, once its clients have connected."""
        proc = subprocess.Popen([*self.sysbench(server, f"--time={math.ceil(seconds)}", *more),
                                 "run"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                text=True)
        self.said = []
        for line in proc.stdout:
            self.said.append(line)
            if line.startswith("Threads started!"):
                break
        return proc


def server_pid(server: drivers.Server) -> int:
    """mariadbd's own pid (the server may run under `locklab profile`)."""
    pid_file = server.workdir / "pid"
    for _ in range(100):
        if pid_file.exists() and pid_file.read_text().strip():
            return int(pid_file.read_text())
        time.sleep(0.1)
    raise SystemExit(f"attach-mariadb: no pid file in {server.workdir}")


def finished(bench: subprocess.Popen, what: str, said: list[str]) -> str:
    """sysbench's whole output (SAID: what Bench.load read of it), once it has
    succeeded with no reconnect."""
    rest, _ = bench.communicate(timeout=600)
    out = "".join(said) + rest
    result = drivers.parse_sysbench(out, "")
    if bench.returncode != 0 or result["client_reconnects"]:
        raise SystemExit(f"attach-mariadb: {what}: sysbench {exit_text(bench.returncode)}"
                         f", {result['client_reconnects']} reconnects: {drivers.tail(out)}")
    return out


def tracer_prefix(tracefs: bool) -> list[str]:
    if not tracefs:
        return []
    return ["unshare", "-m", "sh", "-c",
            "mount -t tracefs nodev /sys/kernel/tracing && exec \"$@\"", "tracer"]


# ------------------------------------------------------------------ top5

def top(locks: list[dict], n: int = 5) -> list[dict]:
    return sorted(locks, key=lambda lk: -lk["wait_ns"])[:n]


def window_of(first: dict, last: dict) -> list[dict]:
    """The locks of LAST's report with FIRST's counts taken away: the window between
    (their stacks are the whole run's)."""
    before = {lk["name"]: lk for lk in first["locks"]}
    out = []
    for lk in last["locks"]:
        was = before.get(lk["name"], {"count": 0, "wait_ns": 0})
        out.append({**lk, "count": lk["count"] - was["count"],
                    "wait_ns": lk["wait_ns"] - was["wait_ns"]})
    return [lk for lk in out if lk["count"] > 0]


def preloaded(bench: Bench, warm: float, window: float, work: Path) -> list[dict]:
    out = work / "preload.json"
    server = bench.start(wrap=[*locklab(), "profile", "--json", "-o", str(out), "--"])
    pid = server_pid(server)
    load = bench.load(server, warm + window + 5)
    time.sleep(warm)
    os.kill(pid, signal.SIGPROF)
    time.sleep(window)
    os.kill(pid, signal.SIGPROF)
    tps = finished(load, "preloaded run", bench.said)
    server.stop()
    dumps = [json.loads(line) for line in out.read_text().splitlines()
             if line.startswith('{"') and '"reason": "signal"' in line]
    if len(dumps) < 2:
        raise SystemExit(f"attach-mariadb: the preloaded server wrote {len(dumps)} signal "
                         f"reports, not 2 (see {out})")
    print(f"preloaded: {drivers.parse_sysbench(tps, '')['transactions_per_sec']} tps")
    return window_of(dumps[0], dumps[-1])


def attached(bench: Bench, warm: float, window: float, work: Path, tracefs: bool) -> dict:
    out = work / "attach.json"
    server = bench.start()
    load = bench.load(server, warm + window + 15)
    time.sleep(warm)
    started = time.monotonic()
    res = subprocess.run([*tracer_prefix(tracefs), *locklab(), "profile", "-p",
                          str(server.pid), "--json", "--duration", str(window), "-o", str(out)],
                         capture_output=True, text=True)
    took = time.monotonic() - started
    tps = finished(load, "attached run", bench.said)
    server.stop()
    if res.returncode != 0:
        raise SystemExit(f"attach-mariadb: locklab profile -p failed: {res.stderr.strip()}")
    print(f"attached: {drivers.parse_sysbench(tps, '')['transactions_per_sec']} tps; "
          f"`locklab profile -p` took {took:.1f} s for a {window:g} s window")
    if res.stderr.strip():
        print("  it said:", res.stderr.strip().replace("\n", "\n  it said: "))
    return json.loads(out.read_text())["processes"][0]


def naming_site(stack: list[str]) -> str:
    """The innermost frame with a symbol, offset dropped: what names a lock that has no
    symbol of its own (`futex in X`, or X for a mutex first seen waited on at X)."""
    for frame in stack:
        if split_frame(frame)[1]:
            return function_of(frame)
    return ""


def call_sites(lock: dict) -> set[str]:
    """The functions that waited on LOCK, each wait's naming site: how one lock is
    known in two reports that named it after different waits."""
    return {naming_site(ev["stack"]) for ev in lock["events"]}


def site_of(name: str) -> str:
    """The function a lock's name gives: its own symbol, or the waiting site that
    named it."""
    return function_of(name.removeprefix("futex in "))


def match(lock: dict, others: list[dict]) -> tuple[int, str]:
    """LOCK's rank among OTHERS (from 1; 0: not there) and how it was found: by its
    name, or by the call site that names it among the other's waiting sites."""
    for i, other in enumerate(others):
        if other["name"] == lock["name"]:
            return i + 1, "name"
    for i, other in enumerate(others):
        if site_of(lock["name"]) in call_sites(other) or site_of(other["name"]) in call_sites(lock):
            return i + 1, "site"
    return 0, ""


def reach(report: dict, names: list[str]) -> list[str]:
    """Per lock of NAMES: its waiter stacks that reach the SQL layer, of all; of the
    others, those cut at the depth kept and those that end sooner, by their last frame."""
    lines = []
    for lk in report["locks"]:
        if lk["name"] not in names:
            continue
        stacks = [ev["stack"] for ev in lk["events"]]
        reaching = [s for s in stacks if any(f in frame for frame in s for f in SQL_LAYER)]
        short = [s for s in stacks if s not in reaching]
        cut = sum(1 for s in short if len(s) >= report["depth"])
        # A whole stack of a thread that runs no SQL: its outermost frame of the server.
        ends = sorted({function_of([f for f in s if f.startswith("mariadbd`")][-1])
                       for s in short if len(s) < report["depth"] and
                       any(f.startswith("mariadbd`") for f in s)})
        deepest = max(reaching, key=len) if reaching else []
        sql = [frame for frame in deepest if any(f in frame for f in SQL_LAYER)]
        lines.append(f"  {lk['name']}: {len(reaching)}/{len(stacks)} stacks reach the SQL "
                     f"layer (up to {function_of(sql[-1]) if sql else '-'}); of the others, "
                     f"{cut} cut at {report['depth']} frames, {len(short) - cut} whole stacks of other "
                     "threads" + (f" (outermost in the server: {', '.join(ends)})" if ends else ""))
    return lines


def top5(args, work: Path) -> int:
    bench = Bench(work, args.clients)
    pre = top(preloaded(bench, args.warm, args.window, work))
    rep = attached(bench, args.warm, args.window, work, args.tracefs)
    att = top(rep["locks"])
    print(f"\ntop 5 by wait, {args.window:g} s windows at {args.clients} clients; each lock's "
          "rank in the other top 5, found by name or by the call site that names it")
    for title, mine, other in (("preloaded (the window)", pre, att), ("attached (-p)", att, pre)):
        print(f"\n{title:>24}{'ms':>42}  rank in the other")
        for i, lk in enumerate(mine):
            rank, how = match(lk, other)
            print(f"{i + 1:>2} {lk['name'][:60]:60} {lk['wait_ns'] / 1e6:9.1f}  "
                  f"{f'{rank} (by {how})' if rank else '-'}")
    found = [match(lk, pre) for lk in att]
    print(f"\nattached top 5 found in the preloaded top 5: {sum(1 for r, _ in found if r)} "
          f"({sum(1 for _, how in found if how == 'name')} by name); ranks "
          f"{[r or '-' for r, _ in found]}")
    print("how far the attached waiters' stacks reach:")
    print("\n".join(reach(rep, [lk["name"] for lk in att])))
    return 0


# ------------------------------------------------------------------ cost

def median_interval(values: list[float]) -> tuple[float, float | None, float | None]:
    """The median and a distribution-free 95% interval for it: the order statistics
    k and n-k+1 with k the largest such that P(Binomial(n, 1/2) < k) <= 2.5% (None
    for fewer than 6 values, which cannot have one)."""
    v = sorted(values)
    n = len(v)
    k, below = 0, 0.0
    while True:
        below += math.comb(n, k) / 2 ** n
        if below > 0.025:
            break
        k += 1
    if k == 0:
        return statistics.median(v), None, None
    return statistics.median(v), v[k - 1], v[n - k]


def tree(pid: int) -> list[int]:
    """PID and every process below it."""
    try:
        kids = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    except OSError:
        return [pid]
    return [pid, *(p for kid in kids for p in tree(int(kid)))]


def tracer_cost() -> tuple[int, int]:
    """The run time (ns) and the calls of the tracer's BPF programs so far, as the
    kernel counts them (kernel.bpf_stats_enabled)."""
    res = subprocess.run(["bpftool", "-j", "prog", "show"], capture_output=True, text=True,
                         check=True)
    ours = [o for o in json.loads(res.stdout or "[]") if OUR_PROGRAMS.match(o.get("name", ""))]
    return sum(o.get("run_time_ns", 0) for o in ours), sum(o.get("run_cnt", 0) for o in ours)


class Snapshot:
    """What the server, the tracer's processes and its BPF programs had used by now."""

    def __init__(self, server: int, tracer: int):
        self.at = time.monotonic()
        self.server = drivers.cpu_seconds(server)
        self.tracer = sum(drivers.cpu_seconds(p) for p in tree(tracer) if Path(f"/proc/{p}").exists())
        self.bpf_ns, self.calls = tracer_cost()


def cost(args, work: Path) -> int:
    stats = Path("/proc/sys/kernel/bpf_stats_enabled")
    stats_before = stats.read_text()
    stats.write_text("1\n")
    try:
        return cost_measured(args, work)
    finally:
        stats.write_text(stats_before)


def cost_measured(args, work: Path) -> int:
    bench = Bench(work, args.clients)
    server = bench.start()
    warm_windows = 2
    windows = warm_windows + 4 * args.cycles + 1
    load = bench.load(server, windows * WINDOW_S, f"--report-interval={WINDOW_S}")
    t0 = time.monotonic()

    def at(window: float) -> None:
        time.sleep(max(0.0, t0 + window * WINDOW_S - time.monotonic()))

    # Window w covers [w*10, (w+1)*10) s; per cycle c (from warm_windows): unattached,
    # starting, attached, reporting; a last unattached window closes the last cycle.
    attached_windows, used = [], []
    for c in range(args.cycles):
        base = warm_windows + 4 * c
        at(base + 1)
        tracer = subprocess.Popen([*tracer_prefix(args.tracefs), *locklab(), "profile", "-p",
                                   str(server.pid), "-o", os.devnull],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        at(base + 2)
        start = Snapshot(server.pid, tracer.pid)
        at(base + 3)
        end = Snapshot(server.pid, tracer.pid)
        tracer.send_signal(signal.SIGINT)
        _, err = tracer.communicate(timeout=120)
        if tracer.returncode != 0:
            raise SystemExit(f"attach-mariadb: cycle {c + 1}: {err.strip()}")
        attached_windows.append(base + 2)
        used.append((end.at - start.at, end.server - start.server, end.tracer - start.tracer,
                     (end.bpf_ns - start.bpf_ns) / 1e9, end.calls - start.calls))
    out = finished(load, "cost run", bench.said)
    server.stop()
    tps = [float(m) for m in re.findall(r"^\[ *\d+s \] thds: \d+ tps: ([\d.]+)", out, re.M)]
    ratios, on, off = [], [], []
    for w in attached_windows:
        if w + 2 >= len(tps):
            break
        around = (tps[w - 2] + tps[w + 2]) / 2
        ratios.append(tps[w] / around)
        on.append(tps[w])
        off.append(tps[w - 2])
    print(f"per-window tps ({WINDOW_S} s windows): {' '.join(f'{t:.0f}' for t in tps)}")
    print(f"unattached windows: median {statistics.median(off):.1f} tps; attached: "
          f"median {statistics.median(on):.1f} tps")
    med, lo, hi = median_interval(ratios)
    print(f"attached / unattached (each attached window against the mean of the "
          f"unattached ones either side), {len(ratios)} cycles: median {med:.4f}, "
          + (f"95% interval {lo:.4f}-{hi:.4f}" if lo is not None else
             "too few cycles for a 95% interval (6 at least)"))
    print(f"ratios: {' '.join(f'{r:.3f}' for r in ratios)}")
    secs, server_cpu, tracer_cpu, bpf_s, calls = (sum(u[i] for u in used) for i in range(5))
    print(f"CPU in the attached windows ({secs:.1f} s): the server {server_cpu:.2f} s, the "
          f"tracer's processes {tracer_cpu:.2f} s, its BPF programs {bpf_s:.3f} s in "
          f"{calls} calls ({bpf_s * 1e9 / max(calls, 1):.0f} ns a call, {calls / secs:.0f} "
          f"calls/s); tracer + BPF = {(tracer_cpu + bpf_s) / server_cpu:.2%} of the server's CPU")
    return 0


# ------------------------------------------------------------------ repeat

def bpf_objects() -> dict[str, int]:
    """How many BPF programs, maps and links are loaded, and how many programs are
    the tracer's (by name), as bpftool counts them."""
    counts = {}
    for kind in ("prog", "map", "link"):
        res = subprocess.run(["bpftool", "-j", kind, "show"], capture_output=True, text=True,
                             check=True)
        objs = json.loads(res.stdout or "[]")
        counts[kind] = len(objs)
        if kind == "prog":
            counts["ours"] = sum(1 for o in objs if OUR_PROGRAMS.match(o.get("name", "")))
    return counts


def other_tracers() -> list[int]:
    """The locklab-attach processes running now: another's (a test suite's) objects
    would be counted as left behind by ours."""
    found = []
    for comm in Path("/proc").glob("[0-9]*/comm"):
        try:
            if comm.read_text().strip() == "locklab-attach":
                found.append(int(comm.parent.name))
        except OSError:
            pass
    return found


def quiet_bpf_objects() -> dict[str, int]:
    """bpf_objects() once no tracer runs on the machine (waiting up to 5 minutes)."""
    for _ in range(300):
        if not other_tracers():
            return bpf_objects()
        time.sleep(1)
    raise SystemExit(f"attach-mariadb: locklab-attach still running (pids "
                     f"{other_tracers()}): BPF objects not counted")


def repeat(args, work: Path) -> int:
    bench = Bench(work, args.clients)
    server = bench.start()
    before = quiet_bpf_objects()
    print(f"BPF objects before: {before}")
    load = bench.load(server, 60)
    unattached = drivers.parse_sysbench(finished(load, "the unattached run", bench.said), "")
    runs, took = [], []
    load = bench.load(server, 60)
    for i in range(args.times):
        if load.poll() is not None:
            out = finished(load, f"sysbench run {len(runs) + 1}", bench.said)
            runs.append(drivers.parse_sysbench(out, ""))
            load = bench.load(server, 60)
        started = time.monotonic()
        res = subprocess.run([*locklab(), "profile", "-p", str(server.pid), "--duration", "1",
                              "-o", os.devnull], capture_output=True, text=True)
        took.append(time.monotonic() - started)
        if res.returncode != 0:
            raise SystemExit(f"attach-mariadb: attach {i + 1}: {res.stderr.strip()}")
        if server.proc.poll() is not None:
            raise SystemExit(f"attach-mariadb: the server died after attach {i + 1}: "
                             f"{server.said()}")
    out = finished(load, f"sysbench run {len(runs) + 1}", bench.said)
    runs.append(drivers.parse_sysbench(out, ""))
    time.sleep(1)
    after = quiet_bpf_objects()
    pid = int((server.workdir / "pid").read_text())
    server.stop()
    errors = sum(r["client_errors"] or 0 for r in runs)
    queries = sum(r["iterations"] or 0 for r in runs)
    crashed = "got signal" in (server.workdir / "error.log").read_text(errors="replace")
    print(f"{args.times} attaches of 1 s, each ended with its report, status 0; "
          f"`locklab profile -p` took {statistics.median(took):.1f} s (median), "
          f"{max(took):.1f} s at most")
    print(f"sysbench unattached: {unattached['iterations']} queries, "
          f"{unattached['client_errors']} ignored errors (oltp_read_write's deadlocks, "
          f"retried by sysbench)")
    print(f"sysbench attached: {len(runs)} runs, each exited 0 with 0 reconnects; "
          f"{queries} queries, {errors} ignored errors")
    print(f"server: the same process throughout (pid {pid} == {server.pid}: "
          f"{pid == server.pid}); its error log reports a crash: {crashed}")
    print(f"BPF objects after: {after} (the tracer's programs: {after['ours']})")
    left = {k: after[k] - before[k] for k in before if after[k] > before[k]}
    print("nothing left behind" if not left and not after["ours"] else f"left: {left}")
    return 0 if not left and not after["ours"] and not crashed and pid == server.pid else 1


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("mode", choices=("top5", "cost", "repeat"))
    ap.add_argument("--clients", type=int, default=64)
    ap.add_argument("--warm", type=float, default=10, help="top5: seconds before the window")
    ap.add_argument("--window", type=float, default=20, help="top5: the window traced")
    ap.add_argument("--cycles", type=int, default=10, help="cost: attached windows")
    ap.add_argument("--times", type=int, default=100, help="repeat: attaches")
    ap.add_argument("--tracefs", action="store_true",
                    help="mount tracefs for the tracer alone (the syscall tracepoints)")
    args = ap.parse_args()
    print(f"load before: {load()}")
    with tempfile.TemporaryDirectory(prefix="attach-mariadb-") as d:
        try:
            rc = {"top5": top5, "cost": cost, "repeat": repeat}[args.mode](args, Path(d))
        except drivers.Failed as e:
            raise SystemExit(f"attach-mariadb: {e}") from None
    print(f"load after: {load()}")
    return rc


if __name__ == "__main__":
    sys.exit(main())
