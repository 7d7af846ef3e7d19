"""`locklab run --lock-for SITE=NAME`: only the mutexes the profiler names SITE swapped,
the rest glibc's (or --lock's); and `locklab profile --lock`: a swapped program profiled.

The program (tests/c/swap/sites.c) has a hot static mutex, a static array of cold ones,
and two pthread_mutex_init sites on the heap (16 normal mutexes, 3 recursive ones):
24 mutexes, each guarding counters it prints, so a lock that fails to exclude shows."""
import json
import os
import subprocess
from pathlib import Path

import pytest

from conftest import built_program, locklab, one_line_error, skip_unless_built
from locklab import native

ROOT = Path(__file__).resolve().parents[2]
SITES = ROOT / "tests" / "c" / "swap" / "sites.c"
NCOLD, NPOOL, NSPARE = 4, 16, 3
ALL = 1 + NCOLD + NPOOL + NSPARE


@pytest.fixture(autouse=True)
def _built():
    skip_unless_built("liblocklab-swap.so", "liblocklab-prof.so")


@pytest.fixture(scope="module")
def sites(tmp_path_factory):
    return built_program(tmp_path_factory, SITES)


@pytest.fixture(scope="module")
def names(sites, tmp_path_factory):
    """The profiler's names of the program's locks: {name: lock entry}, first the hottest."""
    out = tmp_path_factory.mktemp("profile") / "p.json"
    res = locklab("profile", "--json", "-o", out, "--", sites, "4", "3000", "20000")
    assert res.returncode == 0, res.stderr
    doc = json.loads(out.read_text())
    assert doc["processes"][0]["swap"] is None   # nothing swapped: glibc's locks
    return {lk["name"]: lk for lk in doc["processes"][0]["locks"]}


def heap_site(names, function):
    """The name of the heap locks FUNCTION made: its pthread_mutex_init call site."""
    found = [n for n, lk in names.items()
             if lk["where"] == "heap" and n.startswith(f"sites`{function}+0x")]
    assert len(found) == 1, names.keys()
    return found[0]


def counts_right(stdout):
    got = json.loads(stdout)
    for key in ("hot", "cold", "pool", "spare"):
        assert got[key] == got["expected"], got
    assert got["handoffs"] == got["expected_handoffs"], got


def run_stats(tmp_path, sites, *opts, args=("4", "2000")):
    stats = tmp_path / "stats.jsonl"
    res = locklab("run", *opts, "--stats-json", stats, "--", sites, *args)
    assert res.returncode == 0, res.stderr
    counts_right(res.stdout)
    lines = stats.read_text().splitlines()
    assert len(lines) == 1
    return json.loads(lines[0]), res


def test_the_profiles_first_lock_alone_is_swapped(tmp_path, sites, names):
    first = next(iter(names))
    assert first == "sites`hot_lock" and names[first]["count"] > 0
    st, res = run_stats(tmp_path, sites, "--lock-for", f"{first}=tas")
    assert st["lock"] is None   # the rest stays glibc's
    assert st["lock_for"] == [{"site": first, "lock": "tas", "lock_opts": "", "matched": 1}]
    assert st["mutexes"] == 1   # one slot: the hot lock's
    assert st["not_chosen"] == ALL - 1
    assert st["acquisitions"] >= 4 * 2000
    assert "matched no mutex" not in res.stderr


def test_a_heap_site_swaps_every_mutex_it_made(tmp_path, sites, names):
    pool = heap_site(names, "make_pool")
    st, _ = run_stats(tmp_path, sites, "--lock-for", f"{pool}=ttas:spin=yield")
    assert st["lock_for"] == [{"site": pool, "lock": "ttas", "lock_opts": "spin=yield",
                               "matched": NPOOL}]
    assert st["mutexes"] == NPOOL
    assert st["not_chosen"] == ALL - NPOOL


def test_sites_get_their_own_locks_and_lock_serves_the_rest(tmp_path, sites, names):
    spare = heap_site(names, "make_spare")   # recursive mutexes
    cold = "sites`cold_locks+0x28"     # the second of a static array
    assert cold in names
    st, _ = run_stats(tmp_path, sites, "--lock", "futex", "--lock-for", f"{cold}=mcs:spin=yield",
                      "--lock-for", f"{spare}=ticket")
    assert st["lock"] == "futex"
    assert [(s["site"], s["lock"], s["matched"]) for s in st["lock_for"]] == \
        [(cold, "mcs", 1), (spare, "ticket", NSPARE)]
    assert st["mutexes"] == ALL and st["not_chosen"] == 0


def test_a_site_that_matches_nothing_is_reported(tmp_path, sites):
    st, res = run_stats(tmp_path, sites, "--lock-for", "sites`no_such_lock=tas")
    assert st["lock_for"][0]["matched"] == 0 and st["mutexes"] == 0
    assert st["not_chosen"] == ALL
    lines = [ln for ln in res.stderr.splitlines() if "matched no mutex" in ln]
    assert lines == ["locklab: run: --lock-for site 'sites`no_such_lock' matched no mutex in "
                     "its process (a site is a lock's name as `locklab profile` prints it)"]


