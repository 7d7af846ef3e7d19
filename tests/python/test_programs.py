"""`locklab sweep --preset programs`: memcached and MariaDB with their locks swapped.

Tiny sweeps (one swapped lock beside the native server, 1 and 2 clients, 1 s points)
store measured points with the swapper's counts; a server that fails or dies
makes failed points with its reason; an interrupted sweep leaves no server running.
CI has the programs (`make setup`); the tests that need one skip without it.
"""
import itertools
import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import locklab, one_line_error, rows, stored
from locklab import native
from locklab.swap import check
from locklab.sweep import drivers, programs, store

SWAPPER = (native.native_dir() / "liblocklab-swap.so").is_file()
MEMCACHED = shutil.which("memcached") and (shutil.which("memcaslap") or shutil.which("memaslap"))
MARIADB = ((shutil.which("mariadbd") or shutil.which("mariadbd", path="/usr/sbin"))
           and shutil.which("mariadb-install-db") and shutil.which("sysbench"))
LOAD = shutil.which("memcaslap") or shutil.which("memaslap")

needs_swapper = pytest.mark.skipif(not SWAPPER, reason="liblocklab-swap.so not built "
                                   "(sanitized build)")
needs_memcached = pytest.mark.skipif(not MEMCACHED, reason="memcached and memcaslap not "
                                     "installed (make setup installs them)")
needs_mariadb = pytest.mark.skipif(not MARIADB, reason="mariadb-server and sysbench not "
                                   "installed (make setup installs them)")
TINY = ["--locks", "futex", "--clients", "1,2", "--duration", "1", "--warmup", "0",
        "--repeat", "1"]


def sweep(db, *args, env=None, timeout=180):
    return locklab("sweep", *args, "--db", db, env=env, timeout=timeout)


def check_measured(points, program, tests):
    assert {(p["lock"], p["threads"], p["workload_opts"]) for p in points} == {
        (lock, clients, test) for lock in ("native", "futex") for clients in (1, 2)
        for test in tests}
    for p in points:
        assert p["ok"] and p["error"] is None, p["error"]
        assert p["workload"] == f"program:{program}"
        assert p["ops_per_sec"] > 0 and p["iterations"] > 0
        assert p["latency_ns_p99"] > 0 and p["latency_ns_max"] >= p["latency_ns_p99"] / 2
        assert p["cpu_cores"] > 0
        assert p["client_errors"] == 0
        raw = json.loads(p["raw"])
        assert "127.0.0.1" in raw["server"] and raw["load"] and raw["version"]
        if p["lock"] == "futex":
            # The swap really happened: the server's own mutexes went through the swapper.
            assert p["swap_mutexes"] > 0 and p["swap_passthrough"] is not None
            assert raw["swap"]["lock"] == "futex" and raw["swap"]["acquisitions"] > 0
        else:
            assert p["swap_mutexes"] is None and "swap" not in raw


@pytest.fixture(scope="module")
def memcached_db(tmp_path_factory):
    if not (SWAPPER and MEMCACHED):
        pytest.skip("needs memcached, memcaslap and liblocklab-swap.so")
    db = tmp_path_factory.mktemp("memcached") / "l.db"
    out = sweep(db, "--program", "memcached", *TINY)
    assert out.returncode == 0, out.stderr
    return db, out.stderr


def test_memcached_points_are_measured_and_swapped(memcached_db):
    db, err = memcached_db
    points = rows(db)
    check_measured(points, "memcached", [""])
    assert all(" -t 4 " in json.loads(p["raw"])["server"] for p in points)
    (run,) = rows(db, "SELECT * FROM runs")
    spec = json.loads(run["spec"])
    assert spec["locks"] == ["native", "futex"] and spec["programs"] == ["memcached"]
    assert run["finished"]
    assert "[1/4] native memcached c=1  ETA ?" in err


