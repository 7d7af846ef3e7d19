"""`locklab profile` names what people read: file:line for a -g program's call sites,
pprof functions apart from their offsets, a nameless futex by the function that took
it, a trace of the waits on a timeline, and an honest word when nothing contended."""
import gzip
import json
import subprocess
from pathlib import Path

import pytest

from conftest import locklab, one_line_error
from locklab.profile import lines

ROOT = Path(__file__).resolve().parents[2]
NAMES = ROOT / "tests" / "c" / "prof" / "names.c"
SOURCE = NAMES.read_text().splitlines()


def line_of(mark):
    return next(i + 1 for i, text in enumerate(SOURCE) if f"/* {mark} */" in text)


SITES = {line_of("LOCK_SITE_A"), line_of("LOCK_SITE_B")}


def file_line(text):
    """`DIR/names.c:67` -> ("names.c", 67)."""
    file, line = text.rsplit(":", 1)
    return Path(file).name, int(line)


@pytest.fixture(scope="module")
def names(tmp_path_factory):
    """names.c built -g (`names`), and the same stripped, its exported functions kept
    in .dynsym by -rdynamic (`stripped`)."""
    d = tmp_path_factory.mktemp("names")
    exe = d / "names"
    subprocess.run(["cc", "-O1", "-g", "-rdynamic", "-pthread", str(NAMES), "-o", str(exe)],
                   check=True)
    stripped = d / "stripped"
    subprocess.run(["strip", "--strip-all", str(exe), "-o", str(stripped)], check=True)
    return exe, stripped


needs_lines = pytest.mark.skipif(lines.tool_path() is None,
                                 reason="locklab-lines not built (no libdw at build time)")


@needs_lines
def test_a_g_program_report_names_file_and_line(names):
    exe, _ = names
    res = locklab("profile", "--", exe, "0.4", "4")
    assert res.returncode == 0, res.stderr
    block = res.stdout.split("\nMutex block\n\n")[1].split("\n\n")[0]
    rows = [r for r in block.splitlines() if "names`hot_lock" in r and "names`worker+0x" in r]
    sites = {file_line(r.rsplit(" at ", 1)[1]) for r in rows}
    assert sites == {("names.c", n) for n in SITES}, rows


@needs_lines
def test_json_carries_lines_and_objects(tmp_path, names):
    exe, _ = names
    out = tmp_path / "p.json"
    res = locklab("profile", "--json", "-o", out, "--", exe, "0.3", "4")
    assert res.returncode == 0, res.stderr
    doc = json.loads(out.read_text())
    assert doc["lines"] == "libdw"
    rep = doc["processes"][0]
    hot = next(l for l in rep["locks"] if l["name"] == "names`hot_lock")
    first = hot["events"][0]
    assert len(first["lines"]) == len(first["stack"]) == len(first["at"])
    assert first["lines"][0][0]["function"] == "worker"
    assert first["lines"][0][0]["line"] in SITES
    paths = {o["path"] for o in rep["objects"]}
    assert str(exe) in paths and all(len(o["build_id"]) == 40 for o in rep["objects"])


# ------------------------------------------------------------------- pprof

def fields(buf):
    """(field number, value) of one protobuf message: ints for varints, bytes else."""
    i, out = 0, []
    while i < len(buf):
        key, i = varint(buf, i)
        num, wire = key >> 3, key & 7
        if wire == 0:
            value, i = varint(buf, i)
        elif wire == 2:
            n, i = varint(buf, i)
            value, i = buf[i:i + n], i + n
        else:
            raise AssertionError(f"wire type {wire}")
        out.append((num, value))
    return out


def varint(buf, i):
    shift = value = 0
    while True:
        b = buf[i]
        i += 1
        value |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return value, i


def packed(value):
    if isinstance(value, int):
        return [value]
    out, i = [], 0
    while i < len(value):
        v, i = varint(value, i)
        out.append(v)
    return out


def parse_pprof(data):
    """Strings, functions {id: (name, file)}, locations {id: (address, mapping, [(fid,
    line)])}, mappings {id: filename}, samples [(location ids, values, {label: value})]."""
    msg = fields(gzip.decompress(data))
    strings = [v.decode() for n, v in msg if n == 6]
    functions, locations, mappings, samples = {}, {}, {}, []
    for n, v in msg:
        f = fields(v) if n in (2, 3, 4, 5) else []
        if n == 5:
            d = dict(f)
            functions[d[1]] = (strings[d.get(2, 0)], strings[d.get(4, 0)])
        elif n == 4:
            d = dict(f)
            lns = [(dict(fields(x)).get(1), dict(fields(x)).get(2, 0)) for k, x in f if k == 4]
            locations[d[1]] = (d.get(3, 0), d.get(2, 0), lns)
        elif n == 3:
            d = dict(f)
            mappings[d[1]] = strings[d.get(5, 0)]
        elif n == 2:
            locs = [x for k, v2 in f if k == 1 for x in packed(v2)]
            vals = [x for k, v2 in f if k == 2 for x in packed(v2)]
            labels = {strings[dict(fields(v2))[1]]: strings[dict(fields(v2))[2]]
                      for k, v2 in f if k == 3}
            samples.append((locs, vals, labels))
    return strings, functions, locations, mappings, samples


