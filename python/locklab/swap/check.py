"""The swapper's settings checked before the program starts, as liblocklab-swap.so
checks them when it loads (there, a refusal ends the program with status 2).

An algorithm and its options are asked of `locklab-bench list NAME --lock-opts OPTS`
(the library's own parser answers, in its words). The bench also runs locks of other
projects (its peers: absl, ck-*) that liblocklab, and so the swapper, lacks: its list
marks liblocklab's own with "library" (served). A --lock-for or --rwlock-for entry's
own form (SITE=NAME[:K=V,...], the swapper's limits) is checked here, worded as the
swapper words it.
"""
from __future__ import annotations

from functools import lru_cache

from .. import native
from ..errors import LocklabError
from .settings import SwapSettings
from .sites import split_entry

# liblocklab-swap.so's room for sites: how many, and the bytes of a site and of its
# options, each with its terminating NUL.
SITES = 64
SITE_BYTES = 512
OPTS_BYTES = 256
# How much of a refused entry its error line quotes.
QUOTED = 300


def check(settings: SwapSettings) -> None:
    """Refuse, in one line, settings the swapper would refuse: an unknown algorithm or
    option, a lock it does not serve, a malformed site."""
    for option, entries, refusal in (("lock-for", settings.lock_for, lock_refusal),
                                      ("rwlock-for", settings.rwlock_for, rwlock_refusal)):
        seen: list[str] = []
        for entry in entries:
            why = site_refusal(entry, seen, refusal)
            if why:
                raise LocklabError(f"{option} '{entry[:QUOTED]}': {why}")
    if settings.rwlock:
        native.algorithms(settings.rwlock, settings.rwlock_opts, kind="rwlock")
    if settings.lock:
        why = lock_refusal(settings.lock, settings.lock_opts)
        if why:
            raise LocklabError(why)


def lock_refusal(name: str, opts: str | None) -> str | None:
    """Why the swapper would not serve mutexes with NAME and OPTS, or None."""
    if not served(name):
        valid = [a["name"] for a in native.algorithms() if served(a["name"])]
        return f"unknown lock '{name}' (valid: {', '.join(valid) or 'none'})"
    try:
        native.algorithms(name, opts or None)
    except native.NativeError as e:
        return str(e)
    return None


def rwlock_refusal(name: str, opts: str | None) -> str | None:
    """Why the swapper would not serve rwlocks with NAME and OPTS, or None."""
    try:
        native.algorithms(name, opts or None, kind="rwlock")
    except native.NativeError as e:
        return str(e)
    return None


def served(name: str) -> bool:
    """Whether liblocklab-swap.so serves mutexes with the algorithm NAME: whether it is
    one of liblocklab's own, as the library's list says."""
    return name in library_mutexes()


@lru_cache(maxsize=None)
def library_mutexes() -> frozenset[str]:
    return frozenset(a["name"] for a in native.algorithms() if a["library"])


def site_refusal(entry: str, seen: list[str], refusal=lock_refusal) -> str | None:
    """Why the swapper refuses --lock-for ENTRY after the sites SEEN (then added to
    them), or None; REFUSAL judges its lock (rwlock_refusal: --rwlock-for's)."""
    split = split_entry(entry)
    if not split:
        return "not SITE=LOCK or SITE=LOCK:OPTS"
    site, lock = split
    if not site:
        return "the site is empty"
    if len(site.encode()) >= SITE_BYTES:
        return f"the site is longer than {SITE_BYTES - 1} bytes"
    if len(seen) == SITES:
        return f"more than {SITES} sites"
    name, _, opts = lock.partition(":")
    if len(opts.encode()) >= OPTS_BYTES:
        return f"options longer than {OPTS_BYTES - 1} bytes"
    why = refusal(name, opts)
    if why:
        return why
    if site in seen:
        return "the site is given twice"
    seen.append(site)
    return None
