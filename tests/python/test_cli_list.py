"""`locklab list`: every algorithm, its knobs, and one-line errors on bad input."""
import json
import subprocess
import sys

import pytest

ALGORITHMS = {
    "pthread", "pthread-adaptive", "innodb56", "spin-trylock",
    "tas", "ttas", "ticket", "mcs", "fifo-tp", "futex", "ll",
}


def locklab(*args):
    return subprocess.run(
        [sys.executable, "-m", "locklab.cli", *args], capture_output=True, text=True
    )


def test_list_shows_every_algorithm():
    out = locklab("list")
    assert out.returncode == 0, out.stderr
    names = {line.split()[0] for line in out.stdout.splitlines() if not line.startswith(" ")}
    assert ALGORITHMS <= names


def test_list_json_has_knobs_with_defaults():
    out = locklab("list", "--json")
    assert out.returncode == 0, out.stderr
    algos = {a["name"]: a for a in json.loads(out.stdout)}
    assert ALGORITHMS <= set(algos)
    knobs = {k["name"]: k for k in algos["innodb56"]["knobs"]}
    assert knobs["sync_spin_loops"]["default"] == "30"
    assert knobs["spin_wait_delay"]["default"] == "6"
    assert knobs["pause_multiplier"]["default"] == "50"
    assert knobs["spin"]["choices"] == ["pause", "none", "tas", "yield", "auto"]
    assert algos["ticket"]["fifo"] and not algos["ticket"]["parks"]
    assert algos["futex"]["parks"]


def test_list_json_says_how_each_lock_waits():
    """parks, spins, fifo and glibc: the ops tables' flags, one of parks and spins each."""
    out = locklab("list", "--json")
    assert out.returncode == 0, out.stderr
    listed = [a for a in json.loads(out.stdout)
              if a.get("built") and a.get("kind") in ("mutex", "rwlock")]
    for a in listed:
        assert a["parks"] != a["spins"], a["name"]
    algos = {(a["kind"], a["name"]): a for a in listed}
    glibc = {key for key, a in algos.items() if a["glibc"]}
    assert glibc == {("mutex", "pthread"), ("mutex", "pthread-adaptive"), ("rwlock", "pthread")}
    assert algos["mutex", "mcs"]["spins"] and algos["mutex", "mcs"]["fifo"]
    assert algos["mutex", "futex"]["parks"] and not algos["mutex", "futex"]["spins"]


def test_list_marks_what_survives_preemption():
    """Each lock says whether it survives threads outnumbering the CPUs; a lock
    that spins names the option values that would make it survive."""
    out = locklab("list", "--json")
    assert out.returncode == 0, out.stderr
    entries = [a for a in json.loads(out.stdout) if a.get("built", True)]
    mutexes = {a["name"]: a for a in entries if a["kind"] == "mutex"}
    for name in ("pthread", "futex", "ll", "fifo-tp"):
        assert mutexes[name]["preemption_safe"] is True
        assert all("preemption_safe_choices" not in k for k in mutexes[name]["knobs"])
    for name in ("tas", "ttas", "ticket", "mcs"):
        assert mutexes[name]["preemption_safe"] is False
        spin = {k["name"]: k for k in mutexes[name]["knobs"]}["spin"]
        assert spin["preemption_safe_choices"] == ["yield", "auto"]
    assert all(a["preemption_safe"] for a in entries if a["kind"] == "rwlock")
    applied = locklab("list", "mcs", "--lock-opts", "spin=auto", "--json")
    assert applied.returncode == 0, applied.stderr
    assert json.loads(applied.stdout)[0]["preemption_safe"] is True
    text = {line.split()[0]: line for line in locklab("list").stdout.splitlines()
            if line and not line.startswith(" ") and "[rwlock" not in line}
    assert text["mcs"].endswith("[spins, FIFO; preemption-safe with spin=yield or spin=auto]")
    assert text["fifo-tp"].endswith("[parks, FIFO, preemption-safe]")
    assert text["futex"].endswith("[parks, preemption-safe]")



