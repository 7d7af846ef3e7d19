"""The SQLite file sweeps write and reports read: one row per run, one per point.

Every point is committed on its own as it finishes, so whatever stops a sweep
(Ctrl-C, kill -9, a crash) loses at most the point that was running.
"""
from __future__ import annotations

import json
import os
import sqlite3
import statistics
from datetime import datetime, timezone
from pathlib import Path
from typing import NamedTuple

from ..errors import LocklabError
from . import spec_shape


# A program point's workload: this, then the program's name (sweep/programs.py).
PROGRAM = "program:"


class Point(NamedTuple):
    """One benchmark process: what makes a row of `points` unique within its run."""

    lock: str
    lock_opts: str
    threads: int
    mutexes: int
    hold_ns: int
    outside_ns: int
    rep: int
    # The server workload's axes (docs/admission.md); a mutex point keeps the defaults.
    workload: str = "mutex"
    gate: str = ""
    gate_opts: str = ""
    workload_opts: str = ""
    # Seconds the benchmark ran before its window (the run's --warmup, or a sub-grid's
    # own: the concurrency preset's settled points). 0 for a program point, whose
    # server warms up once per start, not per point.
    warmup: float = 0.0


# What locklab-bench's JSON line reports, column name and SQLite type; the row also
# keeps the line itself (raw), so a key added later is not lost.
METRICS = (
    ("duration_s", "REAL"),
    ("iterations", "INTEGER"),
    ("ns_per_iter", "REAL"),
    ("ops_per_sec", "REAL"),
    ("cpu_user_pct", "REAL"),
    ("cpu_sys_pct", "REAL"),
    ("cpu_idle_pct", "REAL"),
    ("cs_per_sec", "REAL"),
    ("vcsw", "INTEGER"),
    ("ivcsw", "INTEGER"),
    ("cpu_ns_per_iter", "REAL"),
    ("jain", "REAL"),
    ("min_thread_iters", "INTEGER"),
    ("max_thread_iters", "INTEGER"),
    ("wait_ns_p50", "REAL"),
    ("wait_ns_p99", "REAL"),
    ("wait_ns_p999", "REAL"),
    ("wait_ns_max", "REAL"),
    ("mutex_ok", "INTEGER"),
    ("calib_error_pct", "REAL"),
)
METRIC_NAMES = tuple(name for name, _ in METRICS)
# What only the server workload reports (NULL for mutex points): query latency, and
# the admission gate's N (mean, extremes), how often it made a thread wait, and
# fifo's and auto's slots handed to a sleeper and admissions that passed one.
SERVER_METRICS = (
    ("latency_ns_p50", "REAL"),
    ("latency_ns_p99", "REAL"),
    ("latency_ns_p999", "REAL"),
    ("latency_ns_max", "REAL"),
    ("gate_limit_mean", "REAL"),
    ("gate_limit_min", "INTEGER"),
    ("gate_limit_max", "INTEGER"),
    ("gate_waits", "INTEGER"),
    ("gate_sleeps", "INTEGER"),
    ("gate_handoffs", "INTEGER"),
    ("gate_barges", "INTEGER"),
)
SERVER_METRIC_NAMES = tuple(name for name, _ in SERVER_METRICS)
# What only a program point reports (NULL for the benchmark's points; sweep/programs.py):
# the server's CPU over the load (cores busy), the load generator's failed requests
# and reconnections, and the swapper's count of the server's mutexes it served and
# of those it passed to glibc, and of the rwlocks it served (NULL for the unswapped
# `native` server).
PROGRAM_METRICS = (
    ("cpu_cores", "REAL"),
    ("client_errors", "INTEGER"),
    ("client_reconnects", "INTEGER"),
    ("swap_mutexes", "INTEGER"),
    ("swap_passthrough", "INTEGER"),
    ("swap_rwlocks", "INTEGER"),
)
PROGRAM_METRIC_NAMES = tuple(name for name, _ in PROGRAM_METRICS)
# What only a run of `locklab advise` reports (NULL for the others; advise/runner.py):
# the figure it is judged by (a wall time, or the number its metric takes).
ADVISE_METRICS = (("metric", "REAL"),)
ADVISE_METRIC_NAMES = tuple(name for name, _ in ADVISE_METRICS)
# What only the rw workload reports (NULL for the others; src/bench/rw.c): per class
# (read, write) its operations, the mean ns of a sampled lock+hold+unlock, the wait to
# acquire (p99, max) and Jain's index over the threads; whether the exclusion check
# held (1) or saw a writer beside anyone (0). Its ns per op of either class and CPU ns
# per op are stored as ns_per_iter and cpu_ns_per_iter (RW_SAME).
RW_METRICS = (
    ("read_ops", "INTEGER"),
    ("write_ops", "INTEGER"),
    ("read_ns_per_op", "REAL"),
    ("write_ns_per_op", "REAL"),
    ("read_wait_ns_p99", "REAL"),
    ("read_wait_ns_max", "REAL"),
    ("write_wait_ns_p99", "REAL"),
    ("write_wait_ns_max", "REAL"),
    ("read_jain", "REAL"),
    ("write_jain", "REAL"),
    ("exclusion_ok", "INTEGER"),
    # Threads runnable but never on a CPU in the window: it measured fewer threads.
    ("threads_unscheduled", "INTEGER"),
)
RW_METRIC_NAMES = tuple(name for name, _ in RW_METRICS)
# What the rw workload's line carries only with a diagnostic asked for (--runqueue).
RW_OPTIONAL = ("threads_unscheduled",)
# Columns the rw workload's line names otherwise: column, its key there.
RW_SAME = (("ns_per_iter", "ns_per_op"), ("cpu_ns_per_iter", "cpu_ns_per_op"))
# Every metric a point may carry, in column order.
ALL_METRIC_NAMES = (*METRIC_NAMES, *SERVER_METRIC_NAMES, *PROGRAM_METRIC_NAMES,
                    *RW_METRIC_NAMES, *ADVISE_METRIC_NAMES)
