"""The rw preset: its grid and key, its store columns, ll's section of the report, refusals."""
import re
import sqlite3

import pytest

from conftest import locklab, one_line_error, rows, target_cell
from locklab.report import rwlocks
from locklab.sweep import bench, compare, presets, store
from locklab.sweep.progress import label

RWLOCKS = ["pthread", "pthread:prefer=writer-nonrecursive", "ll", "partitioned", "bravo",
           "innodb56-rw"]
WRITER = "prefer=writer-nonrecursive"


def test_the_preset_grid():
    spec = presets.spec("rw", {})
    assert spec["workload"] == "rw" and spec["locks"] == RWLOCKS
    assert spec["threads"] == [1, 2, 4, 16, 64, 256, 1024]
    assert spec["read_pct"] == [100, 99.9, 99, 90, 50] and spec["hold_ns"] == [0, 1000]
    points = bench.grid(spec)
    assert len(points) == 6 * 7 * 5 * 2 * 3
    # glibc's rwlock in both preferences, as two variants of one lock.
    assert {(p.lock, p.lock_opts) for p in points} == {
        ("pthread", ""), ("pthread", WRITER), ("ll", ""), ("partitioned", ""), ("bravo", ""),
        ("innodb56-rw", "")}
    # The read fraction is in the key: the workload options.
    assert {p.workload_opts for p in points} == {
        "read_pct=100", "read_pct=99.9", "read_pct=99", "read_pct=90", "read_pct=50"}
    assert all(p.workload == "rw" and p.mutexes == 1 and p.gate == "" for p in points)
    third = len(points) // 3
    for rep in range(3):  # passes outermost, every point once in each
        one_pass = points[rep * third:(rep + 1) * third]
        assert {p.rep for p in one_pass} == {rep}
        assert len({p._replace(rep=0) for p in one_pass}) == third
    # Its nominal length leaves 40% of 10 minutes for starting the processes and their
    # threads (measured: docs/rwlocks.md).
    assert len(points) * (spec["duration"] + spec["warmup"]) <= 0.6 * 600


def test_the_rw_point_runs_as_its_workload_asks():
    spec = presets.spec("rw", {})
    read_only, mixed = (store.Point("pthread", WRITER, 64, 1, 1000, 0, 0, "rw", "", "",
                                    store.rw_opts(pct)) for pct in (100, 99.9))
    args = bench.bench_args(mixed, spec)
    assert args[:5] == ["bench", "--workload", "rw", "--lock", "pthread"]
    assert args[args.index("--lock-opts") + 1] == WRITER
    assert args[args.index("--read-pct") + 1] == "99.9" and "--mutexes" not in args
    assert args[args.index("--sample-every") + 1] == "16"
    ro = bench.bench_args(read_only, spec)
    assert ro[ro.index("--sample-every") + 1] == str(1 << 20)  # no clock in a read loop
    assert label(mixed, 3) == "pthread [prefer=writer-nonrecursive] t=64 h=1000 rw " \
                                    "99.9% reads r=1/3"


def test_given_axes_replace_the_presets():
    spec = presets.spec("rw", {"locks": ["ll", "bravo"], "read_pct": [50.0]})
    assert {(p.lock, p.workload_opts) for p in bench.grid(spec)} == {
        ("ll", "read_pct=50"), ("bravo", "read_pct=50")}
    # --workload rw on the default grid takes the rwlocks and read fractions of the preset.
    spec = presets.spec(None, {"workload": "rw"})
    assert spec["locks"] == RWLOCKS and spec["read_pct"] == presets.RW["read_pct"]
    assert presets.resolve_locks(["all"], [{"name": "ll", "parks": True}]) == ["ll"]


