"""What the sweep, report and compare refuse before they write or run anything, each
in one line that says the real cause: output paths that cannot be written, databases
that cannot be read or written or are someone else's, stored grids of the wrong
shape, grids too large to build, timeouts every point would run into, lock lists
whose options could be read as locks, comparisons with nothing in common; and what
--resume now takes (a new timeout, the failed points again)."""
import json
import sqlite3
import subprocess
import sys

import pytest

from conftest import locklab, one_line_error, rows
from test_refusals import drop_dac_override

GRID = ["--locks", "innodb56,pthread", "--threads", "1,2", "--duration", "0.01",
        "--warmup", "0"]


def swept(fake, db, *more):
    out = locklab("sweep", *GRID, *more, "--db", db, env=fake.env())
    assert out.returncode in (0, 1), out.stderr
    return out


@pytest.fixture(scope="module")
def stored_runs(tmp_path_factory):
    """A store of two runs of GRID (its bytes: each test edits a copy of its own)."""
    from conftest import Fake

    root = tmp_path_factory.mktemp("stored")
    db = root / "l.db"
    fake = Fake(root)
    swept(fake, db)
    swept(fake, db)
    sqlite3.connect(db).execute("PRAGMA wal_checkpoint(TRUNCATE)").close()
    return db.read_bytes()


def two_runs(stored_runs, tmp_path, spec=None):
    """A copy of stored_runs in TMP_PATH, run 1's spec set to SPEC (a text) if given."""
    db = tmp_path / "l.db"
    db.write_bytes(stored_runs)
    if spec is not None:
        conn = sqlite3.connect(db)
        conn.execute("UPDATE runs SET spec = ? WHERE id = 1", (spec,))
        conn.commit()
        conn.close()
    return db


def file_state(path):
    """A file's bytes and the files beside it: a refused command leaves both as they were."""
    return path.read_bytes(), sorted(p.name for p in path.parent.iterdir())


# ------------------------------------------------------------- output paths

@pytest.mark.parametrize("value, says", [
    ("", "--out '': no directory named"),
    ("{tmp}/file", "--out {tmp}/file: not a directory"),
    ("{tmp}/file/sub", "{tmp}/file is not a directory"),
])
def test_report_out_that_cannot_be_made_is_refused_before_anything(fake, tmp_path, value,
                                                                     says):
    db = tmp_path / "l.db"
    swept(fake, db)
    (tmp_path / "file").write_text("mine\n")
    before = sorted(p.name for p in tmp_path.iterdir())
    out = locklab("report", "1", "--db", db, "--out", value.format(tmp=tmp_path))
    assert says.format(tmp=tmp_path) in one_line_error(out)
    assert sorted(p.name for p in tmp_path.iterdir()) == before
    assert (tmp_path / "file").read_text() == "mine\n"


@pytest.mark.parametrize("option", ["-o", "--trace"])
@pytest.mark.parametrize("value, says", [
    ("", "'': no file named"),
    ("/nonexistent/p.out", "no such directory /nonexistent"),
    ("{tmp}", "is a directory"),
])
def test_profile_outputs_are_checked_before_the_program(tmp_path, option, value, says):
    marker = tmp_path / "ran"
    out = locklab("profile", option, value.format(tmp=tmp_path), "--", "touch", marker)
    assert says in one_line_error(out)
    assert not marker.exists()


# ------------------------------------------------------------- databases

def foreign(path, *tables):
    conn = sqlite3.connect(path)
    for table in tables:
        conn.execute(f"CREATE TABLE {table} (x)")
        conn.execute(f"INSERT INTO {table} VALUES (1)")
    conn.commit()
    conn.close()
    return path


