"""`locklab bench --workload rw`: the rwlock workload's result, and its refusals."""
import json

import pytest

from conftest import locklab, one_line_error

RW = ["bench", "--workload", "rw", "--threads", "4", "--hold-ns", "50"]


@pytest.mark.parametrize("lock", ["pthread", "ll", "partitioned", "bravo"])
def test_every_rwlock_runs_and_keeps_exclusion(lock):
    out = locklab(*RW, "--lock", lock, "--read-pct", "75", "--iterations", "3000", "--json")
    assert out.returncode == 0, out.stderr
    r = json.loads(out.stdout)
    assert r["workload"] == "rw" and r["lock"] == lock and r["exclusion_ok"] and r["drained"]
    # Every iteration is a read or a write; with --iterations the window is the run.
    assert r["read_ops"] + r["write_ops"] == 4 * 3000
    assert 0.6 < r["read_ops"] / 12000 < 0.9
    assert r["read_samples"] > 0 and r["write_samples"] > 0
    assert r["write_wait_ns_max"] >= r["write_wait_ns_p99"] >= r["write_wait_ns_p50"]


def test_read_pct_edges():
    only = json.loads(locklab(*RW, "--lock", "ll", "--read-pct", "100", "--iterations", "500",
                              "--json").stdout)
    assert only["write_ops"] == 0 and only["read_ops"] == 2000
    none = json.loads(locklab(*RW, "--lock", "ll", "--read-pct", "0", "--iterations", "500",
                              "--json").stdout)
    assert none["read_ops"] == 0 and none["write_ops"] == 2000


@pytest.mark.parametrize("extra, needle", [
    (["--lock", "ll", "--read-pct", "100.5"], "--read-pct wants a percentage in [0, 100]"),
    (["--lock", "ll", "--read-pct", "x"], "--read-pct wants a percentage in [0, 100], got 'x'"),
    (["--lock", "ll", "--read-pct", "nan"], "--read-pct wants a percentage"),
    (["--lock", "innodb56", "--read-pct", "90"], "unknown rwlock 'innodb56' (valid: pthread"),
    (["--lock", "ll", "--lock-opts", "inhibit=-1", "--read-pct", "90"],
     "option 'inhibit' of rwlock 'll' wants an integer"),
    (["--lock", "ll"], "--workload rw needs --lock, --threads, --read-pct and --hold-ns"),
    (["--lock", "ll", "--read-pct", "90", "--mutexes", "2"], "unknown or incomplete option"),
])
def test_bad_input_is_one_line(extra, needle):
    out = locklab(*RW, *extra, "--duration", "0.01")
    assert needle in one_line_error(out)
    assert out.stdout == ""


def test_runqueue_splits_the_schedulers_share_off_the_longest_wait():
    """--runqueue: with 4 threads on one CPU, the longest wait holds time slices the waiter
    spent runnable but not running, and taking them off leaves a shorter wait.

    The longest write wait is usually one where the writer was preempted; now and then
    (about one run in 30 here) it is one the writer slept through, with no time
    runnable in it.  The split is checked on every run, and the preempted case asked
    of one run in up to 4."""
    import os
    import subprocess
    import sys

    cmd = [sys.executable, "-m", "locklab.cli", *RW, "--lock", "ll", "--read-pct", "50",
           "--duration", "0.3", "--warmup", "0.05", "--sample-every", "4", "--runqueue", "--json"]
    preempted = []
    for _ in range(4):
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=120, preexec_fn=lambda:
                             os.sched_setaffinity(0, {min(os.sched_getaffinity(0))}))
        assert out.returncode == 0, out.stderr
        r = json.loads(out.stdout)
        for c in ("read", "write"):
            assert 0 <= r[f"{c}_wait_ns_max_off_runq"] <= r[f"{c}_wait_ns_max"]
        preempted.append((r["write_runq_ns_at_max"], r["write_wait_ns_max_off_runq"],
                          r["write_wait_ns_max"]))
        if r["write_runq_ns_at_max"] > 100_000:   # a time slice, not noise
            assert r["write_wait_ns_max_off_runq"] < r["write_wait_ns_max"]
            break
    else:
        raise AssertionError(f"no run's longest write wait was preempted: {preempted}")
    plain = json.loads(locklab(*RW, "--lock", "ll", "--read-pct", "50", "--iterations", "200",
                               "--json").stdout)
    assert not any("runq" in k for k in plain)


def test_threads_kept_off_the_cpu_are_counted():
    """--runqueue: 256 readers that never sleep, pinned to one CPU, in a 50 ms window:
    the scheduler's round is longer than the window, so some never run in it and the
    point says so; one thread always runs; with --iterations the window is the run."""
    import os
    import subprocess
    import sys

    cmd = [sys.executable, "-m", "locklab.cli", "bench", "--workload", "rw", "--lock", "ll",
           "--threads", "256", "--read-pct", "100", "--hold-ns", "50", "--duration", "0.05",
           "--warmup", "0.05", "--runqueue"]
    out = subprocess.run([*cmd, "--json"], capture_output=True, text=True, timeout=120,
                         preexec_fn=lambda: os.sched_setaffinity(0, {min(os.sched_getaffinity(0))}))
    assert out.returncode == 0, out.stderr
    r = json.loads(out.stdout)
    assert 1 <= r["threads_unscheduled"] < 256
    one = json.loads(locklab(*RW[:3], "--threads", "1", "--hold-ns", "50", "--lock", "ll",
                             "--read-pct", "50", "--duration", "0.1", "--warmup", "0.05",
                             "--runqueue", "--json").stdout)
    assert one["threads_unscheduled"] == 0
    it = json.loads(locklab(*RW, "--lock", "ll", "--read-pct", "50", "--iterations", "100",
                            "--runqueue", "--json").stdout)
    assert it["threads_unscheduled"] is None
    # A diagnostic, as --runqueue is: without it the window is left alone.
    plain = json.loads(locklab(*RW, "--lock", "ll", "--read-pct", "50", "--duration", "0.05",
                               "--warmup", "0.01", "--json").stdout)
    assert "threads_unscheduled" not in plain


def test_runqueue_refuses_threads_it_cannot_watch():
    """--runqueue with more threads than open files allowed: one line and exit 2, not
    threads whose runqueue time reads as 0 because their schedstat never opened."""
    import resource
    import subprocess
    import sys

    def few_files():
        resource.setrlimit(resource.RLIMIT_NOFILE, (64, 64))

    cmd = [sys.executable, "-m", "locklab.cli", *RW, "--threads", "100", "--lock", "ll",
           "--read-pct", "50", "--duration", "0.05", "--warmup", "0.01", "--runqueue", "--json"]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=120, preexec_fn=few_files)
    assert out.returncode == 2 and out.stdout == ""
    assert "--runqueue: cannot open the schedstat of thread" in one_line_error(out)
