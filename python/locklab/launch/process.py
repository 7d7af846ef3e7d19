"""Running another program: started as a shell starts it, tied to our life, the signals
we get passed on to it, and how it ended passed on as a shell reports it."""
from __future__ import annotations

import ctypes
import errno
import os
import resource
import shutil
import signal
import subprocess
import sys
import time
from typing import Callable

from ..errors import LocklabError

# The signals a wrapper (`locklab run`, `locklab profile`) hands to the program it runs,
# as a service manager's main process would: the requests to stop (HUP, INT, QUIT,
# TERM), those programs give a meaning of their own (USR1, USR2, WINCH, URG, PROF: a
# reload, a report, a resize), timers' and PIPE when another process sends them, and
# CONT.  Left as they are: job control's stops (TSTP, TTIN, TTOU), which the terminal
# sends the program too, in our process group; CHLD and the faults, which are ours;
# KILL and STOP, which cannot be caught (PDEATHSIG takes the program down with us).
PASSED_ON = (signal.SIGHUP, signal.SIGINT, signal.SIGQUIT, signal.SIGTERM, signal.SIGUSR1,
             signal.SIGUSR2, signal.SIGALRM, signal.SIGVTALRM, signal.SIGPIPE,
             signal.SIGWINCH, signal.SIGURG, signal.SIGPROF, signal.SIGCONT)
# The signals a terminal sends its foreground process group: ours, the program's too.
FROM_TERMINAL = (signal.SIGHUP, signal.SIGINT, signal.SIGQUIT, signal.SIGWINCH)
# siginfo's si_code of a signal the kernel raised (a terminal's, our own timer's).
SI_KERNEL = 0x80


def spawn(cmd: list[str], env: dict[str, str],
          preexec: Callable[[], None] | None = None) -> subprocess.Popen:
    """CMD started as a shell starts it (PREEXEC run in the child before the exec): a
    file that is no program (ENOEXEC: a script without #!) is run by /bin/sh, as
    execvp() does."""
    try:
        return subprocess.Popen(cmd, env=env, preexec_fn=preexec)
    except OSError as e:
        if e.errno != errno.ENOEXEC:
            raise LocklabError(f"{cmd[0]}: {e.strerror}") from None
    path = cmd[0] if "/" in cmd[0] else shutil.which(cmd[0])
    try:
        return subprocess.Popen(["/bin/sh", path, *cmd[1:]], env=env, preexec_fn=preexec)
    except OSError as e:
        raise LocklabError(f"{cmd[0]}: {e.strerror}") from None


class PassingSignals:
    """While a wrapper runs its program: each signal of PASSED_ON that reaches the
    wrapper goes to the program, or to its process group where the program leads one.

    A context: the signals are blocked from its start (the program is started inside
    it, with the mask it had and death with us: preexec) and taken one by one in
    wait(), each with who sent it.  One sent by another process is passed on; one a
    terminal sent is passed on only to a program that left our process group (in it,
    the program has had it already); one the kernel raised for our own sake (a write
    to a closed pipe, a timer of ours) is not.
    """

    def __init__(self):
        self.watched = {*PASSED_ON, signal.SIGCHLD}
        self.before: set = set()

    def __enter__(self) -> PassingSignals:
        self.before = signal.pthread_sigmask(signal.SIG_BLOCK, self.watched)
        return self

    def __exit__(self, *exc) -> None:
        # What came after the program ended was meant for it: none is ours to die of.
        while signal.sigtimedwait(self.watched, 0) is not None:
            pass
        signal.pthread_sigmask(signal.SIG_SETMASK, self.before)

    def preexec(self) -> Callable[[], None]:
        """The program's preexec_fn: the signal mask the wrapper had, and death with it."""
        before, tied = self.before, die_with(os.getpid())

        def preexec() -> None:
            signal.pthread_sigmask(signal.SIG_SETMASK, before)
            tied()

        return preexec

    def wait(self, proc: subprocess.Popen, timeout: float | None = None) -> int | None:
        """PROC's wait status, the signals that come meanwhile passed on; None when
        TIMEOUT seconds pass first."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            status = proc.poll()
            if status is not None:
                return status
            if deadline is None:
                info = signal.sigwaitinfo(self.watched)
            else:
                left = deadline - time.monotonic()
                if left <= 0:
                    return None
                info = signal.sigtimedwait(self.watched, left)
            if info is not None and info.si_signo != signal.SIGCHLD:
                pass_signal(proc.pid, info)


def pass_signal(pid: int, info) -> None:
    """The signal INFO describes, to the program PID as PassingSignals says."""
    try:
        group = os.getpgid(pid)
    except ProcessLookupError:
        return
    sent = info.si_code <= 0 and info.si_pid != os.getpid()
    from_terminal = info.si_code == SI_KERNEL and info.si_signo in FROM_TERMINAL
    if not sent and not (from_terminal and group != os.getpgrp()):
        return
    try:
        if group == pid:
            os.killpg(pid, info.si_signo)
        else:
            os.kill(pid, info.si_signo)
    except ProcessLookupError:
        pass


def die_with(parent: int):
    """A preexec_fn: the child is killed when its parent (pid PARENT) dies.

    Even a SIGKILLed sweep then leaves no hung point or server behind, and none that
    keeps loading the CPUs a resumed sweep measures on.
    """
    prctl = ctypes.CDLL(None, use_errno=True).prctl

    def preexec() -> None:
        PR_SET_PDEATHSIG = 1
        prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
        if os.getppid() != parent:  # the parent died before prctl took effect
            os._exit(1)

    return preexec


def spawn_group(cmd: list[str], **kwargs) -> subprocess.Popen:
    """CMD in a process group of its own (a Ctrl-C on the terminal reaches us alone),
    with no stdin, killed when we die."""
    return subprocess.Popen(cmd, stdin=subprocess.DEVNULL, start_new_session=True,
                            preexec_fn=die_with(os.getpid()), **kwargs)


def kill_group(proc: subprocess.Popen) -> None:
    """SIGKILL to PROC's whole process group, then reap PROC."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait()


def exit_status(status: int) -> int:
    """A wait status as a shell reports it: a death by signal N is 128 + N."""
    return 128 - status if status < 0 else status


def exit_text(status: int) -> str:
    """How a process with wait status STATUS ended, as a reason's words."""
    if status < 0:
        return f"was killed by {signal.Signals(-status).name}"
    return f"exited with status {status}"


def die_of(sig: int) -> None:
    """Die of the signal the program died of, as the program did: a shell or a script
    running locklab sees the same status (128 + N if it cannot be raised)."""
    sys.stdout.flush()
    sys.stderr.flush()
    try:
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))  # the program dumped its own core
        signal.signal(sig, signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, [sig])
        os.kill(os.getpid(), sig)
    except (OSError, ValueError):
        pass


def pass_on(status: int) -> int:
    """Our exit status from the program's wait status: its exit status, or its death
    (die_of, then 128 + N should we survive it)."""
    if status < 0:
        die_of(-status)
    return exit_status(status)
