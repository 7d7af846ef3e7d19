"""A program to start with a library preloaded: found as the shell finds it, and
refused, in one line, where the dynamic loader would never load the library into it."""
from __future__ import annotations

import os
import shutil
import struct
from pathlib import Path

from ..errors import LocklabError


ELF_MAGIC = b"\x7fELF"
# e_ident[EI_CLASS] and e_ident[EI_DATA]: 32- or 64-bit, little- or big-endian.
ELF_CLASSES = {1: 32, 2: 64}
ELF_ORDERS = {1: "<", 2: ">"}
PT_INTERP = 3


def elf_class(path: Path) -> int | None:
    """1 or 2 (ELFCLASS32/64) of an ELF file, or its class byte as it is (0 where the
    file ends before it); None when it is not ELF."""
    with open(path, "rb") as f:
        head = f.read(5)
    return (head[4:5] or b"\0")[0] if head[:4] == ELF_MAGIC else None


def is_static(path: Path) -> bool:
    """True for an ELF executable the dynamic loader never sees (no PT_INTERP).
    ValueError, saying what is wrong, for a file too short or malformed to tell."""
    with open(path, "rb") as f:
        head = f.read(64)
        wide = head[4:5] == b"\2"
        if len(head) < (64 if wide else 52):
            raise ValueError(f"truncated: {len(head)} bytes, less than an ELF header")
        end = ELF_ORDERS.get(head[5])
        if end is None or head[4] not in ELF_CLASSES:
            raise ValueError("an ELF header of no known class or byte order")
        if wide:
            phoff, = struct.unpack_from(end + "Q", head, 32)
            phentsize, phnum = struct.unpack_from(end + "HH", head, 54)
        else:
            phoff, = struct.unpack_from(end + "I", head, 28)
            phentsize, phnum = struct.unpack_from(end + "HH", head, 42)
        if phnum == 0 or phentsize < 4:
            raise ValueError("no program headers")
        f.seek(phoff)
        table = f.read(phentsize * phnum)
    if len(table) < phentsize * phnum:
        raise ValueError(f"truncated: its program headers end past the file's "
                         f"{path.stat().st_size} bytes")
    return not any(struct.unpack_from(end + "I", table, i * phentsize)[0] == PT_INTERP
                   for i in range(phnum))


def resolve_program(cmd: str, library: Path, verb: str) -> Path:
    """CMD as the shell would find it, checked: LD_PRELOAD must be able to bring LIBRARY
    into it (VERB: what a dynamically linked rebuild would let us do)."""
    found = cmd if "/" in cmd else shutil.which(cmd)
    if not found or not os.path.exists(found):
        raise LocklabError(f"{cmd}: command not found")
    path = Path(found)
    if path.is_dir() or not os.access(path, os.X_OK):
        raise LocklabError(f"{cmd}: not an executable file")
    try:
        kind = elf_class(path)
    except OSError:
        return path  # execute-only: the loader reads it, we cannot; it is left to run
    if kind is None:
        return path  # a script: its interpreter is what gets the library
    ours = elf_class(library)
    if kind != ours:
        raise LocklabError(f"{cmd} is a {ELF_CLASSES.get(kind, '?')}-bit program; "
                           f"{library.name} is {ELF_CLASSES.get(ours, '?')}-bit and cannot be "
                           "loaded into it")
    try:
        static = is_static(path)
    except ValueError as e:
        raise LocklabError(f"{cmd}: not a program the loader can start ({e})") from None
    if static:
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
