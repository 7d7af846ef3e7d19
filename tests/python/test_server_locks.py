"""The server-locks preset: its grid, its shapes kept apart, and ll's section of the report."""

import pytest

from conftest import locklab, rows, target_cell
from locklab.studies import ll_targets
from locklab.sweep import bench, compare, presets, store

# `locklab-bench list --json`'s entries, as far as resolving the preset's locks reads them.
ALGORITHMS = [{"name": name, "parks": parks} for name, parks in (
    ("pthread", True), ("pthread-adaptive", True), ("innodb56", True), ("tas", False),
    ("mcs", False), ("futex", True), ("ll", True), ("absl", True))]
PARKING = ["pthread", "pthread-adaptive", "innodb56", "futex", "ll", "absl"]
DEFAULT_SHAPE, SHORT_HOLDS, LONG_OUTSIDE = (4, 1000, 500), (16, 200, 500), (4, 1000, 5000)


def server_locks_spec(**given):
    spec = presets.spec("server-locks", given)
    spec["locks"] = presets.resolve_locks(spec["locks"], ALGORITHMS)
    return spec


def test_the_preset_grid():
    spec = server_locks_spec()
    assert spec["locks"] == PARKING  # every lock that parks, absl once
    assert spec["workload"] == "server" and not spec.get("gates")
    assert spec["threads"] == [1, 4, 16, 64, 256, 1024] and spec["repeat"] == 3
    points = bench.grid(spec)
    assert len(points) == len(PARKING) * 6 * 3 * 3
    assert {(p.mutexes, p.hold_ns, p.outside_ns) for p in points} == {
        DEFAULT_SHAPE, SHORT_HOLDS, LONG_OUTSIDE}
    assert all(p.gate == "" and p.workload_opts == "" and p.lock_opts == "" for p in points)
    # Passes are outermost: every shape, lock and client count once in each pass.
    third = len(points) // 3
    for rep in range(3):
        one_pass = points[rep * third:(rep + 1) * third]
        assert {p.rep for p in one_pass} == {rep}
        assert len({p._replace(rep=0) for p in one_pass}) == third
    # Its nominal length leaves 40% of 10 minutes for starting the processes and
    # their threads (measured: docs/bench.md).
    assert len(points) * (spec["duration"] + spec["warmup"]) <= 0.6 * 600


def test_a_shape_axis_on_the_command_line_replaces_the_shapes():
    spec = server_locks_spec(hold_ns=[300])
    assert {(p.mutexes, p.hold_ns, p.outside_ns) for p in bench.grid(spec)} == {(4, 300, 500)}
    assert "shapes" not in spec


def test_each_shape_is_a_point_of_its_own(fake, tmp_path):
    db = tmp_path / "l.db"
    common = ["--locks", "pthread,futex", "--threads", "4", "--duration", "0.01",
              "--warmup", "0", "--db", db]
    out = locklab("sweep", "--preset", "server-locks", "--repeat", "2", *common, env=fake.env())
    assert out.returncode == 0, out.stderr
    stored = rows(db)
    assert len(stored) == 2 * 3 * 2
    assert {(p["mutexes"], p["hold_ns"], p["outside_ns"]) for p in stored} == {
        DEFAULT_SHAPE, SHORT_HOLDS, LONG_OUTSIDE}
    assert [p["rep"] for p in stored] == [0] * 6 + [1] * 6  # passes interleave the shapes
    # One shape in each of two more runs: nothing of one compares with the other.
    for shape in (SHORT_HOLDS, LONG_OUTSIDE):
        out = locklab("sweep", "--workload", "server", "--mutexes", shape[0], "--hold-ns",
                      shape[1], "--outside-ns", shape[2], *common, env=fake.env())
        assert out.returncode == 0, out.stderr
    conn = store.connect(db, write=False)
    assert len(store.medians(store.points(conn, 1))) == 2 * 3
    result = compare.ratios(conn, 2, 3)
    assert result["points"] == [] and result["only_a"] == result["only_b"] == 2
    result = compare.ratios(conn, 1, 3)
    assert len(result["points"]) == 2
    assert {(r["mutexes"], r["hold_ns"], r["outside_ns"]) for r in result["points"]} == {
        LONG_OUTSIDE}


def server_point(lock, clients, shape, qps, jain=0.95, idle=5.0):
    return {"lock": lock, "lock_opts": "", "threads": clients, "mutexes": shape[0],
            "hold_ns": shape[1], "outside_ns": shape[2], "workload": "server", "gate": "",
            "gate_opts": "", "workload_opts": "", "ops_per_sec": qps, "jain": jain,
            "cpu_idle_pct": idle, "calib_error_pct": 0.5}


def test_the_ratios_never_pair_two_shapes():
    points = [server_point("ll", 4, DEFAULT_SHAPE, 100.0),
              server_point("pthread", 4, SHORT_HOLDS, 50.0),
              server_point("pthread", 4, DEFAULT_SHAPE, 80.0)]
    assert ll_targets.server_ratios(points) == {DEFAULT_SHAPE: {"pthread": {4: 1.25}}}


