"""The server workload behind admission gates: the real locklab-bench's server, and the sweep, store and
report around admission gates (against the fake locklab-bench)."""
import json
import math
import sqlite3
import subprocess

import pytest

from conftest import locklab, one_line_error, rows
from locklab import native
from locklab.studies import admission
from locklab.sweep import store

# --- the real server workload ---

SERVER_KEYS = (
    "workload gate gate_opts workload_opts threads mutexes hold_ns outside_ns qps "
    "ns_per_query ops_per_sec ns_per_iter latency_ns_p50 latency_ns_p99 latency_ns_p999 "
    "latency_ns_max wait_ns_p99 jain cpu_user_pct cpu_sys_pct cpu_idle_pct cs_per_sec "
    "gate_limit_mean gate_waits gate_handoffs gate_barges mutex_ok"
).split()


def server(*args, status=0):
    out = subprocess.run([str(native.bench_path()), "bench", "--workload", "server", *args],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == status, out.stderr
    return json.loads(out.stdout) if status == 0 else out


@pytest.mark.parametrize("gate", ["innodb", "fifo", "auto"])
def test_server_counts_every_query_through_the_gate(gate):
    # 8 clients x 300 queries, N = 2: exact totals, mutual exclusion checked on every mutex.
    opts = "n=2,tickets=3" + (",min=1,max=2" if gate == "auto" else "")
    opts += ",thread_sleep_delay=100" if gate == "innodb" else ""
    r = server("--lock", "pthread", "--threads", "8", "--gate", gate, "--gate-opts", opts,
               "--workload-opts", "trx=5,io_us=10,io_every=7,suspend=1",
               "--iterations", "300", "--json")
    missing = [k for k in SERVER_KEYS if k not in r]
    assert not missing
    assert r["iterations"] == 8 * 300 and r["min_thread_iters"] == r["max_thread_iters"] == 300
    assert r["mutex_ok"] is True and r["gate"] == gate and r["workload_opts"].startswith("trx=5")
    assert r["gate_limit_max"] <= 2
    assert r["latency_ns_p50"] <= r["latency_ns_p99"] <= r["latency_ns_max"]


def test_server_without_gate_and_with_trace():
    r = server("--lock", "ll", "--threads", "3", "--iterations", "100", "--json")
    assert r["gate"] == "" and r["iterations"] == 300 and r["mutex_ok"] is True
    r = server("--lock", "pthread", "--threads", "4", "--gate", "auto", "--duration", "0.1",
               "--warmup", "0", "--gate-trace", "--json")
    assert r["gate_trace"] and all(len(s) == 7 and s[1] >= 1 for s in r["gate_trace"])


def test_auto_keeps_twice_the_cpus_unless_told_lower():
    """auto's floor is its start, twice the CPUs: with one client nobody queues, and N
    comes down towards what is used (one thread inside) but not below the floor; min, a
    lower start (n) or a lower max lower the floor."""
    import os
    cpus = len(os.sched_getaffinity(0))
    one = ["--lock", "pthread", "--threads", "1", "--gate", "auto", "--duration", "0.2",
           "--warmup", "0", "--json"]
    r = server(*one)
    assert r["gate_limit_min"] == r["gate_limit_max"] == 2 * cpus
    r = server(*one, "--gate-opts", "min=1")
    assert r["gate_limit_min"] < 2 * cpus and r["gate_limit_max"] == 2 * cpus
    r = server(*one, "--gate-opts", "n=1")
    assert r["gate_limit_min"] == 1
    r = server(*one, "--gate-opts", "max=1")
    assert r["gate_limit_max"] == 1


@pytest.mark.parametrize("args, message", [
    (["--gate", "lifo"], "unknown gate policy 'lifo' (valid: innodb, fifo, auto)"),
    (["--gate", "fifo", "--gate-opts", "n=0"], "option 'n' of gate 'fifo' wants an integer"),
    (["--gate", "auto", "--gate-opts", "handoff_pace=0"],
     "option 'handoff_pace' of gate 'auto' wants an integer in [1, 1000], got '0'"),
    (["--workload-opts", "think=3"], "unknown option 'think' for workload 'server'"),
    (["--gate-opts", "n=2"], "--gate-opts without --gate"),
])
def test_server_refuses_bad_input_in_one_line(args, message):
    out = server("--lock", "pthread", "--threads", "2", "--iterations", "1", *args, status=2)
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0]


