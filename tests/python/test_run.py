"""`locklab run`: a program's pthread mutexes swapped (liblocklab-swap.so), its status and
death signal passed through, refusals before anything runs, and the per-process stats."""
import errno
import json
import os
import signal
import subprocess
import sys

import pytest

from conftest import locklab, one_line_error
from locklab import native

PROGRAM = r"""
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t c = PTHREAD_COND_INITIALIZER;
static long counter;
static int ready;
static pthread_mutex_t held = PTHREAD_MUTEX_INITIALIZER, late = PTHREAD_MUTEX_INITIALIZER;
#define MANY 100
static pthread_mutex_t many[MANY];

/* Every one of many[] made and locked once, by one thread: nothing waits. */
static void lock_many(void)
{
    for (int i = 0; i < MANY; i++) {
        if (pthread_mutex_lock(&many[i]) || pthread_mutex_unlock(&many[i]))
            exit(3);
    }
}

static void *queue_on_held(void *p)
{
    (void)p;
    pthread_mutex_lock(&held);   /* never granted: main exits holding it */
    return NULL;
}

/* After main returns: the swapper's destructor may have run, the locks must still work. */
static void at_exit(void)
{
    pthread_mutex_lock(&late);
    printf("late %d\n", pthread_mutex_trylock(&held));
    pthread_mutex_unlock(&late);
}

static void *work(void *p)
{
    (void)p;
    for (int i = 0; i < 20000; i++) {
        pthread_mutex_lock(&m);
        counter++;
        pthread_mutex_unlock(&m);
    }
    pthread_mutex_lock(&m);
    ready++;
    pthread_cond_broadcast(&c);
    pthread_mutex_unlock(&m);
    return NULL;
}

int main(int argc, char **argv)
{
    const char *what = argc > 1 ? argv[1] : "count";
    if (!strcmp(what, "kill"))
        raise(SIGTERM);
    if (!strcmp(what, "exit"))
        return atoi(argv[2]);
    if (!strcmp(what, "exitheld")) {
        pthread_t q;
        pthread_mutex_lock(&held);
        pthread_create(&q, NULL, queue_on_held, NULL);
        usleep(20000);   /* queued (or asleep) behind main */
        atexit(at_exit);
        return 5;
    }
    if (!strcmp(what, "robust")) {
        pthread_mutexattr_t a;
        pthread_mutex_t r, s;
        pthread_mutexattr_init(&a);
        pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_ROBUST);
        pthread_mutex_init(&r, &a);
        pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_STALLED);
        pthread_mutexattr_setpshared(&a, PTHREAD_PROCESS_SHARED);
        pthread_mutex_init(&s, &a);
        pthread_mutex_lock(&r);
        pthread_mutex_unlock(&r);
        pthread_mutex_lock(&s);
        pthread_mutex_unlock(&s);
        return 0;
    }
    if (!strcmp(what, "many") || !strcmp(what, "forkmany")) {
        for (int i = 0; i < MANY; i++)
            pthread_mutex_init(&many[i], NULL);
        lock_many();
        if (!strcmp(what, "many"))
            return 0;
        /* The child drops the parent's state of each: many[0] held across the
         * fork (its unlock), the others free (their first lock). */
        pthread_mutex_lock(&many[0]);
        pid_t pid = fork();
        if (pid == 0) {
            if (pthread_mutex_unlock(&many[0]))
                exit(4);
            lock_many();
            lock_many();
            exit(0);
        }
        printf("child %d\n", (int)pid);
        pthread_mutex_unlock(&many[0]);
        int st;
        waitpid(pid, &st, 0);
        return WIFEXITED(st) ? WEXITSTATUS(st) : 99;
    }
    if (!strcmp(what, "fork")) {
        pid_t pid = fork();
        if (pid == 0) {
            pthread_mutex_lock(&m);
            pthread_mutex_unlock(&m);
            exit(0);
        }
        int st;
        waitpid(pid, &st, 0);
        return WIFEXITED(st) ? WEXITSTATUS(st) : 99;
    }
    pthread_t t[4];
    for (int i = 0; i < 4; i++)
        pthread_create(&t[i], NULL, work, NULL);
    pthread_mutex_lock(&m);
    while (ready < 4)
        pthread_cond_wait(&c, &m);
    pthread_mutex_unlock(&m);
    for (int i = 0; i < 4; i++)
        pthread_join(t[i], NULL);
    printf("%ld\n", counter);
    return 0;
}
"""


