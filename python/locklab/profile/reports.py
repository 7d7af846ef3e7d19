"""The report files liblocklab-prof.so leaves in its directory: one text and one JSON
report per process at its exit (and at each signal or interval before), named
START-PID-SEQ[-exit], and a PID.live marker while the process may still write one."""
from __future__ import annotations

import json
from pathlib import Path

LIBRARY = "liblocklab-prof.so"


class Dumps:
    """The report files the library leaves in one directory, in the order written."""

    def __init__(self, directory: str):
        self.dir = Path(directory)
        self.seen: set[str] = set()

    def new(self, ext: str) -> list[Path]:
        """Files with this extension not returned before (names sort by process, then dump)."""
        fresh = []
        for p in sorted(self.dir.glob(f"*.{ext}"), key=self.order):
            if p.name not in self.seen:
                self.seen.add(p.name)
                fresh.append(p)
        return fresh

    @staticmethod
    def order(p: Path):
        start, pid, seq, _ = p.stem.split("-", 3)
        return int(start), int(pid), int(seq)

    def finals(self, ext: str) -> list[Path]:
        """Each process's last report: its exit report, or its latest if it never exited."""
        last: dict[tuple[int, int], Path] = {}
        for p in sorted(self.dir.glob(f"*.{ext}"), key=self.order):
            start, pid, _ = self.order(p)
            key = (start, pid)
            if key not in last or not last[key].stem.endswith("-exit"):
                last[key] = p
        return [last[k] for k in sorted(last)]


def read_json(path: Path) -> dict:
    return json.loads(path.read_text(errors="replace"))


def has_events(report: dict) -> bool:
    return any(lock["count"] for lock in report["locks"])


def still_running(d: str) -> list[tuple[int, str]]:
    """Processes that may still write a report into D: (pid, name) of each DIR/PID.live
    whose process is alive with the library loaded (the library removes the file after
    its exit report; one killed by SIGKILL leaves it, and is gone)."""
    alive = []
    for marker in sorted(Path(d).glob("*.live")):
        try:
            pid = int(marker.stem)
            maps = Path(f"/proc/{pid}/maps").read_text(errors="replace")
            name = Path(f"/proc/{pid}/comm").read_text().strip()
        except (ValueError, OSError):
            continue
        if LIBRARY in maps:
            alive.append((pid, name))
    return alive