def test_the_report_draws_program_points(memcached_db, tmp_path):
    db, _ = memcached_db
    out = locklab("report", "latest", "--db", db, "--out", tmp_path / "r")
    assert out.returncode == 0, out.stderr
    index = (tmp_path / "r" / "index.html").read_text()
    assert "Programs: real servers with their locks swapped" in index
    for name in ("programs_throughput.png", "programs_p99.png", "programs_cpu.png"):
        assert f'src="{name}"' in index
        assert (tmp_path / "r" / name).stat().st_size > 5000
    # No benchmark charts for a run without benchmark points.
    assert "ns_per_iter.png" not in index
    md = (tmp_path / "r" / "programs.md").read_text()
    assert "| clients | best | worst | best/worst | futex/native |" in md
    summary = md.split("| clients | best")[1].splitlines()[2:4]
    assert [line.split("|")[1].strip() for line in summary] == ["1", "2"]
    points = {(p["lock"], p["threads"]): p for p in rows(db)}
    ratio = points[("futex", 2)]["ops_per_sec"] / points[("native", 2)]["ops_per_sec"]
    assert summary[1].split("|")[5].strip() == f"{ratio:.3g}"


def test_compare_matches_program_points(memcached_db):
    db, _ = memcached_db
    out = locklab("compare", "1", "1", "--db", db)
    assert out.returncode == 0, out.stderr
    assert "futex memcached" in out.stdout and "4 points matched" in out.stdout
    assert "ops_per_sec 1.000" in out.stdout


@needs_swapper
@needs_mariadb
def test_mariadb_points_are_measured_and_swapped(tmp_path):
    db = tmp_path / "l.db"
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    out = sweep(db, "--program", "mariadb", *TINY, env={**os.environ, "TMPDIR": str(tmp)})
    assert out.returncode == 0, out.stderr
    points = rows(db)
    check_measured(points, "mariadb", ["oltp_point_select", "oltp_read_only"])
    assert all(p["client_reconnects"] == 0 for p in points)
    assert all("--skip-grant-tables" in json.loads(p["raw"])["server"] for p in points)
    # The sweep's temporary directory (data directory copies included) is gone.
    assert list(tmp.iterdir()) == []


def script(path: Path, text: str) -> Path:
    path.write_text(text)
    path.chmod(0o755)
    return path


@needs_swapper
@pytest.mark.skipif(not LOAD, reason="memcaslap not installed (make setup installs it)")
def test_a_server_that_cannot_start_fails_its_points_with_its_reason(tmp_path):
    bogus = script(tmp_path / "memcached", "#!/bin/sh\necho \"memcached: bad option -- 'Q'\" >&2\n"
                   "exit 64\n")
    env = {**os.environ, "LOCKLAB_MEMCACHED": str(bogus)}
    db = tmp_path / "l.db"
    out = sweep(db, "--program", "memcached", *TINY, env=env)
    assert out.returncode == 1, out.stderr
    points = rows(db)
    assert len(points) == 4 and not any(p["ok"] for p in points)
    assert {p["error"] for p in points} == {
        "the server exited with status 64 before listening: memcached: bad option -- 'Q'"}
    assert "4 failed" in out.stderr.splitlines()[-1]


@needs_swapper
@needs_memcached
def test_a_server_that_dies_under_load_fails_that_point_and_the_sweep_goes_on(tmp_path):
    # The server is killed 1.5 s after its start, in the first point's load.
    dying = script(tmp_path / "memcached", f"#!/bin/sh\n{shutil.which('memcached')} \"$@\" &\n"
                   "sleep 1.5\nkill -9 $!\necho 'memcached died' >&2\nexit 70\n")
    env = {**os.environ, "LOCKLAB_MEMCACHED": str(dying)}
    db = tmp_path / "l.db"
    out = sweep(db, "--program", "memcached", *TINY, env=env)
    assert out.returncode == 1, out.stderr
    points = {(p["lock"], p["threads"]): p for p in rows(db)}
    assert len(points) == 4
    for lock in ("native", "futex"):
        first, second = points[(lock, 1)], points[(lock, 2)]
        assert not first["ok"] and not second["ok"]
        assert first["error"] == ("the server exited with status 70 during the load: "
                                  "memcached died")
        assert second["error"].startswith("not run: the server was gone")
        # What the load generator measured before the failure is kept for inspection.
        assert first["ops_per_sec"] > 0