# Stored figures whose judgement is known. Default shape, 16 clients: ll beats every
# rival but is unfair and idles 3 points more than pthread. Long outside, 16 clients:
# absl beats ll, ll is fair and idles no more than pthread + 2. At 1 client nothing is
# judged. innodb56, faster still, is no rival in these targets.
STORED = [
    ("ll", 16, DEFAULT_SHAPE, 200e3, 0.5, 8.0), ("pthread", 16, DEFAULT_SHAPE, 150e3, 0.9, 5.0),
    ("absl", 16, DEFAULT_SHAPE, 190e3, 0.9, 5.0), ("innodb56", 16, DEFAULT_SHAPE, 400e3, 0.9, 1.0),
    ("ll", 16, LONG_OUTSIDE, 90e3, 0.85, 6.5), ("pthread", 16, LONG_OUTSIDE, 80e3, 0.9, 5.0),
    ("absl", 16, LONG_OUTSIDE, 100e3, 0.9, 5.0),
    ("ll", 1, DEFAULT_SHAPE, 10e3, 0.1, 90.0), ("pthread", 1, DEFAULT_SHAPE, 20e3, 1.0, 50.0),
]


@pytest.fixture
def stored_run(tmp_path):
    db = tmp_path / "l.db"
    conn = store.connect(db, create=True)
    run = store.new_run(conn, server_locks_spec(), dict.fromkeys(store.MACHINE, ""), {})
    for rep, scale in enumerate((1.0, 0.9, 1.1)):  # medians of three passes: the middle one
        for lock, clients, shape, qps, jain, idle in STORED:
            figures = server_point(lock, clients, shape, qps * scale, jain, idle)
            point = store.Point(lock, "", clients, *shape, rep, "server")
            store.record_point(conn, run, point, error=None, wall_s=0.5, raw=None,
                               result={**figures, "mutex_ok": True})
    conn.close()
    return db


def test_the_report_judges_ll_on_stored_figures(stored_run, tmp_path):
    out = locklab("report", "1", "--db", stored_run, "--out", tmp_path / "r")
    assert out.returncode == 0, out.stderr
    index = (tmp_path / "r" / "index.html").read_text()
    assert "ll against every lock (server workload, no gate)" in index
    assert "Admission control" not in index  # no gate: not the admission study
    assert ('<th scope="row">shapes</th><td>as given; mutexes 16, hold_ns 200; outside_ns 5000</td>'
            in index)
    default = ll_targets.shape_title(DEFAULT_SHAPE)
    outside = ll_targets.shape_title(LONG_OUTSIDE)
    qps = f"qps vs best of {', '.join(ll_targets.SERVER_RIVALS)}"
    idle = "CPU idle % vs pthread's + 2"
    assert target_cell(index, default, qps, 16) == ("ok", "met")
    assert target_cell(index, default, "Jain", 16) == ("miss", "MISSED")
    assert target_cell(index, default, idle, 16) == ("miss", "MISSED")
    assert target_cell(index, outside, qps, 16) == ("miss", "MISSED")
    assert target_cell(index, outside, "Jain", 16) == ("ok", "met")
    assert target_cell(index, outside, idle, 16) == ("ok", "met")
    assert f"<td>{default}</td><td>Jain</td><td>1</td>" not in index
    # The ratios, shape by shape: ll/absl 200/190 met, ll/innodb56 0.5 in red.
    assert '<td class="ok">1.05</td>' in index and '<td class="miss">0.50</td>' in index
    assert '<td class="miss">0.90</td>' in index and '<td class="ok">1.12</td>' in index
    # `locklab report` prints them, and writes the tables for the docs.
    # Each qps line names the best rival, the ratio, and the passes (x1.0, x0.9, x1.1).
    assert (f"met    ll {qps} ({default}, 16 clients): 200,000 against 190,000 qps (absl) "
            "= 1.053x; passes 180,000-220,000 against 171,000-209,000, overlapping\n"
            in out.stdout)
    assert f"MISSED ll Jain ({outside}, 16 clients)" not in out.stdout
    assert (f"MISSED ll {qps} ({outside}, 16 clients): 90,000 against 100,000 qps (absl) "
            "= 0.900x; passes 81,000-99,000 against 90,000-110,000, overlapping\n" in out.stdout)
    # Other targets keep their figure against the bound.
    assert f"MISSED ll Jain ({default}, 16 clients): 0.5 against 0.8\n" in out.stdout
    md = (tmp_path / "r" / ll_targets.SERVER_MARKDOWN).read_text()
    assert f"qps ratios, {outside}:" in md and "| MISSED |" in md


def test_a_qps_line_says_whether_the_passes_overlap():
    apart = ll_targets.qps_detail(120e3, 100e3, "futex", [118e3, 120e3, 125e3],
                                  [95e3, 100e3, 104e3])
    assert apart == ("120,000 against 100,000 qps (futex) = 1.200x; "
                     "passes 118,000-125,000 against 95,000-104,000, apart")
    # One pass on either side: no range to compare.
    assert ll_targets.qps_detail(99e3, 100e3, "absl", [99e3], [90e3, 110e3]) == \
        "99,000 against 100,000 qps (absl) = 0.990x"
