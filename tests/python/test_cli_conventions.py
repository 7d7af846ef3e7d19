"""The `locklab` command as a user's first hour meets it: usage, every --help, dry runs,
presets' locks, closed pipes, the progress display, and the README's own commands."""
import os
import pty
import re
import select
import shlex
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import locklab, one_line_error, rows
from locklab import machine
from locklab.cli import passthrough, sweep as sweep_command
from locklab.cli.main import build_parser
from locklab.sweep import bench, compare, presets, programs, store

ROOT = Path(__file__).resolve().parents[2]
GRID = ["--locks", "innodb56,pthread", "--threads", "1,2", "--hold-ns", "0,1000",
        "--duration", "0.01", "--warmup", "0"]


def subcommands() -> dict:
    """The parser's subcommands, name -> parser."""
    parser = build_parser()
    (action,) = [a for a in parser._actions if a.dest == "command"]
    return action.choices


def test_bare_locklab_prints_usage_and_every_command():
    out = locklab()
    assert out.returncode == 2 and out.stdout == ""
    assert out.stderr.startswith("usage: locklab ")
    for name in subcommands():
        assert re.search(rf"^    {re.escape(name)}\s+\S", out.stderr, re.M), name
    assert "locklab COMMAND --help" in out.stderr


@pytest.mark.parametrize("name", sorted(set(subcommands()) - set(passthrough.PASSTHROUGH)))
def test_every_python_subcommand_describes_its_options(name):
    out = locklab(name, "--help")
    assert out.returncode == 0 and out.stderr == "", out.stderr
    assert out.stdout.startswith(f"usage: locklab {name} ")
    parser = subcommands()[name]
    for action in parser._actions:
        if action.help == "==SUPPRESS==":
            continue
        # Every option and argument has words of its own, and --help shows them.
        assert action.help, (name, action.option_strings or action.dest)
        shown = (action.option_strings[-1] if action.option_strings
                 else action.metavar or action.dest)
        assert shown in out.stdout, (name, shown)


def c_options(*files: str) -> set[str]:
    """The long options a getopt_long table in FILES (under src/bench/) names."""
    text = "".join((ROOT / "src" / "bench" / f).read_text() for f in files)
    return set(re.findall(r'\{ "([a-z-]+)", (?:required|no)_argument', text))


@pytest.mark.parametrize("argv, files", [
    (["bench", "--help"], ("bench.c", "options.h")),
    (["bench", "-h"], ("bench.c", "options.h")),
    (["bench", "--workload", "rw", "--help"], ("rw.c", "options.h")),
    (["bench", "--workload", "server", "--help"], ("server.c",)),
    (["moncost", "--help"], ("moncost.c",)),
    (["floor", "--help"], ()),
])
def test_the_c_tools_commands_describe_every_option(argv, files):
    """bench, floor and moncost are locklab-bench's: its own --help describes each option
    its getopt table takes, one line each ('  --name ... words')."""
    out = locklab(*argv)
    assert out.returncode == 0 and out.stderr == "", out.stderr
    assert out.stdout.startswith(f"usage: locklab-bench {argv[0]} ")
    described = dict(re.findall(r"^  (--[a-z-]+)(?: \S+)?\s+(\S.*)$", out.stdout, re.M))
    wanted = {f"--{o}" for o in c_options(*files)} | {"--json", "--help"}
    assert wanted <= set(described), wanted - set(described)


def test_dry_run_prints_the_grid_and_stores_nothing(fake, tmp_path):
    db = tmp_path / "l.db"
    out = locklab("sweep", "--locks", "innodb56,pthread", "--threads", "1,2", "--hold-ns",
                  "0,1000", "--repeat", "2", "--duration", "0.5", "--warmup", "0.1",
                  "--dry-run", "--db", db, env=fake.env())
    assert out.returncode == 0, out.stderr
    assert not db.exists() and fake.launched() == []
    lines = dict(line.split(None, 1) if not line.startswith(("each", "hold", "lock ", "outside"))
                 else (line[:14].strip(), line[14:]) for line in out.stdout.splitlines())
    assert lines["locks"] == "innodb56, pthread" and lines["threads"] == "1, 2"
    assert lines["hold ns"] == "0, 1000"
    assert lines["each point"] == "0.5 s after 0.1 s of warm-up, 2 passes"
    # 2 locks x 2 threads x 2 holds x 2 passes, each 0.5 + 0.1 + the process's start.
    assert lines["points"].startswith("16 points, about 0:12 ")
    assert 16 * (0.5 + 0.1 + bench.POINT_START_S) == pytest.approx(12)