# Every algorithm; the pure spinlocks wait with sched_yield on a 2-core machine.
LOCKS = ["pthread", "pthread-adaptive", "innodb56", "spin-trylock", "tas", "ttas", "ticket",
         "mcs", "futex", "ll"]


def spin_opts(lock):
    return ["--lock-opts", "spin=yield"] if lock in ("tas", "ttas", "ticket", "mcs") else []


@pytest.fixture(scope="module")
def program(tmp_path_factory):
    d = tmp_path_factory.mktemp("swapped")
    (d / "p.c").write_text(PROGRAM)
    exe = d / "p"
    subprocess.run(["cc", "-O2", "-pthread", str(d / "p.c"), "-o", str(exe)], check=True)
    return exe


@pytest.fixture(autouse=True)
def _built():
    if not (native.native_dir() / "liblocklab-swap.so").is_file():
        pytest.skip("liblocklab-swap.so not built (sanitized build)")


@pytest.mark.parametrize("lock", LOCKS)
def test_counts_add_up_under_every_lock(program, lock, tmp_path):
    stats = tmp_path / "stats.json"
    res = locklab("run", "--lock", lock, *spin_opts(lock), "--stats-json", stats, "--", program,
                  timeout=60)
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == str(4 * 20000)
    (doc,) = [json.loads(line) for line in stats.read_text().splitlines()]
    assert doc["lock"] == lock and doc["pid"] > 0
    assert set(doc) >= {"pid", "lock", "mutexes", "acquisitions", "contended", "passthrough",
                        "conds", "max_waiting"}
    # counter's mutex and the condvar's; every acquisition counted (flushed at thread exit)
    assert doc["mutexes"] >= 1
    assert doc["acquisitions"] >= 4 * 20000
    assert 0 <= doc["contended"] <= doc["acquisitions"]
    assert doc["conds"] >= 0
    # four workers and main: no more can wait in a lock at once; a contended lock had one
    assert doc["max_waiting"] <= 5
    assert doc["contended"] == 0 or doc["max_waiting"] >= 1
    assert doc["passthrough"] == {"pshared": 0, "robust": 0, "pi": 0, "pp": 0}
    # One cache line per lock: every registered algorithm's state fits it (ll included).
    assert doc["slot_bytes"] == 64


def bytes_per_lock(doc):
    """The slab's slots and the algorithms' blocks in use at exit, per slot."""
    use = doc["in_use"]
    return (use["slots"] * doc["slot_bytes"] + use["block_bytes"]) / use["slots"]


@pytest.mark.parametrize("lock", LOCKS)
def test_a_swapped_lock_costs_one_line(program, lock, tmp_path):
    """100 mutexes, each locked once by one thread: a slot each and nothing else, no
    algorithm's memory per lock (innodb56's events are a shared table, not the slab's)."""
    stats = tmp_path / "stats.json"
    res = locklab("run", "--lock", lock, *spin_opts(lock), "--stats-json", stats, "--", program,
                  "many", timeout=60)
    assert res.returncode == 0, res.stderr
    doc = json.loads(stats.read_text())
    assert doc["in_use"]["slots"] >= 100
    assert bytes_per_lock(doc) <= 64, doc["in_use"]


