"""`locklab bench`, `floor` and `moncost`: locklab-bench's own commands, handed to it
whole, before argparse sees them: their options are the C tool's, and argparse cannot
pass options through untouched."""
from __future__ import annotations

from .. import native

PASSTHROUGH = {
    "bench": "one benchmark point (locklab-bench bench ...)",
    "floor": "what the primitives cost on this machine (locklab-bench floor ...)",
    "moncost": "what the lock monitor costs uncontended locks (locklab-bench moncost ...)",
}


def add_parsers(sub) -> None:
    """Their lines in `locklab --help`; their options: `locklab NAME --help`."""
    for name, text in PASSTHROUGH.items():
        sub.add_parser(name, help=f"{text}; --help for its options", add_help=False)


def command(argv: list[str]) -> int:
    """locklab-bench ARGV on our stdin, stdout and stderr; its exit status. Its options
    are long ones only: its --help for argparse's -h."""
    return native.passthrough([argv[0], *("--help" if a == "-h" else a for a in argv[1:])])
