"""Results stored or shown only as measured: what the sweep, report and compare refuse.

Each case here once stored or printed a wrong result without a word, or ended in a
traceback; each must now be one `locklab: ...` line, a non-zero exit, and a store
left as it was.
"""
import os
import shutil
import signal
import sqlite3
import subprocess
import sys

import pytest

from conftest import locklab, one_line_error, rows

GRID = ["--locks", "innodb56,pthread", "--threads", "1,2", "--hold-ns", "0",
        "--duration", "0.01", "--warmup", "0"]
SERVER = ["--workload", "server", "--locks", "innodb56", "--threads", "2,8",
          "--duration", "0.01", "--warmup", "0"]


def snapshot(db):
    """Everything a database holds, to show that a refused command left it alone."""
    if not db.exists():
        return None
    return (rows(db, "SELECT * FROM runs ORDER BY id"), rows(db))


def test_monitor_from_the_environment_is_refused_unless_asked_for(fake, tmp_path):
    db = tmp_path / "l.db"
    env = {**fake.env(), "LOCKLAB_MONITOR": "1"}
    out = locklab("sweep", *GRID, "--db", db, env=env)
    assert "LOCKLAB_MONITOR=1 would run every point with the lock monitor on" in \
        one_line_error(out)
    assert not db.exists() and fake.launched() == []
    # Asked for, the points are instrumented and stored so.
    out = locklab("sweep", *GRID, "--instrument", "--db", db, env=env)
    assert out.returncode == 0, out.stderr
    assert {p["instrument"] for p in rows(db)} == {1}


def test_resume_in_a_monitored_environment_is_refused(fake, tmp_path):
    db = tmp_path / "l.db"
    env = fake.env(sleep=0)
    assert locklab("sweep", *GRID, "--db", db, env=env).returncode == 0
    before = snapshot(db)
    out = locklab("sweep", "--resume", "1", "--db", db, env={**env, "LOCKLAB_MONITOR": "on"})
    assert "LOCKLAB_MONITOR=on" in one_line_error(out)
    assert snapshot(db) == before


def test_a_point_measured_other_than_asked_fails(fake, tmp_path, monkeypatch):
    """Belt and braces: the benchmark's own word on the monitor is what gets stored."""
    from locklab.sweep import bench, store

    monkeypatch.setenv("LOCKLAB_NATIVE_DIR", str(fake.dir))
    monkeypatch.setenv("FAKE_BENCH", fake.env()["FAKE_BENCH"])
    monkeypatch.setenv("LOCKLAB_MONITOR", "1")  # past the sweep's own check, as if set late
    spec = {"duration": 0.01, "warmup": 0, "instrument": None}
    outcome = bench.run_point(store.Point("pthread", "", 2, 1, 0, 0, 0), spec)
    assert outcome["error"] == ("measured with the lock monitor on where the run asked for "
                                "it off")
    assert outcome["instrument"] is True


@pytest.mark.parametrize("extra, needle", [
    (["--gate", "innodb", "--gate", "fifo"], "--gate apply to --workload server only"),
    (["--workload-opts", "io_us=5"], "--workload-opts apply to --workload server only"),
    (["--gate", "fifo", "--workload-opts", "io_us=5"],
     "--gate and --workload-opts apply to --workload server only"),
])
def test_server_options_on_the_mutex_workload_are_refused(fake, tmp_path, extra, needle):
    db = tmp_path / "l.db"
    out = locklab("sweep", *GRID, *extra, "--db", db, env=fake.env())
    assert needle in one_line_error(out)
    assert not db.exists() and fake.launched() == []
    # "none" is no gate: the mutex workload takes it.
    out = locklab("sweep", *GRID, "--gate", "none", "--db", db, env=fake.env())
    assert out.returncode == 0, out.stderr


def test_compare_refuses_runs_of_different_workloads(fake, tmp_path):
    db = tmp_path / "l.db"
    assert locklab("sweep", *GRID, "--db", db, env=fake.env()).returncode == 0
    assert locklab("sweep", *SERVER, "--db", db, env=fake.env()).returncode == 0
    out = locklab("compare", "1", "2", "--db", db)
    assert ("run 1 measured the mutex workload and run 2 the server workload" in
            one_line_error(out))


