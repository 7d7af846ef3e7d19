"""A stand-in for locklab-bench that keeps its contract and misbehaves on demand.

The tests point LOCKLAB_NATIVE_DIR at a directory whose `locklab-bench` runs this
file. FAKE_BENCH (JSON) steers it:
  sleep    seconds each `bench` takes (instead of measuring)
  log      a file each `bench` appends its point to, as one JSON line, on start
  crash / hang / badjson / violate / fail
           lists of partial points, e.g. [{"lock": "pthread", "threads": 2}]: a
           matching `bench` dies of SIGSEGV, sleeps forever, prints a broken line,
           reports broken mutual exclusion (exit 1), or exits 3 with a message.
Its numbers are synthetic: innodb56 costs 20 ns per thread, pthread a flat 60 ns,
so their lines cross at 3 threads. Its rwlocks (`list --rwlock`, `bench --workload
rw`): ll costs 10 ns per op, the others 30; writes 10x that; the writers wait
1 us per thread at most.
"""
import argparse
import json
import os
import signal
import sys
import time

KNOBS = {
    "pthread": [],
    "pthread-adaptive": [],
    "innodb56": ["sync_spin_loops", "spin"],
    "futex": ["spin"],
    "ttas": [],
}


RWKNOBS = {
    "pthread": ["prefer"],
    "ll": ["bias"],
    "partitioned": ["n"],
    "bravo": ["under"],
    "innodb56-rw": [],
}


def fail(message, status=2):
    print(f"locklab: {message}", file=sys.stderr)
    sys.exit(status)


class Parser(argparse.ArgumentParser):
    def error(self, message):
        fail(message)


def check_lock(name, opts, table=KNOBS, kind="lock"):
    if name not in table:
        fail(f"unknown {kind} '{name}' (valid: {', '.join(table)})")
    for pair in filter(None, (opts or "").split(",")):
        key, eq, _ = pair.partition("=")
        if not eq:
            fail(f"'{pair}': expected KEY=VALUE")
        if key not in table[name]:
            fail(f"{name}: unknown option '{key}'")


def cmd_list(argv):
    p = Parser(prog="locklab-bench list")
    p.add_argument("name", nargs="?")
    p.add_argument("--lock-opts")
    p.add_argument("--json", action="store_true")
    p.add_argument("--rwlock", action="store_true")
    args = p.parse_args(argv)
    table, kind = (RWKNOBS, "rwlock") if args.rwlock else (KNOBS, "mutex")
    names = [args.name] if args.name else list(table)
    for name in names:
        check_lock(name, args.lock_opts, table, "rwlock" if args.rwlock else "lock")
    print(json.dumps([
        {"name": n, "summary": "fake", "parks": n != "ttas", "fifo": False, "kind": kind,
         "knobs": [{"name": k, "help": "", "default": "0", "value": "0"} for k in table[n]]}
        for n in names
    ]))


def cmd_floor(argv):
    p = Parser(prog="locklab-bench floor")
    p.add_argument("--json", action="store_true")
    p.parse_args(argv)
    keys = ("atomic_rmw_ns", "cacheline_pingpong_ns", "futex_wake_nowaiter_ns",
            "futex_wait_eagain_ns", "futex_wake_to_run_ns", "context_switch_ns", "pause_ns")
    print(json.dumps({**{k: 10.0 + i for i, k in enumerate(keys)}, "cpus": os.cpu_count()}))


GATES = ("innodb", "fifo", "auto")


def server_qps(lock, clients, gate, n, io, suspend):
    """The innodb_thread_concurrency study in miniature: 300k at the peak; innodb56 alone collapses past 16
    clients; a gate keeps min(clients, N) inside; fifo is 2% above innodb; auto is
    the best N less 3%; I/O held in the gate caps throughput at 8 per 200 us."""
    def gated(inside):
        return 300e3 * min(1.0, inside / 4) * (1 - 0.005 * inside)
    if not gate:
        inside = clients
        qps = gated(min(clients, 8)) / (1 + max(0, clients - 16) / 40 if lock == "innodb56" else 1)
    elif gate == "auto":
        qps = 0.97 * max(gated(min(clients, k)) for k in (1, 2, 4, 8))
        inside = 4
    else:
        inside = min(clients, n)
        qps = gated(inside) * (1.02 if gate == "fifo" else 1.0)
    if io and not suspend and gate:
        qps = min(qps, inside * 1e6 / 200)
    return qps


