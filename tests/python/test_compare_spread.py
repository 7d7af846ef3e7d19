"""`locklab compare`: runs measured differently refused or warned of, every ratio with its
spread, and ratios inside the noise marked."""
import json
import sqlite3

import pytest

from conftest import locklab, one_line_error, rows
from locklab.sweep import compare, store
from locklab.sweep.store import Point

GRID = ["--locks", "innodb56,pthread", "--threads", "1,2", "--hold-ns", "0",
        "--warmup", "0"]
MACHINE = {"cpu_model": "test", "cores": 2, "kernel": "Linux 6.1", "glibc": "glibc 2.36",
           "version": "0"}


@pytest.mark.parametrize("a, b, needle", [
    (["--duration", "0.01"], ["--duration", "0.02"], "point duration 0.01 s in run 1, 0.02 s in run 2"),
    (["--duration", "0.01"], ["--duration", "0.01", "--warmup", "0.01"],
     "warm-up 0 s in run 1, 0.01 s in run 2"),
])
def test_runs_of_other_point_lengths_are_refused(fake, tmp_path, a, b, needle):
    db = tmp_path / "l.db"
    for extra in (a, b):
        out = locklab("sweep", *GRID, *extra, "--db", db, env=fake.env())
        assert out.returncode == 0, out.stderr
    line = one_line_error(locklab("compare", "1", "2", "--db", db))
    assert needle in line and "--allow-mismatch" in line
    # Told to go on, it compares, and still says how the runs differ.
    out = locklab("compare", "1", "2", "--allow-mismatch", "--db", db)
    assert out.returncode == 0, out.stderr
    assert f"locklab: warning: the runs differ: {needle}" in out.stderr.splitlines()
    assert "4 points matched" in out.stdout.splitlines()[-1]
    out = locklab("compare", "1", "2", "--allow-mismatch", "--json", "--db", db)
    assert json.loads(out.stdout)["differences"] == [needle]


def test_other_passes_and_another_machine_are_warned_of(fake, tmp_path):
    db = tmp_path / "l.db"
    for extra in ([], ["--repeat", "3"]):
        out = locklab("sweep", *GRID, "--duration", "0.01", *extra, "--db", db, env=fake.env())
        assert out.returncode == 0, out.stderr
    conn = sqlite3.connect(db)
    conn.execute("UPDATE runs SET cores = cores + 6, kernel = 'Linux 9.9' WHERE id = 2")
    conn.commit()
    conn.close()
    out = locklab("compare", "1", "2", "--db", db)
    assert out.returncode == 0, out.stderr
    cores = rows(db, "SELECT cores FROM runs ORDER BY id")
    warnings = out.stderr.splitlines()
    assert warnings[0] == "locklab: warning: the runs differ: passes 1 in run 1, 3 in run 2"
    assert (f"locklab: warning: the runs differ: cores {cores[0]['cores']} in run 1, "
            f"{cores[1]['cores']} in run 2") in warnings
    assert any(w.startswith("locklab: warning: the runs differ: kernel ") and
               w.endswith(", Linux 9.9 in run 2") for w in warnings)
    assert len(warnings) == 3


def make_runs(db, a_passes: dict, b_passes: dict):
    """Runs 1 and 2 of one grid: each lock at 4 threads with these ns per iteration, a
    pass each."""
    conn = store.connect(db, create=True)
    spec = {"duration": 0.5, "warmup": 0.1, "repeat": 3}
    for run, passes in ((1, a_passes), (2, b_passes)):
        assert store.new_run(conn, spec, MACHINE, {}) == run
        for lock, values in passes.items():
            for rep, ns in enumerate(values):
                store.record_point(conn, run, Point(lock, "", 4, 1, 0, 0, rep), error=None,
                                   wall_s=0.6, raw=None,
                                   result={"ns_per_iter": ns, "ops_per_sec": 1e9 / ns})
    conn.close()


def test_each_ratio_has_its_spread_and_noise_is_marked(tmp_path):
    db = tmp_path / "l.db"
    make_runs(db,
              # same: one pass of B was slow, and its median with it; the other passes
              # are A's own. faster: every pass of B beats every pass of A. once: one
              # pass each.
              {"same": [100.0, 102.0, 98.0], "faster": [100.0, 101.0, 99.0], "once": [100.0]},
              {"same": [186.0, 100.0, 190.0], "faster": [50.0, 51.0, 49.0], "once": [186.0]})
    result = compare.ratios(store.connect(db, write=False), 1, 2)
    by = {r["lock"]: r for r in result["points"]}
    same = by["same"]
    assert same["ns_per_iter_ratio"] == pytest.approx(186 / 100)
    assert same["ns_per_iter_spread"] == pytest.approx([100 / 102, 190 / 98])
    assert same["ns_per_iter_mark"] == compare.IN_NOISE
    assert same["ops_per_sec_mark"] == compare.IN_NOISE
    faster = by["faster"]
    assert faster["ns_per_iter_spread"] == pytest.approx([49 / 101, 51 / 99])
    assert faster["ns_per_iter_mark"] == "" and faster["ops_per_sec_mark"] == ""
    once = by["once"]
    assert once["ns_per_iter_ratio"] == pytest.approx(1.86)
    assert once["ns_per_iter_spread"] is None and once["ns_per_iter_mark"] == compare.NO_SPREAD
    assert (once["passes_a"], once["passes_b"]) == (1, 1)

    out = locklab("compare", "1", "2", "--db", db)
    assert out.returncode == 0, out.stderr
    # lock threads mutexes hold outside | ns/iter A, B, B/A+mark, spread | ops/s the same
    table = {line.split()[0]: line.split()[5:] for line in out.stdout.splitlines()[1:4]}
    assert table["same"][:4] == ["100.0", "186.0", "1.86~", "0.98-1.94"]
    assert table["same"][6:] == ["0.54~", "0.52-1.02"]
    assert table["faster"][2:4] == ["0.50", "0.49-0.52"]
    assert table["once"][2:4] == ["1.86?", "-"]
    notes = out.stdout.splitlines()[4:-1]
    assert notes[0].startswith("~ 1 of 3 ratios lie inside their spread")
    assert notes[1].startswith("? 1 of 3 ratios come from one pass of A or of B")
    assert out.stdout.splitlines()[-1].startswith("run 2 / run 1: 3 points matched")


def test_a_run_compared_with_itself_says_its_ratios_are_noise(fake, tmp_path):
    db = tmp_path / "l.db"
    out = locklab("sweep", *GRID, "--duration", "0.01", "--repeat", "2", "--db", db,
                  env=fake.env())
    assert out.returncode == 0, out.stderr
    out = locklab("compare", "latest", "-1", "--db", db)
    assert out.returncode == 0, out.stderr
    assert out.stderr == ""
    lines = out.stdout.splitlines()
    assert all(line.count("1.00~") == 2 for line in lines[1:5])
    assert lines[5].startswith("~ 4 of 4 ratios lie inside their spread")
