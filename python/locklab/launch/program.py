"""A program to start with a library preloaded: found as the shell finds it, and
refused, in one line, where the dynamic loader would never load the library into it."""
from __future__ import annotations

import os
import shutil
import struct
from pathlib import Path

from ..errors import LocklabError


def elf_class(path: Path) -> int:
    """1 or 2 (ELFCLASS32/64) of an ELF file; 0 when it is not ELF."""
    with open(path, "rb") as f:
        head = f.read(5)
    return head[4] if head[:4] == b"\x7fELF" else 0


def is_static(path: Path) -> bool:
    """True for an ELF executable the dynamic loader never sees (no PT_INTERP)."""
    with open(path, "rb") as f:
        data = f.read(1 << 16)
    wide = data[4] == 2
    little = data[5] == 1
    end = "<" if little else ">"
    if wide:
        phoff, = struct.unpack_from(end + "Q", data, 32)
        phentsize, phnum = struct.unpack_from(end + "HH", data, 54)
    else:
        phoff, = struct.unpack_from(end + "I", data, 28)
        phentsize, phnum = struct.unpack_from(end + "HH", data, 42)
    with open(path, "rb") as f:
        f.seek(phoff)
        table = f.read(phentsize * phnum)
    for i in range(phnum):
        p_type, = struct.unpack_from(end + "I", table, i * phentsize)
        if p_type == 3:  # PT_INTERP
            return False
    return True


def resolve_program(cmd: str, library: Path, verb: str) -> Path:
    """CMD as the shell would find it, checked: LD_PRELOAD must be able to bring LIBRARY
    into it (VERB: what a dynamically linked rebuild would let us do)."""
    found = cmd if "/" in cmd else shutil.which(cmd)
    if not found or not os.path.exists(found):
        raise LocklabError(f"{cmd}: command not found")
    path = Path(found)
    if path.is_dir() or not os.access(path, os.X_OK):
        raise LocklabError(f"{cmd}: not an executable file")
    kind = elf_class(path)
    if kind == 0:
        return path  # a script: its interpreter is what gets the library
    ours = elf_class(library)
    if kind != ours:
        bits = {1: 32, 2: 64}
        raise LocklabError(f"{cmd} is a {bits.get(kind, '?')}-bit program; {library.name} is "
                           f"{bits.get(ours, '?')}-bit and cannot be loaded into it")
    if is_static(path):
        raise LocklabError(f"{cmd} is statically linked: LD_PRELOAD cannot reach its locks "
                           f"(rebuild it dynamically linked to {verb})")
    if path.stat().st_mode & 0o6000:
        raise LocklabError(f"{cmd} is setuid or setgid: the loader ignores LD_PRELOAD for "
                           "it, so its locks cannot be reached")
    return path


def with_preload(env: dict[str, str], library: Path) -> dict[str, str]:
    """ENV with LIBRARY first in LD_PRELOAD: its symbols are found before those of the
    libraries already there (the profiler before the swapper, whose calls it measures)."""
    preload = env.get("LD_PRELOAD", "")
    return {**env, "LD_PRELOAD": str(library) + (" " + preload if preload else "")}
