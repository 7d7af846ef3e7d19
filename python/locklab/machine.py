"""What a sweep ran on: the facts that make two runs comparable, or not."""
from __future__ import annotations

import json
import os
import platform

from . import __version__, native
from .sweep.store import MACHINE


def cpu_model() -> str:
    # /proc/cpuinfo names the part ("Intel(R) Xeon(R) Gold 6138"); platform.processor()
    # only gives the architecture on Linux, so it is the fallback.
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                key, _, value = line.partition(":")
                if key.strip() in ("model name", "Processor", "cpu model"):
                    return value.strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def glibc_version() -> str:
    # The C library's own answer ("glibc 2.36"): the pthread mutexes under test are its.
    try:
        return os.confstr("CS_GNU_LIBC_VERSION") or ""
    except (ValueError, OSError):
        return " ".join(platform.libc_ver())


def describe() -> dict:
    """The machine's fixed facts (everything but the measured floor)."""
    uname = platform.uname()
    return {
        "cpu_model": cpu_model(),
        "cores": os.cpu_count() or 0,
        "kernel": f"{uname.system} {uname.release}",
        "glibc": glibc_version(),
        "version": __version__,
    }


def floor() -> dict:
    """locklab-bench's measured costs of the primitives every lock is built from."""
    out = native.run_bench(["floor", "--json"])
    try:
        return json.loads(out)
    except ValueError:
        raise native.NativeError(f"locklab-bench floor printed no JSON: {out[:80]!r}") from None


def changes_since(run: dict) -> list[str]:
    """The facts about this machine that differ from those RUN (a stored run) began on."""
    now = describe()
    return [f"{key} {run[key]!r} -> {now[key]!r}" for key in MACHINE if run[key] != now[key]]
