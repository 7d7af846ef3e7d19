"""`locklab advise`: the planted hot lock found, swapped and judged against its cold
neighbour; every verdict from synthetic runs; bad input refused in one line with
nothing stored; dry run, Ctrl-C and --resume, a server under a load command, and
the report of an advise run.

The planted program (tests/c/advise/hot_cold.c): eight workers on one mutex with a
section of a few nanoseconds until they have done SECTIONS between them, and two
keepers taking a second mutex in turn and sleeping 200 us holding it."""
import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import built_program, locklab, one_line_error, rows, skip_unless_built
from locklab import native
from locklab.advise import candidates, output, plan, verdict
from locklab.advise.plan import BASELINE, PASS, WHOLE, Variant
from locklab.advise.workloads import COLLAPSED, command_for
from locklab.sweep.presets import split_lock

ROOT = Path(__file__).resolve().parents[2]
HOT_COLD = ROOT / "tests" / "c" / "advise" / "hot_cold.c"
HOT, COLD = "hot_cold`hot_lock", "hot_cold`cold_lock"
# Small enough for the suite: the planted run's passes, and the hot sections of a run.
PASSES, SECTIONS = "6", "8000000"


@pytest.fixture(autouse=True)
def _built():
    skip_unless_built("liblocklab-swap.so", "liblocklab-prof.so")


@pytest.fixture(scope="module")
def hot_cold(tmp_path_factory):
    return built_program(tmp_path_factory, HOT_COLD)


def spec_of(locks, higher=False, passes=3, candidates=("ll", "futex")):
    return {"kind": plan.ADVISE, "workload": "batch", "command": ["./prog"], "program": None,
            "higher": higher, "collapse": 3.0, "passes": passes, "min_share": 0.05,
            "candidates": {"mutex": list(candidates), "rwlock": ["bravo"]},
            "locks": [{"lock": name, "kind": kind, "share": share, "wait_ns": 1, "count": 1}
                      for name, kind, share in locks]}


def run_rows(figures, phase=PASS):
    """Stored rows from {label: [figure or error text, ...]}."""
    out = []
    for label, values in figures.items():
        for rep, value in enumerate(values):
            failed = isinstance(value, str)
            out.append({"lock": label, "workload": phase, "rep": rep, "ok": not failed,
                        "error": value if failed else None,
                        "metric": None if failed else value, "wall_s": 1.0,
                        "swap_mutexes": 1, "swap_rwlocks": None})
    return out


def test_every_verdict_from_synthetic_runs():
    spec = spec_of([("p`hot", "mutex", 0.8), ("p`warm", "mutex", 0.1), ("p`shaky", "mutex", 0.05),
                    ("p`bad", "mutex", 0.05)])
    got = verdict.judge(spec, run_rows({
        "native": [10.0, 10.2, 9.8],
        "ll@p`hot": [5.0, 5.1, 4.9], "futex@p`hot": [8.0, 8.2, 7.8],
        "ll@p`warm": [10.1, 9.9, 10.0], "futex@p`warm": [12.0, 12.5, 11.5],
        "ll@p`shaky": [4.0, 9.0, 16.0], "futex@p`shaky": [10.0, 10.0, 10.0],
        "ll@p`bad": [f"{COLLAPSED}stopped after 30 s", f"{COLLAPSED}stopped after 30 s"],
        "futex@p`bad": [40.0, 41.0, 39.0],
    }))
    hot, warm, shaky, bad = got["locks"]
    assert (hot["verdict"], hot["best"]) == ("swap", "ll")
    assert hot["ratio"] == pytest.approx(2.0) and hot["ci_low"] > 1
    assert [c["outcome"] for c in hot["candidates"]] == ["better", "better"]
    assert warm["verdict"] == "keep" and warm["best"] == "ll"
    assert warm["candidates"][1]["outcome"] == "worse"
    assert shaky["verdict"] == "undecided" and shaky["best"] == "ll"
    assert shaky["ci_low"] < 1 < shaky["ci_high"] and shaky["settle"] > 3
    assert bad["verdict"] == "collapsed" and bad["best"] == "ll"
    assert [c["outcome"] for c in bad["candidates"]] == ["collapsed", "collapsed"]
    # The best candidate of the hottest lock with a swap verdict goes on every mutex.
    assert verdict.whole_variants(spec, run_rows({"native": [10.0, 10.2, 9.8],
                                                  "ll@p`hot": [5.0, 5.1, 4.9]})) \
        == [Variant("ll", "mutex")]