@pytest.mark.parametrize("lock", LOCKS)
def test_a_forked_child_drops_the_parents_state_whole(program, lock, tmp_path):
    """The child replaces the state of each of 100 mutexes (one held across the fork, 99
    free): what the old states held of the child's thread (mcs's queue nodes) comes back,
    so the child has a slot per mutex and no blocks in use, as the parent."""
    stats = tmp_path / "stats.json"
    res = locklab("run", "--lock", lock, *spin_opts(lock), "--stats-json", stats, "--", program,
                  "forkmany", timeout=60)
    assert res.returncode == 0, res.stderr
    child = int(res.stdout.split()[1])
    docs = {d["pid"]: d for d in map(json.loads, stats.read_text().splitlines())}
    assert len(docs) == 2 and child in docs
    for pid, doc in docs.items():
        assert doc["in_use"]["slots"] >= 100, (pid == child, doc["in_use"])
        assert doc["in_use"]["blocks"] == 0, (pid == child, doc["in_use"])
        assert bytes_per_lock(doc) <= 64


def test_passthrough_is_counted_by_reason(program, tmp_path):
    stats = tmp_path / "stats.json"
    res = locklab("run", "--lock", "futex", "--stats", "--stats-json", stats, "--", program,
                  "robust")
    assert res.returncode == 0, res.stderr
    assert "locklab: swap pid" in res.stderr and "2 passed to glibc" in res.stderr
    doc = json.loads(stats.read_text())
    assert doc["passthrough"] == {"pshared": 1, "robust": 1, "pi": 0, "pp": 0}


def test_one_json_object_per_process(program, tmp_path):
    stats = tmp_path / "stats.json"
    res = locklab("run", "--lock", "ll", "--stats-json", stats, "--", program, "fork")
    assert res.returncode == 0, res.stderr
    docs = [json.loads(line) for line in stats.read_text().splitlines()]
    assert len(docs) == 2 and len({d["pid"] for d in docs}) == 2


@pytest.mark.parametrize("lock", LOCKS)
def test_exit_with_a_lock_held_and_a_thread_queued(program, lock, tmp_path):
    """A program may exit holding locks, with threads waiting on them, and lock again in
    its exit handlers: no hang, its status and output kept, the stats still written."""
    res = locklab("run", "--lock", lock, *spin_opts(lock), "--stats", "--", program,
                  "exitheld", timeout=60)
    assert res.returncode == 5, res.stderr
    assert res.stdout.strip() == f"late {errno.EBUSY}"
    assert "locklab: swap pid" in res.stderr


def test_exit_status_and_signal_pass_through(program):
    assert locklab("run", "--lock", "futex", "--", program, "exit", "7").returncode == 7
    res = locklab("run", "--lock", "futex", "--", program, "kill")
    assert res.returncode == -signal.SIGTERM, (res.returncode, res.stderr)


def test_refusals_are_one_line_before_running(program, tmp_path):
    marker = tmp_path / "ran"
    touch = ["sh", "-c", f"touch {marker}"]
    line = one_line_error(locklab("run", "--lock", "nope", "--", *touch))
    assert "unknown lock 'nope'" in line and "futex" in line
    line = one_line_error(locklab("run", "--lock", "mcs", "--lock-opts", "spin=x", "--", *touch))
    assert "'spin'" in line and "yield" in line
    assert "command not found" in one_line_error(locklab("run", "--lock", "ll", "--", "nope-xyz"))
    assert "no command" in one_line_error(locklab("run", "--lock", "ll"))
    assert not marker.exists()

    narrow = tmp_path / "narrow"
    narrow.write_bytes(b"\x7fELF\x01\x01\x01" + bytes(57))
    narrow.chmod(0o755)
    assert "32-bit" in one_line_error(locklab("run", "--lock", "ll", "--", narrow))

    src = tmp_path / "s.c"
    src.write_text("int main(void) { return 0; }\n")
    static = tmp_path / "static"
    if subprocess.run(["cc", "-static", str(src), "-o", str(static)],
                      capture_output=True).returncode == 0:
        assert "statically linked" in one_line_error(locklab("run", "--lock", "ll", "--", static))

    setuid = tmp_path / "setuid"
    setuid.write_bytes(program.read_bytes())
    setuid.chmod(0o4755)
    if os.stat(setuid).st_mode & 0o4000:
        assert "setuid" in one_line_error(locklab("run", "--lock", "ll", "--", setuid))