@pytest.mark.parametrize("tables, says", [
    (("accounts",), "it holds other tables (accounts)"),
    (("runs",), "it holds other tables (runs)"),            # a table of that name alone
    (("a", "b", "c", "d", "e", "f"), "it holds other tables (a, b, c, d, e, ...)"),
])
def test_a_foreign_sqlite_file_is_never_written_into(fake, tmp_path, tables, says):
    db = foreign(tmp_path / "other.db", *tables)
    before = file_state(db)
    for args in (["sweep", *GRID], ["sweep", "--resume", "1"],
                 ["report", "1", "--out", tmp_path / "r"], ["compare", "1", "2"]):
        line = one_line_error(locklab(*args, "--db", db, env=fake.env()))
        assert f"{db} is not a locklab database: {says}" in line
        assert file_state(db) == before
    assert fake.launched() == []


def test_an_empty_file_becomes_a_store(fake, tmp_path):
    db = tmp_path / "empty.db"
    db.touch()
    swept(fake, db)
    assert len(rows(db)) == 4


@pytest.mark.parametrize("kind, args, says", [
    ("folder", ["report", "1"], "{db} is a directory, not a database file"),
    ("folder", ["sweep", *GRID], "{db} is a directory, not a database file"),
    ("no folder", ["sweep", *GRID], "cannot create {db}: no such directory {db.parent}"),
    ("zip", ["sweep", *GRID], "{db} is not a locklab database (not an SQLite file)"),
    ("zip", ["compare", "1", "2"], "{db} is not a locklab database (not an SQLite file)"),
])
def test_a_database_path_that_cannot_serve_says_why(fake, tmp_path, kind, args, says):
    db = tmp_path / "l.db"
    if kind == "folder":
        db.mkdir()
    elif kind == "no folder":
        db = tmp_path / "missing" / "l.db"
    else:
        db.write_bytes(b"PK\x03\x04")
    line = one_line_error(locklab(*args, "--db", db, env=fake.env()))
    assert says.format(db=db) in line
    assert fake.launched() == []


def test_an_unreadable_or_read_only_database_says_so(fake, tmp_path):
    prefix = drop_dac_override()
    if prefix is None:
        pytest.skip("running as root without setpriv: cannot take file permissions away")
    db = tmp_path / "l.db"
    swept(fake, db)

    def run(*args):
        return subprocess.run([*prefix, sys.executable, "-m", "locklab.cli", *map(str, args)],
                              capture_output=True, text=True, timeout=120, env=fake.env())
    db.chmod(0o444)
    line = one_line_error(run("sweep", "--resume", "1", "--db", db))
    assert line == f"locklab: {db} is read-only, and a sweep writes its points into it"
    db.chmod(0)
    for args in (["report", "1", "--out", tmp_path / "r"], ["sweep", "--resume", "1"],
                 ["sweep", *GRID]):
        line = one_line_error(run(*args, "--db", db))
        assert line == f"locklab: cannot read {db}: Permission denied"
    db.chmod(0o644)
    tmp_path.chmod(0o555)
    try:
        line = one_line_error(run("sweep", *GRID, "--db", tmp_path / "new.db"))
        assert line == (f"locklab: cannot create {tmp_path / 'new.db'}: the directory "
                        f"{tmp_path} is not writable")
    finally:
        tmp_path.chmod(0o755)


# ------------------------------------------------------------- stored grids

@pytest.mark.parametrize("spec, says", [
    ("", "run 1's spec is missing"),
    ("{", "run 1's spec is not JSON"),
    ("[1, 2]", "run 1's spec is list, not an object"),
    ("5", "run 1's spec is int, not an object"),
])
def test_a_spec_that_is_no_object_is_one_line_everywhere(fake, stored_runs, tmp_path, spec,
                                                         says):
    db = two_runs(stored_runs, tmp_path, spec)
    for args in (["report", "1", "--out", tmp_path / "r"], ["compare", "1", "2"],
                 ["sweep", "--resume", "1"], ["sweep", "--resume", "1", "--dry-run"]):
        line = one_line_error(locklab(*args, "--db", db, env=fake.env()))
        assert line.startswith(f"locklab: {db}: {says}"), (args, line)