def test_a_name_the_swapper_never_found_is_said():
    spec = {**spec_of([("p`gone", "mutex", 0.9)], candidates=("ll",)), "figure": "wall time",
            "program": None}
    runs = run_rows({"native": [10.0, 10.1, 9.9], "ll@p`gone": [10.0, 10.2, 9.8]})
    for r in runs:
        r["swap_mutexes"] = 0 if r["lock"] != "native" else None
    judged = output.with_commands(spec, verdict.judge(spec, runs))
    assert judged["locks"][0]["matched"] == 0
    line = output.text(spec, judged, 7).splitlines()[1]
    assert line.endswith("(the swapper found no mutex by that name: nothing was swapped)")


def test_a_rate_judged_higher_and_a_worse_unconfirmed_candidate_kept():
    spec = spec_of([("p`lk", "rwlock", 0.5)], higher=True, candidates=())
    spec["candidates"]["rwlock"] = ["bravo", "ll"]
    got = verdict.judge(spec, run_rows({
        "native": [100.0, 100.0, 100.0],
        "rwlock=bravo@p`lk": [60.0, 80.0, 130.0],   # looks worse, not confirmed
        "rwlock=ll@p`lk": [101.0, 99.0, 100.0],
    }) + run_rows({"native": [100.0, 101.0], "rwlock=ll": [150.0, 151.0]}, WHOLE))
    (lk,) = got["locks"]
    assert lk["verdict"] == "keep"
    assert [c["outcome"] for c in lk["candidates"]] == ["undecided", "same"]
    (whole,) = got["whole"]
    assert (whole["kind"], whole["verdict"], whole["best"]) == ("rwlock", "swap", "ll")


def test_variants_are_the_program_sweeps_labels_and_reproduce():
    for v, label in ((Variant(), "native"), (Variant("tas:spin=yield", "mutex", "p`a"),
                                             "tas:spin=yield@p`a"),
                     (Variant("bravo", "rwlock", "p`b"), "rwlock=bravo@p`b"),
                     (Variant("ll", "mutex"), "ll"), (Variant("ll", "rwlock"), "rwlock=ll")):
        assert v.label() == label and Variant.of(label) == v
    spec = {"command": ["./srv", "-p", "1"], "program": None}
    assert command_for(spec, Variant("bravo", "rwlock", "srv`LOCK_grant")) == \
        "locklab run --rwlock-for 'srv`LOCK_grant=bravo' -- ./srv -p 1"
    assert command_for(spec, Variant("tas:spin=yield", "mutex")) == \
        "locklab run --lock tas --lock-opts spin=yield -- ./srv -p 1"
    memcached = {"program": "memcached", "clients": 64, "duration": 2, "passes": 5}
    assert command_for(memcached, Variant("ll", "mutex", "memcached`+0x3fde0")) == (
        "locklab sweep --program memcached --locks native --lock-for 'memcached`+0x3fde0=ll' "
        "--clients 64 --duration 2 --repeat 5")


def test_the_profile_ranked_and_the_locks_kept():
    reports = [{"locks": [{"name": "a`x", "kind": "mutex", "wait_ns": 60, "count": 3},
                          {"name": "a`f", "kind": "futex", "wait_ns": 30, "count": 1},
                          {"name": "a`r", "kind": "rwlock", "wait_ns": 6, "count": 1}]},
               {"locks": [{"name": "a`x", "kind": "mutex", "wait_ns": 0, "count": 0},
                          {"name": "a`c", "kind": "mutex", "wait_ns": 4, "count": 9}]}]
    ranked, total = plan.rank(reports)
    assert total == 100 and [e["lock"] for e in ranked] == ["a`x", "a`f", "a`r", "a`c"]
    spec = {"sites": [], "top": 3, "min_share": 0.05}
    assert [e["lock"] for e in plan.keep(ranked, spec)] == ["a`x", "a`r"]
    assert [e["lock"] for e in plan.keep(ranked, {**spec, "sites": ["a`c"]})] == ["a`c"]


