"""What the project says speaks of the project: a study is named by what it is
(docs/background.md), never by a ticket, seed or work-session number."""
import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TICKET = re.compile(r"\b(seed|issue|session)s? ?#?0*\d+\b|\bthe issue('s)?\b", re.IGNORECASE)
SKIP = {"tests/python/test_wording.py"}


def tracked() -> list[str]:
    out = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True,
                         check=True).stdout.split()
    return [p for p in out if p not in SKIP and p.split("/")[0] in
            {"docs", "src", "include", "python", "tests", "scripts", "README.md",
             "CMakeLists.txt", "Makefile", "pyproject.toml"}]


def test_no_ticket_numbers_in_code_docs_or_output():
    found = []
    for rel in tracked():
        path = ROOT / rel
        try:
            text = path.read_text()
        except (UnicodeDecodeError, IsADirectoryError):
            continue
        for n, line in enumerate(text.splitlines(), 1):
            if TICKET.search(line):
                found.append(f"{rel}:{n}: {line.strip()}")
    assert not found, "\n".join(found)


def test_the_pattern_catches_what_it_should():
    for bad in ("seed 001", "Issue 4", "session 3", "the issue's 10 ns", "issues 14"):
        assert TICKET.search(bad), bad
    for fine in ("an issue with the lock", "session bus", "seeded rng", "issue_count"):
        assert not TICKET.search(fine), fine
