"""A stored run's grid (its spec) checked for the shape a sweep writes, before a
report, a comparison or a resumed sweep reads it: a store damaged, edited or written
by another program gets one line saying what is wrong, not a traceback."""
from __future__ import annotations

import math

from . import presets


def _number(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _whole(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _list_of(test, what: str) -> tuple:
    return (lambda v: isinstance(v, list) and all(map(test, v))), f"a list of {what}"


NAMES = _list_of(lambda v: isinstance(v, str), "strings")
WHOLES = _list_of(_whole, "whole numbers")
NUMBERS = _list_of(_number, "numbers")
SECONDS = (lambda v: _number(v) and v >= 0, "a number of seconds")
# Each key a spec (or one of its sub-grids) may hold: its test and the words for it.
KEYS = {
    "locks": NAMES, "lock_opts": NAMES, "gates": NAMES, "workload_opts": NAMES,
    "programs": NAMES,
    "threads": WHOLES, "mutexes": WHOLES, "hold_ns": WHOLES, "outside_ns": WHOLES,
    "read_pct": NUMBERS,
    "duration": SECONDS, "warmup": SECONDS,
    "repeat": (lambda v: _whole(v) and v >= 1, "a whole number of passes"),
    "timeout": (lambda v: v is None or _number(v) and v > 0, "a number of seconds or null"),
    "preset": (lambda v: v is None or isinstance(v, str), "a preset's name or null"),
    "workload": (lambda v: isinstance(v, str), "a workload's name"),
    "instrument": (lambda v: v is None or isinstance(v, bool), "true, false or null"),
    "program_tests": (lambda v: isinstance(v, dict) and all(NAMES[0](t) for t in v.values()),
                      "an object of lists of load tests"),
    "gate_warmup": (lambda v: isinstance(v, dict) and all(map(SECONDS[0], v.values())),
                    "an object of seconds"),
}
REQUIRED = ("locks", "lock_opts", "threads", "duration", "warmup", "repeat")


def problem(spec) -> str | None:
    """What is wrong with SPEC as a run's grid, in a few words; None when nothing is."""
    if not isinstance(spec, dict):
        return f"is {type(spec).__name__}, not an object"
    if "kind" in spec:  # another command's run (locklab advise): its own reader judges it
        return None
    required = [*REQUIRED, *(("program_tests",) if spec.get("programs") else
                             presets.BENCH_ONLY)]
    missing = [key for key in required if key not in spec]
    if missing:
        return f"lacks {', '.join(missing)}"
    if spec.get("workload") == presets.RW_WORKLOAD and "read_pct" not in spec:
        return "lacks read_pct, which an rw run's grid has"
    why = _wrong_keys(spec, "")
    if why:
        return why
    for name in spec.get("programs") or []:
        if name not in spec["program_tests"]:
            return f"has no load tests for the program {name!r}"
    for key, allowed in (("shapes", presets.BENCH_ONLY), ("also", tuple(KEYS))):
        parts = spec.get(key, [])
        if not isinstance(parts, list) or not all(isinstance(p, dict) for p in parts):
            return f"has {key} that is not a list of objects"
        for i, part in enumerate(parts):
            stray = [k for k in part if k not in allowed]
            if stray:
                return f"has {key}[{i}].{stray[0]}, which no grid has"
            why = _wrong_keys(part, f"{key}[{i}].")
            if why:
                return why
    return None


def _wrong_keys(values: dict, where: str) -> str | None:
    for key, (test, what) in KEYS.items():
        if key in values and not test(values[key]):
            return f"has {where}{key} that is not {what}"
    return None
