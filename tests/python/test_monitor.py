"""The lock monitor from the command line: bench --instrument, sweep --instrument,
moncost, and the LOCKLAB_MONITOR* / LOCKLAB_WATCHDOG environment (docs/monitoring.md).

The sweep tests use the fake locklab-bench; the others run the real one
(LOCKLAB_NATIVE_DIR, as test_bench_metrics.py does).
"""
import json
import os
import signal
import sqlite3
import subprocess
import time

import pytest

from conftest import locklab, one_line_error, rows
from locklab import native

GRID = ["--locks", "innodb56,pthread", "--threads", "1,2", "--hold-ns", "0",
        "--duration", "0.01", "--warmup", "0"]


def bench(*args, env=None):
    return subprocess.run([str(native.bench_path()), *map(str, args)], capture_output=True,
                          text=True, env=env, timeout=120)


# ---- the sweep ----

def test_sweep_instrument_reaches_every_point_and_is_stored(fake, tmp_path):
    db = tmp_path / "l.db"
    out = locklab("sweep", *GRID, "--instrument", "--db", db, env=fake.env())
    assert out.returncode == 0, out.stderr
    assert [p["instrument"] for p in fake.launched()] == [True] * 4
    points = rows(db)
    assert len(points) == 4 and all(p["instrument"] == 1 for p in points)
    assert json.loads(rows(db, "SELECT spec FROM runs")[0]["spec"])["instrument"] is True

    # Without the flag: off, in the same file, as a second run to compare with.
    out = locklab("sweep", *GRID, "--db", db, env=fake.env())
    assert out.returncode == 0, out.stderr
    assert [p["instrument"] for p in fake.launched()[4:]] == [False] * 4
    assert [p["instrument"] for p in rows(db, "SELECT * FROM points WHERE run_id = 2")] == [0] * 4
    cmp = locklab("compare", "2", "1", "--db", db, env=fake.env())
    assert cmp.returncode == 0 and "4 points matched" in cmp.stdout, cmp.stderr


def test_sweep_resume_keeps_instrument_and_refuses_it_again(fake, tmp_path):
    db = tmp_path / "l.db"
    env = fake.env(hang=[{"lock": "pthread", "threads": 2}])
    out = locklab("sweep", *GRID, "--instrument", "--timeout", "1", "--db", db, env=env)
    assert out.returncode == 1
    # Resume reruns nothing here (failed points are stored), but must not take the flag again.
    line = one_line_error(locklab("sweep", "--resume", "1", "--instrument", "--db", db,
                                  env=fake.env()))
    assert "--instrument" in line


def test_old_database_gains_the_instrument_column(fake, tmp_path):
    db = tmp_path / "old.db"
    conn = sqlite3.connect(db)
    # A points table as the first release made it: no instrument column.
    conn.executescript("""
        CREATE TABLE runs (id INTEGER PRIMARY KEY, started TEXT NOT NULL, finished TEXT,
            spec TEXT NOT NULL, cpu_model TEXT, cores INTEGER, kernel TEXT, glibc TEXT,
            version TEXT, floor TEXT);
        CREATE TABLE points (id INTEGER PRIMARY KEY, run_id INTEGER NOT NULL, lock TEXT NOT NULL,
            lock_opts TEXT NOT NULL, threads INTEGER NOT NULL, mutexes INTEGER NOT NULL,
            hold_ns INTEGER NOT NULL, outside_ns INTEGER NOT NULL, rep INTEGER NOT NULL,
            ok INTEGER NOT NULL, error TEXT, wall_s REAL, finished TEXT NOT NULL, raw TEXT);
    """)
    conn.close()
    from locklab.sweep import store
    conn = store.connect(db)
    cols = {r[1] for r in conn.execute("PRAGMA table_info(points)")}
    assert "instrument" in cols


# ---- the benchmark ----

def test_bench_instrument_counts_every_acquisition():
    out = bench("bench", "--lock", "futex", "--threads", "4", "--mutexes", "2", "--hold-ns", "200",
                "--iterations", "3000", "--instrument", "--dump", "json", "--json")
    assert out.returncode == 0, out.stderr
    r = json.loads(out.stdout)
    assert r["instrument"] is True and r["mutex_ok"] is True
    assert r["mon_acquisitions"] == 4 * 3000
    assert 0 <= r["mon_contended"] <= r["mon_acquisitions"]
    dump = json.loads(out.stderr.strip().splitlines()[-1])
    assert dump["lock_count"] == 2 and dump["statistics"] is True
    locks = {lock["name"]: lock for lock in dump["locks"]}
    assert set(locks) == {"bench.mutex[0]", "bench.mutex[1]"}
    assert all(lock["acquisitions"] == 2 * 3000 and lock["algo"] == "futex"
               for lock in locks.values())
    assert sum(lock["contended"] for lock in locks.values()) == r["mon_contended"]
    assert all(sum(lock["wait_ns"]["log2_hist"]) == lock["contended"] for lock in locks.values())


def test_bench_without_instrument_reports_it_off():
    out = bench("bench", "--lock", "ttas", "--threads", "2", "--mutexes", "1", "--hold-ns", "0",
                "--iterations", "1000", "--json")
    assert out.returncode == 0, out.stderr
    r = json.loads(out.stdout)
    assert r["instrument"] is False and "mon_acquisitions" not in r


