"""`locklab sweep` against the fake locklab-bench: storage, failures, interruption, resume."""
import json
import signal
import subprocess
import sys
import time

import pytest

from conftest import locklab, one_line_error, rows, stored

GRID = ["--locks", "innodb56,pthread", "--threads", "1,2", "--hold-ns", "0,1000",
        "--duration", "0.01", "--warmup", "0"]


def test_sweep_stores_run_and_points(fake, tmp_path):
    db = tmp_path / "l.db"
    out = locklab("sweep", *GRID, "--db", db, env=fake.env())
    assert out.returncode == 0, out.stderr
    points = rows(db)
    assert len(points) == 8
    assert all(p["ok"] and p["error"] is None for p in points)
    p = next(p for p in points if p["lock"] == "innodb56" and p["threads"] == 2
             and p["hold_ns"] == 1000)
    assert p["ns_per_iter"] == 1040.0 and p["mutex_ok"] == 1 and p["wall_s"] > 0
    assert json.loads(p["raw"])["version"] == "fake"
    (run,) = rows(db, "SELECT * FROM runs")
    assert run["finished"] and run["cores"] >= 1 and run["cpu_model"] and run["glibc"]
    assert json.loads(run["floor"])["atomic_rmw_ns"] == 10.0
    assert json.loads(run["spec"])["locks"] == ["innodb56", "pthread"]
    # Not a terminal: one progress line per point, then the summary.
    progress = [line for line in out.stderr.splitlines() if line.startswith("[")]
    assert len(progress) == 8 and progress[0].startswith("[1/8] innodb56 t=1 m=1 h=0  ETA ")


def test_failed_points_are_recorded_and_the_sweep_goes_on(fake, tmp_path):
    db = tmp_path / "l.db"
    env = fake.env(
        crash=[{"lock": "pthread", "threads": 2, "hold_ns": 0}],
        hang=[{"lock": "innodb56", "threads": 2, "hold_ns": 0}],
        badjson=[{"lock": "pthread", "threads": 1, "hold_ns": 1000}],
        violate=[{"lock": "innodb56", "threads": 1, "hold_ns": 1000}],
        fail=[{"lock": "pthread", "threads": 2, "hold_ns": 1000}],
    )
    start = time.monotonic()
    out = locklab("sweep", *GRID, "--timeout", "1.5", "--db", db, env=env)
    assert time.monotonic() - start < 30
    assert out.returncode == 1, out.stderr
    points = {(p["lock"], p["threads"], p["hold_ns"]): p for p in rows(db)}
    assert len(points) == 8
    errors = {k: p["error"] for k, p in points.items() if not p["ok"]}
    assert errors == {
        ("pthread", 2, 0): "killed by SIGSEGV",
        ("innodb56", 2, 0): "timed out after 1.5 s, killed",
        ("pthread", 1, 1000): "bad JSON from locklab-bench: '{\"lock\": \"truncated'",
        ("innodb56", 1, 1000): "mutual exclusion violated",
        ("pthread", 2, 1000): "could not start the threads",
    }
    # The violation's numbers are kept for inspection.
    assert points[("innodb56", 1, 1000)]["mutex_ok"] == 0
    assert points[("innodb56", 1, 1000)]["ns_per_iter"] == 1020.0
    # Each failure is reported as it happens, and the exit status says some failed.
    assert "locklab: pthread t=2 m=1 h=0: killed by SIGSEGV" in out.stderr
    assert "5 failed" in out.stderr