MUTE = """#!/usr/bin/env python3
import socket, sys
port = int(sys.argv[sys.argv.index("-p") + 1])
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", port))
s.listen(512)
held = []
while True:
    held.append(s.accept()[0])
"""


@pytest.mark.skipif(not LOAD, reason="memcaslap not installed (make setup installs it)")
def test_a_server_that_never_answers_is_killed_as_stuck(tmp_path):
    # It listens and takes connections, and answers nothing: memcaslap waits forever.
    mute = script(tmp_path / "memcached", MUTE)
    env = {**os.environ, "LOCKLAB_MEMCACHED": str(mute)}
    db = tmp_path / "l.db"
    start = time.monotonic()
    out = sweep(db, "--program", "memcached", *TINY, "--locks", "native", "--timeout", "3",
                env=env)
    assert time.monotonic() - start < 30
    assert out.returncode == 1, out.stderr
    first, second = rows(db)
    assert first["error"] == "memcaslap timed out after 3 s, killed"
    assert second["error"] == ("not run: the server was stuck (memcaslap timed out after 3 s, "
                               "killed)")


def servers_under(directory: Path) -> list[int]:
    """Processes whose working directory is inside DIRECTORY."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cwd = os.readlink(entry / "cwd")
        except OSError:
            continue
        if cwd.startswith(str(directory)):
            found.append(int(entry.name))
    return found


@needs_swapper
@needs_memcached
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGKILL])
def test_an_interrupted_sweep_leaves_no_server_running(tmp_path, sig):
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    db = tmp_path / "l.db"
    env = {**os.environ, "TMPDIR": str(tmp)}
    proc = subprocess.Popen([sys.executable, "-m", "locklab.cli", "sweep", "--program",
                             "memcached", *TINY, "--db", str(db)], env=env,
                            stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        deadline = time.monotonic() + 60
        while stored(db) < 1 or not servers_under(tmp):  # the second point's server is up
            assert time.monotonic() < deadline and proc.poll() is None
            time.sleep(0.05)
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    deadline = time.monotonic() + 10
    while servers_under(tmp) and time.monotonic() < deadline:  # SIGKILL: PDEATHSIG
        time.sleep(0.05)
    assert servers_under(tmp) == []
    points = rows(db)
    assert 1 <= len(points) < 4 and all(p["ok"] for p in points)
    if sig == signal.SIGKILL:
        assert proc.returncode == -signal.SIGKILL
        return
    assert proc.returncode == 128 + sig, err
    assert "resume with: locklab sweep --resume 1" in err
    assert list(tmp.iterdir()) == []  # the sweep's directory is removed
    if sig == signal.SIGINT:
        out = sweep(db, "--resume", "1")
        assert out.returncode == 0, out.stderr
        after = rows(db)
        assert len(after) == 4 and after[:len(points)] == points


@pytest.mark.parametrize("args, needle", [
    (["--program", "nginx"], "argument --program: invalid choice: 'nginx'"),
    (["--preset", "quick", "--program", "memcached"],
     "--program applies to --preset programs, not --preset quick"),
    (["--preset", "programs", "--hold-ns", "0"], "--hold-ns does not apply to --preset programs"),
    (["--program", "mariadb", "--gate", "fifo"], "--gate does not apply to --preset programs"),
    (["--program", "memcached", "--duration", "0.5"], "--duration 0.5: program points run whole"),
    (["--program", "memcached", "--warmup", "1.5"], "--warmup 1.5: program points run whole"),
    (["--resume", "1", "--program", "memcached"], "drop --program"),
    (["--locks", "futex", "--lock-for", "memcached`x=tas"], "--lock-for swaps a program's"),
    (["--program", "memcached", "--lock-for", "memcached`x"], "--lock-for 'memcached`x': not "
     "SITE=NAME"),
    (["--resume", "1", "--lock-for", "a=tas"], "drop --lock-for"),
    (["--rwlock", "ll"], "--rwlock swaps a program's rwlocks: give --program"),
    (["--workload", "rw", "--rwlock", "ll"], "--rwlock swaps a program's rwlocks"),
    (["--program", "mariadb", "--rwlock", ":bias=0"], "--rwlock ':bias=0': not NAME[:K=V,...]"),
    (["--program", "mariadb", "--rwlock", "ll@x"], "--rwlock 'll@x': not NAME[:K=V,...]"),
    (["--resume", "1", "--rwlock", "ll"], "drop --rwlock"),
])
def test_bad_program_sweeps_are_refused_in_one_line(tmp_path, args, needle):
    db = tmp_path / "l.db"
    assert needle in one_line_error(sweep(db, *args))
    assert not db.exists()


@needs_swapper
@pytest.mark.parametrize("args, env, needle", [
    (["--locks", "absl"], {}, "unknown lock 'absl'"),  # a peer lock: not the swapper's
    (["--locks", "ttas", "--lock-opts", "bogus=1"], {}, "unknown option 'bogus'"),
    (["--locks", "futex"], {"LOCKLAB_MEMCACHED": "/nonexistent/memcached"},
     "LOCKLAB_MEMCACHED=/nonexistent/memcached: not an executable file"),
    (["--locks", "futex"], {"LOCKLAB_MONITOR": "1"}, "would run every swapped server with "
     "the lock monitor on: unset it"),
    (["--lock-for", "memcached`x=nosuch"], {}, "unknown lock 'nosuch'"),
    (["--rwlock", "nosuch"], {}, "unknown rwlock 'nosuch'"),
    (["--rwlock", "ll:bogus=1"], {}, "unknown option 'bogus' for rwlock 'll'"),
    # The mutexes' options with no lock that serves the mutexes: they would go nowhere.
    (["--locks", "native", "--rwlock", "ll", "--lock-opts", "spin_ns=1"], {},
     "--lock-opts applies to the locks that serve the servers' mutexes"),
])
@needs_memcached
def test_program_sweeps_refuse_what_they_cannot_run(tmp_path, args, env, needle):
    db = tmp_path / "l.db"
    assert needle in one_line_error(sweep(db, "--program", "memcached", *args,
                                          env={**os.environ, **env}))
    assert not db.exists()


def test_the_preset_picks_every_parking_lock_the_swapper_serves_and_native():
    if not SWAPPER:
        pytest.skip("liblocklab-swap.so not built (sanitized build)")
    from locklab.sweep import presets
    locks = programs.expand_locks(presets.spec("programs", {})["locks"])
    parking = [a["name"] for a in native.algorithms() if a["parks"]]
    # The spinlocks yield: with PAUSE alone mcs left MariaDB stuck at 64 clients.
    assert locks[0] == "native" and locks[-2:] == ["tas:spin=yield", "mcs:spin=yield"]
    env = programs.swap_env("mcs:spin=yield", "", None)
    assert (env["LOCKLAB_SWAP_LOCK"], env["LOCKLAB_SWAP_LOCK_OPTS"]) == ("mcs", "spin=yield")
    assert programs.swap_env("ttas:spin=yield", "backoff_max_ns=100", None)[
        "LOCKLAB_SWAP_LOCK_OPTS"] == "spin=yield,backoff_max_ns=100"
    assert set(locks[1:-2]) == {lock for lock in parking if check.served(lock)}
    assert {"pthread", "futex", "ll", "innodb56"} <= set(locks)
    assert "absl" not in locks  # parks, but is no liblocklab lock: the swapper refuses it


def test_the_grid_runs_each_lock_on_one_server_per_pass():
    from locklab.sweep import kinds, presets
    spec = presets.spec("programs", {"locks": ["native", "futex"], "threads": [1, 4]})
    grid = kinds.grid(spec)
    assert len(grid) == 3 * 2 * 2 * 3  # passes x locks x clients x (1 + 2 load tests)
    servers = [key for key, _ in itertools.groupby(grid, programs.server_key)]
    assert len(servers) == len(set(servers)) == 3 * 2 * 2  # passes x locks x programs
    assert [p.rep for p in grid[:12]] == [0] * 12 and grid[12].rep == 1  # passes outermost
    # On one server, every load test at one client count before the next count: a
    # server stuck at many clients costs only the points after it.
    mariadb = [(p.threads, p.workload_opts) for p in grid
               if p.workload == "program:mariadb" and p.lock == "native" and p.rep == 0]
    assert mariadb == [(1, "oltp_point_select"), (1, "oltp_read_only"),
                       (4, "oltp_point_select"), (4, "oltp_read_only")]


def test_an_rwlock_point_takes_no_mutex_options_and_swaps_the_rwlocks_alone():
    from locklab.sweep import kinds, presets
    spec = presets.spec("programs", {"locks": ["native", "futex", "rwlock=ll:bias=0"],
                                     "lock_opts": ["", "spin_ns=100"], "threads": [1],
                                     "repeat": 1, "programs": ["mariadb"]})
    grid = kinds.grid(spec)
    # futex in both variants; native and the rwlock's server once each, without them.
    assert [(p.lock, p.lock_opts) for p in grid if p.workload_opts == "oltp_point_select"] == [
        ("native", ""), ("futex", ""), ("futex", "spin_ns=100"), ("rwlock=ll:bias=0", "")]
    if SWAPPER:
        env = programs.swap_env("rwlock=ll:bias=0", "spin_ns=100", "/tmp/s.jsonl")
        assert (env["LOCKLAB_SWAP_RWLOCK"], env["LOCKLAB_SWAP_RWLOCK_OPTS"]) == ("ll", "bias=0")
        assert "LOCKLAB_SWAP_LOCK" not in env and "LOCKLAB_SWAP_LOCK_OPTS" not in env
        assert env["LOCKLAB_SWAP_STATS_JSON"] == "/tmp/s.jsonl"


@needs_swapper
@needs_mariadb
def test_mariadb_with_its_rwlocks_swapped_is_measured_beside_native(tmp_path):
    """sweep --rwlock ll: MariaDB's pthread rwlocks served by ll, its mutexes glibc's; the
    swapper's counts say so, and the report ranks the lock against native."""
    db = tmp_path / "l.db"
    out = sweep(db, "--program", "mariadb", "--locks", "native", "--rwlock", "ll",
                "--clients", "2", "--duration", "1", "--warmup", "0", "--repeat", "1")
    assert out.returncode == 0, out.stderr
    points = rows(db)
    assert sorted((p["lock"], p["workload_opts"]) for p in points) == [
        ("native", "oltp_point_select"), ("native", "oltp_read_only"),
        ("rwlock=ll", "oltp_point_select"), ("rwlock=ll", "oltp_read_only")]
    for p in points:
        assert p["ok"] and p["ops_per_sec"] > 0 and p["lock_opts"] == ""
        raw = json.loads(p["raw"])
        if p["lock"] == "native":
            assert p["swap_rwlocks"] is None and "swap" not in raw
            continue
        assert p["swap_rwlocks"] > 0 and p["swap_mutexes"] == 0
        assert raw["swap"]["lock"] is None and raw["swap"]["rwlocks"]["lock"] == "ll"
        assert raw["swap"]["rwlocks"]["acquisitions"] > 0
    report = locklab("report", "latest", "--db", db, "--out", tmp_path / "r")
    assert report.returncode == 0, report.stderr
    md = (tmp_path / "r" / "programs.md").read_text()
    assert "| clients | best | worst | best/worst | rwlock=ll/native |" in md
    assert "| rwlocks swapped |" in md