EARLY_LIB = r"""
#include <pthread.h>
static pthread_mutex_t early = PTHREAD_MUTEX_INITIALIZER;
static long count;
static void *work(void *a) {
    (void)a;
    for (int i = 0; i < 20000; i++) {
        pthread_mutex_lock(&early);
        count++;
        pthread_mutex_unlock(&early);
    }
    return 0;
}
/* Runs before the swap library's own constructor (its dependents start first). */
__attribute__((constructor)) static void start(void) {
    pthread_t t[3];
    for (int i = 0; i < 3; i++) pthread_create(&t[i], 0, work, 0);
    for (int i = 0; i < 3; i++) pthread_join(t[i], 0);
}
long early_count(void) { return count; }
"""

EARLY_MAIN = r"""
#include <stdio.h>
long early_count(void);
int main(void) { printf("%ld\n", early_count()); return 0; }
"""


@pytest.fixture(scope="module")
def early_program(tmp_path_factory):
    d = tmp_path_factory.mktemp("early")
    (d / "early.c").write_text(EARLY_LIB)
    (d / "main.c").write_text(EARLY_MAIN)
    subprocess.run(["cc", "-O2", "-shared", "-fPIC", "-pthread", str(d / "early.c"),
                    "-o", str(d / "libearly.so")], check=True)
    exe = d / "main"
    subprocess.run(["cc", "-O2", str(d / "main.c"), "-L", str(d), "-learly",
                    f"-Wl,-rpath,{d}", "-pthread", "-o", str(exe)], check=True)
    return exe


@pytest.mark.parametrize("lock", LOCKS)
def test_mutexes_used_before_the_constructor(early_program, lock, tmp_path):
    stats = tmp_path / "stats.json"
    res = locklab("run", "--lock", lock, *spin_opts(lock), "--stats-json", stats, "--",
                  early_program, timeout=60)
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == str(3 * 20000)
    assert json.loads(stats.read_text())["acquisitions"] >= 3 * 20000


RWLOCKS = r"""
#include <pthread.h>
#include <stdio.h>
#include <time.h>
static pthread_rwlock_t made, fixed = PTHREAD_RWLOCK_INITIALIZER;
static long readers_saw_writer, value;
static void *worker(void *arg) {
    (void)arg;
    struct timespec far = { time(NULL) + 60, 0 };
    for (int i = 0; i < 1000; i++) {
        pthread_rwlock_wrlock(&made); value++; pthread_rwlock_unlock(&made);
        pthread_rwlock_rdlock(&made);
        long v = value; sched_yield();
        if (v != value) readers_saw_writer++;
        pthread_rwlock_unlock(&made);
        pthread_rwlock_timedrdlock(&fixed, &far); pthread_rwlock_unlock(&fixed);
        pthread_rwlock_timedwrlock(&fixed, &far); pthread_rwlock_unlock(&fixed);
        pthread_rwlock_clockrdlock(&fixed, CLOCK_MONOTONIC, &far); pthread_rwlock_unlock(&fixed);
        while (pthread_rwlock_trywrlock(&made)) ;
        pthread_rwlock_unlock(&made);
        while (pthread_rwlock_tryrdlock(&made)) ;
        pthread_rwlock_unlock(&made);
    }
    return NULL;
}
int main(void) {
    pthread_rwlock_init(&made, NULL);
    pthread_t t[4];
    for (int i = 0; i < 4; i++) pthread_create(&t[i], NULL, worker, NULL);
    for (int i = 0; i < 4; i++) pthread_join(t[i], NULL);
    printf("%ld %ld\n", value, readers_saw_writer);
    return 0;
}
"""