def test_compare_matches_server_points_gate_by_gate(fake, tmp_path):
    db = tmp_path / "l.db"
    gates = ["--gate", "innodb:n=4", "--gate", "fifo:n=4"]
    assert locklab("sweep", *SERVER, *gates, "--db", db, env=fake.env()).returncode == 0
    assert locklab("sweep", *SERVER, *gates, "--db", db, env=fake.env()).returncode == 0
    out = locklab("compare", "1", "2", "--db", db)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert sum("innodb56 gate=innodb:n=4" in line for line in lines) == 2
    assert sum("innodb56 gate=fifo:n=4" in line for line in lines) == 2
    assert "4 points matched" in lines[-1] and "ops_per_sec 1.000" in lines[-1]


@pytest.mark.parametrize("args", [
    ["report", "99999999999999999999"],
    ["compare", "1", "99999999999999999999"],
    ["compare", "0", "1"],
    ["sweep", "--resume", "99999999999999999999"],
    ["report", "9223372036854775808"],
])
def test_run_ids_beyond_sqlite_are_one_line_errors(fake, tmp_path, args):
    db = tmp_path / "l.db"
    assert locklab("sweep", *GRID, "--db", db, env=fake.env()).returncode == 0
    before = snapshot(db)
    assert "is outside [1, 9223372036854775807]" in one_line_error(
        locklab(*args, "--db", db, env=fake.env()))
    assert snapshot(db) == before


def test_huge_repeat_is_refused_before_the_grid_is_built(fake, tmp_path):
    db = tmp_path / "l.db"
    out = locklab("sweep", *GRID, "--repeat", "99999999999999999999", "--db", db,
                  env=fake.env(), timeout=20)
    assert "argument --repeat: 99999999999999999999 is outside [1, 1000]" in one_line_error(out)
    assert not db.exists()


def drop_dac_override():
    """A command prefix under which root, too, meets file permissions (or None)."""
    if os.geteuid() != 0:
        return []
    setpriv = shutil.which("setpriv")
    if not setpriv:
        return None
    caps = "-dac_override,-dac_read_search"
    return [setpriv, f"--inh-caps={caps}", f"--bounding-set={caps}"]


def test_report_and_compare_read_a_database_in_a_read_only_directory(fake, tmp_path):
    prefix = drop_dac_override()
    if prefix is None:
        pytest.skip("running as root without setpriv: cannot make a directory read-only")
    folder = tmp_path / "ro"
    folder.mkdir()
    db = folder / "l.db"
    assert locklab("sweep", *GRID, "--db", db, env=fake.env()).returncode == 0
    assert locklab("sweep", *GRID, "--db", db, env=fake.env()).returncode == 0
    db.chmod(0o444)
    folder.chmod(0o555)
    try:
        def run(*args):
            return subprocess.run([*prefix, sys.executable, "-m", "locklab.cli", *map(str, args)],
                                  capture_output=True, text=True, timeout=120)
        # The prefix is honest: a write there fails.
        assert run("sweep", *GRID, "--db", folder / "new.db").returncode != 0
        out = run("compare", "1", "2", "--db", db)
        assert out.returncode == 0, out.stderr
        assert "4 points matched" in out.stdout
        out = run("report", "2", "--db", db, "--out", tmp_path / "report")
        assert out.returncode == 0, out.stderr
        assert (tmp_path / "report" / "index.html").is_file()
        assert sorted(p.name for p in folder.iterdir()) == ["l.db"]
    finally:
        folder.chmod(0o755)


def test_an_older_file_reads_read_only_with_its_columns_defaulted(fake, tmp_path):
    db = tmp_path / "l.db"
    assert locklab("sweep", *GRID, "--db", db, env=fake.env()).returncode == 0
    conn = sqlite3.connect(db)
    conn.execute("ALTER TABLE points DROP COLUMN gate_barges")
    conn.execute("ALTER TABLE points DROP COLUMN instrument")
    conn.commit()
    conn.close()
    from locklab.sweep import store
    points = store.points(store.connect(db, write=False), 1)
    assert len(points) == 4
    assert {p["instrument"] for p in points} == {0}
    assert {p["gate_barges"] for p in points} == {None}


def test_a_closed_pipe_ends_quietly(fake):
    """`locklab list | head -1`: no 'Broken pipe', and the status a SIGPIPE death gives."""
    read, write = os.pipe()
    os.close(read)
    try:
        out = subprocess.run([sys.executable, "-m", "locklab.cli", "list", "--json"],
                             stdout=write, stderr=subprocess.PIPE, text=True,
                             env=fake.env(), timeout=60)
    finally:
        os.close(write)
    assert out.stderr == ""
    assert out.returncode == 128 + signal.SIGPIPE
