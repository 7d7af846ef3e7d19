"""Named sweep grids; options on the command line override their values."""
from __future__ import annotations

# Every lock `locklab-bench list` knows, resolved when the sweep starts.
ALL = "all"
SEED_LOCKS = ["innodb56", "pthread", "pthread-adaptive"]

# Without a preset: the seed's locks on a small grid, at the default point length.
DEFAULT = {
    "locks": SEED_LOCKS,
    "lock_opts": [""],
    "threads": [1, 2, 4, 8, 16],
    "mutexes": [1],
    "hold_ns": [0],
    "outside_ns": [0],
    "duration": 1.0,
    "warmup": 0.2,
    "repeat": 1,
    "timeout": None,
}

PRESETS = {
    # The README's main job: the seed's story (innodb56 ahead at few threads,
    # collapsing with many on one mutex, the crossing moving right as the hold time
    # grows) in under 3 minutes on 2 cores: 84 points of 1 s, ~1.15 s with process
    # start-up and the creation of up to 1024 threads.
    "quick": {
        "locks": [*SEED_LOCKS, "futex"],
        "threads": [1, 2, 4, 16, 64, 256, 1024],
        "mutexes": [1],
        "hold_ns": [0, 1000, 4000],
        "duration": 0.8,
        "warmup": 0.2,
    },
    # The seed's whole grid; locks given with --locks are added to its three.
    "seed": {
        "locks": SEED_LOCKS,
        "threads": [1, 2, 4, 8, 16, 20, 24, 36, 40, 48, 64, 128, 256, 512, 1024],
        "mutexes": [1, 2, 4, 8, 16],
        "hold_ns": [0, 1000, 4000],
        "extend_locks": True,
    },
    # Every lock, the peers (ck-*, absl) included, on one mutex.
    "peers": {
        "locks": [ALL],
        "threads": [1, 2, 4, 16, 64, 256, 1024],
        "mutexes": [1],
        "hold_ns": [0, 1000, 4000],
    },
}


def spec(preset: str | None, given: dict) -> dict:
    """The grid to sweep: the defaults, then the preset, then what was given (not None)."""
    values = {**DEFAULT, **PRESETS.get(preset or "", {})}
    extend_locks = values.pop("extend_locks", False)
    for key, value in given.items():
        if value is None:
            continue
        if key == "locks" and extend_locks:
            value = values["locks"] + [lock for lock in value if lock not in values["locks"]]
        values[key] = value
    values["preset"] = preset
    return values