def cmd_server(argv):
    p = Parser(prog="locklab-bench bench --workload server")
    p.add_argument("--workload")
    p.add_argument("--lock", required=True)
    p.add_argument("--lock-opts", default="")
    p.add_argument("--threads", type=int, required=True)
    p.add_argument("--mutexes", type=int, default=16)
    p.add_argument("--hold-ns", type=int, default=1000)
    p.add_argument("--outside-ns", type=int, default=1000)
    p.add_argument("--gate", default="")
    p.add_argument("--gate-opts", default="")
    p.add_argument("--workload-opts", default="")
    p.add_argument("--duration", type=float, default=1.0)
    p.add_argument("--iterations", type=int)
    p.add_argument("--warmup", type=float, default=0.0)
    p.add_argument("--json", action="store_true")
    args = p.parse_args(argv)
    check_lock(args.lock, args.lock_opts)
    if args.gate and args.gate not in GATES:
        fail(f"unknown gate policy '{args.gate}' (valid: {', '.join(GATES)})")
    opts = dict(kv.split("=") for kv in filter(None, args.workload_opts.split(",")))
    n = int(dict(kv.split("=") for kv in filter(None, args.gate_opts.split(","))).get("n", 8))
    io, suspend = int(opts.get("io_us", 0)), int(opts.get("suspend", 0))
    plan = json.loads(os.environ.get("FAKE_BENCH", "{}"))
    if plan.get("log") and not args.iterations:
        with open(plan["log"], "a") as f:
            f.write(json.dumps({"lock": args.lock, "threads": args.threads, "gate": args.gate,
                                "gate_opts": args.gate_opts,
                                "workload_opts": args.workload_opts}) + "\n")
    qps = server_qps(args.lock, args.threads, args.gate, n, io, suspend)
    idle = 100.0 * max(0.0, 1 - qps / 300e3) if io and not suspend else 2.0
    print(json.dumps({
        "workload": "server", "lock": args.lock, "lock_opts": args.lock_opts,
        "gate": args.gate, "gate_opts": args.gate_opts, "workload_opts": args.workload_opts,
        "threads": args.threads, "mutexes": args.mutexes, "hold_ns": args.hold_ns,
        "outside_ns": args.outside_ns, "duration_s": args.duration,
        "iterations": int(qps * args.duration), "ns_per_iter": 1e9 / qps, "ops_per_sec": qps,
        "qps": qps, "cpu_user_pct": 98.0 - idle, "cpu_sys_pct": 2.0, "cpu_idle_pct": idle,
        "cs_per_sec": 1000.0, "vcsw": 10, "ivcsw": 2,
        "cpu_ns_per_iter": 2e9 * (1 - idle / 100) / qps,
        "jain": 0.99 if args.gate != "innodb" else 0.3, "min_thread_iters": 1,
        "max_thread_iters": 10, "wait_ns_p50": 100.0, "wait_ns_p99": 1e5, "wait_ns_p999": 1e6,
        "wait_ns_max": 1e7, "latency_ns_p50": 3000.0, "latency_ns_p99": 2e5,
        "latency_ns_p999": 2e6, "latency_ns_max": 2e7,
        "gate_limit_mean": 4.0 if args.gate == "auto" else (n if args.gate else 0),
        "gate_limit_min": 2, "gate_limit_max": 8, "gate_waits": 100, "gate_sleeps": 0,
        "gate_handoffs": 7 if args.gate in ("fifo", "auto") else 0,
        "gate_barges": 90 if args.gate in ("fifo", "auto") else 0,
        "mutex_ok": True, "calib_error_pct": 0.5, "version": "fake",
    }))
    return 0


def point_parser(prog, *extra):
    """`bench`'s options that every workload's point takes, and EXTRA (name, type)."""
    p = Parser(prog=prog)
    p.add_argument("--lock", required=True)
    p.add_argument("--lock-opts", default="")
    p.add_argument("--threads", type=int, required=True)
    p.add_argument("--hold-ns", type=int, required=True)
    p.add_argument("--outside-ns", type=int, default=0)
    p.add_argument("--duration", type=float, default=1.0)
    p.add_argument("--warmup", type=float, default=0.0)
    p.add_argument("--json", action="store_true")
    for name, kind in extra:
        p.add_argument(name, type=kind, required=True)
    return p