def test_rwlocks_stay_glibcs_and_are_counted(tmp_path):
    (tmp_path / "rw.c").write_text(RWLOCKS)
    exe = tmp_path / "rw"
    subprocess.run(["cc", "-O2", "-pthread", str(tmp_path / "rw.c"), "-o", str(exe)],
                   check=True)
    stats = tmp_path / "stats.json"
    res = locklab("run", "--lock", "futex", "--stats", "--stats-json", stats, "--", exe)
    assert res.returncode == 0 and res.stdout == "4000 0\n", (res.stdout, res.stderr)
    doc = json.loads(stats.read_text())
    # One pthread_rwlock_init; seven successful acquisitions a round, four threads.
    assert doc["rwlocks"] == {"lock": None, "lock_opts": "", "initialised": 1,
                              "acquisitions": 4 * 1000 * 7, "swapped": 0, "slot_bytes": 0,
                              "contended": 0, "pshared": 0}
    assert doc["in_use"]["rw_slots"] == 0
    assert "glibc's rwlocks: 1 initialised, 28000 acquisitions" in res.stderr


@pytest.fixture(scope="module")
def rw_program(tmp_path_factory):
    d = tmp_path_factory.mktemp("rw")
    (d / "rw.c").write_text(RWLOCKS)
    subprocess.run(["cc", "-O2", "-pthread", str(d / "rw.c"), "-o", str(d / "rw")], check=True)
    return d / "rw"


SWAPPED_RWLOCKS = ["pthread", "ll", "partitioned", "innodb56-rw", "bravo"]


@pytest.mark.parametrize("rwlock", SWAPPED_RWLOCKS)
def test_rwlocks_swapped_reach_the_library(rw_program, rwlock, tmp_path):
    """--rwlock alone: both of the program's rwlocks (one made by init, one static) get
    a slot of the library's rwlock and every acquisition goes through it; the mutexes
    stay glibc's."""
    stats = tmp_path / "stats.json"
    res = locklab("run", "--rwlock", rwlock, "--stats", "--stats-json", stats, "--",
                  rw_program, timeout=60)
    assert res.returncode == 0 and res.stdout == "4000 0\n", (res.stdout, res.stderr)
    doc = json.loads(stats.read_text())
    rw = doc["rwlocks"]
    assert doc["lock"] is None and doc["mutexes"] == 0
    assert (rw["lock"], rw["initialised"], rw["swapped"], rw["acquisitions"]) == \
        (rwlock, 1, 2, 4 * 1000 * 7)
    assert rw["slot_bytes"] == 64 and doc["in_use"]["rw_slots"] == 2
    assert f"rwlocks {rwlock}: 1 initialised, 2 swapped (64 bytes each), 28000 acquisitions" \
        in res.stderr


def test_rwlock_options_reach_the_lock(rw_program, tmp_path):
    """partitioned's n partitions are n lines of the slab's per lock: the knob, given
    either way, is the one the program's locks were made with; --lock swaps the
    mutexes beside."""
    blocks = {}
    for args in (["--rwlock", "partitioned:n=4"], ["--rwlock", "partitioned", "--rwlock-opts",
                                                    "n=64", "--lock", "futex"]):
        stats = tmp_path / f"{len(args)}.json"
        res = locklab("run", *args, "--stats-json", stats, "--", rw_program, timeout=60)
        assert res.returncode == 0 and res.stdout == "4000 0\n", res.stderr
        doc = json.loads(stats.read_text())
        blocks[doc["rwlocks"]["lock_opts"]] = (doc["in_use"]["block_bytes"], doc["lock"])
    assert blocks == {"n=4": (2 * 4 * 64, None), "n=64": (2 * 64 * 64, "futex")}


