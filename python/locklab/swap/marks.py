"""Whether any process of a run had its locks swapped: the marks liblocklab-swap.so
leaves in a private directory (src/swap/marks.c), PID.loaded when a process loads it
(holding the process's name) and PID.exited when one leaves (exit, _exit, _Exit) with
it still loaded, read after the program so that a run that swapped nothing says so."""
from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path

from .settings import LIBRARY

VARIABLE = "LOCKLAB_SWAP_MARKS"


class LoadMarks:
    """The run's directory of marks; `unswapped` reads it once the program has ended."""

    def __init__(self):
        self.dir = Path(tempfile.mkdtemp(prefix="locklab-swap-"))

    def set(self, env: dict[str, str]) -> dict[str, str]:
        return dict(env, **{VARIABLE: str(self.dir)})

    def discard(self) -> None:
        shutil.rmtree(self.dir, ignore_errors=True)

    def unswapped(self, status: int) -> str | None:
        """Why no lock of the run was swapped, or None where some process kept the
        swapper to its end, still runs with it (a daemon), or died of a signal that
        may have found it loaded (STATUS: the program's wait status)."""
        try:
            loaded = {int(p.stem): p.read_text(errors="replace").strip() or "?"
                      for p in self.dir.glob("*.loaded")}
            exited = list(self.dir.glob("*.exited"))
        finally:
            self.discard()
        if not loaded:
            return (f"no process of the run loaded {LIBRARY} (a statically linked or setuid "
                    "program started by the command, or LD_PRELOAD removed on the way), so "
                    "no lock was swapped")
        if exited or status < 0 or any(_runs_with_it(pid) for pid in loaded):
            return None
        who = ", ".join(f"{name} (pid {pid})" for pid, name in sorted(loaded.items()))
        return (f"no process of the run ended with {LIBRARY} loaded: {who} loaded it, then "
                "exec'd a program it cannot be preloaded into (statically linked or setuid), "
                "whose locks stayed glibc's")

    def warn_unswapped(self, status: int, verb: str) -> None:
        why = self.unswapped(status)
        if why:
            print(f"locklab: {verb}: {why}", file=sys.stderr)


def _runs_with_it(pid: int) -> bool:
    """Whether process PID is alive with the swapper loaded (a daemon the run left)."""
    try:
        return LIBRARY in Path(f"/proc/{pid}/maps").read_text(errors="replace")
    except OSError:
        return False