@pytest.mark.parametrize("change, says", [
    (lambda s: s.pop("locks"), "lacks locks"),
    (lambda s: s.pop("mutexes"), "lacks mutexes"),
    (lambda s: s.update(locks="innodb56"), "has locks that is not a list of strings"),
    (lambda s: s.update(threads=[1, "2"]), "has threads that is not a list of whole numbers"),
    (lambda s: s.update(repeat=0), "has repeat that is not a whole number of passes"),
    (lambda s: s.update(duration="1"), "has duration that is not a number of seconds"),
    (lambda s: s.update(shapes={"mutexes": [1]}), "has shapes that is not a list of objects"),
    (lambda s: s.update(also=[{"colour": 1}]), "has also[0].colour, which no grid has"),
    (lambda s: s.update(also=[{"threads": "all"}]),
     "has also[0].threads that is not a list of whole numbers"),
    (lambda s: s.update(programs=["memcached"]), "lacks program_tests"),
])
def test_a_spec_of_the_wrong_shape_is_one_line_where_the_grid_is_walked(
        fake, stored_runs, tmp_path, change, says):
    (run,) = rows(two_runs(stored_runs, tmp_path), "SELECT spec FROM runs WHERE id = 1")
    spec = json.loads(run["spec"])
    change(spec)
    db = two_runs(stored_runs, tmp_path, json.dumps(spec))
    for args in (["report", "1", "--out", tmp_path / "r"], ["sweep", "--resume", "1"]):
        line = one_line_error(locklab(*args, "--db", db, env=fake.env()))
        assert line == f"locklab: {db}: run 1's grid (its spec) {says}", (args, line)
    # compare reads only what the points were measured with: it goes on, or refuses
    # runs measured differently.
    out = locklab("compare", "1", "2", "--db", db, env=fake.env())
    assert out.returncode == 0 or "measured their points differently" in one_line_error(out)


# ------------------------------------------------------------- grids and timeouts

@pytest.mark.parametrize("args", [
    ["--threads", ",".join(map(str, range(1, 1001))), "--hold-ns",
     ",".join(map(str, range(1001)))],
    ["--repeat", "1000", "--threads", ",".join(map(str, range(1, 201))), "--locks", "all"],
    ["--program", "memcached", "--clients", ",".join(map(str, range(1, 9001))),
     "--repeat", "3"],
])
@pytest.mark.parametrize("dry", [[], ["--dry-run"]])
def test_a_grid_past_the_limit_is_refused_before_it_is_built(fake, tmp_path, args, dry):
    db = tmp_path / "l.db"
    out = locklab("sweep", *args, *dry, "--db", db, env=fake.env(), timeout=30)
    line = one_line_error(out)
    assert "points, more than the 100000 one sweep may run" in line
    assert not db.exists() and fake.launched() == []


def test_a_stored_grid_past_the_limit_is_refused(fake, tmp_path):
    db = tmp_path / "l.db"
    swept(fake, db)
    (run,) = rows(db, "SELECT spec FROM runs")
    spec = dict(json.loads(run["spec"]), repeat=10 ** 9)
    conn = sqlite3.connect(db)
    conn.execute("UPDATE runs SET spec = ?", (json.dumps(spec),))
    conn.commit()
    conn.close()
    for args in (["sweep", "--resume", "1"], ["sweep", "--resume", "1", "--dry-run"],
                 ["report", "1", "--out", tmp_path / "r"]):
        line = one_line_error(locklab(*args, "--db", db, env=fake.env(), timeout=30))
        assert "the grid has 4000000000 points, more than the 100000" in line
    assert not (tmp_path / "r").exists()


@pytest.mark.parametrize("timeout, says", [
    ("0.5", "--timeout 0.5 would kill every point: a point runs 1 s"),
    ("1", "--timeout 1 would kill every point: a point runs 1 s"),
])
def test_a_timeout_every_point_would_run_into_is_refused(fake, tmp_path, timeout, says):
    db = tmp_path / "l.db"
    out = locklab("sweep", *GRID[:4], "--duration", "0.8", "--warmup", "0.2", "--timeout",
                  timeout, "--db", db, env=fake.env())
    assert says in one_line_error(out)
    assert not db.exists()
    # A gate's own longer warm-up counts too.
    out = locklab("sweep", "--preset", "concurrency-quick", "--timeout", "1", "--db", db,
                  env=fake.env())
    assert "a point runs 1.7 s" in one_line_error(out)


