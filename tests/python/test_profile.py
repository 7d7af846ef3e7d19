"""`locklab profile`: right answers on a program with a planted hot lock, every output
format, fork/exec, interval and signal dumps, allocators, and clear errors."""
import gzip
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import locklab, one_line_error
from locklab import native
from locklab.profile import session

ROOT = Path(__file__).resolve().parents[2]
PLANTED = ROOT / "tests" / "c" / "prof" / "planted.c"
GO = shutil.which("go") or ("/usr/local/go/bin/go" if os.path.exists("/usr/local/go/bin/go")
                            else None)
LIBDIR = Path("/usr/lib/x86_64-linux-gnu")


@pytest.fixture(scope="module")
def planted(tmp_path_factory):
    """The planted-hot-lock program, built with symbols, named `planted`."""
    exe = tmp_path_factory.mktemp("planted") / "planted"
    subprocess.run(["cc", "-O2", "-g", "-pthread", str(PLANTED), "-o", str(exe)], check=True)
    return exe


def profile_json(tmp_path, *cmd, extra=(), env=None, timeout=120):
    """Profile CMD to a JSON file; (the report, the program's own stdout)."""
    out = tmp_path / "profile.json"
    res = locklab("profile", "--json", "-o", out, *extra, "--", *cmd, env=env, timeout=timeout)
    assert res.returncode == 0, res.stderr
    return json.loads(out.read_text()), res.stdout


def lock(report, name):
    found = [l for l in report["locks"] if l["name"] == name]
    assert found, [l["name"] for l in report["locks"]]
    return found[0]


def events(lk, kind):
    return sum(e["count"] for e in lk["events"] if e["event"] == kind)


