"""Helpers shared by the Python tests: running the CLI, and the fake locklab-bench."""
import html
import json
import os
import re
import sqlite3
import stat
import subprocess
import sys
from pathlib import Path

import pytest

FAKE = Path(__file__).with_name("fake_bench.py")


def locklab(*args, env=None, timeout=120):
    """Run `locklab ARGS` as the user would (the installed package or PYTHONPATH's)."""
    return subprocess.run(
        [sys.executable, "-m", "locklab.cli", *map(str, args)],
        capture_output=True, text=True, env=env, timeout=timeout,
    )


def rows(db, sql="SELECT * FROM points ORDER BY id", params=()):
    conn = sqlite3.connect(f"{Path(db).resolve().as_uri()}?mode=ro", uri=True)
    try:
        conn.row_factory = sqlite3.Row
        return [dict(r) for r in conn.execute(sql, params)]
    finally:
        conn.close()


def stored(db):
    """How many points a sweep running on DB has committed so far."""
    try:
        return len(rows(db))
    except sqlite3.OperationalError:  # no file, or no table yet
        return 0


def skip_unless_built(*libraries):
    """Skip the test where a library to preload was not built (a sanitized build)."""
    from locklab import native
    for lib in libraries:
        if not (native.native_dir() / lib).is_file():
            pytest.skip(f"{lib} not built (sanitized build)")


def built_program(tmp_path_factory, source: Path) -> Path:
    """SOURCE built with symbols into a scratch directory, named as its file is (the
    object name the profiler gives its locks)."""
    exe = tmp_path_factory.mktemp(source.stem) / source.stem
    subprocess.run(["cc", "-O2", "-g", "-pthread", str(source), "-o", str(exe)], check=True)
    return exe


def one_line_error(out, status=2):
    """Assert OUT failed with a single `locklab: ...` line on stderr; that line."""
    assert out.returncode == status, (out.returncode, out.stderr)
    assert "Traceback" not in out.stderr
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1, out.stderr
    assert lines[0].startswith("locklab: ")
    return lines[0]


def target_cell(index, where, target, at):
    """The (class, met/MISSED) cell of a report's row on TARGET at WHERE and AT (threads
    or clients)."""
    head = f"<tr><td>{html.escape(where)}</td><td>{html.escape(target)}</td><td>{at}</td>"
    row = re.search(re.escape(head) + ".*?</tr>", index)
    assert row, (where, target, at)
    return re.findall(r'<td class="(\w+)">(met|MISSED)</td>', row.group(0))[0]


class Fake:
    """The fake locklab-bench in a directory of its own, and the env that selects it."""

    def __init__(self, root: Path):
        self.dir = root / "native"
        self.dir.mkdir()
        wrapper = self.dir / "locklab-bench"
        wrapper.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{FAKE}" "$@"\n')
        wrapper.chmod(wrapper.stat().st_mode | stat.S_IXUSR)
        self.log = root / "bench.log"
        self.plan = {"log": str(self.log)}

    def env(self, **plan):
        return {**os.environ, "LOCKLAB_NATIVE_DIR": str(self.dir),
                "FAKE_BENCH": json.dumps({**self.plan, **plan})}

    def launched(self):
        """The points `bench` was started on, in order."""
        if not self.log.exists():
            return []
        return [json.loads(line) for line in self.log.read_text().splitlines()]


@pytest.fixture
def fake(tmp_path):
    return Fake(tmp_path)

