"""Where a sweep is, point by point: each point's name in progress lines and errors,
the progress bar, and each point stored the moment it ends."""
from __future__ import annotations

import os
import sqlite3
from typing import TextIO

from ..errors import LocklabError
from . import store
from .presets import RW_WORKLOAD
from .store import PROGRAM, Point


def label(point: Point, repeat: int) -> str:
    lock = store.lock_label(point.lock, point.lock_opts)
    if point.workload.startswith(PROGRAM):
        text = f"{lock} {point.workload.removeprefix(PROGRAM)}"
        text += f" {point.workload_opts}" if point.workload_opts else ""
        text += f" c={point.threads}"
        return text + (f" r={point.rep + 1}/{repeat}" if repeat > 1 else "")
    if point.workload == RW_WORKLOAD:
        text = f"{lock} t={point.threads} h={point.hold_ns}"
        text += f" o={point.outside_ns}" if point.outside_ns else ""
        text += f" rw {store.read_pct(point.workload_opts):g}% reads"
        return text + (f" r={point.rep + 1}/{repeat}" if repeat > 1 else "")
    text = f"{lock} t={point.threads} m={point.mutexes} h={point.hold_ns}"
    if point.outside_ns:
        text += f" o={point.outside_ns}"
    if point.workload != "mutex":
        gate = f"{point.gate}:{point.gate_opts}" if point.gate_opts else point.gate
        text += f" {point.workload} gate={gate or 'none'}"
        text += f" [{point.workload_opts}]" if point.workload_opts else ""
    if repeat > 1:
        text += f" r={point.rep + 1}/{repeat}"
    return text


def clock(seconds: float) -> str:
    minutes, secs = divmod(int(seconds + 0.5), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


class Progress:
    """Where a sweep is, on stderr: a progress bar (tqdm's) on a terminal, with the
    point running and the time left; elsewhere (a log, a pipe) a plain line per point,
    `[ 12/84] innodb56 t=64 m=1 h=1000  ETA 0:42`. A failed point gets a line of its
    own either way.
    """

    def __init__(self, total: int, done: int, repeat: int, stream: TextIO, name=label):
        """NAME(point, repeat): a point's name in the lines (label's by default)."""
        self.total, self.position, self.repeat, self.stream = total, done, repeat, stream
        self.name = name
        self.walls: list[float] = []
        self.bar = None
        if stream.isatty():
            try:
                from tqdm import tqdm
            except ImportError:   # an install without its dependencies: plain lines
                tqdm = None
            if tqdm is not None:
                # A terminal that gives no size (a bare pty) would get an empty line
                # from tqdm: it is drawn as on 80 x 24 there.
                try:
                    size = os.get_terminal_size(stream.fileno())
                    sized = size.columns > 0 and size.lines > 0
                except (OSError, ValueError):
                    sized = False
                self.bar = tqdm(total=total, initial=done, file=stream, unit="pt",
                                dynamic_ncols=sized, ncols=None if sized else 80,
                                nrows=None if sized else 24, leave=True,
                                bar_format="{n_fmt}/{total_fmt} {bar} {elapsed}<{remaining} "
                                           "{desc}")

    def start(self, point: Point) -> None:
        self.position += 1
        if self.bar is not None:
            self.bar.set_description_str(self.name(point, self.repeat))
            return
        remaining = self.total - self.position + 1
        eta = clock(sum(self.walls) / len(self.walls) * remaining) if self.walls else "?"
        width = len(str(self.total))
        self.stream.write(f"[{self.position:{width}d}/{self.total}] "
                          f"{self.name(point, self.repeat)}  ETA {eta}\n")
        self.stream.flush()

    def finish(self, point: Point, wall_s: float, error: str | None) -> None:
        self.walls.append(wall_s)
        if error:
            line = f"locklab: {self.name(point, self.repeat)}: {error}"
            if self.bar is not None:
                self.bar.write(line, file=self.stream)
            else:
                self.stream.write(line + "\n")
                self.stream.flush()
        if self.bar is not None:
            self.bar.update(1)

    def drop(self, points: int) -> None:
        """POINTS planned will not run after all."""
        self.total -= points
        if self.bar is not None:
            self.bar.total = self.total
            self.bar.refresh()

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
            self.bar = None


def store_point(conn: sqlite3.Connection, run_id: int, point: Point, repeat: int,
                outcome: dict) -> None:
    """Store POINT of a run of REPEAT passes (OUTCOME: store.record_point's keywords)."""
    try:
        store.record_point(conn, run_id, point, **outcome)
    except sqlite3.IntegrityError:
        # UNIQUE refused it: some other process stored this point meanwhile.
        raise LocklabError(f"{label(point, repeat)} is already in run {run_id}: "
                           "is another sweep filling it?") from None
