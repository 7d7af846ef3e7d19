"""How the profiler names a frame (`object`symbol+0xOFF`) and a C++ function in it:
the names its reports, `locklab run --lock-for` and the lines' lookup share."""
from __future__ import annotations

import re

_FRAME = re.compile(r"^(?:(?P<obj>[^`]*)`)?(?P<fn>.*?)(?:\+0x(?P<off>[0-9a-f]+))?$")


def split_frame(name: str) -> tuple[str, str, int]:
    """`object`symbol+0xOFF` -> (object, symbol, OFF); the symbol is "" where only
    the object is known (`mariadbd`+0xde2889`), the object "" for a bare address."""
    m = _FRAME.match(name)
    obj, fn, off = m.group("obj") or "", m.group("fn"), m.group("off")
    if not m.group("obj") and fn.startswith("0x") and off is None:
        return "", "", int(fn, 16)
    return obj, fn, int(off, 16) if off else 0


def function_of(name: str, function: str = "") -> str:
    """The frame's function as `object`symbol` (or `object`FUNCTION`, a name from the
    debug information: an inlined function), its offset dropped; the frame itself
    where nothing names it."""
    obj, fn, _ = split_frame(name)
    fn = function or fn
    if not fn:
        return name
    return f"{obj}`{fn}" if obj else fn


def profiler_name(demangled: str) -> str:
    """A demangled C++ name as the profiler prints it: the parameter list dropped
    (at the first '(' outside template brackets that is not operator())."""
    depth = 0
    for i, ch in enumerate(demangled):
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth -= 1
        elif ch == "(" and depth == 0 and not demangled[:i].endswith("operator"):
            return demangled[:i]
    return demangled
