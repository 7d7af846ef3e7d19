"""What liblocklab-swap.so serves a program's locks with (docs/swap.md), as one value:
the settings `locklab run`, `locklab profile --lock` and a program sweep's points
give it, and the environment that carries them into the program."""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from ..errors import LocklabError
from ..launch.program import with_preload
from ..native import native_file

LIBRARY = "liblocklab-swap.so"


def library_path() -> Path:
    return native_file(LIBRARY)


@dataclass(frozen=True)
class SwapSettings:
    """The swapper's settings. With no lock named, every mutex stays glibc's unless
    nothing at all is named (then the library's default serves them)."""

    lock: str | None = None          # the algorithm of every mutex no site chose
    lock_opts: str | None = None     # its options, K=V,...
    lock_for: tuple[str, ...] = ()   # 'SITE=NAME[:K=V,...]': the mutexes named SITE
    rwlock: str | None = None        # the rwlock of every pthread_rwlock_t no site chose
    rwlock_opts: str | None = None   # its options
    rwlock_for: tuple[str, ...] = ()  # 'SITE=NAME[:K=V,...]': the rwlocks named SITE
    stats: bool = False              # one line per process on stderr at its exit
    stats_json: str | None = None    # a file of one JSON object per process at its exit

    @classmethod
    def given(cls, lock: str | None = None, lock_opts: str | None = None,
              lock_for: list[str] | tuple[str, ...] = (), rwlock: str | None = None,
              rwlock_opts: str | None = None, stats: bool = False,
              stats_json: str | None = None,
              rwlock_for: list[str] | tuple[str, ...] = ()) -> SwapSettings:
        """The settings as the command line words them (--rwlock NAME:K=V,... with its
        options after --rwlock-opts's), refusing what the environment cannot carry: the
        refusals the library cannot make."""
        if rwlock_opts and not rwlock:
            raise LocklabError("--rwlock-opts gives --rwlock's options: give --rwlock too")
        if rwlock is not None:
            name, _, own = rwlock.partition(":")
            if not name:
                raise LocklabError(f"--rwlock {rwlock!r}: no rwlock name (locklab list "
                                   "--rwlock names them)")
            rwlock, rwlock_opts = name, ",".join(o for o in (own, rwlock_opts) if o) or None
        if lock_opts and not lock:
            raise LocklabError("--lock-opts gives --lock's options: give --lock too (a site's "
                               "options go after its lock: --lock-for SITE=NAME:K=V,...)")
        for option, entries in (("--lock-for", lock_for), ("--rwlock-for", rwlock_for)):
            for entry in entries:
                if ";" in entry:
                    raise LocklabError(f"{option} {entry!r}: ';' cannot be in a site or its "
                                       "options")
                if not entry.strip():
                    raise LocklabError(f"{option} '': not SITE=NAME")
        return cls(lock, lock_opts, tuple(lock_for), rwlock, rwlock_opts, tuple(rwlock_for),
                   stats, stats_json)

    def swaps(self) -> bool:
        """Whether any lock is named to swap: the mutexes', a site's or the rwlocks'."""
        return bool(self.lock or self.lock_for or self.lock_opts or self.rwlock
                    or self.rwlock_for)

    def environment(self, env: dict[str, str], library: Path) -> dict[str, str]:
        """ENV with LIBRARY (the swapper) first in LD_PRELOAD and set up as these say."""
        env = with_preload(env, library)
        for name, value in (("LOCKLAB_SWAP_LOCK", self.lock),
                            ("LOCKLAB_SWAP_LOCK_OPTS", self.lock_opts),
                            ("LOCKLAB_SWAP_LOCK_FOR", ";".join(self.lock_for)),
                            ("LOCKLAB_SWAP_RWLOCK", self.rwlock),
                            ("LOCKLAB_SWAP_RWLOCK_OPTS", self.rwlock_opts),
                            ("LOCKLAB_SWAP_RWLOCK_FOR", ";".join(self.rwlock_for)),
                            ("LOCKLAB_SWAP_STATS_JSON",
                             os.path.abspath(self.stats_json) if self.stats_json else None)):
            if value:
                env[name] = value
            else:
                env.pop(name, None)
        # The sites' counts and the marks of loading go to files of the run's own
        # (sites.SiteCounts, marks.LoadMarks); a check left set would make the program
        # exit as soon as it loads the library.
        for name in ("LOCKLAB_SWAP_SITES_JSON", "LOCKLAB_SWAP_MARKS", "LOCKLAB_SWAP_CHECK"):
            env.pop(name, None)
        env["LOCKLAB_SWAP_STATS"] = "1" if self.stats else "0"
        return env
