"""memcached under memcaslap, profiled to completion (CI runs this: scripts/setup-apt.sh
installs memcached and libmemcached-tools).  Everything listens on 127.0.0.1, every
run is bounded, and the server is stopped whatever happens."""
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time

import pytest

MEMCACHED = shutil.which("memcached")
LOAD = shutil.which("memcaslap") or shutil.which("memaslap")

pytestmark = pytest.mark.skipif(not MEMCACHED or not LOAD,
                                reason="memcached and memcaslap not installed "
                                "(make setup installs them)")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_listening(port, proc, seconds=20):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        assert proc.poll() is None, "the server exited before listening"
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.1)
    raise AssertionError(f"nothing listening on 127.0.0.1:{port} after {seconds} s")


def test_memcached_under_memcaslap(tmp_path):
    port = free_port()
    out = tmp_path / "memcached.json"
    server = [MEMCACHED, "-U", "0", "-l", "127.0.0.1", "-p", str(port), "-t", "4", "-m", "64"]
    if os.geteuid() == 0:
        server += ["-u", "root"]
    cli = subprocess.Popen([sys.executable, "-m", "locklab.cli", "profile", "--json", "-o",
                            str(out), "--", *server], stderr=subprocess.PIPE, text=True)
    try:
        wait_listening(port, cli)
        load = subprocess.run([LOAD, "-s", f"127.0.0.1:{port}", "-t", "3s", "-T", "2", "-c", "32"],
                              capture_output=True, text=True, timeout=60)
        assert load.returncode == 0, load.stdout + load.stderr
        assert "TPS:" in load.stdout, load.stdout
        tps = int(load.stdout.split("TPS:")[1].split()[0])
        assert tps > 1000
        cli.send_signal(signal.SIGTERM)   # forwarded to memcached, which exits and reports
        _, err = cli.communicate(timeout=60)
    finally:
        if cli.poll() is None:
            cli.kill()
            cli.wait()
    doc = json.loads(out.read_text())
    procs = [p for p in doc["processes"] if p["exe"].endswith("memcached")]
    assert len(procs) == 1, err
    rep = procs[0]
    assert rep["reason"] == "exit"
    contended = [lk for lk in rep["locks"] if lk["count"] > 0]
    assert contended, "memcached under load showed no contention"
    hot = contended[0]
    # Debian's memcached is stripped: a static lock is named by its link-time address,
    # the same in every run; every wait has a caller inside memcached or its libraries.
    assert hot["name"].startswith("memcached`"), hot["name"]
    assert all(ev["stack"] for ev in hot["events"])
    assert rep["threads"], "no per-thread breakdown"