def test_rw_points_never_meet_mutex_points(fake, tmp_path):
    db = tmp_path / "l.db"
    common = ["--threads", "4", "--hold-ns", "0", "--duration", "0.01", "--warmup", "0",
              "--db", db]
    out = locklab("sweep", "--preset", "rw", "--locks", "pthread,pthread:" + WRITER + ",ll",
                  "--read-pct", "99.9,100", "--repeat", "1", *common, env=fake.env())
    assert out.returncode == 0, out.stderr
    launched = fake.launched()
    assert [(p["lock"], p["lock_opts"], p["read_pct"], p["sample_every"]) for p in launched] == [
        ("pthread", "", 99.9, 16), ("pthread", WRITER, 99.9, 16), ("ll", "", 99.9, 16),
        ("pthread", "", 100, 1 << 20), ("pthread", WRITER, 100, 1 << 20),
        ("ll", "", 100, 1 << 20)]
    stored = rows(db)
    assert len(stored) == 6 and all(p["ok"] and p["workload"] == "rw" for p in stored)
    ll = next(p for p in stored if p["lock"] == "ll" and p["workload_opts"] == "read_pct=99.9")
    # The fake's figures, in the rw columns and the shared ones.
    assert ll["read_ns_per_op"] == 10.0 and ll["write_ns_per_op"] == 100.0
    assert ll["ns_per_iter"] == pytest.approx(0.999 * 10 + 0.001 * 100)
    assert ll["write_wait_ns_max"] == 4000.0 and ll["write_jain"] == 0.9
    assert ll["exclusion_ok"] == 1 and ll["read_ops"] > 0 and ll["mutex_ok"] is None
    assert ll["threads_unscheduled"] == 1
    # A line without it (the diagnostic not asked for) is a whole point, the column empty.
    glibc = next(p for p in stored if p["lock"] == "pthread" and not p["lock_opts"])
    assert glibc["ok"] and glibc["threads_unscheduled"] is None
    # A mutex run of pthread at the same threads and hold: nothing matches.
    out = locklab("sweep", "--locks", "pthread", *common, env=fake.env())
    assert out.returncode == 0, out.stderr
    assert rows(db)[-1]["read_ns_per_op"] is None and rows(db)[-1]["exclusion_ok"] is None
    assert "no point of one compares" in one_line_error(locklab("compare", "1", "2", "--db", db))
    # Two rw runs match read fraction by read fraction, glibc's kinds one by one.
    out = locklab("sweep", "--preset", "rw", "--locks", "pthread,pthread:" + WRITER,
                  "--read-pct", "99.9", "--repeat", "1", *common, env=fake.env())
    assert out.returncode == 0, out.stderr
    result = compare.ratios(store.connect(db, write=False), 1, 3)
    assert [(r["lock"], r["lock_opts_a"], r["workload_opts"]) for r in result["points"]] == [
        ("pthread", "", "read_pct=99.9"), ("pthread", WRITER, "read_pct=99.9")]
    assert result["only_a"] == 4 and result["only_b"] == 0


def test_an_rw_run_resumes_with_its_own_grid(fake, tmp_path):
    db = tmp_path / "l.db"
    out = locklab("sweep", "--preset", "rw", "--locks", "ll,bravo", "--threads", "2",
                  "--read-pct", "50", "--hold-ns", "0", "--duration", "0.01", "--warmup", "0",
                  "--db", db, env=fake.env())
    assert out.returncode == 0, out.stderr
    conn = sqlite3.connect(db)
    conn.execute("DELETE FROM points WHERE lock = 'bravo' AND rep = 2")
    conn.commit()
    conn.close()
    launched = len(fake.launched())
    out = locklab("sweep", "--resume", "1", "--db", db, env=fake.env())
    assert out.returncode == 0, out.stderr
    # Only the missing point ran again, with its read fraction.
    assert [(p["lock"], p["read_pct"]) for p in fake.launched()[launched:]] == [("bravo", 50)]
    assert len(rows(db)) == 6