def test_list_json_tells_the_librarys_locks_from_the_peers():
    """library: what ll_mutex_init and the swapper know; the peers (ck-*, absl) are the
    benchmark's alone, built or not."""
    out = locklab("list", "--json")
    assert out.returncode == 0, out.stderr
    built = [a for a in json.loads(out.stdout) if a.get("built")]
    own = {a["name"] for a in built if a["library"] and a["kind"] == "mutex"}
    assert {"pthread", "innodb56", "mcs", "futex", "ll"} <= own
    assert not own & {"ck-mcs", "ck-ticket", "ck-fas", "absl"}
    peers = {a["name"] for a in built if not a["library"]}
    assert all(name.startswith("ck-") or name == "absl" for name in peers), peers
    assert all(a["library"] for a in built if a["kind"] in ("rwlock", "gate"))


RWLOCKS = ["pthread", "ll", "partitioned", "innodb56-rw", "bravo"]


def test_rwlocks_listed_after_the_mutexes():
    """Mutexes and rwlocks share names (pthread, ll): each entry says its kind."""
    out = locklab("list", "--json")
    assert out.returncode == 0, out.stderr
    algos = json.loads(out.stdout)
    kinds = [a["kind"] for a in algos if a.get("built", True)]
    order = ["mutex", "rwlock", "gate"]
    assert kinds == sorted(kinds, key=order.index)  # mutexes, rwlocks, then gates
    assert [a["name"] for a in algos if a.get("kind") == "rwlock"] == RWLOCKS
    assert {a["name"] for a in algos if a.get("kind") == "mutex"} >= ALGORITHMS
    text = locklab("list")
    assert text.returncode == 0, text.stderr
    tagged = [line.split()[0] for line in text.stdout.splitlines() if "[rwlock, " in line]
    assert tagged == RWLOCKS


def test_rwlock_by_name_with_options():
    out = locklab("list", "--rwlock", "ll", "--lock-opts", "inhibit=3,bias=0", "--json")
    assert out.returncode == 0, out.stderr
    (algo,) = json.loads(out.stdout)
    assert algo["kind"] == "rwlock"
    values = {k["name"]: k["value"] for k in algo["knobs"]}
    assert values == {"bias": "0", "inhibit": "3", "spin_ns": "2000"}
    # Without --rwlock the name is the mutex's.
    (mutex,) = json.loads(locklab("list", "ll", "--json").stdout)
    assert mutex["kind"] == "mutex" and "handoff_ns" in {k["name"] for k in mutex["knobs"]}
    only = json.loads(locklab("list", "--rwlock", "--json").stdout)
    assert [a["name"] for a in only] == RWLOCKS


GATES = ["innodb", "fifo", "auto"]


def test_gate_policies_listed_with_their_knobs():
    """The gates' policies follow the locks, in text and JSON, with every knob's default."""
    algos = json.loads(locklab("list", "--json").stdout)
    gates = {a["name"]: a for a in algos if a.get("kind") == "gate"}
    assert list(gates) == GATES
    knobs = {name: {k["name"]: k for k in g["knobs"]} for name, g in gates.items()}
    for name in GATES:
        assert {"n", "tickets"} <= set(knobs[name])
        assert knobs[name]["tickets"]["default"] == "5000"
    assert knobs["innodb"]["thread_sleep_delay"]["default"] == "10000"
    assert knobs["innodb"]["adaptive_max_sleep_delay"]["default"] == "150000"
    assert knobs["fifo"]["barge_us"]["default"] == "100000"
    assert knobs["fifo"]["n"]["min"] == 1
    assert knobs["auto"]["n"]["default"] == "0" and "interval_us" in knobs["auto"]
    text = locklab("list")
    assert text.returncode == 0, text.stderr
    tagged = [line.split()[0] for line in text.stdout.splitlines() if line.endswith("[gate]")]
    assert tagged == GATES
    assert "    barge_us=100000 " in text.stdout
    only = locklab("list", "--gate")
    assert [line.split()[0] for line in only.stdout.splitlines()
            if not line.startswith(" ")] == GATES


def test_gate_by_name_with_options():
    for flag in ("--gate-opts", "--lock-opts"):
        out = locklab("list", "--gate", "fifo", flag, "n=3,barge_us=0", "--json")
        assert out.returncode == 0, out.stderr
        (gate,) = json.loads(out.stdout)
        values = {k["name"]: k["value"] for k in gate["knobs"]}
        assert gate["kind"] == "gate"
        assert values == {"n": "3", "tickets": "5000", "barge_us": "0", "handoff_pace": "16",
                          "resume_spin_us": "0"}


