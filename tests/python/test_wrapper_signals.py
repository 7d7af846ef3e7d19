"""`locklab run` and `locklab profile` as a program's wrapper, as under a service manager:
each signal the wrapper gets goes to the program (to its process group where it leads
one), once, and the wrapper ends as the program ended: the same exit status, or death
by the same signal; killed outright, it takes the program with it."""
import os
import pty
import resource
import signal
import subprocess
import sys
import time

import pytest

from locklab import native

PROGRAM = r"""
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static volatile sig_atomic_t got;

static void on(int sig) { (void)sig; got++; }

/* wait: the signals at their default action, for a minute.  catch SIG: count SIG,
 * and exit with the count half a second after the first (a second copy would be
 * counted), or with 0 after 10 s without.  lead: a process group of its own, with
 * a child in it; both wait. */
int main(int argc, char **argv)
{
    if (argc > 2 && !strcmp(argv[1], "catch"))
        signal(atoi(argv[2]), on);
    if (argc > 1 && !strcmp(argv[1], "lead")) {
        setpgid(0, 0);
        pid_t child = fork();
        if (child == 0) {
            sleep(60);
            _exit(0);
        }
        printf("%d %d\n", (int)getpid(), (int)child);
    } else {
        printf("%d\n", (int)getpid());
    }
    fflush(stdout);
    int rounds = argc > 1 && !strcmp(argv[1], "catch") ? 1000 : 6000;
    for (int i = 0; i < rounds && !got; i++)
        usleep(10000);
    usleep(500000);
    return got;
}
"""


@pytest.fixture(scope="module")
def program(tmp_path_factory):
    d = tmp_path_factory.mktemp("signals")
    (d / "p.c").write_text(PROGRAM)
    exe = d / "p"
    subprocess.run(["cc", "-O2", str(d / "p.c"), "-o", str(exe)], check=True)
    return exe


@pytest.fixture(autouse=True)
def _built():
    for name in ("liblocklab-swap.so", "liblocklab-prof.so"):
        if not (native.native_dir() / name).is_file():
            pytest.skip(f"{name} not built (sanitized build)")


def defaults():
    """In the wrapper, before exec: every signal at its default action (a runner under
    nohup leaves HUP ignored, which an exec keeps), and no core files."""
    for sig in (signal.SIGHUP, signal.SIGINT, signal.SIGQUIT, signal.SIGTERM, signal.SIGPIPE):
        signal.signal(sig, signal.SIG_DFL)
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def start(*args):
    """`locklab ARGS` started, and the pids the program prints first."""
    proc = subprocess.Popen([sys.executable, "-m", "locklab.cli", *map(str, args)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=defaults)
    line = proc.stdout.readline()
    assert line, proc.communicate(timeout=60)[1]
    return proc, [int(pid) for pid in line.split()]


def gone(pid, within=5.0):
    """Whether PID has ended (or is a zombie, its exit waiting for its reaper)."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            with open(f"/proc/{pid}/stat") as f:
                if f.read().rsplit(")", 1)[1].split()[0] == "Z":
                    return True
        except FileNotFoundError:
            return True
        time.sleep(0.05)
    return False


def finish(proc):
    try:
        out, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
        proc.wait()
    return out, err


RUN = ("run", "--lock", "futex", "--")
# Every signal whose default action ends a process, that a wrapper passes on.
FATAL = (signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGINT, signal.SIGUSR1,
         signal.SIGUSR2, signal.SIGALRM, signal.SIGVTALRM, signal.SIGPIPE, signal.SIGPROF)


@pytest.mark.parametrize("sig", FATAL, ids=lambda s: signal.Signals(s).name)
def test_run_passes_a_fatal_signal_on_and_dies_of_it(program, sig):
    proc, (pid,) = start(*RUN, program, "wait")
    proc.send_signal(sig)
    _, err = finish(proc)
    assert proc.returncode == -sig, err
    assert gone(pid), "the program outlived its wrapper"


@pytest.mark.parametrize("sig", (signal.SIGWINCH, signal.SIGUSR1, signal.SIGCONT,
                                 signal.SIGURG, signal.SIGINT, signal.SIGHUP),
                         ids=lambda s: signal.Signals(s).name)
def test_run_passes_a_signal_on_once_and_ends_with_the_programs_status(program, sig):
    """The program handles the signal: it gets it once, and its exit status (the count)
    is the wrapper's, which lives through the signal itself."""
    proc, _ = start(*RUN, program, "catch", int(sig))
    proc.send_signal(sig)
    _, err = finish(proc)
    assert proc.returncode == 1, err


def test_a_program_that_leads_its_group_gets_the_signal_group_wide(program):
    proc, (pid, child) = start(*RUN, program, "lead")
    proc.send_signal(signal.SIGTERM)
    _, err = finish(proc)
    assert proc.returncode == -signal.SIGTERM, err
    assert gone(pid) and gone(child), "a process of the program's group lived on"


def test_a_killed_wrapper_takes_the_program_with_it(program):
    proc, (pid,) = start(*RUN, program, "wait")
    proc.kill()
    finish(proc)
    assert gone(pid), "the program outlived its SIGKILLed wrapper"


def test_a_ctrl_c_on_the_terminal_reaches_the_program_once(program):
    """The terminal sends SIGINT to the wrapper and the program alike (one process
    group): the wrapper must not send it a second time."""
    pid, master = pty.fork()
    if pid == 0:
        try:
            defaults()
            os.execv(sys.executable, [sys.executable, "-m", "locklab.cli", *RUN, str(program),
                                      "catch", str(int(signal.SIGINT))])
        finally:
            os._exit(127)
    try:
        seen = b""
        deadline = time.monotonic() + 60
        while b"\n" not in seen and time.monotonic() < deadline:
            seen += os.read(master, 100)
        os.write(master, b"\x03")
        _, status = os.waitpid(pid, 0)
    finally:
        os.close(master)
    assert os.waitstatus_to_exitcode(status) == 1, seen


PROFILE = ("profile", "--json", "-o")


@pytest.mark.parametrize("sig", (signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGINT),
                         ids=lambda s: signal.Signals(s).name)
def test_profile_passes_a_stop_on_and_leaves_the_report_asked_for(program, sig, tmp_path):
    out = tmp_path / "r.json"
    proc, (pid,) = start(*PROFILE, out, "--", program, "wait")
    proc.send_signal(sig)
    _, err = finish(proc)
    assert proc.returncode == -sig, err
    assert gone(pid)
    assert f'"status": {128 + sig}' in out.read_text()


def test_profile_passes_on_a_signal_the_profiler_does_not_report_on(program, tmp_path):
    """USR2 kills the program (no report: it never exits through the profiler); the
    wrapper dies of it too, and says so."""
    proc, (pid,) = start("profile", "--", program, "wait")
    proc.send_signal(signal.SIGUSR2)
    _, err = finish(proc)
    assert proc.returncode == -signal.SIGUSR2, err
    assert gone(pid)
    assert "killed by SIGUSR2" in err
