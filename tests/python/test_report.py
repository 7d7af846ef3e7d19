"""A short sweep on the real locklab-bench, and the report made from it.

These run the locklab-bench the environment selects (LOCKLAB_NATIVE_DIR or the
installed package's), like the user's `locklab` would.
"""
import csv
import html
import json
import re

import pytest

from conftest import locklab, one_line_error, rows


@pytest.fixture(scope="module")
def real_db(tmp_path_factory):
    db = tmp_path_factory.mktemp("real") / "l.db"
    out = locklab("sweep", "--locks", "pthread,innodb56", "--threads", "1,2",
                  "--hold-ns", "0,1000", "--duration", "0.05", "--warmup", "0", "--db", db)
    assert out.returncode == 0, out.stderr
    return db


def test_real_sweep_measures_every_point(real_db):
    db = real_db
    points = rows(db)
    assert len(points) == 8
    for p in points:
        assert p["ok"] and p["mutex_ok"] == 1, p["error"]
        assert p["ns_per_iter"] > 0 and p["ops_per_sec"] > 0 and p["iterations"] > 0
        assert 0 < p["jain"] <= 1
        raw = json.loads(p["raw"])
        assert (raw["lock"], raw["threads"], raw["hold_ns"]) == (p["lock"], p["threads"],
                                                                 p["hold_ns"])
    (run,) = rows(db, "SELECT * FROM runs")
    assert json.loads(run["floor"])["cpus"] >= 1


def test_report_writes_pages_charts_and_data(real_db, tmp_path):
    db = real_db
    out_dir = tmp_path / "report"
    out = locklab("report", "latest", "--db", db, "--out", out_dir)
    assert out.returncode == 0, out.stderr
    index_line, *told = out.stdout.splitlines()
    assert index_line == str(out_dir / "index.html")
    assert told[0].startswith("verdict of run 1: the mutex to use")
    assert all(line.startswith("  1 mutex, hold ") for line in told[1:]) and len(told) > 2
    pngs = sorted(p.name for p in out_dir.glob("*.png"))
    assert {"ns_per_iter.png", "cpu.png", "fairness.png", "wait_p50.png", "wait_p99.png",
            "wait_max.png"} <= set(pngs)
    for name in pngs:
        assert (out_dir / name).stat().st_size > 5000, name
    index = (out_dir / "index.html").read_text()
    assert sorted(set(re.findall(r'src="([^"]+\.png)"', index))) == pngs
    (run,) = rows(db, "SELECT * FROM runs")
    assert html.escape(run["cpu_model"]) in index and html.escape(run["glibc"]) in index
    assert "atomic_rmw_ns" in index and "Crossing points" in index
    with open(out_dir / "points.csv", newline="") as f:
        table = list(csv.DictReader(f))
    assert len(table) == 8 and {r["lock"] for r in table} == {"pthread", "innodb56"}
    data = json.loads((out_dir / "points.json").read_text())
    assert len(data["points"]) == 8 and data["machine"]["cores"] >= 1


def test_report_lists_failed_points_and_incomplete_runs(fake, tmp_path):
    db = tmp_path / "l.db"
    env = fake.env(crash=[{"lock": "pthread", "threads": 2}])
    out = locklab("sweep", "--locks", "innodb56,pthread", "--threads", "1,2,4", "--repeat", "2",
                  "--duration", "0.01", "--db", db, env=env)
    assert out.returncode == 1
    out = locklab("report", "1", "--db", db, "--out", tmp_path / "r", env=env)
    assert out.returncode == 0, out.stderr
    index = (tmp_path / "r" / "index.html").read_text()
    assert "<h2>Failed points</h2>" in index and index.count("killed by SIGSEGV") == 2
    assert "12 points stored, 2 failed" in index
    # The fake's lines cross at 3 threads.
    assert "<td>innodb56</td><td>pthread</td><td>3</td>" in index
    out = locklab("report", "1", "--db", db, "--out", "/proc/no/such/dir", env=env)
    assert "No such file or directory" in one_line_error(out, status=1)


def test_bench_and_floor_on_the_real_tool():
    out = locklab("bench", "--lock", "nosuch", "--threads", "1", "--mutexes", "1",
                  "--hold-ns", "0", "--duration", "0.01", "--json")
    assert "unknown lock 'nosuch'" in one_line_error(out)
    out = locklab("bench", "--lock", "pthread", "--threads", "2", "--mutexes", "1",
                  "--hold-ns", "-1", "--duration", "0.01", "--json")
    one_line_error(out)
    out = locklab("bench", "--lock", "pthread", "--threads", "2", "--mutexes", "1",
                  "--hold-ns", "0", "--duration", "0.02", "--json")
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["mutex_ok"] is True
    out = locklab("floor", "--json")
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["futex_wake_to_run_ns"] > 0