def rw_figures(lock, opts, threads, pct, hold, ops, wait_max=1e6, ok=True):
    return {"lock": lock, "lock_opts": opts, "threads": threads, "read_pct": pct,
            "hold_ns": hold, "outside_ns": 0, "ns_per_op": 1e9 / ops if ops else 0.0,
            "ops_per_sec": ops, "cpu_ns_per_op": 2e9 / ops if ops else 0.0, "read_ops": 1000, "write_ops": 10,
            "read_ns_per_op": 12.0, "write_ns_per_op": 80.0, "read_wait_ns_p99": 50.0,
            "read_wait_ns_max": 900.0, "write_wait_ns_p99": wait_max / 2,
            "write_wait_ns_max": wait_max, "read_jain": 0.97, "write_jain": 0.5,
            "exclusion_ok": ok, "version": "test"}


def record(conn, run, rep, figures, error=None):
    point = store.Point(figures["lock"], figures["lock_opts"], figures["threads"], 1,
                        figures["hold_ns"], 0, rep, "rw", "", "",
                        store.rw_opts(figures["read_pct"]))
    store.record_point(conn, run, point, error=error, wall_s=0.3, raw=None, result=figures)


def test_the_store_keeps_the_rw_figures(tmp_path):
    conn = store.connect(tmp_path / "l.db", create=True)
    run = store.new_run(conn, presets.spec("rw", {}), dict.fromkeys(store.MACHINE, ""), {})
    for rep, ops in enumerate((10e6, 30e6, 20e6)):
        record(conn, run, rep, rw_figures("pthread", WRITER, 64, 99.9, 0, ops, 1000 * (rep + 1)))
    stored = store.points(conn, run)
    assert len(stored) == 3 and stored[0]["write_wait_ns_max"] == 1000
    assert stored[0]["cpu_ns_per_iter"] == 200.0 and stored[0]["exclusion_ok"] == 1
    (median,) = store.medians(stored)
    assert median["ops_per_sec"] == 20e6 and median["write_wait_ns_max"] == 2000
    assert median["workload_opts"] == "read_pct=99.9" and median["lock_opts"] == WRITER
    assert store.read_pct(median["workload_opts"]) == 99.9
    # The same point again is refused by the key, read fraction and all.
    with pytest.raises(sqlite3.IntegrityError):
        record(conn, run, 0, rw_figures("pthread", WRITER, 64, 99.9, 0, 1e6))
    record(conn, run, 0, rw_figures("pthread", WRITER, 64, 99, 0, 1e6))


def test_a_store_from_before_the_rw_columns_opens(tmp_path):
    db = tmp_path / "old.db"
    rw_columns = ", " + ", ".join(f"{name} {kind}" for name, kind in store.RW_METRICS)
    assert rw_columns in store.SCHEMA
    old = sqlite3.connect(db)
    old.executescript(store.SCHEMA.replace(rw_columns, ""))
    old.execute("INSERT INTO runs (started, spec) VALUES ('2020', '{}')")
    old.execute("INSERT INTO points (run_id, lock, lock_opts, threads, mutexes, hold_ns, "
                "outside_ns, rep, ok, finished, ns_per_iter) "
                "VALUES (1, 'pthread', '', 2, 1, 0, 0, 0, 1, '2020', 42.0)")
    old.commit()
    old.close()
    # Read-only, as report and compare open it: the rw columns read as NULL.
    (point,) = store.points(store.connect(db, write=False), 1)
    assert point["ns_per_iter"] == 42.0 and point["exclusion_ok"] is None
    # Opened to write, as a sweep does: the columns are added, an rw point fits.
    conn = store.connect(db)
    record(conn, 1, 0, rw_figures("ll", "", 2, 50, 0, 5e6))
    assert [p["write_jain"] for p in store.points(conn, 1)] == [None, 0.5]


# Stored figures whose judgement is known (medians of three passes: the middle one).
# Read-only: ll 9 ns with 1 reader (met), 6 ns with 2, 12 per thread (missed). 99.9%
# reads: 12x pthread at 64 threads (met), 5x at 256 (missed). 50% reads at 64
# threads: 0.95x pthread (met), writers' max wait 20 ms against the writer-preferring
# kind's 2 ms (missed). One pass of one point broke exclusion.
STORED = [
    ("ll", "", 1, 100, 1e9 / 9), ("pthread", "", 1, 100, 70e6),
    ("ll", "", 2, 100, 1e9 / 6), ("pthread", "", 2, 100, 30e6),
    ("ll", "", 64, 99.9, 120e6), ("pthread", "", 64, 99.9, 10e6),
    ("ll", "", 256, 99.9, 50e6), ("pthread", "", 256, 99.9, 10e6),
    ("ll", "", 64, 50, 9.5e6, 20e6), ("pthread", "", 64, 50, 10e6, 300e6),
    ("pthread", WRITER, 64, 50, 0.4e6, 2e6),
]