MEMCASLAP = """Total Statistics (100 events)
   Min:        20
   Max:       700
   Avg:        90
   Geo:     70.00
   Std:     20.00
   Log2 Dist:
       4:        0       10       80        5
       8:        3        1        1

cmd_get: 90
cmd_set: 10
get_misses: 0
written_bytes: 1
read_bytes: 1
object_bytes: 1

Run time: 1.0s Ops: 100 TPS: 100 Net_rate: 0.1M/s
"""

SYSBENCH = """SQL statistics:
    queries performed:
        read:                            31612
        other:                           4516
        total:                           36128
    transactions:                        2258   (1919.65 per sec.)
    queries:                             36128  (30714.44 per sec.)
    ignored errors:                      3      (0.00 per sec.)
    reconnects:                          1      (0.00 per sec.)

General statistics:
    total time:                          1.1755s
    total number of events:              2258

Latency (ms):
         min:                                    0.84
         avg:                                  121.96
         max:                                  361.79
         99th percentile:                      303.33
"""


def test_memcaslap_p99_is_the_upper_edge_of_its_bucket():
    # Buckets (2^(k-1), 2^k] us: 99 of 100 events are at or below the 2^9 bucket.
    result = drivers.parse_memcaslap(MEMCASLAP, "")
    assert result["latency_ns_p99"] == 512_000.0
    assert result["latency_ns_max"] == 700_000.0
    assert (result["ops_per_sec"], result["iterations"], result["client_errors"]) == (100, 100, 0)
    assert programs.judge(result) is None
    lost = drivers.parse_memcaslap(MEMCASLAP.replace("get_misses: 0", "get_misses: 7"), "")
    assert programs.judge(lost) == "the load generator counted 7 errors"
    with pytest.raises(drivers.Failed, match="no summary in memcaslap's output: boom"):
        drivers.parse_memcaslap("servers: x\n", "boom\n")


