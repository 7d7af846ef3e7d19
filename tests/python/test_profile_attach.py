"""`locklab profile -p PID`: attached to a running program with a planted hot lock
(tests/c/attach/planted.c) in every output format; a trace ended by Ctrl-C, SIGTERM
or the program's exit, with its report; the options -p refuses; and a build or a
machine that cannot attach, said in one line.

The traces need what locklab-attach needs (root, BPF, BTF): where its `--check`
says it cannot trace here, they skip saying why.  The rest use stand-in tracers.
"""
import gzip
import json
import os
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import locklab, one_line_error
from locklab import native
from locklab.profile import attach

ROOT = Path(__file__).resolve().parents[2]
PLANTED = ROOT / "tests" / "c" / "attach" / "planted.c"
HOT = "attach_planted`hot_lock"


def cannot_trace() -> str | None:
    known = attach.readiness()
    if known is None:
        return f"no {attach.TOOL} in {native.native_dir()}"
    if not known.built:
        return f"{attach.TOOL} not built: {known.note}"
    if not known.ready:
        return f"{attach.TOOL} cannot trace here: {known.problem}"
    return None


needs_tracer = pytest.mark.skipif(cannot_trace() is not None, reason=str(cannot_trace()))


@pytest.fixture(scope="module")
def planted_exe(tmp_path_factory):
    """The planted program, built with symbols and debug lines, named attach_planted."""
    exe = tmp_path_factory.mktemp("attach") / "attach_planted"
    subprocess.run(["cc", "-O2", "-g", "-pthread", str(PLANTED), "-o", str(exe)], check=True)
    return exe


def start_planted(exe: Path, seconds: float, counts: Path) -> subprocess.Popen:
    """The planted program running for SECONDS, once it has begun to count."""
    proc = subprocess.Popen([str(exe), str(seconds), str(counts)])
    deadline = time.monotonic() + 30
    while not (counts.exists() and counts.stat().st_size) and time.monotonic() < deadline:
        time.sleep(0.05)
    return proc


@pytest.fixture(scope="module")
def running(planted_exe, tmp_path_factory):
    """One planted program that runs through the module's traces; its pid."""
    proc = start_planted(planted_exe, 600, tmp_path_factory.mktemp("counts") / "counts.txt")
    yield proc.pid
    proc.kill()
    proc.wait()


def attached(pid, *options, timeout=180):
    """`locklab profile -p PID --duration 1 OPTIONS`, checked to have succeeded."""
    res = locklab("profile", "-p", pid, "--duration", "1", *options, timeout=timeout)
    assert res.returncode == 0, res.stderr
    assert "Traceback" not in res.stderr
    return res


@needs_tracer
def test_text_names_the_hot_lock_first_with_its_stack_and_lines(running):
    text = attached(running, "-s", "4", "--top", "2").stdout
    assert "detach report" in text and "hold times are not seen" in text
    rows = text.split("Locks, by total wait")[1].split("\n\n")[1].splitlines()
    assert rows[1].endswith(HOT)
    assert "Time Distribution" in text and "Wakers:" in text
    assert "attach_planted`worker+0x" in text and "planted.c:" in text


@needs_tracer
def test_json_is_the_profilers_document_with_wakers_and_lines(running):
    doc = json.loads(attached(running, "--json").stdout)
    assert doc["tool"] == "locklab-attach" and doc["pid"] == running
    (rep,) = doc["processes"]
    assert rep["reason"] == "detach" and rep["hold_every"] == 0
    first = rep["locks"][0]
    assert (first["name"], first["kind"], first["where"]) == (HOT, "mutex", "static")
    assert first["count"] > 0 and first["holders"], "no waker charged"
    event = first["events"][0]
    assert event["stack"][0].startswith("attach_planted`worker+0x")
    assert event["lines"][0][0]["file"].endswith("planted.c")