@pytest.fixture
def rw_run(tmp_path):
    db = tmp_path / "l.db"
    conn = store.connect(db, create=True)
    run = store.new_run(conn, presets.spec("rw", {}), dict.fromkeys(store.MACHINE, ""), {})
    for rep, scale in enumerate((1.0, 0.9, 1.1)):
        for lock, opts, threads, pct, ops, *wait in STORED:
            record(conn, run, rep, rw_figures(lock, opts, threads, pct, 0, ops * scale, *wait))
    bad = rw_figures("partitioned", "", 64, 50, 0, 3e6, ok=False)
    record(conn, run, 0, bad, error="rwlock exclusion violated: 2 sections saw a writer")
    conn.close()
    return db


def test_the_report_judges_ll_on_stored_figures(rw_run, tmp_path):
    out = locklab("report", "1", "--db", rw_run, "--out", tmp_path / "r")
    assert out.returncode == 0, out.stderr
    index = (tmp_path / "r" / "index.html").read_text()
    assert "<h2>Read-write locks (rw workload)</h2>" in index
    for stem in ("rw_throughput", "rw_write_wait_max"):
        assert (tmp_path / "r" / f"{stem}.png").stat().st_size > 0
    ro, heavy, mixed = "100% reads, hold 0 ns", "99.9% reads, hold 0 ns", "50% reads, hold 0 ns"
    assert target_cell(index, ro, "read lock+unlock ns, 1 reader", 1) == ("ok", "met")
    assert target_cell(index, ro, "read ns per op per thread, 2 readers", 2) == ("miss", "MISSED")
    assert target_cell(index, heavy, "ops/s vs 10x pthread", 64) == ("ok", "met")
    assert target_cell(index, heavy, "ops/s vs 10x pthread", 256) == ("miss", "MISSED")
    assert target_cell(index, mixed, "ops/s vs 0.9x pthread", 64) == ("ok", "met")
    wait = f"writers' max wait ns vs pthread [{WRITER}]"
    assert target_cell(index, mixed, wait, 64) == ("miss", "MISSED")
    # The failed pass counts though the point's medians leave it out, and is named loudly.
    assert target_cell(index, "all 34 points, every rwlock", rwlocks.EXCLUSION, "all") == (
        "miss", "MISSED")
    assert ('<p class="alarm">EXCLUSION VIOLATED in 1 point: partitioned t=64 50% reads, '
            'hold 0 ns r=1</p>') in index
    # ll's ratios: 12x pthread at 64 threads, 0.95x at 50% reads in red.
    assert '<td class="ok">12.00</td>' in index and '<td class="miss">0.95</td>' in index
    # The leaders: ll ahead of glibc by 12x at 99.9% reads and 64 threads.
    assert re.search(r"<td>99.9% reads, hold 0 ns</td>(<td>-</td>)*<td>ll 12.00x pthread</td>",
                     index)
    assert "met    ll read lock+unlock ns, 1 reader (100% reads, hold 0 ns, 1 threads): 9 " \
           "against 10" in out.stdout
    assert "MISSED ll ops/s vs 10x pthread (99.9% reads, hold 0 ns, 256 threads)" in out.stdout
    assert f"MISSED {rwlocks.EXCLUSION} (all 34 points, every rwlock, all threads): 1 " \
           "against 0" in out.stdout
    md = (tmp_path / "r" / rwlocks.MARKDOWN).read_text()
    assert "ll's throughput / each rwlock's, 99.9% reads, hold 0 ns:" in md and "| MISSED |" in md