PSHARED = r"""
#include <pthread.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>
int main(void) {
    struct { pthread_rwlock_t l; long n; } *sh = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
                                                      MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    pthread_rwlockattr_t a;
    pthread_rwlockattr_init(&a);
    pthread_rwlockattr_setpshared(&a, PTHREAD_PROCESS_SHARED);
    pthread_rwlock_init(&sh->l, &a);
    pid_t pid = fork();
    for (int i = 0; i < 20000; i++) {
        pthread_rwlock_wrlock(&sh->l); sh->n++; pthread_rwlock_unlock(&sh->l);
    }
    if (pid == 0) _exit(0);
    waitpid(pid, NULL, 0);
    printf("%ld\n", sh->n);
    return 0;
}
"""


def test_process_shared_rwlocks_stay_glibcs(tmp_path):
    (tmp_path / "ps.c").write_text(PSHARED)
    exe = tmp_path / "ps"
    subprocess.run(["cc", "-O2", "-pthread", str(tmp_path / "ps.c"), "-o", str(exe)], check=True)
    stats = tmp_path / "stats.json"
    res = locklab("run", "--rwlock", "ll", "--stats-json", stats, "--", exe, timeout=60)
    assert res.returncode == 0 and res.stdout == "40000\n", (res.stdout, res.stderr)
    docs = [json.loads(line) for line in stats.read_text().splitlines()]
    parent = [d for d in docs if d["rwlocks"]["initialised"] == 1]
    assert len(parent) == 1 and parent[0]["rwlocks"]["pshared"] == 1
    assert all(d["rwlocks"]["swapped"] == 0 for d in docs)


def test_rwlock_run_keeps_status_signal_and_output(program):
    res = locklab("run", "--rwlock", "ll", "--", program, "exit", "7")
    assert res.returncode == 7 and res.stderr == "", res.stderr
    res = locklab("run", "--rwlock", "bravo", "--", program, "kill")
    assert res.returncode == -signal.SIGTERM, (res.returncode, res.stderr)
    res = locklab("run", "--rwlock", "innodb56-rw", "--", program)
    assert res.returncode == 0 and res.stdout == locklab("run", "--lock", "pthread", "--",
                                                         program).stdout


def test_rwlock_refusals_are_one_line_before_running(tmp_path):
    marker = tmp_path / "ran"
    touch = ["sh", "-c", f"touch {marker}"]
    line = one_line_error(locklab("run", "--rwlock", "nope", "--", *touch))
    assert "unknown rwlock 'nope' (valid: pthread, ll, partitioned, innodb56-rw, bravo)" in line
    line = one_line_error(locklab("run", "--rwlock", "innodb56", "--lock", "ll", "--", *touch))
    assert "unknown rwlock 'innodb56'" in line
    line = one_line_error(locklab("run", "--rwlock", "ll:bias=2", "--", *touch))
    assert "option 'bias' of rwlock 'll'" in line
    line = one_line_error(locklab("run", "--rwlock", "pthread", "--rwlock-opts", "prefer=x", "--",
                                  *touch))
    assert "unknown value 'x' for option 'prefer'" in line
    assert "give --rwlock too" in one_line_error(locklab("run", "--rwlock-opts", "n=2", "--", *touch))
    assert "no rwlock name" in one_line_error(locklab("run", "--rwlock", ":n=2", "--", *touch))
    assert not marker.exists()


# ------------------------------------------------------------- nothing swapped, said

@pytest.fixture(scope="module")
def static_program(tmp_path_factory):
    d = tmp_path_factory.mktemp("static")
    (d / "s.c").write_text("int main(void) { return 6; }\n")
    exe = d / "static"
    if subprocess.run(["cc", "-static", str(d / "s.c"), "-o", str(exe)],
                      capture_output=True).returncode != 0:
        pytest.skip("no static C library to link with")
    return exe


def script(path, text):
    path.write_text(text)
    path.chmod(0o755)
    return path