def test_ll_durations_stop_at_4_s():
    """ll keeps its durations in 32-bit fields: the bounds say so, and 4 s itself is taken."""
    out = locklab("list", "ll", "--json", "--lock-opts",
                  "handoff_ns=4000000000,rotation_ns=4000000000,min_turn_ns=4000000000")
    assert out.returncode == 0, out.stderr
    (algo,) = json.loads(out.stdout)
    knobs = {k["name"]: k for k in algo["knobs"]}
    for name in ("handoff_ns", "rotation_ns", "min_turn_ns"):
        assert (knobs[name]["min"], knobs[name]["max"]) == (0, 4000000000)
        assert knobs[name]["value"] == "4000000000"
        assert "<= 4 s" in knobs[name]["help"]


def test_lock_opts_are_applied():
    out = locklab("list", "innodb56", "--lock-opts", "sync_spin_loops=80,spin=tas", "--json")
    assert out.returncode == 0, out.stderr
    (algo,) = json.loads(out.stdout)
    values = {k["name"]: k["value"] for k in algo["knobs"]}
    assert values["sync_spin_loops"] == "80"
    assert values["spin"] == "tas"
    assert values["spin_wait_delay"] == "6"


@pytest.mark.parametrize(
    "args, needle",
    [
        (["list", "nosuchlock"], "unknown lock 'nosuchlock' (valid: pthread"),
        (["list", "ttas", "--lock-opts", "bogus=1"], "unknown option 'bogus'"),
        (["list", "innodb56", "--lock-opts", "sync_spin_loops=-5"], "wants an integer"),
        (["list", "innodb56", "--lock-opts", "sync_spin_loops=abc"], "wants an integer"),
        (["list", "futex", "--lock-opts", "spin=wfe"],
         "unknown value 'wfe' for option 'spin' of lock 'futex' (valid: pause, none, tas"),
        (["list", "futex", "--lock-opts", "spin_ns"], "expected KEY=VALUE"),
        (["list", "ll", "--lock-opts", "handoff_ns=4000000001"],
         "option 'handoff_ns' of lock 'll' wants an integer in [0, 4000000000], "
         "got '4000000001'"),
        (["list", "ll", "--lock-opts", "rotation_ns=4294967296"],
         "option 'rotation_ns' of lock 'll' wants an integer in [0, 4000000000]"),
        (["list", "ll", "--lock-opts", "min_turn_ns=10000000000"],
         "option 'min_turn_ns' of lock 'll' wants an integer in [0, 4000000000]"),
        (["list", "--rwlock", "nope"],
         "unknown rwlock 'nope' (valid: pthread, ll, partitioned, innodb56-rw, bravo)"),
        (["list", "--rwlock", "innodb56"], "unknown rwlock 'innodb56'"),
        (["list", "--rwlock", "ll", "--lock-opts", "bias=2"],
         "option 'bias' of rwlock 'll' wants an integer in [0, 1], got '2'"),
        (["list", "--rwlock", "pthread", "--lock-opts", "prefer=writer"],
         "unknown value 'writer' for option 'prefer' of rwlock 'pthread' (valid: reader, "
         "writer-nonrecursive)"),
        (["list", "--rwlock", "--lock-opts", "n=3"], "--lock-opts needs a lock name"),
        (["list", "--gate", "nope"], "unknown gate policy 'nope' (valid: innodb, fifo, auto)"),
        (["list", "--gate", "fifo", "--gate-opts", "n=0"],
         "option 'n' of gate 'fifo' wants an integer in [1, 1048576], got '0'"),
        (["list", "--gate", "innodb", "--gate-opts", "barge_us=5"],
         "unknown option 'barge_us' for gate 'innodb'"),
        (["list", "--gate", "--rwlock"], "--rwlock and --gate exclude each other"),
        (["list", "fifo"], "unknown lock 'fifo'"),
    ],
)
def test_bad_input_is_one_line_error(args, needle):
    out = locklab(*args)
    assert out.returncode == 2
    assert out.stdout == ""
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1, out.stderr
    assert lines[0].startswith("locklab: ")
    assert needle in lines[0]
    assert "Traceback" not in out.stderr