def test_sysbench_errors_and_reconnects_fail_the_point():
    result = drivers.parse_sysbench(SYSBENCH, "")
    assert result["ops_per_sec"] == 30714.44 and result["iterations"] == 36128
    assert result["latency_ns_p99"] == pytest.approx(303.33e6)
    assert result["duration_s"] == 1.1755
    assert (result["client_errors"], result["client_reconnects"]) == (3, 1)
    assert programs.judge(result) == "the load generator counted 3 errors"
    clean = drivers.parse_sysbench(SYSBENCH.replace("errors:                      3",
                                                     "errors:                      0"), "")
    assert programs.judge(clean) == "the load generator reconnected 1 times"


def test_a_database_without_the_program_columns_gains_them(tmp_path):
    db = tmp_path / "before.db"
    conn = store.connect(db, create=True)
    for name in store.PROGRAM_METRIC_NAMES:
        conn.execute(f"ALTER TABLE points DROP COLUMN {name}")
    conn.close()
    old = store.connect(db, write=False)  # read as it is: the columns read as NULL
    run = sqlite3.connect(db)
    run.execute("INSERT INTO runs (started, spec) VALUES ('then', '{}')")
    run.execute("INSERT INTO points (run_id, lock, lock_opts, threads, mutexes, hold_ns, "
                "outside_ns, rep, ok, finished) VALUES (1, 'pthread', '', 1, 1, 0, 0, 0, 1, 'x')")
    run.commit()
    run.close()
    (row,) = store.points(old, 1)
    assert row["cpu_cores"] is None and row["swap_mutexes"] is None
    conn = store.connect(db)
    point = store.Point("futex", "", 4, 0, 0, 0, 0, "program:memcached", "", "", "")
    store.record_point(conn, 1, point, error=None, wall_s=1.0, raw='{"load": "x"}',
                       result={"ops_per_sec": 5.0, "cpu_cores": 1.5, "client_errors": 0})
    store.record_swap_stats(conn, 1, [point], {"pid": 1, "mutexes": 9,
                                               "passthrough": {"pshared": 1, "robust": 2}})
    new = store.points(conn, 1)[1]
    assert (new["cpu_cores"], new["client_errors"], new["swap_mutexes"],
            new["swap_passthrough"], new["swap_rwlocks"]) == (1.5, 0, 9, 3, None)
    assert json.loads(rows(db)[1]["raw"]) == {"load": "x", "swap": {
        "pid": 1, "mutexes": 9, "passthrough": {"pshared": 1, "robust": 2}}}
    (median,) = [m for m in store.medians(store.points(conn, 1)) if m["lock"] == "futex"]
    assert median["cpu_cores"] == 1.5 and median["swap_mutexes"] == 9
    store.record_swap_stats(conn, 1, [point], {"pid": 1, "mutexes": 0, "rwlocks": {
        "lock": "ll", "swapped": 17}})
    assert store.points(conn, 1)[1]["swap_rwlocks"] == 17