def cmd_rw(argv):
    p = point_parser("locklab-bench bench --workload rw", ("--read-pct", float))
    p.add_argument("--workload")
    p.add_argument("--sample-every", type=int, default=16)
    args = p.parse_args(argv)
    check_lock(args.lock, args.lock_opts, RWKNOBS, "rwlock")
    point = {"workload": "rw", "lock": args.lock, "lock_opts": args.lock_opts,
             "threads": args.threads, "read_pct": args.read_pct, "hold_ns": args.hold_ns,
             "outside_ns": args.outside_ns, "sample_every": args.sample_every}
    plan = json.loads(os.environ.get("FAKE_BENCH", "{}"))
    if plan.get("log"):
        with open(plan["log"], "a") as f:
            f.write(json.dumps(point) + "\n")
    violate = any(rule.items() <= point.items() for rule in plan.get("violate", []))
    if violate:
        print("locklab: rwlock exclusion violated: 1 sections saw a writer beside them",
              file=sys.stderr)
    read_ns = (10.0 if args.lock == "ll" else 30.0) + args.hold_ns
    write_ns = 10 * read_ns
    share = args.read_pct / 100
    ns = share * read_ns + (1 - share) * write_ns
    ops = int(args.duration * 1e9 / ns)
    writes = int(ops * (1 - share))
    wait = 1000.0 * args.threads if writes else 0.0
    print(json.dumps({
        **point, "mode": "duration", "duration_s": args.duration, "ns_per_op": ns,
        "ops_per_sec": 1e9 / ns, "cpu_user_pct": 90.0, "cpu_sys_pct": 5.0,
        "cpu_idle_pct": 5.0, "cs_per_sec": 100.0, "cpu_ns_per_op": 2 * ns,
        "read_ops": ops - writes, "read_ns_per_op": read_ns, "read_wait_ns_p50": 0,
        "read_wait_ns_p99": 0.5 * wait, "read_wait_ns_max": wait, "read_samples": 10,
        "read_jain": 0.99, "write_ops": writes, "write_ns_per_op": write_ns if writes else 0,
        "write_wait_ns_p50": 0, "write_wait_ns_p99": 0.5 * wait, "write_wait_ns_max": wait,
        "write_samples": 10 if writes else 0, "write_jain": 0.9 if writes else 0,
        "exclusion_ok": not violate, "drained": True, "version": "fake",
        # Only with --runqueue in the real one: here, ll's lines carry it, no other's.
        **({"threads_unscheduled": 1} if args.lock == "ll" else {}),
    }))
    return 1 if violate else 0


def cmd_bench(argv):
    if "--workload" in argv and argv[argv.index("--workload") + 1] == "server":
        return cmd_server(argv)
    if "--workload" in argv and argv[argv.index("--workload") + 1] == "rw":
        return cmd_rw(argv)
    p = point_parser("locklab-bench bench", ("--mutexes", int))
    p.add_argument("--instrument", action="store_true")
    args = p.parse_args(argv)
    # As liblocklab does: the environment turns the lock monitor on, --instrument or not.
    args.instrument |= os.environ.get("LOCKLAB_MONITOR") in ("1", "on")
    check_lock(args.lock, args.lock_opts)
    point = {"lock": args.lock, "threads": args.threads, "mutexes": args.mutexes,
             "hold_ns": args.hold_ns, "outside_ns": args.outside_ns}
    plan = json.loads(os.environ.get("FAKE_BENCH", "{}"))
    if plan.get("log"):
        with open(plan["log"], "a") as f:
            f.write(json.dumps({**point, "lock_opts": args.lock_opts,
                                "instrument": args.instrument}) + "\n")

    def told(action):
        return any(rule.items() <= point.items() for rule in plan.get(action, []))

    time.sleep(plan.get("sleep", 0))
    if told("hang"):
        time.sleep(3600)
    if told("crash"):
        os.kill(os.getpid(), signal.SIGSEGV)
    if told("fail"):
        fail("could not start the threads", status=3)
    if told("badjson"):
        print('{"lock": "truncated')
        return 0
    ns = 20.0 * args.threads if args.lock == "innodb56" else 60.0
    ns += args.hold_ns
    iterations = int(args.duration * 1e9 / ns) or 1
    violate = told("violate")
    print(json.dumps({
        "lock": args.lock, "lock_opts": args.lock_opts, "threads": args.threads,
        "mutexes": args.mutexes, "hold_ns": args.hold_ns, "outside_ns": args.outside_ns,
        "duration_s": args.duration, "iterations": iterations, "ns_per_iter": ns,
        "ops_per_sec": 1e9 / ns, "cpu_user_pct": 60.0, "cpu_sys_pct": 30.0,
        "cpu_idle_pct": 10.0, "cs_per_sec": 1000.0 * args.threads, "vcsw": 10, "ivcsw": 2,
        "cpu_ns_per_iter": 2 * ns, "jain": 1.0 / args.threads ** 0.1,
        "min_thread_iters": iterations // args.threads, "max_thread_iters": iterations,
        "wait_ns_p50": 0.0 if args.threads == 1 else ns, "wait_ns_p99": 3 * ns,
        "wait_ns_p999": 5 * ns, "wait_ns_max": 10 * ns, "mutex_ok": not violate,
        "calib_error_pct": 0.5, "version": "fake", "instrument": args.instrument,
    }))
    return 1 if violate else 0


def main():
    commands = {"list": cmd_list, "floor": cmd_floor, "bench": cmd_bench}
    if len(sys.argv) < 2 or sys.argv[1] not in commands:
        fail(f"unknown command (valid: {', '.join(commands)})")
    sys.exit(commands[sys.argv[1]](sys.argv[2:]))


if __name__ == "__main__":
    main()
