"""`locklab profile` and liblocklab-prof.so at the edges: values refused with one line,
report signals that cannot hurt the program, the report of a program that dies of a
signal or _exit, prompt reports with thousands of threads, daemons, scripts."""
import json
import os
import resource
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import locklab, one_line_error
from locklab.profile import session

VICTIM = r"""
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
static pthread_mutex_t victim_lock = PTHREAD_MUTEX_INITIALIZER;
static volatile sig_atomic_t got;
static void on_term(int sig) { got = sig; }
static void *worker(void *arg)
{
    for (int i = 0; i < 20000; i++) {
        pthread_mutex_lock(&victim_lock);
        for (volatile int k = 0; k < 50; k++);
        pthread_mutex_unlock(&victim_lock);
    }
    return arg;
}
int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "wait";
    if (strcmp(mode, "alone")) {             /* "alone" stays single-threaded */
        pthread_t t[2];
        for (int i = 0; i < 2; i++) pthread_create(&t[i], 0, worker, 0);
        for (int i = 0; i < 2; i++) pthread_join(t[i], 0);
    } else {
        worker(0);
    }
    if (!strcmp(mode, "handler")) signal(SIGTERM, on_term);
    struct sigaction now;
    sigaction(SIGTERM, 0, &now);
    printf("%s\n", now.sa_handler == SIG_DFL ? "default" : now.sa_handler == SIG_IGN ? "ignored"
                    : now.sa_handler == on_term ? "mine" : "other");
    fflush(stdout);
    if (!strcmp(mode, "raise")) raise(SIGTERM);
    if (!strcmp(mode, "_exit")) _exit(5);
    if (!strcmp(mode, "alone")) raise(SIGINT);
    if (!strcmp(mode, "segv")) *(volatile int *)0 = 1;
    for (int i = 0; i < 3000 && !got; i++) usleep(10000);
    return got ? 3 : 4;
}
"""

CROWD = r"""
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
static pthread_mutex_t crowd_lock[4] = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_MUTEX_INITIALIZER,
                                         PTHREAD_MUTEX_INITIALIZER, PTHREAD_MUTEX_INITIALIZER };
static volatile int stop;
static atomic_int arrived;
static pthread_barrier_t all_waited;
static void *worker(void *arg)
{
    long i = (long)arg;
    atomic_fetch_add(&arrived, 1);   /* then blocks: main holds the locks */
    pthread_mutex_lock(&crowd_lock[i & 3]);
    pthread_mutex_unlock(&crowd_lock[i & 3]);
    pthread_barrier_wait(&all_waited);
    while (!stop) {
        pthread_mutex_lock(&crowd_lock[i & 3]);
        for (volatile int k = 0; k < 200; k++);
        pthread_mutex_unlock(&crowd_lock[i & 3]);
    }
    return 0;
}
int main(int argc, char **argv)
{
    int n = atoi(argv[1]);
    double secs = atof(argv[2]);
    pthread_t *t = malloc(sizeof(*t) * (size_t)n);
    pthread_attr_t a;
    pthread_attr_init(&a);
    pthread_attr_setstacksize(&a, 64 * 1024);
    /* Every thread waits once at least: 2000 threads with records to report. */
    pthread_barrier_init(&all_waited, 0, (unsigned)n + 1);
    for (int k = 0; k < 4; k++) pthread_mutex_lock(&crowd_lock[k]);
    for (long i = 0; i < n; i++)
        if (pthread_create(&t[i], &a, worker, (void *)i)) return 9;
    while (atomic_load(&arrived) < n) usleep(1000);
    usleep(50000);
    for (int k = 0; k < 4; k++) pthread_mutex_unlock(&crowd_lock[k]);
    pthread_barrier_wait(&all_waited);
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    printf("ready %lld\n", (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec);
    fflush(stdout);
    /* The whole time, though SIGPROF cuts a sleep short. */
    long long end = (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec + (long long)(secs * 1e9);
    struct timespec until = { (time_t)(end / 1000000000LL), (long)(end % 1000000000LL) };
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &until, 0));
    stop = 1;
    for (int i = 0; i < n; i++) pthread_join(t[i], 0);
    return 0;
}
"""