def test_compare_refuses_a_program_run_against_a_benchmark_run(tmp_path):
    db = tmp_path / "l.db"
    conn = store.connect(db, create=True)
    machine = dict.fromkeys(store.MACHINE, "")
    for workload, mutexes in (("mutex", 1), ("program:memcached", 0)):
        run = store.new_run(conn, {}, machine, {})
        store.record_point(conn, run, store.Point("futex", "", 4, mutexes, 0, 0, 0, workload),
                           error=None, wall_s=1.0, raw=None, result={"ops_per_sec": 5.0})
    conn.close()
    line = one_line_error(locklab("compare", "1", "2", "--db", db))
    assert "run 1 measured the mutex workload and run 2 the program:memcached workload" in line


def test_a_lock_that_failed_some_passes_is_marked_and_not_ranked():
    from locklab.report import programs as program_report

    def point(lock, qps, reps):
        return {"workload": "program:mariadb", "workload_opts": "oltp_point_select",
                "lock": lock, "lock_opts": "", "threads": 256, "ops_per_sec": qps, "reps": reps}

    points = [point("native", 100.0, 3), point("futex", 80.0, 3), point("mcs", 150.0, 1)]
    headers, table = program_report.summary_rows(
        points, ("program:mariadb", "oltp_point_select"), 3)
    assert headers == ["clients", "best", "worst", "best/worst", "futex/native", "mcs/native"]
    # mcs's one lucky pass of three does not make it the best lock.
    assert table == [[256, "native", "futex", 1.25, 0.8, "1.5 (1/3)"]]


@needs_swapper
def test_a_site_lock_swaps_the_named_mutexes_alone():
    """--lock-for SITE=NAME is the point's lock NAME@SITE: the swapper gets SITE (and the
    mangled symbols a demangled C++ SITE stands for), no --lock, so the rest stays glibc's."""
    assert programs.site_lock("mariadbd`tdc_init+0xd8=tas:spin=yield") == \
        "tas:spin=yield@mariadbd`tdc_init+0xd8"
    env = programs.swap_env("ttas@prog`hot", "spin=yield", None)
    assert env["LOCKLAB_SWAP_LOCK_FOR"] == "prog`hot=ttas:spin=yield"
    assert "LOCKLAB_SWAP_LOCK" not in env
    mariadbd = shutil.which("mariadbd") or "/usr/sbin/mariadbd"
    if os.path.exists(mariadbd):
        env = programs.swap_env("tas@mariadbd`tdc_init+0xd8", "", None, mariadbd)
        assert env["LOCKLAB_SWAP_LOCK_FOR"].split(";") == [
            "mariadbd`tdc_init+0xd8=tas", "mariadbd`_Z8tdc_initv+0xd8=tas"]
