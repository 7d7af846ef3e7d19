"""The `locklab` command's entry point: the parser of every command, and bad input,
a database or file error, a closed pipe or Ctrl-C turned into one line and a status."""
from __future__ import annotations

import argparse
import os
import signal
import sqlite3
import sys

from .. import __version__
from ..errors import LocklabError
from . import advise, compare, passthrough, profile, report, run, sweep
from . import list as list_command
from .parser import Parser, database_options


def build_parser() -> argparse.ArgumentParser:
    p = Parser(prog="locklab", description="Mutexes chosen at run time: their benchmark, "
               "sweeps of it into a database, reports and comparisons of the runs, a lock "
               "profiler, a lock swapper and a lock advisor for unmodified programs.",
               epilog="`locklab COMMAND --help` describes a command's options; README.md "
               "has a first session.")
    p.add_argument("--version", action="version", version=f"locklab {__version__}")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")
    list_command.add_parser(sub)
    passthrough.add_parsers(sub)
    db = database_options()
    sweep.add_parser(sub, db)
    report.add_parser(sub, db)
    compare.add_parser(sub, db)
    profile.add_parser(sub)
    run.add_parser(sub)
    advise.add_parser(sub, db)
    return p


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    try:
        if not argv:
            # Nothing asked: what there is to ask, on stderr, and argparse's status for
            # a command line that lacks its command.
            build_parser().print_help(sys.stderr)
            return 2
        if argv[0] in passthrough.PASSTHROUGH:
            return passthrough.command(argv)
        args = build_parser().parse_args(argv)
        return args.func(args)
    except LocklabError as e:
        print(f"locklab: {e}", file=sys.stderr)
        return 2
    except sqlite3.Error as e:
        print(f"locklab: database: {e}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        # The reader (head, a pager) has gone: the rest of the output is nobody's. Quiet,
        # as a C tool dying of SIGPIPE would be, and with the status a shell gives that.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 128 + signal.SIGPIPE
    except OSError as e:  # a report directory that cannot be made, a full disk
        print(f"locklab: {e.filename}: {e.strerror}" if e.filename else f"locklab: {e}",
              file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("locklab: interrupted", file=sys.stderr)
        return 130