# The largest id SQLite gives a row.
MAX_ROWID = 2 ** 63 - 1
MACHINE = ("cpu_model", "cores", "kernel", "glibc", "version")
# Columns added after the first release, with their type: connect() adds them to older files.
ADDED_COLUMNS = (("instrument", "INTEGER NOT NULL DEFAULT 0"),
                 ("gate_handoffs", "INTEGER"), ("gate_barges", "INTEGER"), *PROGRAM_METRICS,
                 *RW_METRICS, *ADVISE_METRICS)
# The columns a point is reported with, in order (CSV, JSON, compare).
POINT_COLUMNS = (*Point._fields, "ok", "error", "wall_s", "finished", "instrument",
                 *ALL_METRIC_NAMES)

SCHEMA = f"""
CREATE TABLE IF NOT EXISTS runs (
    id INTEGER PRIMARY KEY,
    started TEXT NOT NULL,
    finished TEXT,
    spec TEXT NOT NULL,
    cpu_model TEXT, cores INTEGER, kernel TEXT, glibc TEXT, version TEXT,
    floor TEXT
);
CREATE TABLE IF NOT EXISTS points (
    id INTEGER PRIMARY KEY,
    run_id INTEGER NOT NULL REFERENCES runs(id),
    lock TEXT NOT NULL, lock_opts TEXT NOT NULL,
    threads INTEGER NOT NULL, mutexes INTEGER NOT NULL,
    hold_ns INTEGER NOT NULL, outside_ns INTEGER NOT NULL, rep INTEGER NOT NULL,
    workload TEXT NOT NULL DEFAULT 'mutex', gate TEXT NOT NULL DEFAULT '',
    gate_opts TEXT NOT NULL DEFAULT '', workload_opts TEXT NOT NULL DEFAULT '',
    warmup REAL NOT NULL DEFAULT 0,
    ok INTEGER NOT NULL, error TEXT, wall_s REAL, finished TEXT NOT NULL,
    instrument INTEGER NOT NULL DEFAULT 0,
    {", ".join(f"{name} {kind}"
               for name, kind in (*METRICS, *SERVER_METRICS, *PROGRAM_METRICS, *RW_METRICS,
                                  *ADVISE_METRICS))},
    raw TEXT,
    UNIQUE (run_id, lock, lock_opts, threads, mutexes, hold_ns, outside_ns, rep,
            workload, gate, gate_opts, workload_opts, warmup)
);
"""


