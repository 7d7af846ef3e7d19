"""locklab-bench's metrics on workloads whose answers are known."""
import json
import subprocess

import pytest

from locklab import native

KEYS = (
    "lock threads mutexes hold_ns outside_ns duration_s iterations ns_per_iter ops_per_sec "
    "cpu_user_pct cpu_sys_pct cpu_idle_pct cs_per_sec vcsw ivcsw cpu_ns_per_iter jain "
    "min_thread_iters max_thread_iters wait_ns_p50 wait_ns_p99 wait_ns_p999 wait_ns_max mutex_ok"
).split()


def bench(*args):
    out = subprocess.run(
        [str(native.bench_path()), "bench", "--json", *args], capture_output=True, text=True
    )
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def test_every_documented_key_is_reported():
    r = bench("--lock", "futex", "--threads", "2", "--mutexes", "1", "--hold-ns", "0",
              "--duration", "0.1", "--warmup", "0")
    missing = [k for k in KEYS if k not in r]
    assert not missing


@pytest.mark.parametrize("lock", ["pthread", "innodb56", "ttas"])
def test_fixed_iterations_are_exact_and_fair(lock):
    # Every thread does exactly J iterations: totals, spread and Jain's index follow.
    r = bench("--lock", lock, "--threads", "4", "--mutexes", "2", "--hold-ns", "100",
              "--iterations", "5000")
    assert r["iterations"] == 4 * 5000
    assert r["min_thread_iters"] == r["max_thread_iters"] == 5000
    assert r["jain"] == pytest.approx(1.0)
    assert r["mutex_ok"] is True


def test_single_thread_hold_time_sets_the_pace():
    # One thread holding 20 us per iteration cannot go faster than 20 us per
    # iteration, and it is on the CPU for (almost) all of it.
    r = bench("--lock", "pthread", "--threads", "1", "--mutexes", "1", "--hold-ns", "20000",
              "--duration", "0.3", "--warmup", "0.05")
    assert r["ns_per_iter"] >= 0.8 * 20000
    assert r["cpu_ns_per_iter"] >= 0.8 * 20000
    assert r["cpu_ns_per_iter"] <= 1.5 * r["ns_per_iter"]
    assert r["ops_per_sec"] == pytest.approx(1e9 / r["ns_per_iter"], rel=0.01)
    assert r["jain"] == pytest.approx(1.0)
    # One thread never waits for another: the wait is the uncontended path.
    assert r["wait_ns_p50"] < 5000


def test_cpu_shares_add_up_and_waits_are_ordered():
    r = bench("--lock", "futex", "--threads", "8", "--mutexes", "1", "--hold-ns", "1000",
              "--duration", "0.3", "--warmup", "0.05")
    shares = (r["cpu_user_pct"], r["cpu_sys_pct"], r["cpu_idle_pct"])
    # The rest of the ticks is iowait and steal, which a VM's host decides: no lower bound.
    assert all(0 <= x <= 100 for x in shares) and sum(shares) <= 100.5
    assert r["cpu_user_pct"] + r["cpu_sys_pct"] > 10   # eight busy threads show up
    assert r["wait_ns_p50"] <= r["wait_ns_p99"] <= r["wait_ns_p999"] <= r["wait_ns_max"] * 1.07
    assert r["min_thread_iters"] <= r["iterations"] / 8 <= r["max_thread_iters"]
    assert 1 / 8 <= r["jain"] <= 1.0
    # Eight threads on one futex lock must block and switch.
    assert r["vcsw"] > 0


@pytest.mark.parametrize(
    "args, needle",
    [
        (["--hold-ns", "-1"], "--hold-ns wants an integer"),
        (["--lock", "nope"], "unknown lock 'nope'"),
        (["--threads", "0"], "--threads wants an integer"),
        (["--duration", "abc"], "--duration wants seconds"),
        (["--iterations", "10"], "exactly one of --duration and --iterations"),
    ],
)
def test_bad_input_one_line(args, needle):
    base = {"--lock": "futex", "--threads": "2", "--mutexes": "1", "--hold-ns": "0",
            "--duration": "0.1"}
    for flag, value in zip(args[::2], args[1::2]):
        base[flag] = value
    argv = [x for kv in base.items() for x in kv]
    out = subprocess.run([str(native.bench_path()), "bench", *argv], capture_output=True,
                         text=True)
    assert out.returncode == 2
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("locklab: ") and needle in lines[0]