def test_bench_bad_dump_format_is_one_line():
    out = locklab("bench", "--lock", "futex", "--threads", "1", "--mutexes", "1", "--hold-ns",
                  "0", "--iterations", "10", "--dump", "xml")
    assert "--dump wants text or json, got 'xml'" in one_line_error(out)


def test_moncost_measures_and_counts():
    out = locklab("moncost", "--locks", "futex,ttas", "--pairs", "2000", "--rounds", "3",
                  "--json")
    assert out.returncode == 0, out.stderr
    r = json.loads(out.stdout)
    assert [lock["lock"] for lock in r["locks"]] == ["futex", "ttas"]
    for lock in r["locks"]:
        assert lock["counted"] is True
        assert lock["bare_ns"] > 0 and lock["off_ns"] > 0 and lock["on_ns"] > 0
    assert r["counted"] is True and r["off_over_bare_geomean"] > 0


def test_moncost_bad_lock_is_one_line():
    line = one_line_error(locklab("moncost", "--locks", "futex,nope"))
    assert "unknown lock 'nope'" in line


# ---- the environment ----

@pytest.mark.parametrize("var,value,says", [
    ("LOCKLAB_MONITOR", "2", "LOCKLAB_MONITOR wants 0, 1, off or on, got '2'"),
    ("LOCKLAB_MONITOR_FORMAT", "xml", "LOCKLAB_MONITOR_FORMAT wants text or json"),
    ("LOCKLAB_MONITOR_SIGNAL", "NOPE", "LOCKLAB_MONITOR_SIGNAL: cannot dump on 'NOPE'"),
    ("LOCKLAB_MONITOR_SIGNAL", "KILL", "LOCKLAB_MONITOR_SIGNAL: cannot dump on 'KILL'"),
    # A fault would dump in a loop, TERM and job control would be ignored.
    *[("LOCKLAB_MONITOR_SIGNAL", bad, f"LOCKLAB_MONITOR_SIGNAL: cannot dump on '{bad}' (valid: "
       "USR1, USR2, PROF, URG, WINCH, or their numbers)")
      for bad in ("SEGV", "SIGSEGV", "11", "TERM", "15", "INT", "TSTP", "CONT", "HUP", "99")],
    ("LOCKLAB_MONITOR_OUT", "/nonexistent/dir/dump.txt", "cannot open"),
    ("LOCKLAB_WATCHDOG", "abc", "LOCKLAB_WATCHDOG wants THRESHOLD_MS[,PERIOD_MS]"),
    ("LOCKLAB_WATCHDOG", "100,", "LOCKLAB_WATCHDOG wants THRESHOLD_MS[,PERIOD_MS]"),
    ("LOCKLAB_WATCHDOG", "0", "LOCKLAB_WATCHDOG wants THRESHOLD_MS[,PERIOD_MS]"),
])
def test_malformed_environment_is_one_line_and_status_2(var, value, says):
    env = {**os.environ, var: value}
    out = bench("list", env=env)
    assert out.returncode == 2 and out.stdout == ""
    assert out.stderr.count("\n") == 1 and out.stderr.startswith("locklab: "), out.stderr
    assert says in out.stderr
    # Through the Python CLI: the same line.
    assert says in one_line_error(locklab("list", env=env))


def test_signal_dumps_json_to_the_file(tmp_path):
    dump = tmp_path / "dump.jsonl"
    env = {**os.environ, "LOCKLAB_MONITOR": "1", "LOCKLAB_MONITOR_SIGNAL": "USR2",
           "LOCKLAB_MONITOR_OUT": str(dump), "LOCKLAB_MONITOR_FORMAT": "json"}
    proc = subprocess.Popen(
        [str(native.bench_path()), "bench", "--lock", "innodb56", "--threads", "2", "--mutexes",
         "1", "--hold-ns", "1000", "--duration", "30", "--warmup", "0"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        # Printed after the locks exist; the handler was installed before main().
        assert proc.stderr.readline().startswith("work loop:")
        proc.send_signal(signal.SIGUSR2)
        deadline = time.monotonic() + 60
        while not (dump.exists() and dump.read_text().endswith("\n")):
            assert time.monotonic() < deadline, "no dump written"
            assert proc.poll() is None, proc.stderr.read()
            time.sleep(0.01)
        d = json.loads(dump.read_text().splitlines()[0])
        assert d["statistics"] is True and d["lock_count"] == 1
        (lock,) = d["locks"]
        assert lock["name"] == "bench.mutex[0]" and lock["algo"] == "innodb56"
        # The threads may not have run yet: counts are only known to be there.
        assert lock["monitored"] is True and lock["acquisitions"] >= 0
        assert lock["created"]["file"].endswith("locks.c")
    finally:
        proc.kill()
        proc.communicate()


def test_watchdog_from_the_environment_reports_long_holds(tmp_path):
    out_file = tmp_path / "watchdog.txt"
    env = {**os.environ, "LOCKLAB_MONITOR": "1", "LOCKLAB_WATCHDOG": "2,1",
           "LOCKLAB_MONITOR_OUT": str(out_file)}
    # Two threads take turns holding one lock for 20 ms: the other waits ~20 ms each time.
    out = bench("bench", "--lock", "futex", "--threads", "2", "--mutexes", "1", "--hold-ns",
                "20000000", "--iterations", "10", "--json", env=env)
    assert out.returncode == 0, out.stderr
    text = out_file.read_text()
    assert "locklab watchdog: lock 1 'bench.mutex[0]' (futex" in text, text
    assert "bench.c:" in text and "holder thread" in text, text