# Sites the swapper refuses as it loads, and why: the CLI refuses them before the
# program starts, in the same words.
SWAPPER_REFUSES = [
    (["a`" + "s" * 511 + "=tas"], "the site is longer than 511 bytes"),
    ([f"a`s{i}=tas" for i in range(65)], "more than 64 sites"),
    (["a`b=tas:" + "spin=yield," * 23 + "spin=yield"], "options longer than 255 bytes"),
    (["a`b=absl"], "unknown lock 'absl'"),   # the bench's peer lock: not liblocklab's
    (["a`b=tas", "a`b=ttas"], "the site is given twice"),
]


@pytest.mark.parametrize("entries, why", SWAPPER_REFUSES)
def test_the_sites_check_is_the_swappers(entries, why):
    """What the CLI refuses of the sites, the swapper refuses too when it loads."""
    env = {**os.environ, "LD_PRELOAD": str(native.native_dir() / "liblocklab-swap.so"),
           "LOCKLAB_SWAP_LOCK_FOR": ";".join(entries), "LOCKLAB_SWAP_CHECK": "1"}
    res = subprocess.run(["true"], env=env, capture_output=True, text=True, timeout=60)
    assert res.returncode == 2 and why in res.stderr, res.stderr


@pytest.mark.parametrize("opts, why", [
    (["--lock-for", "=tas"], "the site is empty"),
    (["--lock-for", "sites`hot_lock"], "not SITE=LOCK"),
    (["--lock-for", "sites`hot_lock=nope"], "unknown lock 'nope'"),
    (["--lock-for", "sites`hot_lock=tas:spin=bogus"], "unknown value 'bogus'"),
    (["--lock-for", "a`b=tas", "--lock-for", "a`b=ttas"], "given twice"),
    (["--lock-for", "a`b;c=tas"], "';' cannot be"),
    (["--lock-opts", "spin=yield", "--lock-for", "a`b=tas"], "give --lock too"),
    ([], "which locks?"),
    *(([f for e in entries for f in ("--lock-for", e)], why) for entries, why in SWAPPER_REFUSES),
])
@pytest.mark.parametrize("verb", ["run", "profile"])
def test_refusals_are_one_line_before_running(tmp_path, verb, opts, why):
    if verb == "profile" and not opts:
        return   # profile without a lock profiles glibc's locks: nothing to refuse
    marker = tmp_path / "ran"
    line = one_line_error(locklab(verb, *opts, "--", "touch", marker))
    assert why in line, line
    assert not marker.exists()


def test_profile_with_a_swapped_lock(tmp_path, sites):
    out = tmp_path / "p.json"
    res = locklab("profile", "--json", "-o", out, "--lock", "ttas", "--", sites, "4", "3000",
                  "20000")
    assert res.returncode == 0, res.stderr
    counts_right(res.stdout)
    rep = json.loads(out.read_text())["processes"][0]
    assert rep["swap"] == {"lock": "ttas", "lock_opts": "", "lock_for": []}
    hot = rep["locks"][0]
    assert hot["name"] == "sites`hot_lock" and hot["count"] > 0
    # Waits are timed through the swapped lock, and charged to its holders' stacks (the
    # swapped lock leaves glibc's word 0: the profiler marks it to see the waiters).
    assert sum(e["count"] for e in hot["events"] if e["event"] == "mutex") > 0
    assert sum(h["blame_ns"] for h in hot["holders"] if h["count"]) > 0
    text = locklab("profile", "--lock", "ttas", "--lock-opts", "spin=yield", "--", sites, "2",
                   "200", "0")
    assert text.returncode == 0, text.stderr
    assert "mutexes served by liblocklab-swap: ttas (spin=yield)\n" in text.stdout


def test_profile_behind_the_profiler_still_names_heap_sites(tmp_path, sites, names):
    """The swapper is called by the profiler there: the profiler hands it the program's
    call site, so a heap site matches as it does without the profiler."""
    pool = heap_site(names, "make_pool")
    out = tmp_path / "p.json"
    res = locklab("profile", "--json", "-o", out, "--lock-for", f"{pool}=tas",
                  "--lock-for", "sites`no_such_lock=tas", "--", sites, "4", "2000")
    assert res.returncode == 0, res.stderr
    counts_right(res.stdout)
    warned = [ln for ln in res.stderr.splitlines() if "matched no mutex" in ln]
    assert len(warned) == 1 and "no_such_lock" in warned[0], res.stderr
    rep = json.loads(out.read_text())["processes"][0]
    assert rep["swap"]["lock"] is None
    assert [s["site"] for s in rep["swap"]["lock_for"]] == [pool, "sites`no_such_lock"]


