"""Crossing points, medians of repeats, and compare, on synthetic data."""
import json

import pytest

from conftest import locklab, one_line_error
from locklab.sweep import compare, store
from locklab.errors import LocklabError
from locklab.sweep.store import Point

MACHINE = {"cpu_model": "test", "cores": 2, "kernel": "Linux", "glibc": "glibc 2.36",
           "version": "0"}


def point(lock, threads, ns, hold=0, mutexes=1, opts=""):
    """A succeeded point of one repeat, as the store gives it."""
    return {"lock": lock, "lock_opts": opts, "threads": threads, "mutexes": mutexes,
            "hold_ns": hold, "outside_ns": 0, "ns_per_iter": ns, "ok": 1, "rep": 0,
            "workload": "mutex"}


def test_crossing_is_found_where_the_lines_meet():
    from locklab.report.verdict import crossings

    threads = [1, 2, 4, 8, 16]
    points = (
        [point("innodb56", t, 10.0 * t) for t in threads]  # meets pthread's 30 at t=3
        + [point("pthread", t, 30.0) for t in threads]
        + [point("futex", t, 31.0 + (t % 2)) for t in threads]  # pthread +-7%: a tie
        # Another panel: innodb56 overtakes at 8, now from above.
        + [point("innodb56", t, 800.0 / t, hold=1000) for t in threads]
        + [point("pthread", t, 100.0, hold=1000) for t in threads]
    )
    found = {(c["hold_ns"], c["faster_below"], c["faster_above"]): c for c in crossings(points)}
    assert set(found) == {
        (0, "innodb56", "pthread"),
        (0, "innodb56", "futex"),
        (1000, "pthread", "innodb56"),
    }
    assert found[(0, "innodb56", "pthread")]["threads"] == 3.0
    assert (found[(0, "innodb56", "pthread")]["between_lo"],
            found[(0, "innodb56", "pthread")]["between_hi"]) == (2, 4)
    assert found[(1000, "pthread", "innodb56")]["threads"] == 8.0
    # Equal at a measured thread count: a tie, bracketed by the points around it.
    assert (found[(1000, "pthread", "innodb56")]["between_lo"],
            found[(1000, "pthread", "innodb56")]["between_hi"]) == (4, 16)


def test_medians_fold_repeats_and_leave_out_failures():
    base = dict(zip(store.GRID_KEY, ("pthread", "", 4, 1, 0, 0)))
    rows = [{**base, "rep": i, "ok": ok, **{m: None for m in store.METRIC_NAMES},
             "ns_per_iter": ns, "jain": 0.9}
            for i, (ok, ns) in enumerate([(1, 30.0), (1, 10.0), (0, 1e9), (1, 20.0)])]
    (med,) = store.medians(rows)
    assert med["ns_per_iter"] == 20.0 and med["reps"] == 3 and med["jain"] == 0.9
    assert med["wait_ns_p99"] is None


@pytest.fixture
def two_runs(tmp_path):
    """Run 1 and run 2: run 2 halves each point's time, and each has a point of its own."""
    db = tmp_path / "l.db"
    conn = store.connect(db, create=True)
    for run, scale, only in ((1, 1.0, 64), (2, 0.5, 128)):
        assert store.new_run(conn, {}, MACHINE, {}) == run
        for lock in ("innodb56", "pthread"):
            for threads in (1, 4, only):
                ns = scale * (10.0 if lock == "pthread" else 5.0) * threads
                for rep, jitter in enumerate((1.0, 1.5, 0.9)):  # median: jitter 1.0
                    result = {"ns_per_iter": ns * jitter, "ops_per_sec": 1e9 / (ns * jitter)}
                    store.record_point(conn, run, Point(lock, "", threads, 1, 0, 0, rep),
                                       error=None, wall_s=0.1, result=result, raw=None)
    conn.close()
    return db


def test_compare_ratios(two_runs):
    conn = store.connect(two_runs)
    result = compare.ratios(conn, 1, 2)
    assert len(result["points"]) == 4
    assert result["only_a"] == 2 and result["only_b"] == 2
    for row in result["points"]:
        assert row["ns_per_iter_ratio"] == pytest.approx(0.5)
        assert row["ops_per_sec_ratio"] == pytest.approx(2.0)
    row = next(r for r in result["points"] if r["lock"] == "pthread" and r["threads"] == 4)
    assert row["ns_per_iter_a"] == pytest.approx(40.0)
    assert row["ns_per_iter_b"] == pytest.approx(20.0)
    assert result["geomean"]["ns_per_iter"] == pytest.approx(0.5)

    out = locklab("compare", "1", "latest", "--db", two_runs)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert len(lines) == 6
    assert lines[-1].startswith("run 2 / run 1: 4 points matched, geometric mean B/A "
                                "ns_per_iter 0.500, ops_per_sec 2.000; 2 only in A, 2 only in B")
    out = locklab("compare", "1", "2", "--json", "--db", two_runs)
    assert json.loads(out.stdout)["points"][0]["ns_per_iter_ratio"] == pytest.approx(0.5)


def test_compare_refuses_ambiguous_lock_variants(two_runs):
    conn = store.connect(two_runs)
    store.record_point(conn, 2, Point("pthread", "spin=tas", 4, 1, 0, 0, 0), error=None,
                       wall_s=0.1, result={"ns_per_iter": 1.0}, raw=None)
    with pytest.raises(LocklabError, match="pthread under several --lock-opts"):
        compare.ratios(conn, 1, 2)
    assert "several --lock-opts" in one_line_error(locklab("compare", "1", "2", "--db", two_runs))