def test_a_run_whose_every_process_lost_the_swapper_says_so(static_program, tmp_path):
    """A script that execs a static binary: the shell loaded the swapper, the program
    that ran never had it."""
    wrap = script(tmp_path / "wrap.sh", f"#!/bin/sh\nexec {static_program}\n")
    res = locklab("run", "--lock", "ll", "--stats", "--", wrap)
    assert res.returncode == 6
    assert res.stderr.startswith("locklab: run: no process of the run ended with "
                                 "liblocklab-swap.so loaded: sh (pid "), res.stderr
    assert "statically linked" in res.stderr and len(res.stderr.splitlines()) == 1
    # The same with the preload taken away on the way.
    res = locklab("run", "--lock", "ll", "--", "env", "-u", "LD_PRELOAD", "true")
    assert "no process of the run ended with liblocklab-swap.so loaded: env (pid" in res.stderr


def test_a_run_that_never_loaded_the_swapper_says_so(static_program, tmp_path):
    """A script whose interpreter is static: no process of the run loaded it at all."""
    odd = script(tmp_path / "odd", f"#!{static_program}\n")
    res = locklab("run", "--lock", "ll", "--", odd)
    assert res.returncode == 6
    assert res.stderr == ("locklab: run: no process of the run loaded liblocklab-swap.so (a "
                          "statically linked or setuid program started by the command, or "
                          "LD_PRELOAD removed on the way), so no lock was swapped\n")


def test_a_run_with_the_swapper_to_the_end_says_nothing(program, static_program, tmp_path):
    # The shell keeps the swapper to its exit (by _exit, as dash leaves), though its
    # child never had it; so does a process that leaves by _exit itself; a program
    # killed by a signal may have died with it.
    res = locklab("run", "--lock", "ll", "--", "sh", "-c", f"{static_program}; exit 4")
    assert (res.returncode, res.stderr) == (4, "")
    res = locklab("run", "--lock", "ll", "--", sys.executable, "-c", "import os; os._exit(3)")
    assert (res.returncode, res.stderr) == (3, "")
    res = locklab("run", "--lock", "ll", "--", program, "kill")
    assert (res.returncode, res.stderr) == (-signal.SIGTERM, "")


# ------------------------------------------------------------- checked before it runs

@pytest.mark.parametrize("value, says", [
    ("/nonexistent/s.json", "--stats-json /nonexistent/s.json: no such directory /nonexistent"),
    ("{tmp}", "is a directory"),
    ("", "--stats-json '': no file named"),
])
def test_stats_json_that_cannot_be_written_is_refused_before_the_program(tmp_path, value, says):
    marker = tmp_path / "ran"
    out = locklab("run", "--lock", "ll", "--stats-json", value.format(tmp=tmp_path), "--",
                  "touch", marker)
    assert says in one_line_error(out)
    assert not marker.exists()


@pytest.mark.parametrize("head, says", [
    (b"\x7fELF\x02\x01\x01" + bytes(7), "truncated: 14 bytes, less than an ELF header"),
    (b"\x7fELF", "is a ?-bit program"),
    (b"\x7fELF\x02\x09\x01" + bytes(57), "no known class or byte order"),
])
def test_a_malformed_elf_file_is_one_line(tmp_path, head, says):
    bad = tmp_path / "bad"
    bad.write_bytes(head)
    bad.chmod(0o755)
    for command in (["run", "--lock", "ll"], ["profile"]):
        assert says in one_line_error(locklab(*command, "--", bad))


def test_a_truncated_program_is_one_line(program, tmp_path):
    """Cut inside its program headers: the loader could not start it either."""
    cut = tmp_path / "cut"
    cut.write_bytes(program.read_bytes()[:200])
    cut.chmod(0o755)
    for command in (["run", "--lock", "ll"], ["profile"]):
        line = one_line_error(locklab(*command, "--", cut))
        assert "cut: not a program the loader can start (truncated: its program headers end " \
               "past the file's 200 bytes)" in line