# A C++ program: the profiler prints demangled names, the library sees mangled ones.
CPP = r"""
#include <pthread.h>
#include <cstdio>
#include <cstdlib>
namespace cfg { pthread_mutex_t big = PTHREAD_MUTEX_INITIALIZER; long total; }
namespace pool {
struct Guarded { pthread_mutex_t m; long n; };
__attribute__((noinline)) Guarded *make(int n) {
    Guarded *g = new Guarded[n]();   // libstdc++ loaded: the profiler demangles
    for (int i = 0; i < n; i++) pthread_mutex_init(&g[i].m, nullptr);
    return g;
}
}
static pool::Guarded *guarded;
static void *worker(void *arg) {
    long id = (long)arg;
    for (int i = 0; i < 20000; i++) {
        pthread_mutex_lock(&cfg::big); cfg::total++; pthread_mutex_unlock(&cfg::big);
        pool::Guarded *g = &guarded[(id + i) % 8];
        pthread_mutex_lock(&g->m); g->n++; pthread_mutex_unlock(&g->m);
    }
    return nullptr;
}
int main() {
    guarded = pool::make(8);
    pthread_t t[4];
    for (long i = 0; i < 4; i++) pthread_create(&t[i], nullptr, worker, (void *)i);
    for (long i = 0; i < 4; i++) pthread_join(t[i], nullptr);
    long n = 0;
    for (int i = 0; i < 8; i++) n += guarded[i].n;
    printf("%ld %ld\n", cfg::total, n);
    return cfg::total == 80000 && n == 80000 ? 0 : 1;
}
"""


def test_a_cpp_programs_sites_match_as_the_profiler_prints_them(tmp_path):
    src, exe = tmp_path / "cppsites.cpp", tmp_path / "cppsites"
    src.write_text(CPP)
    subprocess.run(["g++", "-O2", "-g", "-pthread", str(src), "-o", str(exe)], check=True)
    out = tmp_path / "p.json"
    res = locklab("profile", "--json", "-o", out, "--", exe)
    assert res.returncode == 0, res.stderr
    names = [lk["name"] for lk in json.loads(out.read_text())["processes"][0]["locks"]]
    assert "cppsites`cfg::big" in names, names
    (heap,) = [n for n in names if n.startswith("cppsites`pool::make+0x")]
    stats = tmp_path / "stats.jsonl"
    res = locklab("run", "--lock-for", "cppsites`cfg::big=tas", "--lock-for", f"{heap}=ttas",
                  "--stats-json", stats, "--", exe)
    assert res.returncode == 0 and res.stdout == "80000 80000\n", (res.stdout, res.stderr)
    assert "matched no mutex" not in res.stderr
    st = json.loads(stats.read_text())
    assert st["mutexes"] == 1 + 8, st
    # The library got the mangled names besides the ones given; each counts its own.
    matched = {s["site"]: s["matched"] for s in st["lock_for"]}
    assert matched["cppsites`_ZN3cfg3bigE"] == 1 and matched["cppsites`cfg::big"] == 0
    assert sum(n for s, n in matched.items() if s.startswith("cppsites`_ZN4pool4make")) == 8


PLANTED = ROOT / "tests" / "c" / "prof" / "planted.c"


def test_an_rwlock_alone_is_swapped_by_its_profile_name(tmp_path, tmp_path_factory):
    """--rwlock-for: the rwlock the profiler names gets the rwlock given, every other
    rwlock and every mutex stays glibc's; a site no rwlock has is said after the run."""
    exe = built_program(tmp_path_factory, PLANTED)
    out = tmp_path / "p.json"
    res = locklab("profile", "--json", "-o", out, "--", exe, "0.3", "2")
    assert res.returncode == 0, res.stderr
    rwlocks = [lk["name"] for lk in json.loads(out.read_text())["processes"][0]["locks"]
               if lk["kind"] == "rwlock"]
    assert rwlocks == ["planted`table_rw"], rwlocks
    stats = tmp_path / "stats.jsonl"
    res = locklab("run", "--rwlock-for", "planted`table_rw=bravo", "--rwlock-for",
                  "planted`no_such_rwlock=ll", "--stats-json", stats, "--", exe, "0.3", "2")
    assert res.returncode == 0, res.stderr
    st = json.loads(stats.read_text())
    assert st["lock"] is None and st["mutexes"] == 0   # the mutexes: glibc's
    assert st["rwlock_for"] == [
        {"site": "planted`table_rw", "lock": "bravo", "lock_opts": "", "matched": 1},
        {"site": "planted`no_such_rwlock", "lock": "ll", "lock_opts": "", "matched": 0}]
    assert st["rwlocks"]["lock"] is None and st["rwlocks"]["swapped"] == 1
    warned = [ln for ln in res.stderr.splitlines() if "matched no" in ln]
    assert warned == ["locklab: run: --rwlock-for site 'planted`no_such_rwlock' matched no "
                      "rwlock in its process (a site is a lock's name as `locklab profile` "
                      "prints it)"]
    line = one_line_error(locklab("run", "--rwlock-for", "planted`table_rw=ticket", "--", exe))
    assert "rwlock-for 'planted`table_rw=ticket': unknown rwlock 'ticket'" in line
