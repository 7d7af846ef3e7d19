"""argparse types for the `locklab` command's options: bounded, finite, one-line errors.

Each bound is what the program that takes the value accepts (locklab-bench's in
src/bench/bench.c and server.c, the profiler's in src/prof), so a command refuses a
value before anything runs or is stored, not when its first point fails.
"""
from __future__ import annotations

import argparse
import math

MAX_THREADS = 100_000
MAX_NS = 1_000_000_000
MAX_SECONDS = 86_400
MAX_REPEAT = 1000


def int_list(minimum: int, maximum: int):
    """Comma-separated integers in [minimum, maximum], duplicates dropped."""

    def parse(text: str) -> list[int]:
        try:
            values = [int(v) for v in text.split(",")]
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"'{text}' is not a comma-separated list of integers") from None
        bad = [v for v in values if not minimum <= v <= maximum]
        if bad:
            raise argparse.ArgumentTypeError(f"{bad[0]} is outside [{minimum}, {maximum}]")
        return list(dict.fromkeys(values))

    return parse


def number_list(minimum: float, maximum: float):
    """Comma-separated finite numbers in [minimum, maximum], duplicates dropped."""
    one = number(minimum, maximum)

    def parse(text: str) -> list[float]:
        return list(dict.fromkeys(one(v.strip()) for v in text.split(",")))

    return parse


def lock_list(text: str) -> list[str]:
    """Comma-separated locks, each NAME or NAME:K=V,... (its own options), duplicates
    dropped. An item with '=' and no ':' before it is an option of the lock before it,
    as no lock's name has '=': `innodb56:sync_spin_loops=80,spin=tas,ll` is two locks."""
    locks: list[str] = []
    for item in (i.strip() for i in text.split(",")):
        key = item.partition(":")[0]
        if "=" not in key:
            if not item:
                raise argparse.ArgumentTypeError(f"'{text}' has an empty name")
            locks.append(item)
        elif locks and ":" in locks[-1]:
            locks[-1] += "," + item
        else:
            raise argparse.ArgumentTypeError(
                f"'{item}' in '{text}' is an option with no lock before it: options follow "
                "their lock after ':' (NAME:K=V,...)")
    return list(dict.fromkeys(locks))


def number(minimum: float, maximum: float, kind=float, strict: bool = False):
    """A finite number in [minimum, maximum]; (minimum, maximum] when strict."""

    def parse(text: str):
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"'{text}' is not a number") from None
        if (not math.isfinite(value) or value < minimum or value > maximum
                or (strict and value == minimum)):
            low = "(" if strict else "["
            raise argparse.ArgumentTypeError(f"{text} is outside {low}{minimum:g}, {maximum:g}]")
        return value

    return parse


def in_range(lo: float, hi: float, kind=int, meaning: str = ""):
    """A whole number (KIND int) or a finite number (float) in [lo, hi], else one line
    naming the range, MEANING after it (' seconds', '; 0: off')."""
    shown = (lambda v: str(v)) if kind is int else (lambda v: f"{v:g}")
    what = "a whole number" if kind is int else "a number"

    def parse(text: str):
        valid = f"valid: {shown(lo)}-{shown(hi)}{meaning}"
        try:
            value = int(text, 10) if kind is int else float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not {what} ({valid})") from None
        if not math.isfinite(value) or not lo <= value <= hi:
            raise argparse.ArgumentTypeError(f"{text} is out of range ({valid})")
        return value

    return parse