def mixed_row(db, glibc_passes):
    """The 0.9x-pthread row at 256 threads, 50% reads: ll at 5e6 in every pass, glibc's
    default kind at GLIBC_PASSES."""
    conn = store.connect(db, create=True)
    run = store.new_run(conn, presets.spec("rw", {}), dict.fromkeys(store.MACHINE, ""), {})
    for rep, glibc in enumerate(glibc_passes):
        record(conn, run, rep, rw_figures("ll", "", 256, 50, 0, 5e6))
        record(conn, run, rep, rw_figures("pthread", "", 256, 50, 0, glibc))
    rows = store.points(conn, run)
    (row,) = [r for r in rwlocks.check(store.medians(rows), rows)
              if r["target"].startswith("ops/s vs 0.9x pthread")]
    return row


def test_a_baseline_whose_passes_disagree_is_taken_at_its_best(tmp_path):
    # glibc's default kind made millions of ops in one pass and next to none in two:
    # its median (12 ops/s) would let anything pass. The bound is its best pass, said.
    row = mixed_row(tmp_path / "l.db", (9e6, 10.0, 12.0))
    assert not row["ok"] and row["bound"] == pytest.approx(0.9 * 9e6)
    assert "its best pass: pthread's span 10-9e+06 ops/s" in row["target"]
    # Passes that agree within 2x: the median, as before.
    row = mixed_row(tmp_path / "m.db", (5e6, 4e6, 6e6))
    assert row["ok"] and row["bound"] == pytest.approx(0.9 * 5e6)
    assert row["target"] == "ops/s vs 0.9x pthread"
    # Two passes of nothing at all (a median of 0): the row is still judged, at its best.
    row = mixed_row(tmp_path / "z.db", (1.9e6, 0.0, 0.0))
    assert row["ok"] and row["bound"] == pytest.approx(0.9 * 1.9e6)
    assert "its best pass: pthread's span 0-1.9e+06 ops/s" in row["target"]


def test_exclusion_kept_everywhere_is_met():
    rows = [{"workload": "rw", "exclusion_ok": 1}, {"workload": "mutex", "exclusion_ok": None}]
    (checked,) = rwlocks.check([], rows)
    assert checked["ok"] and checked["ll"] == 0 and rwlocks.alarm(rows) == ""
    # A point that crashed before reporting it: the check cannot be said to have held.
    rows.append({"workload": "rw", "exclusion_ok": None})
    (checked,) = rwlocks.check([], rows)
    assert not checked["ok"] and "never reported the exclusion check" in rwlocks.alarm(rows)


def test_glibcs_two_regimes_are_counted():
    row = {"workload": "rw", "lock": "pthread", "lock_opts": "", "hold_ns": 0,
           "outside_ns": 0, "workload_opts": "read_pct=50", "ok": 1}
    rows = [{**row, "threads": 64, "ops_per_sec": v} for v in (6.6e6, 77.0, 6.3e6)]
    rows += [{**row, "threads": 16, "ops_per_sec": v} for v in (8.0e6, 9.8e6, 8.5e6)]
    # Another lock's spread, or a failed pass, is not glibc's regime.
    rows += [{**row, "threads": 16, "lock": "ll", "ops_per_sec": 1.0},
             {**row, "threads": 16, "ok": 0, "ops_per_sec": 0.0}]
    note = rwlocks.unsettled_note(rows)
    assert "At 1 of 2 points the passes of glibc's default kind (pthread) lie more" in note
    assert "widest: 77-6.6e+06 ops/s at 64 threads, 50% reads, hold 0 ns" in note
    assert rwlocks.unsettled_note(rows[3:]) == ""
    # Without CPU figures the regimes are not told.
    assert "Of its passes there" not in note