def key(p):
    return (p["lock"], p["lock_opts"], p["threads"], p["mutexes"], p["hold_ns"], p["outside_ns"])


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGKILL])
def test_interrupted_sweep_resumes_without_rerunning(fake, tmp_path, sig):
    db = tmp_path / "l.db"
    env = fake.env(sleep=0.25)
    # 24 points of 0.25 s: ~6 s for the signal to land mid-sweep on a loaded machine.
    grid = ["--locks", "innodb56,pthread", "--threads", "1,2,3,4,5,6", "--hold-ns", "0,1000",
            "--repeat", "1", "--duration", "0.01", "--warmup", "0"]
    # A job started in the background by a non-interactive shell (as CI may start us)
    # inherits SIGINT ignored, and Python keeps it so: give the sweep Ctrl-C back.
    proc = subprocess.Popen([sys.executable, "-m", "locklab.cli", "sweep", *grid, "--db", str(db)],
                            env=env, stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.monotonic() + 60
    while stored(db) < 3:
        assert time.monotonic() < deadline and proc.poll() is None
        time.sleep(0.05)
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=30)
    time.sleep(0.3)  # a benchmark orphaned by SIGKILL dies of its parent-death signal
    before = rows(db)
    assert 3 <= len(before) < 24
    assert all(p["ok"] for p in before)  # the point cut short is not stored as failed
    if sig == signal.SIGINT:
        assert proc.returncode == 130
        assert f"resume with: locklab sweep --resume 1 --db {db}" in err
    else:
        assert proc.returncode == -signal.SIGKILL
    (run,) = rows(db, "SELECT * FROM runs")
    assert run["finished"] is None
    launched_before = len(fake.launched())

    out = locklab("sweep", "--resume", "latest", "--db", db, env=env)
    assert out.returncode == 0, out.stderr
    after = rows(db)
    assert len(after) == 24 and len({key(p) for p in after}) == 24
    # The points stored before the interruption were kept as they were...
    assert after[:len(before)] == before
    # ...and the resumed sweep started only the missing ones, each once.
    rerun = [key(p) for p in fake.launched()[launched_before:]]
    assert sorted(rerun) == sorted(key(p) for p in after[len(before):])
    assert f"[{len(before) + 1:2d}/24]" in out.stderr
    assert rows(db, "SELECT finished FROM runs")[0]["finished"]


def test_resume_of_a_finished_run_runs_nothing(fake, tmp_path):
    db = tmp_path / "l.db"
    assert locklab("sweep", *GRID, "--db", db, env=fake.env()).returncode == 0
    launched = len(fake.launched())
    out = locklab("sweep", "--resume", "1", "--db", db, env=fake.env())
    assert out.returncode == 0, out.stderr
    assert len(fake.launched()) == launched and len(rows(db)) == 8


def test_presets_and_overrides(fake, tmp_path):
    from locklab.sweep import presets

    study = presets.spec("innodb-mutex", {"add_locks": ["futex", "pthread"], "threads": None})
    assert study["locks"] == ["innodb56", "pthread", "pthread-adaptive", "futex"]
    assert len(study["threads"]) == 15 and study["mutexes"] == [1, 2, 4, 8, 16]
    # --locks replaces the preset's locks, this preset's as every other's.
    assert presets.spec("innodb-mutex", {"locks": ["futex"]})["locks"] == ["futex"]
    quick = presets.spec("quick", {"threads": [1, 2], "duration": 0.5})
    assert quick["threads"] == [1, 2] and quick["duration"] == 0.5
    assert quick["repeat"] == 3  # the verdict judges margins by the repeats' spread
    assert quick["locks"] == ["innodb56", "pthread", "pthread-adaptive", "futex", "ll"]
    # 'all' is every lock the tool lists (the fake lists five).
    db = tmp_path / "l.db"
    out = locklab("sweep", "--preset", "peers", "--threads", "1", "--hold-ns", "0",
                  "--duration", "0.01", "--warmup", "0", "--db", db, env=fake.env())
    assert out.returncode == 0, out.stderr
    assert {p["lock"] for p in rows(db)} == {"pthread", "pthread-adaptive", "innodb56",
                                             "futex", "ttas"}


def test_lock_opts_variants_are_points_of_their_own(fake, tmp_path):
    db = tmp_path / "l.db"
    out = locklab("sweep", "--locks", "innodb56", "--threads", "1", "--lock-opts", "spin=tas",
                  "--lock-opts", "sync_spin_loops=0,spin=yield", "--duration", "0.01",
                  "--db", db, env=fake.env())
    assert out.returncode == 0, out.stderr
    assert [p["lock_opts"] for p in rows(db)] == ["spin=tas", "sync_spin_loops=0,spin=yield"]
    assert "innodb56 [spin=tas] t=1" in out.stderr