def test_planted_hot_lock_ranks_first_with_the_programs_count(tmp_path, planted):
    doc, stdout = profile_json(tmp_path, planted, "1.5", "4")
    truth = json.loads(stdout)
    assert doc["status"] == 0 and len(doc["processes"]) == 1
    rep = doc["processes"][0]
    first = rep["locks"][0]
    assert first["name"] == "planted`hot_lock"
    assert (first["kind"], first["where"], first["instances"]) == ("mutex", "static", 1)
    # Every lock call the program saw fail its trylock blocked: the profiler counts the
    # same calls, minus the rare release between the two trylocks.
    counted, expected = events(first, "mutex"), truth["hot_contended"]
    assert expected > 100
    assert 0.95 * expected <= counted <= expected, (counted, expected)
    assert first["events"][0]["stack"][0].startswith("planted`worker+0x")
    # The futex word: one event per sleep the program counted itself.
    fx = lock(rep, "planted`futex_word")
    assert fx["kind"] == "futex"
    assert abs(events(fx, "futex") - truth["futex_sleeps"]) <= max(2, truth["futex_sleeps"] // 20)
    rw = lock(rep, "planted`table_rw")
    assert rw["kind"] == "rwlock" and events(rw, "write") > 0
    q = lock(rep, "planted`queue_lock")
    assert events(q, "cond") > 0, "no condvar reacquisition counted"
    # The cold locks never contend (each thread has its own eighth); the heap ones that
    # were used (sampled) form one class, named by their init site.
    for lk in rep["locks"]:
        if lk["name"].startswith("planted`cold_locks"):
            assert lk["count"] == 0 and lk["where"] == "static"
    heap = [lk for lk in rep["locks"] if lk["where"] == "heap"]
    assert [(h["name"].startswith("planted`main+0x"), h["instances"]) for h in heap] == [(True, 32)]  # 4 threads x 8
    # Blame: what the holders are charged adds up to what the waiters waited.
    blamed = sum(h["blame_ns"] for h in first["holders"])
    assert 0.9 * first["wait_ns"] <= blamed <= 1.1 * first["wait_ns"]
    assert first["holders"][0]["stack"][0].startswith("planted`worker+0x")
    assert first["hold"]["samples"] > 0 and first["hold"]["total_ns"] > 0
    assert len(first["threads"]) == 4


def test_text_is_plockstat_style_with_histograms_and_filters(tmp_path, planted):
    res = locklab("profile", "-s", "4", "--top", "1", "--threads", "--", planted, "0.5", "4")
    assert res.returncode == 0, res.stderr
    text = res.stdout
    assert "Locks, by total wait" in text and "Mutex block" in text
    header = next(l for l in text.splitlines() if l.split()[:2] == ["Count", "nsec"])
    assert header.split() == ["Count", "nsec", "max-nsec", "total-ms", "hold-nsec", "Kind",
                              "Where", "Inst", "Lock"]
    rows = text.split("Locks, by total wait")[1].split("\n\n")[1].splitlines()
    assert len(rows) == 2 and rows[1].endswith("planted`hot_lock")  # header + --top 1
    assert "Time Distribution" in text and "planted`worker+0x" in text
    assert "Per thread" in text
    res = locklab("profile", "--min-wait", str(10**15), "--", planted, "0.2", "2")
    assert "no lock contention above the minimum wait" in res.stdout


def test_folded_and_pprof(tmp_path, planted):
    res = locklab("profile", "--folded", "-o", tmp_path / "f.txt", "--", planted, "0.4", "4")
    assert res.returncode == 0, res.stderr
    lines = (tmp_path / "f.txt").read_text().splitlines()
    parsed = [(l.rsplit(" ", 1)[0].split(";"), int(l.rsplit(" ", 1)[1])) for l in lines]
    assert all(frames[-1].startswith("planted`") for frames, _ in parsed)
    top = max(parsed, key=lambda p: p[1])
    # Frames are functions: the hot lock's waits, from two call sites, are one stack.
    assert top[0][0] == "planted`hot_lock" and top[0][-1] == "planted`worker"
    assert len({";".join(frames) for frames, _ in parsed}) == len(parsed)

    res = locklab("profile", "--pprof", "-o", tmp_path / "p.pb.gz", "--", planted, "0.4", "4")
    assert res.returncode == 0, res.stderr
    assert gzip.decompress((tmp_path / "p.pb.gz").read_bytes())


@pytest.mark.skipif(GO is None, reason="go is not installed")
def test_go_tool_pprof_reads_the_profile(tmp_path, planted):
    res = locklab("profile", "--pprof", "-o", tmp_path / "p.pb.gz", "--", planted, "0.4", "4")
    assert res.returncode == 0, res.stderr
    env = {**os.environ, "HOME": str(tmp_path), "GOFLAGS": "-mod=mod", "GOTOOLCHAIN": "local"}
    raw = subprocess.run([GO, "tool", "pprof", "-raw", str(tmp_path / "p.pb.gz")],
                         capture_output=True, text=True, env=env, timeout=120)
    assert raw.returncode == 0, raw.stderr
    assert "contentions/count delay/nanoseconds" in raw.stdout
    assert "lock:[planted`hot_lock]" in raw.stdout and "thread:[" in raw.stdout
    top = subprocess.run([GO, "tool", "pprof", "-top", "-tagfocus", "lock=hot_lock",
                          str(tmp_path / "p.pb.gz")], capture_output=True, text=True, env=env,
                         timeout=120)
    assert top.returncode == 0, top.stderr
    assert "planted`worker" in top.stdout and "planted`worker+0x" not in top.stdout


def test_fork_and_exec_each_process_reports(tmp_path, planted):
    script = f"{planted} 0.3 2 >/dev/null & {planted} 0.3 2 >/dev/null; wait"
    doc, _ = profile_json(tmp_path, "sh", "-c", script)
    procs = [p for p in doc["processes"] if p["exe"].endswith("/planted")]
    assert len(procs) == 2 and len({p["pid"] for p in procs}) == 2
    for p in procs:   # two programs at once on a loaded machine: no claim on the ranking
        assert lock(p, "planted`hot_lock")["count"] > 0


def test_interval_reports_stream_while_the_program_runs(tmp_path, planted):
    res = locklab("profile", "--interval", "0.3", "--top", "2", "--", planted, "1.4", "2")
    assert res.returncode == 0, res.stderr
    assert res.stdout.count("interval report") >= 3
    assert res.stdout.count("exit report") == 1
    assert "since the last interval" in res.stdout


def test_signal_dump_with_the_library_alone(tmp_path, planted):
    env = {**os.environ, "LD_PRELOAD": str(session.library_path()),
           "LOCKLAB_PROF_OUTPUT": str(tmp_path / "r.%p.txt")}
    proc = subprocess.Popen([planted, "1.2", "2"], env=env, stdout=subprocess.DEVNULL)
    time.sleep(0.5)
    proc.send_signal(signal.SIGPROF)
    assert proc.wait(timeout=30) == 0
    text = (tmp_path / f"r.{proc.pid}.txt").read_text()
    assert text.index("signal report") < text.index("exit report")
    assert "planted`hot_lock" in text


def test_library_alone_reports_on_stderr(planted):
    env = {**os.environ, "LD_PRELOAD": str(session.library_path())}
    res = subprocess.run([planted, "0.3", "2"], env=env, capture_output=True, text=True,
                         timeout=60)
    assert res.returncode == 0
    assert "locklab-prof: pid" in res.stderr and "planted`hot_lock" in res.stderr


@pytest.mark.parametrize("allocator", ["libjemalloc.so.2", "libtcmalloc_minimal.so.4"])
def test_programs_on_other_allocators(tmp_path, planted, allocator):
    lib = LIBDIR / allocator
    if not lib.exists():
        pytest.skip(f"{allocator} is not installed (scripts/setup-apt.sh installs it)")
    env = {**os.environ, "LD_PRELOAD": str(lib)}
    doc, stdout = profile_json(tmp_path, planted, "0.8", "4", "malloc", env=env, timeout=60)
    assert json.loads(stdout)["hot_acquired"] > 0
    assert doc["processes"][0]["locks"][0]["name"] == "planted`hot_lock"


def test_errors_are_one_line(tmp_path):
    line = one_line_error(locklab("profile", "--", "no-such-program-xyz"))
    assert "no-such-program-xyz: command not found" in line
    src = tmp_path / "s.c"
    src.write_text("int main(void) { return 0; }\n")
    static = tmp_path / "static"
    built = subprocess.run(["cc", "-static", str(src), "-o", str(static)], capture_output=True)
    if built.returncode == 0:
        line = one_line_error(locklab("profile", "--", static))
        assert "statically linked" in line
    assert "no command" in one_line_error(locklab("profile"))


EARLY_LIB = r"""
#include <pthread.h>
#include <stdatomic.h>
#include <unistd.h>
static pthread_mutex_t early_lock = PTHREAD_MUTEX_INITIALIZER;
static atomic_int started;
static void *spin(void *a) {
    (void)a;
    atomic_fetch_add(&started, 1);
    for (int i = 0; i < 20000; i++) {
        pthread_mutex_lock(&early_lock);
        for (volatile int k = 0; k < 300; k++);
        pthread_mutex_unlock(&early_lock);
    }
    return 0;
}
/* The threads find the lock held: contention whatever else the CPUs are doing. */
__attribute__((constructor)) static void early(void) {
    pthread_t t[3];
    pthread_mutex_lock(&early_lock);
    for (int i = 0; i < 3; i++) pthread_create(&t[i], 0, spin, 0);
    while (atomic_load(&started) < 3) usleep(1000);
    usleep(100000);
    pthread_mutex_unlock(&early_lock);
    for (int i = 0; i < 3; i++) pthread_join(t[i], 0);
}
"""


def test_threads_that_ran_before_the_constructor(tmp_path):
    """A library the program needs runs its constructor (threads, contention) before the
    preloaded profiler's own constructor: those locks are profiled all the same."""
    (tmp_path / "early.c").write_text(EARLY_LIB)
    (tmp_path / "main.c").write_text("int main(void) { return 0; }\n")
    subprocess.run(["cc", "-O1", "-shared", "-fPIC", "-pthread", "early.c", "-o", "libearly.so"],
                   cwd=tmp_path, check=True)
    subprocess.run(["cc", "main.c", "-Wl,--no-as-needed", "-L.", "-learly",
                    f"-Wl,-rpath,{tmp_path}", "-o", "early"], cwd=tmp_path, check=True)
    doc, _ = profile_json(tmp_path, tmp_path / "early")
    rep = doc["processes"][0]
    hot = lock(rep, "libearly.so`early_lock")
    assert hot["count"] > 0 and rep["end_ns"] - rep["start_ns"] > 0


MANY_LOCKS = r"""
#include <pthread.h>
#include <stdlib.h>
enum { HEAP = 20000, ROUNDS = 3, STATIC_ROUNDS = 1000 };
pthread_mutex_t statics[3];
/* One init site for every lock, heap and static: the statics stay apart by symbol. */
__attribute__((noinline)) static void init_lock(pthread_mutex_t *m) { pthread_mutex_init(m, 0); }
__attribute__((noinline)) static void take(pthread_mutex_t *m)
{
    pthread_mutex_lock(m);
    pthread_mutex_unlock(m);
}
int main(void)
{
    pthread_mutex_t *heap = malloc(HEAP * sizeof(*heap));
    for (int i = 0; i < HEAP; i++) init_lock(&heap[i]);
    for (int i = 0; i < 3; i++) init_lock(&statics[i]);
    for (int r = 0; r < ROUNDS; r++)
        for (int i = 0; i < HEAP; i++) take(&heap[i]);
    for (int r = 0; r < STATIC_ROUNDS; r++)
        for (int i = 0; i < 3; i++) take(&statics[i]);
    return 0;
}
"""


def test_holds_of_many_heap_locks_share_one_record_per_site(tmp_path):
    """Sampled holds of heap locks are kept per (init site, unlock caller), not per
    address: 20000 item-lock-like mutexes (more than a thread's 16384 records) are
    all counted, exactly, and still reported as 20000 instances; static locks made
    at the same site keep their own rows, by symbol."""
    (tmp_path / "many.c").write_text(MANY_LOCKS)
    subprocess.run(["cc", "-O1", "-g", "-pthread", "many.c", "-o", "many"], cwd=tmp_path,
                   check=True)
    doc, _ = profile_json(tmp_path, tmp_path / "many", extra=("--hold-every", "1"))
    rep = doc["processes"][0]
    assert rep["dropped"] == {"locks": 0, "stacks": 0, "records": 0}, rep["dropped"]
    heap = [lk for lk in rep["locks"] if lk["where"] == "heap"]
    assert [(h["name"].startswith("many`init_lock+0x"), h["instances"], h["hold"]["samples"])
            for h in heap] == [(True, 20000, 3 * 20000)]
    for i, name in enumerate(("many`statics", "many`statics+0x28", "many`statics+0x50")):
        st = lock(rep, name)
        assert (st["where"], st["instances"], st["hold"]["samples"]) == ("static", 1, 1000), st


def test_exit_status_is_the_programs(tmp_path):
    res = locklab("profile", "--", "sh", "-c", "exit 7")
    assert res.returncode == 7


def test_uncontended_locking_stays_on_the_fast_path(tmp_path):
    """Two threads, each on its own mutex: every lock is taken by the first
    trylock, so nothing is timed or recorded, and hold times are sampled 1 in
    --hold-every.  (The cost in ns, ~2 against mutrace's ~200, is a benchmark:
    `make profile-overhead`, figures in docs/profiler.md, not a timed test.)"""
    out = tmp_path / "prof.json"
    iters = 200000
    res = subprocess.run(
        [sys.executable, "-m", "locklab.cli", "profile", "--json", "--hold-every", "100",
         "-o", str(out), "--", str(native.bench_path()), "bench", "--lock", "pthread",
         "--threads", "2", "--mutexes", "2", "--hold-ns", "0", "--iterations", str(iters),
         "--json"],
        capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    (proc,) = json.loads(out.read_text())["processes"]
    bench_locks = [l for l in proc["locks"] if l["instances"] == 2]
    assert len(bench_locks) == 1, proc["locks"]
    lock = bench_locks[0]
    assert lock["count"] == 0 and lock["wait_ns"] == 0 and lock["events"] == []
    # 1 in 100 of the 2 x 200000 acquisitions, give or take a countdown per thread.
    assert abs(lock["hold"]["samples"] - 2 * iters / 100) <= 100, lock["hold"]
