"""Peer locks a build left out (no Concurrency Kit or abseil found): `locklab list`
names them with the reason, and nothing tries to run them.

A stand-in locklab-bench prints the JSON a build without the peers prints
(src/bench/list.c); tests/packaging/no_peers.cmake checks that real build.
"""
import json
import stat

import pytest

from conftest import locklab

CK = "Concurrency Kit not found at build time; Debian: libck-dev, installed by `make setup`"
ABSL = "abseil left out at build time by LL_WITH_ABSL=OFF"
LISTING = [
    {"name": "pthread", "built": True, "summary": "glibc's default mutex", "parks": True,
     "fifo": False, "knobs": []},
    {"name": "ticket", "built": True, "summary": "ticket spinlock", "parks": False,
     "fifo": True, "knobs": [{"name": "spin", "help": "spin-wait", "default": "pause",
                              "value": "pause", "choices": ["pause", "none"]}]},
    *({"name": n, "built": False, "summary": f"not built: {why}", "note": why, "knobs": []}
      for n, why in (("ck-mcs", CK), ("ck-ticket", CK), ("ck-fas", CK), ("absl", ABSL))),
]


@pytest.fixture
def native_dir(tmp_path, monkeypatch):
    """LOCKLAB_NATIVE_DIR with a locklab-bench whose `list --json` is LISTING."""
    (tmp_path / "listing.json").write_text(json.dumps(LISTING))
    bench = tmp_path / "locklab-bench"
    bench.write_text(f'#!/bin/sh\nexec cat "{tmp_path / "listing.json"}"\n')
    bench.chmod(bench.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("LOCKLAB_NATIVE_DIR", str(tmp_path))
    return tmp_path


def test_text_names_the_left_out_locks_and_why(native_dir):
    out = locklab("list")
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[-2:] == [f"not built: ck-mcs, ck-ticket, ck-fas ({CK})",
                          f"not built: absl ({ABSL})"]
    assert lines[0].startswith("pthread ")
    assert not any(line.startswith(("ck-", "absl ")) for line in lines)


def test_json_keeps_them_after_the_runnable_ones(native_dir):
    out = locklab("list", "--json")
    assert out.returncode == 0, out.stderr
    algos = json.loads(out.stdout)
    assert [a["name"] for a in algos if a["built"]] == ["pthread", "ticket"]
    assert {a["name"]: a["note"] for a in algos if not a["built"]} == {
        "ck-mcs": CK, "ck-ticket": CK, "ck-fas": CK, "absl": ABSL}


def test_all_expands_to_runnable_locks_only(native_dir):
    from locklab import native
    from locklab.sweep import bench
    assert [a["name"] for a in native.algorithms()] == ["pthread", "ticket"]
    assert bench.expand_locks(["ticket", "all"]) == ["ticket", "pthread"]