def test_unknown_workload_is_one_line():
    out = subprocess.run([str(native.bench_path()), "bench", "--workload", "disk"],
                         capture_output=True, text=True)
    assert out.returncode == 2 and "unknown workload 'disk'" in out.stderr


# --- sweep, store, report (fake locklab-bench) ---

QUICK = ["--preset", "concurrency-quick", "--duration", "0.01", "--warmup", "0"]


def test_concurrency_sweep_stores_gates_and_reports_targets(fake, tmp_path):
    db = tmp_path / "l.db"
    out = locklab("sweep", *QUICK, "--db", db, env=fake.env())
    assert out.returncode == 0, out.stderr
    points = rows(db)
    assert len(points) == 3 * (6 * 6 * 2 + 3 * 2 * 2)   # 3 passes
    gates = {(p["gate"], p["gate_opts"]) for p in points}
    assert gates == {("", ""), ("innodb", "n=2"), ("innodb", "n=8"), ("fifo", "n=2"),
                     ("fifo", "n=8"), ("auto", "")}
    assert all(p["workload"] == "server" and p["ok"] for p in points)
    io = [p for p in points if p["workload_opts"]]
    assert {p["workload_opts"] for p in io} == {"io_us=200", "io_us=200,suspend=1"}
    assert all(p["threads"] == 256 for p in io)
    one = next(p for p in points if p["gate"] == "auto" and not p["workload_opts"])
    assert one["latency_ns_p99"] == 2e5 and one["gate_limit_mean"] == 4.0
    assert (one["gate_handoffs"], one["gate_barges"]) == (7, 90)
    # locklab-bench got the gate as the grid said (the fake logs what it was given).
    launched = fake.launched()
    assert {"lock": "pthread", "threads": 1024, "gate": "fifo", "gate_opts": "n=8",
            "workload_opts": ""} in launched

    rep = locklab("report", "latest", "--db", db, "--out", tmp_path / "r", env=fake.env())
    assert rep.returncode == 0, rep.stderr
    lines = rep.stdout.splitlines()
    assert lines[0].endswith("index.html")
    checks = lines[1:]
    assert any(line.startswith("met    reproduced: collapse without a gate") for line in checks)
    assert any("I/O: suspend keeps the CPU busy" in line for line in checks)
    assert not any(line.startswith("MISSED") for line in checks), checks
    index = (tmp_path / "r" / "index.html").read_text()
    assert "Admission control: the innodb_thread_concurrency study" in index and "admission_clients.png" in index
    md = (tmp_path / "r" / "admission.md").read_text()
    assert "| 256 | 68,369 | 194,358 |" in md   # the study's row beside ours
    assert (tmp_path / "r" / "admission_n.png").stat().st_size > 0


def test_server_sweep_resumes_only_missing_points(fake, tmp_path):
    db = tmp_path / "l.db"
    grid = ["--workload", "server", "--locks", "pthread", "--threads", "1,4",
            "--gate", "none", "--gate", "fifo:n=2", "--gate", "innodb:n=2",
            "--duration", "0.01", "--warmup", "0"]
    assert locklab("sweep", *grid, "--db", db, env=fake.env()).returncode == 0
    conn = sqlite3.connect(db)
    conn.execute("DELETE FROM points WHERE gate = 'fifo'")
    conn.execute("UPDATE runs SET finished = NULL")
    conn.commit()
    conn.close()
    before = len(fake.launched())
    out = locklab("sweep", "--resume", "1", "--db", db, env=fake.env())
    assert out.returncode == 0, out.stderr
    again = fake.launched()[before:]
    assert sorted((p["gate"], p["threads"]) for p in again) == [("fifo", 1), ("fifo", 4)]
    assert len(rows(db)) == 6


def test_bad_gate_is_refused_before_the_sweep(fake, tmp_path):
    out = locklab("sweep", "--workload", "server", "--locks", "pthread", "--gate", "lifo:n=2",
                  "--db", tmp_path / "l.db", env=fake.env())
    assert "unknown gate policy 'lifo'" in one_line_error(out)
    assert fake.launched() == []