def test_pprof_groups_a_functions_call_sites_into_one_function(tmp_path, names):
    exe, _ = names
    res = locklab("profile", "--pprof", "-o", tmp_path / "p.pb.gz", "--", exe, "0.4", "4")
    assert res.returncode == 0, res.stderr
    _, functions, locations, mappings, samples = parse_pprof(
        (tmp_path / "p.pb.gz").read_bytes())
    hot = [s for s in samples if s[2]["lock"] == "names`hot_lock"]
    leaves = {s[0][0] for s in hot}
    # Two call sites: two locations (addresses), one function.
    assert len({locations[l][0] for l in leaves}) == 2
    leaf_functions = {functions[fid][0] for l in leaves for fid, _ in locations[l][2][-1:]}
    assert leaf_functions == {"names`worker"}
    # Every location lies in a mapping, the program's own for the leaves.
    assert all(locations[l][1] for l in leaves)
    assert {mappings[locations[l][1]] for l in leaves} == {str(exe)}
    if lines.tool_path() is not None:
        got = {(Path(functions[fid][1]).name, ln) for l in leaves
               for fid, ln in locations[l][2]}
        assert got == {("names.c", n) for n in SITES}


def test_folded_stacks_are_by_function(tmp_path, names):
    exe, _ = names
    res = locklab("profile", "--folded", "--", exe, "0.3", "4")
    assert res.returncode == 0, res.stderr
    hot = [l for l in res.stdout.splitlines() if l.startswith("names`hot_lock;")]
    assert len(hot) == 1 and hot[0].rsplit(" ", 1)[0].endswith(";names`worker"), hot
    if lines.tool_path() is not None:
        res = locklab("profile", "--folded", "--lines", "--", exe, "0.3", "4")
        hot = [l for l in res.stdout.splitlines() if l.startswith("names`hot_lock;")]
        leaves = [l.rsplit(" ", 1)[0].rsplit(";", 1)[1].split(" ", 1) for l in hot]
        assert {fn for fn, _ in leaves} == {"names`worker"}
        assert {file_line(where) for _, where in leaves} == {("names.c", n) for n in SITES}
    assert "--lines is for --folded" in one_line_error(locklab("profile", "--lines", "--", exe))


# ---------------------------------------------------------- nameless futex

def test_a_nameless_futex_is_named_by_the_function_that_took_it(tmp_path, names):
    _, stripped = names
    out = tmp_path / "p.json"
    res = locklab("profile", "--json", "-o", out, "--", stripped, "0.4", "4")
    assert res.returncode == 0, res.stderr
    rep = json.loads(out.read_text())["processes"][0]
    futexes = [l for l in rep["locks"] if l["kind"] == "futex"]
    assert len(futexes) == 1 and futexes[0]["where"] == "heap"
    fx = futexes[0]
    assert fx["name"].startswith("futex in stripped`take_word+0x"), fx["name"]
    # Its own site has no name: the JSON keeps it, as the frame it is.
    assert fx["site"].startswith("stripped`+0x")
    assert fx["events"][0]["stack"][0] == fx["site"]


# ------------------------------------------------------------------ trace

def test_trace_has_each_threads_waits_as_slices_named_by_lock(tmp_path, names):
    exe, _ = names
    trace = tmp_path / "t.json"
    res = locklab("profile", "--trace", trace, "--", exe, "0.4", "3")
    assert res.returncode == 0, res.stderr
    doc = json.loads(trace.read_text())
    slices = [e for e in doc["traceEvents"] if e["ph"] == "X"]
    named = {e["tid"]: e["args"]["name"] for e in doc["traceEvents"]
             if e["ph"] == "M" and e["name"] == "thread_name"}
    locks = {e["name"] for e in slices}
    assert "names`hot_lock" in locks and any(n.startswith("names`futex_sleep+0x") for n in locks)
    tids = {e["tid"] for e in slices if e["name"] == "names`hot_lock"}
    assert len(tids) >= 2 and tids <= set(named)
    for tid in tids:
        mine = [e["ts"] for e in slices if e["tid"] == tid]
        assert mine == sorted(mine) and all(e["dur"] > 0 for e in slices if e["tid"] == tid)
    assert doc["otherData"]["dropped"] == 0 and doc["otherData"]["waits"] == len(slices)
    # The report counts the same waits.
    assert "dropped" not in res.stderr


def test_trace_rings_are_bounded_and_say_what_they_dropped(tmp_path, names):
    exe, _ = names
    trace = tmp_path / "t.json"
    res = locklab("profile", "--trace", trace, "--trace-events", "5", "--", exe, "0.4", "3")
    assert res.returncode == 0, res.stderr
    doc = json.loads(trace.read_text())
    slices = [e for e in doc["traceEvents"] if e["ph"] == "X"]
    per_thread = {}
    for e in slices:
        per_thread[e["tid"]] = per_thread.get(e["tid"], 0) + 1
    assert per_thread and max(per_thread.values()) <= 5
    dropped = doc["otherData"]["dropped"]
    assert dropped > 0 and f"{dropped} older waits dropped" in res.stderr
    err = one_line_error(locklab("profile", "--trace-events", "5", "--", exe))
    assert "--trace-events is for --trace" in err
    err = one_line_error(locklab("profile", "--trace", tmp_path / "no" / "t.json", "--", exe))
    assert "no such directory" in err


# ---------------------------------------------------------- no contention

@pytest.mark.parametrize("fmt", [[], ["--folded"], ["--json"]])
def test_no_contention_is_said_and_the_status_kept(tmp_path, fmt):
    res = locklab("profile", *fmt, "--", "sh", "-c", "exit 7")
    assert res.returncode == 7, res.stderr
    assert "left no report" not in res.stderr and "no report" not in res.stderr
    said = [l for l in res.stderr.splitlines() if l.startswith("locklab: no lock contention")]
    assert len(said) == 1 and "status 7" in said[0], res.stderr