@pytest.mark.parametrize("args, needle", [
    (["--", "false"], "native run, before any profiling: false exited with status 1"),
    (["--metric", r"ops: (\d+)", "--higher", "--", "echo", "all done"],
     "matched no number in echo's output; its last line: 'all done'"),
    (["--load", "true", "--ready-port", "PORT", "--ready-timeout", "1", "--", "sleep", "30"],
     "the server was not ready after 1 s (--ready-timeout)"),
    (["--higher", "--", "true"], "give --metric REGEX"),
    (["--metric", "(a)(b)", "--lower", "--", "true"], "it needs one, around the number"),
    (["--program", "memcached", "--", "true"], "drop '-- true'"),
    (["--ready-regex", "up", "--", "true"], "is for a server: give --load CMD too"),
    (["--load", "true", "--", "true"], "--ready-port PORT or --ready-regex RE"),
    (["--clients", "4", "--", "true"], "--clients is for --program"),
    (["--locks", "nope", "--", "true"], "--locks nope: unknown lock 'nope'"),
    (["--passes", "2", "--", "true"], "2 is out of range (valid: 3-1000"),
    ([], "no command to advise on"),
])
def test_bad_input_is_one_line_and_nothing_stored(tmp_path, args, needle):
    with socket.socket() as s:   # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = str(s.getsockname()[1])
    db = tmp_path / "a.db"
    line = one_line_error(locklab("advise", "--db", db, *[port if a == "PORT" else a for a in args]))
    assert needle in line, line
    assert not db.exists()


def test_a_lock_the_profile_does_not_name_is_refused(tmp_path, hot_cold):
    db = tmp_path / "a.db"
    line = one_line_error(locklab("advise", "--db", db, "--site", "hot_cold`nope", "--",
                                  hot_cold, "2", "1000"))
    assert "--site 'hot_cold`nope': the profile names no such lock" in line
    assert not db.exists()


def test_dry_run_runs_native_once_and_stores_nothing(tmp_path, hot_cold):
    db = tmp_path / "a.db"
    out = locklab("advise", "--db", db, "--dry-run", "--locks", "ll", "--", hot_cold, "2", "1000")
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0].startswith("advise") and lines[0].endswith(f"{hot_cold} 2 1000")
    assert any(line.startswith("candidates   mutex: ll (1)") for line in lines)
    assert lines[-1].startswith("dry run: one native run made")
    assert not db.exists()


def test_the_planted_hot_lock_is_swapped_and_the_cold_one_kept(tmp_path, hot_cold):
    # A verdict on wall times needs the CPUs: where other programs keep more threads
    # runnable than there are CPUs, the planted program's threads seldom run at once,
    # its hot lock is seldom contended, and the passes spread past any interval.
    busy = os.getloadavg()[0]
    if busy > (os.cpu_count() or 1):
        pytest.skip(f"the machine is busy (load average {busy:.0f} on {os.cpu_count()} CPUs): "
                    "no timing verdict can be had")
    db = tmp_path / "a.db"
    began = time.monotonic()
    out = locklab("advise", "--db", db, "--json", "--passes", PASSES, "--locks",
                  "ll,tas:spin=yield", "--", hot_cold, "8", SECTIONS, timeout=600)
    took = time.monotonic() - began
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    hot, cold = doc["locks"]
    assert hot["lock"] == HOT and cold["lock"] == COLD, doc["locks"]
    assert hot["kind"] == "mutex" and hot["wait_share"] > cold["wait_share"] >= 0.05
    assert hot["matched"] == cold["matched"] == 1
    assert hot["verdict"] == "swap" and hot["ci_low"] > 1, hot
    assert hot["command"] == \
        f"locklab run --lock-for '{HOT}={hot['best']}' -- {hot_cold} 8 {SECTIONS}"
    assert cold["verdict"] == "keep", cold
    (whole,) = doc["whole"]
    assert whole["kind"] == "mutex" and whole["best"] == hot["best"]
    assert took < 240, took
    # Stored as a run of its own: every run a point, the report shows the verdict first.
    points = rows(db)
    assert {p["workload"] for p in points} == {BASELINE, PASS, WHOLE}
    assert all(p["metric"] for p in points if p["ok"])
    report = tmp_path / "report"
    out = locklab("report", "1", "--db", db, "--out", report)
    assert out.returncode == 0, out.stderr
    printed = out.stdout.splitlines()
    assert printed[0] == str(report / "index.html")
    assert printed[1].startswith("verdict of advise run 1")
    assert printed[2].startswith(f"  {HOT} (mutex, ") and f"swap {HOT} to {hot['best']}: +" \
        in printed[2]
    page = (report / "index.html").read_text()
    assert page.index('id="verdict"') < page.index("candidates against native") \
        < page.index("hottest locks")
    assert json.loads((report / "advise.json").read_text())["locks"] == doc["locks"]
    # Not a sweep: neither resumed nor compared as one.
    assert "locklab advise --resume" in one_line_error(
        locklab("sweep", "--resume", "1", "--db", db))
    assert "not a sweep to compare" in one_line_error(locklab("compare", "1", "1", "--db", db))


