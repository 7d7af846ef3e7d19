"""Running another program: started as a shell starts it, tied to our life, and how it
ended passed on as a shell reports it."""
from __future__ import annotations

import ctypes
import errno
import os
import resource
import shutil
import signal
import subprocess
import sys

from ..errors import LocklabError


def spawn(cmd: list[str], env: dict[str, str]) -> subprocess.Popen:
    """CMD started as a shell starts it: a file that is no program (ENOEXEC: a script
    without #!) is run by /bin/sh, as execvp() does."""
    try:
        return subprocess.Popen(cmd, env=env)
    except OSError as e:
        if e.errno != errno.ENOEXEC:
            raise LocklabError(f"{cmd[0]}: {e.strerror}") from None
    path = cmd[0] if "/" in cmd[0] else shutil.which(cmd[0])
    try:
        return subprocess.Popen(["/bin/sh", path, *cmd[1:]], env=env)
    except OSError as e:
        raise LocklabError(f"{cmd[0]}: {e.strerror}") from None


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


def wait_through_interrupts(proc: subprocess.Popen) -> int:
    """PROC's wait status. A Ctrl-C reached the program too: its own status says what
    it did with it, so we go on waiting."""
    while True:
        try:
            return proc.wait()
        except KeyboardInterrupt:
            continue


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
