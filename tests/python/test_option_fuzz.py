"""Every numeric option of every subcommand fed values outside its range; then every
command's options fed random and malformed values, and malformed stores and program
files.

Each of 0 (where it means nothing), -1, nan, inf, 1e308, 2^64 and junk must be
refused with one `locklab: ...` line on stderr and a non-zero status, before
anything runs, and a database given to the command must be left as it was. The
real locklab-bench and profiler answer for their own options (bench, floor,
moncost, profile and the knob lists).
"""
import concurrent.futures
import random
import sqlite3
import subprocess
from pathlib import Path

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


# ------------------------------------------------------------- random and malformed input
#
# Every command's options fed values drawn (seeded) from pools of what each kind of
# option must refuse, then stores and program files that are not what they claim:
# each must end in one `locklab: ...` line and a non-zero status, never a traceback
# or a hang.  The cases run a few at a time, each bounded in time.

SEED = 7
CASE_TIMEOUT = 30    # seconds one command may take
HUGE = "x" * 20000
NUMBERS = ["", "-1", "nan", "inf", "-inf", "1e308", str(2 ** 64), "0x10", "1,,2", "é",
           "\u221e", "\u00bd", "9" * 5000, HUGE, "1;2"]
NAMES = ["", "no-such-lock", "\u00e9t\u00e9", HUGE, "ll:spin", "ll:=1", "ll:bogus=1", "a;b",
         "%s%n", "ll:spin=\u2603", ",", "spin=tas"]
KNOBS = ["spin", "=1", "bogus=1", "spin=", "spin=" + "x" * 100, ",", "sync_spin_loops=" + "9" * 100,
         "\u00e9=1", HUGE, "spin=tas,spin=tas"]
RUNS = ["0", "-0", "", "1.5", "\u00bc", "-" + "9" * 30, HUGE, "latest ", "99"]
SIGNALS = ["KILL", "SIGTERM", "99", "-1", "", "\u00e9", "STOP"]
CHOICES = ["", "nope", "\u00e9", HUGE]


def out_files(tmp):
    """Output files no command can write: empty, in no folder, a folder, under a file."""
    return ["", "/nonexistent/dir/f", str(tmp), str(tmp / "file" / "f"), "x" * 5000]


def out_dirs(tmp):
    return ["", str(tmp / "file"), str(tmp / "file" / "sub")]


@pytest.fixture(scope="module")
def fuzz_env(tmp_path_factory):
    """A folder with a file in it, a store of one run, and the fake locklab-bench."""
    from conftest import Fake

    tmp = tmp_path_factory.mktemp("random")
    (tmp / "file").write_text("not a folder\n")
    fake = Fake(tmp)
    out = locklab("sweep", "--locks", "innodb56", "--threads", "1", "--duration", "0.01",
                  "--warmup", "0", "--db", tmp / "l.db", env=fake.env())
    assert out.returncode == 0, out.stderr
    return tmp, fake


def option_cases(tmp):
    """(argv, value) for every command's options, values drawn from their kind's pool."""
    sweep = ["sweep", "--locks", "innodb56", "--threads", "1", "--duration", "0.01",
             "--warmup", "0", "--dry-run"]
    server = ["sweep", "--workload", "server", "--locks", "innodb56", "--threads", "1",
              "--dry-run"]
    run = ["run", "--lock", "innodb56"]
    db = ["--db", str(tmp / "l.db")]
    table = [
        *((sweep, opt, NUMBERS) for opt in ("--threads", "--mutexes", "--hold-ns",
                                            "--outside-ns", "--duration", "--warmup",
                                            "--repeat", "--timeout")),
        (["sweep", "--workload", "rw", "--locks", "ll", "--threads", "1", "--dry-run"],
         "--read-pct", NUMBERS),
        (sweep[:1] + sweep[3:], "--locks", NAMES),
        (sweep, "--add-locks", NAMES),
        (sweep, "--lock-opts", KNOBS),
        (server, "--gate", NAMES[1:]),   # '' is no gate
        (server, "--workload-opts", KNOBS),
        (sweep, "--preset", CHOICES), (sweep, "--workload", CHOICES),
        (["sweep"], "--program", CHOICES),
        (["sweep"], "--resume", RUNS),
        (["sweep", "--resume", "1"], "--timeout", NUMBERS),
        (["report", "1"], "--out", out_dirs(tmp)),
        (["report"], None, RUNS), (["compare", "1"], None, RUNS),
        (["list"], None, NAMES[1:]), (["list", "innodb56"], "--lock-opts", KNOBS),
        (run, "--lock-opts", KNOBS), (["run"], "--lock", NAMES),
        (run, "--lock-for", NAMES + ["=ll", "site=", "site=nope", "a=ll:spin"]),
        (run, "--rwlock", NAMES), (run, "--stats-json", out_files(tmp)),
        (["profile"], "-o", out_files(tmp)), (["profile"], "--trace", out_files(tmp)),
        *((["profile"], opt, NUMBERS) for opt in ("--trace-events", "-s", "--depth", "--top",
                                                 "--min-wait", "--interval", "--hold-every")),
        (["profile"], "--signal", SIGNALS), (["profile"], "--lock", NAMES),
    ]
    rng = random.Random(SEED)
    for before, option, pool in table:
        argv = [*before, *([option] if option else []), rng.choice(pool)]
        if argv[0] in ("sweep", "report", "compare"):
            argv += db
        if argv[0] in ("run", "profile"):
            argv += ["--", "true"]
        yield argv