def test_resume_takes_a_new_timeout_and_runs_the_failed_points_again(fake, tmp_path):
    db = tmp_path / "l.db"
    out = locklab("sweep", *GRID, "--db", db,
                  env=fake.env(crash=[{"lock": "pthread", "threads": 2}]))
    assert out.returncode == 1
    assert [p["ok"] for p in rows(db)] == [1, 1, 1, 0]
    # Without --retry-failed, a failed point stays done.
    assert locklab("sweep", "--resume", "1", "--db", db, env=fake.env()).returncode == 1
    assert len(fake.launched()) == 4
    out = locklab("sweep", "--resume", "1", "--timeout", "0.001", "--db", db, env=fake.env())
    assert "--timeout 0.001 would kill every point" in one_line_error(out)
    out = locklab("sweep", "--resume", "1", "--retry-failed", "--timeout", "5", "--dry-run",
                  "--db", db, env=fake.env())
    assert "1 of 4 points left" in out.stdout
    out = locklab("sweep", "--resume", "1", "--retry-failed", "--timeout", "5", "--db", db,
                  env=fake.env())
    assert out.returncode == 0, out.stderr
    assert "run 1: 1 failed points to run again" in out.stderr
    assert [(p["lock"], p["threads"], p["ok"]) for p in rows(db)][-1] == ("pthread", 2, 1)
    assert len(rows(db)) == 4 and len(fake.launched()) == 5
    assert json.loads(rows(db, "SELECT spec FROM runs")[0]["spec"])["timeout"] == 5
    line = one_line_error(locklab("sweep", *GRID, "--retry-failed", "--db", db,
                                  env=fake.env()))
    assert "--retry-failed is for --resume RUN" in line


# ------------------------------------------------------------- lock lists

@pytest.mark.parametrize("locks, shown", [
    ("innodb56:sync_spin_loops=80,spin=tas", "innodb56:sync_spin_loops=80,spin=tas"),
    ("innodb56:sync_spin_loops=80,spin=tas,pthread",
     "innodb56:sync_spin_loops=80,spin=tas, pthread"),
    ("pthread,innodb56:spin=tas", "pthread, innodb56:spin=tas"),
    ("pthread, futex", "pthread, futex"),
])
def test_a_locks_options_stay_with_it(fake, tmp_path, locks, shown):
    out = locklab("sweep", "--locks", locks, "--dry-run", env=fake.env())
    assert out.returncode == 0, out.stderr
    assert f"locks         {shown}\n" in out.stdout


@pytest.mark.parametrize("option", ["--locks", "--add-locks"])
@pytest.mark.parametrize("locks, says", [
    ("spin=tas,pthread", "'spin=tas' in 'spin=tas,pthread' is an option with no lock before it"),
    ("pthread,spin=tas", "'spin=tas' in 'pthread,spin=tas' is an option with no lock before it"),
    ("pthread,,futex", "'pthread,,futex' has an empty name"),
])
def test_an_option_with_no_lock_before_it_is_refused(fake, tmp_path, option, locks, says):
    line = one_line_error(locklab("sweep", option, locks, "--dry-run", env=fake.env()))
    assert says in line


# ------------------------------------------------------------- compare

def test_compare_of_runs_with_no_point_in_common_is_an_error(fake, tmp_path):
    db = tmp_path / "l.db"
    swept(fake, db)
    out = locklab("sweep", "--locks", "futex", "--threads", "4", "--duration", "0.01",
                  "--warmup", "0", "--db", db, env=fake.env())
    assert out.returncode == 0, out.stderr
    for more in ([], ["--json"]):
        line = one_line_error(locklab("compare", "1", "2", *more, "--db", db, env=fake.env()))
        assert line == ("locklab: run 1 and run 2 have no point in common (4 points only in "
                        "run 1, 1 only in run 2): nothing to compare")