OLD_POINTS = """
CREATE TABLE runs (id INTEGER PRIMARY KEY, started TEXT NOT NULL, finished TEXT,
    spec TEXT NOT NULL, cpu_model TEXT, cores INTEGER, kernel TEXT, glibc TEXT, version TEXT,
    floor TEXT);
CREATE TABLE points (id INTEGER PRIMARY KEY, run_id INTEGER NOT NULL REFERENCES runs(id),
    lock TEXT NOT NULL, lock_opts TEXT NOT NULL, threads INTEGER NOT NULL,
    mutexes INTEGER NOT NULL, hold_ns INTEGER NOT NULL, outside_ns INTEGER NOT NULL,
    rep INTEGER NOT NULL, ok INTEGER NOT NULL, error TEXT, wall_s REAL, finished TEXT NOT NULL,
    ns_per_iter REAL, ops_per_sec REAL, raw TEXT,
    UNIQUE (run_id, lock, lock_opts, threads, mutexes, hold_ns, outside_ns, rep));
INSERT INTO runs VALUES (1, 'then', 'then', '{"locks": ["pthread"], "repeat": 1}', 'cpu', 2,
    'k', 'g', '0.1', '{}');
INSERT INTO points (run_id, lock, lock_opts, threads, mutexes, hold_ns, outside_ns, rep, ok,
    finished, ns_per_iter, ops_per_sec) VALUES (1, 'pthread', '', 4, 1, 0, 0, 0, 1, 'then',
    50.0, 2e7);
"""


def test_a_database_without_the_handoff_columns_gains_them(tmp_path):
    # A file written before gate_handoffs and gate_barges were stored: the sweep
    # table as it was, then connect() adds the two columns and a point fills them.
    db = tmp_path / "before.db"
    conn = store.connect(db, create=True)
    conn.execute("ALTER TABLE points DROP COLUMN gate_handoffs")
    conn.execute("ALTER TABLE points DROP COLUMN gate_barges")
    conn.close()
    conn = store.connect(db)
    run = store.new_run(conn, {"locks": ["pthread"]}, dict.fromkeys(store.MACHINE, ""), {})
    point = store.Point("pthread", "", 4, 1, 0, 0, 0, "server", "fifo", "n=2", "")
    store.record_point(conn, run, point, error=None, wall_s=0.1, raw=None,
                       result={"ops_per_sec": 1.0, "gate_handoffs": 3, "gate_barges": 5})
    (row,) = store.points(conn, run)
    assert (row["gate_handoffs"], row["gate_barges"]) == (3, 5)


def test_a_database_from_before_the_server_workload_opens_and_widens(tmp_path):
    db = tmp_path / "old.db"
    conn = sqlite3.connect(db)
    conn.executescript(OLD_POINTS)
    conn.close()
    conn = store.connect(db)
    (old,) = store.points(conn, 1)
    assert old["workload"] == "mutex" and old["gate"] == "" and old["ns_per_iter"] == 50.0
    # The widened key takes two points that differ only in their gate.
    for gate in ("fifo", "innodb"):
        point = store.Point("pthread", "", 4, 1, 0, 0, 0, "server", gate, "n=2", "")
        store.record_point(conn, 1, point, error=None, wall_s=0.1, raw=None,
                           result={"ops_per_sec": 1.0, "latency_ns_p99": 7.0})
    assert len(store.points(conn, 1)) == 3
    assert {p.gate for p in store.done_points(conn, 1)} == {"", "fifo", "innodb"}
    medians = store.medians(store.points(conn, 1))
    assert sorted(m["latency_ns_p99"] or 0 for m in medians) == [0, 7.0, 7.0]


def point(lock, clients, gate, opts, qps, wopts="", cpus=2.0, mean=None):
    return {"workload": "server", "lock": lock, "lock_opts": "", "threads": clients,
            "gate": gate, "gate_opts": opts, "workload_opts": wopts, "ops_per_sec": qps,
            "cpu_ns_per_iter": cpus * 1e9 / qps, "cpu_idle_pct": 50.0, "gate_limit_mean": mean}


def test_targets_are_missed_when_the_numbers_say_so():
    pts = [point("pthread", t, "innodb", "n=4", 100.0) for t in (4, 64)]
    pts += [point("pthread", 4, "fifo", "n=4", 99.0), point("pthread", 64, "fifo", "n=4", 90.0)]
    pts += [point("pthread", 4, "auto", "", 96.0), point("pthread", 64, "auto", "", 80.0)]
    pts += [point("pthread", 256, "innodb", "n=8", 10.0, "io_us=200", cpus=0.2),
            point("pthread", 256, "fifo", "n=8", 12.0, "io_us=200,suspend=1", cpus=0.24)]
    checks = {c["target"]: c for c in admission.check(pts)}
    fifo = checks["fifo >= innodb, same N"]
    assert not fifo["ok"] and "by more than 5% at 1" in fifo["text"]
    auto = checks["auto >= 0.95x best fixed N"]
    assert not auto["ok"] and "below at 1 (64)" in auto["text"]
    io = checks["I/O: suspend keeps the CPU busy"]
    assert not io["ok"] and "server CPUs 0.20 -> 0.24" in io["text"]   # 1.2x, not 1.5x


