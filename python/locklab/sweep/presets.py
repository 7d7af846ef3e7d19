"""Named sweep grids; options on the command line override their values."""
from __future__ import annotations

from typing import Callable

# Every lock `locklab-bench list` knows, resolved when the sweep starts.
ALL = "all"
# Every lock that parks its waiters (`locklab list`: [parks]), resolved the same way.
PARKS = "parks"
# A program point's lock label for the server run as it is, nothing preloaded.
NATIVE = "native"
# A program point's lock label 'rwlock=NAME[:K=V,...]': every pthread_rwlock_t of the
# server served by that rwlock, its mutexes left to glibc (sweep --rwlock).
RWLOCK_MARK = "rwlock="
STUDY_LOCKS = ["innodb56", "pthread", "pthread-adaptive"]

# Without a preset: the InnoDB mutex study's locks on a small grid, at the default point length.
DEFAULT = {
    "locks": STUDY_LOCKS,
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

# The innodb_thread_concurrency study (docs/admission.md): the server workload's clients 1..1024 behind no gate,
# InnoDB's gate and the FIFO gate at each N, and auto; then, at 256 clients, the
# same with I/O inside the query, held in the gate or suspended around.
CONCURRENCY_N = [1, 2, 4, 8, 16, 32, 64]


def gate_grid(ns: list[int]) -> list[str]:
    return ["none", *(f"innodb:n={n}" for n in ns), *(f"fifo:n={n}" for n in ns), "auto"]


# InnoDB's gate (src/lib/gate/innodb.c) settles only when its shared sleep delay has
# climbed to its cap, 1 us per repeated sleep: with W = clients - N sleepers that takes
# about cap^2 / (2 W x 1 us) (docs/admission.md: ~11 s at 1024 clients, ~45 s at 256).
INNODB_DELAY_CAP_S = 0.15     # adaptive_max_sleep_delay's default
INNODB_DELAY_STEP_S = 1e-6


def innodb_settle_s(clients: int, n: int) -> float:
    """Seconds InnoDB's gate with N slots takes to settle under CLIENTS clients."""
    sleepers = max(clients - n, 1)
    return INNODB_DELAY_CAP_S ** 2 / (2 * sleepers * INNODB_DELAY_STEP_S)


# The concurrency preset's settled sub-grid: innodb56 at 256 and 1024 clients behind
# InnoDB's gate and fifo at the N best for both in the preset's runs so far, each point
# warmed up until InnoDB's gate has settled (whole seconds, at least that), so that
# "InnoDB's best" is InnoDB at its best. 2 x 2 points of 46 and 12 s x 3 passes: ~6
# minutes on 2 cores.
SETTLED_LOCK = "innodb56"
SETTLED_N = 4
SETTLED_CLIENTS = [256, 1024]


def settled_grid() -> list[dict]:
    return [{"locks": [SETTLED_LOCK], "threads": [clients],
             "gates": [f"innodb:n={SETTLED_N}", f"fifo:n={SETTLED_N}"],
             "warmup": float(int(innodb_settle_s(clients, SETTLED_N)) + 1)}
            for clients in SETTLED_CLIENTS]


# locklab-bench's defaults, given since every point of a sweep names them. Points are
# short and repeated: the median of 3 passes of 0.2 s resists a neighbour's burst on
# a shared machine better than one pass of 0.6 s. Every point first runs 0.3 s
# unmeasured, auto's AUTO_WARMUP_S, so that auto's N is judged where it has settled.
# InnoDB's shared sleep delay is not: it climbs 1 us per repeated sleep, ~11 s to its
# 150 ms cap with 1024 clients and minutes with fewer, which no sweep on 2 cores can
# wait out per point (settled_grid, above, waits it out at two points).
SERVER = {
    "workload": "server",
    "mutexes": [4],          # secondary mutexes (buffer pool instances)
    "hold_ns": [1000],       # on the hot mutex (kernel_mutex)
    "outside_ns": [500],     # outside the gate
    "workload_opts": [""],   # the rest at locklab-bench's defaults
    "duration": 0.2,
    "warmup": 0.3,
    "repeat": 3,
}
IO_OPTS = ["io_us=200", "io_us=200,suspend=1"]
CONCURRENCY_LOCKS = ["innodb56", "pthread", "futex", "ll"]
# auto finds N by probing (src/lib/gate/auto.c): from twice the CPUs it climbs in
# doublings, each a paired test of 80-320 ms at its 10 ms intervals, so 0.3 s of warm-up
# judges it in mid-climb wherever the best N is 16 or more.  Its points warm up this long
# instead, in the grid beside the fixed gates' (docs/admission.md, "auto after 1.5 s").
AUTO_WARMUP_S = 1.5
GATE_WARMUP = {"auto": AUTO_WARMUP_S}
# Real servers with their pthread locks swapped (docs/swap.md): each pass starts each
# program once per lock and runs its load tests at every client count on it. Points are
# whole seconds (memcaslap's and sysbench's --time); 3 passes of 1 s points, 10 locks,
# ~13 minutes on 2 cores.  The spinlocks yield while they wait (NAME:K=V, the lock's own
# options): with PAUSE alone, mcs's MariaDB servers at 64 clients were stuck past every
# timeout on 2 vCPUs (docs/swap.md).
PROGRAM_TESTS = {"memcached": [""], "mariadb": ["oltp_point_select", "oltp_read_only"]}
PROGRAMS = {
    "programs": list(PROGRAM_TESTS),
    "program_tests": PROGRAM_TESTS,
    "locks": [NATIVE, PARKS, "tas:spin=yield", "mcs:spin=yield"],
    "lock_opts": [""],
    "threads": [1, 4, 16, 64, 256],
    "duration": 1,
    "warmup": 1,
    "repeat": 3,
    "timeout": None,
}
# The benchmark's axes, which a program sweep has not: together, the workload's shape.
BENCH_ONLY = ("mutexes", "hold_ns", "outside_ns")

# Axes an `also` sub-grid sets: giving one of them on the command line drops the sub-grids.
ALSO_AXES = ("threads", "gates", "workload_opts")

# A preset's `shapes`: workload shapes, each the axes of BENCH_ONLY it changes from the
# preset's own, swept one after the other within each pass (unlike `also`, whose
# sub-grids follow every pass of the main grid). Giving any of BENCH_ONLY on the
# command line drops them.
#
# The server workload with every lock that parks (absl among them), no gate: the
# defaults (4 secondary mutexes, 1000 ns on the hot one, 500 ns outside), short
# critical sections on more mutexes, and clients that spend most of their time
# outside. 7 locks x 6 client counts x 3 shapes x 3 passes = 378 points of 0.5 s
# after 0.3 s of warm-up: ~6 minutes on 2 cores with the start of each process
# and its up to 1024 threads (docs/bench.md).
SERVER_LOCKS = {
    **SERVER,
    "locks": [PARKS, "absl"],
    "threads": [1, 4, 16, 64, 256, 1024],
    "shapes": [{}, {"mutexes": [16], "hold_ns": [200]}, {"outside_ns": [5000]}],
    "duration": 0.5,
    "warmup": 0.3,
}

# Read-write locks (docs/rwlocks.md): every rwlock, glibc's in both preferences (a lock
# entry NAME:K=V,... carries the lock's own options), one rwlock, read fractions from
# read-only to half writes, without and with work inside. 6 locks x 7 thread counts x 5
# read fractions x 2 holds x 3 passes = 1260 points of 0.1 s after 0.05 s of warm-up:
# ~4 minutes on 2 cores, up to twice that with other load. The read-only points at 256
# and 1024 threads take the longest: readers never sleep, and 1024 of them on 2 CPUs
# take up to seconds to start, be timed and stop (docs/rwlocks.md).
RW_WORKLOAD = "rw"
RW_LOCKS = ["pthread", "pthread:prefer=writer-nonrecursive", "ll", "partitioned", "bravo",
            "innodb56-rw"]
RW = {
    "workload": RW_WORKLOAD,
    "locks": RW_LOCKS,
    "lock_opts": [""],
    "threads": [1, 2, 4, 16, 64, 256, 1024],
    "read_pct": [100, 99.9, 99, 90, 50],
    "mutexes": [1],
    "hold_ns": [0, 1000],
    "outside_ns": [0],
    "duration": 0.1,
    "warmup": 0.05,
    "repeat": 3,
}
# The rw workload's axes: given without --preset rw, the others come from RW.
RW_AXES = ("locks", "read_pct")

PRESETS = {
    # The README's main job: the InnoDB mutex study's story (innodb56 ahead at few threads,
    # collapsing with many on one mutex, the crossing moving right as the hold time
    # grows) and the project's answer to it (futex, ll), with the report's verdict.
    # 3 passes, so that the verdict knows the repeats' spread and calls a margin inside
    # it a tie: 315 points of 0.3 s, with process start-up and the creation of up to
    # 1024 threads under 2 minutes on 2 cores (docs/bench.md).
    "quick": {
        "locks": [*STUDY_LOCKS, "futex", "ll"],
        "threads": [1, 2, 4, 16, 64, 256, 1024],
        "mutexes": [1],
        "hold_ns": [0, 1000, 4000],
        "duration": 0.2,
        "warmup": 0.1,
        "repeat": 3,
    },
    # The InnoDB mutex study's whole grid.
    "innodb-mutex": {
        "locks": STUDY_LOCKS,
        "threads": [1, 2, 4, 8, 16, 20, 24, 36, 40, 48, 64, 128, 256, 512, 1024],
        "mutexes": [1, 2, 4, 8, 16],
        "hold_ns": [0, 1000, 4000],
    },
    # (704 + 32 points) x 3 passes of 0.5 s, auto's 44 + 8 of 1.7 s: about 23 minutes on
    # 2 cores; then the settled sub-grid (4 points x 3 passes, ~6 minutes).
    "concurrency": {
        **SERVER,
        "locks": CONCURRENCY_LOCKS,
        "threads": [2 ** i for i in range(11)],
        "gates": gate_grid(CONCURRENCY_N),
        "gate_warmup": GATE_WARMUP,
        "also": [{"threads": [256], "gates": ["none", "innodb:n=8", "fifo:n=8", "auto"],
                  "workload_opts": IO_OPTS}, *settled_grid()],
    },
    # The same story in ~3 minutes: (72 + 12 points) x 3.
    "concurrency-quick": {
        **SERVER,
        "locks": ["innodb56", "pthread"],
        "threads": [1, 4, 16, 64, 256, 1024],
        "gates": gate_grid([2, 8]),
        "gate_warmup": GATE_WARMUP,
        "also": [{"threads": [256], "gates": ["innodb:n=8", "fifo:n=8", "auto"],
                  "workload_opts": IO_OPTS}],
    },
    "programs": PROGRAMS,
    # Every lock, the peers (ck-*, absl) included, on one mutex.
    "peers": {
        "locks": [ALL],
        "threads": [1, 2, 4, 16, 64, 256, 1024],
        "mutexes": [1],
        "hold_ns": [0, 1000, 4000],
    },
    "server-locks": SERVER_LOCKS,
    "rw": RW,
}


def swaps_mutexes(lock: str) -> bool:
    """Whether a program point's LOCK serves the server's mutexes, so takes --lock-opts:
    not the native server, nor one whose rwlocks alone are swapped."""
    return lock != NATIVE and not lock.startswith(RWLOCK_MARK)


def split_lock(entry: str) -> tuple[str, str]:
    """A lock entry 'NAME' or 'NAME:K=V,...' (the lock's own options): (NAME, options)."""
    name, _, opts = entry.partition(":")
    return name, opts


def resolve_locks(locks: list[str], algorithms: list[dict]) -> list[str]:
    """LOCKS with ALL replaced by every name in ALGORITHMS (`locklab-bench list --json`'s
    entries) and PARKS by those that park, in their order; each name once."""
    def names(lock: str) -> list[str]:
        if lock == ALL:
            return [a["name"] for a in algorithms]
        if lock == PARKS:
            return [a["name"] for a in algorithms if a["parks"]]
        return [lock]
    return list(dict.fromkeys(name for lock in locks for name in names(lock)))


def expand_locks(locks: list[str], algorithms: Callable[[], list[dict]]) -> list[str]:
    """LOCKS resolved (resolve_locks) against ALGORITHMS(), asked for only when LOCKS
    name ALL or PARKS."""
    return resolve_locks(locks, algorithms() if {ALL, PARKS} & set(locks) else [])


def spec(preset: str | None, given: dict) -> dict:
    """The grid to sweep: the defaults, then the preset, then what was given (not None).

    Given locks ("locks") replace the preset's, whatever the preset; "add_locks" are
    swept after the preset's own, each once.
    """
    values = {**DEFAULT, **PRESETS.get(preset or "", {})}
    if values.get("programs"):
        for axis in BENCH_ONLY:
            values.pop(axis)
    add_locks = given.get("add_locks") or []
    for key, value in given.items():
        if value is None or key == "add_locks":
            continue
        values[key] = value
    if any(given.get(axis) is not None for axis in ALSO_AXES):
        values.pop("also", None)
    if given.get("warmup") is not None:
        values.pop("gate_warmup", None)   # the warm-up given is every point's
    if given.get("locks") is not None and values.get("also"):
        # A sub-grid of its own locks keeps only those the command line names.
        values["also"] = [
            {**extra, "locks": [lk for lk in extra["locks"] if lk in given["locks"]]}
            if "locks" in extra else extra for extra in values["also"]]
        values["also"] = [extra for extra in values["also"] if extra.get("locks", True)]
    if any(given.get(axis) is not None for axis in BENCH_ONLY):
        values.pop("shapes", None)
    if values.get("workload") == RW_WORKLOAD and preset != "rw":
        # --workload rw on another grid: its locks and read fractions, unless given.
        for axis in RW_AXES:
            if given.get(axis) is None:
                values[axis] = RW[axis]
    values["locks"] = list(dict.fromkeys([*values["locks"], *add_locks]))
    values["preset"] = preset
    return values