@needs_tracer
def test_interval_reports_stream_then_the_last(running):
    out = attached(running, "--json", "--interval", "0.3").stdout
    head, _, last = out.partition("\n{\n")
    intervals = [json.loads(line) for line in head.splitlines()]
    assert intervals and all(r["reason"] == "interval" and r["delta"] for r in intervals)
    assert json.loads("{\n" + last)["processes"][0]["reason"] == "detach"
    text = attached(running, "--interval", "0.3").stdout
    assert text.count("interval report") >= 1 and text.count("detach report") == 1


@needs_tracer
def test_folded_stacks_by_function_and_with_lines(running, tmp_path):
    attached(running, "--folded", "-o", tmp_path / "f.txt")
    parsed = [(line.rsplit(" ", 1)[0].split(";"), int(line.rsplit(" ", 1)[1]))
              for line in (tmp_path / "f.txt").read_text().splitlines()]
    top = max(parsed, key=lambda p: p[1])
    assert top[0][0] == HOT and top[0][-1] == "attach_planted`worker"
    folded = attached(running, "--folded", "--lines").stdout
    assert any(line.startswith(HOT) and "planted.c:" in line for line in folded.splitlines())


@needs_tracer
def test_pprof_and_the_perfetto_timeline(running, tmp_path):
    attached(running, "--pprof", "-o", tmp_path / "p.pb.gz", "--trace", tmp_path / "t.json")
    # The profile is formats.pprof's, which test_profile.py reads with go tool pprof.
    raw = gzip.decompress((tmp_path / "p.pb.gz").read_bytes())
    assert b"contentions" in raw and HOT.encode() in raw and b"planted.c" in raw
    trace = json.loads((tmp_path / "t.json").read_text())
    assert trace["otherData"]["tool"] == "locklab-attach"
    slices = [e for e in trace["traceEvents"] if e["ph"] == "X"]
    assert slices and trace["otherData"]["waits"] == len(slices)
    assert HOT in {e["name"] for e in slices}
    assert {e["name"] for e in slices} <= {HOT, "attach_planted`cold_lock"}


def children_of(pid: int) -> list[int]:
    path = Path(f"/proc/{pid}/task/{pid}/children")
    try:
        return [int(c) for c in path.read_text().split()]
    except OSError:
        return []


@needs_tracer
@pytest.mark.parametrize("sig, ignored", [(signal.SIGINT, False), (signal.SIGTERM, False),
                                          (signal.SIGINT, True)],
                         ids=["ctrl-c", "sigterm", "ctrl-c-in-a-background-job"])