DAEMON = r"""
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
static pthread_mutex_t daemon_lock = PTHREAD_MUTEX_INITIALIZER;
static void *worker(void *arg)
{
    for (int i = 0; i < 20000; i++) {
        pthread_mutex_lock(&daemon_lock);
        for (volatile int k = 0; k < 50; k++);
        pthread_mutex_unlock(&daemon_lock);
    }
    return arg;
}
/* Like memcached -d: fork, the parent exits at once, the child runs on in a new session. */
int main(int argc, char **argv)
{
    if (fork() != 0) _exit(0);
    setsid();
    if (fork() != 0) _exit(0);
    int fd = open("/dev/null", 1);
    dup2(fd, 1), dup2(fd, 2);
    FILE *f = fopen(argv[1], "w");
    fprintf(f, "%d\n", (int)getpid());
    fclose(f);
    while (access(argv[2], F_OK)) usleep(10000);   /* until told to finish */
    pthread_t t[2];
    for (int i = 0; i < 2; i++) pthread_create(&t[i], 0, worker, 0);
    for (int i = 0; i < 2; i++) pthread_join(t[i], 0);
    return 0;
}
"""


def build(tmp, name, source):
    (tmp / f"{name}.c").write_text(source)
    exe = tmp / name
    subprocess.run(["cc", "-O1", "-g", "-pthread", "-include", "fcntl.h", f"{name}.c", "-o",
                    name], cwd=tmp, check=True)
    return exe


@pytest.fixture(scope="module")
def victim(tmp_path_factory):
    return build(tmp_path_factory.mktemp("victim"), "victim", VICTIM)


def preloaded(**extra):
    env = {**os.environ, "LD_PRELOAD": str(session.library_path())}
    for name in [n for n in env if n.startswith("LOCKLAB_PROF_")]:
        del env[name]
    env.update(extra)
    return env


# ---------------------------------------------------------------- checked values

BAD_NUMBERS = ["-1", "nan", "inf", "1e308", str(2**64), "abc"]


@pytest.mark.parametrize("option,value", [
    *[(opt, v) for opt in ("-s", "--depth", "--top", "--min-wait", "--interval", "--hold-every")
      for v in BAD_NUMBERS],
    ("-s", "0"), ("--depth", "0"), ("--depth", "100000"), ("--top", "0"), ("--interval", "0"),
    ("--min-wait", "-5"), ("--signal", "99"), ("--signal", "11"), ("--signal", "SEGV"),
    ("--signal", "15"), ("--signal", "TERM"), ("--signal", "TSTP"), ("--signal", "HUP"),
])
def test_bad_option_values_are_refused_before_anything_runs(tmp_path, option, value):
    ran = tmp_path / "ran"
    line = one_line_error(locklab("profile", option, value, "--", "sh", "-c", f"touch {ran}"))
    assert value in line and "valid: " in line, line
    assert not ran.exists(), "the program ran"


@pytest.mark.parametrize("var,value,says", [
    ("LOCKLAB_PROF_DEPTH", "0", "out of range (valid: 1-64); using 16"),
    ("LOCKLAB_PROF_DEPTH", "abc", "not a whole number (valid: 1-64); using 16"),
    ("LOCKLAB_PROF_STACKS", "-3", "out of range (valid: 0-64)"),
    ("LOCKLAB_PROF_TOP", str(2**64), "out of range"),
    ("LOCKLAB_PROF_HOLD_EVERY", "-1", "out of range (valid: 0-1073741824); using 100"),
    ("LOCKLAB_PROF_MIN_WAIT_NS", "-5", "out of range"),
    ("LOCKLAB_PROF_INTERVAL", "nan", "no interval reports"),
    ("LOCKLAB_PROF_INTERVAL", "inf", "no interval reports"),
    ("LOCKLAB_PROF_INTERVAL", "-1", "no interval reports"),
    ("LOCKLAB_PROF_SIGNAL", "99", "unknown report signal (valid: PROF, USR1"),
    ("LOCKLAB_PROF_SIGNAL", "TERM", "no signal reports"),
    ("LOCKLAB_PROF_FORMAT", "xml", "unknown format (valid: text, json)"),
])
def test_bad_environment_is_one_line_and_the_default(tmp_path, victim, var, value, says):
    out = tmp_path / "r.txt"
    res = subprocess.run([victim, "_exit"], env=preloaded(**{var: value,
                                                             "LOCKLAB_PROF_OUTPUT": str(out)}),
                         capture_output=True, text=True, timeout=60)
    assert res.returncode == 5
    assert res.stderr.count("\n") == 1, res.stderr
    assert res.stderr.startswith(f"locklab-prof: {var}={value}: ") and says in res.stderr
    assert "hold sampled 1 in 100" in out.read_text() or var == "LOCKLAB_PROF_HOLD_EVERY"


@pytest.mark.parametrize("value,sig", [("SEGV", signal.SIGSEGV), ("11", signal.SIGSEGV),
                                       ("15", signal.SIGTERM)])