@pytest.mark.parametrize("preset, points", [
    ("quick", 5 * 7 * 3 * 3),             # locks x threads x holds x 3 passes
    ("concurrency-quick", (72 + 12) * 3),  # its grid and its I/O sub-grid, 3 passes
    ("rw", 6 * 7 * 5 * 2 * 3),            # rwlocks x threads x read fractions x holds x 3
    # its grid, its I/O sub-grid and the settled sub-grid (a warm-up of its own), 3 passes
    ("concurrency", (704 + 32 + 4) * 3),
])
def test_dry_run_counts_what_the_sweep_would_run(tmp_path, preset, points):
    """With the real locklab-bench, which checks the presets' locks and gates."""
    out = locklab("sweep", "--preset", preset, "--dry-run", "--db", tmp_path / "l.db")
    assert out.returncode == 0, out.stderr
    assert re.search(rf"^points\s+{points} points, about \d", out.stdout, re.M), out.stdout
    assert not (tmp_path / "l.db").exists()
    if preset == "concurrency":
        assert re.search(r"^then .*threads 1024; .*; warm-up s \d+$", out.stdout, re.M), out.stdout


def test_dry_run_of_a_resume_counts_what_is_left(fake, tmp_path):
    db = tmp_path / "l.db"
    assert locklab("sweep", *GRID, "--db", db, env=fake.env()).returncode == 0
    conn = store.connect(db)
    conn.execute("DELETE FROM points WHERE threads = 2")
    conn.close()
    before = (db.read_bytes(), len(fake.launched()))
    out = locklab("sweep", "--resume", "latest", "--dry-run", "--db", db, env=fake.env())
    assert out.returncode == 0, out.stderr
    assert re.search(r"^points\s+4 of 8 points left, about 0:0\d \(\d\.\d\d s a point, as "
                     r"measured so far\)$", out.stdout, re.M), out.stdout
    assert (db.read_bytes(), len(fake.launched())) == before


@pytest.mark.parametrize("preset", sorted(presets.PRESETS))
def test_every_preset_takes_locks_the_same_way(preset):
    own = presets.spec(preset, {})["locks"]
    assert presets.spec(preset, {"locks": ["tas"]})["locks"] == ["tas"]
    assert presets.spec(preset, {"add_locks": ["tas", own[0]]})["locks"] == [*own, "tas"]


def test_locks_and_add_locks_together_are_refused(fake, tmp_path):
    db = tmp_path / "l.db"
    out = locklab("sweep", "--preset", "quick", "--locks", "ttas", "--add-locks", "futex",
                  "--db", db, env=fake.env())
    assert "give one of them" in one_line_error(out)
    assert not db.exists()
    out = locklab("sweep", "--preset", "innodb-mutex", "--add-locks", "futex", "--dry-run",
                  "--db", db, env=fake.env())
    assert out.returncode == 0, out.stderr
    assert re.search(r"^locks\s+innodb56, pthread, pthread-adaptive, futex$", out.stdout, re.M)
    assert "drop --add-locks" in one_line_error(
        locklab("sweep", "--resume", "1", "--add-locks", "futex", "--db", db, env=fake.env()))


@pytest.mark.parametrize("args", [
    ["list", "--json"], ["list"], ["--help"], ["sweep", "--help"], ["bench", "--help"],
    ["sweep", *GRID, "--dry-run"],
])
def test_a_closed_pipe_ends_quietly(fake, args):
    """`locklab ... | head -1`: no traceback, no 'Broken pipe', a SIGPIPE death's status
    or success (argparse's --help drops what a closed pipe cannot take)."""
    read, write = os.pipe()
    os.close(read)
    try:
        out = subprocess.run([sys.executable, "-m", "locklab.cli", *args], stdout=write,
                             stderr=subprocess.PIPE, text=True, env=fake.env(), timeout=60)
    finally:
        os.close(write)
    assert out.stderr == ""
    assert out.returncode in (0, 128 + signal.SIGPIPE)


