"""What `sweep --dry-run` prints: the grid, its point count and the time expected."""
from __future__ import annotations

from . import kinds
from .progress import clock
from .store import Point

# The axes a dry run shows, in order, and how it names them.
PLAN_AXES = (("programs", "programs"), ("locks", "locks"), ("lock_opts", "lock options"),
             ("threads", "threads"), ("mutexes", "mutexes"), ("hold_ns", "hold ns"),
             ("outside_ns", "outside ns"), ("read_pct", "read %"), ("gates", "gates"),
             ("workload_opts", "workload opts"))


def _values(values) -> str:
    if isinstance(values, dict):   # a program's load tests
        return "; ".join(f"{k}: {', '.join(v) or 'its load'}" for k, v in values.items())
    if not isinstance(values, (list, tuple)):   # one value: a sub-grid's own warm-up
        return f"{values:g}" if isinstance(values, float) else str(values)
    return ", ".join(str(v) if v != "" else "(defaults)" for v in values)


def plan(spec: dict, todo: list[Point], total: int, measured_s: float | None = None) -> str:
    """What `sweep --dry-run` prints: the grid, its point count and the time expected.

    MEASURED_S: the mean wall time of the run's points already stored (a resumed run),
    which then estimates the rest better than the points' lengths do.
    """
    kind = kinds.of(spec)
    lines = [f"{'preset':<14}{spec.get('preset') or '(none)'}",
             f"{'workload':<14}{kind.workload(spec)}"]
    lines += [f"{name:<14}{_values(spec[axis])}" for axis, name in PLAN_AXES
              if spec.get(axis) is not None and not (axis == "programs" and not spec[axis])]
    if spec.get("program_tests"):
        lines.append(f"{'load tests':<14}{_values(spec['program_tests'])}")
    names = {**dict(PLAN_AXES), "warmup": "warm-up s"}
    for title, part in [*(("and shape", s) for s in (spec.get("shapes") or [])[1:]),
                        *(("then", extra) for extra in spec.get("also", []))]:
        lines.append(f"{title:<14}" + "; ".join(f"{names.get(k, k)} {_values(v)}"
                                              for k, v in part.items()))
    passes = spec["repeat"]
    longer = "".join(f" ({policy}: {s:g} s)" for policy, s in spec.get("gate_warmup", {}).items()
                     if s > spec["warmup"])
    lines.append(f"{'each point':<14}{spec['duration']:g} s after {spec['warmup']:g} s of "
                 f"warm-up{longer}, {passes} pass{'es' if passes > 1 else ''}"
                 + (", lock monitor on" if spec.get("instrument") else ""))
    left = f"{len(todo)} of {total} points left" if len(todo) != total else f"{total} points"
    if measured_s is not None:
        expected, how = measured_s * len(todo), f"{measured_s:.2f} s a point, as measured so far"
    else:
        expected, how = kind.expected_seconds(spec, todo), kind.start_cost
    lines.append(f"{'points':<14}{left}, about {clock(expected)} ({how})")
    return "\n".join(lines)