def test_a_restore_beyond_the_peak_is_called_out_of_reach():
    # Peak 400 at 2 clients. A collapse to 250 at 256 clients would need a gate
    # serving 625, above the peak: the row says so. A collapse to 100 needs 250,
    # which a gate can serve: missed at 200, but not out of reach.
    def restore(collapsed, gated):
        pts = [point("innodb56", 2, "", "", 400.0), point("innodb56", 256, "", "", collapsed),
               point("innodb56", 256, "innodb", "n=4", gated)]
        (row,) = [c for c in admission.check(pts) if "restores" in c["target"]]
        return row
    shallow = restore(250.0, 380.0)
    assert not shallow["ok"] and "out of any gate's reach here: 2.5x needs 625" in shallow["text"]
    deep = restore(100.0, 200.0)
    assert not deep["ok"] and "reach" not in deep["text"]
    assert restore(100.0, 300.0)["ok"]


def test_fifo_pairs_where_the_gate_cannot_bind_are_told_apart():
    # 2 clients behind N = 4: nobody waits at either gate, so a gap there is noise;
    # 64 clients: the gate binds and fifo is level with innodb.
    pts = [point("pthread", t, "innodb", "n=4", 100.0) for t in (2, 64)]
    pts += [point("pthread", 2, "fifo", "n=4", 80.0), point("pthread", 64, "fifo", "n=4", 99.0)]
    checks = {c["target"]: c for c in admission.check(pts)}
    every = checks["fifo >= innodb, same N"]
    assert not every["ok"] and "by more than 5% at 1" in every["text"]
    binding = checks["fifo >= innodb, same N, gate binding"]
    assert binding["ok"] and binding["where"] == "1 pairs with clients > N"
    assert "below 0.98x at 0; worst n=4 64 clients: 0.99x" in binding["text"]


def test_held_out_rows_pick_the_best_setting_on_the_other_passes():
    # Three passes at 64 clients: fifo n=8 serves 100 in each, fifo n=2 130, 90, 90,
    # innodb n=8 100 in each, auto 97, 96, 98. Each pass compares auto with the
    # setting best on the other two passes, in its own pass:
    #   pass 1: n=2 median(90, 90) = 90 < n=8's 100 -> 97 / 100
    #   pass 2: n=2 median(130, 90) = 110 > 100     -> 96 / 90
    #   pass 3: n=2 median(130, 90) = 110 > 100     -> 98 / 90
    # so the pick made on pass 1's luck is judged on passes where it had none.
    raw = []
    for rep, (f2, a) in enumerate([(130.0, 97.0), (90.0, 96.0), (90.0, 98.0)]):
        for gate, opts, q in (("fifo", "n=2", f2), ("fifo", "n=8", 100.0),
                              ("innodb", "n=8", 100.0 + rep), ("auto", "", a)):
            raw.append({**point("pthread", 64, gate, opts, q), "rep": rep, "ok": 1})
    reps = admission.by_rep(raw, "pthread")
    ratio, pick = admission.held_out_auto(reps, 64)
    assert pick == "fifo n=2" and abs(ratio - 96.0 / 90.0) < 1e-9
    # fifo n=8 against innodb n=8 in the same pass: 1.0, 100/101, 100/102.
    assert abs(admission.held_out_pair(reps, 8, 64) - 100.0 / 101.0) < 1e-9
    # auto far below in every pass is missed, through check() with the raw rows.
    for r in raw:
        if r["gate"] == "auto":
            r["ops_per_sec"] = 80.0
    checks = {c["target"]: c for c in admission.check(store.medians(raw), raw)}
    held = checks["auto >= 0.95x best fixed N, held out"]
    assert not held["ok"] and "below at 1 (64)" in held["text"]
    paired = checks["fifo >= innodb, same N, paired by pass"]
    assert paired["ok"] and "below 0.95 at 0" in paired["text"]