def test_a_stop_signal_ends_the_trace_with_its_report(running, sig, ignored):
    # A shell starts a background job with SIGINT ignored: it must still end the trace.
    before = (lambda: signal.signal(signal.SIGINT, signal.SIG_IGN)) if ignored else None
    proc = subprocess.Popen([sys.executable, "-m", "locklab.cli", "profile", "-p", str(running),
                             "--json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, preexec_fn=before)
    tracer = tracer_of(proc)
    time.sleep(1)
    proc.send_signal(sig)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    assert json.loads(out)["processes"][0]["reason"] == "detach"
    assert not Path(f"/proc/{tracer}").exists(), "the tracer is still running"


def tracer_of(proc: subprocess.Popen) -> int:
    """The tracer `locklab profile -p` (PROC) started, once it has."""
    deadline = time.monotonic() + 60
    while not children_of(proc.pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    (tracer,) = children_of(proc.pid)
    return tracer


@needs_tracer
def test_the_programs_exit_ends_the_trace(planted_exe, tmp_path):
    prog = start_planted(planted_exe, 600, tmp_path / "counts.txt")
    proc = subprocess.Popen([sys.executable, "-m", "locklab.cli", "profile", "-p", str(prog.pid),
                             "--json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    tracer_of(proc)
    time.sleep(1)
    prog.kill()
    prog.wait()
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    assert json.loads(out)["processes"][0]["reason"] == "exit"


@needs_tracer
def test_the_tracers_refusal_is_one_line(tmp_path):
    gone = subprocess.Popen(["true"])
    gone.wait()
    line = one_line_error(locklab("profile", "-p", gone.pid), status=1)
    assert line == f"locklab: no process {gone.pid}"


@pytest.mark.parametrize("args, says", [
    (["-p", "1", "--", "ls"], "give no command after --"),
    (["-p", "1", "--lock", "tas"], "--lock is for a program profile starts"),
    (["-p", "1", "--lock-opts", "spin=none"], "--lock-opts is for a program profile starts"),
    (["-p", "1", "--lock-for", "x`y=tas"], "--lock-for is for a program profile starts"),
    (["-p", "1", "--hold-every", "10"], "hold times are not seen"),
    (["-p", "1", "--signal", "USR1"], "--signal is for -- CMD"),
    (["--duration", "2", "--", "true"], "--duration is for -p PID"),
    (["-p", "0"], "out of range"),
    (["-p", "1", "--lines"], "--lines is for --folded"),
])
def test_options_that_make_no_sense_attached_are_refused(args, says):
    assert says in one_line_error(locklab("profile", *args))


UNBUILT = "left out at build time by LL_WITH_BPF=OFF"
NOT_ROOT = "needs root, or the capabilities CAP_BPF and CAP_PERFMON (run it with sudo)"


def stand_in(tmp_path, monkeypatch, built: bool) -> dict:
    """LOCKLAB_NATIVE_DIR with the real locklab-bench and a stand-in locklab-attach:
    one not built (BUILT false, as LL_WITH_BPF=OFF builds it), or one on a machine where
    it may not trace (not root); the environment that selects them."""
    d = tmp_path / "native"
    d.mkdir()
    (d / "locklab-bench").symlink_to(native.bench_path().resolve())
    answer = {"tool": "locklab-attach", "version": "0", "built": built,
              "note": None if built else UNBUILT, "ready": False, "hook": None,
              "problem": NOT_ROOT if built else UNBUILT}
    said = f"not built: {UNBUILT}" if not built else NOT_ROOT
    tool = d / "locklab-attach"
    tool.write_text("#!/bin/sh\n"
                    f"if [ \"$1\" = --check ]; then echo '{json.dumps(answer)}'; exit 1; fi\n"
                    f"echo 'locklab-attach: {said}' >&2; exit 1\n")
    tool.chmod(tool.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("LOCKLAB_NATIVE_DIR", str(d))
    return dict(os.environ)


def test_an_unbuilt_tracer_is_listed_and_refused_with_why(tmp_path, monkeypatch):
    env = stand_in(tmp_path, monkeypatch, built=False)
    out = locklab("list", env=env)
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines()[-1] == f"not built: locklab-attach ({UNBUILT})"
    listed = json.loads(locklab("list", "--json", env=env).stdout)
    assert listed[-1] == {"name": "locklab-attach", "kind": "tool", "built": False,
                          "summary": f"not built: {UNBUILT}", "note": UNBUILT, "knobs": []}
    assert all(a["built"] for a in listed if a["name"] != "locklab-attach")
    help_text = " ".join(locklab("profile", "--help", env=env).stdout.split())
    assert f"-p PID: not available, locklab-attach was not built: {UNBUILT}" in help_text
    line = one_line_error(locklab("profile", "-p", os.getpid(), env=env))
    assert line == f"locklab: -p PID needs locklab-attach, which was not built: {UNBUILT}"


def test_a_machine_that_cannot_trace_is_said_in_one_line(tmp_path, monkeypatch):
    env = stand_in(tmp_path, monkeypatch, built=True)
    assert "not built" not in locklab("list", env=env).stdout
    help_text = " ".join(locklab("profile", "--help", env=env).stdout.split())
    assert f"-p PID: this machine cannot trace now: {NOT_ROOT}" in help_text
    line = one_line_error(locklab("profile", "-p", os.getpid(), "--json", env=env), status=1)
    assert line == f"locklab: {NOT_ROOT}"