def test_progress_is_plain_lines_off_a_terminal(fake, tmp_path):
    out = locklab("sweep", *GRID, "--db", tmp_path / "l.db", env=fake.env())
    assert out.returncode == 0, out.stderr
    assert "\r" not in out.stderr and "\x1b" not in out.stderr
    progress = [line for line in out.stderr.splitlines() if line.startswith("[")]
    assert [line.split("]")[0] for line in progress] == [f"[{i}/8" for i in range(1, 9)]


def test_progress_is_a_bar_on_a_terminal(fake, tmp_path):
    pytest.importorskip("tqdm")
    main, side = pty.openpty()
    env = fake.env(crash=[{"lock": "pthread", "threads": 2, "hold_ns": 0}])
    proc = subprocess.Popen([sys.executable, "-m", "locklab.cli", "sweep", *GRID,
                             "--db", str(tmp_path / "l.db")],
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=side,
                            env={**env, "COLUMNS": "120"})
    os.close(side)
    seen = b""
    while True:
        ready, _, _ = select.select([main], [], [], 60)
        assert ready, seen
        try:
            chunk = os.read(main, 4096)
        except OSError:   # the terminal's other end closed: the sweep is done
            break
        if not chunk:
            break
        seen += chunk
    os.close(main)
    assert proc.wait(timeout=60) == 1
    text = seen.decode()
    # tqdm's bar, redrawn in place, ending full; no plain progress line.
    assert "\r" in text and "8/8" in text and "\u2588" in text
    assert not re.search(r"^\[\s*\d+/8\]", text, re.M)
    # The failed point is a line of its own above the bar.
    assert "locklab: pthread t=2 m=1 h=0: killed by SIGSEGV" in text


def readme_commands() -> list[list[str]]:
    """The `locklab` commands of the README's first screen (its Use block), as argv."""
    text = (ROOT / "README.md").read_text()
    block = text.split("## Use", 1)[1].split("```sh", 1)[1].split("```", 1)[0]
    commands = []
    for line in block.replace("\\\n", " ").splitlines():
        words = shlex.split(line, comments=True)
        if words and words[0].endswith("/locklab"):
            commands.append(words[1:])
    return commands


def test_the_readme_commands_parse_and_refer_to_runs_made_before_them(tmp_path, monkeypatch):
    """On a fresh store, each README sweep makes a run (as its spec says, without running
    it); each run the README names after that (--resume, report, compare) must be there,
    and a compare's two runs must be comparable."""
    commands = readme_commands()
    assert len(commands) >= 10
    # The real locklab-bench checks the README's locks, options and gates. Programs would
    # need memcached and MariaDB here: their sweeps' specs are made, unchecked.
    monkeypatch.setattr(programs.ProgramSweep, "validate", lambda self, spec: None)
    conn = store.connect(tmp_path / "l.db", create=True)
    parser = build_parser()
    seen = set()
    for argv in commands:
        seen.add(argv[0])
        if argv[0] in passthrough.PASSTHROUGH:
            continue
        args = parser.parse_args(argv)
        if argv[0] == "sweep" and args.resume:
            store.resolve_run(conn, args.resume)
        elif argv[0] == "sweep" and not args.dry_run:
            spec = sweep_command.new_spec(args, sweep_command.sweep_given(args))
            store.new_run(conn, spec, machine.describe(), {})
        elif argv[0] == "report":
            store.resolve_run(conn, args.run)
        elif argv[0] == "compare":
            runs = [store.get_run(conn, store.resolve_run(conn, r))
                    for r in (args.run_a, args.run_b)]
            assert runs[0]["id"] != runs[1]["id"]
            assert compare.differences(*runs) == ([], []), argv
    assert {"sweep", "report", "compare", "list", "bench", "floor"} <= seen


def test_the_readme_dry_run_runs_nothing(fake, tmp_path):
    (argv,) = [a for a in readme_commands() if "--dry-run" in a]
    out = locklab(*argv, "--db", tmp_path / "l.db", env=fake.env())
    assert out.returncode == 0, out.stderr
    assert "nothing run or stored" in out.stdout
    assert not (tmp_path / "l.db").exists() and fake.launched() == []