def test_noise_is_what_is_left_after_each_setting_and_each_pass():
    # A pass that runs 10% faster moves every setting alike: no noise is left.
    drift = {"fifo n=2": {64: {0: 100.0, 1: 110.0}}, "innodb n=2": {64: {0: 80.0, 1: 88.0}}}
    assert admission.noise_sd(drift) < 1e-12
    # One setting alone moving by a factor f between two passes: in a 2 x 2 table each
    # residual is +-log(f)/4, one degree of freedom, so the spread is log(f)/2.
    f = 1.2
    moved = {"fifo n=2": {64: {0: 100.0, 1: 100.0 * f}}, "innodb n=2": {64: {0: 80.0, 1: 80.0}},
             "auto": {64: {0: 1.0, 1: 50.0}}}   # auto is judged, never taken as noise
    assert abs(admission.noise_sd(moved) - math.log(f) / 2) < 1e-12
    assert admission.noise_sd({"fifo n=2": {64: {0: 100.0}}}) is None   # one pass: unknown


def test_the_chance_that_noise_alone_misses_matches_the_binomial():
    assert admission.miss_chance(0.95, 0.0, 3) == 0.0
    # The median of three passes falls below the bound when two of the three do; each
    # pass's log ratio of two equal settings is normal with sd * sqrt(2).
    for sd in (0.02, 0.045, 0.08):
        p = 0.5 * (1 + math.erf(math.log(0.95) / (sd * math.sqrt(2)) / math.sqrt(2)))
        exact = 3 * p * p * (1 - p) + p ** 3
        assert abs(admission.miss_chance(0.95, sd, 3) - exact) < 0.01, sd
    chances = [admission.miss_chance(0.95, sd, 3) for sd in (0.01, 0.03, 0.06, 0.5)]
    assert chances == sorted(chances) and chances[-1] > 0.4
    # More passes make the median steadier.
    assert admission.miss_chance(0.95, 0.05, 9) < admission.miss_chance(0.95, 0.05, 3)
    # Two medians of one pass each: the ratio of two single points, normal with
    # sd * sqrt(2), below the bound with probability p itself.
    p = 0.5 * (1 + math.erf(math.log(0.98) / (0.03 * math.sqrt(2)) / math.sqrt(2)))
    assert abs(admission.miss_chance(0.98, 0.03, 1, paired=False) - p) < 0.01


def test_held_out_rows_say_how_often_noise_alone_would_miss():
    raw = []
    for rep, drift in enumerate((1.0, 1.1, 0.9)):
        for gate, opts, q in (("fifo", "n=2", 100.0 * (1.06 if rep == 1 else 1.0)),
                              ("fifo", "n=8", 100.0), ("innodb", "n=8", 100.0),
                              ("innodb", "n=2", 100.0), ("auto", "", 99.0)):
            raw.append({**point("pthread", 64, gate, opts, q * drift), "rep": rep, "ok": 1})
    checks = {c["target"]: c for c in admission.check(store.medians(raw), raw)}
    sd = admission.noise_sd(admission.by_rep(raw, "pthread"))
    assert 0 < sd < 0.06
    p = admission.miss_chance(0.95, sd, 3)
    held = checks["auto >= 0.95x best fixed N, held out"]
    assert held["ok"] and (f"noise alone (passes spread {sd:.1%}, 3 passes): two equal settings "
                           f"miss 0.95x with chance {p:.2f} each, {p:.1f} of 1 expected") \
        in held["text"]
    paired = checks["fifo >= innodb, same N, paired by pass"]
    assert f"two equal settings miss 0.95x with chance {p:.2f} each, {2 * p:.1f} of 2 expected" \
        in paired["text"]
    # The medians' fifo rows compare two medians of 3 passes each.
    q = admission.miss_chance(0.98, sd, 3, paired=False)
    binding = checks["fifo >= innodb, same N, gate binding"]
    assert f"miss 0.98x with chance {q:.2f} each, {2 * q:.1f} of 2 expected" in binding["text"]
    # The medians' auto row picks the best of many medians: no noise figure claimed there.
    assert "noise alone" not in checks["auto >= 0.95x best fixed N"]["text"]
    # Without the raw rows there is no spread to tell.
    assert all("noise alone" not in c["text"] for c in admission.check(store.medians(raw)))


# --- the warm-up in the point's key, and the settled sub-grid ---