def test_a_refused_report_signal_gets_no_handler(victim, value, sig):
    """Before: SEGV reported once per re-executed fault, forever; TERM was ignored."""
    env = preloaded(LOCKLAB_PROF_SIGNAL=value)
    mode = "segv" if sig == signal.SIGSEGV else "wait"
    no_core = lambda: resource.setrlimit(resource.RLIMIT_CORE, (0, 0))  # noqa: E731
    proc = subprocess.Popen([victim, mode], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, preexec_fn=no_core)
    try:
        assert proc.stdout.readline() == "default\n"
        if sig == signal.SIGTERM:
            proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=20) == -sig
    finally:
        proc.kill()
        proc.wait()
    err = proc.stderr.read()
    assert err.startswith(f"locklab-prof: LOCKLAB_PROF_SIGNAL={value}: unknown report signal")
    first, rest = err.split("\n", 1)
    if sig == signal.SIGSEGV:
        assert rest == ""        # no report, let alone one per fault
    else:                        # SIGTERM ended it, with the exit report
        assert rest.startswith("locklab-prof: pid") and "exit report (SIGTERM)" in rest


def test_an_output_file_that_cannot_be_written_says_so_and_reports_on_stderr(victim):
    env = preloaded(LOCKLAB_PROF_OUTPUT="/nonexistent/dir/x.%p")
    res = subprocess.run([victim, "_exit"], env=env, capture_output=True, text=True, timeout=60)
    assert res.returncode == 5
    first, rest = res.stderr.split("\n", 1)
    assert first == ("locklab-prof: LOCKLAB_PROF_OUTPUT=/nonexistent/dir/x.%p: /nonexistent/dir: "
                     "No such file or directory; the report goes to stderr")
    assert "exit report" in rest and "victim`victim_lock" in rest


# ------------------------------------------------------------- dying of a signal

def fatal_signals_at_default():
    """In the child, before exec: the signals the profiler reports on at their default
    action. A runner started under nohup leaves SIGHUP ignored, an ignored signal stays
    ignored across exec, and the profiler rightly leaves it so."""
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT):
        signal.signal(sig, signal.SIG_DFL)


@pytest.mark.parametrize("mode,send,status,killed_by", [
    ("wait", signal.SIGTERM, -signal.SIGTERM, signal.SIGTERM),
    ("wait", signal.SIGINT, -signal.SIGINT, signal.SIGINT),
    ("wait", signal.SIGHUP, -signal.SIGHUP, signal.SIGHUP),
    ("raise", None, -signal.SIGTERM, signal.SIGTERM),
    ("alone", None, -signal.SIGINT, signal.SIGINT),      # single-threaded: no dump thread
    ("_exit", None, 5, 0),
    ("handler", signal.SIGTERM, 3, 0),                    # the program's own handler wins
])
def test_a_program_that_dies_leaves_its_report(tmp_path, victim, mode, send, status, killed_by):
    out = tmp_path / "r.json"
    env = preloaded(LOCKLAB_PROF_OUTPUT=str(out), LOCKLAB_PROF_FORMAT="json")
    proc = subprocess.Popen([victim, mode], env=env, stdout=subprocess.PIPE, text=True,
                            preexec_fn=fatal_signals_at_default)
    try:
        # What the program sees: SIG_DFL where the profiler's handler stands in for it.
        assert proc.stdout.readline() == ("mine\n" if mode == "handler" else "default\n")
        if send:
            proc.send_signal(send)
        assert proc.wait(timeout=60) == status
    finally:
        proc.kill()
        proc.wait()
    rep = json.loads(out.read_text())   # one report, whole
    assert (rep["reason"], rep["signal"]) == ("exit", killed_by)
    (lk,) = [lk for lk in rep["locks"] if lk["name"] == "victim`victim_lock"]
    assert lk["hold"]["samples"] > 0


def test_an_ignored_signal_stays_ignored(tmp_path, victim):
    """A program started with SIGTERM ignored (as under nohup for SIGHUP) sees it ignored,
    lives through it, and still dies of a signal at its default action, with the report."""
    out = tmp_path / "r.json"
    env = preloaded(LOCKLAB_PROF_OUTPUT=str(out), LOCKLAB_PROF_FORMAT="json")

    def term_ignored():
        fatal_signals_at_default()
        signal.signal(signal.SIGTERM, signal.SIG_IGN)

    proc = subprocess.Popen([victim, "wait"], env=env, stdout=subprocess.PIPE, text=True,
                            preexec_fn=term_ignored)
    try:
        assert proc.stdout.readline() == "ignored\n"
        proc.send_signal(signal.SIGTERM)
        with pytest.raises(subprocess.TimeoutExpired):
            proc.wait(timeout=1)
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=60) == -signal.SIGINT
    finally:
        proc.kill()
        proc.wait()
    rep = json.loads(out.read_text())
    assert (rep["reason"], rep["signal"]) == ("exit", signal.SIGINT)


