"""The C parts: locklab-bench run and asked, and the libraries to preload found.

pip installs them inside the package (locklab/_native/); a developer may point
LOCKLAB_NATIVE_DIR at a CMake build directory instead.
"""
from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from .errors import LocklabError
from .launch.process import exit_status


class NativeError(LocklabError):
    """locklab-bench refused its input; str() is its one-line message."""


def native_dir() -> Path:
    env = os.environ.get("LOCKLAB_NATIVE_DIR")
    if env:
        return Path(env)
    return Path(__file__).resolve().parent / "_native"


def native_file(name: str) -> Path:
    """One of the C parts (locklab-bench, a library to preload), checked there."""
    path = native_dir() / name
    if not path.is_file():
        raise NativeError(
            f"{name} not found at {path}: install with 'pip install .' "
            "or set LOCKLAB_NATIVE_DIR to a CMake build directory")
    return path


def bench_path() -> Path:
    return native_file("locklab-bench")


def run_bench(args: list[str]) -> str:
    """Run locklab-bench ARGS; its stdout, or NativeError with its error line."""
    proc = subprocess.run([str(bench_path()), *args], capture_output=True, text=True)
    if proc.returncode != 0:
        msg = proc.stderr.strip().splitlines()
        text = msg[-1] if msg else f"locklab-bench exited with status {proc.returncode}"
        raise NativeError(text.removeprefix("locklab: "))
    return proc.stdout


def passthrough(args: list[str]) -> int:
    """Run locklab-bench ARGS on this process's stdin/stdout/stderr; its exit status.

    A death by signal N comes back as 128 + N, as a shell reports it.
    """
    return exit_status(subprocess.run([str(bench_path()), *args]).returncode)


def algorithms(name: str | None = None, lock_opts: str | None = None,
               unbuilt: bool = False, kind: str = "mutex") -> list[dict]:
    """Every runnable algorithm of KIND (or one, with its options applied) as dicts.

    KIND: "mutex", "rwlock" (locklab/rwlock.h), "gate" (locklab/gate.h's policies),
    or "all" (mutexes, rwlocks, then gates; a NAME then names a mutex).  Each dict's "kind" says which.  With UNBUILT, the
    peer locks this build left out follow the mutexes, as
    {"name", "built": False, "summary": "not built: why", "note": why, "knobs": []}.
    """
    args = ["list", "--json"]
    if kind in ("rwlock", "gate"):
        args.append("--" + kind)
    if name:
        args.append(name)
    if lock_opts:
        args += ["--lock-opts", lock_opts]
    algos = json.loads(run_bench(args))
    if kind != "all":
        algos = [a for a in algos if a.get("kind", "mutex") == kind]
    return algos if unbuilt else [a for a in algos if a.get("built", True)]
