"""The locks advise tries on a program's locks: by default the library's locks that
park (fifo-tp among them) and one spinlock that survives preemption for a mutex, the
library's rwlocks for an rwlock, less glibc's own (the native lock, which every run of
the program is judged against already); or the ones given, checked as the swapper
would check them."""
from __future__ import annotations

from .. import native
from ..errors import LocklabError
from ..swap import check
from ..sweep.presets import split_lock

# The lock that stands for glibc's own mutex and rwlock in the library: native.
GLIBC = "pthread"
# The spinlock among a mutex's candidates. spin=auto pauses while the holder runs, which
# is what a spinlock is for, and gives its core away once the core is crowded: a spinner
# that only pauses holds a CPU its lock's holder may need (docs/swap.md). A barging
# spinlock, ttas: the FIFO answer that survives preemption, fifo-tp, is among the locks
# that park already, and the FIFO spinlocks at spin=auto (mcs, ticket) put their waiters
# to sleep on a crowded core, where they would answer as the parking locks do. ttas
# rather than tas: its waiters read the word and try their CAS only when it looks free.
SPINLOCK = "ttas:spin=auto"

MUTEX, RWLOCK = "mutex", "rwlock"


def default(kind: str) -> list[str]:
    """The candidates of a lock of KIND ('mutex' or 'rwlock'), asked of the library."""
    if kind == MUTEX:
        parks = [a["name"] for a in native.algorithms()
                 if a["parks"] and a["name"] != GLIBC and check.served(a["name"])]
        return [*parks, SPINLOCK]
    return [a["name"] for a in native.algorithms(kind="rwlock") if a["name"] != GLIBC]


def checked(kind: str, given: list[str] | None) -> list[str]:
    """KIND's candidates: GIVEN ('NAME' or 'NAME:K=V,...' each), or the default; each
    refused in one line where the swapper would refuse it."""
    names = given if given is not None else default(kind)
    for entry in names:
        name, opts = split_lock(entry)
        if kind == MUTEX:
            why = check.lock_refusal(name, opts or None)
            if why:
                raise LocklabError(f"--locks {entry}: {why}")
        else:
            try:
                native.algorithms(name, opts or None, kind="rwlock")
            except native.NativeError as e:
                raise LocklabError(f"--rwlocks {entry}: {e}") from None
    return list(dict.fromkeys(names))