def test_points_differing_only_in_warm_up_are_two_and_old_runs_keep_theirs(tmp_path):
    # A file from before the warm-up was in the key: its points get their run's warm-up,
    # so a resumed run finds them done; then a point that differs only in its warm-up
    # is a point of its own, and its repeats are folded apart from the other's.
    db = tmp_path / "before.db"
    old = store.SCHEMA.replace("    warmup REAL NOT NULL DEFAULT 0,\n", "").replace(
        ", warmup)", ")")
    assert old != store.SCHEMA
    conn = sqlite3.connect(db)
    conn.executescript(old)
    conn.execute("INSERT INTO runs (id, started, spec) VALUES (1, 'then', ?)",
                 (json.dumps({"warmup": 0.3, "repeat": 1}),))
    conn.execute("INSERT INTO points (run_id, lock, lock_opts, threads, mutexes, hold_ns, "
                 "outside_ns, rep, workload, gate, gate_opts, ok, finished, ops_per_sec) VALUES "
                 "(1, 'innodb56', '', 256, 4, 1000, 500, 0, 'server', 'innodb', 'n=4', 1, "
                 "'then', 100.0)")
    conn.commit()
    conn.close()
    conn = store.connect(db)
    short = store.Point("innodb56", "", 256, 4, 1000, 500, 0, "server", "innodb", "n=4", "", 0.3)
    assert store.done_points(conn, 1) == {short}
    store.record_point(conn, 1, short._replace(warmup=45.0), error=None, wall_s=46.0, raw=None,
                       result={"ops_per_sec": 200.0})
    meds = store.medians(store.points(conn, 1))
    assert sorted((m["warmup"], m["ops_per_sec"]) for m in meds) == [(0.3, 100.0), (45.0, 200.0)]


def test_the_concurrency_preset_settles_innodb_in_a_sub_grid():
    from locklab.sweep import bench, kinds, presets
    spec = presets.spec("concurrency", {})
    points = bench.grid(spec)
    long = [p for p in points if p.warmup > spec["warmup"] and p.gate != "auto"]
    assert {(p.lock, p.threads, p.gate, p.gate_opts) for p in long} == {
        ("innodb56", t, g, "n=4") for t in (256, 1024) for g in ("innodb", "fifo")}
    assert len(long) == 4 * spec["repeat"]
    for p in long:   # long enough for InnoDB's delay to reach its cap, and said so
        assert p.warmup >= presets.innodb_settle_s(p.threads, 4)
        args = bench.bench_args(p, spec)
        assert args[args.index("--warmup") + 1] == f"{p.warmup:g}"
        assert bench.point_timeout(spec, p) > 10 * p.warmup
    assert {p.warmup for p in long} == {45.0, 12.0}
    # ~6 minutes more than the grid alone, on 2 cores.
    extra = kinds.of(spec).expected_seconds(spec, long)
    assert 300 < extra < 420
    # Locks given on the command line keep the sub-grid only if they name innodb56.
    assert not [p for p in bench.grid(presets.spec("concurrency", {"locks": ["pthread"]}))
                if p.warmup > spec["warmup"] and p.gate != "auto"]
    kept = bench.grid(presets.spec("concurrency", {"locks": ["innodb56", "ll"]}))
    assert len([p for p in kept if p.warmup > spec["warmup"] and p.gate != "auto"]) \
        == 4 * spec["repeat"]


def test_auto_warms_up_longer_in_the_grid_beside_the_fixed_gates():
    from locklab.sweep import bench, plan, presets
    for preset in ("concurrency", "concurrency-quick"):
        spec = presets.spec(preset, {})
        points = [p for p in bench.grid(spec) if p.warmup < 10]   # the settled sub-grid aside
        auto = [p for p in points if p.gate == "auto"]
        assert auto and {p.warmup for p in auto} == {presets.AUTO_WARMUP_S}
        assert {p.warmup for p in points if p.gate != "auto"} == {spec["warmup"]}
        # With I/O too (the sub-grid at 256 clients).
        assert {p.workload_opts for p in auto} >= {"", "io_us=200,suspend=1"}
        assert bench.bench_args(auto[0], spec)[-3:-1] == ["--warmup", "1.5"]
        assert f"of warm-up (auto: {presets.AUTO_WARMUP_S:g} s)" in plan.plan(spec, points,
                                                                               len(points))
    # A warm-up given on the command line is every point's, auto's too.
    given = presets.spec("concurrency-quick", {"warmup": 0.5})
    assert {p.warmup for p in bench.grid(given)} == {0.5}
    assert "(auto:" not in plan.plan(given, bench.grid(given), 1)
    # Never shorter than the spec's own: a sub-grid's long warm-up stays.
    assert bench.warmup_of({"warmup": 46.0, "gate_warmup": {"auto": 1.5}}, "auto") == 46.0
    assert bench.warmup_of({"warmup": 0.3, "gate_warmup": {"auto": 1.5}}, "fifo:n=4") == 0.3