def store_cases(tmp):
    """A store each way malformed, under every command that reads one."""
    good = (tmp / "l.db").read_bytes()
    stores = {"truncated": good[:1000], "garbage": bytes(range(256)) * 8,
              "text": b"SQLite format 3\x00" + b"x" * 200}
    foreign = sqlite3.connect(tmp / "foreign.db")
    foreign.execute("CREATE TABLE accounts (x)")
    foreign.commit()
    foreign.close()
    for name, spec in (("spec-missing", ""), ("spec-text", "{"), ("spec-list", "[]"),
                       ("spec-shape", '{"locks": "ll"}'), ("spec-empty", "{}")):
        path = tmp / f"{name}.db"
        path.write_bytes(good)
        conn = sqlite3.connect(path)
        conn.execute("UPDATE runs SET spec = ?", (spec,))
        conn.commit()
        conn.close()
    for name, data in stores.items():
        (tmp / f"{name}.db").write_bytes(data)
    readers = [["report", "1", "--out", str(tmp / "r")], ["compare", "1", "1"],
               ["sweep", "--resume", "1"], ["sweep", "--resume", "1", "--dry-run"],
               ["sweep", "--locks", "innodb56", "--threads", "1"]]
    rng = random.Random(SEED)
    for path in sorted(tmp.glob("*.db")):
        if path.name == "l.db":
            continue
        # A spec is read where a run is: not by a new run, nor by compare where it is
        # an object (compare needs no grid).
        fit = [r for r in readers if not path.name.startswith("spec-")
               or "--resume" in r or r[0] == "report"
               or r[0] == "compare" and path.name in ("spec-missing", "spec-text", "spec-list")]
        for args in rng.sample(fit, 2):
            yield [*args, "--db", str(path)]


def program_cases(tmp):
    """Program files that are not programs, under both commands that run one."""
    elf = Path("/bin/true").read_bytes()
    files = {"magic": b"\x7fELF", "elf14": elf[:14], "cut": elf[:200],
             "noclass": b"\x7fELF\x07\x01\x01" + bytes(57)}
    for name, data in files.items():
        (tmp / name).write_bytes(data)
        (tmp / name).chmod(0o755)
    (tmp / "noexec").write_bytes(elf)
    (tmp / "folder").mkdir(exist_ok=True)
    commands = (["run", "--lock", "ll"], ["profile"])
    for i, name in enumerate((*files, "noexec", "folder", "missing")):
        yield [*commands[i % 2], "--", str(tmp / name)]
    yield [*commands[1], "--", str(tmp / "cut")]
    yield [*commands[0], "--", str(tmp / "elf14")]


def one_line_refusal(argv, env):
    """None if `locklab ARGV` refused in one line, in time; else what went wrong."""
    try:
        out = locklab(*argv, env=env, timeout=CASE_TIMEOUT)
    except subprocess.TimeoutExpired:
        return "hung"
    lines = out.stderr.strip().splitlines()
    if "Traceback" in out.stderr:
        return out.stderr[-600:]
    if out.returncode == 0 or len(lines) != 1 or not lines[0].startswith("locklab: "):
        return f"status {out.returncode}, stderr {out.stderr[-300:]!r}"
    return None


def refused_each(cases, env):
    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        found = dict(zip(map(tuple, cases), pool.map(lambda a: one_line_refusal(a, env), cases)))
    wrong = {" ".join(a)[:200]: why for a, why in found.items() if why}
    assert not wrong, "\n".join(f"{a}: {why}" for a, why in wrong.items())


def test_random_option_values_are_refused_in_one_line(fuzz_env):
    """With the real locklab-bench: it judges the locks' and gates' options."""
    tmp, _ = fuzz_env
    refused_each(list(option_cases(tmp)), None)


def test_malformed_stores_are_refused_in_one_line(fuzz_env):
    tmp, fake = fuzz_env
    refused_each(list(store_cases(tmp)), fake.env())


def test_files_that_are_no_programs_are_refused_in_one_line(fuzz_env):
    tmp, _ = fuzz_env
    refused_each(list(program_cases(tmp)), None)