@pytest.mark.parametrize("args, needle", [
    (["sweep", "--locks", "nosuch"], "unknown lock 'nosuch'"),
    (["sweep", "--locks", "ttas", "--lock-opts", "bogus=1"], "unknown option 'bogus'"),
    (["sweep", "--threads", "1,x"], "argument --threads: '1,x' is not a comma-separated"),
    (["sweep", "--hold-ns", "-5"], "argument --hold-ns: -5 is outside [0, 1000000000]"),
    (["sweep", "--threads", "0"], "argument --threads: 0 is outside [1, 100000]"),
    (["sweep", "--duration", "0"], "argument --duration: 0 is outside [0.001, 86400]"),
    (["sweep", "--repeat", "two"], "argument --repeat: 'two' is not a number"),
    (["sweep", "--preset", "fast"], "argument --preset: invalid choice: 'fast'"),
    (["sweep", "--resume", "1", "--threads", "4"], "drop --threads"),
    (["sweep", "--resume", "1"], "no database at"),
    (["report", "latest"], "no database at"),
    (["compare", "1", "2"], "no database at"),
    (["frobnicate"], "invalid choice: 'frobnicate'"),
])
def test_bad_input_is_one_line_error(fake, tmp_path, args, needle):
    out = locklab(*args, "--db", tmp_path / "missing.db", env=fake.env())
    assert needle in one_line_error(out)
    assert not (tmp_path / "missing.db").exists()
    assert fake.launched() == []


@pytest.mark.parametrize("args, needle", [
    (["report", "7"], "no run 7 in the database (runs 1-1)"),
    (["report", "seven"], "run 'seven' is neither a run number, 'latest' nor -N"),
    (["report", "-2"], "no run -2: the database holds 1 run"),
    (["sweep", "--resume", "2"], "no run 2"),
    (["compare", "1", "9"], "no run 9"),
])
def test_unknown_run_is_one_line_error(fake, tmp_path, args, needle):
    db = tmp_path / "l.db"
    assert locklab("sweep", *GRID, "--db", db, env=fake.env()).returncode == 0
    out = locklab(*args, "--db", db, env=fake.env())
    assert needle in one_line_error(out)


def test_not_a_database_is_one_line_error(fake, tmp_path):
    db = tmp_path / "notes.txt"
    db.write_text("not sqlite, just some text that is long enough to have a header\n" * 10)
    assert "is not a locklab database" in one_line_error(locklab("report", "1", "--db", db))


def test_bench_and_floor_relay_output_and_status(fake):
    point = ["--lock", "innodb56", "--threads", "2", "--mutexes", "1", "--hold-ns", "0",
             "--duration", "0.01", "--json"]
    out = locklab("bench", *point, env=fake.env())
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["ns_per_iter"] == 40.0
    out = locklab("bench", *point, env=fake.env(violate=[{"lock": "innodb56"}]))
    assert out.returncode == 1 and json.loads(out.stdout)["mutex_ok"] is False
    out = locklab("bench", *point, env=fake.env(crash=[{"lock": "innodb56"}]))
    assert out.returncode == 128 + signal.SIGSEGV
    out = locklab("bench", "--lock", "nosuch", "--threads", "1", "--mutexes", "1",
                  "--hold-ns", "0", env=fake.env())
    assert "unknown lock 'nosuch'" in one_line_error(out)
    out = locklab("floor", "--json", env=fake.env())
    assert out.returncode == 0 and json.loads(out.stdout)["cpus"] >= 1
    assert "unrecognized arguments" in one_line_error(locklab("floor", "--bogus", env=fake.env()))


def test_two_sweeps_filling_one_run_do_not_store_a_point_twice(fake, tmp_path):
    db = tmp_path / "l.db"
    env = fake.env(sleep=0.3)
    first = subprocess.Popen([sys.executable, "-m", "locklab.cli", "sweep", *GRID, "--db", str(db)],
                             env=env, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while stored(db) < 2:
        assert time.monotonic() < deadline and first.poll() is None
        time.sleep(0.05)
    second = locklab("sweep", "--resume", "1", "--db", db, env=env)
    _, first_err = first.communicate(timeout=60)
    # Whichever stores a point second stops, with a one-line reason.
    status, err = ((second.returncode, second.stderr) if second.returncode
                   else (first.returncode, first_err))
    assert status == 2
    assert "is already in run 1: is another sweep filling it?" in err.splitlines()[-1]
    points = rows(db)
    assert len({key(p) for p in points}) == len(points)
