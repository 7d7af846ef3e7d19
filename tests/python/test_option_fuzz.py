"""Every numeric option of every subcommand fed values outside its range.

Each of 0 (where it means nothing), -1, nan, inf, 1e308, 2^64 and junk must be
refused with one `locklab: ...` line on stderr and a non-zero status, before
anything runs, and a database given to the command must be left as it was. The
real locklab-bench and profiler answer for their own options (bench, floor,
moncost, profile and the knob lists).
"""
import pytest

from conftest import locklab, rows

ZERO, NEGATIVE, NAN, INF, HUGE, TWO_64, JUNK = (
    "0", "-1", "nan", "inf", "1e308", str(2 ** 64), "junk")
EVERY = (ZERO, NEGATIVE, NAN, INF, HUGE, TWO_64, JUNK)
BUT_ZERO = EVERY[1:]  # for options where 0 is a value (no hold, no warm-up)
# Run ids: -N counts back from the latest run, so -1 is one (the module's database holds
# one run) and -2 is past the first.
RUN_IDS = (ZERO, "-2", NAN, INF, HUGE, TWO_64, JUNK)

BENCH = ["bench", "--lock", "futex", "--threads", "2", "--mutexes", "1", "--hold-ns", "0",
         "--duration", "0.01"]
SERVER = ["bench", "--workload", "server", "--lock", "futex", "--threads", "2",
          "--duration", "0.01"]
SWEEP = ["sweep", "--locks", "futex", "--threads", "2", "--duration", "0.01", "--warmup", "0"]
PROGRAMS = ["sweep", "--program", "memcached", "--locks", "futex"]
PROFILE_CMD = ["--", "true"]

# (command before the option, option, how the value is written, values it must refuse,
# command after the value)
CASES = [
    *((SWEEP, opt, "{}", values, []) for opt, values in [
        ("--threads", EVERY), ("--mutexes", EVERY), ("--hold-ns", BUT_ZERO),
        ("--outside-ns", BUT_ZERO), ("--duration", EVERY), ("--warmup", BUT_ZERO),
        ("--repeat", EVERY), ("--timeout", EVERY)]),
    *((PROGRAMS, opt, "{}", values, []) for opt, values in [
        ("--clients", EVERY), ("--duration", EVERY), ("--warmup", BUT_ZERO),
        ("--repeat", EVERY), ("--timeout", EVERY)]),
    (["sweep", "--locks", "innodb56", "--threads", "2"], "--lock-opts", "sync_spin_loops={}",
     BUT_ZERO, []),
    (["sweep", "--workload", "server", "--locks", "futex", "--threads", "2"], "--gate",
     "fifo:n={}", EVERY, []),
    (["sweep", "--workload", "server", "--locks", "futex", "--threads", "2"], "--workload-opts",
     "io_us={}", BUT_ZERO, []),
    (["sweep"], "--resume", "{}", RUN_IDS, []),
    (["report"], None, "{}", RUN_IDS, []),
    (["compare", "1"], None, "{}", RUN_IDS, []),
    (["compare"], None, "{}", RUN_IDS, ["1"]),
    (["list", "innodb56"], "--lock-opts", "sync_spin_loops={}", BUT_ZERO, []),
    *((BENCH, opt, "{}", values, []) for opt, values in [
        ("--threads", EVERY), ("--mutexes", EVERY), ("--hold-ns", BUT_ZERO),
        ("--outside-ns", BUT_ZERO), ("--duration", EVERY), ("--warmup", BUT_ZERO),
        ("--iterations", EVERY), ("--sample-every", EVERY)]),
    (BENCH, "--lock-opts", "spin_ns={}", BUT_ZERO, []),
    *((SERVER, opt, "{}", values, []) for opt, values in [
        ("--threads", EVERY), ("--mutexes", EVERY), ("--hold-ns", BUT_ZERO),
        ("--outside-ns", BUT_ZERO), ("--duration", EVERY), ("--warmup", BUT_ZERO),
        ("--iterations", EVERY)]),
    (SERVER + ["--gate", "fifo"], "--gate-opts", "n={}", EVERY, []),
    (SERVER, "--workload-opts", "trx={}", EVERY, []),
    (["moncost"], "--pairs", "{}", EVERY, []),
    (["moncost"], "--rounds", "{}", EVERY, []),
    *((["profile"], opt, "{}", values, PROFILE_CMD) for opt, values in [
        ("-s", EVERY), ("--depth", EVERY), ("--top", EVERY), ("--min-wait", BUT_ZERO),
        ("--interval", EVERY), ("--hold-every", BUT_ZERO), ("--signal", BUT_ZERO)]),
]


def expand():
    for before, option, form, values, after in CASES:
        for value in values:
            args = [*before, *([option] if option else []), form.format(value), *after]
            name = " ".join([args[0], option or "", form.format(value), *after])
            yield pytest.param(args, value, id=name)


@pytest.fixture(scope="module")
def db(tmp_path_factory):
    """A database with one run in it, for every command to be given and leave alone."""
    path = tmp_path_factory.mktemp("fuzz") / "l.db"
    out = locklab("sweep", "--locks", "futex", "--threads", "1", "--duration", "0.01",
                  "--warmup", "0", "--db", path)
    assert out.returncode == 0, out.stderr
    return path


def held(db):
    return (rows(db, "SELECT * FROM runs"), rows(db))


@pytest.mark.parametrize("args, value", list(expand()))
def test_out_of_range_values_are_refused_in_one_line(db, args, value):
    before = held(db)
    with_db = [*args, "--db", db] if args[0] in ("sweep", "report", "compare") else args
    out = locklab(*with_db, timeout=60)
    assert out.returncode != 0, (args, out.stdout[-300:])
    assert "Traceback" not in out.stderr
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("locklab: "), (args, out.stderr)
    assert value in lines[0]  # refused for the value, not for something else
    assert out.stdout == ""
    assert held(db) == before


def test_a_refused_profile_runs_nothing(tmp_path):
    """The program is not started when an option is refused."""
    marker = tmp_path / "ran"
    out = locklab("profile", "--interval", "nan", "--", "touch", marker)
    assert out.returncode == 2 and not marker.exists()