def test_locklab_profile_passes_sigterm_on_and_dies_of_it(victim):
    cmd = [sys.executable, "-m", "locklab.cli", "profile", "--", str(victim), "wait"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline() == "default\n"
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
        proc.wait()
    assert proc.returncode == -signal.SIGTERM, err
    assert "exit report (SIGTERM)" in out and "left no report" not in err


# ------------------------------------------------------------- many threads

def test_reports_stay_prompt_with_2000_threads(tmp_path):
    """The reporter read every slot of every thread's record table (32 million slots,
    3 million page faults with 2000 threads): the first report after the threads
    started came seconds late.  The margins allow for a loaded 2-core machine."""
    crowd = build(tmp_path, "crowd", CROWD)

    def run(extra, act):
        d = tmp_path / f"d{len(list(tmp_path.iterdir()))}"
        d.mkdir()
        proc = subprocess.Popen([crowd, "2000", "2.5"], stdout=subprocess.PIPE, text=True,
                                env=preloaded(LOCKLAB_PROF_DIR=str(d), **extra))
        try:
            ready = int(proc.stdout.readline().split()[1])
            act(proc, d)
            assert proc.wait(timeout=120) == 0
        finally:
            proc.kill()
            proc.wait()
        return ready, [json.loads(p.read_text()) for p in sorted(d.glob("*.json"))]

    def signal_now(proc, d):
        sent = time.monotonic()
        proc.send_signal(signal.SIGPROF)
        while not list(d.glob("*-signal.json")):   # 2 s before, 0.07 s after (idle)
            assert time.monotonic() - sent < 1.5, "no signal report 1.5 s after SIGPROF"
            time.sleep(0.01)

    _, reps = run({}, signal_now)
    assert [r["reason"] for r in reps] == ["signal", "exit"]
    assert len(reps[0]["threads"]) >= 1500   # most of them had waited

    ready, reps = run({"LOCKLAB_PROF_INTERVAL": "0.5"}, lambda proc, d: None)
    # From the moment all the threads were running to the program's exit, reports
    # follow one another within the margin.  When every report read every slot, one
    # interval took 7.4 s; on a CI machine with both cores busy the longest seen is 1.7 s.
    shown = [(r["reason"], (r["end_ns"] - ready) / 1e9) for r in reps]
    assert reps[-1]["reason"] == "exit", shown
    marks = [ready] + [r["end_ns"] for r in reps if r["end_ns"] > ready]
    assert len(marks) >= 3, shown        # at least one interval report came between
    gaps = [(b - a) / 1e9 for a, b in zip(marks, marks[1:])]
    assert max(gaps) < 0.5 + 2.0, shown


# ------------------------------------------------------------- daemons, scripts

def test_a_daemons_report_is_kept_and_its_place_named(tmp_path):
    daemon = build(tmp_path, "daemon", DAEMON)
    pidfile, go = tmp_path / "pid", tmp_path / "go"
    try:
        res = locklab("profile", "--", daemon, pidfile, go)
        assert res.returncode == 0, res.stderr
        pid = int(pidfile.read_text())
        line = res.stderr.strip().splitlines()[-1]
        assert line.startswith(f"locklab: still running: daemon (pid {pid}); its report will "
                               "be in ")
        where = Path(line.split(" will be in ")[1].split("/ when")[0])
        go.touch()
        # The daemon's marker goes once its exit report is written whole: wait for both
        # (with both cores busy the report can show up well before the marker goes).
        deadline = time.monotonic() + 60
        while not list(where.glob(f"*-{pid}-*-exit.txt")) or list(where.glob("*.live")):
            assert time.monotonic() < deadline, (
                "the daemon wrote no report" if not list(where.glob(f"*-{pid}-*-exit.txt"))
                else "the daemon's report is written but its marker stayed")
            time.sleep(0.05)
        text = next(where.glob(f"*-{pid}-*-exit.txt")).read_text()
        assert f"pid {pid} " in text and "exit report" in text
        shutil.rmtree(where)
    finally:
        go.touch()   # a daemon left waiting for it, after a failure, would poll for ever


def test_a_script_without_shebang_runs_under_sh(tmp_path):
    script = tmp_path / "plain-script"
    script.write_text("echo from-sh $1\nexit 6\n")
    script.chmod(0o755)
    res = locklab("profile", "--", script, "arg")
    assert res.returncode == 6, res.stderr
    assert res.stdout.startswith("from-sh arg\n")