def test_interrupted_then_resumed(tmp_path, hot_cold):
    db = tmp_path / "a.db"
    cmd = [sys.executable, "-m", "locklab.cli", "advise", "--db", str(db), "--passes", "3",
           "--locks", "futex", "--", str(hot_cold), "2", "2000000"]
    # A suite started in the background (make test &) inherits SIGINT ignored, and
    # Python keeps it so: give advise Ctrl-C back.
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and len(rows_or_none(db)) < 5:
        time.sleep(0.2)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    assert "resume with: locklab advise --resume 1" in err
    kept = len(rows(db))
    assert kept >= 5
    line = one_line_error(locklab("advise", "--resume", "1", "--passes", "4", "--db", db))
    assert "--resume goes on with the run's own plan; drop --passes" in line
    out = locklab("advise", "--resume", "1", "--db", db, timeout=600)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("verdict of advise run 1")
    done = rows(db)
    assert len(done) > kept
    assert len({(p["lock"], p["workload"], p["rep"]) for p in done}) == len(done)


def rows_or_none(db):
    try:
        return rows(db)
    except Exception:
        return []


SERVER = """
import socket, sys, threading
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen(64)
print("serving", flush=True)
lock = threading.Lock()
def serve(c):
    with c:
        while c.recv(64):
            with lock:
                c.sendall(b"ok")
while True:
    threading.Thread(target=serve, args=(s.accept()[0],), daemon=True).start()
"""
LOAD = """
import socket, sys, time
t = time.monotonic(); n = 0
with socket.create_connection(("127.0.0.1", int(sys.argv[1]))) as c:
    while n < 2000:
        c.sendall(b"q"); c.recv(64); n += 1
print(f"requests/s: {n / (time.monotonic() - t):.1f}")
"""


def test_a_server_under_its_load_command(tmp_path):
    (tmp_path / "server.py").write_text(SERVER)
    (tmp_path / "load.py").write_text(LOAD)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = str(s.getsockname()[1])
    db = tmp_path / "a.db"
    out = locklab("advise", "--db", db, "--json", "--passes", "3", "--ready-regex", "^serving",
                  "--load", f"{sys.executable} {tmp_path / 'load.py'} {port}",
                  "--metric", r"requests/s: ([\d.]+)", "--higher",
                  "--", sys.executable, tmp_path / "server.py", port, timeout=600)
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert doc["workload"] == "server" and doc["higher_is_better"]
    points = [p for p in rows(db) if p["workload"] == BASELINE]
    assert len(points) == 3 and all(p["ok"] and p["metric"] > 0 for p in points)
    # Every server was stopped: nothing listens on its port any more.
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", int(port)), timeout=1).close()


def test_the_default_mutex_candidates_survive_preemption():
    """Every lock advise tries on a mutex by default survives threads outnumbering the
    CPUs (locklab list's preemption_safe, with the entry's options applied): fifo-tp
    among those that park, and a spinlock at spin=auto, the policy that spins while
    that pays."""
    names = candidates.default(candidates.MUTEX)
    assert "fifo-tp" in names and candidates.SPINLOCK in names
    name, opts = split_lock(candidates.SPINLOCK)
    spinlock = native.algorithms(name, opts or None)[0]
    assert spinlock["spins"] and not spinlock["parks"] and opts == "spin=auto"
    for entry in names:
        name, opts = split_lock(entry)
        assert native.algorithms(name, opts or None)[0]["preemption_safe"] is True, entry