def test_auto_rows_say_how_long_auto_warmed_up():
    pts = [point("pthread", t, "fifo", "n=4", 100.0) for t in (4, 64)]
    pts += [{**point("pthread", t, "auto", "", 97.0), "warmup": 1.5} for t in (4, 64)]
    (row,) = [c for c in admission.check(pts) if c["target"] == "auto >= 0.95x best fixed N"]
    assert row["ok"] and row["where"] == "2 client counts, auto after 1.5 s of warm-up"


def test_settled_rows_judge_innodb_and_fifo_after_their_warm_up():
    def at(clients, gate, qps, warmup):
        return {**point("innodb56", clients, gate, "n=4", qps), "warmup": warmup}
    pts = [point("innodb56", 2, "", "", 400.0), point("innodb56", 256, "", "", 100.0),
           point("innodb56", 1024, "", "", 50.0)]
    pts += [at(256, "innodb", 300.0, 0.3), at(1024, "innodb", 250.0, 0.3)]
    pts += [at(256, "innodb", 360.0, 45.0), at(256, "fifo", 355.0, 45.0),
            at(1024, "innodb", 320.0, 12.0), at(1024, "fifo", 300.0, 12.0)]
    checks = admission.check(pts)
    # The sweep's own rows still read the 0.3 s points: 250 / 400 at 1024.
    (keep,) = [c for c in checks if c["target"] == "reproduced: innodb n=4 keeps the peak"]
    assert keep["value"] == 250.0 / 400.0
    settled = {(c["target"], c["where"].split()[0]): c for c in checks
               if c["target"].startswith("settled")}
    at256 = settled[("settled: innodb n=4 keeps the peak", "256")]
    assert at256["ok"] and at256["value"] == 0.9
    assert "after 45 s of warm-up (InnoDB's delay needs ~45 s)" in at256["where"]
    at1024 = settled[("settled: innodb n=4 keeps the peak", "1024")]
    assert not at1024["ok"] and at1024["value"] == 0.8 and "~11 s" in at1024["where"]
    assert settled[("settled: fifo n=4 >= innodb, same N", "256")]["ok"]        # 0.986x
    assert not settled[("settled: fifo n=4 >= innodb, same N", "1024")]["ok"]   # 0.94x


def test_the_issue_targets_collapse_binding_and_fifo_at_1024():
    # Peak 400 at 2 clients; without a gate 250 at 256 (1.6x: met at 1.5x) and 280 at
    # 1024 (1.43x: missed). Where the gate binds, fifo at 0.97x innodb is missed (0.98).
    # fifo's best N at 1024 (n=4, 370) keeps 0.925 of the peak: met (0.9).
    pts = [point("innodb56", 2, "", "", 400.0), point("innodb56", 256, "", "", 250.0),
           point("innodb56", 1024, "", "", 280.0)]
    pts += [point("innodb56", t, "innodb", "n=4", 300.0) for t in (256, 1024)]
    pts += [point("innodb56", 256, "fifo", "n=4", 291.0),
            point("innodb56", 1024, "fifo", "n=4", 370.0),
            point("innodb56", 1024, "fifo", "n=2", 350.0)]
    checks = admission.check(pts)
    collapse = {c["where"]: c for c in checks if c["target"].startswith("reproduced: collapse")}
    assert collapse["256 clients"]["ok"] and collapse["256 clients"]["bound"] == 1.5
    assert not collapse["1024 clients"]["ok"]
    (binding,) = [c for c in checks if c["target"] == "fifo >= innodb, same N, gate binding"]
    assert not binding["ok"] and "below 0.98x at 1" in binding["text"]
    (keep,) = [c for c in checks if c["target"].startswith("fifo's best N")]
    assert keep["target"] == "fifo's best N (n=4) keeps the peak" and keep["ok"]
    assert keep["value"] == 370.0 / 400.0