def test_each_glibc_pass_is_told_to_a_regime():
    row = {"workload": "rw", "lock": "pthread", "lock_opts": "", "hold_ns": 0,
           "outside_ns": 0, "workload_opts": "read_pct=50", "ok": 1, "threads": 64}
    # One thread at a time: a CPU idle, nothing in the kernel; the other regime keeps
    # both CPUs busy, much of it in futex calls.
    fast = [{**row, "ops_per_sec": v, "cpu_idle_pct": 35.0, "cpu_sys_pct": 0.0}
            for v in (18e6, 22e6)]
    slow = [{**row, "ops_per_sec": v, "cpu_idle_pct": i, "cpu_sys_pct": k}
            for v, i, k in ((6e6, 0.0, 15.8), (2e6, 30.0, 4.0), (4e6, 8.0, 0.5))]
    assert [rwlocks.regime(r) for r in fast + slow] == ["one runner"] * 2 + ["busy"] * 3
    assert rwlocks.regime({**row, "ops_per_sec": 1.0}) is None
    note = rwlocks.unsettled_note(fast + slow + [{**row, "ops_per_sec": 5e6}])
    assert ("Of its passes there, 2 left a quarter or more of the CPU time idle, under 1% of "
            "it in the kernel (one thread at a time), median 2e+07 ops/s; 3 kept the CPUs "
            "busy, median 4e+06 ops/s.") in note
    # Only the points whose passes lie apart are split.
    settled = [{**r, "threads": 16, "ops_per_sec": 9e6} for r in fast + slow]
    assert "3 kept the CPUs busy" in rwlocks.unsettled_note(fast + slow + settled)


def test_passes_that_left_threads_off_the_cpu_are_named():
    row = {"workload": "rw", "lock": "pthread", "lock_opts": "", "hold_ns": 0,
           "outside_ns": 0, "workload_opts": "read_pct=50"}
    rows = [{**row, "threads": 64, "threads_unscheduled": 0},
            {**row, "threads": 1024, "threads_unscheduled": 17},
            {**row, "threads": 256, "threads_unscheduled": None}]
    note = rwlocks.unscheduled_note(rows)
    assert "In 1 stored pass (at 1024 threads)" in note
    assert "most: 17 of 1024, pthread, 50% reads, hold 0 ns" in note
    assert rwlocks.unscheduled_note(rows[:1] + rows[2:]) == ""


@pytest.mark.parametrize("extra, needle", [
    (["--locks", "tas"], "unknown rwlock 'tas'"),
    (["--locks", "ll,pthread:prefer"], "'prefer': expected KEY=VALUE"),
    (["--read-pct", "101"], "argument --read-pct: 101 is outside [0, 100]"),
    (["--read-pct", "-0.5"], "argument --read-pct: -0.5 is outside [0, 100]"),
    (["--read-pct", "nan"], "argument --read-pct: nan is outside [0, 100]"),
    (["--read-pct", "50,x"], "argument --read-pct: 'x' is not a number"),
    (["--mutexes", "2"], "--mutexes does not apply to --workload rw: it measures one rwlock"),
    (["--instrument"], "--instrument does not apply to --workload rw"),
    (["--gate", "fifo"], "--gate apply to --workload server only"),
    (["--workload", "mutex"], "--read-pct applies to --workload rw only"),
])
def test_bad_values_are_refused_before_anything_is_stored(fake, tmp_path, extra, needle):
    db = tmp_path / "l.db"
    out = locklab("sweep", "--preset", "rw", *extra, "--db", db, env=fake.env())
    assert needle in one_line_error(out)
    assert not db.exists() and fake.launched() == []


@pytest.mark.parametrize("args, needle", [
    (["--read-pct", "50"], "--read-pct applies to --workload rw only"),
    (["--preset", "server-locks", "--read-pct", "50"], "--read-pct applies to --workload rw only"),
    (["--preset", "programs", "--read-pct", "50"], "--read-pct does not apply to --preset "
                                                   "programs"),
    (["--workload", "rw", "--locks", "innodb56"], "unknown rwlock 'innodb56'"),
])
def test_the_read_fraction_belongs_to_the_rw_workload(fake, tmp_path, args, needle):
    db = tmp_path / "l.db"
    out = locklab("sweep", *args, "--db", db, env=fake.env())
    assert needle in one_line_error(out)
    assert not db.exists()