def now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def connect(path: str | Path, create: bool = False, write: bool = True) -> sqlite3.Connection:
    """Open the database; only a sweep (create=True) may bring a new file into being.

    write=False (report, compare) opens it read-only, so that a file on read-only
    storage or in a directory the user cannot write reads as well as any other;
    older files are then read as they are, without being brought up to SCHEMA.
    A file that cannot be read or written, and an SQLite file of someone else's,
    are refused, each for its own reason, before anything is written into it.
    """
    path = Path(path)
    _check_file(path, create, write)
    try:
        conn = _open(path) if write else _open_readonly(path)
    except sqlite3.DatabaseError as e:
        raise LocklabError(f"{path} is not a locklab database ({e})") from None
    try:
        tables = {row[0] for row in
                  conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        if not (create and not tables) and not {"runs", "points"} <= tables:
            theirs = ", ".join(sorted(tables)[:5]) + (", ..." if len(tables) > 5 else "")
            raise LocklabError(f"{path} is not a locklab database: "
                               + (f"it holds other tables ({theirs})" if tables else
                                  "it holds no table")
                               + (", and a sweep writes only into its own" if write else ""))
        if write:
            # WAL: a report can read while a sweep writes. synchronous=NORMAL in WAL mode
            # keeps every commit across a crash of the process, which is what we guard.
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            if create:
                conn.executescript(SCHEMA)
        conn.execute("SELECT 1 FROM runs LIMIT 1")
        if write:
            _widen_point_key(conn)
            have = {row[1] for row in conn.execute("PRAGMA table_info(points)")}
            for name, kind in ADDED_COLUMNS:
                if have and name not in have:
                    conn.execute(f"ALTER TABLE points ADD COLUMN {name} {kind}")
    except sqlite3.DatabaseError as e:
        conn.close()
        raise LocklabError(f"{path} is not a locklab database ({e})") from None
    except LocklabError:
        conn.close()
        raise
    return conn


# The first bytes of every SQLite 3 file.
SQLITE_HEADER = b"SQLite format 3\0"


def _check_file(path: Path, create: bool, write: bool) -> None:
    """Refuse, in words that say why, a database path SQLite would fail on: a folder, a
    missing file or folder, one we may not read, or write (with its journal beside it)."""
    if path.is_dir():
        raise LocklabError(f"{path} is a directory, not a database file")
    folder = path.parent
    if not path.exists():
        if not create:
            raise LocklabError(f"no database at {path} (run 'locklab sweep' first, or pass --db)")
        if not folder.is_dir():
            raise LocklabError(f"cannot create {path}: no such directory {folder}")
        if not os.access(folder, os.W_OK | os.X_OK):
            raise LocklabError(f"cannot create {path}: the directory {folder} is not writable")
        return
    if not path.is_file():
        raise LocklabError(f"{path} is not a regular file, so not a database file")
    try:
        with open(path, "rb") as f:
            head = f.read(len(SQLITE_HEADER))
    except OSError as e:
        raise LocklabError(f"cannot read {path}: {e.strerror}") from None
    if head and head != SQLITE_HEADER:
        raise LocklabError(f"{path} is not a locklab database (not an SQLite file)")
    if write and not os.access(path, os.W_OK):
        raise LocklabError(f"{path} is read-only, and a sweep writes its points into it")
    if write and not os.access(folder, os.W_OK | os.X_OK):
        raise LocklabError(f"{path} is in a directory that is not writable ({folder}), and a "
                           "sweep writes its journal beside it")


def _open(path: Path) -> sqlite3.Connection:
    # isolation_level=None: autocommit, so each INSERT is on disk when it returns.
    conn = sqlite3.connect(path, isolation_level=None)
    conn.row_factory = sqlite3.Row
    return conn


def _open_readonly(path: Path) -> sqlite3.Connection:
    """A read-only connection, also where SQLite cannot make a WAL file's -shm beside it.

    Reading a WAL database needs its shared-memory file; in a directory nobody may
    write, and with no -shm left there, SQLite can open the file only as immutable.
    No sweep can be writing it then (a writer needs that directory too).
    """
    uri = path.resolve().as_uri()
    try:
        return _open_uri(f"{uri}?mode=ro")
    except sqlite3.OperationalError:
        return _open_uri(f"{uri}?mode=ro&immutable=1")


def _open_uri(uri: str) -> sqlite3.Connection:
    conn = sqlite3.connect(uri, uri=True, isolation_level=None)
    conn.row_factory = sqlite3.Row
    try:
        conn.execute("SELECT 1 FROM sqlite_master LIMIT 1")
    except sqlite3.Error:
        conn.close()
        raise
    return conn


def _widen_point_key(conn: sqlite3.Connection) -> None:
    """Bring a file from before the server workload, or from before the point's
    warm-up was part of its key, up to SCHEMA's points table.

    Its UNIQUE key lacks the workload and gate columns, or the warm-up, and SQLite
    cannot change a table's constraints in place: the table is rebuilt under the new
    schema, every row copied (columns it lacks take their defaults), in one
    transaction. Each benchmark point then gets its run's warm-up, the only one its
    run had, so that a resumed run finds its points done.
    """
    have = [row[1] for row in conn.execute("PRAGMA table_info(points)")]
    if not have or "warmup" in have:
        return
    create = next(stmt for stmt in SCHEMA.split(";") if " points (" in stmt)
    conn.execute("BEGIN IMMEDIATE")
    try:
        conn.execute("ALTER TABLE points RENAME TO points_before_server")
        conn.execute(create)
        new = {row[1] for row in conn.execute("PRAGMA table_info(points)")}
        cols = ", ".join(c for c in have if c in new)
        conn.execute(f"INSERT INTO points ({cols}) SELECT {cols} FROM points_before_server")
        conn.execute("DROP TABLE points_before_server")
        for run_id, spec in conn.execute("SELECT id, spec FROM runs").fetchall():
            try:
                warmup = json.loads(spec).get("warmup") or 0
            except (ValueError, AttributeError):
                warmup = 0
            if isinstance(warmup, (int, float)) and not isinstance(warmup, bool):
                conn.execute("UPDATE points SET warmup = ? WHERE run_id = ? AND workload "
                             "NOT LIKE 'program:%'", (float(warmup), run_id))
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise


def new_run(conn: sqlite3.Connection, spec: dict, machine: dict, floor: dict) -> int:
    cur = conn.execute(
        f"INSERT INTO runs (started, spec, {', '.join(MACHINE)}, floor) "
        f"VALUES (?, ?, {', '.join('?' * len(MACHINE))}, ?)",
        (now(), json.dumps(spec), *(machine[k] for k in MACHINE), json.dumps(floor)),
    )
    return cur.lastrowid


def resolve_run(conn: sqlite3.Connection, ref: str) -> int:
    """A run's id from what the user typed: a number, 'latest', or -N (the Nth last run:
    -1 is the latest, -2 the one before it)."""
    try:
        run_id = -1 if ref == "latest" else int(ref)
    except ValueError:
        raise LocklabError(f"run '{ref}' is neither a run number, 'latest' nor -N "
                           "(the Nth last run)") from None
    if run_id < 0:
        back = -run_id
        count = conn.execute("SELECT count(*) FROM runs").fetchone()[0]
        if not count:
            raise LocklabError("the database holds no run yet")
        if back > count:
            raise LocklabError(f"no run {ref}: the database holds {count} "
                               f"run{'s' if count > 1 else ''}")
        return conn.execute("SELECT id FROM runs ORDER BY id DESC LIMIT 1 OFFSET ?",
                            (back - 1,)).fetchone()[0]
    if not 1 <= run_id <= MAX_ROWID:
        raise LocklabError(f"run {ref} is outside [1, {MAX_ROWID}]")
    if conn.execute("SELECT 1 FROM runs WHERE id = ?", (run_id,)).fetchone() is None:
        ids = [r[0] for r in conn.execute("SELECT id FROM runs ORDER BY id")]
        known = f"runs {ids[0]}-{ids[-1]}" if ids else "no run yet"
        raise LocklabError(f"no run {run_id} in the database ({known})")
    return run_id


def get_run(conn: sqlite3.Connection, run_id: int, grid: bool = True) -> dict:
    """A run's row, its spec and floor read from their JSON. Refused in one line naming
    the file: a spec or floor that is not a JSON object, and with GRID (a report, a
    resumed sweep: they walk the grid) a spec not shaped as a sweep writes it."""
    row = dict(conn.execute("SELECT * FROM runs WHERE id = ?", (run_id,)).fetchone())
    for key, default in (("spec", None), ("floor", {})):
        try:
            row[key] = json.loads(row[key]) if row[key] else default
        except ValueError as e:
            raise LocklabError(f"{database_file(conn)}: run {run_id}'s {key} is not JSON "
                               f"({e})") from None
        if not isinstance(row[key], dict):
            what = "missing" if row[key] is None else f"{type(row[key]).__name__}, not an object"
            raise LocklabError(f"{database_file(conn)}: run {run_id}'s {key} is {what}")
    why = spec_shape.problem(row["spec"]) if grid else None
    if why:
        raise LocklabError(f"{database_file(conn)}: run {run_id}'s grid (its spec) {why}")
    return row


def database_file(conn: sqlite3.Connection) -> str:
    """The file CONN reads, as its errors name it."""
    return next((row[2] for row in conn.execute("PRAGMA database_list") if row[1] == "main"),
                "the database")


def finish_run(conn: sqlite3.Connection, run_id: int) -> None:
    conn.execute("UPDATE runs SET finished = ? WHERE id = ?", (now(), run_id))


def done_points(conn: sqlite3.Connection, run_id: int, only_ok: bool = False) -> set[Point]:
    """The points of a run already stored, failed ones included unless ONLY_OK."""
    cols = ", ".join(Point._fields)
    rows = conn.execute(f"SELECT {cols} FROM points WHERE run_id = ?"
                        + (" AND ok" if only_ok else ""), (run_id,))
    return {Point(*row) for row in rows}


def forget_failed(conn: sqlite3.Connection, run_id: int) -> int:
    """Drop a run's failed points, so that resuming it runs them again; how many."""
    return conn.execute("DELETE FROM points WHERE run_id = ? AND NOT ok", (run_id,)).rowcount


def set_spec(conn: sqlite3.Connection, run_id: int, spec: dict) -> None:
    """Store a run's spec as it is now (a resumed run's new timeout)."""
    conn.execute("UPDATE runs SET spec = ? WHERE id = ?", (json.dumps(spec), run_id))


def record_point(
    conn: sqlite3.Connection,
    run_id: int,
    point: Point,
    *,
    error: str | None,
    wall_s: float,
    result: dict | None,
    raw: str | None,
    instrument: bool = False,
) -> None:
    """Store one point (committed when this returns); error None means it succeeded.

    instrument: the point ran with the lock monitor's statistics on (sweep --instrument).
    """
    result = result or {}
    result = {**{col: result[key] for col, key in RW_SAME if key in result}, **result}
    cols = (*Point._fields, "ok", "error", "wall_s", "finished", "instrument", *ALL_METRIC_NAMES,
            "raw")
    values = (
        *point,
        error is None,
        error,
        wall_s,
        now(),
        int(bool(instrument)),
        *(_number(result.get(name)) for name in ALL_METRIC_NAMES),
        raw,
    )
    conn.execute(
        f"INSERT INTO points (run_id, {', '.join(cols)}) VALUES (?{', ?' * len(cols)})",
        (run_id, *values),
    )


def record_swap_stats(conn: sqlite3.Connection, run_id: int, points: list[Point],
                      stats: dict) -> None:
    """The swapper's counts for the server process that measured POINTS.

    The swapper writes them when the server exits, after its points were stored:
    they are added to those rows (columns, and under "swap" in raw), in one
    transaction.
    """
    passthrough = stats.get("passthrough")
    passed = sum(passthrough.values()) if isinstance(passthrough, dict) else None
    rwlocks = stats.get("rwlocks")
    rw_swapped = _number(rwlocks.get("swapped")) if isinstance(rwlocks, dict) else None
    where = " AND ".join(f"{name} = ?" for name in Point._fields)
    conn.execute("BEGIN IMMEDIATE")
    try:
        for point in points:
            row = conn.execute(f"SELECT id, raw FROM points WHERE run_id = ? AND {where}",
                               (run_id, *point)).fetchone()
            if row is None:
                continue
            raw = json.loads(row["raw"]) if row["raw"] else {}  # programs.measure's object
            raw["swap"] = stats
            conn.execute("UPDATE points SET swap_mutexes = ?, swap_passthrough = ?, "
                         "swap_rwlocks = ?, raw = ? WHERE id = ?",
                         (_number(stats.get("mutexes")), passed, rw_swapped, json.dumps(raw),
                          row["id"]))
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise


def _number(value):
    # JSON booleans (mutex_ok) are stored as 0/1; anything not a number as NULL, so a
    # column never holds text that would break sorting and plotting.
    if isinstance(value, bool):
        return int(value)
    return value if isinstance(value, (int, float)) else None


# An rw point's read fraction, kept in its workload options (so in the point's key):
# 'read_pct=99.9'.
READ_PCT = "read_pct="


def pct_text(pct: float) -> str:
    """A read percentage as the key and locklab-bench's --read-pct spell it: 99.9, 100."""
    return f"{pct:.10g}"


def rw_opts(pct: float) -> str:
    """The workload options of an rw point reading PCT percent of the time."""
    return READ_PCT + pct_text(pct)


def read_pct(workload_opts: str) -> float:
    """An rw point's read percentage, from its workload options."""
    return float(workload_opts.removeprefix(READ_PCT))


def lock_label(lock: str, lock_opts: str) -> str:
    """How a lock variant is named in progress lines, legends and tables."""
    return f"{lock} [{lock_opts}]" if lock_opts else lock


def points(conn: sqlite3.Connection, run_id: int) -> list[dict]:
    """Every stored point of a run, failed ones included, in the order they ran.

    A column an older file (opened read-only, so not brought up to SCHEMA) lacks
    reads as its default.
    """
    have = {row[1] for row in conn.execute("PRAGMA table_info(points)")}
    defaults = {**Point._field_defaults, "instrument": 0}
    select = [name if name in have else f"? AS {name}" for name in POINT_COLUMNS]
    missing = [defaults.get(name) for name in POINT_COLUMNS if name not in have]
    rows = conn.execute(
        f"SELECT {', '.join(select)} FROM points WHERE run_id = ? ORDER BY id", (*missing, run_id)
    )
    return [dict(row) for row in rows]


# A point of the grid with its repeats folded together.
GRID_KEY = tuple(f for f in Point._fields if f != "rep")


def repeat_groups(rows: list[dict]) -> dict[tuple, list[dict]]:
    """GRID_KEY's values -> the succeeded repeats of that grid point, in the order they ran.

    Failed repeats are left out.
    """
    groups: dict[tuple, list[dict]] = {}
    for row in rows:
        if row["ok"]:
            # Rows from before the server workload lack its axes: theirs are the defaults.
            key = tuple(row.get(k, Point._field_defaults.get(k)) for k in GRID_KEY)
            groups.setdefault(key, []).append(row)
    return groups


def median_point(key: tuple, reps: list[dict]) -> dict:
    """The grid point KEY with each metric's median over REPS; `reps` says how many."""
    point = dict(zip(GRID_KEY, key), reps=len(reps))
    for name in ALL_METRIC_NAMES:
        values = [r[name] for r in reps if r.get(name) is not None]
        point[name] = statistics.median(values) if values else None
    return point


def medians(rows: list[dict]) -> list[dict]:
    """One dict per grid point: each metric's median over its succeeded repeats.

    Failed repeats are left out; `reps` says how many medians were taken over.
    """
    return [median_point(key, reps) for key, reps in repeat_groups(rows).items()]
